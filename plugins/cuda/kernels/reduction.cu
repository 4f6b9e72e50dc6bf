// Device code of the reductions (kernels/reduction_launch.h): Sum, Prod, Max, Min over float,
// int32 and int64, and ArgMax / ArgMin over float. Five kernels (a thread, a warp or a block per
// row; a thread per column or a block per column tile), each instantiated once per reducer (the
// three value types and the arg reducer); the function is a uniform switch inside the reducer.
//
// Every kernel uses grid-stride loops over its outputs (grids are capped well below CUDA's
// limits) and 64-bit index arithmetic. Warp and block reductions use shuffles and shared memory;
// there are no atomics, so a result does not depend on scheduling.
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/reduction_launch.h"

namespace cfx::cuda {
namespace {

constexpr int kWarp = 32;
constexpr unsigned kFullMask = 0xffffffffu;
constexpr int64_t kMaxBlocks = 65535 * 16;  // grid x cap (CUDA allows 2^31 - 1); loops stride

unsigned Blocks(int64_t blocks) {
  if (blocks < 1) return 1;
  return static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// ---- Reducers: Identity() folded with anything gives it back; Load reads input element `offset`
// (index `j` along the reduced axis); Combine folds two partial results; Store writes result
// `pos`; Shuffle is __shfl_xor_sync of a partial result.

template <typename T>
struct Limits;
template <>
struct Limits<float> {
  __device__ static float Lowest() { return -INFINITY; }
  __device__ static float Highest() { return INFINITY; }
};
template <>
struct Limits<int32_t> {
  __device__ static int32_t Lowest() { return INT32_MIN; }
  __device__ static int32_t Highest() { return INT32_MAX; }
};
template <>
struct Limits<int64_t> {
  __device__ static int64_t Lowest() { return INT64_MIN; }
  __device__ static int64_t Highest() { return INT64_MAX; }
};

template <typename T>
struct ValueReducer {
  using Acc = T;
  static constexpr bool kFloat = std::is_floating_point_v<T>;
  using Bits = std::make_unsigned_t<std::conditional_t<kFloat, int32_t, T>>;

  ReduceFn fn;
  const T* in;
  T* out;
  bool square;      // float only
  int64_t divisor;  // float only; > 0: results are divided by it

  __device__ T Identity() const {
    switch (fn) {
      case ReduceFn::kSum:
        return T(0);
      case ReduceFn::kProd:
        return T(1);
      case ReduceFn::kMax:
        return Limits<T>::Lowest();
      case ReduceFn::kMin:
        return Limits<T>::Highest();
    }
    return T(0);
  }
  __device__ T Load(int64_t offset, int64_t) const {
    const T x = in[offset];
    if constexpr (kFloat) {
      if (square) return x * x;
    }
    return x;
  }
  __device__ T Combine(T a, T b) const {
    switch (fn) {
      case ReduceFn::kSum:
        if constexpr (kFloat) {
          return a + b;
        } else {  // wraps around, as TensorFlow's (and the CPU kernels') integer sums
          return static_cast<T>(static_cast<Bits>(a) + static_cast<Bits>(b));
        }
      case ReduceFn::kProd:
        if constexpr (kFloat) {
          return a * b;
        } else {
          return static_cast<T>(static_cast<Bits>(a) * static_cast<Bits>(b));
        }
      case ReduceFn::kMax:  // a NaN, once folded in, stays
        return (b > a || b != b) ? b : a;
      case ReduceFn::kMin:
        return (b < a || b != b) ? b : a;
    }
    return a;
  }
  __device__ void Store(int64_t pos, T acc) const {
    if constexpr (kFloat) {
      if (divisor > 0) acc = acc / static_cast<T>(divisor);
    }
    out[pos] = acc;
  }
  __device__ T Shuffle(T v, int lane_mask) const {
    return __shfl_xor_sync(kFullMask, v, lane_mask);
  }
};

struct ArgAcc {
  float v;
  int64_t i;
};

struct ArgReducer {
  using Acc = ArgAcc;

  bool is_max;
  const float* in;
  const int64_t* in_index;  // null: the index is the position along the reduced axis
  float* partial_values;    // non-null: partial results (with partial_indices)
  int64_t* partial_indices;
  void* out;
  bool out64;

  // Loses to every element: an infinity that an equal element beats on its smaller index.
  __device__ ArgAcc Identity() const { return {is_max ? -INFINITY : INFINITY, INT64_MAX}; }
  __device__ ArgAcc Load(int64_t offset, int64_t j) const {
    return {in[offset], in_index != nullptr ? in_index[offset] : j};
  }
  // True when x is more extreme than y, a NaN counting as the most extreme.
  __device__ bool Beats(float x, float y) const {
    const bool more = is_max ? x > y : x < y;
    return more || (x != x && y == y);
  }
  // The more extreme; of two equal ones (or two NaNs) the first index, whatever the order.
  __device__ ArgAcc Combine(ArgAcc a, ArgAcc b) const {
    if (Beats(b.v, a.v)) return b;
    if (Beats(a.v, b.v)) return a;
    return b.i < a.i ? b : a;
  }
  __device__ void Store(int64_t pos, ArgAcc acc) const {
    if (partial_values != nullptr) {
      partial_values[pos] = acc.v;
      partial_indices[pos] = acc.i;
    } else if (out64) {
      static_cast<int64_t*>(out)[pos] = acc.i;
    } else {
      static_cast<int32_t*>(out)[pos] = static_cast<int32_t>(acc.i);
    }
  }
  __device__ ArgAcc Shuffle(ArgAcc a, int lane_mask) const {
    return {__shfl_xor_sync(kFullMask, a.v, lane_mask), __shfl_xor_sync(kFullMask, a.i, lane_mask)};
  }
};

// ---- Warp and block folds (every thread of the warp / block calls them).

template <class R>
__device__ typename R::Acc WarpFold(const R& r, typename R::Acc v) {
  for (int mask = kWarp / 2; mask > 0; mask >>= 1) v = r.Combine(v, r.Shuffle(v, mask));
  return v;
}

// The fold of every thread's `v`, valid in thread 0. `scratch` holds one Acc per warp; the caller
// synchronizes before using it again.
template <class R>
__device__ typename R::Acc BlockFold(const R& r, typename R::Acc v, typename R::Acc* scratch) {
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  v = WarpFold(r, v);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  const int warps = blockDim.x / kWarp;
  if (warp == 0) {
    v = lane < warps ? scratch[lane] : r.Identity();
    v = WarpFold(r, v);
  }
  return v;
}

// ---- Rows: [outer, n] over n.

// A thread per row (short rows).
template <class R>
__global__ void RowsThreadKernel(R r, int64_t outer, int64_t n) {
  for (int64_t row = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; row < outer;
       row += int64_t{blockDim.x} * gridDim.x) {
    const int64_t base = row * n;
    typename R::Acc acc = r.Identity();
    for (int64_t j = 0; j < n; ++j) acc = r.Combine(acc, r.Load(base + j, j));
    r.Store(row, acc);
  }
}

// A warp per row.
template <class R>
__global__ void RowsWarpKernel(R r, int64_t outer, int64_t n) {
  const int lane = threadIdx.x % kWarp;
  const int64_t warps_per_block = blockDim.x / kWarp;
  for (int64_t row = blockIdx.x * warps_per_block + threadIdx.x / kWarp; row < outer;
       row += warps_per_block * gridDim.x) {  // the same for the whole warp
    const int64_t base = row * n;
    typename R::Acc acc = r.Identity();
    for (int64_t j = lane; j < n; j += kWarp) acc = r.Combine(acc, r.Load(base + j, j));
    acc = WarpFold(r, acc);
    if (lane == 0) r.Store(row, acc);
  }
}

// A block per row segment: item = row * segments + s, which is also where its result goes.
template <class R>
__global__ void RowsBlockKernel(R r, int64_t outer, int64_t n, int64_t segments) {
  __shared__ typename R::Acc scratch[kReduceThreads / kWarp];
  const int64_t items = outer * segments;
  for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {  // the same for the block
    const int64_t row = item / segments, s = item % segments;
    const int64_t end = SegmentBegin(n, segments, s + 1), base = row * n;
    typename R::Acc acc = r.Identity();
    for (int64_t j = SegmentBegin(n, segments, s) + threadIdx.x; j < end; j += blockDim.x)
      acc = r.Combine(acc, r.Load(base + j, j));
    acc = BlockFold(r, acc, scratch);
    if (threadIdx.x == 0) r.Store(item, acc);
    __syncthreads();  // scratch is reused by the next item
  }
}

// ---- Columns: [outer, n, inner] over n.

// A thread per output (short columns): output t = o * inner + k.
template <class R>
__global__ void ColumnsThreadKernel(R r, int64_t outer, int64_t n, int64_t inner) {
  const int64_t total = outer * inner;
  for (int64_t t = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; t < total;
       t += int64_t{blockDim.x} * gridDim.x) {
    const int64_t o = t / inner, k = t % inner;
    const int64_t base = o * n * inner + k;
    typename R::Acc acc = r.Identity();
    for (int64_t j = 0; j < n; ++j) acc = r.Combine(acc, r.Load(base + j * inner, j));
    r.Store(t, acc);
  }
}

// A block per column tile and segment (blockIdx.y): thread (rr, c) = threadIdx.x / width,
// threadIdx.x % width folds column k = tile start + c over rows rr, rr + rows, ... of the
// segment; a warp reads consecutive addresses. The tile's `rows` partial folds of each column are
// then combined in shared memory.
template <class R>
__global__ void ColumnsTileKernel(R r, int64_t outer, int64_t n, int64_t inner, int64_t segments) {
  __shared__ typename R::Acc scratch[kReduceThreads];
  const int64_t width = ColumnTileWidth(inner), rows = kReduceThreads / width;
  const int64_t tiles_per_outer = (inner + width - 1) / width, tiles = outer * tiles_per_outer;
  const int64_t c = threadIdx.x % width, rr = threadIdx.x / width;
  const int64_t s = blockIdx.y;
  const int64_t begin = SegmentBegin(n, segments, s), end = SegmentBegin(n, segments, s + 1);
  int64_t pow2 = 1;
  while (pow2 < rows) pow2 *= 2;
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {  // the same for the whole block
    const int64_t o = t / tiles_per_outer, k = t % tiles_per_outer * width + c;
    typename R::Acc acc = r.Identity();
    if (rr < rows && k < inner) {
      for (int64_t j = begin + rr; j < end; j += rows)
        acc = r.Combine(acc, r.Load((o * n + j) * inner + k, j));
    }
    scratch[threadIdx.x] = acc;
    __syncthreads();
    // Fold rows [half, rows) into [0, half), halving: a tree also for `rows` not a power of 2.
    for (int64_t half = pow2 / 2; half > 0; half /= 2) {
      if (rr < half && rr + half < rows)
        scratch[threadIdx.x] = r.Combine(scratch[threadIdx.x], scratch[threadIdx.x + half * width]);
      __syncthreads();
    }
    if (rr == 0 && k < inner) r.Store((o * segments + s) * inner + k, scratch[threadIdx.x]);
    __syncthreads();  // scratch is reused by the next tile
  }
}

template <class R>
cudaError_t Launch(const R& r, const ReduceShape& s, cudaStream_t stream) {
  if (s.outer < 1 || s.n < 1 || s.inner < 1 || s.segments < 1 || s.segments > s.n ||
      s.segments > kMaxSegments)
    return cudaErrorInvalidValue;
  const bool whole = s.segments == 1;
  if (s.inner == 1) {
    if (whole && s.n <= kRowsPerThreadMax) {
      RowsThreadKernel<<<Blocks(CeilDiv(s.outer, kReduceThreads)), kReduceThreads, 0, stream>>>(
          r, s.outer, s.n);
    } else if (whole && s.n <= kRowsPerWarpMax) {
      RowsWarpKernel<<<Blocks(CeilDiv(s.outer, kReduceThreads / kWarp)), kReduceThreads, 0,
                       stream>>>(r, s.outer, s.n);
    } else {
      RowsBlockKernel<<<Blocks(s.outer * s.segments), kReduceThreads, 0, stream>>>(r, s.outer, s.n,
                                                                                   s.segments);
    }
  } else if (whole && s.n <= kRowsPerThreadMax) {
    ColumnsThreadKernel<<<Blocks(CeilDiv(s.outer * s.inner, kReduceThreads)), kReduceThreads, 0,
                          stream>>>(r, s.outer, s.n, s.inner);
  } else {
    const int64_t width = ColumnTileWidth(s.inner);
    const dim3 grid(Blocks(s.outer * CeilDiv(s.inner, width)), static_cast<unsigned>(s.segments));
    ColumnsTileKernel<<<grid, kReduceThreads, 0, stream>>>(r, s.outer, s.n, s.inner, s.segments);
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchReduce(ReduceFn fn, int32_t dtype, const void* in, void* out,
                         const ReduceShape& shape, bool square_input, int64_t divisor,
                         cudaStream_t stream) {
  switch (dtype) {
    case 1:
      return Launch(ValueReducer<float>{fn, static_cast<const float*>(in), static_cast<float*>(out),
                                        square_input, divisor},
                    shape, stream);
    case 3:
      if (square_input || divisor > 0) return cudaErrorInvalidValue;
      return Launch(ValueReducer<int32_t>{fn, static_cast<const int32_t*>(in),
                                          static_cast<int32_t*>(out), false, 0},
                    shape, stream);
    case 9:
      if (square_input || divisor > 0) return cudaErrorInvalidValue;
      return Launch(ValueReducer<int64_t>{fn, static_cast<const int64_t*>(in),
                                          static_cast<int64_t*>(out), false, 0},
                    shape, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t LaunchArgReduce(bool is_max, const float* values, const int64_t* indices,
                            const ReduceShape& shape, float* partial_values,
                            int64_t* partial_indices, void* out, int32_t out_dtype,
                            cudaStream_t stream) {
  const bool partial = shape.segments > 1;
  if (partial && (partial_values == nullptr || partial_indices == nullptr))
    return cudaErrorInvalidValue;
  if (!partial && out_dtype != 3 && out_dtype != 9) return cudaErrorInvalidValue;
  const ArgReducer r{is_max,
                     values,
                     indices,
                     partial ? partial_values : nullptr,
                     partial ? partial_indices : nullptr,
                     out,
                     out_dtype == 9};
  return Launch(r, shape, stream);
}

}  // namespace cfx::cuda
