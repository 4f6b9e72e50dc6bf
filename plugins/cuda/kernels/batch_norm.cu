// Device code of FusedBatchNormV3 and FusedBatchNormGradV3 (kernels/batch_norm_launch.h), in the
// CPU kernels' formulas (plugins/ops-nn/batch_norm.cc). Each op is up to three launches on the
// stream, each waiting for the one before:
//   sums     per-channel sums over every element, one partial per (slice, channel) in double:
//            the forward pass sums x - shift and (x - shift)^2, shift being the channel's first
//            element; the gradient sums dy and dy * (x - mean);
//   finish   a warp per channel adds its partials and makes the statistics, the channel outputs
//            and three float coefficients per channel;
//   apply    the element-wise output from the coefficients (y, or x_backprop).
//
// Numerics: the forward sums are one pass of shifted sums, as on the CPU. With a shift inside the
// channel's data, sum_sq / n - (sum / n)^2 only cancels when the mean lies many standard
// deviations from the shift, and in double that costs digits the float results never had. Each
// thread adds its elements in double, then a fixed tree in shared memory joins the block's
// threads and the finish warp the slices; no atomics, so the bits depend on the shape alone.
// Double arithmetic costs one conversion and two operations per element, far under what sm_90
// does per byte of memory read; float partial sums over runs of millions of elements would lose
// the low digits of the variance that the CPU keeps.
#include <cmath>
#include <cstdint>

#include "kernels/batch_norm_launch.h"

namespace cfx::cuda {
namespace {

constexpr int kThreads = kBatchNormThreads;
constexpr int kWarp = 32;
constexpr int kWarpsPerBlock = kThreads / kWarp;
constexpr unsigned kFullMask = 0xffffffffu;
constexpr int64_t kMaxGridX = 0x7fffffff;
constexpr int64_t kMaxGridY = 65535;

__device__ int64_t ChannelOf(const BatchNormPlan& p) {
  return BatchNormChannel(p, blockIdx.x, threadIdx.x);
}

template <typename Visit>
__device__ void ForEachElement(const BatchNormPlan& p, int64_t c, Visit&& visit) {
  BatchNormForEachElement(p, blockIdx.y, threadIdx.x, c, visit);
}

enum class SumKind { kShifted, kGradient };

// Per (slice, channel): kShifted sums x - x[first of c] and its square; kGradient sums dy and
// dy * (x - mean). partials[s * channels + c] gets the first sum, partials[(slices + s) *
// channels + c] the second.
template <SumKind kKind>
__global__ void SumsKernel(BatchNormPlan p, const float* dy, const float* x, const float* mean,
                           double* partials) {
  __shared__ double first_sums[kThreads], second_sums[kThreads];
  const int64_t c = ChannelOf(p);
  double u = 0.0, v = 0.0;
  if (c < p.channels) {
    if constexpr (kKind == SumKind::kShifted) {
      const float shift = x[c * p.inner];
      ForEachElement(p, c, [&](int64_t o) {
        const double d = x[o] - shift;  // in float, as on the CPU
        u += d;
        v += d * d;
      });
    } else {
      const float m = mean[c];
      ForEachElement(p, c, [&](int64_t o) {
        const float g = dy[o];
        u += g;
        v += static_cast<double>(g) * (x[o] - m);
      });
    }
  }
  const int t = threadIdx.x;
  first_sums[t] = u;
  second_sums[t] = v;
  __syncthreads();
  // Threads t and t + half hold the same channel lane: rows keep `width` lanes apart, pieces
  // fold the whole block into thread 0.
  const int lanes = p.rows ? p.width : 1;
  for (int half = kThreads / 2; half >= lanes; half /= 2) {
    if (t < half) {
      first_sums[t] += first_sums[t + half];
      second_sums[t] += second_sums[t + half];
    }
    __syncthreads();
  }
  if (t < lanes && c < p.channels) {
    partials[blockIdx.y * p.channels + c] = first_sums[t];
    partials[(p.slices + blockIdx.y) * p.channels + c] = second_sums[t];
  }
}

// The two sums of channel c over its slices, in every lane of the calling warp: lane k adds the
// slices k, k + 32, ... in order, then a butterfly joins the lanes (the same tree every time).
__device__ void ChannelSums(const BatchNormPlan& p, const double* partials, int64_t c, double* u,
                            double* v) {
  double a = 0.0, b = 0.0;
  for (int64_t s = threadIdx.x % kWarp; s < p.slices; s += kWarp) {
    a += partials[s * p.channels + c];
    b += partials[(p.slices + s) * p.channels + c];
  }
  for (int mask = kWarp / 2; mask > 0; mask >>= 1) {
    a += __shfl_xor_sync(kFullMask, a, mask);
    b += __shfl_xor_sync(kFullMask, b, mask);
  }
  *u = a;
  *v = b;
}

// The coefficients of channel c: center, multiplier, addend (forward: y = (x - center) * mul +
// add) or dy_mean, mul, addend (gradient: dx = (dy - dy_mean) * mul + (x - mean) * add).
struct Coefficients {
  float* first;
  float* mul;
  float* add;
  __device__ Coefficients(float* base, int64_t channels)
      : first(base), mul(base + channels), add(base + 2 * channels) {}
};

// A warp per channel: the forward op's statistics outputs and coefficients.
__global__ void FinishForwardKernel(BatchNormForwardArgs a) {
  const BatchNormPlan& p = a.plan;
  const int64_t c = blockIdx.x * int64_t{kWarpsPerBlock} + threadIdx.x / kWarp;
  if (c >= p.channels) return;  // the whole warp
  const bool lead = threadIdx.x % kWarp == 0;
  Coefficients k(a.coefficients, p.channels);
  const double eps = a.epsilon;
  if (!a.training) {
    if (!lead) return;
    // batch_mean may be `mean` itself (forwarded): each entry is read before it is written.
    const float m = a.mean[c], var = a.variance[c];
    k.first[c] = m;
    k.mul[c] = static_cast<float>(a.scale[c] / sqrt(static_cast<double>(var) + eps));
    k.add[c] = a.offset[c];
    a.batch_mean[c] = m;
    a.saved_mean[c] = m;
    a.batch_variance[c] = var;
    a.saved_variance[c] = var;
    return;
  }
  double sum, sum_sq;
  ChannelSums(p, a.partials, c, &sum, &sum_sq);
  if (!lead) return;
  const double n = static_cast<double>(p.outer * p.inner);
  const double bessel = n / (n - 1.0 > 1.0 ? n - 1.0 : 1.0);
  const float shift = a.x[c * p.inner];  // y, written later, may be x
  const double d = sum / n;
  const double m = shift + d;
  const double raw = sum_sq / n - d * d;
  const double v = raw < 0.0 ? 0.0 : raw;  // a NaN stays NaN, as on the CPU
  const double mul = a.scale[c] / sqrt(v + eps);
  const bool averaging = a.exponential_avg_factor != 1.0f;
  const double f = a.exponential_avg_factor;
  const double old_mean = averaging ? a.mean[c] : 0.0;  // before batch_mean[c] is written
  const double old_var = averaging ? a.variance[c] : 0.0;
  a.saved_mean[c] = static_cast<float>(m);
  a.saved_variance[c] = static_cast<float>(v);
  a.batch_mean[c] = static_cast<float>(averaging ? (1 - f) * old_mean + f * m : m);
  a.batch_variance[c] =
      static_cast<float>(averaging ? (1 - f) * old_var + f * bessel * v : bessel * v);
  // y = (x - shift) * mul + (offset - d * mul): x - shift is taken in float, where x - m would
  // carry the rounding of m.
  k.first[c] = shift;
  k.mul[c] = static_cast<float>(mul);
  k.add[c] = static_cast<float>(a.offset[c] - d * mul);
}

// A warp per channel: scale_backprop, offset_backprop and the input gradient's coefficients.
__global__ void FinishGradKernel(BatchNormGradArgs a) {
  const BatchNormPlan& p = a.plan;
  const int64_t c = blockIdx.x * int64_t{kWarpsPerBlock} + threadIdx.x / kWarp;
  if (c >= p.channels) return;  // the whole warp
  double sum_dy, sum_dy_xc;
  ChannelSums(p, a.partials, c, &sum_dy, &sum_dy_xc);
  if (threadIdx.x % kWarp != 0) return;
  const double rstd = 1.0 / sqrt(static_cast<double>(a.variance[c]) + a.epsilon);
  const float mul = static_cast<float>(a.scale[c] * rstd);
  Coefficients k(a.coefficients, p.channels);
  k.mul[c] = mul;
  k.first[c] = 0.0f;  // inference: dx = dy * mul
  k.add[c] = 0.0f;
  if (a.training) {
    // dx = mul * (dy - mean(dy) - (x - m) * mean(dy * (x - m)) / (v + epsilon)).
    const double n = static_cast<double>(p.outer * p.inner);
    k.first[c] = static_cast<float>(sum_dy / n);
    k.add[c] = static_cast<float>(-mul * rstd * rstd * sum_dy_xc / n);
  }
  a.scale_backprop[c] = static_cast<float>(sum_dy_xc * rstd);
  a.offset_backprop[c] = static_cast<float>(sum_dy);
}

enum class ApplyKind { kNormalize, kTrainingGradient, kInferenceGradient };

// out = (in - first) * mul + add (kNormalize), (in - first) * mul + (x - mean) * add
// (kTrainingGradient) or in * mul (kInferenceGradient), per channel's coefficients. out may be
// in: each element is read, then written, by one thread.
template <ApplyKind kKind>
__global__ void ApplyKernel(BatchNormPlan p, const float* in, const float* x, const float* mean,
                            const float* coefficients, float* out) {
  const int64_t c = ChannelOf(p);
  if (c >= p.channels) return;
  const float first = coefficients[c], mul = coefficients[p.channels + c],
              add = coefficients[2 * p.channels + c];
  if constexpr (kKind == ApplyKind::kNormalize) {
    ForEachElement(p, c, [&](int64_t o) { out[o] = (in[o] - first) * mul + add; });
  } else if constexpr (kKind == ApplyKind::kTrainingGradient) {
    const float m = mean[c];
    ForEachElement(p, c, [&](int64_t o) { out[o] = (in[o] - first) * mul + (x[o] - m) * add; });
  } else {
    ForEachElement(p, c, [&](int64_t o) { out[o] = in[o] * mul; });
  }
}

// The statistics of an empty x: NaN (the CPU's quiet NaN, bit for bit).
__global__ void FillNanKernel(int64_t n, float* a, float* b, float* c, float* d) {
  const float nan = __int_as_float(0x7fc00000);
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    a[i] = nan;
    b[i] = nan;
    c[i] = nan;
    d[i] = nan;
  }
}

unsigned Blocks(int64_t n, int64_t per_block) {
  const int64_t blocks = (n + per_block - 1) / per_block;
  return static_cast<unsigned>(blocks < 65535 * 16 ? blocks : 65535 * 16);
}

// The passes' grid, or false when the plan does not fit one.
bool PassGrid(const BatchNormPlan& p, dim3* grid) {
  const int64_t finish_blocks = (p.channels + kWarpsPerBlock - 1) / kWarpsPerBlock;
  if (p.blocks_x < 1 || p.blocks_x > kMaxGridX || p.slices < 1 || p.slices > kMaxGridY ||
      finish_blocks > kMaxGridX)
    return false;
  *grid = dim3(static_cast<unsigned>(p.blocks_x), static_cast<unsigned>(p.slices));
  return true;
}

unsigned FinishBlocks(const BatchNormPlan& p) {
  return static_cast<unsigned>((p.channels + kWarpsPerBlock - 1) / kWarpsPerBlock);
}

}  // namespace

cudaError_t LaunchBatchNormForward(const BatchNormForwardArgs& a, cudaStream_t stream) {
  const BatchNormPlan& p = a.plan;
  if (p.channels < 0) return cudaErrorInvalidValue;
  if (p.channels == 0) return cudaSuccess;
  if (a.batch_mean == nullptr || a.batch_variance == nullptr || a.saved_mean == nullptr ||
      a.saved_variance == nullptr)
    return cudaErrorInvalidValue;
  if (p.empty()) {
    FillNanKernel<<<Blocks(p.channels, kThreads), kThreads, 0, stream>>>(
        p.channels, a.batch_mean, a.batch_variance, a.saved_mean, a.saved_variance);
    return cudaGetLastError();
  }
  const bool reads_statistics = !a.training || a.exponential_avg_factor != 1.0f;
  if (a.x == nullptr || a.y == nullptr || a.scale == nullptr || a.offset == nullptr ||
      a.coefficients == nullptr || (a.training && a.partials == nullptr) ||
      (reads_statistics && (a.mean == nullptr || a.variance == nullptr)))
    return cudaErrorInvalidValue;
  dim3 grid;
  if (!PassGrid(p, &grid)) return cudaErrorInvalidValue;
  cudaError_t err = cudaSuccess;
  if (a.training) {
    SumsKernel<SumKind::kShifted>
        <<<grid, kThreads, 0, stream>>>(p, nullptr, a.x, nullptr, a.partials);
    if ((err = cudaGetLastError()) != cudaSuccess) return err;
  }
  FinishForwardKernel<<<FinishBlocks(p), kThreads, 0, stream>>>(a);
  if ((err = cudaGetLastError()) != cudaSuccess) return err;
  ApplyKernel<ApplyKind::kNormalize>
      <<<grid, kThreads, 0, stream>>>(p, a.x, nullptr, nullptr, a.coefficients, a.y);
  return cudaGetLastError();
}

cudaError_t LaunchBatchNormGrad(const BatchNormGradArgs& a, cudaStream_t stream) {
  const BatchNormPlan& p = a.plan;
  if (p.channels < 0) return cudaErrorInvalidValue;
  if (p.channels == 0) return cudaSuccess;
  if (a.scale_backprop == nullptr || a.offset_backprop == nullptr) return cudaErrorInvalidValue;
  if (p.empty()) {
    const size_t bytes = static_cast<size_t>(p.channels) * sizeof(float);
    cudaError_t err = cudaMemsetAsync(a.scale_backprop, 0, bytes, stream);
    if (err != cudaSuccess) return err;
    return cudaMemsetAsync(a.offset_backprop, 0, bytes, stream);
  }
  if (a.dy == nullptr || a.x == nullptr || a.scale == nullptr || a.mean == nullptr ||
      a.variance == nullptr || a.dx == nullptr || a.partials == nullptr ||
      a.coefficients == nullptr)
    return cudaErrorInvalidValue;
  dim3 grid;
  if (!PassGrid(p, &grid)) return cudaErrorInvalidValue;
  cudaError_t err = cudaSuccess;
  SumsKernel<SumKind::kGradient><<<grid, kThreads, 0, stream>>>(p, a.dy, a.x, a.mean, a.partials);
  if ((err = cudaGetLastError()) != cudaSuccess) return err;
  FinishGradKernel<<<FinishBlocks(p), kThreads, 0, stream>>>(a);
  if ((err = cudaGetLastError()) != cudaSuccess) return err;
  if (a.training) {
    ApplyKernel<ApplyKind::kTrainingGradient>
        <<<grid, kThreads, 0, stream>>>(p, a.dy, a.x, a.mean, a.coefficients, a.dx);
  } else {
    ApplyKernel<ApplyKind::kInferenceGradient>
        <<<grid, kThreads, 0, stream>>>(p, a.dy, nullptr, nullptr, a.coefficients, a.dx);
  }
  return cudaGetLastError();
}

}  // namespace cfx::cuda
