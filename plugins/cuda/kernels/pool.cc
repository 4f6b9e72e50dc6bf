// MaxPool, MaxPoolGrad, AvgPool and AvgPoolGrad on CUDA (float, NHWC), with the CPU's window
// rules (conflux/sdk/window_geometry.h) and results: the device code (window.cu) scans each
// window in the CPU's order, so outputs agree bit for bit. Any padding, SAME, VALID or EXPLICIT,
// symmetric or not.
#include <string>

#include "conflux/sdk/window_geometry.h"
#include "cuda_common.h"
#include "kernels/kernels.h"
#include "kernels/window_launch.h"

namespace cfx::cuda {
namespace {

using shape_rules::ShapeStr;

// The window of `attrs` over an NHWC input of shape `input`.
sdk::Result<PoolWindow> MakeWindow(const sdk::PoolAttrs& attrs, const sdk::Shape& input) {
  if (input.size() != 4)
    return sdk::InvalidArgument("input must have rank 4 (NHWC), got shape ", ShapeStr(input));
  sdk::WindowDim h, w;
  CFX_SDK_RETURN_IF_ERROR(sdk::ComputeWindows(attrs.window, input[1], input[2], attrs.kernel_h,
                                              attrs.kernel_w, &h, &w));
  PoolWindow p;
  p.n = input[0];
  p.c = input[3];
  p.in_h = h.in;
  p.in_w = w.in;
  p.out_h = h.out;
  p.out_w = w.out;
  p.kernel_h = h.kernel;
  p.kernel_w = w.kernel;
  p.stride_h = h.stride;
  p.stride_w = w.stride;
  p.pad_h = h.pad_before;
  p.pad_w = w.pad_before;
  return p;
}

sdk::Shape OutputShape(const PoolWindow& w) { return {w.n, w.out_h, w.out_w, w.c}; }

class PoolKernelBase {
 public:
  sdk::Status Init(const sdk::KernelInit& init) {
    return sdk::ReadPoolAttrs(init.attrs(), &attrs_);
  }

 protected:
  // Enqueues `launch` when the output is not empty, then completes the kernel.
  template <typename Launch>
  static sdk::Status Finish(sdk::KernelContext& ctx, int64_t elements, const char* what,
                            Launch&& launch, sdk::AsyncDone done) {
    if (elements == 0) {
      done();
      return sdk::Status();
    }
    CFX_SDK_RETURN_IF_ERROR(DeviceScope(ctx.device()));
    CFX_SDK_RETURN_IF_ERROR(CudaCheck(launch(Stream(ctx)), ctx.device()->name, what));
    return CompleteAsync(ctx, done);
  }

  sdk::PoolAttrs attrs_;
};

template <PoolFn F>
class PoolKernel : public PoolKernelBase {
 public:
  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    const sdk::Tensor x = ctx.input(0);
    CFX_SDK_ASSIGN_OR_RETURN(PoolWindow w, MakeWindow(attrs_, x.shape()));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor y, ctx.AllocateOutput(0, OutputShape(w)));
    return Finish(
        ctx, y.num_elements(), F == PoolFn::kMax ? "launch of MaxPool" : "launch of AvgPool",
        [&](cudaStream_t s) { return LaunchPool(F, w, x.data<float>(), y.data<float>(), s); },
        done);
  }
};

class MaxPoolGradKernel : public PoolKernelBase {
 public:
  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    const sdk::Tensor x = ctx.input(0), y = ctx.input(1), dy = ctx.input(2);
    CFX_SDK_ASSIGN_OR_RETURN(PoolWindow w, MakeWindow(attrs_, x.shape()));
    if (y.shape() != OutputShape(w) || dy.shape() != OutputShape(w))
      return sdk::InvalidArgument("orig_output (", ShapeStr(y.shape()), ") and grad (",
                                  ShapeStr(dy.shape()), ") must have the pooled shape ",
                                  ShapeStr(OutputShape(w)), " of orig_input ", ShapeStr(x.shape()));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor dx, ctx.AllocateOutput(0, x.shape()));
    return Finish(
        ctx, dx.num_elements(), "launch of MaxPoolGrad",
        [&](cudaStream_t s) {
          return LaunchMaxPoolGrad(w, x.data<float>(), dy.data<float>(), dx.data<float>(), s);
        },
        done);
  }
};

class AvgPoolGradKernel : public PoolKernelBase {
 public:
  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    const sdk::Tensor sizes = ctx.input(0), dy = ctx.input(1);
    if (sizes.rank() != 1 || sizes.num_elements() != 4)
      return sdk::InvalidArgument("orig_input_shape must be a vector of 4 elements, got shape ",
                                  ShapeStr(sizes.shape()));
    const sdk::Shape input(sizes.data<int32_t>(), sizes.data<int32_t>() + 4);
    for (int64_t d : input)
      if (d < 0)
        return sdk::InvalidArgument("orig_input_shape ", ShapeStr(input),
                                    " has a negative dimension");
    CFX_SDK_ASSIGN_OR_RETURN(PoolWindow w, MakeWindow(attrs_, input));
    if (dy.shape() != OutputShape(w))
      return sdk::InvalidArgument("grad has shape ", ShapeStr(dy.shape()), " but pooling ",
                                  ShapeStr(input), " gives ", ShapeStr(OutputShape(w)));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor dx, ctx.AllocateOutput(0, input));
    return Finish(
        ctx, dx.num_elements(), "launch of AvgPoolGrad",
        [&](cudaStream_t s) { return LaunchAvgPoolGrad(w, dy.data<float>(), dx.data<float>(), s); },
        done);
  }
};

}  // namespace

void RegisterPoolKernels(sdk::Plugin& p) {
  p.AsyncKernel<PoolKernel<PoolFn::kMax>>("MaxPool", kDeviceType)
      .TypeConstraint("T", CFX_FLOAT)
      .Inexpensive();
  p.AsyncKernel<MaxPoolGradKernel>("MaxPoolGrad", kDeviceType)
      .TypeConstraint("T", CFX_FLOAT)
      .Inexpensive();
  p.AsyncKernel<PoolKernel<PoolFn::kAvg>>("AvgPool", kDeviceType)
      .TypeConstraint("T", CFX_FLOAT)
      .Inexpensive();
  p.AsyncKernel<AvgPoolGradKernel>("AvgPoolGrad", kDeviceType)
      .TypeConstraint("T", CFX_FLOAT)
      .HostMemory("orig_input_shape")
      .Inexpensive();
}

}  // namespace cfx::cuda
