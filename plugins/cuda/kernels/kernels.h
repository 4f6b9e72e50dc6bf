// Registration of the CUDA kernel families (one file per family in this folder).
#ifndef CONFLUX_PLUGINS_CUDA_KERNELS_KERNELS_H_
#define CONFLUX_PLUGINS_CUDA_KERNELS_KERNELS_H_

#include "conflux/sdk.h"

namespace cfx::cuda {

void RegisterBasicKernels(sdk::Plugin& p);        // basic.cc: Const, Identity, Fill
void RegisterElementwiseKernels(sdk::Plugin& p);  // elementwise.cc: float math, BiasAdd, Cast
void RegisterMatMulKernels(sdk::Plugin& p);       // matmul.cc: MatMul, BatchMatMulV2 (cuBLAS)
void RegisterReductionKernels(sdk::Plugin& p);    // reduction.cc: Sum, Mean, Max, Min, Prod, ArgMax
void RegisterNnKernels(sdk::Plugin& p);           // nn.cc: softmax, cross entropy, BiasAddGrad
void RegisterTrainingKernels(sdk::Plugin& p);     // training.cc: the Apply* optimizer updates
void RegisterArrayKernels(sdk::Plugin& p);        // array.cc: Transpose, Tile, Concat, Slice, ...
void RegisterPoolKernels(sdk::Plugin& p);         // pool.cc: MaxPool, AvgPool and their gradients
void RegisterConvKernels(sdk::Plugin& p);         // conv.cc: Conv2D and its backprops (cuDNN)
void RegisterBatchNormKernels(sdk::Plugin& p);    // batch_norm.cc: FusedBatchNormV3 and its grad
void RegisterRandomKernels(sdk::Plugin& p);  // random.cc: RandomUniform, normals, RandomUniformInt
void RegisterHostOpKernels(sdk::Plugin& p);  // host_ops.cc: Range, BroadcastGradientArgs, NoOp

}  // namespace cfx::cuda

#endif  // CONFLUX_PLUGINS_CUDA_KERNELS_KERNELS_H_
