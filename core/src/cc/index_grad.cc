// Gradients of the ops that take or make index tensors: TopKV2 (OneHot has none). Formulas as
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

}  // namespace

void RegisterIndexGradients(GradientRegistry* r) {
  (void)r->Register("TopKV2", TopKGrad);
  r->RegisterNoGradient("OneHot");
}

}  // namespace cfx::internal
