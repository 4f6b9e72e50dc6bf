// The batch-normalization passes (see batch_norm_sweeps.h).
//
// Rows (inner = 1) are walked along the channels, so that the per-channel arrays line up with
// the data and the loops vectorize; the row range is cut into blocks that each sum into their
// own per-channel buffers, added up in block order at the end. Planes (inner > 1) sum each
// plane into eight independent lanes (one double sum would wait on every addition's latency),
// then add the planes of each channel in batch order.
//
// The loops (batch_norm_loops.inc) are compiled twice: for the baseline x86-64 instruction set
// the plugin is built for, and for AVX2 + FMA, chosen once at run time from the CPU's features.
// With AVX2 the passes run about 1.5x to 2x faster on CNN activation shapes (float to double
// conversions and sums take half the instructions); bench/batch_norm_bench.cc measures them.
#include "batch_norm_sweeps.h"

#include <algorithm>
#include <memory>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define CFX_NN_AVX2_LOOPS 1
#endif

namespace cfx::nn {

namespace baseline_isa {
#include "batch_norm_loops.inc"
}  // namespace baseline_isa

#ifdef CFX_NN_AVX2_LOOPS
#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace avx2_isa {
#include "batch_norm_loops.inc"
}  // namespace avx2_isa
#pragma GCC pop_options
#endif

namespace {

bool UseAvx2() {
#ifdef CFX_NN_AVX2_LOOPS
  static const bool supported = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return supported;
#else
  return false;
#endif
}

}  // namespace

#ifdef CFX_NN_AVX2_LOOPS
#define CFX_NN_DISPATCH(fn, ...) \
  (UseAvx2() ? avx2_isa::fn(__VA_ARGS__) : baseline_isa::fn(__VA_ARGS__))
#else
#define CFX_NN_DISPATCH(fn, ...) baseline_isa::fn(__VA_ARGS__)
#endif

void SumShifted(sdk::KernelContext& ctx, const ChannelLayout& l, const float* x, const float* shift,
                double* sum, double* sum_sq) {
  CFX_NN_DISPATCH(SumShifted, ctx, l, x, shift, sum, sum_sq);
}

void Normalize(sdk::KernelContext& ctx, const ChannelLayout& l, const float* x, const float* center,
               const float* scale, const float* offset, float* y) {
  CFX_NN_DISPATCH(Normalize, ctx, l, x, center, scale, offset, y);
}

void SumGradient(sdk::KernelContext& ctx, const ChannelLayout& l, const float* dy, const float* x,
                 const float* mean, double* sum_dy, double* sum_dy_xc) {
  CFX_NN_DISPATCH(SumGradient, ctx, l, dy, x, mean, sum_dy, sum_dy_xc);
}

void TrainingInputGradient(sdk::KernelContext& ctx, const ChannelLayout& l, const float* dy,
                           const float* x, const float* dy_mean, const float* a, const float* mean,
                           const float* b, float* dx) {
  CFX_NN_DISPATCH(TrainingInputGradient, ctx, l, dy, x, dy_mean, a, mean, b, dx);
}

void InferenceInputGradient(sdk::KernelContext& ctx, const ChannelLayout& l, const float* dy,
                            const float* x, const float* mean, const float* a, float* dx,
                            double* sum_dy, double* sum_dy_xc) {
  CFX_NN_DISPATCH(InferenceInputGradient, ctx, l, dy, x, mean, a, dx, sum_dy, sum_dy_xc);
}

#undef CFX_NN_DISPATCH

}  // namespace cfx::nn
