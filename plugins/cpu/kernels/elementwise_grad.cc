// Gradients of element-wise activations on CPU, TensorFlow's formulas: ReluGrad for float,
// double, int32 and int64; SigmoidGrad, TanhGrad, SqrtGrad, RsqrtGrad and ReciprocalGrad (in terms
// of the forward op's output y and the incoming gradient dy) for float and double. The two inputs
// must have one shape, as the ops' shape functions require; no broadcasting.
#include "kernels/broadcast.h"
#include "kernels/util.h"

namespace cfx::cpu {
namespace {

// gradients * (features > 0): a NaN or infinite gradient stays NaN where the feature is not
// positive, as in TensorFlow (the product, not a select). The factor is spelled as a select of
// constants, which GCC if-converts and vectorises; a bool-to-float conversion it does not (under
// -ftrapping-math it keeps a branch per element, mispredicted half the time).
using ReluGradFn = ElementFn<1, []<typename T>(T gradients, T features) {
  return gradients * (features > T(0) ? T(1) : T(0));
}>;
using SigmoidGradFn = ElementFn<3, []<typename T>(T y, T dy) { return dy * y * (T(1) - y); }>;
using TanhGradFn = ElementFn<3, []<typename T>(T y, T dy) { return dy * (T(1) - y * y); }>;
using SqrtGradFn = ElementFn<5, []<typename T>(T y, T dy) { return T(0.5) * dy / y; }>;
using RsqrtGradFn =
    ElementFn<4, []<typename T>(T y, T dy) { return T(-0.5) * (dy * y) * (y * y); }>;
using ReciprocalGradFn = ElementFn<3, []<typename T>(T y, T dy) { return -y * y * dy; }>;

// The two inputs' names in the ops' definitions.
struct ReluGradInputs {
  static constexpr const char* kFirst = "gradients";
  static constexpr const char* kSecond = "features";
};
struct UnaryGradInputs {
  static constexpr const char* kFirst = "y";
  static constexpr const char* kSecond = "dy";
};

// z = F(first, second) for two inputs of one shape; z reuses an input's buffer when it can.
template <typename T, typename F, typename Inputs>
class SameShapeKernel {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    CFX_SDK_RETURN_IF_ERROR(ExpectInputs(ctx, {sdk::kDType<T>, sdk::kDType<T>}));
    const sdk::Shape first = ctx.input(0).shape(), second = ctx.input(1).shape();
    if (first != second)
      return sdk::InvalidArgument(Inputs::kFirst, " has shape ", sdk::ShapeString(first), " and ",
                                  Inputs::kSecond, " has shape ", sdk::ShapeString(second),
                                  "; they must be equal");
    // Equal shapes make a flat loop.
    CFX_SDK_ASSIGN_OR_RETURN(
        sdk::BroadcastPlan flat,
        sdk::PlanBroadcast({{Inputs::kFirst, first}, {Inputs::kSecond, second}}));
    return ComputeBinary<T, T, F>(ctx, flat);
  }
};

template <typename F, typename Inputs>
struct SameShape {
  template <typename T>
  using Kernel = SameShapeKernel<T, F, Inputs>;
};

template <typename F>
void RegisterUnaryGrad(sdk::Plugin& p, const char* op) {
  RegisterForTypes<SameShape<F, UnaryGradInputs>::template Kernel, float, double>(p, op);
}

}  // namespace

void RegisterActivationGradKernels(sdk::Plugin& p) {
  RegisterForTypes<SameShape<ReluGradFn, ReluGradInputs>::template Kernel, float, double, int32_t,
                   int64_t>(p, "ReluGrad");
  RegisterUnaryGrad<SigmoidGradFn>(p, "SigmoidGrad");
  RegisterUnaryGrad<TanhGradFn>(p, "TanhGrad");
  RegisterUnaryGrad<SqrtGradFn>(p, "SqrtGrad");
  RegisterUnaryGrad<RsqrtGradFn>(p, "RsqrtGrad");
  RegisterUnaryGrad<ReciprocalGradFn>(p, "ReciprocalGrad");
}

}  // namespace cfx::cpu
