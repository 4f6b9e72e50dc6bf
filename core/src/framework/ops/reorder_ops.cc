// Ops that move elements to new places without changing them: ReverseV2, with TensorFlow's
// definitions.
//
// The shape rules (conflux/sdk/layout_shape_rules.h) are shared with the kernels, so inference
// and execution refuse the same inputs with the same words.
#include <optional>
#include <vector>

#include "conflux/sdk/layout_shape_rules.h"
#include "conflux/shape_inference.h"
#include "framework/ops/ops.h"
#include "framework/ops/shape_fn_util.h"

namespace cfx::internal {
namespace {

using shape_rules::Dims;

// ReverseV2: the input's shape, once the axes are known to be valid for its rank.
Status ReverseV2ShapeFn(InferenceContext& c) {
  const PartialTensorShape& axes = c.input(1);
  if (!axes.unknown_rank() && axes.rank() != 1)
    return c.Error("axis must be a vector, got shape " + axes.ToString());
  std::optional<Dims> values = ConstValues(c, 1);
  if (values && !c.input(0).unknown_rank()) {
    std::vector<bool> reversed;
    CFX_RETURN_IF_ERROR(
        RuleStatus(c, shape_rules::ReverseAxes(c.input(0).rank(), *values, &reversed)));
  }
  c.set_output(0, c.input(0));
  return Status();
}

}  // namespace

void RegisterReorderOps(OpRegistry* r) {
  r->RegisterOrDie(OpDefBuilder("ReverseV2")
                       .Input("tensor: T")
                       .Input("axis: Tidx")
                       .Output("output: T")
                       .Attr("Tidx: {int32, int64} = DT_INT32")
                       .Attr("T: {uint8, int8, uint16, int16, int32, uint32, int64, uint64, bool, "
                             "bfloat16, half, float, double, complex64, complex128, string}")
                       .SetShapeFn(ReverseV2ShapeFn)
                       .Summary("`tensor` with the order of the elements along each dimension in "
                                "`axis` reversed."));
}

}  // namespace cfx::internal
