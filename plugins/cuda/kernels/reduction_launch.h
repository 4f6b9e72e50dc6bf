// Launches of the reduction device code (kernels/reduction.cu), shared by the reduction kernels
// (Sum, Mean, Max, Min, Prod, ArgMax, ArgMin) and the nn kernels that fold (BiasAddGrad, L2Loss).
// Plain C++ over raw device pointers, free of the SDK (nvcc compiles this header); the host-side
// planning that turns an op into these launches is in kernels/reduction_plan_cuda.h.
//
// Every launch folds an input viewed as a row-major [outer, n, inner] array over its middle axis:
//   inner == 1   "rows": each output folds a contiguous run of n elements (a reduction over the
//                last dims): a thread per row when n <= 16, a warp per row when n <= 1024, a
//                block per row (or per row segment) otherwise;
//   inner > 1    "columns": each output folds a strided column (a reduction over leading or
//                middle dims, e.g. a batch sum): a block covers a tile of up to
//                kReduceThreads consecutive elements of a row (coalesced), folds the tile's rows
//                thread by thread, and combines the threads of one column in shared memory.
// With segments > 1 the n axis is split into that many contiguous segments, each folded by its own
// block(s), into partial results laid out as [outer, segments, inner]; a second launch with n =
// segments (and segments = 1) folds those. No atomics: the result does not depend on scheduling.
#ifndef CONFLUX_PLUGINS_CUDA_KERNELS_REDUCTION_LAUNCH_H_
#define CONFLUX_PLUGINS_CUDA_KERNELS_REDUCTION_LAUNCH_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/launch.h"  // CFX_HOST_DEVICE

namespace cfx::cuda {

inline constexpr int kReduceThreads = 256;        // threads of every reduction block
inline constexpr int64_t kMaxSegments = 1024;     // splits of one reduced axis
inline constexpr int64_t kRowsPerThreadMax = 16;  // rows: a thread per row up to this n
inline constexpr int64_t kRowsPerWarpMax = 1024;  // rows: a warp per row up to this n

enum class ReduceFn : int32_t { kSum, kProd, kMax, kMin };

// The view of one launch: [outer, n, inner] folded over n (n >= 1, outer * inner >= 1), in
// `segments` (1 <= segments <= min(n, kMaxSegments)) contiguous parts.
struct ReduceShape {
  int64_t outer = 1;
  int64_t n = 1;
  int64_t inner = 1;
  int64_t segments = 1;
};

// The first element of segment s of n elements split into `segments` parts (the first n %
// segments parts are one longer); s == segments gives n. No product of n and s: no overflow.
CFX_HOST_DEVICE inline int64_t SegmentBegin(int64_t n, int64_t segments, int64_t s) {
  const int64_t q = n / segments, r = n % segments;
  return s * q + (s < r ? s : r);
}

// Columns: a block's tile is `width` consecutive elements of a row (all of it when the row is
// short) times kReduceThreads / width rows read at once.
CFX_HOST_DEVICE inline int64_t ColumnTileWidth(int64_t inner) { return inner <= 128 ? inner : 32; }
CFX_HOST_DEVICE inline int64_t ColumnTileRows(int64_t inner) {
  return kReduceThreads / ColumnTileWidth(inner);
}

// out = fold of `in` (dtype 1 float, 3 int32, 9 int64: TensorFlow's numbers) over `shape`.
// segments == 1: out[o * inner + k]; segments > 1: partial results out[(o * segments + s) * inner
// + k]. square_input: x*x is folded instead of x (float sums; L2Loss). divisor > 0 (float, final
// launch only): each result is divided by it (Mean, L2Loss). Integer sums and products wrap;
// Max and Min propagate NaN. cudaErrorInvalidValue for another dtype or a bad shape.
cudaError_t LaunchReduce(ReduceFn fn, int32_t dtype, const void* in, void* out,
                         const ReduceShape& shape, bool square_input, int64_t divisor,
                         cudaStream_t stream);

// ArgMax (is_max) or ArgMin of float `values` over `shape`: the first index of the extreme value
// (a NaN counts as the extreme; ties and repeated NaNs give the first index), as the CPU kernel.
// `indices` (null on a first launch) gives each value's index along n (a second launch over
// partial results). segments > 1: partial results into partial_values and partial_indices
// ([outer, segments, inner]); segments == 1: the indices into `out`, int32 (out_dtype 3) or int64
// (out_dtype 9).
cudaError_t LaunchArgReduce(bool is_max, const float* values, const int64_t* indices,
                            const ReduceShape& shape, float* partial_values,
                            int64_t* partial_indices, void* out, int32_t out_dtype,
                            cudaStream_t stream);

}  // namespace cfx::cuda

#endif  // CONFLUX_PLUGINS_CUDA_KERNELS_REDUCTION_LAUNCH_H_
