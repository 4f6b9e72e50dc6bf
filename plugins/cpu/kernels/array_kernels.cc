// RegisterArrayKernels: the CPU array kernels, one registration function per file.
#include "kernels/array_util.h"
#include "kernels/kernels.h"

namespace cfx::cpu {

void RegisterArrayKernels(sdk::Plugin& p) {
  RegisterReshapeKernels(p);
  RegisterFillKernels(p);
  RegisterConcatKernels(p);
  RegisterSliceKernels(p);
  RegisterTransposeKernels(p);
  RegisterGatherKernels(p);
  RegisterGradientArrayKernels(p);
  RegisterPadKernels(p);
  RegisterTopKKernels(p);
  RegisterOneHotKernels(p);
  RegisterScatterNdKernels(p);
  RegisterLayoutKernels(p);
}

}  // namespace cfx::cpu
