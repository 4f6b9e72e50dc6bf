// The optimizer updates on CUDA: no kernels yet; placement runs these ops on the CPU.
#include "kernels/kernels.h"

namespace cfx::cuda {

void RegisterTrainingKernels(sdk::Plugin&) {}

}  // namespace cfx::cuda
