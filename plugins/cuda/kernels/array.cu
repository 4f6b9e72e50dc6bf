// Device code of the array kernels (array_launch.h). Every kernel moves elements as unsigned
// integers of their size, so one instantiation per size serves every dtype of that size, and
// runs a grid-stride loop (GridBlocks), so any element count fits the grid.
#include <climits>

#include "kernels/array_launch.h"

namespace cfx::cuda {
namespace {

// The element type of a copy by size: kernels move bits, never values.
template <size_t kSize>
struct BitsOf;
template <>
struct BitsOf<1> {
  using type = unsigned char;
};
template <>
struct BitsOf<2> {
  using type = unsigned short;
};
template <>
struct BitsOf<4> {
  using type = unsigned int;
};
template <>
struct BitsOf<8> {
  using type = unsigned long long;
};

// Calls Op<T>::Run(args...) with T the element type of `elem_size` (1, 4 or 8 bytes);
// cudaErrorInvalidValue for another size.
template <template <typename> class Op, typename... Args>
cudaError_t BySize(size_t elem_size, const Args&... args) {
  switch (elem_size) {
    case 1:
      return Op<BitsOf<1>::type>::Run(args...);
    case 4:
      return Op<BitsOf<4>::type>::Run(args...);
    case 8:
      return Op<BitsOf<8>::type>::Run(args...);
  }
  return cudaErrorInvalidValue;
}

__device__ int64_t FirstIndex() { return blockIdx.x * int64_t{blockDim.x} + threadIdx.x; }
__device__ int64_t GridStride() { return int64_t{blockDim.x} * gridDim.x; }

// `Index` is the type of the flat index's division (see StridedOffset); the loop counts in int64
// so that it never wraps.
template <typename T, typename Index>
__global__ void StridedCopyKernel(const T* in, T* out, StridedIndex index, int64_t n) {
  for (int64_t i = FirstIndex(); i < n; i += GridStride())
    out[i] = in[StridedOffset<Index>(index, static_cast<Index>(i))];
}

// Pitches and width in elements of T; n = rows * width.
template <typename T>
__global__ void CopyRowsKernel(const T* src, int64_t src_pitch, T* dst, int64_t dst_pitch,
                               int64_t width, int64_t n) {
  for (int64_t j = FirstIndex(); j < n; j += GridStride()) {
    const int64_t row = j / width, column = j - row * width;
    dst[row * dst_pitch + column] = src[row * src_pitch + column];
  }
}

template <typename Index>
__global__ void CheckIndicesKernel(const Index* indices, int64_t count, int64_t axis_size,
                                   GatherCheck* check) {
  for (int64_t j = FirstIndex(); j < count; j += GridStride()) {
    const Index k = indices[j];
    if (k < 0 || k >= axis_size) atomicMin(&check->first_bad, static_cast<unsigned long long>(j));
  }
}

// One thread: the value of the first bad index, once CheckIndicesKernel has run.
template <typename Index>
__global__ void BadIndexValueKernel(const Index* indices, GatherCheck* check) {
  if (check->first_bad != kNoBadIndex) check->value = indices[check->first_bad];
}

template <typename T, typename Index>
__global__ void GatherKernel(const T* params, const Index* indices, T* out, GatherLayout l,
                             int64_t n) {
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) {
    const int64_t row = i / l.inner, within = i - row * l.inner;
    const int64_t group = row / l.per_batch;  // b * outer + o
    const int64_t k = row - group * l.per_batch, b = group / l.outer;
    const int64_t index = indices[b * l.per_batch + k];
    out[i] = index < 0 || index >= l.axis_size
                 ? T(0)
                 : params[(group * l.axis_size + index) * l.inner + within];
  }
}

template <typename T>
__global__ void SelectKernel(const unsigned char* condition, const T* t, const T* e, T* out,
                             BroadcastIndex index, bool same_shape, int64_t n) {
  if (same_shape) {
    for (int64_t i = FirstIndex(); i < n; i += GridStride())
      out[i] = condition[i] != 0 ? t[i] : e[i];
  } else {
    for (int64_t i = FirstIndex(); i < n; i += GridStride()) {
      int64_t o[3];
      BroadcastOffsetsOf<3>(index, i, o);
      out[i] = condition[o[0]] != 0 ? t[o[1]] : e[o[2]];
    }
  }
}

template <typename T>
struct StridedCopy {
  static cudaError_t Run(const void* in, void* out, const StridedIndex& index, int64_t n,
                         cudaStream_t stream) {
    const T* src = static_cast<const T*>(in);
    T* dst = static_cast<T*>(out);
    if (n <= INT32_MAX) {
      StridedCopyKernel<T, uint32_t>
          <<<GridBlocks(n), kThreadsPerBlock, 0, stream>>>(src, dst, index, n);
    } else {
      StridedCopyKernel<T, int64_t>
          <<<GridBlocks(n), kThreadsPerBlock, 0, stream>>>(src, dst, index, n);
    }
    return cudaGetLastError();
  }
};

// Pitches and width in bytes, multiples of sizeof(T), as are both addresses.
template <typename T>
cudaError_t CopyRows(const void* src, int64_t src_pitch, void* dst, int64_t dst_pitch,
                     int64_t width, int64_t rows, cudaStream_t stream) {
  constexpr int64_t kSize = sizeof(T);
  const int64_t units = width / kSize, n = units * rows;
  CopyRowsKernel<T><<<GridBlocks(n), kThreadsPerBlock, 0, stream>>>(
      static_cast<const T*>(src), src_pitch / kSize, static_cast<T*>(dst), dst_pitch / kSize, units,
      n);
  return cudaGetLastError();
}

template <typename Index>
struct GatherByIndex {
  template <typename T>
  struct Rows {
    static cudaError_t Run(const void* params, const Index* indices, void* out,
                           const GatherLayout& l, int64_t n, cudaStream_t stream) {
      GatherKernel<T, Index><<<GridBlocks(n), kThreadsPerBlock, 0, stream>>>(
          static_cast<const T*>(params), indices, static_cast<T*>(out), l, n);
      return cudaGetLastError();
    }
  };
};

template <typename Index>
cudaError_t Gather(const void* params, const void* indices_data, void* out, size_t elem_size,
                   const GatherLayout& l, GatherCheck* check, cudaStream_t stream) {
  const Index* indices = static_cast<const Index*>(indices_data);
  // All bits set: first_bad = kNoBadIndex.
  cudaError_t err = cudaMemsetAsync(check, 0xFF, sizeof(GatherCheck), stream);
  if (err != cudaSuccess) return err;
  const int64_t count = l.batch * l.per_batch;
  if (count > 0) {
    CheckIndicesKernel<Index>
        <<<GridBlocks(count), kThreadsPerBlock, 0, stream>>>(indices, count, l.axis_size, check);
    BadIndexValueKernel<Index><<<1, 1, 0, stream>>>(indices, check);
    err = cudaGetLastError();
    if (err != cudaSuccess) return err;
  }
  const int64_t n = l.batch * l.outer * l.per_batch * l.inner;
  if (n == 0) return cudaSuccess;
  return BySize<GatherByIndex<Index>::template Rows>(elem_size, params, indices, out, l, n, stream);
}

template <typename T>
struct Select {
  static cudaError_t Run(const bool* condition, const void* t, const void* e, void* out,
                         const BroadcastIndex& index, int64_t n, cudaStream_t stream) {
    SelectKernel<T><<<GridBlocks(n), kThreadsPerBlock, 0, stream>>>(
        reinterpret_cast<const unsigned char*>(condition), static_cast<const T*>(t),
        static_cast<const T*>(e), static_cast<T*>(out), index, SameShapes(index, 3), n);
    return cudaGetLastError();
  }
};

}  // namespace

cudaError_t LaunchStridedCopy(const void* in, void* out, size_t elem_size,
                              const StridedIndex& index, int64_t n, cudaStream_t stream) {
  if (index.rank < 0 || index.rank > kMaxCopyDims || n <= 0) return cudaErrorInvalidValue;
  return BySize<StridedCopy>(elem_size, in, out, index, n, stream);
}

cudaError_t LaunchCopyRows(const void* src, int64_t src_pitch, void* dst, int64_t dst_pitch,
                           int64_t width, int64_t rows, cudaStream_t stream) {
  if (rows <= 0 || width <= 0 || src_pitch < width || dst_pitch < width)
    return cudaErrorInvalidValue;
  if (rows == 1 || (src_pitch == width && dst_pitch == width))
    return cudaMemcpyAsync(dst, src, static_cast<size_t>(width * rows), cudaMemcpyDeviceToDevice,
                           stream);
  // The widest unit that divides both addresses, both pitches and the width.
  const uint64_t alignment = reinterpret_cast<uintptr_t>(src) | reinterpret_cast<uintptr_t>(dst) |
                             static_cast<uint64_t>(src_pitch) | static_cast<uint64_t>(dst_pitch) |
                             static_cast<uint64_t>(width);
  if (alignment % 8 == 0)
    return CopyRows<BitsOf<8>::type>(src, src_pitch, dst, dst_pitch, width, rows, stream);
  if (alignment % 4 == 0)
    return CopyRows<BitsOf<4>::type>(src, src_pitch, dst, dst_pitch, width, rows, stream);
  if (alignment % 2 == 0)
    return CopyRows<BitsOf<2>::type>(src, src_pitch, dst, dst_pitch, width, rows, stream);
  return CopyRows<BitsOf<1>::type>(src, src_pitch, dst, dst_pitch, width, rows, stream);
}

cudaError_t LaunchGather(const void* params, const void* indices, size_t index_size, void* out,
                         size_t elem_size, const GatherLayout& layout, GatherCheck* check,
                         cudaStream_t stream) {
  switch (index_size) {
    case 4:
      return Gather<int32_t>(params, indices, out, elem_size, layout, check, stream);
    case 8:
      return Gather<int64_t>(params, indices, out, elem_size, layout, check, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t LaunchSelect(const bool* condition, const void* t, const void* e, void* out,
                         size_t elem_size, const BroadcastIndex& index, int64_t n,
                         cudaStream_t stream) {
  if (n <= 0) return cudaErrorInvalidValue;
  return BySize<Select>(elem_size, condition, t, e, out, index, n, stream);
}

}  // namespace cfx::cuda
