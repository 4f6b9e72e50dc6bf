// Operation, Output and Input: the handles of the C++ client API.
//
// An Operation is a node of a Scope's graph; an Output is one of its outputs ("node:port"). An
// Input is what an op wrapper accepts: an Output, a Tensor, or a literal (a scalar, an
// initializer list, a string). Literals become Const nodes when the op is built; a literal whose
// dtype the op fixes through another input (Mul(x_double, 0.5)) takes that dtype.
//
// Handles are cheap values that point into their Scope's graph; they stay valid as long as a
// Scope of that graph lives. Not thread-safe, like the graph they point into.
#ifndef CONFLUX_CC_OUTPUT_H_
#define CONFLUX_CC_OUTPUT_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "conflux/graph.h"
#include "conflux/status.h"
#include "conflux/tensor.h"

namespace cfx {

class Output;

class Operation {
 public:
  Operation() = default;
  explicit Operation(Node* node) : node_(node) {}

  Node* node() const { return node_; }
  bool valid() const { return node_ != nullptr; }
  const std::string& name() const { return node_->name(); }
  const std::string& op_type() const { return node_->op(); }
  int num_inputs() const { return node_->num_inputs(); }
  int num_outputs() const { return node_->num_outputs(); }
  DataType input_type(int i) const { return node_->input_types()[i]; }
  DataType output_type(int i) const { return node_->output_types()[i]; }
  // The output feeding data input `i`.
  Output input(int i) const;
  Output output(int i) const;

  bool operator==(const Operation& o) const { return node_ == o.node_; }

 private:
  Node* node_ = nullptr;
};

class Output {
 public:
  Output() = default;
  Output(Node* node, int index) : op_(node), index_(index) {}
  Output(const Operation& op, int index) : op_(op), index_(index) {}
  // An operation with exactly one output stands for that output.
  Output(const Operation& op) : op_(op) {}  // NOLINT(google-explicit-constructor)

  const Operation& op() const { return op_; }
  Node* node() const { return op_.node(); }
  int index() const { return index_; }
  bool valid() const { return op_.valid(); }
  DataType type() const { return op_.output_type(index_); }
  // "node:port" (TensorFlow's tensor name; port 0 included).
  std::string name() const;

  bool operator==(const Output& o) const { return op_ == o.op_ && index_ == o.index_; }
  bool operator<(const Output& o) const {
    return node() != o.node() ? node()->id() < o.node()->id() : index_ < o.index_;
  }

 private:
  Operation op_;
  int index_ = 0;
};

using OutputList = std::vector<Output>;

// One input of an op: an Output, a Tensor, or a literal to turn into a Const.
class Input {
 public:
  Input(const Output& o) : output_(o) {}        // NOLINT(google-explicit-constructor)
  Input(const Operation& o) : output_(o) {}     // NOLINT(google-explicit-constructor)
  Input(const Tensor& t) : tensor_(t), has_tensor_(true) {}  // NOLINT
  Input(float v) : Input(Tensor::Scalar<float>(DT_FLOAT, v), true) {}       // NOLINT
  Input(double v) : Input(Tensor::Scalar<double>(DT_DOUBLE, v), true) {}    // NOLINT
  Input(int v) : Input(Tensor::Scalar<int32_t>(DT_INT32, v), true) {}       // NOLINT
  Input(int64_t v) : Input(Tensor::Scalar<int64_t>(DT_INT64, v), true) {}   // NOLINT
  Input(bool v) : Input(Tensor::Scalar<bool>(DT_BOOL, v), true) {}          // NOLINT
  Input(const char* s) : Input(std::string(s)) {}                           // NOLINT
  Input(const std::string& s);                                              // NOLINT
  Input(std::initializer_list<float> v) : Input(Vector<float>(DT_FLOAT, v), true) {}  // NOLINT
  Input(std::initializer_list<double> v)                                    // NOLINT
      : Input(Vector<double>(DT_DOUBLE, v), true) {}
  Input(std::initializer_list<int> v) : Input(Vector<int32_t>(DT_INT32, v), true) {}  // NOLINT
  Input(std::initializer_list<int64_t> v)                                   // NOLINT
      : Input(Vector<int64_t>(DT_INT64, v), true) {}
  Input(const std::vector<float>& v) : Input(Vector<float>(DT_FLOAT, v), true) {}      // NOLINT
  Input(const std::vector<int32_t>& v) : Input(Vector<int32_t>(DT_INT32, v), true) {}  // NOLINT
  Input(const std::vector<int64_t>& v) : Input(Vector<int64_t>(DT_INT64, v), true) {}  // NOLINT
  // A float literal of a given shape (row-major values), e.g. Input({1, 2, 3, 4}, {2, 2}).
  Input(std::initializer_list<float> v, const std::vector<int64_t>& shape);

  bool is_output() const { return output_.valid(); }
  const Output& output() const { return output_; }
  // Whether this is a literal whose dtype may follow the op (a Tensor's dtype never changes).
  bool is_literal() const { return literal_; }
  DataType natural_type() const { return has_tensor_ ? tensor_.dtype() : output_.type(); }
  // The constant value in dtype `dtype` (a literal converts; a Tensor must already match).
  StatusOr<Tensor> ConstantValue(DataType dtype) const;
  const Status& status() const { return status_; }

 private:
  Input(Tensor t, bool literal) : tensor_(std::move(t)), has_tensor_(true), literal_(literal) {}
  template <typename T, typename Values>
  static Tensor Vector(DataType dtype, const Values& v) {
    Tensor t(dtype, TensorShape({static_cast<int64_t>(v.size())}));
    int64_t i = 0;
    for (const auto& x : v) t.at<T>(i++) = static_cast<T>(x);
    return t;
  }

  Output output_;
  Tensor tensor_;
  bool has_tensor_ = false;
  bool literal_ = false;
  Status status_;
};

// A list input (Pack's values, ConcatV2's values, AddN's inputs).
using InputList = std::vector<Input>;

}  // namespace cfx

#endif  // CONFLUX_CC_OUTPUT_H_
