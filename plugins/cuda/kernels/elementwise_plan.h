// Host planning of the element-wise kernels: the SDK's broadcast plan packed for the device (also
// Select's), and BiasAdd as a broadcast. Host logic only, tested without a GPU
// (tests/cuda/elementwise_plan_test).
#ifndef CONFLUX_PLUGINS_CUDA_KERNELS_ELEMENTWISE_PLAN_H_
#define CONFLUX_PLUGINS_CUDA_KERNELS_ELEMENTWISE_PLAN_H_

#include <initializer_list>
#include <string>

#include "conflux/sdk/broadcast_plan.h"
#include "conflux/sdk/data_format.h"
#include "kernels/launch.h"

namespace cfx::cuda {

// A broadcast of two or three operands packed for the device.
struct DeviceBroadcast {
  sdk::Shape output_shape;
  int64_t num_elements = 0;
  BroadcastIndex index;
};

// `operands` broadcast NumPy-style and packed for the device (the SDK's InvalidArgument
// "Incompatible shapes: ..." when they disagree); Unimplemented when the merged dims exceed
// kMaxBroadcastDims (or the operands kMaxBroadcastOperands). `what` names the op for that message.
inline sdk::Result<DeviceBroadcast> PlanDeviceBroadcast(
    std::initializer_list<sdk::BroadcastOperand> operands, const std::string& what) {
  if (operands.size() > static_cast<size_t>(kMaxBroadcastOperands))
    return sdk::Internal(what, " on GPU: ", operands.size(), " operands to broadcast; at most ",
                         kMaxBroadcastOperands, " are supported");
  CFX_SDK_ASSIGN_OR_RETURN(sdk::BroadcastPlan plan, sdk::PlanBroadcast(operands));
  if (plan.dims.size() > static_cast<size_t>(kMaxBroadcastDims)) {
    std::string shapes;
    size_t k = 0;
    for (const sdk::BroadcastOperand& op : operands) {
      if (k > 0) shapes += k + 1 == operands.size() ? " and " : ", ";
      shapes += sdk::ShapeString(op.shape);
      ++k;
    }
    return sdk::Unimplemented(what, " on GPU: broadcasting ", shapes, " needs ", plan.dims.size(),
                              " dimensions after merging; at most ", kMaxBroadcastDims,
                              " are supported");
  }
  DeviceBroadcast b;
  b.output_shape = plan.output_shape;
  b.num_elements = plan.num_elements;
  b.index.rank = static_cast<int32_t>(plan.dims.size());
  for (int d = 0; d < b.index.rank; ++d) {
    b.index.dims[d] = plan.dims[d];
    for (size_t k = 0; k < operands.size(); ++k) b.index.strides[k][d] = plan.strides[k][d];
  }
  return b;
}

// x op y broadcast NumPy-style (see PlanDeviceBroadcast).
inline sdk::Result<DeviceBroadcast> PlanBinary(const sdk::Shape& x, const sdk::Shape& y,
                                               const std::string& what) {
  return PlanDeviceBroadcast({{"x", x}, {"y", y}}, what);
}

// BiasAdd's bias [C] as the shape that broadcasts it along value's channel dim ([C] for NHWC,
// [C, 1, ..., 1] for NCHW); InvalidArgument when value's rank is below 2 or bias is not a vector
// of its channels.
inline sdk::Result<sdk::Shape> BiasShape(const sdk::Shape& value, const sdk::Shape& bias,
                                         sdk::DataFormat format) {
  const int rank = static_cast<int>(value.size());
  CFX_SDK_RETURN_IF_ERROR(sdk::CheckChanneledRank(rank, sdk::ShapeString(value), "value"));
  const int channel_dim = sdk::ChannelDim(format, rank);
  if (bias.size() != 1 || bias[0] != value[channel_dim])
    return sdk::InvalidArgument("bias must be a vector of the ", value[channel_dim],
                                " channels of value ", sdk::ShapeString(value), " (data_format ",
                                sdk::FormatName(format), "), got shape ", sdk::ShapeString(bias));
  sdk::Shape shape(static_cast<size_t>(rank - channel_dim), 1);
  shape[0] = bias[0];
  return shape;
}

}  // namespace cfx::cuda

#endif  // CONFLUX_PLUGINS_CUDA_KERNELS_ELEMENTWISE_PLAN_H_
