// Device code of Softmax, LogSoftmax and the softmax cross entropies (kernels/nn_launch.h): one
// kernel, instantiated for a warp per row (rows of up to kSoftmaxWarpMaxCols) and a block per row,
// with the op a uniform switch. Each row is read from its maximum (exp never overflows: the
// largest term is 1, so the sum is >= 1 and its log finite), in the CPU kernels' formulas: three
// sweeps over the row (max; sums; outputs), the later ones from L1/L2.
#include <cmath>
#include <cstdint>

#include "kernels/nn_launch.h"

namespace cfx::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarp = 32;
constexpr unsigned kFullMask = 0xffffffffu;
constexpr int64_t kMaxBlocks = 65535 * 16;  // grid x cap; rows stride beyond

unsigned Blocks(int64_t blocks) {
  if (blocks < 1) return 1;
  return static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

__device__ float Combine(float a, float b, bool max) { return max ? fmaxf(a, b) : a + b; }

__device__ float WarpAll(float v, bool max) {
  for (int mask = kWarp / 2; mask > 0; mask >>= 1)
    v = Combine(v, __shfl_xor_sync(kFullMask, v, mask), max);
  return v;
}

// The fold of `v` over the row's group (a warp, or the block), in every thread of the group.
// Also orders the group's earlier memory accesses before its later ones.
template <bool kBlock>
__device__ float GroupAll(float v, bool max, float* scratch) {
  v = WarpAll(v, max);
  if constexpr (kBlock) {
    const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    const float identity = max ? -INFINITY : 0.0f;
    v = lane < static_cast<int>(blockDim.x / kWarp) ? scratch[lane] : identity;
    v = WarpAll(v, max);
    __syncthreads();  // scratch is reused by the next fold
  } else {
    __syncwarp();
  }
  return v;
}

template <bool kBlock>
__global__ void SoftmaxRowsKernel(SoftmaxArgs a) {
  __shared__ float scratch[kThreads / kWarp];
  const int64_t lane = kBlock ? threadIdx.x : threadIdx.x % kWarp;
  const int64_t width = kBlock ? blockDim.x : kWarp;
  const int64_t groups_per_block = kBlock ? 1 : blockDim.x / kWarp;
  const int64_t first = blockIdx.x * groups_per_block + (kBlock ? 0 : threadIdx.x / kWarp);
  const int64_t cols = a.cols, xs = a.x_col_step, ls = a.labels_col_step;
  const SoftmaxMode mode = a.mode;
  const bool dense = mode == SoftmaxMode::kCrossEntropy;
  for (int64_t r = first; r < a.rows; r += groups_per_block * gridDim.x) {  // uniform per group
    const float* x = a.x + r * a.x_row_step;
    const float* l = dense ? a.labels + r * a.labels_row_step : nullptr;
    float* y = a.y + r * cols;
    float max = -INFINITY;
    for (int64_t k = lane; k < cols; k += width) max = fmaxf(max, x[k * xs]);
    max = GroupAll<kBlock>(max, true, scratch);
    float sum = 0.0f, label_sum = 0.0f, weighted = 0.0f;
    for (int64_t k = lane; k < cols; k += width) {
      const float shifted = x[k * xs] - max;
      sum += expf(shifted);
      if (dense) {
        label_sum += l[k * ls];
        weighted += l[k * ls] * shifted;
      }
    }
    // Read before the group's barrier: y may be x, and y[label] is written below.
    int64_t label = -1;
    float label_shifted = 0.0f;
    if (mode == SoftmaxMode::kSparseCrossEntropy) {
      label = a.sparse_labels[r];
      if (lane == 0) label_shifted = x[label * xs] - max;
    }
    sum = GroupAll<kBlock>(sum, false, scratch);
    if (dense) {
      label_sum = GroupAll<kBlock>(label_sum, false, scratch);
      weighted = GroupAll<kBlock>(weighted, false, scratch);
    }
    switch (mode) {
      case SoftmaxMode::kSoftmax: {
        const float scale = 1.0f / sum;
        for (int64_t k = lane; k < cols; k += width) y[k] = expf(x[k * xs] - max) * scale;
        break;
      }
      case SoftmaxMode::kLogSoftmax: {
        const float shift = max + logf(sum);
        for (int64_t k = lane; k < cols; k += width) y[k] = x[k * xs] - shift;
        break;
      }
      case SoftmaxMode::kCrossEntropy: {
        const float inv = 1.0f / sum;
        for (int64_t k = lane; k < cols; k += width) y[k] = expf(x[k * xs] - max) * inv - l[k * ls];
        if (lane == 0) a.loss[r] = logf(sum) * label_sum - weighted;
        break;
      }
      case SoftmaxMode::kSparseCrossEntropy: {
        const float inv = 1.0f / sum;
        for (int64_t k = lane; k < cols; k += width) {
          const float p = expf(x[k * xs] - max) * inv;
          y[k] = k == label ? p - 1.0f : p;
        }
        if (lane == 0) a.loss[r] = logf(sum) - label_shifted;
        break;
      }
    }
    // The next row's folds reuse scratch only after GroupAll's own barriers; in a warp, its
    // writes above stay before the next row's reads (different rows: no overlap).
  }
}

}  // namespace

cudaError_t LaunchSoftmax(const SoftmaxArgs& a, cudaStream_t stream) {
  if (a.rows < 1 || a.cols < 1 || a.x == nullptr || a.y == nullptr) return cudaErrorInvalidValue;
  if ((a.mode == SoftmaxMode::kCrossEntropy || a.mode == SoftmaxMode::kSparseCrossEntropy) &&
      a.loss == nullptr)
    return cudaErrorInvalidValue;
  if (a.mode == SoftmaxMode::kCrossEntropy && a.labels == nullptr) return cudaErrorInvalidValue;
  if (a.mode == SoftmaxMode::kSparseCrossEntropy && a.sparse_labels == nullptr)
    return cudaErrorInvalidValue;
  if (a.cols <= kSoftmaxWarpMaxCols) {
    const int64_t rows_per_block = kThreads / kWarp;
    SoftmaxRowsKernel<false>
        <<<Blocks((a.rows + rows_per_block - 1) / rows_per_block), kThreads, 0, stream>>>(a);
  } else {
    SoftmaxRowsKernel<true><<<Blocks(a.rows), kThreads, 0, stream>>>(a);
  }
  return cudaGetLastError();
}

}  // namespace cfx::cuda
