// Optimizer updates of variables in GPU memory, in place (float): ApplyGradientDescent,
// ApplyMomentum, ApplyAdam and ApplyRMSProp on reference inputs from VariableV2 (updated in the
// variable's own buffer; `out` is the same reference), and their ResourceApply* forms on resource
// variables (handles in host memory). Locking and copy on write are sdk::UpdateVariables'
// (variable_update.h): the update is enqueued while the variables are locked, and every later
// reader or writer of them runs after it on the device's compute stream. The formulas and the
// checks and messages are the CPU kernels' (plugins/cpu/kernels/training.cc).
//
// The hyper-parameters (lr, beta1_power, ...) stay device tensors read by the kernel: in a
// training graph they are variables or ops on the GPU (Adam's beta powers are updated every
// step), and declaring them host memory would make every step copy them to the host and wait
// for the stream before the update could even be enqueued. Only their shapes and dtypes, which
// the host knows, are checked here.
#include <iterator>
#include <span>
#include <string>
#include <vector>

#include "conflux/sdk/variable_update.h"
#include "cuda_common.h"
#include "kernels/kernels.h"
#include "kernels/training_launch.h"

namespace cfx::cuda {
namespace {

using Input = sdk::VariableInput;

// The scalar input `in`: float, rank 0.
sdk::Status CheckScalar(const sdk::KernelContext& ctx, Input in) {
  const sdk::Tensor t = ctx.input(in.index);
  if (t.dtype() != CFX_FLOAT)
    return sdk::InvalidArgument(in.name, " is ", sdk::DTypeName(t.dtype()), " but T is float");
  if (t.rank() != 0)
    return sdk::InvalidArgument(in.name, " must be a scalar, got shape ",
                                sdk::ShapeString(t.shape()));
  return sdk::Status();
}

// The variables' values hold float and all have the first one's shape, as has `grad`.
sdk::Status CheckShapes(std::span<const Input> variables, const std::vector<sdk::Tensor>& values,
                        Input grad_input, const sdk::Tensor& grad) {
  for (size_t k = 0; k < values.size(); ++k) {
    if (values[k].dtype() != CFX_FLOAT)
      return sdk::InvalidArgument(variables[k].name, ": the variable holds ",
                                  sdk::DTypeName(values[k].dtype()), " but T is float");
  }
  auto same_shape = [&](Input in, const sdk::Tensor& t) {
    if (t.shape() == values[0].shape()) return sdk::Status();
    return sdk::InvalidArgument(variables[0].name, " has shape ",
                                sdk::ShapeString(values[0].shape()), " and ", in.name,
                                " has shape ", sdk::ShapeString(t.shape()), "; they must be equal");
  };
  for (size_t k = 1; k < values.size(); ++k)
    CFX_SDK_RETURN_IF_ERROR(same_shape(variables[k], values[k]));
  if (grad.dtype() != CFX_FLOAT)
    return sdk::InvalidArgument(grad_input.name, " is ", sdk::DTypeName(grad.dtype()),
                                " but T is float");
  return same_shape(grad_input, grad);
}

// The rules' inputs: variables first, then the scalars, then the gradient, as the ops list them
// (the order training_launch.h expects).
struct GradientDescent {
  static constexpr ApplyRule kRule = ApplyRule::kGradientDescent;
  static constexpr bool kHasNesterov = false;
  static constexpr Input kVariables[] = {{0, "var"}};
  static constexpr Input kScalars[] = {{1, "alpha"}};
  static constexpr Input kGradient = {2, "delta"};
};
struct Momentum {
  static constexpr ApplyRule kRule = ApplyRule::kMomentum;
  static constexpr bool kHasNesterov = true;
  static constexpr Input kVariables[] = {{0, "var"}, {1, "accum"}};
  static constexpr Input kScalars[] = {{2, "lr"}, {4, "momentum"}};
  static constexpr Input kGradient = {3, "grad"};
};
struct Adam {
  static constexpr ApplyRule kRule = ApplyRule::kAdam;
  static constexpr bool kHasNesterov = true;
  static constexpr Input kVariables[] = {{0, "var"}, {1, "m"}, {2, "v"}};
  static constexpr Input kScalars[] = {{3, "beta1_power"}, {4, "beta2_power"}, {5, "lr"},
                                       {6, "beta1"},       {7, "beta2"},       {8, "epsilon"}};
  static constexpr Input kGradient = {9, "grad"};
};
struct RMSProp {
  static constexpr ApplyRule kRule = ApplyRule::kRMSProp;
  static constexpr bool kHasNesterov = false;
  static constexpr Input kVariables[] = {{0, "var"}, {1, "ms"}, {2, "mom"}};
  static constexpr Input kScalars[] = {{3, "lr"}, {4, "rho"}, {5, "momentum"}, {6, "epsilon"}};
  static constexpr Input kGradient = {7, "grad"};
};

// Apply<Rule> and ResourceApply<Rule>: both take their variables through UpdateVariables, which
// tells references from resource handles.
template <typename Rule>
class ApplyKernel {
 public:
  static_assert(std::size(Rule::kVariables) <= kMaxApplyVariables);
  static_assert(std::size(Rule::kScalars) <= kMaxApplyScalars);

  sdk::Status Init(const sdk::KernelInit& init) {
    node_ = init.node_name();
    CFX_SDK_RETURN_IF_ERROR(init.attrs().GetOr("use_locking", &use_locking_, false));
    if constexpr (Rule::kHasNesterov)
      CFX_SDK_RETURN_IF_ERROR(init.attrs().GetOr("use_nesterov", &use_nesterov_, false));
    return sdk::Status();
  }

  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    ApplyArgs args;
    args.rule = Rule::kRule;
    args.nesterov = use_nesterov_;
    for (size_t k = 0; k < std::size(Rule::kScalars); ++k) {
      CFX_SDK_RETURN_IF_ERROR(CheckScalar(ctx, Rule::kScalars[k]));
      args.scalars[k] = ctx.input(Rule::kScalars[k].index).template data<float>();
    }
    const sdk::Tensor grad = ctx.input(Rule::kGradient.index);
    cfx_device* dev = ctx.device();
    CFX_SDK_RETURN_IF_ERROR(DeviceScope(dev));
    CFX_SDK_RETURN_IF_ERROR(sdk::UpdateVariables(
        ctx, Rule::kVariables, use_locking_,
        [&](const std::vector<sdk::Tensor>& values) -> sdk::Status {
          CFX_SDK_RETURN_IF_ERROR(CheckShapes(Rule::kVariables, values, Rule::kGradient, grad));
          args.n = values[0].num_elements();
          if (args.n == 0) return sdk::Status();
          for (size_t k = 0; k < values.size(); ++k)
            args.variables[k] = values[k].template data<float>();
          args.grad = grad.data<float>();
          return CudaCheck(LaunchApply(args, Stream(ctx)), dev->name,
                           "launch of the update of " + node_);
        }));
    return CompleteAsync(ctx, done);
  }

 private:
  std::string node_;
  bool use_locking_ = false;
  bool use_nesterov_ = false;
};

// `name` (e.g. "Adam") as Apply<name> on references and ResourceApply<name> on resource handles,
// which stay in host memory.
template <typename Rule>
void RegisterRule(sdk::Plugin& p, const std::string& name) {
  p.AsyncKernel<ApplyKernel<Rule>>(("Apply" + name).c_str(), kDeviceType)
      .TypeConstraint("T", CFX_FLOAT)
      .Inexpensive();
  auto resource = p.AsyncKernel<ApplyKernel<Rule>>(("ResourceApply" + name).c_str(), kDeviceType);
  resource.TypeConstraint("T", CFX_FLOAT);
  for (const Input& in : Rule::kVariables) resource.HostMemory(in.name);
}

}  // namespace

void RegisterTrainingKernels(sdk::Plugin& p) {
  RegisterRule<GradientDescent>(p, "GradientDescent");
  RegisterRule<Momentum>(p, "Momentum");
  RegisterRule<Adam>(p, "Adam");
  RegisterRule<RMSProp>(p, "RMSProp");
}

}  // namespace cfx::cuda
