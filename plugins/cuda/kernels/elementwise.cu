// Device code of the element-wise kernels: unary float math, broadcasting binary math (float;
// int32 and int64 for the integer arithmetic), comparisons and logical ops, AddN, Cast and Fill.
// One kernel per family with the function chosen by a uniform switch, templated only on the
// element type, keeps the number of instantiations (and nvcc's time) small.
//
// The formulas are the CPU kernels' (plugins/cpu/kernels/elementwise_*.cc, plugins/ops-nn/
// activations.cc) operation for operation. Products that the CPU adds to (TanhGrad's 1 - y * y)
// are rounded on their own (__fmul_rn), so that nvcc does not contract them into an FMA that the
// CPU build does not use.
#include <cstring>
#include <type_traits>

#include "kernels/launch.h"

namespace cfx::cuda {
namespace {

// SELU's constants (Klambauer et al., 2017), as TensorFlow defines them, rounded to float once.
constexpr float kSeluScale = static_cast<float>(1.0507009873554804934193349852946);
constexpr float kSeluScaleAlpha =
    static_cast<float>(1.0507009873554804934193349852946 * 1.6732632423543772848170429916717);

__device__ float ApplyUnary(UnaryFn fn, float x, float param) {
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
      return (x > 0.0f || isnan(x)) ? x : 0.0f;  // NaN stays NaN
    case UnaryFn::kSigmoid:
      return 1.0f / (1.0f + expf(-x));
    case UnaryFn::kTanh:
      return tanhf(x);
    case UnaryFn::kSin:
      return sinf(x);
    case UnaryFn::kCos:
      return cosf(x);
    case UnaryFn::kSign:  // NaN stays NaN, -0 gives +0
      if (x > 0.0f) return 1.0f;
      if (x < 0.0f) return -1.0f;
      return x == 0.0f ? 0.0f : x;
    case UnaryFn::kRelu6:  // NaN stays NaN
      if (isnan(x)) return x;
      return x < 0.0f ? 0.0f : (x > 6.0f ? 6.0f : x);
    case UnaryFn::kElu:
      return x < 0.0f ? expm1f(x) : x;
    case UnaryFn::kSelu:
      return x < 0.0f ? kSeluScaleAlpha * expm1f(x) : kSeluScale * x;
    case UnaryFn::kSoftplus:  // param: the threshold below which e^x is exact to float
      if (x > -param) return x;
      if (x < param) return expf(x);
      return log1pf(expf(x));
    case UnaryFn::kLeakyRelu:
      return x > 0.0f ? x : x * param;
    case UnaryFn::kFloor:
      return floorf(x);
    case UnaryFn::kCeil:
      return ceilf(x);
    case UnaryFn::kLog1p:
      return log1pf(x);
    case UnaryFn::kExpm1:
      return expm1f(x);
    case UnaryFn::kTan:
      return tanf(x);
    case UnaryFn::kAsin:
      return asinf(x);
    case UnaryFn::kAcos:
      return acosf(x);
    case UnaryFn::kAtan:
      return atanf(x);
    case UnaryFn::kSinh:
      return sinhf(x);
    case UnaryFn::kCosh:
      return coshf(x);
    case UnaryFn::kAsinh:
      return asinhf(x);
    case UnaryFn::kAcosh:
      return acoshf(x);
    case UnaryFn::kAtanh:
      return atanhf(x);
    case UnaryFn::kLgamma:
      return lgammaf(x);
    case UnaryFn::kErfinv:
      return erfinvf(x);
    case UnaryFn::kNdtri:
      return normcdfinvf(x);
    case UnaryFn::kSoftsign:
      return x / (1.0f + fabsf(x));
  }
  return x;
}

__device__ float ApplyBinary(BinaryFn fn, float x, float y, float param) {
  switch (fn) {
    case BinaryFn::kAdd:
      return x + y;
    case BinaryFn::kSub:
      return x - y;
    case BinaryFn::kMul:
      return x * y;
    case BinaryFn::kDiv:
      return x / y;
    case BinaryFn::kMaximum:  // a NaN operand gives NaN
      return (x > y || isnan(x)) ? x : y;
    case BinaryFn::kMinimum:
      return (x < y || isnan(x)) ? x : y;
    case BinaryFn::kSquaredDifference:
      return (x - y) * (x - y);
    case BinaryFn::kReluGrad:
      // (gradients, features): TensorFlow's product, so -0 and NaN follow the gradient's sign
      // and value where the feature is not positive.
      return x * (y > 0.0f ? 1.0f : 0.0f);
    case BinaryFn::kPow:
      return powf(x, y);
    case BinaryFn::kSigmoidGrad:  // (y, dy)
      return y * x * (1.0f - x);
    case BinaryFn::kTanhGrad:
      return y * (1.0f - __fmul_rn(x, x));
    case BinaryFn::kSqrtGrad:
      return 0.5f * y / x;
    case BinaryFn::kRsqrtGrad:
      return -0.5f * (y * x) * (x * x);
    case BinaryFn::kReciprocalGrad:
      return -x * x * y;
    case BinaryFn::kRelu6Grad:  // (gradients, features)
      return x * (y > 0.0f && y < 6.0f ? 1.0f : 0.0f);
    case BinaryFn::kEluGrad:  // (gradients, outputs)
      return y < 0.0f ? x * (y + 1.0f) : x;
    case BinaryFn::kSeluGrad:
      return y < 0.0f ? x * (y + kSeluScaleAlpha) : x * kSeluScale;
    case BinaryFn::kSoftplusGrad:  // e^-y = inf for very negative y: exactly 0
      return x / (expf(-y) + 1.0f);
    case BinaryFn::kLeakyReluGrad:
      return y > 0.0f ? x : x * param;
    case BinaryFn::kSoftsignGrad: {  // (gradients, features)
      const float d = 1.0f + fabsf(y);
      return x / (d * d);
    }
    case BinaryFn::kXlog1py:
      return x == 0.0f ? 0.0f : x * log1pf(y);
    case BinaryFn::kDivNoNan:
      return y == 0.0f ? 0.0f : x / y;
    case BinaryFn::kMulNoNan:
      return y == 0.0f ? 0.0f : x * y;
  }
  return x;
}

// The integer functions (HasIntegerBinary); Add, Sub and Mul wrap around through the unsigned
// type, as the CPU kernels do.
template <typename T>
__device__ T ApplyIntegerBinary(BinaryFn fn, T x, T y) {
  using U = std::make_unsigned_t<T>;
  switch (fn) {
    case BinaryFn::kAdd:
      return static_cast<T>(static_cast<U>(x) + static_cast<U>(y));
    case BinaryFn::kSub:
      return static_cast<T>(static_cast<U>(x) - static_cast<U>(y));
    case BinaryFn::kMul:
      return static_cast<T>(static_cast<U>(x) * static_cast<U>(y));
    case BinaryFn::kMaximum:
      return x > y ? x : y;
    case BinaryFn::kMinimum:
      return x < y ? x : y;
    default:
      return x;  // LaunchBinary refuses the others
  }
}

template <typename T>
__device__ T Apply(BinaryFn fn, T x, T y, float param) {
  if constexpr (std::is_same_v<T, float>) {
    return ApplyBinary(fn, x, y, param);
  } else {
    return ApplyIntegerBinary(fn, x, y);
  }
}

// Comparisons of T (bool arrives as unsigned char, any nonzero byte true).
template <typename T>
__device__ bool ApplyCompare(CompareFn fn, T x, T y) {
  if constexpr (std::is_same_v<T, unsigned char>) {
    x = x != 0;
    y = y != 0;
  }
  switch (fn) {
    case CompareFn::kEqual:
      return x == y;
    case CompareFn::kNotEqual:
      return x != y;
    case CompareFn::kLess:
      return x < y;
    case CompareFn::kLessEqual:
      return x <= y;
    case CompareFn::kGreater:
      return x > y;
    case CompareFn::kGreaterEqual:
      return x >= y;
    case CompareFn::kLogicalAnd:
      return x && y;
    case CompareFn::kLogicalOr:
      return x || y;
  }
  return false;
}

__global__ void UnaryKernel(UnaryFn fn, const float* x, float* y, int64_t n, float param) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x)
    y[i] = ApplyUnary(fn, x[i], param);
}

// One kernel for both layouts: `same_shape` is uniform, so the branch costs nothing.
template <typename T>
__global__ void BinaryKernel(BinaryFn fn, const T* x, const T* y, T* z, BroadcastIndex index,
                             bool same_shape, int64_t n, float param) {
  const int64_t step = int64_t{blockDim.x} * gridDim.x;
  int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (same_shape) {
    for (; i < n; i += step) z[i] = Apply<T>(fn, x[i], y[i], param);
  } else {
    for (; i < n; i += step) {
      int64_t o[2];
      BroadcastOffsetsOf<2>(index, i, o);
      z[i] = Apply<T>(fn, x[o[0]], y[o[1]], param);
    }
  }
}

template <typename T>
__global__ void CompareKernel(CompareFn fn, const T* x, const T* y, bool* z, BroadcastIndex index,
                              bool same_shape, int64_t n) {
  const int64_t step = int64_t{blockDim.x} * gridDim.x;
  int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (same_shape) {
    for (; i < n; i += step) z[i] = ApplyCompare<T>(fn, x[i], y[i]);
  } else {
    for (; i < n; i += step) {
      int64_t o[2];
      BroadcastOffsetsOf<2>(index, i, o);
      z[i] = ApplyCompare<T>(fn, x[o[0]], y[o[1]]);
    }
  }
}

__global__ void LogicalNotKernel(const unsigned char* x, bool* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x)
    y[i] = x[i] == 0;
}

// One pass of AddN: sum = (first ? in[0] : sum) + in[first ? 1 : 0] + ... + in[count - 1].
struct AddNPass {
  const float* in[kAddNInputsPerPass];
  int32_t count;
  bool first;
};

__global__ void AddNKernel(AddNPass pass, float* sum, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    int k = 0;
    float acc = pass.first ? pass.in[k++][i] : sum[i];
    for (; k < pass.count; ++k) acc += pass.in[k][i];
    sum[i] = acc;
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

template <typename T>
cudaError_t Binary(BinaryFn fn, const void* x, const void* y, void* z, const BroadcastIndex& index,
                   int64_t n, float param, cudaStream_t stream) {
  BinaryKernel<T><<<GridBlocks(n), kThreadsPerBlock, 0, stream>>>(
      fn, static_cast<const T*>(x), static_cast<const T*>(y), static_cast<T*>(z), index,
      SameShapes(index, 2), n, param);
  return cudaGetLastError();
}

template <typename T>
cudaError_t Compare(CompareFn fn, const void* x, const void* y, bool* z,
                    const BroadcastIndex& index, int64_t n, cudaStream_t stream) {
  CompareKernel<T><<<GridBlocks(n), kThreadsPerBlock, 0, stream>>>(
      fn, static_cast<const T*>(x), static_cast<const T*>(y), z, index, SameShapes(index, 2), n);
  return cudaGetLastError();
}

template <typename Src, typename Dst>
cudaError_t Cast(const void* x, void* y, int64_t n, cudaStream_t stream) {
  CastKernel<Src, Dst><<<GridBlocks(n), kThreadsPerBlock, 0, stream>>>(static_cast<const Src*>(x),
                                                                       static_cast<Dst*>(y), n);
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

cudaError_t LaunchUnary(UnaryFn fn, const float* x, float* y, int64_t n, cudaStream_t stream,
                        float param) {
  UnaryKernel<<<GridBlocks(n), kThreadsPerBlock, 0, stream>>>(fn, x, y, n, param);
  return cudaGetLastError();
}

cudaError_t LaunchBinary(BinaryFn fn, int32_t dtype, const void* x, const void* y, void* z,
                         const BroadcastIndex& index, int64_t n, float param, cudaStream_t stream) {
  switch (dtype) {
    case 1:
      return Binary<float>(fn, x, y, z, index, n, param, stream);
    case 3:
      if (!HasIntegerBinary(fn)) return cudaErrorInvalidValue;
      return Binary<int32_t>(fn, x, y, z, index, n, param, stream);
    case 9:
      if (!HasIntegerBinary(fn)) return cudaErrorInvalidValue;
      return Binary<int64_t>(fn, x, y, z, index, n, param, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t LaunchCompare(CompareFn fn, int32_t dtype, const void* x, const void* y, bool* z,
                          const BroadcastIndex& index, int64_t n, cudaStream_t stream) {
  const bool logical = fn == CompareFn::kLogicalAnd || fn == CompareFn::kLogicalOr;
  const bool equality = fn == CompareFn::kEqual || fn == CompareFn::kNotEqual;
  const bool allowed = dtype == 10 ? logical || equality : !logical;
  if (!allowed) return cudaErrorInvalidValue;
  switch (dtype) {
    case 1:
      return Compare<float>(fn, x, y, z, index, n, stream);
    case 3:
      return Compare<int32_t>(fn, x, y, z, index, n, stream);
    case 9:
      return Compare<int64_t>(fn, x, y, z, index, n, stream);
    case 10:
      return Compare<unsigned char>(fn, x, y, z, index, n, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t LaunchLogicalNot(const bool* x, bool* y, int64_t n, cudaStream_t stream) {
  LogicalNotKernel<<<GridBlocks(n), kThreadsPerBlock, 0, stream>>>(
      reinterpret_cast<const unsigned char*>(x), y, n);
  return cudaGetLastError();
}

cudaError_t LaunchAddN(const float* const* inputs, int count, float* sum, int64_t n,
                       cudaStream_t stream) {
  if (count < 2) return cudaErrorInvalidValue;
  for (int k = 0; k < count;) {
    AddNPass pass{};
    pass.first = k == 0;
    pass.count = 0;
    while (k < count && pass.count < kAddNInputsPerPass) pass.in[pass.count++] = inputs[k++];
    AddNKernel<<<GridBlocks(n), kThreadsPerBlock, 0, stream>>>(pass, sum, n);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) return err;
  }
  return cudaSuccess;
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
    FillKernel<<<GridBlocks(n), kThreadsPerBlock, 0, stream>>>(v, static_cast<uint32_t*>(out), n);
  } else if (pattern_bytes == 8) {
    unsigned long long v;
    std::memcpy(&v, pattern, 8);
    FillKernel<<<GridBlocks(n), kThreadsPerBlock, 0, stream>>>(
        v, static_cast<unsigned long long*>(out), n);
  } else {
    return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace cfx::cuda
