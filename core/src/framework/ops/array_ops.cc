// Array ops: Reshape, Shape, Rank, Size, Fill, ZerosLike, OnesLike, Transpose, ConcatV2, Slice,
// StridedSlice, Split, SplitV, Pack, Unpack, ExpandDims, Squeeze, Tile, GatherV2, Range.
//
// Names, inputs, outputs, attrs, defaults and type lists are TensorFlow's. Shape functions work
// on partial shapes and use constant inputs where known; the rules themselves (what is valid,
// what shape results) live in conflux/sdk/shape_rules.h, shared with the kernels so that inference
// and execution accept the same inputs and report the same errors.
#include <optional>

#include "conflux/shape_inference.h"
#include "framework/ops/ops.h"
#include "framework/ops/shape_fn_util.h"
// Header-only, standard library only; to move to plugin-api/include/conflux/sdk/ (see there).
#include "conflux/sdk/layout_shape_rules.h"
#include "conflux/sdk/shape_rules.h"

namespace cfx::internal {
namespace {

using shape_rules::Dims;
using shape_rules::kUnknown;

void SetAllOutputs(InferenceContext& c, const PartialTensorShape& s) {
  for (int i = 0; i < c.num_outputs(); ++i) c.set_output(i, s);
}

// Dims of input i, or `rank` unknown dims when its rank is unknown.
Dims DimsOf(const InferenceContext& c, int i, int rank) {
  return c.input(i).unknown_rank() ? Dims(rank, kUnknown) : c.input(i).dims();
}

// The length of vector input i when known, else -1.
int64_t VectorLength(const InferenceContext& c, int i) {
  const PartialTensorShape& s = c.input(i);
  return s.unknown_rank() || s.rank() != 1 ? kUnknown : s.dim(0);
}

PartialTensorShape Vector(int64_t n) { return PartialTensorShape(Dims{n}); }

// `rank` unknown dims, or unknown rank when `rank` is; an error beyond kMaxRank, which a rank
// read from the length of a vector input can be (`why` says where the rank came from).
StatusOr<PartialTensorShape> OfRank(const InferenceContext& c, int64_t rank, const char* why) {
  if (rank < 0) return PartialTensorShape::UnknownRank();
  if (rank > kMaxRank)
    return c.Error(
        StrCat("the output would have rank ", rank, " (", why, "); the maximum is ", kMaxRank));
  return PartialTensorShape::UnknownDims(static_cast<int>(rank));
}

Status CheckScalar(const InferenceContext& c, int i) { return c.WithRank(i, 0).status(); }
Status CheckVector(const InferenceContext& c, int i) { return c.WithRank(i, 1).status(); }

// ---- Shape functions, one per op (in the order of registration below).

Status ReshapeShapeFn(InferenceContext& c) {
  CFX_RETURN_IF_ERROR(CheckVector(c, 1));
  std::optional<Dims> requested = ConstValues(c, 1);
  if (!requested) {
    CFX_ASSIGN_OR_RETURN(PartialTensorShape s, c.MakeShapeFromInput(1));
    c.set_output(0, s);
    return Status();
  }
  Dims out;
  CFX_RETURN_IF_ERROR(RuleStatus(c, shape_rules::ReshapeShape(DimsOf(c, 0, 1), *requested, &out)));
  c.set_output(0, PartialTensorShape(out));
  return Status();
}

Status ShapeShapeFn(InferenceContext& c) {
  c.set_output(0, Vector(c.input(0).rank()));
  return Status();
}

Status FillShapeFn(InferenceContext& c) {
  CFX_RETURN_IF_ERROR(CheckVector(c, 0));
  CFX_RETURN_IF_ERROR(CheckScalar(c, 1));
  if (std::optional<Dims> dims = ConstValues(c, 0)) {
    CFX_RETURN_IF_ERROR(RuleStatus(c, shape_rules::CheckNonNegative(*dims, "dims")));
    c.set_output(0, PartialTensorShape(*dims));
    return Status();
  }
  CFX_ASSIGN_OR_RETURN(PartialTensorShape s, c.MakeShapeFromInput(0));
  c.set_output(0, s);
  return Status();
}

Status TransposeShapeFn(InferenceContext& c) {
  CFX_RETURN_IF_ERROR(CheckVector(c, 1));
  const int64_t rank = c.input(0).unknown_rank() ? VectorLength(c, 1) : c.input(0).rank();
  if (std::optional<Dims> perm = ConstValues(c, 1)) {
    Dims out;
    CFX_RETURN_IF_ERROR(RuleStatus(
        c, shape_rules::TransposeShape(DimsOf(c, 0, static_cast<int>(perm->size())), *perm, &out)));
    c.set_output(0, PartialTensorShape(out));
  } else {
    CFX_ASSIGN_OR_RETURN(PartialTensorShape out, OfRank(c, rank, "the length of perm"));
    c.set_output(0, out);
  }
  return Status();
}

Status ConcatV2ShapeFn(InferenceContext& c) {
  const int n = c.num_inputs() - 1;
  CFX_RETURN_IF_ERROR(CheckScalar(c, n));
  int rank = -1;
  for (int k = 0; k < n && rank < 0; ++k) rank = c.input(k).rank();
  std::optional<int64_t> axis = ConstScalar(c, n);
  if (rank < 0 || !axis) {
    c.set_output(
        0, rank < 0 ? PartialTensorShape::UnknownRank() : PartialTensorShape::UnknownDims(rank));
    return Status();
  }
  std::vector<Dims> shapes;
  for (int k = 0; k < n; ++k) shapes.push_back(DimsOf(c, k, rank));
  Dims out;
  CFX_RETURN_IF_ERROR(RuleStatus(c, shape_rules::ConcatShape(shapes, &*axis, &out)));
  c.set_output(0, PartialTensorShape(out));
  return Status();
}

Status SliceShapeFn(InferenceContext& c) {
  CFX_RETURN_IF_ERROR(CheckVector(c, 1));
  CFX_RETURN_IF_ERROR(CheckVector(c, 2));
  std::optional<Dims> begin = ConstValues(c, 1), size = ConstValues(c, 2);
  int64_t rank = c.input(0).rank();
  if (rank < 0) rank = size ? static_cast<int64_t>(size->size()) : VectorLength(c, 2);
  if (rank < 0) rank = begin ? static_cast<int64_t>(begin->size()) : VectorLength(c, 1);
  if (rank < 0) {
    c.set_output(0, PartialTensorShape::UnknownRank());
    return Status();
  }
  if (!size) {
    CFX_ASSIGN_OR_RETURN(PartialTensorShape out, OfRank(c, rank, "the length of size"));
    c.set_output(0, out);
    return Status();
  }
  // With begin unknown, begin = 0 still checks what it can, and size -1 leaves a dim unknown.
  const Dims in = DimsOf(c, 0, static_cast<int>(rank));
  Dims out;
  CFX_RETURN_IF_ERROR(RuleStatus(
      c, shape_rules::SliceShape(in, begin ? *begin : Dims(size->size(), 0), *size, &out)));
  for (size_t i = 0; !begin && i < out.size(); ++i)
    if ((*size)[i] == -1) out[i] = kUnknown;
  c.set_output(0, PartialTensorShape(out));
  return Status();
}

Status StridedSliceShapeFn(InferenceContext& c) {
  for (int i = 1; i <= 3; ++i) CFX_RETURN_IF_ERROR(CheckVector(c, i));
  shape_rules::StridedSliceSpec spec;
  CFX_RETURN_IF_ERROR(c.GetAttr("begin_mask", &spec.begin_mask));
  CFX_RETURN_IF_ERROR(c.GetAttr("end_mask", &spec.end_mask));
  CFX_RETURN_IF_ERROR(c.GetAttr("ellipsis_mask", &spec.ellipsis_mask));
  CFX_RETURN_IF_ERROR(c.GetAttr("new_axis_mask", &spec.new_axis_mask));
  CFX_RETURN_IF_ERROR(c.GetAttr("shrink_axis_mask", &spec.shrink_axis_mask));
  std::optional<Dims> begin = ConstValues(c, 1), end = ConstValues(c, 2),
                      strides = ConstValues(c, 3);
  if (begin && end && strides) {
    spec.begin = *begin;
    spec.end = *end;
    spec.strides = *strides;
  } else {
    // Which dimensions come out depends only on the masks and the number of entries.
    int64_t n = kUnknown;
    for (int i = 1; i <= 3 && n < 0; ++i) n = VectorLength(c, i);
    if (n > kMaxRank)  // what the rule says, before n entries are allocated
      return c.Error(StrCat("at most ", kMaxRank, " range specifications are supported, got ", n));
    spec.values_known = false;
    spec.begin = spec.end = spec.strides = Dims(n < 0 ? 0 : n, 0);
    if (n < 0) {
      c.set_output(0, PartialTensorShape::UnknownRank());
      return Status();
    }
  }
  if (c.input(0).unknown_rank()) {
    c.set_output(0, PartialTensorShape::UnknownRank());
    return Status();
  }
  shape_rules::StridedSliceDense dense;
  Dims out;
  CFX_RETURN_IF_ERROR(
      RuleStatus(c, shape_rules::StridedSliceShape(c.input(0).dims(), spec, &dense, &out)));
  c.set_output(0, PartialTensorShape(out));
  return Status();
}

Status SplitShapeFn(InferenceContext& c) {
  CFX_RETURN_IF_ERROR(CheckScalar(c, 0));
  const PartialTensorShape& in = c.input(1);
  std::optional<int64_t> axis = ConstScalar(c, 0);
  if (in.unknown_rank() || !axis) {
    SetAllOutputs(c, in.unknown_rank() ? in : PartialTensorShape::UnknownDims(in.rank()));
    return Status();
  }
  Dims piece;
  CFX_RETURN_IF_ERROR(
      RuleStatus(c, shape_rules::SplitShape(in.dims(), &*axis, c.num_outputs(), &piece)));
  SetAllOutputs(c, PartialTensorShape(piece));
  return Status();
}

Status SplitVShapeFn(InferenceContext& c) {
  CFX_RETURN_IF_ERROR(CheckVector(c, 1));
  CFX_RETURN_IF_ERROR(CheckScalar(c, 2));
  const PartialTensorShape& in = c.input(0);
  std::optional<int64_t> axis = ConstScalar(c, 2);
  if (in.unknown_rank() || !axis) {
    SetAllOutputs(c, in.unknown_rank() ? in : PartialTensorShape::UnknownDims(in.rank()));
    return Status();
  }
  std::optional<Dims> sizes = ConstValues(c, 1);
  if (!sizes) {
    // Each piece is the input with the axis dimension unknown.
    Dims piece = in.dims();
    CFX_RETURN_IF_ERROR(RuleStatus(c, shape_rules::NormalizeAxis(&*axis, in.rank(), "split_dim")));
    piece[*axis] = kUnknown;
    SetAllOutputs(c, PartialTensorShape(piece));
    return Status();
  }
  std::vector<Dims> pieces;
  CFX_RETURN_IF_ERROR(
      RuleStatus(c, shape_rules::SplitVShape(in.dims(), *sizes, &*axis, c.num_outputs(), &pieces)));
  for (int i = 0; i < c.num_outputs(); ++i) c.set_output(i, PartialTensorShape(pieces[i]));
  return Status();
}

Status PackShapeFn(InferenceContext& c) {
  int64_t axis = 0;
  CFX_RETURN_IF_ERROR(c.GetAttr("axis", &axis));
  std::vector<Dims> known;
  for (int k = 0; k < c.num_inputs(); ++k)
    if (!c.input(k).unknown_rank()) known.push_back(c.input(k).dims());
  if (known.empty()) {
    c.set_output(0, PartialTensorShape::UnknownRank());
    return Status();
  }
  Dims out;
  CFX_RETURN_IF_ERROR(RuleStatus(c, shape_rules::PackShape(known, c.num_inputs(), &axis, &out)));
  c.set_output(0, PartialTensorShape(out));
  return Status();
}

Status UnpackShapeFn(InferenceContext& c) {
  int64_t axis = 0;
  CFX_RETURN_IF_ERROR(c.GetAttr("axis", &axis));
  if (c.input(0).unknown_rank()) {
    SetAllOutputs(c, PartialTensorShape::UnknownRank());
    return Status();
  }
  Dims piece;
  CFX_RETURN_IF_ERROR(
      RuleStatus(c, shape_rules::UnpackShape(c.input(0).dims(), &axis, c.num_outputs(), &piece)));
  SetAllOutputs(c, PartialTensorShape(piece));
  return Status();
}

Status ExpandDimsShapeFn(InferenceContext& c) {
  const PartialTensorShape& dim = c.input(1);
  if (dim.rank() > 1 || (dim.rank() == 1 && dim.dim(0) >= 0 && dim.dim(0) != 1))
    return c.Error("dim must be a scalar (or a vector of one element), got shape " +
                   dim.ToString());
  const PartialTensorShape& in = c.input(0);
  std::optional<int64_t> axis = ConstScalar(c, 1);
  if (in.unknown_rank() || !axis) {
    c.set_output(0, in.unknown_rank() ? in : PartialTensorShape::UnknownDims(in.rank() + 1));
    return Status();
  }
  Dims out;
  CFX_RETURN_IF_ERROR(RuleStatus(c, shape_rules::ExpandDimsShape(in.dims(), *axis, &out)));
  c.set_output(0, PartialTensorShape(out));
  return Status();
}

Status SqueezeShapeFn(InferenceContext& c) {
  Dims squeeze_dims;
  CFX_RETURN_IF_ERROR(c.GetAttr("squeeze_dims", &squeeze_dims));
  if (c.input(0).unknown_rank()) {
    c.set_output(0, c.input(0));
    return Status();
  }
  Dims out;
  bool rank_unknown = false;
  CFX_RETURN_IF_ERROR(RuleStatus(
      c, shape_rules::SqueezeShape(c.input(0).dims(), squeeze_dims, &out, &rank_unknown)));
  c.set_output(0, rank_unknown ? PartialTensorShape::UnknownRank() : PartialTensorShape(out));
  return Status();
}

Status TileShapeFn(InferenceContext& c) {
  CFX_RETURN_IF_ERROR(CheckVector(c, 1));
  const int64_t rank = c.input(0).unknown_rank() ? VectorLength(c, 1) : c.input(0).rank();
  std::optional<Dims> multiples = ConstValues(c, 1);
  if (!multiples) {
    CFX_ASSIGN_OR_RETURN(PartialTensorShape out, OfRank(c, rank, "the length of multiples"));
    c.set_output(0, out);
    return Status();
  }
  Dims out;
  CFX_RETURN_IF_ERROR(RuleStatus(
      c,
      shape_rules::TileShape(DimsOf(c, 0, static_cast<int>(multiples->size())), *multiples, &out)));
  c.set_output(0, PartialTensorShape(out));
  return Status();
}

Status GatherV2ShapeFn(InferenceContext& c) {
  CFX_RETURN_IF_ERROR(CheckScalar(c, 2));
  int64_t batch_dims = 0;
  CFX_RETURN_IF_ERROR(c.GetAttr("batch_dims", &batch_dims));
  const PartialTensorShape &params = c.input(0), &indices = c.input(1);
  if (params.unknown_rank() || indices.unknown_rank()) {
    c.set_output(0, PartialTensorShape::UnknownRank());
    return Status();
  }
  std::optional<int64_t> axis = ConstScalar(c, 2);
  if (!axis) {
    CFX_RETURN_IF_ERROR(c.WithRankAtLeast(0, 1).status());
    if (batch_dims < -indices.rank() || batch_dims > indices.rank())
      return c.Error(StrCat("batch_dims ", batch_dims, " is out of range [", -indices.rank(), ", ",
                            indices.rank(), "] for indices of shape ", indices.ToString()));
    // The result has params' rank - 1 plus the indices' dims after the batch dims.
    int64_t batch = batch_dims < 0 ? batch_dims + indices.rank() : batch_dims;
    CFX_ASSIGN_OR_RETURN(PartialTensorShape out,
                         OfRank(c, params.rank() - 1 + indices.rank() - batch,
                                "params' rank - 1 + the indices' rank past batch_dims"));
    c.set_output(0, out);
    return Status();
  }
  Dims out;
  shape_rules::GatherSizes sizes;
  CFX_RETURN_IF_ERROR(RuleStatus(c, shape_rules::GatherShape(params.dims(), indices.dims(), &*axis,
                                                             &batch_dims, &out, &sizes)));
  c.set_output(0, PartialTensorShape(out));
  return Status();
}

Status RangeShapeFn(InferenceContext& c) {
  for (int i = 0; i < 3; ++i) CFX_RETURN_IF_ERROR(CheckScalar(c, i));
  const Tensor *start = c.input_tensor(0), *limit = c.input_tensor(1), *delta = c.input_tensor(2);
  c.set_output(0, Vector(kUnknown));
  if (start == nullptr || limit == nullptr || delta == nullptr) return Status();
  int64_t size = 0;
  auto count = [&]<typename T>() {
    return RuleStatus(
        c, shape_rules::RangeSize(start->at<T>(0), limit->at<T>(0), delta->at<T>(0), &size));
  };
  Status s;
  switch (start->dtype()) {
    case DT_FLOAT:
      s = count.template operator()<float>();
      break;
    case DT_DOUBLE:
      s = count.template operator()<double>();
      break;
    case DT_INT32:
      s = count.template operator()<int32_t>();
      break;
    case DT_INT64:
      s = count.template operator()<int64_t>();
      break;
    case DT_INT8:
      s = count.template operator()<int8_t>();
      break;
    case DT_INT16:
      s = count.template operator()<int16_t>();
      break;
    case DT_UINT16:
      s = count.template operator()<uint16_t>();
      break;
    case DT_UINT32:
      s = count.template operator()<uint32_t>();
      break;
    default:
      return Status();  // half, bfloat16: the length stays unknown
  }
  CFX_RETURN_IF_ERROR(s);
  c.set_output(0, Vector(size));
  return Status();
}

}  // namespace

void RegisterArrayOps(OpRegistry* r) {
  r->RegisterOrDie(OpDefBuilder("Reshape")
                       .Input("tensor: T")
                       .Input("shape: Tshape")
                       .Output("output: T")
                       .Attr("T: type")
                       .Attr("Tshape: {int32, int64} = DT_INT32")
                       .SetShapeFn(ReshapeShapeFn)
                       .Summary("The elements of `tensor` under a new shape; one -1 is inferred."));
  r->RegisterOrDie(OpDefBuilder("Shape")
                       .Input("input: T")
                       .Output("output: out_type")
                       .Attr("T: type")
                       .Attr("out_type: {int32, int64} = DT_INT32")
                       .SetShapeFn(ShapeShapeFn)
                       .Summary("The shape of `input` as a vector."));
  r->RegisterOrDie(OpDefBuilder("ShapeN")
                       .Input("input: N * T")
                       .Output("output: N * out_type")
                       .Attr("N: int >= 1")
                       .Attr("T: type")
                       .Attr("out_type: {int32, int64} = DT_INT32")
                       .SetShapeFn([](InferenceContext& c) -> Status {
                         for (int i = 0; i < c.num_inputs(); ++i)
                           c.set_output(i, Vector(c.input(i).rank()));
                         return Status();
                       })
                       .Summary("The shape of each input as a vector."));
  r->RegisterOrDie(OpDefBuilder("Where")
                       .Input("input: T")
                       .Output("index: int64")
                       .Attr("T: {numbertype, bool} = DT_BOOL")
                       .SetShapeFn([](InferenceContext& c) -> Status {
                         const PartialTensorShape& in = c.input(0);
                         c.set_output(0, PartialTensorShape(
                                             Dims{kUnknown, in.unknown_rank() ? kUnknown
                                                                              : in.rank()}));
                         return Status();
                       })
                       .Summary("The coordinates of the non-zero (true) elements, one row each."));
  r->RegisterOrDie(OpDefBuilder("Unique")
                       .Input("x: T")
                       .Output("y: T")
                       .Output("idx: out_idx")
                       .Attr("T: type")
                       .Attr("out_idx: {int32, int64} = DT_INT32")
                       .SetShapeFn([](InferenceContext& c) -> Status {
                         CFX_ASSIGN_OR_RETURN(PartialTensorShape x, c.WithRank(0, 1));
                         c.set_output(0, Vector(kUnknown));
                         c.set_output(1, x);
                         return Status();
                       })
                       .Summary("The distinct values of x in the order they first appear, and "
                                "for each element the index of its value in y."));
  r->RegisterOrDie(OpDefBuilder("Roll")
                       .Input("input: T")
                       .Input("shift: Tshift")
                       .Input("axis: Taxis")
                       .Output("output: T")
                       .Attr("T: type")
                       .Attr("Tshift: {int32, int64}")
                       .Attr("Taxis: {int32, int64}")
                       .SetShapeFn([](InferenceContext& c) -> Status {
                         if (c.input(1).rank() > 1 || c.input(2).rank() > 1)
                           return c.Error("shift and axis must be scalars or vectors");
                         c.set_output(0, c.input(0));
                         return Status();
                       })
                       .Summary("The elements moved cyclically by shift[i] along axis[i]."));
  r->RegisterOrDie(OpDefBuilder("Bucketize")
                       .Input("input: T")
                       .Output("output: int32")
                       .Attr("T: {int32, int64, float, double}")
                       .Attr("boundaries: list(float)")
                       .SetShapeFn(UnchangedShape)
                       .Summary("For each element, the number of boundaries <= it."));
  r->RegisterOrDie(OpDefBuilder("Rank")
                       .Input("input: T")
                       .Output("output: int32")
                       .Attr("T: type")
                       .SetShapeFn(ScalarShape)
                       .Summary("The number of dimensions of `input`."));
  r->RegisterOrDie(OpDefBuilder("Size")
                       .Input("input: T")
                       .Output("output: out_type")
                       .Attr("T: type")
                       .Attr("out_type: {int32, int64} = DT_INT32")
                       .SetShapeFn(ScalarShape)
                       .Summary("The number of elements of `input`."));
  r->RegisterOrDie(OpDefBuilder("Fill")
                       .Input("dims: index_type")
                       .Input("value: T")
                       .Output("output: T")
                       .Attr("T: type")
                       .Attr("index_type: {int32, int64} = DT_INT32")
                       .SetShapeFn(FillShapeFn)
                       .Summary("A tensor of shape `dims` filled with the scalar `value`."));
  r->RegisterOrDie(OpDefBuilder("ZerosLike")
                       .Input("x: T")
                       .Output("y: T")
                       .Attr("T: type")
                       .SetShapeFn(UnchangedShape)
                       .Summary("Zeros of the shape and type of `x`."));
  r->RegisterOrDie(OpDefBuilder("OnesLike")
                       .Input("x: T")
                       .Output("y: T")
                       .Attr("T: {bfloat16, half, float, double, int8, uint8, int16, uint16, "
                             "int32, uint32, int64, uint64, complex64, complex128, bool}")
                       .SetShapeFn(UnchangedShape)
                       .Summary("Ones of the shape and type of `x`."));
  r->RegisterOrDie(OpDefBuilder("Transpose")
                       .Input("x: T")
                       .Input("perm: Tperm")
                       .Output("y: T")
                       .Attr("T: type")
                       .Attr("Tperm: {int32, int64} = DT_INT32")
                       .SetShapeFn(TransposeShapeFn)
                       .Summary("Permutes the dimensions: y.shape[i] = x.shape[perm[i]]."));
  r->RegisterOrDie(OpDefBuilder("ConcatV2")
                       .Input("values: N * T")
                       .Input("axis: Tidx")
                       .Output("output: T")
                       .Attr("N: int >= 2")
                       .Attr("T: type")
                       .Attr("Tidx: {int32, int64} = DT_INT32")
                       .SetShapeFn(ConcatV2ShapeFn)
                       .Summary("Joins `values` along dimension `axis`."));
  r->RegisterOrDie(OpDefBuilder("Slice")
                       .Input("input: T")
                       .Input("begin: Index")
                       .Input("size: Index")
                       .Output("output: T")
                       .Attr("T: type")
                       .Attr("Index: {int32, int64}")
                       .SetShapeFn(SliceShapeFn)
                       .Summary("size[i] elements from begin[i] per dimension (-1: the rest)."));
  r->RegisterOrDie(OpDefBuilder("StridedSlice")
                       .Input("input: T")
                       .Input("begin: Index")
                       .Input("end: Index")
                       .Input("strides: Index")
                       .Output("output: T")
                       .Attr("T: type")
                       .Attr("Index: {int16, int32, int64}")
                       .Attr("begin_mask: int = 0")
                       .Attr("end_mask: int = 0")
                       .Attr("ellipsis_mask: int = 0")
                       .Attr("new_axis_mask: int = 0")
                       .Attr("shrink_axis_mask: int = 0")
                       .SetShapeFn(StridedSliceShapeFn)
                       .Summary("NumPy-style slicing: input[begin:end:strides] with masks."));
  r->RegisterOrDie(OpDefBuilder("Split")
                       .Input("split_dim: int32")
                       .Input("value: T")
                       .Output("output: num_split * T")
                       .Attr("num_split: int >= 1")
                       .Attr("T: type")
                       .SetShapeFn(SplitShapeFn)
                       .Summary("`num_split` equal pieces of `value` along `split_dim`."));
  r->RegisterOrDie(OpDefBuilder("SplitV")
                       .Input("value: T")
                       .Input("size_splits: Tlen")
                       .Input("split_dim: int32")
                       .Output("output: num_split * T")
                       .Attr("num_split: int >= 1")
                       .Attr("T: type")
                       .Attr("Tlen: {int8, int32, int64} = DT_INT64")
                       .SetShapeFn(SplitVShapeFn)
                       .Summary("Pieces of `value` along `split_dim` of the sizes `size_splits` "
                                "(one -1 takes the rest)."));
  r->RegisterOrDie(OpDefBuilder("Pack")
                       .Input("values: N * T")
                       .Output("output: T")
                       .Attr("N: int >= 1")
                       .Attr("T: type")
                       .Attr("axis: int = 0")
                       .SetShapeFn(PackShapeFn)
                       .Summary("Stacks N tensors of one shape along a new dimension `axis`."));
  r->RegisterOrDie(OpDefBuilder("Unpack")
                       .Input("value: T")
                       .Output("output: num * T")
                       .Attr("num: int >= 0")
                       .Attr("T: type")
                       .Attr("axis: int = 0")
                       .SetShapeFn(UnpackShapeFn)
                       .Summary("The `num` slices of `value` along `axis`."));
  r->RegisterOrDie(OpDefBuilder("ExpandDims")
                       .Input("input: T")
                       .Input("dim: Tdim")
                       .Output("output: T")
                       .Attr("T: type")
                       .Attr("Tdim: {int32, int64} = DT_INT32")
                       .SetShapeFn(ExpandDimsShapeFn)
                       .Summary("Inserts a dimension of size 1 at `dim`."));
  r->RegisterOrDie(OpDefBuilder("Squeeze")
                       .Input("input: T")
                       .Output("output: T")
                       .Attr("T: type")
                       .Attr("squeeze_dims: list(int) >= 0 = []")
                       .SetShapeFn(SqueezeShapeFn)
                       .Summary("Removes dimensions of size 1 (those listed, or all)."));
  r->RegisterOrDie(OpDefBuilder("Tile")
                       .Input("input: T")
                       .Input("multiples: Tmultiples")
                       .Output("output: T")
                       .Attr("T: type")
                       .Attr("Tmultiples: {int32, int64} = DT_INT32")
                       .SetShapeFn(TileShapeFn)
                       .Summary("Repeats `input` multiples[i] times along dimension i."));
  r->RegisterOrDie(OpDefBuilder("GatherV2")
                       .Input("params: Tparams")
                       .Input("indices: Tindices")
                       .Input("axis: Taxis")
                       .Attr("batch_dims: int = 0")
                       .Output("output: Tparams")
                       .Attr("Tparams: type")
                       .Attr("Tindices: {int16, int32, int64}")
                       .Attr("Taxis: {int32, int64}")
                       .SetShapeFn(GatherV2ShapeFn)
                       .Summary("Slices of `params` along `axis` picked by `indices`."));
  r->RegisterOrDie(OpDefBuilder("Range")
                       .Input("start: Tidx")
                       .Input("limit: Tidx")
                       .Input("delta: Tidx")
                       .Output("output: Tidx")
                       .Attr("Tidx: {bfloat16, half, float, double, int8, int16, int32, int64, "
                             "uint16, uint32, uint64} = DT_INT32")
                       .SetShapeFn(RangeShapeFn)
                       .Summary("start, start + delta, ... up to but excluding `limit`."));
}

}  // namespace cfx::internal
