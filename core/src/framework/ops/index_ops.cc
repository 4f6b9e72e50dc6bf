// Ops that take or make index tensors: TopKV2, OneHot, GatherNd, ScatterNd and
// TensorScatterUpdate, with TensorFlow's definitions.
//
// The shape rules (conflux/sdk/index_shape_rules.h) are shared with the kernels, so inference and
// execution refuse the same inputs with the same words.
#include <optional>
#include <string>

#include "conflux/sdk/index_shape_rules.h"
#include "conflux/shape_inference.h"
#include "framework/ops/ops.h"
#include "framework/ops/shape_fn_util.h"

namespace cfx::internal {
namespace {

using shape_rules::Dims;

// Input i's dims, or nullopt when its rank is unknown.
std::optional<Dims> KnownRank(const InferenceContext& c, int i) {
  if (c.input(i).unknown_rank()) return std::nullopt;
  return c.input(i).dims();
}

// Input i, named `what`, is a scalar (in the kernels' words).
Status CheckScalar(const InferenceContext& c, int i, const char* what) {
  const PartialTensorShape& s = c.input(i);
  if (!s.unknown_rank() && s.rank() != 0)
    return c.Error(StrCat(what, " must be a scalar, got shape ", s.ToString()));
  return Status();
}

// TopKV2: values and indices both have the input's shape with k columns.
Status TopKShapeFn(InferenceContext& c) {
  CFX_RETURN_IF_ERROR(CheckScalar(c, 1, "k"));
  std::optional<Dims> input = KnownRank(c, 0);
  if (!input) {
    for (int i = 0; i < 2; ++i) c.set_output(i, PartialTensorShape::UnknownRank());
    return Status();
  }
  Dims out;
  CFX_RETURN_IF_ERROR(RuleStatus(c, shape_rules::TopKShape(*input, ConstScalar(c, 1), &out)));
  for (int i = 0; i < 2; ++i) c.set_output(i, PartialTensorShape(out));
  return Status();
}

// OneHot: the indices' shape with a dimension of `depth` inserted at `axis`.
Status OneHotShapeFn(InferenceContext& c) {
  CFX_RETURN_IF_ERROR(CheckScalar(c, 1, "depth"));
  CFX_RETURN_IF_ERROR(CheckScalar(c, 2, "on_value"));
  CFX_RETURN_IF_ERROR(CheckScalar(c, 3, "off_value"));
  int64_t axis = -1;
  CFX_RETURN_IF_ERROR(c.GetAttr("axis", &axis));
  std::optional<Dims> indices = KnownRank(c, 0);
  if (!indices) {
    if (axis < -1) return c.Error(StrCat("axis = ", axis, " must be -1 or >= 0"));
    c.set_output(0, PartialTensorShape::UnknownRank());
    return Status();
  }
  Dims out;
  CFX_RETURN_IF_ERROR(
      RuleStatus(c, shape_rules::OneHotShape(*indices, ConstScalar(c, 1), axis, &out)));
  c.set_output(0, PartialTensorShape(out));
  return Status();
}

// bad_indices_policy: "" or "DEFAULT" (on CPU: an error), "ERROR" or "IGNORE" (a bad index
// tuple reads zeros or writes nothing).
Status CheckPolicy(const InferenceContext& c) {
  std::string policy;
  CFX_RETURN_IF_ERROR(c.GetAttr("bad_indices_policy", &policy));
  return RuleStatus(c, shape_rules::CheckBadIndicesPolicy(policy, nullptr));
}

Status GatherNdShapeFn(InferenceContext& c) {
  CFX_RETURN_IF_ERROR(CheckPolicy(c));
  std::optional<Dims> params = KnownRank(c, 0), indices = KnownRank(c, 1);
  if (!params || !indices) {
    c.set_output(0, PartialTensorShape::UnknownRank());
    return Status();
  }
  Dims out;
  shape_rules::NdSizes sizes;
  bool rank_unknown = false;
  CFX_RETURN_IF_ERROR(
      RuleStatus(c, shape_rules::GatherNdShape(*params, *indices, &out, &sizes, &rank_unknown)));
  c.set_output(0, rank_unknown ? PartialTensorShape::UnknownRank() : PartialTensorShape(out));
  return Status();
}

// ScatterNd: the shape `shape` holds (its values when constant).
Status ScatterNdShapeFn(InferenceContext& c) {
  CFX_RETURN_IF_ERROR(CheckPolicy(c));
  const PartialTensorShape& shape = c.input(2);
  if (!shape.unknown_rank() && shape.rank() != 1)
    return c.Error("shape must be a vector, got shape " + shape.ToString());
  std::optional<Dims> values = ConstValues(c, 2);
  Dims output;
  if (values) {
    output = *values;
    CFX_RETURN_IF_ERROR(RuleStatus(c, shape_rules::CheckNonNegative(output, "shape")));
    if (output.size() > kMaxRank)
      return c.Error(
          StrCat("shape has ", output.size(), " entries; the maximum rank is ", kMaxRank));
  } else if (!shape.unknown_rank() && shape.dim(0) >= 0) {
    if (shape.dim(0) > kMaxRank)
      return c.Error(
          StrCat("shape has ", shape.dim(0), " entries; the maximum rank is ", kMaxRank));
    output.assign(static_cast<size_t>(shape.dim(0)), shape_rules::kUnknown);
  } else {
    c.set_output(0, PartialTensorShape::UnknownRank());
    return Status();
  }
  std::optional<Dims> indices = KnownRank(c, 0), updates = KnownRank(c, 1);
  shape_rules::NdSizes sizes;
  if (indices && updates)
    CFX_RETURN_IF_ERROR(
        RuleStatus(c, shape_rules::ScatterNdShape(*indices, *updates, output, &sizes)));
  c.set_output(0, PartialTensorShape(output));
  return Status();
}

// TensorScatterUpdate: the tensor's shape.
Status TensorScatterUpdateShapeFn(InferenceContext& c) {
  CFX_RETURN_IF_ERROR(CheckPolicy(c));
  std::optional<Dims> tensor = KnownRank(c, 0), indices = KnownRank(c, 1),
                      updates = KnownRank(c, 2);
  shape_rules::NdSizes sizes;
  if (tensor && indices && updates)
    CFX_RETURN_IF_ERROR(
        RuleStatus(c, shape_rules::ScatterNdShape(*indices, *updates, *tensor, &sizes)));
  c.set_output(0, c.input(0));
  return Status();
}

}  // namespace

void RegisterIndexOps(OpRegistry* r) {
  r->RegisterOrDie(OpDefBuilder("TopKV2")
                       .Input("input: T")
                       .Input("k: Tk")
                       .Output("values: T")
                       .Output("indices: index_type")
                       .Attr("sorted: bool = true")
                       .Attr("T: realnumbertype")
                       .Attr("Tk: {int16, int32, int64} = DT_INT32")
                       .Attr("index_type: {int16, int32, int64} = DT_INT32")
                       .SetShapeFn(TopKShapeFn)
                       .Summary("The k largest entries of each row (the last dimension) of "
                                "`input`, largest first, ties to the lower index, and their "
                                "column indices."));
  r->RegisterOrDie(OpDefBuilder("OneHot")
                       .Input("indices: TI")
                       .Input("depth: int32")
                       .Input("on_value: T")
                       .Input("off_value: T")
                       .Output("output: T")
                       .Attr("axis: int = -1")
                       .Attr("T: type")
                       .Attr("TI: {uint8, int8, int32, int64} = DT_INT64")
                       .SetShapeFn(OneHotShapeFn)
                       .Summary("`on_value` where a new dimension of `depth` entries at `axis` "
                                "(-1: last) equals the index, `off_value` elsewhere (everywhere "
                                "for an index outside [0, depth))."));
  r->RegisterOrDie(OpDefBuilder("GatherNd")
                       .Input("params: Tparams")
                       .Input("indices: Tindices")
                       .Output("output: Tparams")
                       .Attr("Tparams: type")
                       .Attr("Tindices: {int16, int32, int64}")
                       .Attr("bad_indices_policy: string = ''")
                       .SetShapeFn(GatherNdShapeFn)
                       .Summary("The slices of `params` that the index tuples (the last "
                                "dimension of `indices`) pick."));
  r->RegisterOrDie(OpDefBuilder("ScatterNd")
                       .Input("indices: Tindices")
                       .Input("updates: T")
                       .Input("shape: Tindices")
                       .Output("output: T")
                       .Attr("T: type")
                       .Attr("Tindices: {int16, int32, int64}")
                       .Attr("bad_indices_policy: string = ''")
                       .SetShapeFn(ScatterNdShapeFn)
                       .Summary("Zeros of `shape` with each slice of `updates` added at the "
                                "place its index tuple picks (repeated tuples add up)."));
  r->RegisterOrDie(OpDefBuilder("TensorScatterUpdate")
                       .Input("tensor: T")
                       .Input("indices: Tindices")
                       .Input("updates: T")
                       .Output("output: T")
                       .Attr("T: type")
                       .Attr("Tindices: {int16, int32, int64, uint16}")
                       .Attr("bad_indices_policy: string = ''")
                       .SetShapeFn(TensorScatterUpdateShapeFn)
                       .Summary("`tensor` with the slices its index tuples pick replaced by "
                                "those of `updates` (the last of repeated tuples wins)."));
  for (const char* op : {"TensorScatterAdd", "TensorScatterSub", "TensorScatterMax",
                         "TensorScatterMin"})
    r->RegisterOrDie(OpDefBuilder(op)
                         .Input("tensor: T")
                         .Input("indices: Tindices")
                         .Input("updates: T")
                         .Output("output: T")
                         .Attr("T: type")
                         .Attr("Tindices: {int32, int64}")
                         .Attr("bad_indices_policy: string = ''")
                         .SetShapeFn(TensorScatterUpdateShapeFn)
                         .Summary("`tensor` with each slice of `updates` added to, subtracted "
                                  "from, or maxed or minned into the slice its index tuple "
                                  "picks, tuple by tuple."));
}

}  // namespace cfx::internal
