// MatMul and BatchMatMulV2 on CUDA (float) through cuBLAS, on the kernel's stream with that
// stream's handle and workspace, as kernels/gemm_plan.h plans them: one cublasSgemm, one
// cublasSgemmStridedBatched when the batch dims broadcast along at most one merged dim, or one
// cublasSgemm per output matrix otherwise. Exact float32 unless the device has allow_tf32 (TF32).
#include <string>

#include "cuda_common.h"
#include "kernels/gemm_plan.h"
#include "kernels/kernels.h"

namespace cfx::cuda {
namespace {

cublasOperation_t Op(bool transpose) { return transpose ? CUBLAS_OP_T : CUBLAS_OP_N; }

// Enqueues the plan's products into output 0 (already allocated as `c`).
sdk::Status EnqueuePlan(cfx_device* dev, cublasHandle_t h, const GemmPlan& p, const float* a,
                        const float* b, float* c) {
  const float one = 1.0f, zero = 0.0f;
  const std::string dims = sdk::StrCat("(m=", p.cols, ", n=", p.rows, ", k=", p.depth);
  if (p.strided && p.batch == 1)
    return BlasCheck(cublasSgemm(h, Op(p.transpose_first), Op(p.transpose_second), p.rows, p.cols,
                                 p.depth, &one, b, p.ld_first, a, p.ld_second, &zero, c, p.ld_out),
                     dev->name, "cublasSgemm " + dims + ")");
  if (p.strided)
    return BlasCheck(cublasSgemmStridedBatched(h, Op(p.transpose_first), Op(p.transpose_second),
                                               p.rows, p.cols, p.depth, &one, b, p.ld_first,
                                               p.stride_b, a, p.ld_second, p.stride_a, &zero, c,
                                               p.ld_out, p.stride_c, static_cast<int>(p.batch)),
                     dev->name,
                     sdk::StrCat("cublasSgemmStridedBatched ", dims, ", batch=", p.batch, ")"));
  for (int64_t i = 0; i < p.batch; ++i)
    CFX_SDK_RETURN_IF_ERROR(
        BlasCheck(cublasSgemm(h, Op(p.transpose_first), Op(p.transpose_second), p.rows, p.cols,
                              p.depth, &one, b + p.offsets_b[i], p.ld_first, a + p.offsets_a[i],
                              p.ld_second, &zero, c + p.offsets_c[i], p.ld_out),
                  dev->name, sdk::StrCat("cublasSgemm ", dims, ") of batch ", i)));
  return sdk::Status();
}

// Output 0 = the plan's products of inputs 0 and 1, then done.
sdk::Status RunPlan(sdk::KernelContext& ctx, const GemmPlan& p, sdk::AsyncDone done) {
  const sdk::Tensor a = ctx.input(0), b = ctx.input(1);
  CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor c, ctx.AllocateOutput(0, p.output_shape));
  if (c.num_elements() == 0) {
    done();
    return sdk::Status();
  }
  cfx_device* dev = ctx.device();
  const cudaStream_t stream = Stream(ctx);
  CFX_SDK_RETURN_IF_ERROR(DeviceScope(dev));
  if (p.depth == 0) {  // empty sums: zeros
    CFX_SDK_RETURN_IF_ERROR(CudaCheck(cudaMemsetAsync(c.raw_data(), 0, c.byte_size(), stream),
                                      dev->name, "cudaMemsetAsync"));
    return CompleteAsync(ctx, done);
  }
  CFX_SDK_ASSIGN_OR_RETURN(BlasHandle * blas, BlasFor(dev, stream));
  {
    std::lock_guard<std::mutex> lock(blas->mu);
    CFX_SDK_RETURN_IF_ERROR(
        EnqueuePlan(dev, blas->handle, p, a.data<float>(), b.data<float>(), c.data<float>()));
  }
  return CompleteAsync(ctx, done);
}

class MatMulKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) {
    CFX_SDK_RETURN_IF_ERROR(init.attrs().GetOr("transpose_a", &transpose_a_, false));
    return init.attrs().GetOr("transpose_b", &transpose_b_, false);
  }
  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    CFX_SDK_ASSIGN_OR_RETURN(GemmPlan p, PlanMatMul(ctx.input(0).shape(), ctx.input(1).shape(),
                                                    transpose_a_, transpose_b_));
    return RunPlan(ctx, p, done);
  }

 private:
  bool transpose_a_ = false;
  bool transpose_b_ = false;
};

class BatchMatMulKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) {
    CFX_SDK_RETURN_IF_ERROR(init.attrs().GetOr("adj_x", &adj_x_, false));
    return init.attrs().GetOr("adj_y", &adj_y_, false);
  }
  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    CFX_SDK_ASSIGN_OR_RETURN(
        GemmPlan p, PlanBatchMatMul(ctx.input(0).shape(), ctx.input(1).shape(), adj_x_, adj_y_));
    return RunPlan(ctx, p, done);
  }

 private:
  bool adj_x_ = false;
  bool adj_y_ = false;
};

}  // namespace

void RegisterMatMulKernels(sdk::Plugin& p) {
  p.AsyncKernel<MatMulKernel>("MatMul", kDeviceType).TypeConstraint("T", CFX_FLOAT).Inexpensive();
  p.AsyncKernel<BatchMatMulKernel>("BatchMatMulV2", kDeviceType)
      .TypeConstraint("T", CFX_FLOAT)
      .Inexpensive();
}

}  // namespace cfx::cuda
