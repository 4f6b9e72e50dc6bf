// Higher-order functions over dimension 0 of tensors (EuroSys 2018 Figure 2): MapFn, FoldL,
// FoldR and Scan, each built as TensorFlow builds tf.map_fn, tf.foldl, tf.foldr and tf.scan —
// one WhileLoop over TensorArrays: the inputs are unstacked into arrays before the loop, each
// iteration reads its elements and writes its results, and the result arrays are stacked after
// it. Iterations of MapFn are independent, so up to parallel_iterations of them run at once;
// those of the folds and Scan are chained through their accumulator.
//
//   std::vector<Output> squares;
//   CFX_RETURN_IF_ERROR(MapFn(
//       scope,
//       [](const Scope& s, const std::vector<Output>& x, std::vector<Output>* y) {
//         *y = {ops::Square(s, x[0])};
//         return s.status();
//       },
//       {elems}, &squares));
//
// A function builds its part of the graph through the Scope it is given, inside the loop; a
// tensor built outside and used inside is captured. AddSymbolicGradients differentiates the
// results with respect to the elems, the initializer and captured tensors (through the
// TensorArray and WhileLoop gradients). On failure the functions return the error and record it
// in the scope. Not thread-safe, like the Scope.
#ifndef CONFLUX_CC_FUNCTIONAL_H_
#define CONFLUX_CC_FUNCTIONAL_H_

#include <functional>
#include <string>
#include <vector>

#include "conflux/cc/output.h"
#include "conflux/cc/scope.h"
#include "conflux/status.h"

namespace cfx {

// The function applied per element: `args` are the values of one step (what they are depends on
// the higher-order function); `*results` gets what the function computed from them.
using ElementFn = std::function<Status(const Scope&, const std::vector<Output>& args,
                                       std::vector<Output>* results)>;

struct MapFnOptions {
  // The dtypes of fn's results, one per result; empty: one result per elems tensor, of its dtype.
  std::vector<DataType> dtypes;
  // How many elements may be computed at once.
  int parallel_iterations = 10;
  // WhileLoopOptions::swap_memory for the loop that maps.
  bool swap_memory = false;
  // Give the results the static shapes of fn's results (needed to map over no elements).
  bool infer_shape = true;
  // The name scope of the nodes built.
  std::string name = "map";
};

// outputs[k][i] = fn(elems[0][i], elems[1][i], ...)[k] for every i below the elems' common size
// in dimension 0; fn gets one argument per elems tensor. On success *outputs holds one stacked
// tensor per result. Errors: no elems, a scalar elems, elems whose sizes in dimension 0 differ
// (when building where the static shapes show it, else when the step runs), fn's own error, fn
// returning another number of results or other dtypes than `dtypes` says (than the elems' when
// empty). Mapping over no elements needs fn's results' static shapes to be known.
Status MapFn(const Scope& scope, const ElementFn& fn, const std::vector<Output>& elems,
             std::vector<Output>* outputs, const MapFnOptions& options = {});

struct FoldOptions {
  // How many iterations may run at once (only the reads of the elements overlap: each step needs
  // the previous accumulator).
  int parallel_iterations = 10;
  // WhileLoopOptions::swap_memory for the loop that folds.
  bool swap_memory = false;
  // The name scope of the nodes built; empty: "foldl" or "foldr".
  std::string name;
};

// a = initializer; for i in 0..n-1: a = fn(a..., elems[0][i], elems[1][i], ...). fn's args are
// the accumulator's values followed by one element per elems tensor; its results are the next
// accumulator (as many values, same dtypes). An empty `initializer` starts with the first
// elements (a = elems[k][0]) and folds the rest, so the accumulator then has one value per elems
// tensor. On success *outputs holds the final accumulator. Errors: as MapFn's, and no initializer
// with no elements (when building where static shapes show it, else when the step runs).
Status FoldL(const Scope& scope, const ElementFn& fn, const std::vector<Output>& elems,
             const std::vector<Output>& initializer, std::vector<Output>* outputs,
             const FoldOptions& options = {});
// FoldL from the last element to the first (the default initializer is the last elements).
Status FoldR(const Scope& scope, const ElementFn& fn, const std::vector<Output>& elems,
             const std::vector<Output>& initializer, std::vector<Output>* outputs,
             const FoldOptions& options = {});

struct ScanOptions {
  // Scan from the last element to the first; outputs keep the elements' order.
  bool reverse = false;
  int parallel_iterations = 10;
  // WhileLoopOptions::swap_memory for the loop that scans.
  bool swap_memory = false;
  // Give the results the static shapes of the accumulator.
  bool infer_shape = true;
  std::string name = "scan";
};

// FoldL that keeps every accumulator: outputs[k][i] is accumulator value k after element i. With
// an empty `initializer` the first elements (the last when reversed) are the first accumulator
// and appear as such in the outputs. Errors: as FoldL's.
Status Scan(const Scope& scope, const ElementFn& fn, const std::vector<Output>& elems,
            const std::vector<Output>& initializer, std::vector<Output>* outputs,
            const ScanOptions& options = {});

}  // namespace cfx

#endif  // CONFLUX_CC_FUNCTIONAL_H_
