// Ops that move elements to new places without changing them: ReverseV2, SpaceToDepth and
// DepthToSpace, with TensorFlow's definitions.
//
// The shape rules (conflux/sdk/layout_shape_rules.h) are shared with the kernels, so inference
// and execution refuse the same inputs with the same words.
#include <optional>
#include <string>
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

// SpaceToDepth and DepthToSpace.
Status SpaceDepthShapeFn(InferenceContext& c, bool to_depth) {
  int64_t block = 0;
  std::string data_format;
  CFX_RETURN_IF_ERROR(c.GetAttr("block_size", &block));
  CFX_RETURN_IF_ERROR(c.GetAttr("data_format", &data_format));
  const PartialTensorShape& in = c.input(0);
  const int rank = data_format == "NCHW_VECT_C" ? 5 : 4;
  Dims out;
  CFX_RETURN_IF_ERROR(
      RuleStatus(c, shape_rules::SpaceDepthShape(
                        in.unknown_rank() ? Dims(rank, shape_rules::kUnknown) : in.dims(), block,
                        data_format, to_depth, &out)));
  c.set_output(0, PartialTensorShape(out));
  return Status();
}

Status SpaceToDepthShapeFn(InferenceContext& c) { return SpaceDepthShapeFn(c, true); }
Status DepthToSpaceShapeFn(InferenceContext& c) { return SpaceDepthShapeFn(c, false); }

OpDefBuilder SpaceDepthOp(const char* name) {
  OpDefBuilder b(name);
  b.Input("input: T")
      .Output("output: T")
      .Attr("T: type")
      .Attr("block_size: int >= 2")
      .Attr("data_format: {'NHWC', 'NCHW', 'NCHW_VECT_C'} = 'NHWC'");
  return b;
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
  r->RegisterOrDie(SpaceDepthOp("SpaceToDepth")
                       .SetShapeFn(SpaceToDepthShapeFn)
                       .Summary("Each block_size x block_size block of pixels becomes one pixel "
                                "with the block's channels side by side (row by row)."));
  r->RegisterOrDie(SpaceDepthOp("DepthToSpace")
                       .SetShapeFn(DepthToSpaceShapeFn)
                       .Summary("The inverse of SpaceToDepth: each pixel's channels become a "
                                "block_size x block_size block of pixels."));
}

}  // namespace cfx::internal
