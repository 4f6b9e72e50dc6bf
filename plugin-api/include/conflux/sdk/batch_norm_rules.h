// The rules of FusedBatchNormV3 and FusedBatchNormGradV3 (TensorFlow's ops) that every device's
// kernels and the op pack's shape functions share, so that all accept the same attrs and inputs
// and word a refusal the same way: reading and checking the attrs, the [outer, channels, inner]
// view of x in each data format, the kernels' checks of their inputs and their outputs' shapes
// and forwarding. Thread-safe: no state.
//
// data_format NHWC / NDHWC puts the channels last (rows of `channels` values: inner = 1);
// NCHW / NCDHW puts them at dimension 1 (outer = the batch, inner = the spatial size). Statistics
// are per channel, over the outer * inner elements of each.
#ifndef CONFLUX_SDK_BATCH_NORM_RULES_H_
#define CONFLUX_SDK_BATCH_NORM_RULES_H_

#include <cmath>
#include <cstdint>
#include <string>

#include "conflux/sdk/kernel.h"
#include "conflux/sdk/status.h"
#include "conflux/sdk/tensor.h"

namespace cfx::sdk {

// x seen as [outer, channels, inner]: element (o, c, i) at (o * channels + c) * inner + i.
struct BatchNormLayout {
  int64_t outer = 1, channels = 1, inner = 1;
  int64_t per_channel() const { return outer * inner; }  // elements of each channel
};

// The node's attrs, read and checked once.
struct BatchNormAttrs {
  float epsilon = 1e-4f;
  float exponential_avg_factor = 1.0f;  // FusedBatchNormV3 only
  bool is_training = true;
  std::string data_format = "NHWC";
  bool channels_last = true;  // NHWC, NDHWC
  int rank = 4;               // 5 for the 3-D formats

  // Reads the attrs (TensorFlow's defaults where absent). InvalidArgument for a data_format other
  // than the four, an epsilon that is negative or not finite, or an exponential_avg_factor that
  // is not finite (TensorFlow does not check these; a NaN there would only give NaNs).
  Status Read(const Attrs& attrs) {
    CFX_SDK_RETURN_IF_ERROR(attrs.GetOr<float>("epsilon", &epsilon, 1e-4f));
    CFX_SDK_RETURN_IF_ERROR(attrs.GetOr<bool>("is_training", &is_training, true));
    CFX_SDK_RETURN_IF_ERROR(attrs.GetOr<std::string>("data_format", &data_format, "NHWC"));
    CFX_SDK_RETURN_IF_ERROR(
        attrs.GetOr<float>("exponential_avg_factor", &exponential_avg_factor, 1.0f));
    if (data_format == "NHWC" || data_format == "NCHW" || data_format == "NDHWC" ||
        data_format == "NCDHW") {
      channels_last = data_format.back() == 'C';
      rank = static_cast<int>(data_format.size());
    } else {
      return InvalidArgument("data_format must be one of NHWC, NCHW, NDHWC, NCDHW, got \"",
                             data_format, "\"");
    }
    if (!(epsilon >= 0) || !std::isfinite(epsilon))
      return InvalidArgument("epsilon must be finite and >= 0, got ", epsilon);
    if (!std::isfinite(exponential_avg_factor))
      return InvalidArgument("exponential_avg_factor must be finite, got ", exponential_avg_factor);
    return Status();
  }

  int channel_dim() const { return channels_last ? rank - 1 : 1; }
  // Training with exponential_avg_factor != 1 blends the batch statistics into mean and variance.
  bool averaging() const { return exponential_avg_factor != 1.0f; }
  // The forward op reads its mean and variance inputs (else they may be empty).
  bool uses_statistics() const { return !is_training || averaging(); }

  // The layout of an x of rank `rank`.
  BatchNormLayout LayoutOf(const Shape& shape) const {
    BatchNormLayout l;
    const int c = channel_dim();
    for (int d = 0; d < c; ++d) l.outer *= shape[d];
    l.channels = shape[c];
    for (int d = c + 1; d < rank; ++d) l.inner *= shape[d];
    return l;
  }
};

// `t` (named `what`) has the rank of the data format.
inline Status CheckBatchNormRank(const BatchNormAttrs& a, const Tensor& t, const char* what) {
  if (t.rank() != a.rank)
    return InvalidArgument(what, " must have rank ", a.rank, " for data_format ", a.data_format,
                           ", got shape ", ShapeString(t.shape()));
  return Status();
}

// `t` (named `what`) is a vector; with `channels` >= 0, of that many elements. `when` prefixes
// the message of a size mismatch.
inline Status CheckBatchNormVector(const Tensor& t, const char* what, int64_t channels,
                                   const char* when = "") {
  if (t.rank() != 1)
    return InvalidArgument(what, " must be 1-D, got shape ", ShapeString(t.shape()));
  if (channels >= 0 && t.dim(0) != channels)
    return InvalidArgument(when, what, " has ", t.dim(0), " elements but x has ", channels,
                           " channels; they must be equal");
  return Status();
}

// FusedBatchNormV3's inputs (x, scale, offset, mean, variance) fit together; on success *layout
// is x's. mean and variance may have any length when they are not read (training without
// averaging), as in TensorFlow, where they are usually empty then.
inline Status CheckBatchNormInputs(const BatchNormAttrs& a, const Tensor& x, const Tensor& scale,
                                   const Tensor& offset, const Tensor& mean, const Tensor& variance,
                                   BatchNormLayout* layout) {
  CFX_SDK_RETURN_IF_ERROR(CheckBatchNormRank(a, x, "x"));
  const int64_t channels = x.dim(a.channel_dim());
  CFX_SDK_RETURN_IF_ERROR(CheckBatchNormVector(scale, "scale", channels));
  CFX_SDK_RETURN_IF_ERROR(CheckBatchNormVector(offset, "offset", channels));
  const int64_t stats = a.uses_statistics() ? channels : -1;
  const char* when =
      a.is_training ? "with exponential_avg_factor != 1, " : "with is_training = false, ";
  CFX_SDK_RETURN_IF_ERROR(CheckBatchNormVector(mean, "mean", stats, when));
  CFX_SDK_RETURN_IF_ERROR(CheckBatchNormVector(variance, "variance", stats, when));
  *layout = a.LayoutOf(x.shape());
  return Status();
}

// FusedBatchNormGradV3's inputs (y_backprop, x, scale, reserve_space_1 = the mean,
// reserve_space_2 = the variance) fit together; on success *layout is x's.
inline Status CheckBatchNormGradInputs(const BatchNormAttrs& a, const Tensor& dy, const Tensor& x,
                                       const Tensor& scale, const Tensor& mean,
                                       const Tensor& variance, BatchNormLayout* layout) {
  CFX_SDK_RETURN_IF_ERROR(CheckBatchNormRank(a, dy, "y_backprop"));
  CFX_SDK_RETURN_IF_ERROR(CheckBatchNormRank(a, x, "x"));
  if (dy.shape() != x.shape())
    return InvalidArgument("y_backprop (shape ", ShapeString(dy.shape()), ") and x (shape ",
                           ShapeString(x.shape()), ") must have the same shape");
  const int64_t channels = x.dim(a.channel_dim());
  CFX_SDK_RETURN_IF_ERROR(CheckBatchNormVector(scale, "scale", channels));
  CFX_SDK_RETURN_IF_ERROR(CheckBatchNormVector(mean, "reserve_space_1 (the mean)", channels));
  CFX_SDK_RETURN_IF_ERROR(
      CheckBatchNormVector(variance, "reserve_space_2 (the variance)", channels));
  *layout = a.LayoutOf(x.shape());
  return Status();
}

// FusedBatchNormV3's outputs, allocated on the kernel's device: y (x's buffer when it may be
// reused), batch_mean and batch_variance (mean's and variance's), reserve_space_1 and _2 (the
// saved mean and variance) of `channels` elements each, and reserve_space_3, a scalar the kernel
// sets to 0. The kernel fills every one.
struct BatchNormOutputs {
  Tensor y, batch_mean, batch_variance, saved_mean, saved_variance, reserve_3;
};
inline Result<BatchNormOutputs> AllocateBatchNormOutputs(KernelContext& ctx, const Shape& x_shape,
                                                         int64_t channels) {
  BatchNormOutputs o;
  CFX_SDK_ASSIGN_OR_RETURN(o.y, ctx.ForwardOrAllocateOutput({0}, 0, x_shape));
  CFX_SDK_ASSIGN_OR_RETURN(o.batch_mean, ctx.ForwardOrAllocateOutput({3}, 1, {channels}));
  CFX_SDK_ASSIGN_OR_RETURN(o.batch_variance, ctx.ForwardOrAllocateOutput({4}, 2, {channels}));
  CFX_SDK_ASSIGN_OR_RETURN(o.saved_mean, ctx.AllocateOutput(3, {channels}));
  CFX_SDK_ASSIGN_OR_RETURN(o.saved_variance, ctx.AllocateOutput(4, {channels}));
  CFX_SDK_ASSIGN_OR_RETURN(o.reserve_3, ctx.AllocateOutput(5, {}));
  return o;
}

// FusedBatchNormGradV3's outputs: x_backprop (y_backprop's buffer when it may be reused),
// scale_backprop and offset_backprop of `channels` elements, and the two empty placeholders
// reserve_space_4 and _5, which need no filling.
struct BatchNormGradOutputs {
  Tensor x_backprop, scale_backprop, offset_backprop;
};
inline Result<BatchNormGradOutputs> AllocateBatchNormGradOutputs(KernelContext& ctx,
                                                                 const Shape& x_shape,
                                                                 int64_t channels) {
  BatchNormGradOutputs o;
  CFX_SDK_ASSIGN_OR_RETURN(o.x_backprop, ctx.ForwardOrAllocateOutput({0}, 0, x_shape));
  CFX_SDK_ASSIGN_OR_RETURN(o.scale_backprop, ctx.AllocateOutput(1, {channels}));
  CFX_SDK_ASSIGN_OR_RETURN(o.offset_backprop, ctx.AllocateOutput(2, {channels}));
  CFX_SDK_RETURN_IF_ERROR(ctx.AllocateOutput(3, {0}).status());
  CFX_SDK_RETURN_IF_ERROR(ctx.AllocateOutput(4, {0}).status());
  return o;
}

}  // namespace cfx::sdk

#endif  // CONFLUX_SDK_BATCH_NORM_RULES_H_
