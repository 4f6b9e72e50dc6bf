// Select and SelectV2 on CPU for float, double, int32, int64 and bool values.
//
// Select (v1) takes t and e of one shape and a condition that is a scalar, has that shape too, or
// is a vector picking whole rows (the first dimension) of t and e. SelectV2 broadcasts all three.
// Both run as one three-operand broadcast; a vector condition is seen as [n, 1, ..., 1].
#include "kernels/broadcast.h"
#include "kernels/util.h"

namespace cfx::cpu {
namespace {

using SelectFn = ElementFn<1, [](bool condition, auto t, auto e) { return condition ? t : e; }>;

// Select's (v1) rules as a broadcast of condition, t and e; InvalidArgument naming the shapes when
// they break them.
sdk::Result<sdk::BroadcastPlan> SelectV1Broadcast(const sdk::Shape& c_shape,
                                                  const sdk::Shape& t_shape,
                                                  const sdk::Shape& e_shape) {
  if (t_shape != e_shape)
    return sdk::InvalidArgument("'t' and 'e' must have the same shape, got ",
                                sdk::ShapeString(t_shape), " and ", sdk::ShapeString(e_shape));
  sdk::Shape c_as_t = c_shape;  // the condition's shape, as it broadcasts against t
  if (c_shape.size() == 1 && t_shape.size() > 1) {
    if (c_shape[0] != t_shape[0])
      return sdk::InvalidArgument("'condition' is a vector of ", c_shape[0],
                                  " elements but 't' has ", t_shape[0], " rows (shape ",
                                  sdk::ShapeString(t_shape), "); they must match");
    c_as_t.assign(t_shape.size(), 1);
    c_as_t[0] = c_shape[0];
  } else if (!c_shape.empty() && c_shape != t_shape) {
    return sdk::InvalidArgument(
        "'condition' must be a scalar, have the shape of 't', or be a vector as long as the "
        "first dimension of 't'; got condition ",
        sdk::ShapeString(c_shape), " and t ", sdk::ShapeString(t_shape));
  }
  return sdk::PlanBroadcast({{"condition", c_as_t}, {"t", t_shape}, {"e", e_shape}});
}

// Select (kV2 = false) and SelectV2 (kV2 = true) on T values.
template <typename T, bool kV2>
class SelectKernel {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    CFX_SDK_RETURN_IF_ERROR(ExpectInputs(ctx, {CFX_BOOL, sdk::kDType<T>, sdk::kDType<T>}));
    sdk::Tensor condition = ctx.input(0), t = ctx.input(1), e = ctx.input(2);
    CFX_SDK_ASSIGN_OR_RETURN(
        sdk::BroadcastPlan b,
        kV2 ? sdk::PlanBroadcast(
                  {{"condition", condition.shape()}, {"t", t.shape()}, {"e", e.shape()}})
            : SelectV1Broadcast(condition.shape(), t.shape(), e.shape()));
    // A scalar condition picks one whole input (no copy) when that input needs no broadcasting.
    if (condition.rank() == 0) {
      sdk::Tensor picked = *condition.data<bool>() ? t : e;
      if (picked.shape() == b.output_shape) return ctx.SetOutput(0, picked);
    }
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out,
                             ctx.ForwardOrAllocateOutput({1, 2}, 0, b.output_shape));
    RunBroadcast(ctx, b, SelectFn::kCost, SelectFn(), out.data<T>(), condition.data<bool>(),
                 t.data<T>(), e.data<T>());
    return sdk::Status();
  }
};

template <bool kV2>
struct SelectVersion {
  template <typename T>
  using Kernel = SelectKernel<T, kV2>;
};

}  // namespace

void RegisterSelectKernels(sdk::Plugin& p) {
  RegisterForTypes<SelectVersion<false>::Kernel, float, double, int32_t, int64_t, bool>(p,
                                                                                        "Select");
  RegisterForTypes<SelectVersion<true>::Kernel, float, double, int32_t, int64_t, bool>(p,
                                                                                       "SelectV2");
}

}  // namespace cfx::cpu
