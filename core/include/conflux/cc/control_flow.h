// Dynamic control flow in the C++ client API (EuroSys 2018 §3): WhileLoop and Cond build
// TensorFlow's control-flow primitives (Enter, Merge, Switch, LoopCond, NextIteration, Exit), so
// the graph runs in the executor's frames and a TensorFlow v1 graph looks the same.
//
//   std::vector<Output> out;
//   CFX_RETURN_IF_ERROR(WhileLoop(
//       scope, {i0, acc0},
//       [](const Scope& s, const std::vector<Output>& v, Output* pred) {
//         *pred = ops::Less(s, v[0], 10);
//         return s.status();
//       },
//       [&](const Scope& s, const std::vector<Output>& v, std::vector<Output>* next) {
//         *next = {ops::AddV2(s, v[0], 1), ops::Mul(s, v[1], w)};  // w: built outside, captured
//         return s.status();
//       },
//       &out));
//
// The functions build their part of the graph through the Scope they are given. A tensor built
// outside the construct and used inside is captured (an Enter with is_constant per loop, a Switch
// per branch) at each level of nesting; constructs nest freely. Tensors built inside a construct
// are not usable outside it except through its outputs. AddSymbolicGradients differentiates
// through both constructs (conflux/cc/gradients.h). Not thread-safe, like the Scope.
#ifndef CONFLUX_CC_CONTROL_FLOW_H_
#define CONFLUX_CC_CONTROL_FLOW_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "conflux/cc/output.h"
#include "conflux/cc/scope.h"
#include "conflux/status.h"

namespace cfx {

// Sets *pred to a scalar bool computed from the loop variables' current values.
using CondFn = std::function<Status(const Scope&, const std::vector<Output>& vars, Output* pred)>;
// Sets *next to the loop variables' values for the next iteration (same count and dtypes).
using BodyFn =
    std::function<Status(const Scope&, const std::vector<Output>& vars, std::vector<Output>* next)>;

struct WhileLoopOptions {
  // How many iterations may run at once (the Enter attr of that name).
  int parallel_iterations = 10;
  // < 0: unbounded; else the loop stops after this many iterations even if cond still holds.
  int64_t maximum_iterations = -1;
  // The loop's name scope; its frame name is that scope's (unique) name.
  std::string name = "while";
  // The loop's gradient keeps the forward values it needs on stacks whose pushes may move them
  // to host memory while the forward loop runs, and bring them back (prefetched) for the
  // backward loop: on a device with memory of its own, once its memory in use passes the
  // device's swap_threshold (TensorFlow's while_loop swap_memory).
  bool swap_memory = false;
};

// Builds `while (cond(vars)) vars = body(vars)` starting from `loop_vars` (at least one). On
// success *outputs holds the loop variables' final values (the Exit outputs), one per loop var.
// Errors (also recorded in the scope): a function's own error, a predicate that is not bool, a
// body that returns another number of values or other dtypes than the loop variables, a tensor
// built inside another construct. A control dependency of a node inside on a node outside becomes
// one on an Identity (inside) of that node's first output, as in TensorFlow.
Status WhileLoop(const Scope& scope, const std::vector<Output>& loop_vars, const CondFn& cond,
                 const BodyFn& body, std::vector<Output>* outputs,
                 const WhileLoopOptions& options = {});

// Builds one branch of a Cond; *outputs are the branch's results.
using BranchFn = std::function<Status(const Scope&, std::vector<Output>* outputs)>;

// Builds `pred ? true_fn() : false_fn()`: only the taken branch runs. On success *outputs holds
// one Merge output per branch result. Errors (also recorded in the scope): `pred` not bool, a
// function's own error, branches that return different numbers of results or different dtypes.
Status Cond(const Scope& scope, const Output& pred, const BranchFn& true_fn,
            const BranchFn& false_fn, std::vector<Output>* outputs,
            const std::string& name = "cond");

}  // namespace cfx

#endif  // CONFLUX_CC_CONTROL_FLOW_H_
