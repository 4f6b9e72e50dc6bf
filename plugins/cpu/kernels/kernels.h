// Registration entry points of the CPU plugin's kernel families; cpu_plugin.cc calls each once
// from the plugin's init function.
#ifndef CONFLUX_PLUGINS_CPU_KERNELS_KERNELS_H_
#define CONFLUX_PLUGINS_CPU_KERNELS_KERNELS_H_

#include "conflux/sdk.h"

namespace cfx::cpu {

void RegisterBasicKernels(sdk::Plugin& p);  // Const, Identity, NoOp, StopGradient, ...
void RegisterElementwiseKernels(
    sdk::Plugin& p);                            // binary, unary, comparison, logical, Cast, Select
void RegisterArrayKernels(sdk::Plugin& p);      // Reshape, Shape, ConcatV2, Slice, Gather, ...
void RegisterReductionKernels(sdk::Plugin& p);  // Sum, Mean, Max, Min, Prod, All, Any, Arg{Max,Min},
                                                // Cumsum, Cumprod
void RegisterMatMulKernels(sdk::Plugin& p);     // MatMul (oneDNN for float, Eigen otherwise)
void RegisterStateKernels(sdk::Plugin& p);      // AssignAdd, AssignSub and their resource forms
void RegisterRandomKernels(sdk::Plugin& p);     // RandomUniform, RandomStandardNormal,
                                                // TruncatedNormal, RandomUniformInt, RandomShuffle
void RegisterLinalgKernels(sdk::Plugin& p);     // MatrixInverse, MatrixDeterminant, BatchMatMulV2
void RegisterAssertPrintKernels(sdk::Plugin& p);    // Assert, Print
void RegisterCheckNumericsKernels(sdk::Plugin& p);  // CheckNumerics
void RegisterTrainingKernels(sdk::Plugin& p);  // (Resource)Apply{GradientDescent, Momentum, Adam,
                                               // RMSProp}
void RegisterSegmentKernels(sdk::Plugin& p);   // (Unsorted)Segment{Sum, Mean, Prod, Max, Min}
void RegisterSearchKernels(sdk::Plugin& p);    // Where, Unique, Roll, Bucketize

}  // namespace cfx::cpu

#endif  // CONFLUX_PLUGINS_CPU_KERNELS_KERNELS_H_
