// Element-wise kernels on CUDA: unary and broadcasting binary float math, ReluGrad, BiasAdd and
// Cast. The device code is in elementwise.cu; here inputs are checked and broadcasts planned.
#include <string>

#include "cuda_common.h"
#include "kernels/elementwise_plan.h"
#include "kernels/kernels.h"

namespace cfx::cuda {
namespace {

// Enqueues z = fn(x, y) over a broadcast of x's and y's shapes (y's as `y_shape`, which BiasAdd
// gives trailing ones) into output 0, forwarding an input buffer when it can.
sdk::Status EnqueueBinary(sdk::KernelContext& ctx, BinaryFn fn, const std::string& op,
                          const sdk::Shape& y_shape, sdk::AsyncDone done) {
  const sdk::Tensor x = ctx.input(0), y = ctx.input(1);
  CFX_SDK_ASSIGN_OR_RETURN(BinaryBroadcast b, PlanBinary(x.shape(), y_shape, op));
  CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor z, ctx.ForwardOrAllocateOutput({0, 1}, 0, b.output_shape));
  if (b.num_elements == 0) {
    done();
    return sdk::Status();
  }
  CFX_SDK_RETURN_IF_ERROR(DeviceScope(ctx.device()));
  CFX_SDK_RETURN_IF_ERROR(
      CudaCheck(LaunchBinary(fn, x.data<float>(), y.data<float>(), z.data<float>(), b.index,
                             b.num_elements, Stream(ctx)),
                ctx.device()->name, "launch of the kernel of " + op));
  return CompleteAsync(ctx, done);
}

template <UnaryFn F>
class UnaryKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) {
    node_ = init.node_name();
    return sdk::Status();
  }
  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    const sdk::Tensor x = ctx.input(0);
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor y, ctx.ForwardOrAllocateOutput({0}, 0, x.shape()));
    const int64_t n = x.num_elements();
    if (n == 0) {
      done();
      return sdk::Status();
    }
    CFX_SDK_RETURN_IF_ERROR(DeviceScope(ctx.device()));
    CFX_SDK_RETURN_IF_ERROR(
        CudaCheck(LaunchUnary(F, x.data<float>(), y.data<float>(), n, Stream(ctx)),
                  ctx.device()->name, "launch of the element-wise kernel of " + node_));
    return CompleteAsync(ctx, done);
  }

 private:
  std::string node_;
};

template <BinaryFn F>
class BinaryKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) {
    node_ = init.node_name();
    return sdk::Status();
  }
  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    if constexpr (F == BinaryFn::kReluGrad) {
      // TensorFlow's ReluGrad does not broadcast.
      const sdk::Shape g = ctx.input(0).shape(), f = ctx.input(1).shape();
      if (g != f)
        return sdk::InvalidArgument("gradients and features must have the same shape, got ",
                                    sdk::ShapeString(g), " and ", sdk::ShapeString(f));
    }
    return EnqueueBinary(ctx, F, node_, ctx.input(1).shape(), done);
  }

 private:
  std::string node_;
};

class BiasAddKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) {
    return sdk::ReadDataFormat(init.attrs(), &format_);
  }
  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Shape bias_shape,
                             BiasShape(ctx.input(0).shape(), ctx.input(1).shape(), format_));
    return EnqueueBinary(ctx, BinaryFn::kAdd, "BiasAdd", bias_shape, done);
  }

 private:
  sdk::DataFormat format_ = sdk::DataFormat::kNHWC;
};

class CastKernel {
 public:
  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    const sdk::Tensor x = ctx.input(0);
    const cfx_dtype to = ctx.output_dtype(0);
    if (x.dtype() == to) {
      CFX_SDK_RETURN_IF_ERROR(ctx.SetOutput(0, x));
      done();
      return sdk::Status();
    }
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor y, ctx.AllocateOutput(0, x.shape()));
    if (x.num_elements() == 0) {
      done();
      return sdk::Status();
    }
    CFX_SDK_RETURN_IF_ERROR(DeviceScope(ctx.device()));
    CFX_SDK_RETURN_IF_ERROR(CudaCheck(
        LaunchCast(x.dtype(), to, x.raw_data(), y.raw_data(), x.num_elements(), Stream(ctx)),
        ctx.device()->name,
        sdk::StrCat("launch of Cast from ", sdk::DTypeName(x.dtype()), " to ",
                    sdk::DTypeName(to))));
    return CompleteAsync(ctx, done);
  }
};

template <UnaryFn F>
void Unary(sdk::Plugin& p, const char* op) {
  p.AsyncKernel<UnaryKernel<F>>(op, kDeviceType).TypeConstraint("T", CFX_FLOAT).Inexpensive();
}
template <BinaryFn F>
void Binary(sdk::Plugin& p, const char* op) {
  p.AsyncKernel<BinaryKernel<F>>(op, kDeviceType).TypeConstraint("T", CFX_FLOAT).Inexpensive();
}

}  // namespace

void RegisterElementwiseKernels(sdk::Plugin& p) {
  Unary<UnaryFn::kNeg>(p, "Neg");
  Unary<UnaryFn::kAbs>(p, "Abs");
  Unary<UnaryFn::kExp>(p, "Exp");
  Unary<UnaryFn::kLog>(p, "Log");
  Unary<UnaryFn::kSqrt>(p, "Sqrt");
  Unary<UnaryFn::kRsqrt>(p, "Rsqrt");
  Unary<UnaryFn::kSquare>(p, "Square");
  Unary<UnaryFn::kReciprocal>(p, "Reciprocal");
  Unary<UnaryFn::kRelu>(p, "Relu");
  Unary<UnaryFn::kSigmoid>(p, "Sigmoid");
  Unary<UnaryFn::kTanh>(p, "Tanh");
  Unary<UnaryFn::kSin>(p, "Sin");
  Unary<UnaryFn::kCos>(p, "Cos");
  Binary<BinaryFn::kAdd>(p, "Add");
  Binary<BinaryFn::kAdd>(p, "AddV2");
  Binary<BinaryFn::kSub>(p, "Sub");
  Binary<BinaryFn::kMul>(p, "Mul");
  Binary<BinaryFn::kDiv>(p, "Div");
  Binary<BinaryFn::kDiv>(p, "RealDiv");
  Binary<BinaryFn::kMaximum>(p, "Maximum");
  Binary<BinaryFn::kMinimum>(p, "Minimum");
  Binary<BinaryFn::kSquaredDifference>(p, "SquaredDifference");
  Binary<BinaryFn::kReluGrad>(p, "ReluGrad");
  p.AsyncKernel<BiasAddKernel>("BiasAdd", kDeviceType).TypeConstraint("T", CFX_FLOAT).Inexpensive();
  constexpr cfx_dtype kCastTypes[] = {CFX_FLOAT, CFX_INT32, CFX_INT64, CFX_BOOL};
  for (cfx_dtype from : kCastTypes)
    for (cfx_dtype to : kCastTypes)
      p.AsyncKernel<CastKernel>("Cast", kDeviceType)
          .TypeConstraint("SrcT", from)
          .TypeConstraint("DstT", to)
          .Inexpensive();
}

}  // namespace cfx::cuda
