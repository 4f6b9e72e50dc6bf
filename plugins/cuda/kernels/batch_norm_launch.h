// Launches of FusedBatchNormV3's and FusedBatchNormGradV3's device code (kernels/batch_norm.cu)
// and their host plan. Plain C++ over raw device pointers, free of the SDK (nvcc compiles this
// header); the plan is host logic, tested without a GPU (tests/cuda/batch_norm_plan_test.cc).
//
// x is seen as [outer, channels, inner] (conflux/sdk/batch_norm_rules.h). Every pass walks the
// same grid: blockIdx.x picks channels, blockIdx.y a slice, a contiguous range of the channel's
// "runs":
//   rows   (inner == 1: NHWC, NDHWC, or a channel-first format with 1x1 spatial size): a block is
//          `width` neighbouring channels (threadIdx % width) times kBatchNormThreads / width rows
//          (threadIdx / width); a run is one row, and a warp reads whole stretches of rows.
//   pieces (inner > 1): a block is one channel; a run is a piece of one plane (n, c) of at most
//          kBatchNormMaxPiece contiguous elements, which `width` threads read side by side while
//          the block's kBatchNormThreads / width groups take different runs.
// The slices, and so which elements each thread adds up and the tree that joins them, depend on
// the shape alone (not on the GPU's size): the sums are the same bits in every run.
#ifndef CONFLUX_PLUGINS_CUDA_KERNELS_BATCH_NORM_LAUNCH_H_
#define CONFLUX_PLUGINS_CUDA_KERNELS_BATCH_NORM_LAUNCH_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/launch.h"  // CFX_HOST_DEVICE

namespace cfx::cuda {

inline constexpr int kBatchNormThreads = 256;
// Blocks a pass aims at: enough to fill the largest GPUs several times over.
inline constexpr int64_t kBatchNormTargetBlocks = 2048;
// A slice gives each thread at least about this many elements (fewer only when the whole
// channel is smaller), so that the per-slice partial sums stay few.
inline constexpr int64_t kBatchNormMinPerThread = 16;
// The longest piece of a plane that is one run.
inline constexpr int64_t kBatchNormMaxPiece = 4096;

struct BatchNormPlan {
  int64_t outer = 0, channels = 0, inner = 1;
  bool rows = true;
  int width = 1;         // rows: channels per block; pieces: threads per run (powers of 2)
  int64_t piece = 1;     // pieces: elements of a run (the last piece of a plane may be shorter)
  int64_t pieces = 1;    // pieces: runs per plane, ceil(inner / piece)
  int64_t runs = 0;      // runs of each channel: outer (rows) or outer * pieces
  int64_t blocks_x = 0;  // channel tiles (rows) or channels (pieces)
  int64_t slices = 1;    // grid y
  int64_t runs_per_slice = 0;  // slice s: runs [s * runs_per_slice, (s + 1) * runs_per_slice)
  bool empty() const { return runs == 0; }  // no elements, or no channels
};

// The smallest power of two >= n and >= 1, at most `cap` (a power of two).
inline int BatchNormPowerOfTwo(int64_t n, int cap) {
  int p = 1;
  while (p < n && p < cap) p *= 2;
  return p;
}

// The plan of x's layout. With no elements (channels, outer or inner 0) it has no runs and the
// launches only fill the statistics (see below).
inline BatchNormPlan PlanBatchNorm(int64_t outer, int64_t channels, int64_t inner) {
  BatchNormPlan p;
  p.outer = outer;
  p.channels = channels;
  p.inner = inner;
  if (outer < 1 || channels < 1 || inner < 1) return p;
  p.rows = inner == 1;
  int64_t min_runs = 1;  // runs per slice that give each thread kBatchNormMinPerThread elements
  if (p.rows) {
    p.width = BatchNormPowerOfTwo(channels, 32);
    p.blocks_x = (channels + p.width - 1) / p.width;
    p.runs = outer;
    min_runs = kBatchNormMinPerThread * (kBatchNormThreads / p.width);
  } else {
    p.pieces = (inner + kBatchNormMaxPiece - 1) / kBatchNormMaxPiece;
    p.piece = (inner + p.pieces - 1) / p.pieces;
    p.width = BatchNormPowerOfTwo(p.piece, kBatchNormThreads);
    p.blocks_x = channels;
    p.runs = outer * p.pieces;
    const int64_t elements = kBatchNormMinPerThread * kBatchNormThreads;
    min_runs = (elements + p.piece - 1) / p.piece;
  }
  const int64_t wanted = (kBatchNormTargetBlocks + p.blocks_x - 1) / p.blocks_x;
  int64_t slices = p.runs / min_runs;
  if (slices > wanted) slices = wanted;
  if (slices < 1) slices = 1;
  p.runs_per_slice = (p.runs + slices - 1) / slices;
  p.slices = (p.runs + p.runs_per_slice - 1) / p.runs_per_slice;
  return p;
}

// The channel of thread `thread` in block column `block_x` of a pass; >= channels for the spare
// lanes of the last tile of rows, which visit nothing.
CFX_HOST_DEVICE inline int64_t BatchNormChannel(const BatchNormPlan& p, int64_t block_x,
                                                int thread) {
  return p.rows ? block_x * p.width + thread % p.width : block_x;
}

// Calls visit(offset) for each element of channel c that thread `thread` of the block in row
// `slice` of a pass handles, always in the same order. The device code walks its elements with
// this; the host tests check that the threads of a channel cover it exactly once.
template <typename Visit>
CFX_HOST_DEVICE void BatchNormForEachElement(const BatchNormPlan& p, int64_t slice, int thread,
                                             int64_t c, Visit&& visit) {
  const int64_t begin = slice * p.runs_per_slice;
  const int64_t end = begin + p.runs_per_slice < p.runs ? begin + p.runs_per_slice : p.runs;
  const int lane = thread % p.width;
  const int group = thread / p.width;
  const int groups = kBatchNormThreads / p.width;
  if (p.rows) {
    for (int64_t r = begin + group; r < end; r += groups) visit(r * p.channels + c);
    return;
  }
  for (int64_t r = begin + group; r < end; r += groups) {
    const int64_t n = p.pieces == 1 ? r : r / p.pieces;  // the plane (n, c)
    const int64_t first = (r - n * p.pieces) * p.piece;
    const int64_t last = first + p.piece < p.inner ? first + p.piece : p.inner;
    const int64_t base = (n * p.channels + c) * p.inner;
    for (int64_t i = first + lane; i < last; i += p.width) visit(base + i);
  }
}

// Doubles of the per-slice partial sums (two per channel and slice) and floats of the
// per-channel coefficients that the launches below need as scratch.
inline int64_t BatchNormPartials(const BatchNormPlan& p) { return 2 * p.slices * p.channels; }
inline int64_t BatchNormCoefficients(const BatchNormPlan& p) { return 3 * p.channels; }

// FusedBatchNormV3 on float. `plan` is PlanBatchNorm of x's layout, or empty (outer * inner = 0,
// channels >= 0: the statistics outputs are filled with NaN, as on the CPU). Training: the batch's
// statistics normalize x; batch_mean / batch_variance get them (the variance with Bessel's
// correction), blended with mean / variance when exponential_avg_factor != 1 (else mean and
// variance are not read and may be null); saved_mean / saved_variance get the mean and the biased
// variance. Inference: mean and variance normalize x and are copied to the four statistics
// outputs. y may be x and batch_mean / batch_variance may be mean / variance (forwarded inputs).
// `partials` (BatchNormPartials doubles, training only) and `coefficients`
// (BatchNormCoefficients floats) are device scratch.
struct BatchNormForwardArgs {
  BatchNormPlan plan;
  bool training = true;
  float epsilon = 1e-4f;
  float exponential_avg_factor = 1.0f;
  const float* x = nullptr;
  const float* scale = nullptr;
  const float* offset = nullptr;
  const float* mean = nullptr;
  const float* variance = nullptr;
  float* y = nullptr;
  float* batch_mean = nullptr;
  float* batch_variance = nullptr;
  float* saved_mean = nullptr;
  float* saved_variance = nullptr;
  double* partials = nullptr;
  float* coefficients = nullptr;
};

// FusedBatchNormGradV3 on float: x_backprop (dx, may be dy), scale_backprop and offset_backprop
// from dy, x, scale and the mean and variance the forward op used. An empty plan zeroes the two
// channel gradients. Scratch as above (partials in both modes).
struct BatchNormGradArgs {
  BatchNormPlan plan;
  bool training = true;
  float epsilon = 1e-4f;
  const float* dy = nullptr;
  const float* x = nullptr;
  const float* scale = nullptr;
  const float* mean = nullptr;
  const float* variance = nullptr;
  float* dx = nullptr;
  float* scale_backprop = nullptr;
  float* offset_backprop = nullptr;
  double* partials = nullptr;
  float* coefficients = nullptr;
};

// Enqueue the passes; cudaErrorInvalidValue when a pointer they use is null or the plan does not
// fit a grid.
cudaError_t LaunchBatchNormForward(const BatchNormForwardArgs& args, cudaStream_t stream);
cudaError_t LaunchBatchNormGrad(const BatchNormGradArgs& args, cudaStream_t stream);

}  // namespace cfx::cuda

#endif  // CONFLUX_PLUGINS_CUDA_KERNELS_BATCH_NORM_LAUNCH_H_
