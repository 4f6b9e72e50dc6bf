// Gradient functions of the ops-nn ops (registered through the plugin ABI), with TensorFlow's
// formulas. Each builds graph ops: this plugin's backprop ops and standard ops.
#include "nn_ops.h"

namespace cfx::nn {
namespace {

using sdk::GradientBuilder;
using sdk::GradTensor;

GradTensor KeepSum(GradientBuilder& g, GradTensor x) {
  // Sum over the last axis, keeping it.
  return g.Op("Sum").Input(x).Input(g.Scalar(CFX_INT32, -1)).Attr("keep_dims", true).Finish();
}

GradTensor Mul(GradientBuilder& g, GradTensor a, GradTensor b) {
  return g.Op("Mul").Input(a).Input(b).Finish();
}

// dloss [batch] -> [batch, 1] times backprop [batch, classes].
GradTensor ScaleRows(GradientBuilder& g, GradTensor dloss, GradTensor backprop) {
  GradTensor col = g.Op("ExpandDims").Input(dloss).Input(g.Scalar(CFX_INT32, -1)).Finish();
  return Mul(g, col, backprop);
}

sdk::Status BiasAddGrad(GradientBuilder& g) {
  g.SetInputGrad(0, g.grad(0));
  g.SetInputGrad(1, g.Op("BiasAddGrad").Input(g.grad(0)).CopyAttr("data_format").Finish());
  return g.status();
}

sdk::Status SoftmaxGrad(GradientBuilder& g) {
  // dx = (dy - sum(dy * y)) * y
  GradTensor y = g.output(0), dy = g.grad(0);
  GradTensor inner = KeepSum(g, Mul(g, dy, y));
  g.SetInputGrad(0, Mul(g, g.Op("Sub").Input(dy).Input(inner).Finish(), y));
  return g.status();
}

sdk::Status LogSoftmaxGrad(GradientBuilder& g) {
  // dx = dy - exp(y) * sum(dy)
  GradTensor y = g.output(0), dy = g.grad(0);
  GradTensor p = g.Op("Exp").Input(y).Finish();
  g.SetInputGrad(0, g.Op("Sub").Input(dy).Input(Mul(g, p, KeepSum(g, dy))).Finish());
  return g.status();
}

// Activations whose *Grad op takes (gradients, features) or (gradients, outputs).
template <bool kFromOutput>
sdk::Status ActivationGrad(GradientBuilder& g, const char* op) {
  GradTensor arg = kFromOutput ? g.output(0) : g.input(0);
  g.SetInputGrad(0, g.Op(op).Input(g.grad(0)).Input(arg).Finish());
  return g.status();
}
sdk::Status Relu6Grad(GradientBuilder& g) { return ActivationGrad<false>(g, "Relu6Grad"); }
sdk::Status SoftplusGrad(GradientBuilder& g) { return ActivationGrad<false>(g, "SoftplusGrad"); }
sdk::Status SoftsignGrad(GradientBuilder& g) { return ActivationGrad<false>(g, "SoftsignGrad"); }
sdk::Status EluGrad(GradientBuilder& g) { return ActivationGrad<true>(g, "EluGrad"); }
sdk::Status SeluGrad(GradientBuilder& g) { return ActivationGrad<true>(g, "SeluGrad"); }
sdk::Status LeakyReluGrad(GradientBuilder& g) {
  g.SetInputGrad(
      0, g.Op("LeakyReluGrad").Input(g.grad(0)).Input(g.input(0)).CopyAttr("alpha").Finish());
  return g.status();
}
// LeakyReluGrad is linear in its gradients input; its features only pick the slope (TensorFlow:
// zeros for them).
sdk::Status LeakyReluGradGrad(GradientBuilder& g) {
  g.SetInputGrad(
      0, g.Op("LeakyReluGrad").Input(g.grad(0)).Input(g.input(1)).CopyAttr("alpha").Finish());
  g.SetInputGrad(1, g.Op("ZerosLike").Input(g.input(1)).Finish());
  return g.status();
}

sdk::Status SoftmaxXentGrad(GradientBuilder& g) {
  // d features = dloss * backprop; d labels = -dloss * log_softmax(features). The gradient
  // flowing into the backprop output is not propagated (as TensorFlow without second order).
  g.SetInputGrad(0, ScaleRows(g, g.grad(0), g.output(1)));
  GradTensor log_p = g.Op("LogSoftmax").Input(g.input(0)).Finish();
  GradTensor neg = g.Op("Neg").Input(log_p).Finish();
  g.SetInputGrad(1, ScaleRows(g, g.grad(0), neg));
  return g.status();
}

sdk::Status SparseSoftmaxXentGrad(GradientBuilder& g) {
  g.SetInputGrad(0, ScaleRows(g, g.grad(0), g.output(1)));
  return g.status();
}

sdk::Status L2LossGrad(GradientBuilder& g) {
  g.SetInputGrad(0, Mul(g, g.input(0), g.grad(0)));
  return g.status();
}

// Copies the window attrs of a convolution to its backprop node; `use_cudnn_on_gpu` exists on
// Conv2D's ops only.
sdk::GradNode& ConvAttrs(sdk::GradNode& n, bool use_cudnn_attr) {
  n.CopyAttr("strides")
      .CopyAttr("padding")
      .CopyAttr("explicit_paddings")
      .CopyAttr("dilations")
      .CopyAttr("data_format");
  return use_cudnn_attr ? n.CopyAttr("use_cudnn_on_gpu") : n;
}

// The gradients of a convolution (input, filter) through its two backprop ops.
sdk::Status ConvolutionGrad(GradientBuilder& g, const char* backprop_input,
                            const char* backprop_filter, bool use_cudnn_attr) {
  GradTensor x = g.input(0), w = g.input(1), dy = g.grad(0);
  GradTensor x_shape = g.Op("Shape").Input(x).Finish();
  GradTensor w_shape = g.Op("Shape").Input(w).Finish();
  sdk::GradNode dx = g.Op(backprop_input);
  dx.Input(x_shape).Input(w).Input(dy);
  g.SetInputGrad(0, ConvAttrs(dx, use_cudnn_attr).Finish());
  sdk::GradNode dw = g.Op(backprop_filter);
  dw.Input(x).Input(w_shape).Input(dy);
  g.SetInputGrad(1, ConvAttrs(dw, use_cudnn_attr).Finish());
  return g.status();
}

sdk::Status Conv2DGrad(GradientBuilder& g) {
  return ConvolutionGrad(g, "Conv2DBackpropInput", "Conv2DBackpropFilter", true);
}

sdk::Status DepthwiseConv2dNativeGrad(GradientBuilder& g) {
  return ConvolutionGrad(g, "DepthwiseConv2dNativeBackpropInput",
                         "DepthwiseConv2dNativeBackpropFilter", false);
}

// The window attrs of a pooling op, copied onto its gradient op.
sdk::GradNode& PoolAttrs(sdk::GradNode& n) {
  return n.CopyAttr("ksize").CopyAttr("strides").CopyAttr("padding").CopyAttr("data_format");
}

sdk::Status MaxPoolGrad(GradientBuilder& g) {
  sdk::GradNode dx = g.Op("MaxPoolGrad");
  dx.Input(g.input(0)).Input(g.output(0)).Input(g.grad(0));
  g.SetInputGrad(0, PoolAttrs(dx).CopyAttr("explicit_paddings").Finish());
  return g.status();
}

sdk::Status AvgPoolGrad(GradientBuilder& g) {
  GradTensor shape = g.Op("Shape").Input(g.input(0)).Finish();
  sdk::GradNode dx = g.Op("AvgPoolGrad");
  dx.Input(shape).Input(g.grad(0));
  g.SetInputGrad(0, PoolAttrs(dx).Finish());
  return g.status();
}

sdk::Status FusedBatchNormGrad(GradientBuilder& g) {
  // Inputs x, scale, offset, mean, variance; outputs y, batch_mean, batch_variance and the
  // reserve spaces 1..3 (outputs 3..5), which FusedBatchNormGradV3 reads.
  GradTensor grads = g.Op("FusedBatchNormGradV3")
                         .Input(g.grad(0))
                         .Input(g.input(0))
                         .Input(g.input(1))
                         .Input(g.output(3))
                         .Input(g.output(4))
                         .Input(g.output(5))
                         .CopyAttr("T")
                         .CopyAttr("U")
                         .CopyAttr("epsilon")
                         .CopyAttr("data_format")
                         .CopyAttr("is_training")
                         .Finish();
  g.SetInputGrad(0, grads.output(0));
  g.SetInputGrad(1, grads.output(1));
  g.SetInputGrad(2, grads.output(2));
  return g.status();
}

// An int32 vector of the given values.
GradTensor Int32Vector(GradientBuilder& g, std::initializer_list<int> values) {
  std::vector<GradTensor> scalars;
  for (int v : values) scalars.push_back(g.Scalar(CFX_INT32, v));
  return g.Op("Pack").Input(scalars).Attr("axis", 0).Finish();
}

// The gradient of a resize that takes (images, size) through OP(grad, original image[, size]);
// `size` is not differentiable.
sdk::Status ResizeGrad(GradientBuilder& g, const char* op, bool takes_sides) {
  sdk::GradNode n = g.Op(op);
  n.Input(g.grad(0));
  if (takes_sides) {
    // The original image's height and width: Shape(images)[1:3].
    GradTensor shape = g.Op("Shape").Input(g.input(0)).Attr("out_type", CFX_INT32).Finish();
    n.Input(g.Op("Slice").Input(shape).Input(Int32Vector(g, {1})).Input(Int32Vector(g, {2}))
                .Finish());
  } else {
    n.Input(g.input(0));
  }
  g.SetInputGrad(0, n.CopyAttr("align_corners").CopyAttr("half_pixel_centers").Finish());
  return g.status();
}

sdk::Status ResizeBilinearGrad(GradientBuilder& g) {
  return ResizeGrad(g, "ResizeBilinearGrad", false);
}
sdk::Status ResizeNearestNeighborGrad(GradientBuilder& g) {
  return ResizeGrad(g, "ResizeNearestNeighborGrad", true);
}
// TensorFlow differentiates ResizeBicubic of float and double images only.
sdk::Status ResizeBicubicGrad(GradientBuilder& g) {
  const cfx_dtype t = g.dtype(g.input(0));
  if (t != CFX_FLOAT && t != CFX_DOUBLE) return g.status();
  return ResizeGrad(g, "ResizeBicubicGrad", false);
}

// TensorFlow's ScaleAndTranslateGrad takes float images only; size, scale and translation are
// not differentiable.
sdk::Status ScaleAndTranslateGrad(GradientBuilder& g) {
  if (g.dtype(g.input(0)) != CFX_FLOAT) return g.status();
  g.SetInputGrad(0, g.Op("ScaleAndTranslateGrad")
                        .Input(g.grad(0))
                        .Input(g.input(0))
                        .Input(g.input(2))
                        .Input(g.input(3))
                        .CopyAttr("kernel_type")
                        .CopyAttr("antialias")
                        .Finish());
  return g.status();
}

}  // namespace

void RegisterNnGradients(sdk::Plugin& p) {
  p.Gradient<&BiasAddGrad>("BiasAdd");
  p.Gradient<&SoftmaxGrad>("Softmax");
  p.Gradient<&LogSoftmaxGrad>("LogSoftmax");
  p.Gradient<&Relu6Grad>("Relu6");
  p.Gradient<&SoftplusGrad>("Softplus");
  p.Gradient<&SoftsignGrad>("Softsign");
  p.Gradient<&EluGrad>("Elu");
  p.Gradient<&SeluGrad>("Selu");
  p.Gradient<&LeakyReluGrad>("LeakyRelu");
  p.Gradient<&LeakyReluGradGrad>("LeakyReluGrad");
  p.Gradient<&SoftmaxXentGrad>("SoftmaxCrossEntropyWithLogits");
  p.Gradient<&SparseSoftmaxXentGrad>("SparseSoftmaxCrossEntropyWithLogits");
  p.Gradient<&L2LossGrad>("L2Loss");
  p.Gradient<&Conv2DGrad>("Conv2D");
  p.Gradient<&DepthwiseConv2dNativeGrad>("DepthwiseConv2dNative");
  p.Gradient<&MaxPoolGrad>("MaxPool");
  p.Gradient<&AvgPoolGrad>("AvgPool");
  p.Gradient<&FusedBatchNormGrad>("FusedBatchNormV3");
  p.Gradient<&ResizeBilinearGrad>("ResizeBilinear");
  p.Gradient<&ResizeNearestNeighborGrad>("ResizeNearestNeighbor");
  p.Gradient<&ResizeBicubicGrad>("ResizeBicubic");
  p.Gradient<&ScaleAndTranslateGrad>("ScaleAndTranslate");
}

}  // namespace cfx::nn
