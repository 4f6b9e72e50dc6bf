// Launches of the CUDA plugin's device code (kernels/*.cu). Plain C++ over raw device pointers,
// free of the SDK, so that nvcc compiles little; the kernel classes (*.cc) validate inputs, plan
// broadcasts and call these on the kernel's stream. Each returns the launch's error.
#ifndef CONFLUX_PLUGINS_CUDA_KERNELS_LAUNCH_H_
#define CONFLUX_PLUGINS_CUDA_KERNELS_LAUNCH_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace cfx::cuda {

inline constexpr int kMaxBroadcastDims = 8;
// Operands an index walks at most: Select's condition, t and e.
inline constexpr int kMaxBroadcastOperands = 3;

#if defined(__CUDACC__)
#define CFX_HOST_DEVICE __host__ __device__
#else
#define CFX_HOST_DEVICE
#endif

// The launch shape of the element-wise kernels: blocks of kThreadsPerBlock threads running a
// grid-stride loop over n > 0 elements, at most 65535 * 8 blocks (far below the grid's x limit of
// 2^31 - 1; beyond that each thread takes several elements).
inline constexpr int kThreadsPerBlock = 256;
inline unsigned GridBlocks(int64_t n) {
  constexpr int64_t kMaxBlocks = 65535 * 8;
  const int64_t blocks = (n + kThreadsPerBlock - 1) / kThreadsPerBlock;
  return static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

// The output's collapsed dims, row-major, and each operand's element stride along each (0 where
// it broadcasts), as sdk::PlanBroadcast makes them. Passed to the kernel by value.
struct BroadcastIndex {
  int32_t rank = 0;
  int64_t dims[kMaxBroadcastDims] = {};
  int64_t strides[kMaxBroadcastOperands][kMaxBroadcastDims] = {};
};

// The element offsets into the first kOperands operands of output element i (the device
// kernels' index arithmetic, also compiled for the host so that tests check it).
template <int kOperands>
CFX_HOST_DEVICE inline void BroadcastOffsetsOf(const BroadcastIndex& index, int64_t i,
                                               int64_t (&offsets)[kOperands]) {
  static_assert(kOperands >= 1 && kOperands <= kMaxBroadcastOperands, "operand count");
  for (int k = 0; k < kOperands; ++k) offsets[k] = 0;
  int64_t rest = i;
  for (int d = index.rank - 1; d >= 0; --d) {
    const int64_t coord = rest % index.dims[d];
    rest /= index.dims[d];
    for (int k = 0; k < kOperands; ++k) offsets[k] += coord * index.strides[k][d];
  }
}

// The offsets into x and y of output element i of a binary op.
CFX_HOST_DEVICE inline void BroadcastOffsets(const BroadcastIndex& index, int64_t i, int64_t* x,
                                             int64_t* y) {
  int64_t offsets[2];
  BroadcastOffsetsOf<2>(index, i, offsets);
  *x = offsets[0];
  *y = offsets[1];
}

// True when every operand of `index` walks the output with stride 1 (equal shapes): the kernels
// then index all of them with the output's index.
CFX_HOST_DEVICE inline bool SameShapes(const BroadcastIndex& index, int operands) {
  if (index.rank != 1) return false;
  for (int k = 0; k < operands; ++k)
    if (index.strides[k][0] != 1) return false;
  return true;
}

enum class UnaryFn : int32_t {
  kNeg,
  kAbs,
  kExp,
  kLog,
  kSqrt,
  kRsqrt,
  kSquare,
  kReciprocal,
  kRelu,
  kSigmoid,
  kTanh,
  kSin,
  kCos,
  kSign,
  kRelu6,
  kElu,
  kSelu,
  kSoftplus,   // param: the threshold log(epsilon) + 2 (see LaunchUnary)
  kLeakyRelu,  // param: alpha
  kFloor,
  kCeil,
  kLog1p,
  kExpm1,
  kTan,
  kAsin,
  kAcos,
  kAtan,
  kSinh,
  kCosh,
  kAsinh,
  kAcosh,
  kAtanh,
  kLgamma,
  kErfinv,
  kNdtri,
  kSoftsign,
};

// Binary functions. The *Grad ones take their operands in the op's order: (y, dy) for
// SigmoidGrad, TanhGrad, SqrtGrad, RsqrtGrad and ReciprocalGrad; (gradients, features) for
// ReluGrad, Relu6Grad, SoftplusGrad, LeakyReluGrad and SoftsignGrad; (gradients, outputs) for
// EluGrad and
// SeluGrad.
enum class BinaryFn : int32_t {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMaximum,
  kMinimum,
  kSquaredDifference,
  kReluGrad,
  kPow,
  kSigmoidGrad,
  kTanhGrad,
  kSqrtGrad,
  kRsqrtGrad,
  kReciprocalGrad,
  kRelu6Grad,
  kEluGrad,
  kSeluGrad,
  kSoftplusGrad,
  kLeakyReluGrad,  // param: alpha
  kSoftsignGrad,
  kXlog1py,
  kDivNoNan,
  kMulNoNan,
};

// True for the functions that LaunchBinary also runs on int32 and int64.
CFX_HOST_DEVICE constexpr bool HasIntegerBinary(BinaryFn fn) {
  return fn == BinaryFn::kAdd || fn == BinaryFn::kSub || fn == BinaryFn::kMul ||
         fn == BinaryFn::kMaximum || fn == BinaryFn::kMinimum;
}

// Functions with a bool result.
enum class CompareFn : int32_t {
  kEqual,
  kNotEqual,
  kLess,
  kLessEqual,
  kGreater,
  kGreaterEqual,
  kLogicalAnd,  // bool operands only
  kLogicalOr,   // bool operands only
};

// y[i] = fn(x[i]) for float, i < n (n > 0). `param` is kLeakyRelu's alpha and kSoftplus's
// threshold (log(FLT_EPSILON) + 2, passed in so that the host computes it as the CPU kernel
// does); the other functions ignore it.
cudaError_t LaunchUnary(UnaryFn fn, const float* x, float* y, int64_t n, cudaStream_t stream,
                        float param = 0.0f);

// z = fn(x, y) with NumPy broadcasting (`index` over n > 0 output elements; equal shapes, see
// SameShapes, take a path without index arithmetic). `dtype` is TensorFlow's number of the
// operands' and result's type: float (1) for every function, int32 (3) and int64 (9) for those of
// HasIntegerBinary (Add, Sub and Mul wrap around); cudaErrorInvalidValue for anything else.
// `param` is kLeakyReluGrad's alpha.
cudaError_t LaunchBinary(BinaryFn fn, int32_t dtype, const void* x, const void* y, void* z,
                         const BroadcastIndex& index, int64_t n, float param, cudaStream_t stream);
inline cudaError_t LaunchBinary(BinaryFn fn, const float* x, const float* y, float* z,
                                const BroadcastIndex& index, int64_t n, cudaStream_t stream) {
  return LaunchBinary(fn, 1, x, y, z, index, n, 0.0f, stream);
}

// z = fn(x, y) -> bool with broadcasting, as LaunchBinary. Operands of `dtype` float (1), int32
// (3), int64 (9) or bool (10; as TensorFlow's bool, a byte that is 0 or not); kLogicalAnd and
// kLogicalOr take bool only, the orderings all but bool. cudaErrorInvalidValue otherwise.
cudaError_t LaunchCompare(CompareFn fn, int32_t dtype, const void* x, const void* y, bool* z,
                          const BroadcastIndex& index, int64_t n, cudaStream_t stream);

// y[i] = !x[i], i < n (n > 0).
cudaError_t LaunchLogicalNot(const bool* x, bool* y, int64_t n, cudaStream_t stream);

// sum[i] = inputs[0][i] + inputs[1][i] + ... + inputs[count - 1][i] for i < n (n > 0, count
// >= 2), added left to right as TensorFlow's AddN. `inputs` is a host array of device pointers;
// `sum` may be one of the first kAddNInputsPerPass inputs (each element is read before it is
// written) but none of the later ones.
inline constexpr int kAddNInputsPerPass = 16;
cudaError_t LaunchAddN(const float* const* inputs, int count, float* sum, int64_t n,
                       cudaStream_t stream);

// y = static_cast<dst>(x) between float, int32, int64 and bool (TensorFlow's DataType numbers:
// 1, 3, 9, 10; to bool: x != 0). cudaErrorInvalidValue for another pair.
cudaError_t LaunchCast(int32_t src_dtype, int32_t dst_dtype, const void* x, void* y, int64_t n,
                       cudaStream_t stream);

// n copies of a 4- or 8-byte pattern (cudaErrorInvalidValue for another size); 1-byte patterns
// go through cudaMemsetAsync.
cudaError_t LaunchFill(const void* pattern, size_t pattern_bytes, void* out, int64_t n,
                       cudaStream_t stream);

}  // namespace cfx::cuda

#endif  // CONFLUX_PLUGINS_CUDA_KERNELS_LAUNCH_H_
