// AddN on CPU for float, double, int32 and int64: the element-wise sum of N inputs of one shape
// (no broadcasting), integers wrapping around as in Add.
//
// It runs on the element-wise loop of broadcast.h with up to three operands a pass:
// sum = in0 + in1 (+ in2), then sum = sum + in3 (+ in4), and so on. That is TensorFlow's order of
// the additions (left to right), in about N/2 passes over the output rather than N - 1.
// Stateless: Compute may run concurrently.
#include <string>
#include <vector>

#include "conflux/sdk/shape_rules.h"
#include "kernels/broadcast.h"
#include "kernels/util.h"

namespace cfx::cpu {
namespace {

using Add2Fn = ElementFn<1, [](auto a, auto b) { return WrappingAdd(a, b); }>;
using Add3Fn =
    ElementFn<2, [](auto a, auto b, auto c) { return WrappingAdd(WrappingAdd(a, b), c); }>;

template <typename T>
class AddNKernel {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    const int n = ctx.num_inputs();
    if (n < 1) return sdk::InvalidArgument("AddN needs at least one input");
    CFX_SDK_RETURN_IF_ERROR(ExpectInputs(ctx, std::vector<cfx_dtype>(n, sdk::kDType<T>)));
    std::vector<sdk::Shape> shapes;
    for (int i = 0; i < n; ++i) shapes.push_back(ctx.input(i).shape());
    sdk::Shape shape;
    const std::string error = shape_rules::MergeSameShapes(shapes, &shape);
    if (!error.empty()) return sdk::InvalidArgument(error);
    if (n == 1) return ctx.SetOutput(0, ctx.input(0));
    // The sum may take the buffer of an input of the first pass, which reads each element before
    // writing it; later passes read inputs that are not candidates.
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out,
                             n == 2 ? ctx.ForwardOrAllocateOutput({0, 1}, 0, shape)
                                    : ctx.ForwardOrAllocateOutput({0, 1, 2}, 0, shape));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::BroadcastPlan two,
                             sdk::PlanBroadcast({{"x", shape}, {"y", shape}}));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::BroadcastPlan three,
                             sdk::PlanBroadcast({{"x", shape}, {"y", shape}, {"z", shape}}));
    T* sum = out.data<T>();
    auto in = [&](int i) -> const T* { return ctx.input(i).data<T>(); };
    // sum = first + in(k) (+ in(k + 1)); returns the next input to fold.
    auto fold = [&](const T* first, int k) {
      if (k + 1 < n) {
        RunBroadcast(ctx, three, Add3Fn::kCost, Add3Fn(), sum, first, in(k), in(k + 1));
        return k + 2;
      }
      RunBroadcast(ctx, two, Add2Fn::kCost, Add2Fn(), sum, first, in(k));
      return k + 1;
    };
    for (int k = fold(in(0), 1); k < n;) k = fold(sum, k);
    return sdk::Status();
  }
};

}  // namespace

void RegisterAddNKernels(sdk::Plugin& p) {
  RegisterForTypes<AddNKernel, float, double, int32_t, int64_t>(p, "AddN");
}

}  // namespace cfx::cpu
