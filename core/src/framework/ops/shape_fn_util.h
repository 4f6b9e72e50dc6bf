// Helpers shared by the standard ops' shape functions (framework/ops/*.cc): reading constant
// inputs, merging inputs and reporting the verdicts of conflux/sdk/shape_rules.h. Stateless.
#ifndef CONFLUX_CORE_SRC_FRAMEWORK_OPS_SHAPE_FN_UTIL_H_
#define CONFLUX_CORE_SRC_FRAMEWORK_OPS_SHAPE_FN_UTIL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "conflux/shape_inference.h"

namespace cfx::internal {

// A shape rule's verdict ("" or the reason) as a Status: InvalidArgument naming the node.
Status RuleStatus(const InferenceContext& c, const std::string& error);

// Output 0 is inputs 0 and 1 merged: both have its shape (TensorFlow's MergeBothInputsShapeFn).
// InvalidArgument naming both inputs and their shapes when they contradict each other.
Status MergeBothInputsShape(InferenceContext& c);

// The values of input i when it is a constant int8/int16/int32/int64 tensor.
std::optional<std::vector<int64_t>> ConstValues(const InferenceContext& c, int i);

// The value of input i when it is such a constant with one element.
std::optional<int64_t> ConstScalar(const InferenceContext& c, int i);

}  // namespace cfx::internal

#endif  // CONFLUX_CORE_SRC_FRAMEWORK_OPS_SHAPE_FN_UTIL_H_
