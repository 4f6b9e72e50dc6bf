// Gradient checking: compares the gradients that AddSymbolicGradients builds with central finite
// differences of the forward graph.
//
//   auto x = ops::Placeholder(scope, DT_DOUBLE);
//   auto y = ops::Tanh(scope, x);
//   double err = ComputeGradientError(scope, runtime, {x}, {x_value}, {y}).value();
//   EXPECT_LT(err, 1e-6);
//
// Both Jacobians d(ys)/d(xs) are computed in full: the symbolic one row by row (one run per
// element of the ys, feeding a one-hot gradient), the numeric one column by column (two runs per
// element of the xs). Use small shapes. xs and ys must be float or double (double gives tight
// bounds). The xs are usually Placeholders; any other Output is fed too.
#ifndef CONFLUX_CC_GRADIENT_CHECKER_H_
#define CONFLUX_CC_GRADIENT_CHECKER_H_

#include <vector>

#include "conflux/cc/gradients.h"
#include "conflux/runtime.h"

namespace cfx {

// The largest absolute difference between the symbolic and the numeric Jacobian entries.
// Errors: the scope's error, a missing gradient function, dtypes other than float/double.
StatusOr<double> ComputeGradientError(const Scope& scope, Runtime* runtime,
                                      const std::vector<Output>& xs,
                                      const std::vector<Tensor>& x_values,
                                      const std::vector<Output>& ys, double delta = 1e-3);

}  // namespace cfx

#endif  // CONFLUX_CC_GRADIENT_CHECKER_H_
