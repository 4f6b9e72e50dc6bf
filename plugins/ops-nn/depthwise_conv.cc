// DepthwiseConv2dNative, DepthwiseConv2dNativeBackpropInput and
// DepthwiseConv2dNativeBackpropFilter (NHWC; filter [kh, kw, in_channels, channel_multiplier]),
// with TensorFlow's op definitions, on oneDNN grouped convolutions (one group per input channel,
// `channel_multiplier` outputs each) cached per geometry (onednn_conv.h). Output channel
// c * multiplier + m is input channel c under filter [.., .., c, m], as in TensorFlow; and
// TensorFlow's internal _FusedDepthwiseConv2dNative (bias and activation in the primitive).
#include "conv_shapes.h"
#include "nn_ops.h"
#include "onednn_conv.h"

namespace cfx::nn {
namespace {

sdk::Status DepthwiseShape(sdk::ShapeContext& c) { return ConvOutputShape(c, /*depthwise=*/true); }

void DepthwiseAttrs(sdk::OpBuilder& b) {
  b.Attr("T: {half, bfloat16, float, double}")
      .Attr("strides: list(int)")
      .Attr("padding: {'SAME', 'VALID', 'EXPLICIT'}")
      .Attr("explicit_paddings: list(int) = []")
      .Attr("data_format: {'NHWC', 'NCHW'} = 'NHWC'")
      .Attr("dilations: list(int) = [1, 1, 1, 1]");
}

// _FusedDepthwiseConv2dNative on CPU: float, NHWC, a bias and optionally an activation
// (conflux/sdk/fused_ops.h), in the oneDNN primitive as for _FusedConv2D.
class FusedDepthwiseKernel : public ConvKernelBase {
 public:
  FusedDepthwiseKernel() : ConvKernelBase(ConvKind::kDepthwise, ConvPass::kForward) {}
  sdk::Status Init(const sdk::KernelInit& init) {
    CFX_SDK_RETURN_IF_ERROR(ConvKernelBase::Init(init));
    return InitEpilogue(init);
  }
};

}  // namespace

void RegisterDepthwiseConvOps(sdk::Plugin& p) {
  DepthwiseAttrs(p.Op("DepthwiseConv2dNative")
                     .Input("input: T")
                     .Input("filter: T")
                     .Output("output: T")
                     .ShapeFn<&DepthwiseShape>());
  DepthwiseAttrs(p.Op("DepthwiseConv2dNativeBackpropInput")
                     .Input("input_sizes: int32")
                     .Input("filter: T")
                     .Input("out_backprop: T")
                     .Output("output: T")
                     .ShapeFn<&ConvBackpropInputShape>());
  DepthwiseAttrs(p.Op("DepthwiseConv2dNativeBackpropFilter")
                     .Input("input: T")
                     .Input("filter_sizes: int32")
                     .Input("out_backprop: T")
                     .Output("output: T")
                     .ShapeFn<&ConvBackpropFilterShape>());
  p.Kernel<ConvKernel<ConvKind::kDepthwise, ConvPass::kForward>>("DepthwiseConv2dNative", "CPU")
      .TypeConstraint<float>("T");
  // TensorFlow's internal DepthwiseConv2dNative + BiasAdd (+ activation), as its remapper and
  // the core's (passes/remapper.h) write it; TensorFlow 2.21's definition (no EXPLICIT padding).
  p.Op("_FusedDepthwiseConv2dNative")
      .Input("input: T")
      .Input("filter: T")
      .Input("args: num_args * T")
      .Output("output: T")
      .Attr("T: {half, bfloat16, float, double}")
      .Attr("num_args: int >= 0")
      .Attr("strides: list(int)")
      .Attr("padding: {'SAME', 'VALID'}")
      .Attr("data_format: {'NHWC', 'NCHW'} = 'NHWC'")
      .Attr("dilations: list(int) = [1, 1, 1, 1]")
      .Attr("fused_ops: list(string) = []")
      .Attr("epsilon: float = 0.0001")
      .Attr("leakyrelu_alpha: float = 0.2")
      .ShapeFn<&DepthwiseShape>();
  p.Kernel<FusedDepthwiseKernel>("_FusedDepthwiseConv2dNative", "CPU").TypeConstraint<float>("T");
  p.Kernel<ConvKernel<ConvKind::kDepthwise, ConvPass::kBackwardData>>(
       "DepthwiseConv2dNativeBackpropInput", "CPU")
      .TypeConstraint<float>("T")
      .HostMemory("input_sizes");
  p.Kernel<ConvKernel<ConvKind::kDepthwise, ConvPass::kBackwardWeights>>(
       "DepthwiseConv2dNativeBackpropFilter", "CPU")
      .TypeConstraint<float>("T")
      .HostMemory("filter_sizes");
}

}  // namespace cfx::nn
