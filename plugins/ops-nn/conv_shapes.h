// Shape functions shared by the convolution ops (Conv2D's and DepthwiseConv2dNative's, conv.cc):
// TensorFlow's window rules (conflux/sdk/window_geometry.h) over partially known shapes.
#ifndef CONFLUX_PLUGINS_OPS_NN_CONV_SHAPES_H_
#define CONFLUX_PLUGINS_OPS_NN_CONV_SHAPES_H_

#include "nn_ops.h"

namespace cfx::nn {

// The convolution of input 0 (NHWC) by filter 1 (grouped when the input has k * filter[2]
// channels): [n, oh, ow, filter[3]], or with `depthwise`
// [n, oh, ow, in_channels * filter[3]]. Channels that disagree, a window that does not fit the
// input and sizes beyond int64 are InvalidArgument.
sdk::Status ConvOutputShape(sdk::ShapeContext& c, bool depthwise);
// A backprop's output: the shape its input_sizes (input 0) or filter_sizes (input 1) holds when
// that is a constant, else rank 4 unknown.
sdk::Status ConvBackpropInputShape(sdk::ShapeContext& c);
sdk::Status ConvBackpropFilterShape(sdk::ShapeContext& c);

}  // namespace cfx::nn

#endif  // CONFLUX_PLUGINS_OPS_NN_CONV_SHAPES_H_
