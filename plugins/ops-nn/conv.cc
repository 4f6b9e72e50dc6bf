// Conv2D, Conv2DBackpropInput and Conv2DBackpropFilter (NHWC, filters HWIO, grouped when the
// input has a multiple of the filter's input channels, as TensorFlow's are), with TensorFlow's
// op definitions, on oneDNN convolution primitives cached per geometry (onednn_conv.h); and
// TensorFlow's internal _FusedConv2D, a Conv2D with BiasAdd and an activation fused in (written
// by TensorFlow's grappler and by the core's remapper pass), on the same primitives with the bias
// and a post-op.
#include "conflux/sdk/window_geometry.h"
#include "conv_shapes.h"
#include "nn_ops.h"
#include "onednn_conv.h"
#include "partial_shapes.h"

namespace cfx::nn {
namespace {

using sdk::ComputeWindows;
using sdk::ConvSizesFromTensor;
using sdk::ReadWindowAttrs;
using sdk::WindowAttrs;
using sdk::WindowDim;

using shape_rules::ShapeStr;

}  // namespace

// ---- Shape functions.

// [n, oh, ow, out_channels]; out_channels is filter[3] (HWIO, grouped when the input has a
// multiple of filter[2] channels) or in_channels * filter[3] (depthwise), unknown where a
// dimension it needs is.
sdk::Status ConvOutputShape(sdk::ShapeContext& c, bool depthwise) {
  WindowAttrs a;
  CFX_SDK_RETURN_IF_ERROR(ReadWindowAttrs(c.attrs(), true, &a));
  sdk::PartialShape in, f;
  CFX_SDK_RETURN_IF_ERROR(WithRank(c.input(0), 4, "input", &in));
  CFX_SDK_RETURN_IF_ERROR(WithRank(c.input(1), 4, "filter", &f));
  if (depthwise && in.dims[3] >= 0 && f.dims[2] >= 0 && in.dims[3] != f.dims[2])
    return sdk::InvalidArgument("input has ", in.dims[3], " channels (shape ", ShapeStr(in.dims),
                                ") but the filter expects ", f.dims[2], " (shape ",
                                ShapeStr(f.dims), ")");
  int64_t groups;
  if (!depthwise) CFX_SDK_RETURN_IF_ERROR(sdk::ConvGroups(in.dims, f.dims, &groups));
  WindowDim h, w;
  const int64_t kh = f.dims[0] >= 0 ? f.dims[0] : 1, kw = f.dims[1] >= 0 ? f.dims[1] : 1;
  CFX_SDK_RETURN_IF_ERROR(ComputeWindows(a, in.dims[1], in.dims[2], kh, kw, &h, &w));
  if (f.dims[0] < 0) h.out = sdk::kUnknown;
  if (f.dims[1] < 0) w.out = sdk::kUnknown;
  int64_t out_channels = f.dims[3];
  if (depthwise) {
    const int64_t channels = in.dims[3] >= 0 ? in.dims[3] : f.dims[2];
    out_channels = sdk::kUnknown;
    if (channels >= 0 && f.dims[3] >= 0 &&
        __builtin_mul_overflow(channels, f.dims[3], &out_channels))
      return sdk::InvalidArgument("in_channels ", channels, " times channel_multiplier ", f.dims[3],
                                  " does not fit int64");
  }
  c.set_output(0, KnownShape({in.dims[0], h.out, w.out, out_channels}));
  return sdk::Status();
}

namespace {

sdk::Status Conv2DShape(sdk::ShapeContext& c) { return ConvOutputShape(c, /*depthwise=*/false); }

sdk::Status SizesShape(sdk::ShapeContext& c, int sizes_input) {
  sdk::Tensor t = c.input_tensor(sizes_input);
  if (t.valid()) {
    sdk::Shape s;
    CFX_SDK_RETURN_IF_ERROR(
        ConvSizesFromTensor(t, sizes_input == 0 ? "input_sizes" : "filter_sizes", &s));
    c.set_output(0, KnownShape(s));
  } else {
    c.set_output(0, UnknownDims(4));
  }
  return sdk::Status();
}

}  // namespace

sdk::Status ConvBackpropInputShape(sdk::ShapeContext& c) { return SizesShape(c, 0); }
sdk::Status ConvBackpropFilterShape(sdk::ShapeContext& c) { return SizesShape(c, 1); }

namespace {

// TensorFlow's types: Conv2D and Conv2DBackpropInput also allow int32, the filter gradient not.
void ConvAttrs(sdk::OpBuilder& b, bool int32 = true) {
  b.Attr(int32 ? "T: {half, bfloat16, float, double, int32}" : "T: {half, bfloat16, float, double}")
      .Attr("strides: list(int)")
      .Attr("use_cudnn_on_gpu: bool = true")
      .Attr("padding: {'SAME', 'VALID', 'EXPLICIT'}")
      .Attr("explicit_paddings: list(int) = []")
      .Attr("data_format: {'NHWC', 'NCHW'} = 'NHWC'")
      .Attr("dilations: list(int) = [1, 1, 1, 1]");
}

// _FusedConv2D on CPU: float, NHWC, HWIO filters, a bias, optionally an addend (a residual
// connection's shortcut) and optionally an activation (see conflux/sdk/fused_ops.h for the
// epilogues it takes).
class FusedConvKernel : public ConvKernelBase {
 public:
  FusedConvKernel() : ConvKernelBase(ConvKind::kPlain, ConvPass::kForward) {}
  sdk::Status Init(const sdk::KernelInit& init) {
    CFX_SDK_RETURN_IF_ERROR(ConvKernelBase::Init(init));
    std::string filter_format;
    CFX_SDK_RETURN_IF_ERROR(
        init.attrs().GetOr<std::string>("filter_format", &filter_format, "HWIO"));
    if (filter_format != "HWIO")
      return sdk::Unimplemented("filter_format ", filter_format,
                                " is not supported on CPU; use HWIO");
    int64_t num_host_args = 0;
    CFX_SDK_RETURN_IF_ERROR(init.attrs().GetOr<int64_t>("num_host_args", &num_host_args, 0));
    if (num_host_args != 0)
      return sdk::Unimplemented("host_args (quantized convolutions) are not supported on CPU");
    return InitEpilogue(init, /*allow_add=*/true);
  }
};

}  // namespace

void RegisterConvOps(sdk::Plugin& p) {
  ConvAttrs(p.Op("Conv2D")
                .Input("input: T")
                .Input("filter: T")
                .Output("output: T")
                .ShapeFn<&Conv2DShape>());
  ConvAttrs(p.Op("Conv2DBackpropInput")
                .Input("input_sizes: int32")
                .Input("filter: T")
                .Input("out_backprop: T")
                .Output("output: T")
                .ShapeFn<&ConvBackpropInputShape>());
  ConvAttrs(p.Op("Conv2DBackpropFilter")
                .Input("input: T")
                .Input("filter_sizes: int32")
                .Input("out_backprop: T")
                .Output("output: T")
                .ShapeFn<&ConvBackpropFilterShape>(),
            /*int32=*/false);
  p.Kernel<ConvKernel<ConvKind::kPlain, ConvPass::kForward>>("Conv2D", "CPU")
      .TypeConstraint<float>("T");
  // TensorFlow 2.21's definition, int8 and host args included (the kernel takes float only).
  p.Op("_FusedConv2D")
      .Input("input: T")
      .Input("filter: T")
      .Input("args: TArgs")
      .Input("host_args: num_host_args * float")
      .Output("output: T")
      .Attr("T: {half, float, double, int8, qint8}")
      .Attr("TArgs: list(type) >= 1")
      .Attr("num_args: int >= 0")
      .Attr("num_host_args: int >= 0 = 0")
      .Attr("strides: list(int)")
      .Attr("padding: {'SAME', 'VALID', 'EXPLICIT'}")
      .Attr("explicit_paddings: list(int) = []")
      .Attr("data_format: {'NHWC', 'NCHW', 'NCHW_VECT_C'} = 'NHWC'")
      .Attr("filter_format: {'HWIO', 'OIHW', 'OIHW_VECT_I'} = 'HWIO'")
      .Attr("dilations: list(int) = [1, 1, 1, 1]")
      .Attr("use_cudnn_on_gpu: bool = true")
      .Attr("fused_ops: list(string) = []")
      .Attr("epsilon: float = 0.0001")
      .Attr("leakyrelu_alpha: float = 0.2")
      .ShapeFn<&Conv2DShape>();
  p.Kernel<FusedConvKernel>("_FusedConv2D", "CPU").TypeConstraint<float>("T");
  p.Kernel<ConvKernel<ConvKind::kPlain, ConvPass::kBackwardData>>("Conv2DBackpropInput", "CPU")
      .TypeConstraint<float>("T")
      .HostMemory("input_sizes");
  p.Kernel<ConvKernel<ConvKind::kPlain, ConvPass::kBackwardWeights>>("Conv2DBackpropFilter", "CPU")
      .TypeConstraint<float>("T")
      .HostMemory("filter_sizes");
}

}  // namespace cfx::nn
