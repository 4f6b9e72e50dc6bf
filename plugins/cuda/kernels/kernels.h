// Registration of the CUDA kernel families (one file per family in this folder).
#ifndef CONFLUX_PLUGINS_CUDA_KERNELS_KERNELS_H_
#define CONFLUX_PLUGINS_CUDA_KERNELS_KERNELS_H_

#include "conflux/sdk.h"

namespace cfx::cuda {

void RegisterBasicKernels(sdk::Plugin& p);        // basic.cc: Const, Identity, Fill
void RegisterElementwiseKernels(sdk::Plugin& p);  // elementwise.cc: float math, BiasAdd, Cast
void RegisterMatMulKernels(sdk::Plugin& p);       // matmul.cc: MatMul, BatchMatMulV2 (cuBLAS)

}  // namespace cfx::cuda

#endif  // CONFLUX_PLUGINS_CUDA_KERNELS_KERNELS_H_
