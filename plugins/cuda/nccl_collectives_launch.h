// The device code of the NCCL collectives (nccl_collectives.cu): the division that finishes an
// integer mean. Plain C++ over raw device pointers, free of the SDK (nvcc compiles this header).
#ifndef CONFLUX_PLUGINS_CUDA_NCCL_COLLECTIVES_LAUNCH_H_
#define CONFLUX_PLUGINS_CUDA_NCCL_COLLECTIVES_LAUNCH_H_

#include <cuda_runtime_api.h>

#include <cstdint>

namespace cfx::cuda::nccl {

// Enqueues data[i] = data[i] / divisor (C++'s integer division, truncating toward zero, as the
// CPU's collectives finish a mean) for i < count, on `stream`. `nccl_type` is one of NCCL's
// integer types (nccl_collectives.h: kInt8, kUint8, kInt32, kUint32, kInt64, kUint64);
// cudaErrorInvalidValue for another type, a null `data` with count > 0, or divisor < 1.
cudaError_t LaunchDivideIntegers(int nccl_type, void* data, uint64_t count, int divisor,
                                 cudaStream_t stream);

}  // namespace cfx::cuda::nccl

#endif  // CONFLUX_PLUGINS_CUDA_NCCL_COLLECTIVES_LAUNCH_H_
