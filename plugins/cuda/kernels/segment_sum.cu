// Device code of UnsortedSegmentSum (kernels/segment_sum_launch.h): a stable radix sort of
// (id, row) pairs, then one thread per (first sorted position of a segment, column) that adds
// the segment's rows in row order.
#include <cub/device/device_radix_sort.cuh>
#include <type_traits>

#include "kernels/launch.h"
#include "kernels/segment_sum_launch.h"

namespace cfx::cuda {
namespace {

constexpr size_t kAlign = 256;

size_t AlignUp(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// The four arrays of the sort, each `rows` int64s, then CUB's own scratch.
struct Layout {
  size_t pairs_bytes = 0;
  size_t cub_bytes = 0;
};

Layout LayoutFor(int64_t rows) {
  Layout l;
  l.pairs_bytes = AlignUp(sizeof(int64_t) * static_cast<size_t>(rows));
  cub::DeviceRadixSort::SortPairs(
      nullptr, l.cub_bytes, static_cast<const int64_t*>(nullptr), static_cast<int64_t*>(nullptr),
      static_cast<const int64_t*>(nullptr), static_cast<int64_t*>(nullptr), static_cast<int>(rows));
  return l;
}

// keys[j] = ids[j], rows[j] = j; the first j with ids[j] >= num_segments into check->first_bad.
template <typename Id>
__global__ void PrepareKernel(const Id* ids, int64_t n, int64_t num_segments, int64_t* keys,
                              int64_t* rows, SegmentCheck* check) {
  for (int64_t j = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; j < n;
       j += int64_t{gridDim.x} * blockDim.x) {
    const int64_t id = static_cast<int64_t>(ids[j]);
    keys[j] = id;
    rows[j] = j;
    if (id >= num_segments) atomicMin(&check->first_bad, static_cast<unsigned long long>(j));
  }
}

template <typename Id>
__global__ void BadValueKernel(const Id* ids, SegmentCheck* check) {
  if (check->first_bad != kNoBadSegment)
    check->value = static_cast<long long>(ids[check->first_bad]);
}

// Integer sums wrap around: added as unsigned.
template <typename T>
__device__ T AddWrapping(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}

template <typename T>
__global__ void SumKernel(const T* data, const int64_t* keys, const int64_t* rows, int64_t n,
                          int64_t row_size, int64_t num_segments, T* out) {
  const int64_t total = n * row_size;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t p = i / row_size, k = i % row_size;
    const int64_t key = keys[p];
    if (key < 0 || key >= num_segments || (p > 0 && keys[p - 1] == key)) continue;
    T sum = T(0);
    for (int64_t q = p; q < n && keys[q] == key; ++q)
      sum = AddWrapping(sum, data[rows[q] * row_size + k]);
    out[key * row_size + k] = sum;
  }
}

template <typename T>
void LaunchSum(const SegmentSumArgs& a, const int64_t* keys, const int64_t* rows, int64_t total,
               cudaStream_t stream) {
  SumKernel<<<GridBlocks(total), kThreadsPerBlock, 0, stream>>>(
      static_cast<const T*>(a.data), keys, rows, a.rows, a.row_size, a.num_segments,
      static_cast<T*>(a.out));
}

template <typename Id>
cudaError_t Run(const SegmentSumArgs& a, cudaStream_t stream) {
  const Layout l = LayoutFor(a.rows);
  char* base = static_cast<char*>(a.scratch);
  auto* keys_in = reinterpret_cast<int64_t*>(base);
  auto* keys_out = reinterpret_cast<int64_t*>(base + l.pairs_bytes);
  auto* rows_in = reinterpret_cast<int64_t*>(base + 2 * l.pairs_bytes);
  auto* rows_out = reinterpret_cast<int64_t*>(base + 3 * l.pairs_bytes);
  void* cub_scratch = base + 4 * l.pairs_bytes;
  const size_t elem = a.dtype == 1 || a.dtype == 3 ? 4 : 8;
  cudaError_t err = cudaSuccess;
  if (a.num_segments > 0 && a.row_size > 0)
    err = cudaMemsetAsync(a.out, 0, elem * a.num_segments * a.row_size, stream);
  if (err == cudaSuccess)
    err = cudaMemsetAsync(&a.check->first_bad, 0xff, sizeof(a.check->first_bad), stream);
  if (err != cudaSuccess) return err;
  const auto* ids = static_cast<const Id*>(a.ids);
  PrepareKernel<Id><<<GridBlocks(a.rows), kThreadsPerBlock, 0, stream>>>(
      ids, a.rows, a.num_segments, keys_in, rows_in, a.check);
  BadValueKernel<Id><<<1, 1, 0, stream>>>(ids, a.check);
  if ((err = cudaGetLastError()) != cudaSuccess) return err;
  size_t cub_bytes = l.cub_bytes;
  err = cub::DeviceRadixSort::SortPairs(cub_scratch, cub_bytes, keys_in, keys_out, rows_in,
                                        rows_out, static_cast<int>(a.rows), 0,
                                        static_cast<int>(sizeof(int64_t) * 8), stream);
  if (err != cudaSuccess) return err;
  const int64_t total = a.rows * a.row_size;
  if (total == 0 || a.num_segments == 0) return cudaGetLastError();
  switch (a.dtype) {
    case 1:
      LaunchSum<float>(a, keys_out, rows_out, total, stream);
      break;
    case 2:
      LaunchSum<double>(a, keys_out, rows_out, total, stream);
      break;
    case 3:
      LaunchSum<int32_t>(a, keys_out, rows_out, total, stream);
      break;
    default:
      LaunchSum<int64_t>(a, keys_out, rows_out, total, stream);
      break;
  }
  return cudaGetLastError();
}

}  // namespace

size_t SegmentSumScratchBytes(int64_t rows) {
  const Layout l = LayoutFor(rows);
  return 4 * l.pairs_bytes + l.cub_bytes;
}

cudaError_t LaunchUnsortedSegmentSum(const SegmentSumArgs& a, cudaStream_t stream) {
  if (a.dtype != 1 && a.dtype != 2 && a.dtype != 3 && a.dtype != 9) return cudaErrorInvalidValue;
  if (a.id_size == 4) return Run<int32_t>(a, stream);
  if (a.id_size == 8) return Run<int64_t>(a, stream);
  return cudaErrorInvalidValue;
}

}  // namespace cfx::cuda
