// Gradient-descent updates of variables held in OpenCL memory (float): ApplyGradientDescent (a
// reference input from VariableV2, updated in the variable's own buffer; out is the same
// reference) and ResourceApplyGradientDescent (a resource variable, under its exclusive lock; its
// handle lives in host memory). The update is enqueued while the lock is held; later readers and
// writers of the variable enqueue after it on the in-order queue, so they see the new value.
#include <cstdint>
#include <vector>

#include "kernels/kernels.h"
#include "opencl_runtime.h"

namespace cfx::ocl {
namespace {

const ProgramSource kTraining = {"training", R"CLC(
/* var -= alpha * delta, in place. */
__kernel void apply_gradient_descent(__global float* var, __global const float* alpha,
                                     __global const float* delta, const long n) {
  const long i = get_global_id(0);
  if (i >= n) return;
  var[i] -= alpha[0] * delta[i];
}
)CLC"};

// Validates and enqueues var -= alpha * delta (alpha: a device scalar).
sdk::Status EnqueueGradientDescent(sdk::KernelContext& ctx, const sdk::Tensor& var,
                                   const sdk::Tensor& alpha, const sdk::Tensor& delta) {
  if (var.dtype() != CFX_FLOAT)
    return sdk::InvalidArgument("var: the variable holds ", sdk::DTypeName(var.dtype()),
                                " but T is float");
  if (alpha.dtype() != CFX_FLOAT || delta.dtype() != CFX_FLOAT)
    return sdk::InvalidArgument("alpha and delta must be float, got ",
                                sdk::DTypeName(alpha.dtype()), " and ",
                                sdk::DTypeName(delta.dtype()));
  if (alpha.rank() != 0)
    return sdk::InvalidArgument("alpha must be a scalar, got shape ",
                                sdk::ShapeString(alpha.shape()));
  if (var.shape() != delta.shape())
    return sdk::InvalidArgument("var has shape ", sdk::ShapeString(var.shape()),
                                " and delta has shape ", sdk::ShapeString(delta.shape()),
                                "; they must be equal");
  const int64_t n = var.num_elements();
  if (n == 0) return sdk::Status();
  CFX_SDK_ASSIGN_OR_RETURN(KernelFunction * k,
                           GetKernel(ctx.device(), kTraining, "apply_gradient_descent"));
  return Enqueue(ctx, k, Elementwise1D(ctx.device(), n), {Mem(var), Mem(alpha), Mem(delta), n});
}

// ApplyGradientDescent (a reference input, locked when use_locking) and
// ResourceApplyGradientDescent (a resource input, always locked): the update is enqueued while the
// variable is locked (sdk::UpdateVariables).
class ApplyGradientDescentKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) {
    return init.attrs().GetOr("use_locking", &use_locking_, false);
  }

  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    CFX_SDK_RETURN_IF_ERROR(sdk::UpdateVariables(
        ctx, {{0, "var"}}, use_locking_, [&](const std::vector<sdk::Tensor>& var) {
          return EnqueueGradientDescent(ctx, var[0], ctx.input(1), ctx.input(2));
        }));
    return CompleteAsync(ctx, done);
  }

 private:
  bool use_locking_ = false;
};

}  // namespace

void RegisterTrainingKernels(sdk::Plugin& p) {
  p.AsyncKernel<ApplyGradientDescentKernel>("ApplyGradientDescent", kDeviceType)
      .TypeConstraint("T", CFX_FLOAT)
      .Inexpensive();
  p.AsyncKernel<ApplyGradientDescentKernel>("ResourceApplyGradientDescent", kDeviceType)
      .TypeConstraint("T", CFX_FLOAT)
      .HostMemory("var");
}

}  // namespace cfx::ocl
