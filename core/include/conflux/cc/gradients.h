// Automatic differentiation (whitepaper §4.1): gradient functions per op, and
// AddSymbolicGradients, which adds the backward graph to a Scope.
//
//   std::vector<Output> grads;
//   CFX_RETURN_IF_ERROR(AddSymbolicGradients(scope, {loss}, {w, b}, &grads));
//
// A gradient function gets the forward Operation and one gradient per forward output (an
// invalid Output for outputs nothing depends on, when the function said it can take that, else
// zeros), and returns one gradient per forward data input (an invalid Output: no gradient, e.g.
// for an integer input or a shape). Gradient functions come from, in order of precedence:
//   1. a GradientRegistry passed to AddSymbolicGradients (a user's own functions);
//   2. the standard op gradients of the client library (StandardGradients());
//   3. gradients that plugins registered through the plugin ABI (Runtime's gradient table).
// Not thread-safe, like the Scope it builds in.
#ifndef CONFLUX_CC_GRADIENTS_H_
#define CONFLUX_CC_GRADIENTS_H_

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "conflux/cc/output.h"
#include "conflux/cc/scope.h"
#include "conflux/status.h"

namespace cfx {

using GradFunc = std::function<Status(const Scope& scope, const Operation& op,
                                      const std::vector<Output>& grad_outputs,
                                      std::vector<Output>* grad_inputs)>;

class GradientRegistry {
 public:
  // AlreadyExists when `op` has a function in this registry.
  Status Register(const std::string& op, GradFunc fn);
  // Ops that have no gradient by definition (Shape, Size, ArgMax, random ops, comparisons): their
  // inputs get no gradient and reaching them is not an error.
  void RegisterNoGradient(const std::string& op);
  // nullptr when `op` has no function here.
  const GradFunc* Find(const std::string& op) const;
  bool IsNoGradient(const std::string& op) const { return no_gradient_.count(op) > 0; }

 private:
  std::map<std::string, GradFunc> fns_;
  std::set<std::string> no_gradient_;
};

// The gradient functions of the standard ops (built once; thread-safe to read).
const GradientRegistry& StandardGradients();

// Adds nodes computing d(sum of ys weighted by grad_ys)/d(xs) to `scope`'s graph. `grad_ys`
// defaults to ones of each y's shape. Paths through StopGradient / PreventGradient (an error for
// PreventGradient) and non-differentiable inputs are cut; an op on a path from an x to a y that
// has no gradient function is an error naming the op and the node. An x that no y depends on
// gets zeros of its shape. `extra` (may be null) adds or overrides gradient functions.
Status AddSymbolicGradients(const Scope& scope, const std::vector<Output>& ys,
                            const std::vector<Output>& xs, const std::vector<Output>& grad_ys,
                            std::vector<Output>* grad_xs, const GradientRegistry* extra = nullptr);
Status AddSymbolicGradients(const Scope& scope, const std::vector<Output>& ys,
                            const std::vector<Output>& xs, std::vector<Output>* grad_xs);

}  // namespace cfx

#endif  // CONFLUX_CC_GRADIENTS_H_
