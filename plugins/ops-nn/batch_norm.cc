// FusedBatchNormV3 and FusedBatchNormGradV3 with TensorFlow's op definitions and CPU semantics.
//
// Forward, is_training = true: the batch's per-channel mean m and biased variance v normalize x:
//   y = (x - m) / sqrt(v + epsilon) * scale + offset;
//   batch_mean = m, batch_variance = v * n / (n - 1) (Bessel's correction, n = elements per
//   channel, n - 1 taken as 1 when n = 1), or with exponential_avg_factor f != 1 the running
//   averages (1 - f) * mean + f * m and (1 - f) * variance + f * v * n / (n - 1);
//   reserve_space_1 = m, reserve_space_2 = v (the variance, as TensorFlow's CPU kernel keeps it;
//   cuDNN keeps the inverse standard deviation there), reserve_space_3 = a scalar 0.
// Forward, is_training = false: mean and variance are the population statistics; batch_mean and
//   batch_variance pass them through, and so do reserve_space_1 and _2 (TensorFlow's CPU kernel
//   leaves those unset; passing the statistics makes them valid FusedBatchNormGradV3 inputs).
// An empty x gives NaN batch statistics (and reserve spaces), as in TensorFlow.
// Grad: reserve_space_1 and _2 are the mean and variance the forward op used (batch statistics
//   in training, population statistics in inference); x_backprop, scale_backprop and
//   offset_backprop are the gradients of the forward op's y; reserve_space_4 and _5 are empty.
//
// All four data formats work (NHWC/NDHWC as rows of channels, NCHW/NCDHW as per-channel planes);
// TensorFlow's inference-mode gradient on CPU takes NHWC only. epsilon must be finite and >= 0
// and exponential_avg_factor finite (TensorFlow does not check; a NaN there only gives NaNs).
//
// Why loops (batch_norm_sweeps.h) rather than oneDNN's batch normalization primitives: on CNN
// activation shapes they are as fast or faster (bench/batch_norm_bench.cc; numbers in
// docs/design.md), and they need neither a oneDNN link nor a cache of primitives per shape.
// The kernels keep no per-step state: Compute may run concurrently.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "batch_norm_sweeps.h"
#include "conflux/sdk/batch_norm_rules.h"
#include "nn_ops.h"
#include "partial_shapes.h"

namespace cfx::nn {
namespace {

// The attrs, the layout and the kernels' input checks are shared with the other devices'
// kernels (conflux/sdk/batch_norm_rules.h); the shape functions read the attrs the same way.
using sdk::BatchNormAttrs;

// ---- Shape functions.

sdk::Status MergeChannels(const sdk::PartialShape& vec, const char* what, int64_t* channels) {
  sdk::PartialShape v;
  CFX_SDK_RETURN_IF_ERROR(WithRank(vec, 1, what, &v));
  if (!MergeDim(*channels, v.dims[0], channels))
    return sdk::InvalidArgument(what, " has ", v.dims[0], " elements but x has ", *channels,
                                " channels; they must be equal");
  return sdk::Status();
}

sdk::Status BatchNormShape(sdk::ShapeContext& c) {
  BatchNormAttrs a;
  CFX_SDK_RETURN_IF_ERROR(a.Read(c.attrs()));
  sdk::PartialShape x;
  CFX_SDK_RETURN_IF_ERROR(WithRank(c.input(0), a.rank, "x", &x));
  int64_t& channels = x.dims[a.channel_dim()];
  // mean and variance may be empty in training when nothing is averaged.
  const bool stats = a.uses_statistics();
  const char* names[] = {"x", "scale", "offset", "mean", "variance"};
  for (int i = 1; i < (stats ? 5 : 3); ++i)
    CFX_SDK_RETURN_IF_ERROR(MergeChannels(c.input(i), names[i], &channels));
  c.set_output(0, x);
  for (int i = 1; i <= 4; ++i) c.set_output(i, KnownShape({channels}));
  c.set_output(5, sdk::PartialShape());  // device-specific (a scalar on CPU)
  return sdk::Status();
}

sdk::Status BatchNormGradShape(sdk::ShapeContext& c) {
  BatchNormAttrs a;
  CFX_SDK_RETURN_IF_ERROR(a.Read(c.attrs()));
  sdk::PartialShape dy, x;
  CFX_SDK_RETURN_IF_ERROR(WithRank(c.input(0), a.rank, "y_backprop", &dy));
  CFX_SDK_RETURN_IF_ERROR(WithRank(c.input(1), a.rank, "x", &x));
  CFX_SDK_RETURN_IF_ERROR(MergeShapes(dy, "y_backprop", x, "x", &x));
  int64_t& channels = x.dims[a.channel_dim()];
  const char* names[] = {"scale", "reserve_space_1", "reserve_space_2"};
  for (int i = 0; i < 3; ++i)
    CFX_SDK_RETURN_IF_ERROR(MergeChannels(c.input(2 + i), names[i], &channels));
  c.set_output(0, x);
  c.set_output(1, KnownShape({channels}));
  c.set_output(2, KnownShape({channels}));
  c.set_output(3, KnownShape({0}));
  c.set_output(4, KnownShape({0}));
  return sdk::Status();
}

// ---- Kernels.

void Fill(const sdk::Tensor& t, float v) {
  std::fill(t.data<float>(), t.data<float>() + t.num_elements(), v);
}

// Copies `from` into `to` unless they are one buffer (a forwarded input).
void CopyInto(const sdk::Tensor& from, const sdk::Tensor& to) {
  if (from.raw_data() != to.raw_data())
    std::copy(from.data<float>(), from.data<float>() + from.num_elements(), to.data<float>());
}

class BatchNormKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) { return attrs_.Read(init.attrs()); }

  sdk::Status Compute(sdk::KernelContext& ctx) {
    const sdk::Tensor x = ctx.input(0), scale = ctx.input(1), offset = ctx.input(2),
                      mean = ctx.input(3), variance = ctx.input(4);
    ChannelLayout l;
    CFX_SDK_RETURN_IF_ERROR(
        sdk::CheckBatchNormInputs(attrs_, x, scale, offset, mean, variance, &l));
    const sdk::Shape shape = x.shape();
    const int64_t channels = l.channels;
    const bool averaging = attrs_.averaging();

    CFX_SDK_ASSIGN_OR_RETURN(sdk::BatchNormOutputs out,
                             sdk::AllocateBatchNormOutputs(ctx, shape, channels));
    const sdk::Tensor &y = out.y, &batch_mean = out.batch_mean, &batch_var = out.batch_variance,
                      &saved_mean = out.saved_mean, &saved_var = out.saved_variance;
    out.reserve_3.data<float>()[0] = 0.0f;

    if (x.num_elements() == 0) {
      for (const sdk::Tensor& t : {batch_mean, batch_var, saved_mean, saved_var})
        Fill(t, std::numeric_limits<float>::quiet_NaN());
      return sdk::Status();
    }
    const float* scale_v = scale.data<float>();
    const float eps = attrs_.epsilon;
    std::vector<float> a(channels);  // scale / sqrt(variance + epsilon)
    if (!attrs_.is_training) {
      const float* m = mean.data<float>();
      const float* v = variance.data<float>();
      for (int64_t c = 0; c < channels; ++c)
        a[c] = static_cast<float>(scale_v[c] / std::sqrt(static_cast<double>(v[c]) + eps));
      Normalize(ctx, l, x.data<float>(), m, a.data(), offset.data<float>(), y.data<float>());
      for (const sdk::Tensor& t : {batch_mean, saved_mean}) CopyInto(mean, t);
      for (const sdk::Tensor& t : {batch_var, saved_var}) CopyInto(variance, t);
      return sdk::Status();
    }

    // Shift each channel by its first element: the sums are then of deviations near the mean.
    std::vector<float> shift(channels);
    for (int64_t c = 0; c < channels; ++c) shift[c] = x.data<float>()[c * l.inner];
    std::vector<double> sum(channels), sum_sq(channels);
    SumShifted(ctx, l, x.data<float>(), shift.data(), sum.data(), sum_sq.data());
    const double n = static_cast<double>(l.per_channel());
    const double bessel = n / std::max(n - 1.0, 1.0);
    const double f = attrs_.exponential_avg_factor;
    float* m_out = saved_mean.data<float>();
    float* v_out = saved_var.data<float>();
    float* running_mean = batch_mean.data<float>();
    float* running_var = batch_var.data<float>();
    // When forwarded, running_mean is the `mean` input: read each entry before writing it.
    const float* old_mean = mean.data<float>();
    const float* old_var = variance.data<float>();
    // y = (x - shift) * a + (offset - d * a) with d = m - shift: x - shift is exact in float,
    // where x - m would carry the rounding of m (large for data far from zero).
    std::vector<float> b(channels);
    for (int64_t c = 0; c < channels; ++c) {
      const double d = sum[c] / n;
      const double m = shift[c] + d;
      const double v = std::max(sum_sq[c] / n - d * d, 0.0);
      const double a_c = scale_v[c] / std::sqrt(v + eps);
      m_out[c] = static_cast<float>(m);
      v_out[c] = static_cast<float>(v);
      a[c] = static_cast<float>(a_c);
      b[c] = static_cast<float>(offset.data<float>()[c] - d * a_c);
      running_mean[c] = static_cast<float>(averaging ? (1 - f) * old_mean[c] + f * m : m);
      running_var[c] =
          static_cast<float>(averaging ? (1 - f) * old_var[c] + f * bessel * v : bessel * v);
    }
    Normalize(ctx, l, x.data<float>(), shift.data(), a.data(), b.data(), y.data<float>());
    return sdk::Status();
  }

 private:
  BatchNormAttrs attrs_;
};

class BatchNormGradKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) { return attrs_.Read(init.attrs()); }

  sdk::Status Compute(sdk::KernelContext& ctx) {
    const sdk::Tensor dy = ctx.input(0), x = ctx.input(1), scale = ctx.input(2),
                      mean = ctx.input(3), variance = ctx.input(4);
    ChannelLayout l;
    CFX_SDK_RETURN_IF_ERROR(
        sdk::CheckBatchNormGradInputs(attrs_, dy, x, scale, mean, variance, &l));
    const sdk::Shape shape = x.shape();
    const int64_t channels = l.channels;

    CFX_SDK_ASSIGN_OR_RETURN(sdk::BatchNormGradOutputs out,
                             sdk::AllocateBatchNormGradOutputs(ctx, shape, channels));
    const sdk::Tensor &dx = out.x_backprop, &scale_bp = out.scale_backprop,
                      &offset_bp = out.offset_backprop;
    if (x.num_elements() == 0) {
      Fill(scale_bp, 0.0f);
      Fill(offset_bp, 0.0f);
      return sdk::Status();
    }
    const float* m = mean.data<float>();
    const float* v = variance.data<float>();
    const float* scale_v = scale.data<float>();
    std::vector<double> rstd(channels), sum_dy(channels), sum_dy_xc(channels);
    std::vector<float> a(channels);  // scale / sqrt(variance + epsilon)
    for (int64_t c = 0; c < channels; ++c) {
      rstd[c] = 1.0 / std::sqrt(static_cast<double>(v[c]) + attrs_.epsilon);
      a[c] = static_cast<float>(scale_v[c] * rstd[c]);
    }
    if (attrs_.is_training) {
      SumGradient(ctx, l, dy.data<float>(), x.data<float>(), m, sum_dy.data(), sum_dy_xc.data());
      // dx = a * (dy - mean(dy) - (x - m) * mean(dy * (x - m)) / (v + epsilon)).
      const double n = static_cast<double>(l.per_channel());
      std::vector<float> dy_mean(channels), b(channels);
      for (int64_t c = 0; c < channels; ++c) {
        dy_mean[c] = static_cast<float>(sum_dy[c] / n);
        b[c] = static_cast<float>(-a[c] * rstd[c] * rstd[c] * sum_dy_xc[c] / n);
      }
      TrainingInputGradient(ctx, l, dy.data<float>(), x.data<float>(), dy_mean.data(), a.data(), m,
                            b.data(), dx.data<float>());
    } else {
      InferenceInputGradient(ctx, l, dy.data<float>(), x.data<float>(), m, a.data(),
                             dx.data<float>(), sum_dy.data(), sum_dy_xc.data());
    }
    for (int64_t c = 0; c < channels; ++c) {
      scale_bp.data<float>()[c] = static_cast<float>(sum_dy_xc[c] * rstd[c]);
      offset_bp.data<float>()[c] = static_cast<float>(sum_dy[c]);
    }
    return sdk::Status();
  }

 private:
  BatchNormAttrs attrs_;
};

constexpr const char* kFormats = "data_format: {'NHWC', 'NCHW', 'NDHWC', 'NCDHW'} = 'NHWC'";

}  // namespace

void RegisterBatchNormOps(sdk::Plugin& p) {
  p.Op("FusedBatchNormV3")
      .Input("x: T")
      .Input("scale: U")
      .Input("offset: U")
      .Input("mean: U")
      .Input("variance: U")
      .Output("y: T")
      .Output("batch_mean: U")
      .Output("batch_variance: U")
      .Output("reserve_space_1: U")
      .Output("reserve_space_2: U")
      .Output("reserve_space_3: U")
      .Attr("T: {half, bfloat16, float}")
      .Attr("U: {bfloat16, float}")
      .Attr("epsilon: float = 0.0001")
      .Attr("exponential_avg_factor: float = 1.0")
      .Attr(kFormats)
      .Attr("is_training: bool = true")
      .ShapeFn<&BatchNormShape>();
  p.Op("FusedBatchNormGradV3")
      .Input("y_backprop: T")
      .Input("x: T")
      .Input("scale: float")
      .Input("reserve_space_1: U")
      .Input("reserve_space_2: U")
      .Input("reserve_space_3: U")
      .Output("x_backprop: T")
      .Output("scale_backprop: U")
      .Output("offset_backprop: U")
      .Output("reserve_space_4: U")
      .Output("reserve_space_5: U")
      .Attr("T: {half, bfloat16, float}")
      .Attr("U: {float}")
      .Attr("epsilon: float = 0.0001")
      .Attr(kFormats)
      .Attr("is_training: bool = true")
      .ShapeFn<&BatchNormGradShape>();
  p.Kernel<BatchNormKernel>("FusedBatchNormV3", "CPU")
      .TypeConstraint<float>("T")
      .TypeConstraint<float>("U");
  p.Kernel<BatchNormGradKernel>("FusedBatchNormGradV3", "CPU")
      .TypeConstraint<float>("T")
      .TypeConstraint<float>("U");
}

}  // namespace cfx::nn
