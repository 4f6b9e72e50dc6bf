// TensorArray: the client-side view of a TensorArrayV3, as TensorFlow's (v1, flow-based) Python
// class: an array of tensors that lives for one step, written once per index and read back,
// typically one element per iteration of a while loop (EuroSys 2018 §3, Figure 2).
//
//   TensorArray ta(scope, DT_FLOAT, n);
//   ta = ta.Unstack(scope, x);                 // element i = x[i]
//   Output xi = ta.Read(scope, i);
//   TensorArray out = TensorArray(scope, DT_FLOAT, n).Write(scope, i, ops::Square(scope, xi));
//   Output y = out.Stack(scope);               // [n, ...]
//
// An operation that writes returns a new TensorArray: the same array (handle) after a new flow, a
// float scalar that carries no data but orders the operations on the array and lets gradients
// flow back through it. To use an array in a WhileLoop, carry its flow as a loop variable and see
// the array through it with WithFlow; the handle is captured like any tensor from outside.
//
// Copies share what is known statically about the elements: with infer_shape, every write merges
// its value's static shape into the element shape that later reads report (as the
// `_output_shapes` attr, TensorFlow's set_shape) and that Stack, Gather and Concat pass to their
// ops, so stacking an empty array works when the elements' shape is known. Errors accumulate in
// the Scope: a failing method records the error there and returns an invalid Output or
// TensorArray; methods of an invalid TensorArray build nothing. Not thread-safe, like the Scope.
#ifndef CONFLUX_CC_TENSOR_ARRAY_H_
#define CONFLUX_CC_TENSOR_ARRAY_H_

#include <memory>
#include <string>
#include <utility>

#include "conflux/cc/output.h"
#include "conflux/cc/scope.h"
#include "conflux/tensor_shape.h"

namespace cfx {

struct TensorArrayOptions {
  // Writes past the end grow the array.
  bool dynamic_size = false;
  // A read frees the element; reading it again is an error (TensorFlow's default).
  bool clear_after_read = true;
  // What every element must fit (the op's attr); unknown rank: anything.
  PartialTensorShape element_shape;
  // Merge the static shapes of written values into the element shape (Scope::StaticShape per
  // write: shape inference of the nodes added since the last such call).
  bool infer_shape = true;
  // The TensorArrayV3 node's name (under the scope's prefix, made unique).
  std::string name = "TensorArray";
};

class TensorArray {
 public:
  // Invalid: every method builds nothing.
  TensorArray() = default;
  // Builds a TensorArrayV3 of `size` (an int32 scalar) elements of `dtype`. On failure the scope
  // holds the error and the result is invalid.
  TensorArray(const Scope& scope, DataType dtype, const Input& size,
              const TensorArrayOptions& options = {});

  bool valid() const { return state_ != nullptr && flow_.valid(); }
  DataType dtype() const;
  // The array's resource handle (capture it into loops and conds).
  const Output& handle() const;
  // The flow after the operations this value has seen (carry it as a loop variable).
  const Output& flow() const { return flow_; }
  // The static element shape known so far (shared by every copy of this array).
  PartialTensorShape element_shape() const;

  // The same array after `flow` (a flow of this array, e.g. a loop variable or an Exit).
  TensorArray WithFlow(const Output& flow) const;

  // The element at `index` (an int32 scalar). The array must not be read there again unless
  // clear_after_read is false; an element never written reads as zeros when the element shape is
  // fully defined, else the step fails.
  Output Read(const Scope& scope, const Input& index) const;
  // Stores `value` at `index`. `value` must have the array's dtype (a literal is converted);
  // a static shape that contradicts the element shape is an error here, a runtime one when the
  // step runs.
  TensorArray Write(const Scope& scope, const Input& index, const Input& value) const;

  // The elements at `indices` (an int32 vector) stacked along a new dimension 0.
  Output Gather(const Scope& scope, const Input& indices) const;
  // Every element stacked along a new dimension 0: Gather(Range(0, Size())).
  Output Stack(const Scope& scope) const;
  // Stores row i of `value` at indices[i].
  TensorArray Scatter(const Scope& scope, const Input& indices, const Input& value) const;
  // Stores row i of `value` at index i: Scatter(Range(0, rows of value), value).
  TensorArray Unstack(const Scope& scope, const Input& value) const;
  // Every element concatenated along dimension 0 (elements may differ in that dimension).
  Output Concat(const Scope& scope) const;
  // Stores consecutive pieces of `value` along dimension 0, lengths[i] (int64) rows for element i.
  TensorArray Split(const Scope& scope, const Input& value, const Input& lengths) const;
  // The current number of elements (int32).
  Output Size(const Scope& scope) const;
  // Frees the elements; later operations on the array fail.
  Operation Close(const Scope& scope) const;

 private:
  struct State;
  TensorArray(std::shared_ptr<State> state, Output flow)
      : state_(std::move(state)), flow_(std::move(flow)) {}
  // The value of `value` as a tensor of the array's dtype for `what`; invalid (and the scope's
  // error set) when it has another dtype.
  Output ValueOfDtype(const Scope& scope, const Input& value, const char* what) const;
  // Merges `shape` into the shared element shape; false (and the scope's error set) on a
  // contradiction.
  bool MergeElementShape(const Scope& scope, const PartialTensorShape& shape,
                         const char* what) const;
  // The array after `flow` when the op that made it was built; invalid otherwise.
  TensorArray After(const Output& flow) const;

  std::shared_ptr<State> state_;
  Output flow_;
};

}  // namespace cfx

#endif  // CONFLUX_CC_TENSOR_ARRAY_H_
