// MatMul on CPU: float through oneDNN (matmul_onednn.cc); double, int32 and int64 through
// Eigen's dense product on row-major maps of the buffers (no copies). Eigen parallelises with
// OpenMP, the CPU plugin's intra-op pool. Kernels hold only attrs: Compute may run concurrently.
#include "kernels/matmul.h"

#include <Eigen/Core>
#include <cstring>
#include <type_traits>

#include "kernels/kernels.h"
#include "kernels/util.h"

namespace cfx::cpu {

sdk::Result<MatMulDims> CheckMatMulShapes(const sdk::Shape& a, const sdk::Shape& b,
                                          bool transpose_a, bool transpose_b) {
  auto shapes = [&] {
    return sdk::StrCat("a has shape ", sdk::ShapeString(a),
                       " (transpose_a=", transpose_a ? "true" : "false", ") and b has shape ",
                       sdk::ShapeString(b), " (transpose_b=", transpose_b ? "true" : "false", ")");
  };
  if (a.size() != 2 || b.size() != 2)
    return sdk::InvalidArgument("MatMul needs two matrices (rank 2): ", shapes());
  MatMulDims d;
  d.transpose_a = transpose_a;
  d.transpose_b = transpose_b;
  d.m = a[transpose_a ? 1 : 0];
  d.k = a[transpose_a ? 0 : 1];
  const int64_t k_b = b[transpose_b ? 1 : 0];
  d.n = b[transpose_b ? 0 : 1];
  if (d.k != k_b)
    return sdk::InvalidArgument("MatMul inner dimensions must match, got ", d.k, " and ", k_b, ": ",
                                shapes());
  return d;
}

sdk::Status MatMulAttrs::Read(const sdk::KernelInit& init) {
  CFX_SDK_RETURN_IF_ERROR(init.attrs().Get("transpose_a", &transpose_a));
  return init.attrs().Get("transpose_b", &transpose_b);
}

sdk::Result<MatMulCall> BeginMatMul(sdk::KernelContext& ctx, const MatMulAttrs& attrs) {
  MatMulCall call;
  call.a = ctx.input(0);
  call.b = ctx.input(1);
  CFX_SDK_ASSIGN_OR_RETURN(call.dims, CheckMatMulShapes(call.a.shape(), call.b.shape(),
                                                        attrs.transpose_a, attrs.transpose_b));
  CFX_SDK_ASSIGN_OR_RETURN(call.product,
                           ctx.AllocateOutput(0, sdk::Shape{call.dims.m, call.dims.n}));
  if (call.product.num_elements() == 0) {
    call.done = true;
  } else if (call.dims.k == 0) {  // every element is an empty sum; zero bits are 0 in every dtype
    std::memset(call.product.raw_data(), 0, call.product.byte_size());
    call.done = true;
  }
  return call;
}

namespace {

template <typename T>
class EigenMatMulKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) { return attrs_.Read(init); }

  sdk::Status Compute(sdk::KernelContext& ctx) {
    CFX_SDK_ASSIGN_OR_RETURN(MatMulCall call, BeginMatMul(ctx, attrs_));
    if (call.done) return sdk::Status();
    // Integers are multiplied as their unsigned type, so that overflow wraps around (two's
    // complement, the same bits) as in the element-wise ops instead of being undefined.
    using E = typename std::conditional_t<std::is_integral_v<T>, std::make_unsigned<T>,
                                          std::type_identity<T>>::type;
    using Matrix = Eigen::Matrix<E, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    // A stored transposed is a column-major view of op(A): no copy either way.
    Eigen::Map<const Matrix> a(reinterpret_cast<const E*>(call.a.data<T>()), call.a.dim(0),
                               call.a.dim(1));
    Eigen::Map<const Matrix> b(reinterpret_cast<const E*>(call.b.data<T>()), call.b.dim(0),
                               call.b.dim(1));
    Eigen::Map<Matrix> product(reinterpret_cast<E*>(call.product.data<T>()), call.dims.m,
                               call.dims.n);
    if (!attrs_.transpose_a && !attrs_.transpose_b) {
      product.noalias() = a * b;
    } else if (!attrs_.transpose_a) {
      product.noalias() = a * b.transpose();
    } else if (!attrs_.transpose_b) {
      product.noalias() = a.transpose() * b;
    } else {
      product.noalias() = a.transpose() * b.transpose();
    }
    return sdk::Status();
  }

 private:
  MatMulAttrs attrs_;
};

}  // namespace

void RegisterMatMulKernels(sdk::Plugin& p) {
  RegisterOneDnnMatMulKernel(p);
  RegisterFusedMatMulKernel(p);
  RegisterForTypes<EigenMatMulKernel, double, int32_t, int64_t>(p, "MatMul");
}

}  // namespace cfx::cpu
