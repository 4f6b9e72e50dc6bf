// The passes over memory that FusedBatchNormV3 and FusedBatchNormGradV3 make on CPU (float).
//
// A tensor is seen as [outer, channels, inner]: NHWC/NDHWC has inner = 1 (rows of `channels`
// values), NCHW/NCDHW has outer = the batch and inner = the spatial size (planes of `inner`
// values of one channel). Each function is one pass spread over the device's intra-op pool.
// Per-channel sums are kept in double, over blocks fixed by the shape (not by the thread count),
// so that results are the same for any pool size. Thread-safe: no state.
#ifndef CONFLUX_PLUGINS_OPS_NN_BATCH_NORM_SWEEPS_H_
#define CONFLUX_PLUGINS_OPS_NN_BATCH_NORM_SWEEPS_H_

#include <cstdint>

#include "conflux/sdk.h"
#include "conflux/sdk/batch_norm_rules.h"

namespace cfx::nn {

using ChannelLayout = sdk::BatchNormLayout;

// sum[c] = sum(x - shift[c]), sum_sq[c] = sum((x - shift[c])^2) over channel c. Shifting by a
// value near the mean (any element of the channel) keeps the one-pass variance
// sum_sq / n - (sum / n)^2 free of cancellation.
void SumShifted(sdk::KernelContext& ctx, const ChannelLayout& l, const float* x, const float* shift,
                double* sum, double* sum_sq);

// y = (x - center[c]) * scale[c] + offset[c]. y may be x (a forwarded input).
void Normalize(sdk::KernelContext& ctx, const ChannelLayout& l, const float* x, const float* center,
               const float* scale, const float* offset, float* y);

// sum_dy[c] = sum(dy), sum_dy_xc[c] = sum(dy * (x - mean[c])) over channel c.
void SumGradient(sdk::KernelContext& ctx, const ChannelLayout& l, const float* dy, const float* x,
                 const float* mean, double* sum_dy, double* sum_dy_xc);

// dx = (dy - dy_mean[c]) * a[c] + (x - mean[c]) * b[c]: the training-mode input gradient.
// dx may be dy (a forwarded input).
void TrainingInputGradient(sdk::KernelContext& ctx, const ChannelLayout& l, const float* dy,
                           const float* x, const float* dy_mean, const float* a, const float* mean,
                           const float* b, float* dx);

// dx = dy * a[c] (the inference-mode input gradient) in the same pass as SumGradient's sums.
// dx may be dy (a forwarded input).
void InferenceInputGradient(sdk::KernelContext& ctx, const ChannelLayout& l, const float* dy,
                            const float* x, const float* mean, const float* a, float* dx,
                            double* sum_dy, double* sum_dy_xc);

}  // namespace cfx::nn

#endif  // CONFLUX_PLUGINS_OPS_NN_BATCH_NORM_SWEEPS_H_
