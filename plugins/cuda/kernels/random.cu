// Device code of the random ops (kernels/random_launch.h): one thread per output group in a
// grid-stride loop. Each group is computed from (key, counter) alone, so the values do not depend
// on the launch shape. The math is CUDA's accurate logf/sqrtf/sinf/cosf (this file is built
// without fast math): a normal may differ from the CPU's (glibc) in its last bit.
#include <cstdint>

#include "kernels/random_launch.h"

namespace cfx::cuda {
namespace {

__global__ void RandomFillKernel(RandomFillArgs a, int64_t groups) {
  const int64_t stride = int64_t{blockDim.x} * gridDim.x;
  for (int64_t g = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; g < groups; g += stride)
    FillRandomGroup(a, g);
}

}  // namespace

cudaError_t LaunchRandomFill(const RandomFillArgs& a, cudaStream_t stream) {
  if (a.out == nullptr || a.n < 1) return cudaErrorInvalidValue;
  const int64_t groups = RandomGroups(a.dist, a.n);
  RandomFillKernel<<<GridBlocks(groups), kThreadsPerBlock, 0, stream>>>(a, groups);
  return cudaGetLastError();
}

}  // namespace cfx::cuda
