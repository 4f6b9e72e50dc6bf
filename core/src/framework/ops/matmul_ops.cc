// MatMul: the product of two matrices, either of which may be transposed first; TensorFlow's
// definition, including the grad_a/grad_b hints that graphs from TensorFlow >= 2.13 carry (they
// do not change the result). _FusedMatMul: the same with a bias and an activation fused in.
#include <string>

#include "conflux/shape_inference.h"
#include "framework/ops/ops.h"

namespace cfx::internal {
namespace {

Status MatMulShape(InferenceContext& c) {
  const PartialTensorShape& a = c.input(0);
  const PartialTensorShape& b = c.input(1);
  bool transpose_a = false, transpose_b = false;
  CFX_RETURN_IF_ERROR(c.GetAttr("transpose_a", &transpose_a));
  CFX_RETURN_IF_ERROR(c.GetAttr("transpose_b", &transpose_b));
  auto shapes = [&] {
    return StrCat("a has shape ", a.ToString(), " (transpose_a=", transpose_a ? "true" : "false",
                  "), b has shape ", b.ToString(), " (transpose_b=", transpose_b ? "true" : "false",
                  ")");
  };
  if ((!a.unknown_rank() && a.rank() != 2) || (!b.unknown_rank() && b.rank() != 2))
    return c.Error("both inputs must be matrices (rank 2): " + shapes());
  auto dim = [](const PartialTensorShape& s, int i) {
    return s.unknown_rank() ? kUnknownDim : s.dim(i);
  };
  const int64_t rows = dim(a, transpose_a ? 1 : 0);
  const int64_t inner_a = dim(a, transpose_a ? 0 : 1);
  const int64_t inner_b = dim(b, transpose_b ? 1 : 0);
  const int64_t cols = dim(b, transpose_b ? 0 : 1);
  if (inner_a >= 0 && inner_b >= 0 && inner_a != inner_b)
    return c.Error(
        StrCat("inner dimensions must match, got ", inner_a, " and ", inner_b, ": ", shapes()));
  c.set_output(0, PartialTensorShape({rows, cols}));
  return Status();
}

}  // namespace

void RegisterMatMulOps(OpRegistry* r) {
  r->RegisterOrDie(OpDefBuilder("MatMul")
                       .Input("a: T")
                       .Input("b: T")
                       .Output("product: T")
                       .Attr("transpose_a: bool = false")
                       .Attr("transpose_b: bool = false")
                       .Attr("T: {bfloat16, half, float, double, int32, int64, uint8, uint16, "
                             "uint32, uint64, complex64, complex128}")
                       .Attr("grad_a: bool = false")
                       .Attr("grad_b: bool = false")
                       .SetShapeFn(MatMulShape)
                       .Summary("Product of matrices a and b, each optionally transposed."));
  // TensorFlow's internal MatMul + BiasAdd (+ activation), as its grappler and the remapper pass
  // (passes/remapper.h) write it; TensorFlow 2.21's definition.
  r->RegisterOrDie(OpDefBuilder("_FusedMatMul")
                       .Input("a: T")
                       .Input("b: T")
                       .Input("args: num_args * T")
                       .Output("product: T")
                       .Attr("transpose_a: bool = false")
                       .Attr("transpose_b: bool = false")
                       .Attr("T: {bfloat16, half, float}")
                       .Attr("num_args: int >= 0")
                       .Attr("fused_ops: list(string) = []")
                       .Attr("epsilon: float = 0.0001")
                       .Attr("leakyrelu_alpha: float = 0.2")
                       .SetShapeFn(MatMulShape)
                       .Summary("MatMul with fused_ops (BiasAdd, then an activation) applied to "
                                "its product."));
}

}  // namespace cfx::internal
