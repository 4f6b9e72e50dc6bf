// Padding ops: Pad, PadV2, MirrorPad and MirrorPadGrad, with TensorFlow's definitions.
//
// paddings is an int32 or int64 matrix [rank, 2]: before and after each dimension. The shape rule
// (conflux/sdk/shape_rules.h, PadShape) is shared with the kernels, so inference and execution
// refuse the same paddings with the same words.
#include <optional>

#include "conflux/sdk/shape_rules.h"
#include "conflux/shape_inference.h"
#include "framework/ops/ops.h"
#include "framework/ops/shape_fn_util.h"

namespace cfx::internal {
namespace {

using shape_rules::Dims;
using shape_rules::PadDirection;
using shape_rules::PadMode;

StatusOr<PadMode> ModeAttr(const InferenceContext& c) {
  if (c.node().op == "Pad" || c.node().op == "PadV2") return PadMode::kConstant;
  std::string mode;
  CFX_RETURN_IF_ERROR(c.GetAttr("mode", &mode));
  return mode == "REFLECT" ? PadMode::kReflect : PadMode::kSymmetric;
}

// Output 0 of a pad op: input 0 with input 1's paddings added (`direction` kGrow) or removed.
Status PadShapeFn(InferenceContext& c, PadDirection direction) {
  CFX_ASSIGN_OR_RETURN(PartialTensorShape paddings, c.WithRank(1, 2));
  if (!paddings.unknown_rank() && paddings.dim(1) >= 0 && paddings.dim(1) != 2)
    return c.Error(
        StrCat("paddings must be a matrix of shape [rank,2], got shape ", paddings.ToString()));
  // The rank is the input's, else the number of rows of paddings.
  const PartialTensorShape& input = c.input(0);
  int64_t rank =
      input.unknown_rank() ? paddings.unknown_rank() ? -1 : paddings.dim(0) : input.rank();
  if (!input.unknown_rank() && !paddings.unknown_rank() && paddings.dim(0) >= 0 &&
      paddings.dim(0) != rank)
    return c.Error(StrCat("paddings must be a matrix of shape [", rank,
                          ",2] (a row per dimension "
                          "of the input, of shape ",
                          input.ToString(), "), got shape ", paddings.ToString()));
  if (rank > kMaxRank)
    return c.Error(StrCat("paddings has ", rank, " rows; the maximum rank is ", kMaxRank));
  std::optional<Dims> values = ConstValues(c, 1);
  if (rank < 0 || !values) {
    c.set_output(0, rank < 0 ? PartialTensorShape::UnknownRank()
                             : PartialTensorShape::UnknownDims(static_cast<int>(rank)));
    return Status();
  }
  CFX_ASSIGN_OR_RETURN(PadMode mode, ModeAttr(c));
  const Dims in = input.unknown_rank() ? Dims(rank, shape_rules::kUnknown) : input.dims();
  Dims out;
  CFX_RETURN_IF_ERROR(
      RuleStatus(c, shape_rules::PadShape(in, *values, rank, mode, direction, &out)));
  c.set_output(0, PartialTensorShape(out));
  return Status();
}

Status GrowShapeFn(InferenceContext& c) { return PadShapeFn(c, PadDirection::kGrow); }
Status ShrinkShapeFn(InferenceContext& c) { return PadShapeFn(c, PadDirection::kShrink); }

Status PadV2ShapeFn(InferenceContext& c) {
  const PartialTensorShape& value = c.input(2);
  if (!value.unknown_rank() && value.rank() != 0)
    return c.Error(StrCat("constant_values must be a scalar, got shape ", value.ToString()));
  return GrowShapeFn(c);
}

// input and paddings in, output out, TensorFlow's attrs (and `mode` for the mirror ops).
OpDefBuilder PadOp(const char* name, bool mirror) {
  OpDefBuilder b(name);
  b.Input("input: T")
      .Input("paddings: Tpaddings")
      .Output("output: T")
      .Attr("T: type")
      .Attr("Tpaddings: {int32, int64} = DT_INT32");
  if (mirror) b.Attr("mode: {'REFLECT', 'SYMMETRIC'}");
  return b;
}

}  // namespace

void RegisterPadOps(OpRegistry* r) {
  r->RegisterOrDie(
      PadOp("Pad", false)
          .SetShapeFn(GrowShapeFn)
          .Summary("Pads `input` with zeros: paddings[i] = [before, after] of dimension i."));
  r->RegisterOrDie(PadOp("PadV2", false)
                       .Input("constant_values: T")
                       .SetShapeFn(PadV2ShapeFn)
                       .Summary("Pads `input` with the scalar `constant_values`."));
  r->RegisterOrDie(PadOp("MirrorPad", true)
                       .SetShapeFn(GrowShapeFn)
                       .Summary("Pads `input` with its mirror image, without (REFLECT) or with "
                                "(SYMMETRIC) the edge element."));
  r->RegisterOrDie(PadOp("MirrorPadGrad", true)
                       .SetShapeFn(ShrinkShapeFn)
                       .Summary("The gradient of MirrorPad: each element of `input` is added to "
                                "the element it was mirrored from."));
}

}  // namespace cfx::internal
