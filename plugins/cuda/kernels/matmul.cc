// MatMul and BatchMatMulV2 on CUDA (float) through cuBLAS, on the kernel's stream with that
// stream's handle and workspace. Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T,
// so cuBLAS gets B before A and no data moves. Batches whose batch dims broadcast along at most
// one merged dim go to one strided-batched call (stride 0 for a broadcast operand); others take
// one call per output matrix.
#include <climits>
#include <string>
#include <vector>

#include "cuda_common.h"
#include "kernels/kernels.h"

namespace cfx::cuda {
namespace {

struct Gemm {
  int64_t m = 0, n = 0, k = 0;
  bool transpose_a = false, transpose_b = false;
};

// One product C[m,n] = op(A) op(B), or `batch` of them `stride_*` elements apart.
sdk::Status EnqueueGemm(cfx_device* dev, cublasHandle_t h, const Gemm& g, const float* a,
                        int64_t stride_a, const float* b, int64_t stride_b, float* c,
                        int64_t stride_c, int64_t batch) {
  const float one = 1.0f, zero = 0.0f;
  const int m = static_cast<int>(g.m), n = static_cast<int>(g.n), k = static_cast<int>(g.k);
  const cublasOperation_t op_a = g.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = g.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int lda = g.transpose_a ? m : k;
  const int ldb = g.transpose_b ? k : n;
  if (batch == 1)
    return BlasCheck(cublasSgemm(h, op_b, op_a, n, m, k, &one, b, ldb, a, lda, &zero, c, n),
                     dev->name, sdk::StrCat("cublasSgemm (m=", m, ", n=", n, ", k=", k, ")"));
  return BlasCheck(
      cublasSgemmStridedBatched(h, op_b, op_a, n, m, k, &one, b, ldb, stride_b, a, lda, stride_a,
                                &zero, c, n, stride_c, static_cast<int>(batch)),
      dev->name,
      sdk::StrCat("cublasSgemmStridedBatched (m=", m, ", n=", n, ", k=", k, ", batch=", batch,
                  ")"));
}

// The matrices' dims as cuBLAS takes them (int); InvalidArgument on a mismatch.
sdk::Result<Gemm> PlanGemm(const sdk::Shape& a, const sdk::Shape& b, bool transpose_a,
                           bool transpose_b, const char* a_name, const char* b_name) {
  const size_t ra = a.size(), rb = b.size();
  Gemm g;
  g.transpose_a = transpose_a;
  g.transpose_b = transpose_b;
  g.m = transpose_a ? a[ra - 1] : a[ra - 2];
  g.k = transpose_a ? a[ra - 2] : a[ra - 1];
  const int64_t kb = transpose_b ? b[rb - 1] : b[rb - 2];
  g.n = transpose_b ? b[rb - 2] : b[rb - 1];
  if (g.k != kb)
    return sdk::InvalidArgument("Matrix size-incompatible: ", a_name, ": ", sdk::ShapeString(a),
                                ", ", b_name, ": ", sdk::ShapeString(b), " (contracting ", g.k,
                                " with ", kb, ")");
  if (g.m > INT_MAX || g.n > INT_MAX || g.k > INT_MAX)
    return sdk::Unimplemented("matrix dimensions above 2^31-1 on GPU (", a_name, " ",
                              sdk::ShapeString(a), ", ", b_name, " ", sdk::ShapeString(b), ")");
  return g;
}

// Output 0 of shape `out_shape` = op(A) op(B) over `batches` described by `plan` (null: one
// matrix), then done.
sdk::Status RunGemms(sdk::KernelContext& ctx, const Gemm& g, const sdk::BroadcastPlan* plan,
                     const sdk::Shape& out_shape, sdk::AsyncDone done) {
  const sdk::Tensor a = ctx.input(0), b = ctx.input(1);
  CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor c, ctx.AllocateOutput(0, out_shape));
  if (sdk::NumElements(out_shape) == 0) {
    done();
    return sdk::Status();
  }
  cfx_device* dev = ctx.device();
  const cudaStream_t stream = Stream(ctx);
  CFX_SDK_RETURN_IF_ERROR(DeviceScope(dev));
  if (g.k == 0) {  // an empty sum: zeros
    CFX_SDK_RETURN_IF_ERROR(CudaCheck(cudaMemsetAsync(c.raw_data(), 0, c.byte_size(), stream),
                                      dev->name, "cudaMemsetAsync"));
    return CompleteAsync(ctx, done);
  }
  CFX_SDK_ASSIGN_OR_RETURN(BlasHandle * blas, BlasFor(dev, stream));
  const int64_t size_a = g.m * g.k, size_b = g.k * g.n, size_c = g.m * g.n;
  {
    std::lock_guard<std::mutex> lock(blas->mu);
    const float* pa = a.data<float>();
    const float* pb = b.data<float>();
    float* pc = c.data<float>();
    if (plan == nullptr || plan->dims.size() <= 1) {
      const int64_t batch = plan == nullptr ? 1 : plan->num_elements;
      const int64_t stride_a = plan == nullptr ? 0 : plan->strides[0][0] * size_a;
      const int64_t stride_b = plan == nullptr ? 0 : plan->strides[1][0] * size_b;
      CFX_SDK_RETURN_IF_ERROR(
          EnqueueGemm(dev, blas->handle, g, pa, stride_a, pb, stride_b, pc, size_c, batch));
    } else {
      // General broadcasting of the batch dims: one product per output matrix.
      const size_t rank = plan->dims.size();
      std::vector<int64_t> coord(rank, 0);
      for (int64_t i = 0; i < plan->num_elements; ++i) {
        int64_t off_a = 0, off_b = 0;
        for (size_t d = 0; d < rank; ++d) {
          off_a += coord[d] * plan->strides[0][d];
          off_b += coord[d] * plan->strides[1][d];
        }
        CFX_SDK_RETURN_IF_ERROR(EnqueueGemm(dev, blas->handle, g, pa + off_a * size_a, 0,
                                            pb + off_b * size_b, 0, pc + i * size_c, 0, 1));
        for (size_t d = rank; d-- > 0;) {
          if (++coord[d] < plan->dims[d]) break;
          coord[d] = 0;
        }
      }
    }
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
    const sdk::Shape a = ctx.input(0).shape(), b = ctx.input(1).shape();
    if (a.size() != 2)
      return sdk::InvalidArgument("MatMul: In[0] must be a matrix, got shape ",
                                  sdk::ShapeString(a));
    if (b.size() != 2)
      return sdk::InvalidArgument("MatMul: In[1] must be a matrix, got shape ",
                                  sdk::ShapeString(b));
    CFX_SDK_ASSIGN_OR_RETURN(Gemm g, PlanGemm(a, b, transpose_a_, transpose_b_, "In[0]", "In[1]"));
    return RunGemms(ctx, g, nullptr, {g.m, g.n}, done);
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
    const sdk::Shape x = ctx.input(0).shape(), y = ctx.input(1).shape();
    if (x.size() < 2 || y.size() < 2)
      return sdk::InvalidArgument("BatchMatMulV2: x and y must have rank >= 2, got ",
                                  sdk::ShapeString(x), " and ", sdk::ShapeString(y));
    CFX_SDK_ASSIGN_OR_RETURN(Gemm g, PlanGemm(x, y, adj_x_, adj_y_, "x", "y"));
    const sdk::Shape batch_x(x.begin(), x.end() - 2), batch_y(y.begin(), y.end() - 2);
    CFX_SDK_ASSIGN_OR_RETURN(sdk::BroadcastPlan plan,
                             sdk::PlanBroadcast({{"x", batch_x}, {"y", batch_y}}));
    sdk::Shape out = plan.output_shape;
    out.push_back(g.m);
    out.push_back(g.n);
    if (plan.num_elements > INT_MAX)
      return sdk::Unimplemented("BatchMatMulV2 on GPU: more than 2^31-1 matrices in a batch");
    return RunGemms(ctx, g, &plan, out, done);
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
