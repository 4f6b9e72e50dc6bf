// Building blocks shared by the standard gradient functions (math_grad.cc, array_grad.cc).
#ifndef CONFLUX_CC_GRAD_HELPERS_H_
#define CONFLUX_CC_GRAD_HELPERS_H_

#include "conflux/cc/gradients.h"

namespace cfx::internal {

// The gradients of a broadcasting binary op's inputs x and y from gx and gy computed at the
// broadcast shape: each is summed over the axes it was broadcast along and reshaped to its
// input's shape.
void ReduceForBroadcast(const Scope& scope, const Output& x, const Output& y, Output* gx,
                        Output* gy);

// The shape of a reduction's output with keep_dims: `input_shape` with every axis in `axes`
// (negative ones counted from the end) set to 1.
Output ReducedShape(const Scope& scope, const Output& input_shape, const Output& axes);

// dy of a reduction of x over `axes` (with or without keep_dims), broadcast back to x's shape.
Output BroadcastReductionGrad(const Scope& scope, const Output& x, const Output& axes,
                              const Output& dy);

void RegisterMathGradients(GradientRegistry* r);
void RegisterArrayGradients(GradientRegistry* r);
void RegisterIndexGradients(GradientRegistry* r);        // index_grad.cc
void RegisterLinalgGradients(GradientRegistry* r);       // linalg_grad.cc
void RegisterTensorArrayGradients(GradientRegistry* r);  // tensor_array_grad.cc
void RegisterListGradients(GradientRegistry* r);         // list_grad.cc

}  // namespace cfx::internal

#endif  // CONFLUX_CC_GRAD_HELPERS_H_
