// MatMul for float on CPU through oneDNN's dnnl_sgemm (row-major C = op(A) * op(B)).
//
// Why dnnl_sgemm rather than a cached dnnl::matmul primitive: measured on the reference machine
// (AVX2, 2 cores; bench/matmul_bench.cc runs both), the primitive runs the same JIT GEMM as
// sgemm (oneDNN reports "gemm:jit") and both reach the same GFLOP/s from 256 to 2048, but each
// primitive call costs about 2 us more (a stream, memory objects, the argument map) and needs a
// primitive cache per kernel; for a 32x32 product that is 40% of the time. sgemm keeps no state,
// so Compute may run concurrently with nothing to guard. It threads with OpenMP, the CPU plugin's
// intra-op pool.
#include <oneapi/dnnl/dnnl.h>

#include "cpu_device.h"
#include "kernels/kernels.h"
#include "kernels/matmul.h"

namespace cfx::cpu {
namespace {

class OneDnnMatMulKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) { return attrs_.Read(init); }

  sdk::Status Compute(sdk::KernelContext& ctx) {
    CFX_SDK_ASSIGN_OR_RETURN(MatMulCall call, BeginMatMul(ctx, attrs_));
    if (call.done) return sdk::Status();
    return SgemmInto(ctx, call, 0.0f);
  }

 private:
  MatMulAttrs attrs_;
};

}  // namespace

sdk::Status SgemmInto(sdk::KernelContext& ctx, const MatMulCall& call, float beta) {
  const MatMulDims& d = call.dims;
  GemmThreads threads(ctx.device(), d.m, d.n, d.k);
  // Leading dimensions are the stored row lengths.
  const dnnl_status_t status =
      dnnl_sgemm(d.transpose_a ? 'T' : 'N', d.transpose_b ? 'T' : 'N', d.m, d.n, d.k, 1.0f,
                 call.a.data<float>(), call.a.dim(1), call.b.data<float>(), call.b.dim(1), beta,
                 call.product.data<float>(), d.n);
  if (status != dnnl_success)
    return sdk::Internal("oneDNN sgemm of [", d.m, ",", d.k, "] x [", d.k, ",", d.n,
                         "] failed with status ", static_cast<int>(status));
  return sdk::Status();
}

void RegisterOneDnnMatMulKernel(sdk::Plugin& p) {
  p.Kernel<OneDnnMatMulKernel>("MatMul", "CPU").TypeConstraint<float>("T");
}

}  // namespace cfx::cpu
