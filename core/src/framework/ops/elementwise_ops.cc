// Element-wise ops: broadcasting binary arithmetic, AddN, unary math, comparisons, logical ops,
// Cast, Select and SelectV2. Names, arguments, attrs, defaults and allowed types are TensorFlow's
// (type lists as of TensorFlow 2.13), so that GraphDefs exported by TensorFlow validate here.
#include <algorithm>
#include <string>
#include <vector>

#include "conflux/shape_inference.h"
#include "framework/ops/ops.h"

namespace cfx::internal {
namespace {

// Type lists shared by several ops.
constexpr char kBinaryMoreTypes[] =
    "T: {bfloat16, half, float, double, uint8, int8, uint16, int16, int32, uint32, uint64, "
    "int64, complex64, complex128}";
constexpr char kMinMaxTypes[] =
    "T: {bfloat16, half, float, double, int8, uint8, int16, uint16, int32, uint32, int64, "
    "uint64}";
constexpr char kUnaryTypes[] =
    "T: {bfloat16, half, float, double, int8, int16, int32, int64, complex64, complex128}";
constexpr char kUnaryFloatTypes[] = "T: {bfloat16, half, float, double, complex64, complex128}";

// "x: T, y: T -> z: T" with NumPy broadcasting.
OpDefBuilder BinaryOp(const char* name, const char* type_attr) {
  OpDefBuilder b(name);
  b.Input("x: T").Input("y: T").Output("z: T").Attr(type_attr).SetShapeFn(BroadcastBinaryOpShape);
  return b;
}

// "x: T -> y: T".
OpDefBuilder UnaryOp(const char* name, const char* type_attr) {
  OpDefBuilder b(name);
  b.Input("x: T").Output("y: T").Attr(type_attr).SetShapeFn(UnchangedShape);
  return b;
}

// True when shapes a and b broadcast whatever their unknown dims turn out to be.
bool SurelyBroadcast(const PartialTensorShape& a, const PartialTensorShape& b) {
  if (a.unknown_rank() || b.unknown_rank()) return false;
  for (int i = 1; i <= std::min(a.rank(), b.rank()); ++i) {
    const int64_t da = a.dim(a.rank() - i), db = b.dim(b.rank() - i);
    if (da != 1 && db != 1 && (da < 0 || da != db)) return false;
  }
  return true;
}

// Equal and NotEqual: with incompatible_shape_error = false, shapes that do not broadcast give a
// scalar (TensorFlow's rule), so the output is unknown until the inputs' shapes are sure to
// broadcast or sure not to.
Status EqualityShape(InferenceContext& c) {
  bool incompatible_shape_error = true;
  CFX_RETURN_IF_ERROR(c.GetAttr("incompatible_shape_error", &incompatible_shape_error));
  auto s = BroadcastShapes(c.input(0), c.input(1));
  if (!s.ok()) {  // two known dims that differ, neither 1
    if (incompatible_shape_error) return c.Error(s.status().message());
    c.set_output(0, PartialTensorShape(std::vector<int64_t>{}));
  } else if (!incompatible_shape_error && !SurelyBroadcast(c.input(0), c.input(1))) {
    c.set_output(0, PartialTensorShape::UnknownRank());
  } else {
    c.set_output(0, *s);
  }
  return Status();
}

// AddN: the inputs' merged shape (each dimension known when some input knows it). Inputs that
// cannot all have one shape are an error naming input i, the first that conflicts with the merge
// of those before it, and an earlier input j that conflicts with it on its own (there is one:
// each known dimension and the rank of the merge come from some earlier input).
Status AddNShape(InferenceContext& c) {
  PartialTensorShape merged = c.input(0);
  for (int i = 1; i < c.num_inputs(); ++i) {
    auto next = merged.Merge(c.input(i));
    if (next.ok()) {
      merged = *std::move(next);
      continue;
    }
    int j = 0;
    while (j + 1 < i && c.input(j).Merge(c.input(i)).ok()) ++j;
    return c.Error(StrCat("all inputs must have the same shape, but input ", j, " has shape ",
                          c.input(j).ToString(), " and input ", i, " has shape ",
                          c.input(i).ToString()));
  }
  c.set_output(0, merged);
  return Status();
}

// Select (v1): 't' and 'e' have one shape; 'condition' is a scalar, has that shape too, or is a
// vector whose length is the first dimension of 't'.
Status SelectShape(InferenceContext& c) {
  const PartialTensorShape& cond = c.input(0);
  auto data = c.input(1).Merge(c.input(2));
  if (!data.ok())
    return c.Error("'t' and 'e' must have the same shape, got " + c.input(1).ToString() + " and " +
                   c.input(2).ToString());
  c.set_output(0, *data);
  if (cond.unknown_rank() || data->unknown_rank() || cond.rank() == 0) return Status();
  if (cond.rank() == 1 && data->rank() >= 1) {
    if (cond.dim(0) >= 0 && data->dim(0) >= 0 && cond.dim(0) != data->dim(0))
      return c.Error(StrCat("'condition' is a vector of ", cond.dim(0),
                            " elements; it must match the first dimension of 't', got shape ",
                            data->ToString()));
    return Status();
  }
  auto merged = data->Merge(cond);
  if (!merged.ok())
    return c.Error(
        "'condition' must be a scalar, a vector matching the first dimension of 't', "
        "or have the shape of 't'; got " +
        cond.ToString() + " and " + data->ToString());
  c.set_output(0, *merged);
  return Status();
}

// SelectV2: the broadcast of all three inputs.
Status SelectV2Shape(InferenceContext& c) {
  auto values = BroadcastShapes(c.input(1), c.input(2));
  if (!values.ok()) return c.Error(values.status().message());
  auto out = BroadcastShapes(c.input(0), *values);
  if (!out.ok()) return c.Error(out.status().message());
  c.set_output(0, *out);
  return Status();
}

void RegisterBinaryArithmeticOps(OpRegistry* r) {
  r->RegisterOrDie(BinaryOp("Add",
                            "T: {bfloat16, half, float, double, uint8, int8, int16, int32, int64, "
                            "complex64, complex128, string}")
                       .Summary("x + y element-wise, with broadcasting."));
  r->RegisterOrDie(BinaryOp("AddV2",
                            "T: {bfloat16, half, float, double, uint8, uint16, uint32, uint64, "
                            "int8, int16, int32, int64, complex64, complex128}")
                       .SetIsAggregate()
                       .SetIsCommutative()
                       .Summary("x + y element-wise, with broadcasting."));
  r->RegisterOrDie(BinaryOp("Sub",
                            "T: {bfloat16, half, float, double, uint8, int8, uint16, int16, int32, "
                            "int64, complex64, complex128, uint32, uint64}")
                       .Summary("x - y element-wise, with broadcasting."));
  r->RegisterOrDie(BinaryOp("Mul", kBinaryMoreTypes)
                       .SetIsCommutative()
                       .Summary("x * y element-wise, with broadcasting."));
  r->RegisterOrDie(BinaryOp("Div", kBinaryMoreTypes)
                       .Summary("x / y element-wise, with broadcasting; integers truncate "
                                "toward zero and fail on a zero divisor."));
  r->RegisterOrDie(BinaryOp("FloorDiv", kBinaryMoreTypes)
                       .Summary("floor(x / y) element-wise, with broadcasting; integers fail on "
                                "a zero divisor."));
  r->RegisterOrDie(BinaryOp("FloorMod",
                            "T: {int8, int16, int32, int64, uint8, uint16, uint32, uint64, "
                            "bfloat16, half, float, double}")
                       .Summary("x - floor(x / y) * y element-wise (the sign of y), with "
                                "broadcasting; integers fail on a zero divisor."));
  r->RegisterOrDie(BinaryOp("TruncateDiv", kBinaryMoreTypes)
                       .Summary("x / y rounded toward zero element-wise, with broadcasting; "
                                "integers fail on a zero divisor."));
  r->RegisterOrDie(OpDefBuilder("Atan2")
                       .Input("y: T")
                       .Input("x: T")
                       .Output("z: T")
                       .Attr("T: {bfloat16, half, float, double}")
                       .SetShapeFn(BroadcastBinaryOpShape)
                       .Summary("The angle of the point (x, y) in [-pi, pi] element-wise, with "
                                "broadcasting."));
  r->RegisterOrDie(BinaryOp("Xdivy", kUnaryFloatTypes)
                       .Summary("0 where x is 0, else x / y, element-wise with broadcasting."));
  r->RegisterOrDie(BinaryOp("Xlogy", kUnaryFloatTypes)
                       .Summary("0 where x is 0, else x * log(y), element-wise with "
                                "broadcasting."));
  r->RegisterOrDie(BinaryOp("Xlog1py", kUnaryFloatTypes)
                       .Summary("0 where x is 0, else x * log1p(y), element-wise with "
                                "broadcasting."));
  r->RegisterOrDie(BinaryOp("DivNoNan", kUnaryFloatTypes)
                       .Summary("0 where y is 0, else x / y, element-wise with broadcasting."));
  r->RegisterOrDie(BinaryOp("MulNoNan", kUnaryFloatTypes)
                       .Summary("0 where y is 0 (even for an infinite or NaN x), else x * y, "
                                "element-wise with broadcasting."));
  constexpr char kIntegerTypes[] = "T: {int8, int16, int32, int64, uint8, uint16, uint32, uint64}";
  r->RegisterOrDie(BinaryOp("BitwiseAnd", kIntegerTypes)
                       .SetIsCommutative()
                       .Summary("x & y element-wise, with broadcasting."));
  r->RegisterOrDie(BinaryOp("BitwiseOr", kIntegerTypes)
                       .SetIsCommutative()
                       .Summary("x | y element-wise, with broadcasting."));
  r->RegisterOrDie(BinaryOp("BitwiseXor", kIntegerTypes)
                       .SetIsCommutative()
                       .Summary("x ^ y element-wise, with broadcasting."));
  r->RegisterOrDie(BinaryOp("LeftShift", kIntegerTypes)
                       .Summary("x << y element-wise, y clamped to [0, bits - 1], with "
                                "broadcasting."));
  r->RegisterOrDie(BinaryOp("RightShift", kIntegerTypes)
                       .Summary("x >> y element-wise (arithmetic for signed x), y clamped to "
                                "[0, bits - 1], with broadcasting."));
  r->RegisterOrDie(UnaryOp("Invert", kIntegerTypes).Summary("~x element-wise."));
  r->RegisterOrDie(BinaryOp("RealDiv", kBinaryMoreTypes)
                       .Summary("x / y element-wise for real types, with broadcasting."));
  r->RegisterOrDie(BinaryOp("Maximum", kMinMaxTypes)
                       .Summary("max(x, y) element-wise, with broadcasting; NaN wins."));
  r->RegisterOrDie(BinaryOp("Minimum", kMinMaxTypes)
                       .Summary("min(x, y) element-wise, with broadcasting; NaN wins."));
  r->RegisterOrDie(BinaryOp("Pow",
                            "T: {bfloat16, float, half, double, int8, int16, int32, int64, "
                            "complex64, complex128}")
                       .Summary("x ^ y element-wise, with broadcasting."));
  r->RegisterOrDie(BinaryOp("SquaredDifference",
                            "T: {bfloat16, half, float, double, int32, int64, complex64, "
                            "complex128}")
                       .SetIsCommutative()
                       .Summary("(x - y) * (x - y) element-wise, with broadcasting."));
  r->RegisterOrDie(OpDefBuilder("AddN")
                       .Input("inputs: N * T")
                       .Output("sum: T")
                       .Attr("N: int >= 1")
                       .Attr("T: {numbertype, variant}")
                       .SetIsAggregate()
                       .SetIsCommutative()
                       .SetShapeFn(AddNShape)
                       .Summary("The element-wise sum of N tensors of one shape."));
}

void RegisterUnaryMathOps(OpRegistry* r) {
  r->RegisterOrDie(UnaryOp("Neg", kUnaryTypes).Summary("-x element-wise."));
  r->RegisterOrDie(UnaryOp("Abs", "T: {bfloat16, half, float, double, int8, int16, int32, int64}")
                       .Summary("|x| element-wise."));
  r->RegisterOrDie(UnaryOp("Square",
                           "T: {bfloat16, half, float, double, int8, int16, int32, int64, uint8, "
                           "uint16, uint32, uint64, complex64, complex128}")
                       .Summary("x * x element-wise."));
  r->RegisterOrDie(UnaryOp("Reciprocal",
                           "T: {bfloat16, half, float, double, int8, int16, int32, int64, "
                           "complex64, complex128}")
                       .Summary("1 / x element-wise."));
  r->RegisterOrDie(UnaryOp("Exp", kUnaryFloatTypes).Summary("e ^ x element-wise."));
  r->RegisterOrDie(UnaryOp("Sin", kUnaryFloatTypes).Summary("Sine element-wise."));
  r->RegisterOrDie(UnaryOp("Cos", kUnaryFloatTypes).Summary("Cosine element-wise."));
  r->RegisterOrDie(UnaryOp("Log", kUnaryFloatTypes).Summary("Natural logarithm element-wise."));
  r->RegisterOrDie(UnaryOp("Sqrt", kUnaryFloatTypes).Summary("Square root element-wise."));
  r->RegisterOrDie(UnaryOp("Rsqrt", kUnaryFloatTypes).Summary("1 / sqrt(x) element-wise."));
  r->RegisterOrDie(UnaryOp("Tanh", kUnaryFloatTypes).Summary("Hyperbolic tangent element-wise."));
  r->RegisterOrDie(UnaryOp("Sigmoid", kUnaryFloatTypes).Summary("1 / (1 + exp(-x)) element-wise."));
  // TensorFlow's internal swish (its oneDNN remapper's, and the core's remapper pass for
  // Mul(x, Sigmoid(x)): passes/remapper.h); TensorFlow 2.21's definition.
  r->RegisterOrDie(OpDefBuilder("_MklSwish")
                       .Input("features: T")
                       .Output("activations: T")
                       .Attr("T: {float, bfloat16, half} = DT_FLOAT")
                       .SetShapeFn(UnchangedShape)
                       .Summary("features * sigmoid(features) element-wise."));
  r->RegisterOrDie(UnaryOp("Sign", kUnaryTypes).Summary("-1, 0 or 1 by the sign of x (NaN stays)."));
  r->RegisterOrDie(UnaryOp("Round", kUnaryTypes).Summary("x rounded half to even element-wise."));
  r->RegisterOrDie(UnaryOp("Rint", "T: {bfloat16, half, float, double}")
                       .Summary("x rounded half to even element-wise."));
  r->RegisterOrDie(UnaryOp("Erf", "T: {bfloat16, half, float, double}")
                       .Summary("The error function element-wise."));
  r->RegisterOrDie(UnaryOp("Erfc", "T: {bfloat16, half, float, double}")
                       .Summary("1 - erf(x) element-wise, accurate for large x."));
  for (const char* op : {"Floor", "Ceil"})
    r->RegisterOrDie(UnaryOp(op, "T: {bfloat16, half, float, double}")
                         .Summary("x rounded down (Floor) or up (Ceil) element-wise."));
  r->RegisterOrDie(UnaryOp("Log1p", kUnaryFloatTypes).Summary("log(1 + x) element-wise."));
  r->RegisterOrDie(UnaryOp("Expm1", kUnaryFloatTypes).Summary("e ^ x - 1 element-wise."));
  r->RegisterOrDie(UnaryOp("Tan", kUnaryFloatTypes).Summary("Tangent element-wise."));
  r->RegisterOrDie(UnaryOp("Asin", kUnaryFloatTypes).Summary("Inverse sine element-wise."));
  r->RegisterOrDie(UnaryOp("Acos", kUnaryFloatTypes).Summary("Inverse cosine element-wise."));
  r->RegisterOrDie(UnaryOp("Atan", kUnaryFloatTypes).Summary("Inverse tangent element-wise."));
  r->RegisterOrDie(UnaryOp("Sinh", kUnaryFloatTypes).Summary("Hyperbolic sine element-wise."));
  r->RegisterOrDie(UnaryOp("Cosh", kUnaryFloatTypes).Summary("Hyperbolic cosine element-wise."));
  r->RegisterOrDie(
      UnaryOp("Asinh", kUnaryFloatTypes).Summary("Inverse hyperbolic sine element-wise."));
  r->RegisterOrDie(
      UnaryOp("Acosh", kUnaryFloatTypes).Summary("Inverse hyperbolic cosine element-wise."));
  r->RegisterOrDie(
      UnaryOp("Atanh", kUnaryFloatTypes).Summary("Inverse hyperbolic tangent element-wise."));
  r->RegisterOrDie(UnaryOp("Lgamma", "T: {bfloat16, half, float, double}")
                       .Summary("log |Gamma(x)| element-wise."));
  r->RegisterOrDie(UnaryOp("Digamma", "T: {bfloat16, half, float, double}")
                       .Summary("The derivative of Lgamma element-wise."));
  r->RegisterOrDie(UnaryOp("Erfinv", "T: {bfloat16, half, float, double}")
                       .Summary("The inverse of the error function element-wise."));
  r->RegisterOrDie(UnaryOp("Ndtri", "T: {bfloat16, half, float, double}")
                       .Summary("The inverse of the standard normal CDF element-wise."));
  for (const char* op : {"IsFinite", "IsNan", "IsInf"})
    r->RegisterOrDie(OpDefBuilder(op)
                         .Input("x: T")
                         .Output("y: bool")
                         .Attr("T: {bfloat16, half, float, double}")
                         .SetShapeFn(UnchangedShape)
                         .Summary("Whether each element is finite, NaN or infinite."));
  r->RegisterOrDie(OpDefBuilder("Relu")
                       .Input("features: T")
                       .Output("activations: T")
                       .Attr("T: {realnumbertype, qint8}")
                       .SetShapeFn(UnchangedShape)
                       .Summary("max(features, 0) element-wise."));
}

void RegisterComparisonOps(OpRegistry* r) {
  for (const char* name : {"Less", "LessEqual", "Greater", "GreaterEqual"}) {
    r->RegisterOrDie(OpDefBuilder(name)
                         .Input("x: T")
                         .Input("y: T")
                         .Output("z: bool")
                         .Attr("T: realnumbertype")
                         .SetShapeFn(BroadcastBinaryOpShape)
                         .Summary("Element-wise comparison of x and y, with broadcasting."));
  }
  for (const char* name : {"Equal", "NotEqual"}) {
    r->RegisterOrDie(OpDefBuilder(name)
                         .Input("x: T")
                         .Input("y: T")
                         .Output("z: bool")
                         .Attr("T: type")
                         .Attr("incompatible_shape_error: bool = true")
                         .SetIsCommutative()
                         .SetShapeFn(EqualityShape)
                         .Summary("Element-wise (in)equality of x and y, with broadcasting."));
  }
}

void RegisterLogicalOps(OpRegistry* r) {
  r->RegisterOrDie(OpDefBuilder("LogicalNot")
                       .Input("x: bool")
                       .Output("y: bool")
                       .SetShapeFn(UnchangedShape)
                       .Summary("!x element-wise."));
  for (const char* name : {"LogicalAnd", "LogicalOr"}) {
    r->RegisterOrDie(OpDefBuilder(name)
                         .Input("x: bool")
                         .Input("y: bool")
                         .Output("z: bool")
                         .SetIsCommutative()
                         .SetShapeFn(BroadcastBinaryOpShape)
                         .Summary("x && y (LogicalAnd) or x || y (LogicalOr), with broadcasting."));
  }
}

void RegisterCastAndSelectOps(OpRegistry* r) {
  r->RegisterOrDie(OpDefBuilder("Cast")
                       .Input("x: SrcT")
                       .Output("y: DstT")
                       .Attr("SrcT: type")
                       .Attr("DstT: type")
                       .Attr("Truncate: bool = false")
                       .SetShapeFn(UnchangedShape)
                       .Summary("x converted to DstT element-wise."));
  r->RegisterOrDie(OpDefBuilder("Select")
                       .Input("condition: bool")
                       .Input("t: T")
                       .Input("e: T")
                       .Output("output: T")
                       .Attr("T: type")
                       .SetShapeFn(SelectShape)
                       .Summary("condition ? t : e, element-wise or by rows of t and e."));
  r->RegisterOrDie(OpDefBuilder("SelectV2")
                       .Input("condition: bool")
                       .Input("t: T")
                       .Input("e: T")
                       .Output("output: T")
                       .Attr("T: type")
                       .SetShapeFn(SelectV2Shape)
                       .Summary("condition ? t : e element-wise, broadcasting all three."));
}

}  // namespace

void RegisterElementwiseOps(OpRegistry* r) {
  RegisterBinaryArithmeticOps(r);
  RegisterUnaryMathOps(r);
  RegisterComparisonOps(r);
  RegisterLogicalOps(r);
  RegisterCastAndSelectOps(r);
}

}  // namespace cfx::internal
