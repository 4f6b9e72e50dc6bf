// Registration entry points of the ops-nn plugin's op families; nn_plugin.cc calls each once from
// the plugin's init function. Each registers the op definitions and their CPU kernels.
#ifndef CONFLUX_PLUGINS_OPS_NN_NN_OPS_H_
#define CONFLUX_PLUGINS_OPS_NN_NN_OPS_H_

#include "conflux/sdk.h"

namespace cfx::nn {

void RegisterBiasAddOps(sdk::Plugin& p);  // BiasAdd, BiasAddGrad
void RegisterSoftmaxOps(sdk::Plugin& p);  // Softmax, LogSoftmax
// Relu6, Elu, Selu, Softplus, LeakyRelu and their *Grad ops.
void RegisterActivationOps(sdk::Plugin& p);
// SoftmaxCrossEntropyWithLogits, SparseSoftmaxCrossEntropyWithLogits, L2Loss.
void RegisterLossOps(sdk::Plugin& p);
void RegisterBatchNormOps(sdk::Plugin& p);  // FusedBatchNormV3, FusedBatchNormGradV3
void RegisterInTopKOps(sdk::Plugin& p);     // InTopKV2
void RegisterConvOps(sdk::Plugin& p);  // Conv2D, Conv2DBackpropInput, Conv2DBackpropFilter
// DepthwiseConv2dNative and its two backprops
void RegisterDepthwiseConvOps(sdk::Plugin& p);
void RegisterPoolOps(sdk::Plugin& p);  // MaxPool, MaxPoolGrad, AvgPool, AvgPoolGrad
// ResizeBilinear, ResizeNearestNeighbor, ResizeBicubic, ResizeArea and the gradients of the first
// three.
void RegisterImageResizeOps(sdk::Plugin& p);
void RegisterNnGradients(sdk::Plugin& p);  // the gradient functions of the ops above

}  // namespace cfx::nn

#endif  // CONFLUX_PLUGINS_OPS_NN_NN_OPS_H_
