// Linear-algebra ops on batches of matrices: MatrixInverse, MatrixDeterminant, BatchMatMulV2,
// MatrixBandPart and Einsum, with TensorFlow's definitions. A batch is a tensor [..., M, N] whose
// last two dimensions are the matrices; BatchMatMulV2 broadcasts the leading (batch) dimensions as
// NumPy does.
#include <string>
#include <vector>

#include "conflux/sdk/einsum_rules.h"
#include "conflux/sdk/layout_shape_rules.h"
#include "conflux/shape_inference.h"
#include "framework/ops/ops.h"
#include "framework/ops/shape_fn_util.h"

namespace cfx::internal {
namespace {

// Input 0 must be a batch of square matrices [..., M, M]; on success *batch holds its leading
// dimensions (unknown rank when the input's is) and *size the matrix size M (maybe unknown).
Status SquareMatrixBatch(const InferenceContext& c, PartialTensorShape* batch, int64_t* size) {
  const PartialTensorShape& in = c.input(0);
  if (in.unknown_rank()) {
    *batch = PartialTensorShape::UnknownRank();
    *size = kUnknownDim;
    return Status();
  }
  if (in.rank() < 2)
    return c.Error(
        StrCat("input must be a batch of square matrices of rank >= 2, got shape ", in.ToString()));
  const int64_t rows = in.dim(in.rank() - 2), cols = in.dim(in.rank() - 1);
  if (rows >= 0 && cols >= 0 && rows != cols)
    return c.Error(StrCat("input must be a batch of square matrices, got ", rows, "x", cols,
                          " matrices (shape ", in.ToString(), ")"));
  *batch = PartialTensorShape(std::vector<int64_t>(in.dims().begin(), in.dims().end() - 2));
  *size = rows >= 0 ? rows : cols;
  return Status();
}

Status MatrixInverseShape(InferenceContext& c) {
  PartialTensorShape batch;
  int64_t size = 0;
  CFX_RETURN_IF_ERROR(SquareMatrixBatch(c, &batch, &size));
  if (batch.unknown_rank()) {
    c.set_output(0, PartialTensorShape::UnknownRank());
    return Status();
  }
  std::vector<int64_t> dims = batch.dims();
  dims.push_back(size);
  dims.push_back(size);
  c.set_output(0, PartialTensorShape(dims));
  return Status();
}

Status MatrixDeterminantShape(InferenceContext& c) {
  PartialTensorShape batch;
  int64_t size = 0;
  CFX_RETURN_IF_ERROR(SquareMatrixBatch(c, &batch, &size));
  c.set_output(0, batch);
  return Status();
}

Status BatchMatMulV2Shape(InferenceContext& c) {
  const PartialTensorShape& x = c.input(0);
  const PartialTensorShape& y = c.input(1);
  bool adj_x = false, adj_y = false;
  CFX_RETURN_IF_ERROR(c.GetAttr("adj_x", &adj_x));
  CFX_RETURN_IF_ERROR(c.GetAttr("adj_y", &adj_y));
  auto shapes = [&] {
    return StrCat("x has shape ", x.ToString(), " (adj_x=", adj_x ? "true" : "false",
                  "), y has shape ", y.ToString(), " (adj_y=", adj_y ? "true" : "false", ")");
  };
  if ((!x.unknown_rank() && x.rank() < 2) || (!y.unknown_rank() && y.rank() < 2))
    return c.Error("both inputs must have rank >= 2: " + shapes());
  // The dimension `from_end` places before the end (1 = last), unknown when the rank is.
  auto dim = [](const PartialTensorShape& s, int from_end) {
    return s.unknown_rank() ? kUnknownDim : s.dim(s.rank() - from_end);
  };
  const int64_t rows = dim(x, adj_x ? 1 : 2);
  const int64_t inner_x = dim(x, adj_x ? 2 : 1);
  const int64_t inner_y = dim(y, adj_y ? 1 : 2);
  const int64_t cols = dim(y, adj_y ? 2 : 1);
  if (inner_x >= 0 && inner_y >= 0 && inner_x != inner_y)
    return c.Error(StrCat("inner dimensions of the matrices must match, got ", inner_x, " and ",
                          inner_y, ": ", shapes()));
  if (x.unknown_rank() || y.unknown_rank()) {
    c.set_output(0, PartialTensorShape::UnknownRank());
    return Status();
  }
  auto batch_of = [](const PartialTensorShape& s) {
    return PartialTensorShape(std::vector<int64_t>(s.dims().begin(), s.dims().end() - 2));
  };
  StatusOr<PartialTensorShape> batch = BroadcastShapes(batch_of(x), batch_of(y));
  if (!batch.ok()) return c.Error(StrCat("batch dimensions do not broadcast: ", shapes()));
  std::vector<int64_t> dims = batch->dims();
  dims.push_back(rows);
  dims.push_back(cols);
  c.set_output(0, PartialTensorShape(dims));
  return Status();
}

// Einsum: the output's shape from the equation (conflux/sdk/einsum_rules.h); unknown where an
// input's rank is and the output has an ellipsis, else one dimension per output label.
Status EinsumShapeFn(InferenceContext& c) {
  std::string equation;
  CFX_RETURN_IF_ERROR(c.GetAttr("equation", &equation));
  shape_rules::EinsumSubscripts subs;
  CFX_RETURN_IF_ERROR(RuleStatus(
      c, shape_rules::ParseEinsum(equation, static_cast<size_t>(c.num_inputs()), &subs)));
  std::vector<shape_rules::Dims> inputs;
  for (int i = 0; i < c.num_inputs(); ++i) {
    if (c.input(i).unknown_rank()) {
      if (subs.output.find("...") != std::string::npos) {
        c.set_output(0, PartialTensorShape::UnknownRank());
      } else {
        c.set_output(0, PartialTensorShape::UnknownDims(static_cast<int>(subs.output.size())));
      }
      return Status();
    }
    inputs.push_back(c.input(i).dims());
  }
  shape_rules::Dims out;
  shape_rules::EinsumPlan plan;
  CFX_RETURN_IF_ERROR(RuleStatus(c, shape_rules::EinsumShape(equation, inputs, &out, &plan)));
  c.set_output(0, PartialTensorShape(out));
  return Status();
}

// MatrixBandPart: the input's shape; num_lower and num_upper are scalars within the matrices.
Status MatrixBandPartShape(InferenceContext& c) {
  for (int i : {1, 2}) {
    const PartialTensorShape& bound = c.input(i);
    if (!bound.unknown_rank() && bound.rank() != 0)
      return c.Error(StrCat(i == 1 ? "num_lower" : "num_upper", " must be a scalar, got shape ",
                            bound.ToString()));
  }
  const PartialTensorShape& in = c.input(0);
  if (!in.unknown_rank())
    CFX_RETURN_IF_ERROR(RuleStatus(
        c, shape_rules::MatrixBandCheck(in.dims(), ConstScalar(c, 1), ConstScalar(c, 2))));
  c.set_output(0, in);
  return Status();
}

}  // namespace

void RegisterLinalgOps(OpRegistry* r) {
  r->RegisterOrDie(OpDefBuilder("MatrixInverse")
                       .Input("input: T")
                       .Output("output: T")
                       .Attr("adjoint: bool = false")
                       .Attr("T: {double, float, half, complex64, complex128}")
                       .SetShapeFn(MatrixInverseShape)
                       .Summary("Inverse (or inverse of the adjoint) of each square matrix of a "
                                "batch; InvalidArgument when one is not invertible."));
  r->RegisterOrDie(OpDefBuilder("MatrixDeterminant")
                       .Input("input: T")
                       .Output("output: T")
                       .Attr("T: {half, float, double, complex64, complex128}")
                       .SetShapeFn(MatrixDeterminantShape)
                       .Summary("Determinant of each square matrix of a batch."));
  r->RegisterOrDie(OpDefBuilder("MatrixBandPart")
                       .Input("input: T")
                       .Input("num_lower: Tindex")
                       .Input("num_upper: Tindex")
                       .Output("band: T")
                       .Attr("T: type")
                       .Attr("Tindex: {int32, int64} = DT_INT64")
                       .SetShapeFn(MatrixBandPartShape)
                       .Summary("The band of each matrix: num_lower diagonals below the main one "
                                "and num_upper above (negative: all), zeros elsewhere."));
  r->RegisterOrDie(OpDefBuilder("Einsum")
                       .Input("inputs: N * T")
                       .Output("output: T")
                       .Attr("equation: string")
                       .Attr("N: int >= 1")
                       .Attr("T: type")
                       .SetShapeFn(EinsumShapeFn)
                       .Summary("Sums of products of the inputs' elements as the equation's "
                                "subscripts say (\"ij,jk->ik\" is a matrix product)."));
  r->RegisterOrDie(OpDefBuilder("BatchMatMulV2")
                       .Input("x: T")
                       .Input("y: T")
                       .Output("output: T")
                       .Attr("T: {bfloat16, half, float, double, int16, int32, int64, uint8, "
                             "uint16, uint32, uint64, complex64, complex128}")
                       .Attr("adj_x: bool = false")
                       .Attr("adj_y: bool = false")
                       .Attr("grad_x: bool = false")
                       .Attr("grad_y: bool = false")
                       .SetShapeFn(BatchMatMulV2Shape)
                       .Summary("Products of the matrices of x and y (each optionally adjoint), "
                                "with the batch dimensions broadcast."));
}

}  // namespace cfx::internal
