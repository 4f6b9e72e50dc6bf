// Device code of the element-wise kernels: unary and broadcasting binary float math, Cast and
// Fill. One kernel per family with the function chosen by a uniform switch keeps the number of
// instantiations (and nvcc's time) small.
#include <cstring>
#include <type_traits>

#include "kernels/launch.h"

namespace cfx::cuda {
namespace {

constexpr int kThreads = 256;

// Blocks for n elements with a grid-stride loop (at most 65535 * 8 blocks).
unsigned Blocks(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65535 * 8 ? blocks : 65535 * 8);
}

__device__ float ApplyUnary(UnaryFn fn, float x) {
  switch (fn) {
    case UnaryFn::kNeg:
      return -x;
    case UnaryFn::kAbs:
      return fabsf(x);
    case UnaryFn::kExp:
      return expf(x);
    case UnaryFn::kLog:
      return logf(x);
    case UnaryFn::kSqrt:
      return sqrtf(x);
    case UnaryFn::kRsqrt:
      return 1.0f / sqrtf(x);
    case UnaryFn::kSquare:
      return x * x;
    case UnaryFn::kReciprocal:
      return 1.0f / x;
    case UnaryFn::kRelu:
      return x > 0.0f ? x : 0.0f;
    case UnaryFn::kSigmoid:
      return 1.0f / (1.0f + expf(-x));
    case UnaryFn::kTanh:
      return tanhf(x);
    case UnaryFn::kSin:
      return sinf(x);
    case UnaryFn::kCos:
      return cosf(x);
  }
  return x;
}

__device__ float ApplyBinary(BinaryFn fn, float x, float y) {
  switch (fn) {
    case BinaryFn::kAdd:
      return x + y;
    case BinaryFn::kSub:
      return x - y;
    case BinaryFn::kMul:
      return x * y;
    case BinaryFn::kDiv:
      return x / y;
    case BinaryFn::kMaximum:
      return x > y ? x : y;
    case BinaryFn::kMinimum:
      return x < y ? x : y;
    case BinaryFn::kSquaredDifference:
      return (x - y) * (x - y);
    case BinaryFn::kReluGrad:
      return y > 0.0f ? x : 0.0f;  // (gradients, features)
  }
  return x;
}

__global__ void UnaryKernel(UnaryFn fn, const float* x, float* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x)
    y[i] = ApplyUnary(fn, x[i]);
}

__global__ void BinarySameShapeKernel(BinaryFn fn, const float* x, const float* y, float* z,
                                      int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x)
    z[i] = ApplyBinary(fn, x[i], y[i]);
}

__global__ void BinaryBroadcastKernel(BinaryFn fn, const float* x, const float* y, float* z,
                                      BroadcastIndex index, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    int64_t ox, oy;
    BroadcastOffsets(index, i, &ox, &oy);
    z[i] = ApplyBinary(fn, x[ox], y[oy]);
  }
}

template <typename Src, typename Dst>
__global__ void CastKernel(const Src* x, Dst* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    if constexpr (std::is_same_v<Dst, bool>) {
      y[i] = x[i] != Src(0);
    } else {
      y[i] = static_cast<Dst>(x[i]);
    }
  }
}

template <typename T>
__global__ void FillKernel(T value, T* out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x)
    out[i] = value;
}

template <typename Src, typename Dst>
cudaError_t Cast(const void* x, void* y, int64_t n, cudaStream_t stream) {
  CastKernel<Src, Dst>
      <<<Blocks(n), kThreads, 0, stream>>>(static_cast<const Src*>(x), static_cast<Dst*>(y), n);
  return cudaGetLastError();
}

template <typename Src>
cudaError_t CastFrom(int32_t dst, const void* x, void* y, int64_t n, cudaStream_t stream) {
  switch (dst) {
    case 1:
      return Cast<Src, float>(x, y, n, stream);
    case 3:
      return Cast<Src, int32_t>(x, y, n, stream);
    case 9:
      return Cast<Src, int64_t>(x, y, n, stream);
    case 10:
      return Cast<Src, bool>(x, y, n, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace

cudaError_t LaunchUnary(UnaryFn fn, const float* x, float* y, int64_t n, cudaStream_t stream) {
  UnaryKernel<<<Blocks(n), kThreads, 0, stream>>>(fn, x, y, n);
  return cudaGetLastError();
}

cudaError_t LaunchBinary(BinaryFn fn, const float* x, const float* y, float* z,
                         const BroadcastIndex& index, int64_t n, cudaStream_t stream) {
  if (index.rank == 1 && index.strides[0][0] == 1 && index.strides[1][0] == 1) {
    BinarySameShapeKernel<<<Blocks(n), kThreads, 0, stream>>>(fn, x, y, z, n);
  } else {
    BinaryBroadcastKernel<<<Blocks(n), kThreads, 0, stream>>>(fn, x, y, z, index, n);
  }
  return cudaGetLastError();
}

cudaError_t LaunchCast(int32_t src_dtype, int32_t dst_dtype, const void* x, void* y, int64_t n,
                       cudaStream_t stream) {
  switch (src_dtype) {
    case 1:
      return CastFrom<float>(dst_dtype, x, y, n, stream);
    case 3:
      return CastFrom<int32_t>(dst_dtype, x, y, n, stream);
    case 9:
      return CastFrom<int64_t>(dst_dtype, x, y, n, stream);
    case 10:
      return CastFrom<bool>(dst_dtype, x, y, n, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t LaunchFill(const void* pattern, size_t pattern_bytes, void* out, int64_t n,
                       cudaStream_t stream) {
  if (pattern_bytes == 4) {
    uint32_t v;
    std::memcpy(&v, pattern, 4);
    FillKernel<<<Blocks(n), kThreads, 0, stream>>>(v, static_cast<uint32_t*>(out), n);
  } else if (pattern_bytes == 8) {
    unsigned long long v;
    std::memcpy(&v, pattern, 8);
    FillKernel<<<Blocks(n), kThreads, 0, stream>>>(v, static_cast<unsigned long long*>(out), n);
  } else {
    return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace cfx::cuda
