// Gradients of the ops that take or make index tensors: TopKV2, GatherNd, ScatterNd and
// TensorScatterUpdate (OneHot has none). Formulas as
// TensorFlow defines them; index inputs get no gradient.
#include "conflux/cc/ops/standard_ops.h"
#include "grad_helpers.h"

namespace cfx::internal {
namespace {

using Grads = std::vector<Output>;

// Entry i (counted from the end when negative) of the int64 vector `v`, as a scalar.
Output Entry(const Scope& s, const Output& v, int64_t i) {
  return ops::StridedSlice(s, v, {i}, {i + 1}, {int64_t{1}},
                           ops::StridedSliceAttrs().ShrinkAxisMask(1));
}

Output Int64Shape(const Scope& s, const Output& x) {
  return ops::Shape(s, x, ops::ShapeAttrs().OutType(DT_INT64));
}

// TopKV2: each incoming gradient goes back to the input element it was taken from. Row r's
// column c is element r * columns + c of the flattened input; no element is taken twice, so the
// segment sum only places.
Status TopKGrad(const Scope& s, const Operation& op, const Grads& dy, Grads* dx) {
  Output input_shape = Int64Shape(s, op.input(0));
  Output indices = ops::Cast(s, op.output(1), DT_INT64);
  Output k = Entry(s, Int64Shape(s, indices), -1);
  Output rows_by_k = ops::Reshape(s, indices, ops::Pack(s, {Input(int64_t{-1}), k}));
  Output rows = Entry(s, Int64Shape(s, rows_by_k), 0);
  Output columns = Entry(s, input_shape, -1);
  Output row_starts =
      ops::ExpandDims(s, ops::Mul(s, ops::Range(s, int64_t{0}, rows, int64_t{1}), columns), 1);
  Output flat = ops::Reshape(s, ops::AddV2(s, rows_by_k, row_starts), {int64_t{-1}});
  Output size = ops::Size(s, op.input(0), ops::SizeAttrs().OutType(DT_INT64));
  Output sums = ops::UnsortedSegmentSum(s, ops::Reshape(s, dy[0], {int64_t{-1}}), flat, size);
  *dx = {ops::Reshape(s, sums, input_shape), Output()};
  return s.status();
}

// The op's bad_indices_policy, passed on to the ops of its gradient so that they skip the same
// tuples.
std::string Policy(const Operation& op) {
  const AttrValue* v = op.node()->attr("bad_indices_policy");
  return v == nullptr ? "" : v->s;
}

// GatherNd: each slice of dy goes back to where it was read from; repeated tuples add up.
Status GatherNdGrad(const Scope& s, const Operation& op, const Grads& dy, Grads* dx) {
  Output indices = op.input(1);
  // ScatterNd takes the output's shape in the indices' type; Shape has no int16 form.
  if (indices.type() == DT_INT16) indices = ops::Cast(s, indices, DT_INT32);
  Output shape = ops::Shape(s, op.input(0), ops::ShapeAttrs().OutType(indices.type()));
  *dx = {
      ops::ScatterNd(s, indices, dy[0], shape, ops::ScatterNdAttrs().BadIndicesPolicy(Policy(op))),
      Output()};
  return s.status();
}

// ScatterNd: each update's gradient is the slice of dy it was added to.
Status ScatterNdGrad(const Scope& s, const Operation& op, const Grads& dy, Grads* dx) {
  *dx = {Output(),
         ops::GatherNd(s, dy[0], op.input(0), ops::GatherNdAttrs().BadIndicesPolicy(Policy(op))),
         Output()};
  return s.status();
}

// TensorScatterUpdate: dy with the overwritten slices zeroed for the tensor, those slices for
// the updates.
Status TensorScatterUpdateGrad(const Scope& s, const Operation& op, const Grads& dy, Grads* dx) {
  Output indices = op.input(1);
  const std::string policy = Policy(op);
  Output tensor_grad =
      ops::TensorScatterUpdate(s, dy[0], indices, ops::ZerosLike(s, op.input(2)),
                               ops::TensorScatterUpdateAttrs().BadIndicesPolicy(policy));
  // GatherNd has no uint16 indices.
  Output gather_indices = indices.type() == DT_UINT16 ? ops::Cast(s, indices, DT_INT32) : indices;
  Output updates_grad =
      ops::GatherNd(s, dy[0], gather_indices, ops::GatherNdAttrs().BadIndicesPolicy(policy));
  *dx = {tensor_grad, Output(), updates_grad};
  return s.status();
}

// TensorScatterAdd and TensorScatterSub: dy for the tensor, the slices the updates went into
// (negated for Sub) for the updates.
template <bool kNegate>
Status TensorScatterAddGrad(const Scope& s, const Operation& op, const Grads& dy, Grads* dx) {
  Output updates_grad = ops::GatherNd(s, dy[0], op.input(1),
                                      ops::GatherNdAttrs().BadIndicesPolicy(Policy(op)));
  if (kNegate) updates_grad = ops::Neg(s, updates_grad);
  *dx = {dy[0], Output(), updates_grad};
  return s.status();
}

}  // namespace

void RegisterIndexGradients(GradientRegistry* r) {
  (void)r->Register("TensorScatterAdd", TensorScatterAddGrad<false>);
  (void)r->Register("TensorScatterSub", TensorScatterAddGrad<true>);
  (void)r->Register("TopKV2", TopKGrad);
  (void)r->Register("GatherNd", GatherNdGrad);
  (void)r->Register("ScatterNd", ScatterNdGrad);
  (void)r->Register("TensorScatterUpdate", TensorScatterUpdateGrad);
  r->RegisterNoGradient("OneHot");
}

}  // namespace cfx::internal
