// FusedBatchNormV3 and FusedBatchNormGradV3 on CUDA (T = U = float), in every data format the CPU
// kernels take (NHWC, NCHW, NDHWC, NCDHW), training and inference. The ops are the ops-nn
// plugin's; attrs and inputs are checked with the rules its CPU kernels use
// (conflux/sdk/batch_norm_rules.h), and the outputs are the CPU's: reserve_space_1 and _2 hold the
// mean and the (biased) variance that normalized x, so that either device's gradient kernel takes
// either device's forward outputs, and reserve_space_3 is a scalar 0. An empty x gives NaN
// statistics and zero scale and offset gradients.
//
// The device code (batch_norm.cu) is its own, not cuDNN's: per-channel sums in double over a
// grid fixed by the shape (deterministic), then the CPU's formulas. Launches only enqueue;
// the kernels keep no per-step state, so they may run concurrently.
#include <string>

#include "conflux/sdk/batch_norm_rules.h"
#include "cuda_common.h"
#include "kernels/batch_norm_launch.h"
#include "kernels/kernels.h"

namespace cfx::cuda {
namespace {

// The scratch buffers of a launch (freed in stream order after the launches that use them).
struct Scratch {
  sdk::TensorRef partials, coefficients;
};

sdk::Status AllocateScratch(sdk::KernelContext& ctx, const BatchNormPlan& plan, bool partials,
                            Scratch* s) {
  if (plan.empty()) return sdk::Status();
  CFX_SDK_ASSIGN_OR_RETURN(s->coefficients,
                           ctx.AllocateTemp(CFX_FLOAT, {BatchNormCoefficients(plan)}));
  if (partials) {
    CFX_SDK_ASSIGN_OR_RETURN(s->partials, ctx.AllocateTemp(CFX_DOUBLE, {BatchNormPartials(plan)}));
  }
  return sdk::Status();
}

float* Coefficients(const Scratch& s) {
  return s.coefficients.handle() != nullptr ? s.coefficients.view().data<float>() : nullptr;
}
double* Partials(const Scratch& s) {
  return s.partials.handle() != nullptr ? s.partials.view().data<double>() : nullptr;
}

class BatchNormKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) {
    node_ = init.node_name();
    return attrs_.Read(init.attrs());
  }

  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    const sdk::Tensor x = ctx.input(0), scale = ctx.input(1), offset = ctx.input(2),
                      mean = ctx.input(3), variance = ctx.input(4);
    sdk::BatchNormLayout l;
    CFX_SDK_RETURN_IF_ERROR(
        sdk::CheckBatchNormInputs(attrs_, x, scale, offset, mean, variance, &l));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::BatchNormOutputs out,
                             sdk::AllocateBatchNormOutputs(ctx, x.shape(), l.channels));
    cfx_device* dev = ctx.device();
    CFX_SDK_RETURN_IF_ERROR(DeviceScope(dev));
    const cudaStream_t stream = Stream(ctx);
    CFX_SDK_RETURN_IF_ERROR(
        CudaCheck(cudaMemsetAsync(out.reserve_3.raw_data(), 0, sizeof(float), stream), dev->name,
                  "cudaMemsetAsync of " + node_ + "'s reserve_space_3"));
    BatchNormForwardArgs a;
    a.plan = PlanBatchNorm(l.outer, l.channels, l.inner);
    a.training = attrs_.is_training;
    a.epsilon = attrs_.epsilon;
    a.exponential_avg_factor = attrs_.exponential_avg_factor;
    Scratch scratch;
    CFX_SDK_RETURN_IF_ERROR(AllocateScratch(ctx, a.plan, a.training, &scratch));
    a.x = x.data<float>();
    a.scale = scale.data<float>();
    a.offset = offset.data<float>();
    if (attrs_.uses_statistics()) {
      a.mean = mean.data<float>();
      a.variance = variance.data<float>();
    }
    a.y = out.y.data<float>();
    a.batch_mean = out.batch_mean.data<float>();
    a.batch_variance = out.batch_variance.data<float>();
    a.saved_mean = out.saved_mean.data<float>();
    a.saved_variance = out.saved_variance.data<float>();
    a.partials = Partials(scratch);
    a.coefficients = Coefficients(scratch);
    CFX_SDK_RETURN_IF_ERROR(
        CudaCheck(LaunchBatchNormForward(a, stream), dev->name, "launch of " + node_));
    return CompleteAsync(ctx, done);
  }

 private:
  std::string node_;
  sdk::BatchNormAttrs attrs_;
};

class BatchNormGradKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) {
    node_ = init.node_name();
    return attrs_.Read(init.attrs());
  }

  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    const sdk::Tensor dy = ctx.input(0), x = ctx.input(1), scale = ctx.input(2),
                      mean = ctx.input(3), variance = ctx.input(4);
    sdk::BatchNormLayout l;
    CFX_SDK_RETURN_IF_ERROR(
        sdk::CheckBatchNormGradInputs(attrs_, dy, x, scale, mean, variance, &l));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::BatchNormGradOutputs out,
                             sdk::AllocateBatchNormGradOutputs(ctx, x.shape(), l.channels));
    cfx_device* dev = ctx.device();
    CFX_SDK_RETURN_IF_ERROR(DeviceScope(dev));
    BatchNormGradArgs a;
    a.plan = PlanBatchNorm(l.outer, l.channels, l.inner);
    a.training = attrs_.is_training;
    a.epsilon = attrs_.epsilon;
    Scratch scratch;
    CFX_SDK_RETURN_IF_ERROR(AllocateScratch(ctx, a.plan, /*partials=*/true, &scratch));
    a.dy = dy.data<float>();
    a.x = x.data<float>();
    a.scale = scale.data<float>();
    a.mean = mean.data<float>();
    a.variance = variance.data<float>();
    a.dx = out.x_backprop.data<float>();
    a.scale_backprop = out.scale_backprop.data<float>();
    a.offset_backprop = out.offset_backprop.data<float>();
    a.partials = Partials(scratch);
    a.coefficients = Coefficients(scratch);
    CFX_SDK_RETURN_IF_ERROR(
        CudaCheck(LaunchBatchNormGrad(a, Stream(ctx)), dev->name, "launch of " + node_));
    return CompleteAsync(ctx, done);
  }

 private:
  std::string node_;
  sdk::BatchNormAttrs attrs_;
};

}  // namespace

void RegisterBatchNormKernels(sdk::Plugin& p) {
  p.AsyncKernel<BatchNormKernel>("FusedBatchNormV3", kDeviceType)
      .TypeConstraint("T", CFX_FLOAT)
      .TypeConstraint("U", CFX_FLOAT)
      .Inexpensive();
  p.AsyncKernel<BatchNormGradKernel>("FusedBatchNormGradV3", kDeviceType)
      .TypeConstraint("T", CFX_FLOAT)
      .TypeConstraint("U", CFX_FLOAT)
      .Inexpensive();
}

}  // namespace cfx::cuda
