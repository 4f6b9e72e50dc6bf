// Element-wise kernels on CUDA: unary float math and activations, broadcasting binary math
// (float; int32 and int64 for Add, AddV2, Sub, Mul, Maximum and Minimum), the activation
// gradients, comparisons and logical ops, AddN, BiasAdd and Cast. The device code is in
// elementwise.cu; here inputs are checked and broadcasts planned. Kernels keep only attrs, so
// ComputeAsync may run concurrently.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "conflux/sdk/basic_kernels.h"
#include "conflux/sdk/shape_rules.h"
#include "cuda_common.h"
#include "kernels/elementwise_plan.h"
#include "kernels/kernels.h"

namespace cfx::cuda {
namespace {

// Finishes a kernel whose output is empty: nothing to enqueue.
sdk::Status DoneAtOnce(sdk::AsyncDone done) {
  done();
  return sdk::Status();
}

// Enqueues z = fn(x, y) over a broadcast of x's and y's shapes (y's as `y_shape`, which BiasAdd
// gives trailing ones) into output 0, forwarding an input buffer when it can.
sdk::Status EnqueueBinary(sdk::KernelContext& ctx, BinaryFn fn, float param, const std::string& op,
                          const sdk::Shape& y_shape, sdk::AsyncDone done) {
  const sdk::Tensor x = ctx.input(0), y = ctx.input(1);
  CFX_SDK_ASSIGN_OR_RETURN(DeviceBroadcast b, PlanBinary(x.shape(), y_shape, op));
  CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor z, ctx.ForwardOrAllocateOutput({0, 1}, 0, b.output_shape));
  if (b.num_elements == 0) return DoneAtOnce(done);
  CFX_SDK_RETURN_IF_ERROR(DeviceScope(ctx.device()));
  CFX_SDK_RETURN_IF_ERROR(
      CudaCheck(LaunchBinary(fn, x.dtype(), x.raw_data(), y.raw_data(), z.raw_data(), b.index,
                             b.num_elements, param, Stream(ctx)),
                ctx.device()->name,
                sdk::StrCat("launch of the kernel of ", op, " on ", sdk::DTypeName(x.dtype()))));
  return CompleteAsync(ctx, done);
}

// The names of the two inputs of a gradient op, which must have one shape (TensorFlow's *Grad
// ops do not broadcast); null names for the broadcasting functions.
struct OperandNames {
  const char* first = nullptr;
  const char* second = nullptr;
};

constexpr OperandNames SameShapeOperands(BinaryFn fn) {
  switch (fn) {
    case BinaryFn::kSigmoidGrad:
    case BinaryFn::kTanhGrad:
    case BinaryFn::kSqrtGrad:
    case BinaryFn::kRsqrtGrad:
    case BinaryFn::kReciprocalGrad:
      return {"y", "dy"};
    case BinaryFn::kReluGrad:
    case BinaryFn::kRelu6Grad:
    case BinaryFn::kSoftplusGrad:
    case BinaryFn::kLeakyReluGrad:
    case BinaryFn::kSoftsignGrad:
      return {"gradients", "features"};
    case BinaryFn::kEluGrad:
    case BinaryFn::kSeluGrad:
      return {"gradients", "outputs"};
    default:
      return {};
  }
}

template <UnaryFn F>
class UnaryKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) {
    node_ = init.node_name();
    if constexpr (F == UnaryFn::kLeakyRelu) return init.attrs().Get("alpha", &param_);
    // The threshold of the CPU kernel, computed the same way.
    if constexpr (F == UnaryFn::kSoftplus)
      param_ = std::log(std::numeric_limits<float>::epsilon()) + 2.0f;
    return sdk::Status();
  }
  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    const sdk::Tensor x = ctx.input(0);
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor y, ctx.ForwardOrAllocateOutput({0}, 0, x.shape()));
    const int64_t n = x.num_elements();
    if (n == 0) return DoneAtOnce(done);
    CFX_SDK_RETURN_IF_ERROR(DeviceScope(ctx.device()));
    CFX_SDK_RETURN_IF_ERROR(
        CudaCheck(LaunchUnary(F, x.data<float>(), y.data<float>(), n, Stream(ctx), param_),
                  ctx.device()->name, "launch of the element-wise kernel of " + node_));
    return CompleteAsync(ctx, done);
  }

 private:
  std::string node_;
  float param_ = 0.0f;
};

template <BinaryFn F>
class BinaryKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) {
    node_ = init.node_name();
    if constexpr (F == BinaryFn::kLeakyReluGrad) return init.attrs().Get("alpha", &param_);
    return sdk::Status();
  }
  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    constexpr OperandNames kNames = SameShapeOperands(F);
    if constexpr (kNames.first != nullptr) {
      const sdk::Shape a = ctx.input(0).shape(), b = ctx.input(1).shape();
      if (a != b)
        return sdk::InvalidArgument(kNames.first, " (shape ", sdk::ShapeString(a), ") and ",
                                    kNames.second, " (shape ", sdk::ShapeString(b),
                                    ") must have the same shape");
    }
    return EnqueueBinary(ctx, F, param_, node_, ctx.input(1).shape(), done);
  }

 private:
  std::string node_;
  float param_ = 0.0f;
};

// Comparisons and LogicalAnd/LogicalOr. Equal and NotEqual with incompatible_shape_error = false
// give a scalar for shapes that do not broadcast ("not equal": false for Equal, true for
// NotEqual), as TensorFlow's and the CPU kernels do.
template <CompareFn F>
class CompareKernel {
 public:
  static constexpr bool kEquality = F == CompareFn::kEqual || F == CompareFn::kNotEqual;

  sdk::Status Init(const sdk::KernelInit& init) {
    node_ = init.node_name();
    if constexpr (kEquality)
      return init.attrs().GetOr("incompatible_shape_error", &incompatible_shape_error_, true);
    return sdk::Status();
  }
  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    const sdk::Tensor x = ctx.input(0), y = ctx.input(1);
    sdk::Result<DeviceBroadcast> b = PlanBinary(x.shape(), y.shape(), node_);
    if (!b.ok()) {
      if (!kEquality || incompatible_shape_error_ || b.status().code() != CFX_INVALID_ARGUMENT)
        return b.status();
      return NotEqualScalar(ctx, done);
    }
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor z,
                             ctx.ForwardOrAllocateOutput({0, 1}, 0, b->output_shape));
    if (b->num_elements == 0) return DoneAtOnce(done);
    CFX_SDK_RETURN_IF_ERROR(DeviceScope(ctx.device()));
    CFX_SDK_RETURN_IF_ERROR(
        CudaCheck(LaunchCompare(F, x.dtype(), x.raw_data(), y.raw_data(), z.data<bool>(), b->index,
                                b->num_elements, Stream(ctx)),
                  ctx.device()->name,
                  sdk::StrCat("launch of the comparison kernel of ", node_, " on ",
                              sdk::DTypeName(x.dtype()))));
    return CompleteAsync(ctx, done);
  }

 private:
  sdk::Status NotEqualScalar(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor z, ctx.AllocateOutput(0, sdk::Shape()));
    CFX_SDK_RETURN_IF_ERROR(DeviceScope(ctx.device()));
    CFX_SDK_RETURN_IF_ERROR(
        CudaCheck(cudaMemsetAsync(z.raw_data(), F == CompareFn::kNotEqual ? 1 : 0, 1, Stream(ctx)),
                  ctx.device()->name, "cudaMemsetAsync of " + node_ + "'s scalar result"));
    return CompleteAsync(ctx, done);
  }

  std::string node_;
  bool incompatible_shape_error_ = true;
};

class LogicalNotKernel {
 public:
  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    const sdk::Tensor x = ctx.input(0);
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor y, ctx.ForwardOrAllocateOutput({0}, 0, x.shape()));
    if (x.num_elements() == 0) return DoneAtOnce(done);
    CFX_SDK_RETURN_IF_ERROR(DeviceScope(ctx.device()));
    CFX_SDK_RETURN_IF_ERROR(
        CudaCheck(LaunchLogicalNot(x.data<bool>(), y.data<bool>(), x.num_elements(), Stream(ctx)),
                  ctx.device()->name, "launch of LogicalNot"));
    return CompleteAsync(ctx, done);
  }
};

// AddN: the sum of N inputs of one shape (no broadcasting), added left to right.
class AddNKernel {
 public:
  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    const int n = ctx.num_inputs();
    if (n < 1) return sdk::InvalidArgument("AddN needs at least one input");
    std::vector<sdk::Shape> shapes;
    for (int i = 0; i < n; ++i) shapes.push_back(ctx.input(i).shape());
    sdk::Shape shape;
    CFX_SDK_RETURN_IF_ERROR(sdk::RuleStatus(shape_rules::MergeSameShapes(shapes, &shape)));
    if (n == 1) {
      CFX_SDK_RETURN_IF_ERROR(ctx.SetOutput(0, ctx.input(0)));
      return DoneAtOnce(done);
    }
    // The sum may take input 0's or 1's buffer: the first pass reads each element of both
    // before it writes that element.
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor sum, ctx.ForwardOrAllocateOutput({0, 1}, 0, shape));
    const int64_t elements = sum.num_elements();
    if (elements == 0) return DoneAtOnce(done);
    std::vector<const float*> inputs;
    for (int i = 0; i < n; ++i) inputs.push_back(ctx.input(i).data<float>());
    CFX_SDK_RETURN_IF_ERROR(DeviceScope(ctx.device()));
    CFX_SDK_RETURN_IF_ERROR(
        CudaCheck(LaunchAddN(inputs.data(), n, sum.data<float>(), elements, Stream(ctx)),
                  ctx.device()->name, sdk::StrCat("launch of AddN of ", n, " inputs")));
    return CompleteAsync(ctx, done);
  }
};

class BiasAddKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) {
    return sdk::ReadDataFormat(init.attrs(), &format_);
  }
  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Shape bias_shape,
                             BiasShape(ctx.input(0).shape(), ctx.input(1).shape(), format_));
    return EnqueueBinary(ctx, BinaryFn::kAdd, 0.0f, "BiasAdd", bias_shape, done);
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
      return DoneAtOnce(done);
    }
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor y, ctx.AllocateOutput(0, x.shape()));
    if (x.num_elements() == 0) return DoneAtOnce(done);
    CFX_SDK_RETURN_IF_ERROR(DeviceScope(ctx.device()));
    CFX_SDK_RETURN_IF_ERROR(CudaCheck(
        LaunchCast(x.dtype(), to, x.raw_data(), y.raw_data(), x.num_elements(), Stream(ctx)),
        ctx.device()->name,
        sdk::StrCat("launch of Cast from ", sdk::DTypeName(x.dtype()), " to ",
                    sdk::DTypeName(to))));
    return CompleteAsync(ctx, done);
  }
};

template <typename K>
void Register(sdk::Plugin& p, const char* op, std::initializer_list<cfx_dtype> types) {
  for (cfx_dtype t : types) p.AsyncKernel<K>(op, kDeviceType).TypeConstraint("T", t).Inexpensive();
}
template <UnaryFn F>
void Unary(sdk::Plugin& p, const char* op) {
  Register<UnaryKernel<F>>(p, op, {CFX_FLOAT});
}
template <BinaryFn F>
void Binary(sdk::Plugin& p, const char* op) {
  if constexpr (HasIntegerBinary(F))
    Register<BinaryKernel<F>>(p, op, {CFX_FLOAT, CFX_INT32, CFX_INT64});
  else
    Register<BinaryKernel<F>>(p, op, {CFX_FLOAT});
}
template <CompareFn F>
void Compare(sdk::Plugin& p, const char* op) {
  if constexpr (CompareKernel<F>::kEquality)
    Register<CompareKernel<F>>(p, op, {CFX_FLOAT, CFX_INT32, CFX_INT64, CFX_BOOL});
  else
    Register<CompareKernel<F>>(p, op, {CFX_FLOAT, CFX_INT32, CFX_INT64});
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
  Unary<UnaryFn::kSign>(p, "Sign");
  Unary<UnaryFn::kRelu6>(p, "Relu6");
  Unary<UnaryFn::kElu>(p, "Elu");
  Unary<UnaryFn::kSelu>(p, "Selu");
  Unary<UnaryFn::kSoftplus>(p, "Softplus");
  Unary<UnaryFn::kLeakyRelu>(p, "LeakyRelu");
  Unary<UnaryFn::kFloor>(p, "Floor");
  Unary<UnaryFn::kCeil>(p, "Ceil");
  Unary<UnaryFn::kLog1p>(p, "Log1p");
  Unary<UnaryFn::kExpm1>(p, "Expm1");
  Unary<UnaryFn::kTan>(p, "Tan");
  Unary<UnaryFn::kAsin>(p, "Asin");
  Unary<UnaryFn::kAcos>(p, "Acos");
  Unary<UnaryFn::kAtan>(p, "Atan");
  Unary<UnaryFn::kSinh>(p, "Sinh");
  Unary<UnaryFn::kCosh>(p, "Cosh");
  Unary<UnaryFn::kAsinh>(p, "Asinh");
  Unary<UnaryFn::kAcosh>(p, "Acosh");
  Unary<UnaryFn::kAtanh>(p, "Atanh");
  Unary<UnaryFn::kLgamma>(p, "Lgamma");
  Unary<UnaryFn::kErfinv>(p, "Erfinv");
  Unary<UnaryFn::kNdtri>(p, "Ndtri");
  Unary<UnaryFn::kSoftsign>(p, "Softsign");
  Binary<BinaryFn::kAdd>(p, "Add");
  Binary<BinaryFn::kAdd>(p, "AddV2");
  Binary<BinaryFn::kSub>(p, "Sub");
  Binary<BinaryFn::kMul>(p, "Mul");
  Binary<BinaryFn::kDiv>(p, "Div");
  Binary<BinaryFn::kDiv>(p, "RealDiv");
  Binary<BinaryFn::kMaximum>(p, "Maximum");
  Binary<BinaryFn::kMinimum>(p, "Minimum");
  Binary<BinaryFn::kSquaredDifference>(p, "SquaredDifference");
  Binary<BinaryFn::kPow>(p, "Pow");
  Binary<BinaryFn::kReluGrad>(p, "ReluGrad");
  Binary<BinaryFn::kSigmoidGrad>(p, "SigmoidGrad");
  Binary<BinaryFn::kTanhGrad>(p, "TanhGrad");
  Binary<BinaryFn::kSqrtGrad>(p, "SqrtGrad");
  Binary<BinaryFn::kRsqrtGrad>(p, "RsqrtGrad");
  Binary<BinaryFn::kReciprocalGrad>(p, "ReciprocalGrad");
  Binary<BinaryFn::kRelu6Grad>(p, "Relu6Grad");
  Binary<BinaryFn::kEluGrad>(p, "EluGrad");
  Binary<BinaryFn::kSeluGrad>(p, "SeluGrad");
  Binary<BinaryFn::kSoftplusGrad>(p, "SoftplusGrad");
  Binary<BinaryFn::kLeakyReluGrad>(p, "LeakyReluGrad");
  Binary<BinaryFn::kSoftsignGrad>(p, "SoftsignGrad");
  Binary<BinaryFn::kXlog1py>(p, "Xlog1py");
  Binary<BinaryFn::kDivNoNan>(p, "DivNoNan");
  Binary<BinaryFn::kMulNoNan>(p, "MulNoNan");
  Compare<CompareFn::kEqual>(p, "Equal");
  Compare<CompareFn::kNotEqual>(p, "NotEqual");
  Compare<CompareFn::kLess>(p, "Less");
  Compare<CompareFn::kLessEqual>(p, "LessEqual");
  Compare<CompareFn::kGreater>(p, "Greater");
  Compare<CompareFn::kGreaterEqual>(p, "GreaterEqual");
  p.AsyncKernel<CompareKernel<CompareFn::kLogicalAnd>>("LogicalAnd", kDeviceType).Inexpensive();
  p.AsyncKernel<CompareKernel<CompareFn::kLogicalOr>>("LogicalOr", kDeviceType).Inexpensive();
  p.AsyncKernel<LogicalNotKernel>("LogicalNot", kDeviceType).Inexpensive();
  Register<AddNKernel>(p, "AddN", {CFX_FLOAT});
  Register<BiasAddKernel>(p, "BiasAdd", {CFX_FLOAT});
  constexpr cfx_dtype kCastTypes[] = {CFX_FLOAT, CFX_INT32, CFX_INT64, CFX_BOOL};
  for (cfx_dtype from : kCastTypes)
    for (cfx_dtype to : kCastTypes)
      p.AsyncKernel<CastKernel>("Cast", kDeviceType)
          .TypeConstraint("SrcT", from)
          .TypeConstraint("DstT", to)
          .Inexpensive();
}

}  // namespace cfx::cuda
