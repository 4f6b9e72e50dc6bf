// Reductions: Sum, Mean, Max, Min, Prod, All, Any (reduce over a set of axes), ArgMax, ArgMin
// (index of the extreme value along one axis) and the scans Cumsum, Cumprod (running sums and
// products along one axis), with TensorFlow's definitions and shape rules:
//  - axes may be negative (counted from the end) and repeated (a repeat counts once);
//  - an empty axis list reduces nothing; keep_dims keeps reduced axes with length 1;
//  - when the axes are not known while inferring, the output has the input's rank under
//    keep_dims, one less for a scalar axis, and is unknown otherwise.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "conflux/sdk/shape_rules.h"
#include "conflux/shape_inference.h"
#include "framework/ops/ops.h"
#include "framework/ops/shape_fn_util.h"

namespace cfx::internal {
namespace {

// The values of a constant integer index tensor (int16, int32 or int64).
Status ReadIndexValues(const InferenceContext& c, const char* what, const Tensor& t,
                       std::vector<int64_t>* out) {
  out->resize(static_cast<size_t>(t.num_elements()));
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    switch (t.dtype()) {
      case DT_INT16:
        (*out)[i] = t.data<int16_t>()[i];
        break;
      case DT_INT32:
        (*out)[i] = t.data<int32_t>()[i];
        break;
      case DT_INT64:
        (*out)[i] = t.data<int64_t>()[i];
        break;
      default:
        return c.Error(
            StrCat(what, " must be int16, int32 or int64, got ", DataTypeString(t.dtype())));
    }
  }
  return Status();
}

// `axis` made non-negative for an input of `rank`; InvalidArgument when outside [-rank, rank).
StatusOr<int> CanonicalAxis(const InferenceContext& c, const char* what, int64_t axis, int rank,
                            const PartialTensorShape& input) {
  if (axis < -rank || axis >= rank)
    return c.Error(StrCat(what, " holds axis ", axis, ", out of range for input of shape ",
                          input.ToString(), "; expected values in [", -rank, ", ", rank, ")"));
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

Status ReductionShape(InferenceContext& c) {
  const PartialTensorShape& input = c.input(0);
  const PartialTensorShape& indices = c.input(1);
  if (!indices.unknown_rank() && indices.rank() > 1)
    return c.Error("reduction_indices must be a scalar or a vector, got shape " +
                   indices.ToString());
  bool keep_dims = false;
  CFX_RETURN_IF_ERROR(c.GetAttr("keep_dims", &keep_dims));
  if (input.unknown_rank()) {
    c.set_output(0, PartialTensorShape::UnknownRank());
    return Status();
  }
  const int rank = input.rank();
  const Tensor* value = c.input_tensor(1);
  if (value == nullptr) {
    if (keep_dims) {
      // Axes of length 1 stay 1 whether they are reduced or not.
      std::vector<int64_t> dims(rank, kUnknownDim);
      for (int i = 0; i < rank; ++i)
        if (input.dim(i) == 1) dims[i] = 1;
      c.set_output(0, PartialTensorShape(dims));
    } else if (!indices.unknown_rank() && indices.rank() == 0 && rank > 0) {
      c.set_output(0, PartialTensorShape::UnknownDims(rank - 1));
    } else if (!indices.unknown_rank() && indices.rank() == 1 && indices.dim(0) == 0) {
      c.set_output(0, input);  // no axes: nothing is reduced
    } else {
      c.set_output(0, PartialTensorShape::UnknownRank());
    }
    return Status();
  }
  std::vector<int64_t> axes;
  CFX_RETURN_IF_ERROR(ReadIndexValues(c, "reduction_indices", *value, &axes));
  std::vector<bool> reduced(rank, false);
  for (int64_t axis : axes) {
    CFX_ASSIGN_OR_RETURN(int a, CanonicalAxis(c, "reduction_indices", axis, rank, input));
    reduced[a] = true;
  }
  std::vector<int64_t> dims;
  for (int i = 0; i < rank; ++i) {
    if (!reduced[i])
      dims.push_back(input.dim(i));
    else if (keep_dims)
      dims.push_back(1);
  }
  c.set_output(0, PartialTensorShape(dims));
  return Status();
}

Status ArgReductionShape(InferenceContext& c) {
  const PartialTensorShape& dimension = c.input(1);
  if (!dimension.unknown_rank() && dimension.rank() != 0)
    return c.Error("dimension must be a scalar, got shape " + dimension.ToString());
  const PartialTensorShape& input = c.input(0);
  if (input.unknown_rank()) {
    c.set_output(0, PartialTensorShape::UnknownRank());
    return Status();
  }
  const int rank = input.rank();
  if (rank <= 1) {  // a vector reduces to a scalar (a scalar input fails in the kernel)
    c.set_output(0, PartialTensorShape(std::vector<int64_t>{}));
    return Status();
  }
  const Tensor* value = c.input_tensor(1);
  if (value == nullptr) {
    c.set_output(0, PartialTensorShape::UnknownDims(rank - 1));
    return Status();
  }
  std::vector<int64_t> axes;
  CFX_RETURN_IF_ERROR(ReadIndexValues(c, "dimension", *value, &axes));
  if (axes.size() != 1) return c.Error(StrCat("dimension must hold one value, got ", axes.size()));
  CFX_ASSIGN_OR_RETURN(int axis, CanonicalAxis(c, "dimension", axes[0], rank, input));
  std::vector<int64_t> dims;
  for (int i = 0; i < rank; ++i)
    if (i != axis) dims.push_back(input.dim(i));
  c.set_output(0, PartialTensorShape(dims));
  return Status();
}

// Cumsum and Cumprod: the input's shape; `axis` is a scalar in [-rank, rank) (the kernels' rule,
// in their words).
Status ScanShape(InferenceContext& c) {
  const PartialTensorShape& axis = c.input(1);
  if (!axis.unknown_rank() && axis.rank() != 0)
    return c.Error("axis must be a scalar, got shape " + axis.ToString());
  const PartialTensorShape& input = c.input(0);
  std::optional<int64_t> value = ConstScalar(c, 1);
  if (value && !input.unknown_rank()) {
    const std::string error = shape_rules::NormalizeAxis(&*value, input.rank(), "axis");
    if (!error.empty()) return c.Error(error + " for an input of shape " + input.ToString());
  }
  c.set_output(0, input);
  return Status();
}

// "x: T, axis: Tidx -> out: T" with exclusive and reverse.
OpDefBuilder Scan(const char* name, const char* summary) {
  OpDefBuilder b(name);
  b.Input("x: T")
      .Input("axis: Tidx")
      .Output("out: T")
      .Attr("exclusive: bool = false")
      .Attr("reverse: bool = false")
      .Attr("T: numbertype")
      .Attr("Tidx: {int32, int64} = DT_INT32")
      .SetShapeFn(ScanShape)
      .Summary(summary);
  return b;
}

// "input: T, reduction_indices: Tidx -> output: T", T declared by `type_constraint`; with a
// null `type_constraint`, input and output are bool instead (All, Any).
OpDefBuilder Reduction(const char* name, const char* type_constraint, const char* summary) {
  const bool logical = type_constraint == nullptr;
  OpDefBuilder b(name);
  b.Input(logical ? "input: bool" : "input: T")
      .Input("reduction_indices: Tidx")
      .Output(logical ? "output: bool" : "output: T")
      .Attr("keep_dims: bool = false");
  if (!logical) b.Attr(type_constraint);
  b.Attr("Tidx: {int32, int64} = DT_INT32").SetShapeFn(ReductionShape).Summary(summary);
  return b;
}

// TensorFlow's ArgMax takes int16 indices and outputs int16/uint16 too; its ArgMin does not.
OpDefBuilder ArgReduction(const char* name, const char* summary) {
  const bool wide = std::string_view(name) == "ArgMax";
  OpDefBuilder b(name);
  b.Input("input: T")
      .Input("dimension: Tidx")
      .Output("output: output_type")
      .Attr("T: {realnumbertype, quantizedtype, bool}")
      .Attr(wide ? "Tidx: {int16, int32, int64} = DT_INT32" : "Tidx: {int32, int64} = DT_INT32")
      .Attr(wide ? "output_type: {int16, uint16, int32, int64} = DT_INT64"
                 : "output_type: {int32, int64} = DT_INT64")
      .SetShapeFn(ArgReductionShape)
      .Summary(summary);
  return b;
}

}  // namespace

void RegisterReductionOps(OpRegistry* r) {
  r->RegisterOrDie(Reduction("Sum", "T: numbertype", "Sum of elements across axes."));
  r->RegisterOrDie(Reduction("Mean", "T: numbertype", "Mean of elements across axes."));
  r->RegisterOrDie(Reduction("Prod", "T: numbertype", "Product of elements across axes."));
  r->RegisterOrDie(
      Reduction("Max", "T: {realnumbertype, quantizedtype}", "Maximum of elements across axes."));
  r->RegisterOrDie(
      Reduction("Min", "T: {realnumbertype, quantizedtype}", "Minimum of elements across axes."));
  r->RegisterOrDie(Reduction("All", nullptr, "Logical and of elements across axes."));
  r->RegisterOrDie(Reduction("Any", nullptr, "Logical or of elements across axes."));
  r->RegisterOrDie(ArgReduction("ArgMax", "Index of the largest value along one axis."));
  r->RegisterOrDie(ArgReduction("ArgMin", "Index of the smallest value along one axis."));
  r->RegisterOrDie(Scan("Cumsum",
                        "Running sums along `axis`: out[i] = x[0] + ... + x[i] (x[i] left out when "
                        "`exclusive`, summed from the end when `reverse`)."));
  r->RegisterOrDie(Scan("Cumprod",
                        "Running products along `axis`: out[i] = x[0] * ... * x[i] (x[i] left out "
                        "when `exclusive`, from the end when `reverse`)."));
}

}  // namespace cfx::internal
