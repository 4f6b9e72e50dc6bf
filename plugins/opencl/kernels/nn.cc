// Neural-network ops on OpenCL (float): BiasAdd (data_format NHWC or NCHW), Softmax and
// LogSoftmax over the last dimension. The ops are defined by the ops-nn plugin; inputs are
// validated with its layout rules so that both devices refuse the same inputs the same way.
#include <cstdint>
#include <string>

#include "conflux/sdk/data_format.h"
#include "kernels/kernels.h"
#include "opencl_runtime.h"

namespace cfx::ocl {
namespace {

const ProgramSource kNN = {"nn", R"CLC(
/* One work-group per row of D elements: the row's max, then the sum of exp(x - max). */
__kernel void softmax(__global float* out, __global const float* in, const long D,
                      const int log_softmax) {
  const long row = get_group_id(0);
  const int lid = get_local_id(0), ls = get_local_size(0);
  __global const float* x = in + row * D;
  __global float* y = out + row * D;
  __local float scratch[256];
  float m = -INFINITY;
  for (long i = lid; i < D; i += ls) m = fmax(m, x[i]);
  scratch[lid] = m;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = ls / 2; s > 0; s >>= 1) {
    if (lid < s) scratch[lid] = fmax(scratch[lid], scratch[lid + s]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  m = scratch[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  float sum = 0.0f;
  for (long i = lid; i < D; i += ls) sum += exp(x[i] - m);
  scratch[lid] = sum;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = ls / 2; s > 0; s >>= 1) {
    if (lid < s) scratch[lid] += scratch[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  sum = scratch[0];
  if (log_softmax) {
    const float shift = m + log(sum);
    for (long i = lid; i < D; i += ls) y[i] = x[i] - shift;
  } else {
    const float scale = 1.0f / sum;
    for (long i = lid; i < D; i += ls) y[i] = exp(x[i] - m) * scale;
  }
}

/* out[i] = value[i] + bias[(i / inner) % channels]; inner = 1 for NHWC, H*W for NCHW. */
__kernel void bias_add(__global float* out, __global const float* value,
                       __global const float* bias, const long channels, const long inner,
                       const long n) {
  const long i = get_global_id(0);
  if (i >= n) return;
  out[i] = value[i] + bias[(i / inner) % channels];
}
)CLC"};

// A power of two <= 256 and no larger than `n` rounded up to one.
size_t ReductionGroupSize(int64_t n) {
  size_t local = 1;
  while (local < 256 && static_cast<int64_t>(local) < n) local *= 2;
  return local;
}

class BiasAddKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) {
    return sdk::ReadDataFormat(init.attrs(), &format_);
  }

  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    CFX_SDK_RETURN_IF_ERROR(ExpectInputs(ctx, {CFX_FLOAT, CFX_FLOAT}));
    const sdk::Tensor value = ctx.input(0), bias = ctx.input(1);
    const sdk::Shape shape = value.shape();
    CFX_SDK_RETURN_IF_ERROR(
        sdk::CheckChanneledRank(value.rank(), sdk::ShapeString(shape), "value"));
    if (bias.rank() != 1)
      return sdk::InvalidArgument("bias must be 1-D, got shape ", sdk::ShapeString(bias.shape()));
    const int cdim = sdk::ChannelDim(format_, value.rank());
    const int64_t channels = shape[cdim];
    int64_t inner = 1;
    for (int d = cdim + 1; d < value.rank(); ++d) inner *= shape[d];
    if (bias.dim(0) != channels)
      return sdk::InvalidArgument("bias has ", bias.dim(0), " elements but the channel dimension ",
                                  "of value (shape ", sdk::ShapeString(shape), ", data_format ",
                                  sdk::FormatName(format_), ") has size ", channels,
                                  "; they must be equal");
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.ForwardOrAllocateOutput({0}, 0, shape));
    const int64_t n = value.num_elements();
    if (n == 0) {
      done();
      return sdk::Status();
    }
    CFX_SDK_ASSIGN_OR_RETURN(KernelFunction * k, GetKernel(ctx.device(), kNN, "bias_add"));
    CFX_SDK_RETURN_IF_ERROR(Enqueue(ctx, k, Elementwise1D(ctx.device(), n),
                                    {Mem(out), Mem(value), Mem(bias), channels, inner, n}));
    return CompleteAsync(ctx, done);
  }

 private:
  sdk::DataFormat format_ = sdk::DataFormat::kNHWC;
};

template <bool kLog>
class SoftmaxKernel {
 public:
  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    CFX_SDK_RETURN_IF_ERROR(ExpectInputs(ctx, {CFX_FLOAT}));
    const sdk::Tensor logits = ctx.input(0);
    const sdk::Shape shape = logits.shape();
    if (logits.rank() < 1)
      return sdk::InvalidArgument("logits must have rank >= 1 (softmax runs over the last ",
                                  "dimension), got shape ", sdk::ShapeString(shape));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, shape));
    const int64_t d = shape.back();
    const int64_t n = logits.num_elements();
    if (n == 0) {
      done();
      return sdk::Status();
    }
    const size_t local = ReductionGroupSize(d);
    CFX_SDK_ASSIGN_OR_RETURN(KernelFunction * k, GetKernel(ctx.device(), kNN, "softmax"));
    NDRange range;
    range.local[0] = local;
    range.global[0] = static_cast<size_t>(n / d) * local;
    CFX_SDK_RETURN_IF_ERROR(
        Enqueue(ctx, k, range, {Mem(out), Mem(logits), d, int32_t{kLog ? 1 : 0}}));
    return CompleteAsync(ctx, done);
  }
};

}  // namespace

void RegisterNNKernels(sdk::Plugin& p) {
  p.AsyncKernel<BiasAddKernel>("BiasAdd", kDeviceType).TypeConstraint("T", CFX_FLOAT).Inexpensive();
  p.AsyncKernel<SoftmaxKernel<false>>("Softmax", kDeviceType)
      .TypeConstraint("T", CFX_FLOAT)
      .Inexpensive();
  p.AsyncKernel<SoftmaxKernel<true>>("LogSoftmax", kDeviceType)
      .TypeConstraint("T", CFX_FLOAT)
      .Inexpensive();
}

}  // namespace cfx::ocl
