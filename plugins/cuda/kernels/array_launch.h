// Launches of the array kernels' device code (kernels/array.cu): strided copies (Transpose, Tile,
// BroadcastTo, Slice, StridedSlice), row copies (ConcatV2, Pack, Split, Unpack), GatherV2 with
// its index check, and Select. Like launch.h, plain C++ over raw device pointers, free of the
// SDK; kernels/array_plan.h fills the index structs. Each launch returns the launch's error.
// The kernels move elements of 1, 4 or 8 bytes without looking at them (bool, float, int32,
// int64); another size is cudaErrorInvalidValue.
#ifndef CONFLUX_PLUGINS_CUDA_KERNELS_ARRAY_LAUNCH_H_
#define CONFLUX_PLUGINS_CUDA_KERNELS_ARRAY_LAUNCH_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "kernels/launch.h"

namespace cfx::cuda {

// Dims a strided copy walks at most: 8 input dims, each split in two by Tile.
inline constexpr int kMaxCopyDims = 16;

// A strided copy: output element i, at coordinates c (row-major in `dims`), is input element
// base + sum over d of c[d] * strides[d]. Strides may be 0 (a repeat) or negative (a backwards
// walk). Passed to the kernel by value.
struct StridedIndex {
  int32_t rank = 0;
  int64_t dims[kMaxCopyDims] = {};
  int64_t strides[kMaxCopyDims] = {};
  int64_t base = 0;
};

// The input offset of output element i (the device kernel's index arithmetic, also compiled
// for the host so that tests check it). `Index` is the type of the output's flat index: uint32_t
// when the output has fewer than 2^32 elements (cheaper division), else int64_t.
template <typename Index>
CFX_HOST_DEVICE inline int64_t StridedOffset(const StridedIndex& index, Index i) {
  int64_t offset = index.base;
  for (int d = index.rank - 1; d >= 0; --d) {
    const Index dim = static_cast<Index>(index.dims[d]);
    offset += static_cast<int64_t>(i % dim) * index.strides[d];
    i /= dim;
  }
  return offset;
}

// out[i] = in[StridedOffset(index, i)] for i < n (n > 0), elements of `elem_size` bytes.
cudaError_t LaunchStridedCopy(const void* in, void* out, size_t elem_size,
                              const StridedIndex& index, int64_t n, cudaStream_t stream);

// Copies `rows` rows of `width` bytes from `src` (rows `src_pitch` bytes apart) to `dst` (rows
// `dst_pitch` bytes apart); rows > 0, width > 0, both pitches >= width. Contiguous rows go
// through cudaMemcpyAsync.
cudaError_t LaunchCopyRows(const void* src, int64_t src_pitch, void* dst, int64_t dst_pitch,
                           int64_t width, int64_t rows, cudaStream_t stream);

// GatherV2 seen as params [batch, outer, axis_size, inner] and indices [batch, per_batch]:
// out[b, o, k, :] = params[b, o, indices[b, k], :].
struct GatherLayout {
  int64_t batch = 1, outer = 1, axis_size = 0, inner = 1, per_batch = 1;
};

// What the index check found: the flat position of the first index outside [0, axis_size)
// (kNoBadIndex when none) and that index's value. Lives in device memory; LaunchGather fills it.
struct GatherCheck {
  unsigned long long first_bad;
  long long value;
};
inline constexpr unsigned long long kNoBadIndex = ~0ull;

// Checks every index (batch * per_batch of them, of `index_size` 4 or 8 bytes: int32 or int64)
// into `*check`, then fills `out` (batch * outer * per_batch * inner elements of `elem_size`
// bytes; rows of bad indices become zeros). Either count may be 0.
cudaError_t LaunchGather(const void* params, const void* indices, size_t index_size, void* out,
                         size_t elem_size, const GatherLayout& layout, GatherCheck* check,
                         cudaStream_t stream);

// out[i] = condition[o0] ? t[o1] : e[o2], offsets by the three-operand `index` (condition, t, e)
// over n > 0 output elements of `elem_size` bytes.
cudaError_t LaunchSelect(const bool* condition, const void* t, const void* e, void* out,
                         size_t elem_size, const BroadcastIndex& index, int64_t n,
                         cudaStream_t stream);

}  // namespace cfx::cuda

#endif  // CONFLUX_PLUGINS_CUDA_KERNELS_ARRAY_LAUNCH_H_
