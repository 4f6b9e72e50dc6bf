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

#if defined(__CUDACC__)
#define CFX_HOST_DEVICE __host__ __device__
#else
#define CFX_HOST_DEVICE
#endif

// The output's collapsed dims, row-major, and each operand's element stride along each (0 where
// it broadcasts), as sdk::PlanBroadcast makes them. Passed to the kernel by value.
struct BroadcastIndex {
  int32_t rank = 0;
  int64_t dims[kMaxBroadcastDims] = {};
  int64_t strides[2][kMaxBroadcastDims] = {};
};

// The element offsets into the two operands of output element i (the device kernels' index
// arithmetic, also compiled for the host so that tests check it).
CFX_HOST_DEVICE inline void BroadcastOffsets(const BroadcastIndex& index, int64_t i, int64_t* x,
                                             int64_t* y) {
  int64_t rest = i, ox = 0, oy = 0;
  for (int d = index.rank - 1; d >= 0; --d) {
    const int64_t coord = rest % index.dims[d];
    rest /= index.dims[d];
    ox += coord * index.strides[0][d];
    oy += coord * index.strides[1][d];
  }
  *x = ox;
  *y = oy;
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
  kCos
};
enum class BinaryFn : int32_t {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMaximum,
  kMinimum,
  kSquaredDifference,
  kReluGrad
};

// y[i] = fn(x[i]) for float, i < n (n > 0).
cudaError_t LaunchUnary(UnaryFn fn, const float* x, float* y, int64_t n, cudaStream_t stream);

// z = fn(x, y) for float with NumPy broadcasting (`index` over n > 0 output elements; a rank-1
// index whose strides are both 1 takes the unbroadcast path).
cudaError_t LaunchBinary(BinaryFn fn, const float* x, const float* y, float* z,
                         const BroadcastIndex& index, int64_t n, cudaStream_t stream);

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
