// The division that finishes an integer mean after NCCL's sum (nccl_collectives_launch.h).
#include "nccl_collectives_launch.h"

namespace cfx::cuda::nccl {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 4096;

// NCCL's type codes (nccl_collectives.h), repeated here because nvcc does not compile the SDK.
enum : int { kInt8 = 0, kUint8 = 1, kInt32 = 2, kUint32 = 3, kInt64 = 4, kUint64 = 5 };

template <typename T>
__global__ void DivideKernel(T* data, uint64_t count, T divisor) {
  const uint64_t stride = uint64_t{blockDim.x} * gridDim.x;
  for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < count; i += stride)
    data[i] = static_cast<T>(data[i] / divisor);
}

template <typename T>
cudaError_t Launch(void* data, uint64_t count, int divisor, cudaStream_t stream) {
  // A group larger than the type holds (an int8 mean over 200 ranks) has no divisor in it.
  if (static_cast<int64_t>(static_cast<T>(divisor)) != divisor) return cudaErrorInvalidValue;
  const uint64_t blocks = (count + kThreads - 1) / kThreads;
  DivideKernel<T>
      <<<static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks), kThreads, 0, stream>>>(
          static_cast<T*>(data), count, static_cast<T>(divisor));
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchDivideIntegers(int nccl_type, void* data, uint64_t count, int divisor,
                                 cudaStream_t stream) {
  if (divisor < 1 || (data == nullptr && count > 0)) return cudaErrorInvalidValue;
  if (count == 0 || divisor == 1) return cudaSuccess;  // nothing changes
  switch (nccl_type) {
    case kInt8:
      return Launch<int8_t>(data, count, divisor, stream);
    case kUint8:
      return Launch<uint8_t>(data, count, divisor, stream);
    case kInt32:
      return Launch<int32_t>(data, count, divisor, stream);
    case kUint32:
      return Launch<uint32_t>(data, count, divisor, stream);
    case kInt64:
      return Launch<int64_t>(data, count, divisor, stream);
    case kUint64:
      return Launch<uint64_t>(data, count, divisor, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace cfx::cuda::nccl
