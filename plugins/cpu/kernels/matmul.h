// Private to the CPU MatMul kernels: shape checking shared by the oneDNN (float) and Eigen
// (double, int32, int64) kernels.
#ifndef CONFLUX_PLUGINS_CPU_KERNELS_MATMUL_H_
#define CONFLUX_PLUGINS_CPU_KERNELS_MATMUL_H_

#include <cstdint>

#include "conflux/sdk.h"

namespace cfx::cpu {

// C[m, n] = op(A)[m, k] * op(B)[k, n], where op transposes when asked.
struct MatMulDims {
  int64_t m = 0, k = 0, n = 0;
  bool transpose_a = false, transpose_b = false;
};

// The attrs every MatMul kernel reads in Init.
struct MatMulAttrs {
  bool transpose_a = false, transpose_b = false;
  sdk::Status Read(const sdk::KernelInit& init);
};

// The product's dimensions for inputs of shapes `a` and `b`; InvalidArgument naming both shapes
// (and the transposes) when either is not a matrix or their inner dimensions differ.
sdk::Result<MatMulDims> CheckMatMulShapes(const sdk::Shape& a, const sdk::Shape& b,
                                          bool transpose_a, bool transpose_b);

// One Compute call, past the part every MatMul kernel shares.
struct MatMulCall {
  MatMulDims dims;
  sdk::Tensor a, b, product;
  bool done = false;  // no multiply needed: the product is empty, or k == 0 and it is all zeros
};

// Checks the inputs' shapes (as CheckMatMulShapes) and allocates the product, completing it when
// there is nothing to multiply. Errors are the check's or the allocation's.
sdk::Result<MatMulCall> BeginMatMul(sdk::KernelContext& ctx, const MatMulAttrs& attrs);

// product = op(a) op(b) + beta * product for a float `call` (beta 0: the plain product; beta 1:
// added to what product holds, as _FusedMatMul's bias rows), through oneDNN's dnnl_sgemm on the
// device's intra-op threads (matmul_onednn.cc). Internal naming the dimensions if sgemm fails.
sdk::Status SgemmInto(sdk::KernelContext& ctx, const MatMulCall& call, float beta);

// The float MatMul kernel (matmul_onednn.cc) and _FusedMatMul's (fused_matmul.cc); called by
// RegisterMatMulKernels.
void RegisterOneDnnMatMulKernel(sdk::Plugin& p);
void RegisterFusedMatMulKernel(sdk::Plugin& p);

}  // namespace cfx::cpu

#endif  // CONFLUX_PLUGINS_CPU_KERNELS_MATMUL_H_
