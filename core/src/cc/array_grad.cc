// Gradients of the standard array ops (reshapes, transposes, concatenation, packing, gathers,
// selection) and the registry of standard gradients. Formulas as TensorFlow defines them.
#include "conflux/cc/ops/standard_ops.h"
#include "grad_helpers.h"

namespace cfx::internal {
namespace {

using Grads = std::vector<Output>;

int64_t IntAttr(const Operation& op, const char* name) {
  const AttrValue* v = op.node()->attr(name);
  return v == nullptr ? 0 : v->i;
}

// dy reshaped to the shape of the op's input 0; the other inputs (shapes, axes) get none.
Status ReshapeToInput(const Scope& s, const Operation& op, const Grads& dy, Grads* dx) {
  dx->assign(op.num_inputs(), Output());
  (*dx)[0] = ops::Reshape(s, dy[0], ops::Shape(s, op.input(0)));
  return s.status();
}

// The gradients of ConcatV2's inputs: slices of dy at each input's offset along the axis.
Status ConcatGrad(const Scope& s, const Operation& op, const Grads& dy, Grads* dx) {
  const int n = op.num_inputs() - 1;
  Output axis = ops::Cast(s, op.input(n), DT_INT32);
  Output rank = ops::Rank(s, op.input(0));
  axis = ops::AddV2(s, axis, ops::Mul(s, rank, ops::Cast(s, ops::Less(s, axis, 0), DT_INT32)));
  // one_hot[d] = 1 where d is the axis: offsets move along it only.
  Output one_hot = ops::Cast(s, ops::Equal(s, ops::Range(s, 0, rank, 1), axis), DT_INT32);
  Output offset = ops::ZerosLike(s, one_hot);
  dx->assign(op.num_inputs(), Output());
  for (int i = 0; i < n; ++i) {
    Output shape = ops::Cast(s, ops::Shape(s, op.input(i)), DT_INT32);
    (*dx)[i] = ops::Slice(s, dy[0], offset, shape);
    offset = ops::AddV2(s, offset, ops::Mul(s, shape, one_hot));
  }
  return s.status();
}

// The gradients of the pieces of a split, joined along `axis` (ConcatV2 takes two or more).
Output Joined(const Scope& s, const Grads& pieces, const Output& axis) {
  if (pieces.size() == 1) return pieces[0];
  return ops::ConcatV2(s, InputList(pieces.begin(), pieces.end()), axis);
}

}  // namespace

void RegisterArrayGradients(GradientRegistry* r) {
  for (const char* op : {"Reshape", "ExpandDims", "Squeeze"})
    (void)r->Register(op, ReshapeToInput);
  (void)r->Register("ConcatV2", ConcatGrad);
  // Split's pieces go back together along split_dim (zeros for pieces with no gradient).
  (void)r->Register("Split", [](const Scope& s, const Operation& op, const Grads& dy, Grads* dx) {
    *dx = {Output(), Joined(s, dy, op.input(0))};
    return s.status();
  });
  // SplitV's pieces go back together the same way; size_splits and split_dim get none.
  (void)r->Register("SplitV", [](const Scope& s, const Operation& op, const Grads& dy, Grads* dx) {
    *dx = {Joined(s, dy, op.input(2)), Output(), Output()};
    return s.status();
  });
  // ReverseV2 is its own inverse.
  (void)r->Register("ReverseV2", [](const Scope& s, const Operation& op, const Grads& dy,
                                    Grads* dx) {
    *dx = {ops::ReverseV2(s, dy[0], op.input(1)), Output()};
    return s.status();
  });
  // SpaceToDepth and DepthToSpace undo each other; MatrixBandPart keeps the gradient's band.
  (void)r->Register("SpaceToDepth", [](const Scope& s, const Operation& op, const Grads& dy,
                                       Grads* dx) {
    const std::string& format = op.node()->attr("data_format")->s;
    *dx = {ops::DepthToSpace(s, dy[0], IntAttr(op, "block_size"),
                             ops::DepthToSpaceAttrs().DataFormat(format))};
    return s.status();
  });
  (void)r->Register("DepthToSpace", [](const Scope& s, const Operation& op, const Grads& dy,
                                       Grads* dx) {
    const std::string& format = op.node()->attr("data_format")->s;
    *dx = {ops::SpaceToDepth(s, dy[0], IntAttr(op, "block_size"),
                             ops::SpaceToDepthAttrs().DataFormat(format))};
    return s.status();
  });
  (void)r->Register("MatrixBandPart", [](const Scope& s, const Operation& op, const Grads& dy,
                                         Grads* dx) {
    *dx = {ops::MatrixBandPart(s, dy[0], op.input(1), op.input(2)), Output(), Output()};
    return s.status();
  });
  (void)r->Register("Transpose", [](const Scope& s, const Operation& op, const Grads& dy,
                                    Grads* dx) {
    *dx = {ops::Transpose(s, dy[0], ops::InvertPermutation(s, op.input(1))), Output()};
    return s.status();
  });
  (void)r->Register("Pack", [](const Scope& s, const Operation& op, const Grads& dy, Grads* dx) {
    auto parts = ops::Unpack(s, dy[0], op.num_inputs(),
                             ops::UnpackAttrs().Axis(IntAttr(op, "axis")));
    *dx = parts.output;
    if (!s.ok()) dx->assign(op.num_inputs(), Output());
    return s.status();
  });
  (void)r->Register("Unpack", [](const Scope& s, const Operation& op, const Grads& dy,
                                 Grads* dx) {
    InputList parts(dy.begin(), dy.end());
    *dx = {ops::Pack(s, parts, ops::PackAttrs().Axis(IntAttr(op, "axis")))};
    return s.status();
  });
  (void)r->Register("Fill", [](const Scope& s, const Operation&, const Grads& dy, Grads* dx) {
    Output all = ops::Range(s, 0, ops::Rank(s, dy[0]), 1);
    *dx = {Output(), ops::Sum(s, dy[0], all)};
    return s.status();
  });
  (void)r->Register("BroadcastTo", [](const Scope& s, const Operation& op, const Grads& dy,
                                      Grads* dx) {
    Output sx = ops::Shape(s, op.input(0), ops::ShapeAttrs().OutType(op.input(1).type()));
    auto axes = ops::BroadcastGradientArgs(s, sx, op.input(1));
    *dx = {ops::Reshape(s, ops::Sum(s, dy[0], axes.r0), sx), Output()};
    return s.status();
  });
  auto select = [](const Scope& s, const Operation& op, const Grads& dy, Grads* dx) {
    Output c = op.input(0), t = op.input(1), e = op.input(2);
    Output zeros = ops::ZerosLike(s, dy[0]);
    Output gt, ge;
    if (op.op_type() == "Select") {
      // Select's condition may be a vector choosing rows: route dy with the same rule.
      gt = ops::Select(s, c, dy[0], zeros);
      ge = ops::Select(s, c, zeros, dy[0]);
    } else {
      gt = ops::SelectV2(s, c, dy[0], zeros);
      ge = ops::SelectV2(s, c, zeros, dy[0]);
      ReduceForBroadcast(s, t, e, &gt, &ge);
    }
    *dx = {Output(), gt, ge};
    return s.status();
  };
  // The sorted segment reductions (TensorFlow's math_grad.py): each row of data gets the
  // gradient of its segment's row; a mean divides it by the segment's length; a maximum or
  // minimum gives it to the rows equal to the result, split evenly among ties.
  (void)r->Register("SegmentSum", [](const Scope& s, const Operation& op, const Grads& dy,
                                     Grads* dx) {
    *dx = {ops::GatherV2(s, dy[0], op.input(1), 0), Output()};
    return s.status();
  });
  (void)r->Register("SegmentMean", [](const Scope& s, const Operation& op, const Grads& dy,
                                      Grads* dx) {
    Output counts = ops::SegmentSum(s, ops::OnesLike(s, op.input(0)), op.input(1));
    *dx = {ops::GatherV2(s, ops::RealDiv(s, dy[0], counts), op.input(1), 0), Output()};
    return s.status();
  });
  auto segment_extreme = [](const Scope& s, const Operation& op, const Grads& dy, Grads* dx) {
    Output data = op.input(0), ids = op.input(1);
    Output selected = ops::Equal(s, data, ops::GatherV2(s, op.output(0), ids, 0));
    Output count = ops::SegmentSum(s, ops::Cast(s, selected, data.type()), ids);
    Output share = ops::GatherV2(s, ops::RealDiv(s, dy[0], count), ids, 0);
    *dx = {ops::SelectV2(s, selected, share, ops::ZerosLike(s, data)), Output()};
    return s.status();
  };
  (void)r->Register("SegmentMax", segment_extreme);
  (void)r->Register("SegmentMin", segment_extreme);
  // Roll: dy rolled back.
  (void)r->Register("Roll", [](const Scope& s, const Operation& op, const Grads& dy, Grads* dx) {
    *dx = {ops::Roll(s, dy[0], ops::Neg(s, op.input(1)), op.input(2)), Output(), Output()};
    return s.status();
  });
  for (const char* op : {"Where", "Unique", "Bucketize"}) r->RegisterNoGradient(op);
  (void)r->Register("Select", select);
  (void)r->Register("SelectV2", select);
  (void)r->Register("GatherV2", [](const Scope& s, const Operation& op, const Grads& dy,
                                   Grads* dx) {
    // Rows of dy go back to the rows they were gathered from (summed where an index repeats).
    const Node* axis = op.input(2).node();
    const bool axis_zero = axis->op() == "Const" && axis->def().attr.count("value") &&
                           axis->def().attr.at("value").tensor.num_elements() == 1 &&
                           (axis->def().attr.at("value").tensor.dtype() == DT_INT64
                                ? axis->def().attr.at("value").tensor.at<int64_t>(0)
                                : axis->def().attr.at("value").tensor.at<int32_t>(0)) == 0;
    if (!axis_zero || IntAttr(op, "batch_dims") != 0)
      return errors::Unimplemented("the gradient of GatherV2 is defined for a constant axis 0 ",
                                   "and batch_dims 0 (node '", op.name(), "')");
    Output params_shape = ops::Shape(s, op.input(0));
    Output indices = ops::Reshape(s, op.input(1), {-1});
    Output rows = ops::Squeeze(s, ops::Slice(s, params_shape, {0}, {1}));
    Output rest = ops::Slice(s, params_shape, {1}, {-1});
    Output flat = ops::Reshape(s, dy[0], ops::ConcatV2(s, {ops::ExpandDims(s, ops::Size(s, indices), 0), rest}, 0));
    *dx = {ops::UnsortedSegmentSum(s, flat, indices, rows), Output(), Output()};
    return s.status();
  });
  // Pad and PadV2: dy without the padding, a slice at the paddings' "before" column; paddings
  // and constant_values get none (TensorFlow's rule).
  auto pad = [](const Scope& s, const Operation& op, const Grads& dy, Grads* dx) {
    Output paddings = op.input(1);
    Output begin = ops::Reshape(s, ops::Slice(s, paddings, {0, 0}, {-1, 1}), {-1});
    Output size = ops::Shape(s, op.input(0), ops::ShapeAttrs().OutType(paddings.type()));
    dx->assign(op.num_inputs(), Output());
    (*dx)[0] = ops::Slice(s, dy[0], begin, size);
    return s.status();
  };
  (void)r->Register("Pad", pad);
  (void)r->Register("PadV2", pad);
  // MirrorPad and MirrorPadGrad are each other's gradient.
  (void)r->Register("MirrorPad", [](const Scope& s, const Operation& op, const Grads& dy,
                                    Grads* dx) {
    *dx = {ops::MirrorPadGrad(s, dy[0], op.input(1), op.node()->attr("mode")->s), Output()};
    return s.status();
  });
  (void)r->Register("MirrorPadGrad", [](const Scope& s, const Operation& op, const Grads& dy,
                                        Grads* dx) {
    *dx = {ops::MirrorPad(s, dy[0], op.input(1), op.node()->attr("mode")->s), Output()};
    return s.status();
  });
  r->RegisterNoGradient("StopGradient");
  (void)r->Register("PreventGradient", [](const Scope&, const Operation& op, const Grads&,
                                          Grads*) {
    const AttrValue* m = op.node()->attr("message");
    return errors::InvalidArgument("a gradient reached PreventGradient node '", op.name(), "'",
                                   m != nullptr && !m->s.empty() ? ": " + m->s : "");
  });
  for (const char* op : {"Shape", "Size", "Rank", "ZerosLike", "OnesLike", "Const", "Placeholder"})
    r->RegisterNoGradient(op);
}

}  // namespace cfx::internal

namespace cfx {

const GradientRegistry& StandardGradients() {
  static const GradientRegistry* registry = [] {
    auto* r = new GradientRegistry;
    internal::RegisterMathGradients(r);
    internal::RegisterArrayGradients(r);
    internal::RegisterIndexGradients(r);
    internal::RegisterLinalgGradients(r);
    internal::RegisterTensorArrayGradients(r);
    internal::RegisterListGradients(r);
    return r;
  }();
  return *registry;
}

}  // namespace cfx
