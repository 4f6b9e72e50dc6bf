// Ops that gradient functions build graphs from (they are ordinary ops, usable anywhere):
// ReluGrad, SigmoidGrad, TanhGrad, SqrtGrad, RsqrtGrad, ReciprocalGrad, BroadcastGradientArgs,
// BroadcastArgs, ConcatOffset, BroadcastTo, InvertPermutation, StopGradient, PreventGradient and
// UnsortedSegmentSum.
// Names, arguments, attrs, defaults and type lists are TensorFlow's; the shape rules shared with
// the kernels live in conflux/sdk/gradient_shape_rules.h.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "conflux/sdk/gradient_shape_rules.h"
#include "conflux/shape_inference.h"
#include "framework/ops/ops.h"
#include "framework/ops/shape_fn_util.h"

namespace cfx::internal {
namespace {

using shape_rules::Dims;
using shape_rules::kUnknown;

// r0 and r1 are vectors, of known length when s0 and s1 are constants.
Status BroadcastGradientArgsShape(InferenceContext& c) {
  CFX_RETURN_IF_ERROR(c.WithRank(0, 1).status());
  CFX_RETURN_IF_ERROR(c.WithRank(1, 1).status());
  std::optional<Dims> s0 = ConstValues(c, 0), s1 = ConstValues(c, 1);
  if (!s0 || !s1) {
    c.set_output(0, PartialTensorShape(Dims{kUnknown}));
    c.set_output(1, PartialTensorShape(Dims{kUnknown}));
    return Status();
  }
  Dims r0, r1;
  CFX_RETURN_IF_ERROR(RuleStatus(c, shape_rules::BroadcastGradientArgs(*s0, *s1, &r0, &r1)));
  c.set_output(0, PartialTensorShape(Dims{static_cast<int64_t>(r0.size())}));
  c.set_output(1, PartialTensorShape(Dims{static_cast<int64_t>(r1.size())}));
  return Status();
}

// r0 is a vector, of known length when s0 and s1 are constants.
Status BroadcastArgsShapeFn(InferenceContext& c) {
  CFX_RETURN_IF_ERROR(c.WithRank(0, 1).status());
  CFX_RETURN_IF_ERROR(c.WithRank(1, 1).status());
  std::optional<Dims> s0 = ConstValues(c, 0), s1 = ConstValues(c, 1);
  if (!s0 || !s1) {
    // At least as long as the longer operand when their lengths are known.
    const PartialTensorShape& a = c.input(0);
    const PartialTensorShape& b = c.input(1);
    const bool known = !a.unknown_rank() && !b.unknown_rank() && a.dim(0) >= 0 && b.dim(0) >= 0;
    c.set_output(0, PartialTensorShape(Dims{known ? std::max(a.dim(0), b.dim(0)) : kUnknown}));
    return Status();
  }
  Dims r0;
  CFX_RETURN_IF_ERROR(RuleStatus(c, shape_rules::BroadcastArgsShape(*s0, *s1, &r0)));
  c.set_output(0, PartialTensorShape(Dims{static_cast<int64_t>(r0.size())}));
  return Status();
}

// Each offset has its shape input's shape (a vector); concat_dim is a scalar.
Status ConcatOffsetShapeFn(InferenceContext& c) {
  CFX_RETURN_IF_ERROR(c.WithRank(0, 0).status());
  for (int i = 1; i < c.num_inputs(); ++i) {
    CFX_ASSIGN_OR_RETURN(PartialTensorShape s, c.WithRank(i, 1));
    c.set_output(i - 1, s);
  }
  return Status();
}

Status BroadcastToShape(InferenceContext& c) {
  CFX_RETURN_IF_ERROR(c.WithRank(1, 1).status());
  CFX_ASSIGN_OR_RETURN(PartialTensorShape shape, c.MakeShapeFromInput(1));
  if (shape.unknown_rank() || c.input(0).unknown_rank()) {
    c.set_output(0, shape);
    return Status();
  }
  Dims out;
  CFX_RETURN_IF_ERROR(
      RuleStatus(c, shape_rules::BroadcastToShape(c.input(0).dims(), shape.dims(), &out)));
  c.set_output(0, PartialTensorShape(out));
  return Status();
}

Status InvertPermutationShape(InferenceContext& c) {
  CFX_ASSIGN_OR_RETURN(PartialTensorShape x, c.WithRank(0, 1));
  c.set_output(0, x);
  return Status();
}

Status UnsortedSegmentSumShape(InferenceContext& c) {
  CFX_RETURN_IF_ERROR(c.WithRank(2, 0).status());
  if (c.input(1).unknown_rank()) {
    c.set_output(0, PartialTensorShape::UnknownRank());
    return Status();
  }
  int64_t num_segments = kUnknown;
  if (std::optional<int64_t> v = ConstScalar(c, 2)) num_segments = *v;
  if (c.input(0).unknown_rank()) {
    c.set_output(0, PartialTensorShape::UnknownRank());
    return Status();
  }
  Dims out;
  CFX_RETURN_IF_ERROR(RuleStatus(c, shape_rules::UnsortedSegmentShape(
                                        c.input(0).dims(), c.input(1).dims(), num_segments, &out)));
  c.set_output(0, PartialTensorShape(out));
  return Status();
}

// The sorted segment reductions: [number of segments] + data.shape[1:]; segment_ids is a vector
// as long as data's first dimension, the number of segments its last value + 1 when constant.
Status SortedSegmentShape(InferenceContext& c) {
  CFX_ASSIGN_OR_RETURN(PartialTensorShape ids, c.WithRank(1, 1));
  CFX_ASSIGN_OR_RETURN(PartialTensorShape data, c.WithRankAtLeast(0, 1));
  if (data.unknown_rank()) {
    c.set_output(0, PartialTensorShape::UnknownRank());
    return Status();
  }
  if (data.dim(0) >= 0 && ids.dim(0) >= 0 && data.dim(0) != ids.dim(0))
    return c.Error(StrCat("segment_ids has ", ids.dim(0), " elements but data's first dimension is ",
                          data.dim(0)));
  Dims out = data.dims();
  out[0] = kUnknown;
  if (std::optional<Dims> v = ConstValues(c, 1); v && (v->empty() || v->back() >= 0))
    out[0] = v->empty() ? 0 : std::min<int64_t>(v->back(), int64_t{1} << 62) + 1;
  c.set_output(0, PartialTensorShape(out));
  return Status();
}

// "y: T, dy: T -> z: T", TensorFlow's gradients of unary ops written in terms of their output y.
OpDefBuilder UnaryGradOp(const char* name) {
  OpDefBuilder b(name);
  b.Input("y: T")
      .Input("dy: T")
      .Output("z: T")
      .Attr("T: {bfloat16, half, float, double, complex64, complex128}")
      .SetShapeFn(MergeBothInputsShape);
  return b;
}

}  // namespace

void RegisterGradientOps(OpRegistry* r) {
  r->RegisterOrDie(OpDefBuilder("ReluGrad")
                       .Input("gradients: T")
                       .Input("features: T")
                       .Output("backprops: T")
                       .Attr("T: realnumbertype")
                       .SetShapeFn(MergeBothInputsShape)
                       .Summary("gradients * (features > 0): the gradient of Relu."));
  r->RegisterOrDie(
      UnaryGradOp("SigmoidGrad").Summary("dy * y * (1 - y): the gradient of y = Sigmoid(x)."));
  r->RegisterOrDie(
      UnaryGradOp("TanhGrad").Summary("dy * (1 - y * y): the gradient of y = Tanh(x)."));
  r->RegisterOrDie(UnaryGradOp("SqrtGrad").Summary("0.5 * dy / y: the gradient of y = Sqrt(x)."));
  r->RegisterOrDie(
      UnaryGradOp("RsqrtGrad").Summary("-0.5 * dy * y^3: the gradient of y = Rsqrt(x)."));
  r->RegisterOrDie(
      UnaryGradOp("ReciprocalGrad").Summary("-dy * y * y: the gradient of y = Reciprocal(x)."));
  r->RegisterOrDie(OpDefBuilder("BroadcastGradientArgs")
                       .Input("s0: T")
                       .Input("s1: T")
                       .Output("r0: T")
                       .Output("r1: T")
                       .Attr("T: {int32, int64} = DT_INT32")
                       .SetShapeFn(BroadcastGradientArgsShape)
                       .Summary("The dimensions to sum the gradient of s0 op s1 (broadcast) over "
                                "for each operand."));
  r->RegisterOrDie(OpDefBuilder("BroadcastArgs")
                       .Input("s0: T")
                       .Input("s1: T")
                       .Output("r0: T")
                       .Attr("T: {int32, int64} = DT_INT32")
                       .SetShapeFn(BroadcastArgsShapeFn)
                       .Summary("The shape NumPy broadcasting gives operands of shapes s0 and s1."));
  r->RegisterOrDie(OpDefBuilder("ConcatOffset")
                       .Input("concat_dim: int32")
                       .Input("shape: N * shape_type")
                       .Output("offset: N * shape_type")
                       .Attr("N: int >= 2")
                       .Attr("shape_type: {int32, int64} = DT_INT32")
                       .SetShapeFn(ConcatOffsetShapeFn)
                       .Summary("Where each input of a concatenation along concat_dim starts "
                                "(ConcatV2's gradient slices with these)."));
  r->RegisterOrDie(OpDefBuilder("BroadcastTo")
                       .Input("input: T")
                       .Input("shape: Tidx")
                       .Output("output: T")
                       .Attr("T: type")
                       .Attr("Tidx: {int32, int64} = DT_INT32")
                       .SetShapeFn(BroadcastToShape)
                       .Summary("`input` broadcast NumPy-style to `shape`."));
  r->RegisterOrDie(OpDefBuilder("InvertPermutation")
                       .Input("x: T")
                       .Output("y: T")
                       .Attr("T: {int32, int64} = DT_INT32")
                       .SetShapeFn(InvertPermutationShape)
                       .Summary("The inverse permutation: y[x[i]] = i."));
  r->RegisterOrDie(OpDefBuilder("StopGradient")
                       .Input("input: T")
                       .Output("output: T")
                       .Attr("T: type")
                       .SetShapeFn(UnchangedShape)
                       .Summary("`input` unchanged; gradients do not flow through it."));
  r->RegisterOrDie(OpDefBuilder("PreventGradient")
                       .Input("input: T")
                       .Output("output: T")
                       .Attr("T: type")
                       .Attr("message: string = ''")
                       .SetShapeFn(UnchangedShape)
                       .Summary("`input` unchanged; asking for its gradient is an error that "
                                "shows `message`."));
  r->RegisterOrDie(OpDefBuilder("UnsortedSegmentSum")
                       .Input("data: T")
                       .Input("segment_ids: Tindices")
                       .Input("num_segments: Tnumsegments")
                       .Output("output: T")
                       .Attr("T: numbertype")
                       .Attr("Tindices: {int16, int32, int64}")
                       .Attr("Tnumsegments: {int32, int64} = DT_INT32")
                       .SetShapeFn(UnsortedSegmentSumShape)
                       .Summary("output[i] = sum of the data[j...] with segment_ids[j...] == i; "
                                "negative ids are dropped."));
  struct Unsorted {
    const char* name;
    const char* types;
    const char* what;
  };
  for (const Unsorted& u : {Unsorted{"UnsortedSegmentProd", "T: numbertype", "product"},
                            Unsorted{"UnsortedSegmentMax", "T: realnumbertype", "maximum"},
                            Unsorted{"UnsortedSegmentMin", "T: realnumbertype", "minimum"}})
    r->RegisterOrDie(OpDefBuilder(u.name)
                         .Input("data: T")
                         .Input("segment_ids: Tindices")
                         .Input("num_segments: Tnumsegments")
                         .Output("output: T")
                         .Attr(u.types)
                         .Attr("Tindices: {int32, int64}")
                         .Attr("Tnumsegments: {int32, int64} = DT_INT32")
                         .SetShapeFn(UnsortedSegmentSumShape)
                         .Summary(StrCat("output[i] = the ", u.what,
                                         " of the data[j...] with segment_ids[j...] == i; "
                                         "negative ids are dropped.")));
  for (const Unsorted& u : {Unsorted{"SegmentSum", "T: numbertype", "sum"},
                            Unsorted{"SegmentMean", "T: numbertype", "mean"},
                            Unsorted{"SegmentProd", "T: numbertype", "product"},
                            Unsorted{"SegmentMax", "T: realnumbertype", "maximum"},
                            Unsorted{"SegmentMin", "T: realnumbertype", "minimum"}})
    r->RegisterOrDie(OpDefBuilder(u.name)
                         .Input("data: T")
                         .Input("segment_ids: Tindices")
                         .Output("output: T")
                         .Attr(u.types)
                         .Attr("Tindices: {int32, int64}")
                         .SetShapeFn(SortedSegmentShape)
                         .Summary(StrCat("output[i] = the ", u.what,
                                         " of the rows of data whose sorted segment_ids == i.")));
}

}  // namespace cfx::internal
