// Softmax, cross entropy and BiasAddGrad on CUDA: no kernels yet; placement runs these ops on the CPU.
#include "kernels/kernels.h"

namespace cfx::cuda {

void RegisterNnKernels(sdk::Plugin&) {}

}  // namespace cfx::cuda
