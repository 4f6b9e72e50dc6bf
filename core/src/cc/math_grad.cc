// Gradients of the standard math ops: element-wise arithmetic (with broadcasting), AddN, unary
// math, MatMul and the reductions. Formulas as TensorFlow defines them.
#include "conflux/cc/ops/standard_ops.h"
#include "grad_helpers.h"

namespace cfx::internal {
namespace {

using Grads = std::vector<Output>;

// Registers a gradient for a unary op: dx = f(scope, op, dy).
template <typename F>
void Unary(GradientRegistry* r, const std::string& op, F f) {
  (void)r->Register(op, [f](const Scope& s, const Operation& fwd, const Grads& dy, Grads* dx) {
    *dx = {f(s, fwd, dy[0])};
    return s.status();
  });
}

// Registers a gradient for a broadcasting binary op: (gx, gy) at the broadcast shape, reduced.
template <typename F>
void Binary(GradientRegistry* r, const std::string& op, F f) {
  (void)r->Register(op, [f](const Scope& s, const Operation& fwd, const Grads& dy, Grads* dx) {
    Output x = fwd.input(0), y = fwd.input(1);
    Output gx, gy;
    f(s, x, y, fwd.output(0), dy[0], &gx, &gy);
    ReduceForBroadcast(s, x, y, &gx, &gy);
    *dx = {gx, gy};
    return s.status();
  });
}

Grads MatMulGrads(const Scope& s, const Output& a, const Output& b, const Output& dy, bool ta,
                  bool tb) {
  using A = ops::MatMulAttrs;
  if (!ta && !tb)
    return {ops::MatMul(s, dy, b, A().TransposeB(true)), ops::MatMul(s, a, dy, A().TransposeA(true))};
  if (!ta && tb)
    return {ops::MatMul(s, dy, b), ops::MatMul(s, dy, a, A().TransposeA(true))};
  if (ta && !tb)
    return {ops::MatMul(s, b, dy, A().TransposeB(true)), ops::MatMul(s, a, dy)};
  return {ops::MatMul(s, b, dy, A().TransposeA(true).TransposeB(true)),
          ops::MatMul(s, dy, a, A().TransposeA(true).TransposeB(true))};
}

// 1 where x is not 0, else 0, in x's type.
Output NonZero(const Scope& s, const Output& x) {
  return ops::Cast(s, ops::NotEqual(s, x, ops::ZerosLike(s, x)), x.type());
}

bool BoolAttr(const Operation& op, const char* name) {
  const AttrValue* v = op.node()->attr(name);
  return v != nullptr && v->b;
}

}  // namespace

void ReduceForBroadcast(const Scope& s, const Output& x, const Output& y, Output* gx,
                        Output* gy) {
  Output sx = ops::Shape(s, x), sy = ops::Shape(s, y);
  auto axes = ops::BroadcastGradientArgs(s, sx, sy);
  if (gx->valid()) *gx = ops::Reshape(s, ops::Sum(s, *gx, axes.r0), sx);
  if (gy->valid()) *gy = ops::Reshape(s, ops::Sum(s, *gy, axes.r1), sy);
}

Output ReducedShape(const Scope& s, const Output& input_shape, const Output& axes) {
  Output shape = ops::Cast(s, input_shape, DT_INT32);
  Output rank = ops::Size(s, shape);
  Output ax = ops::Reshape(s, ops::Cast(s, axes, DT_INT32), {-1});
  // Negative axes count from the end.
  ax = ops::AddV2(s, ax, ops::Mul(s, rank, ops::Cast(s, ops::Less(s, ax, 0), DT_INT32)));
  // mask[d] = d is one of the axes.
  Output d = ops::ExpandDims(s, ops::Range(s, 0, rank, 1), 1);
  Output hits = ops::Cast(s, ops::Equal(s, d, ops::ExpandDims(s, ax, 0)), DT_INT32);
  Output mask = ops::Greater(s, ops::Sum(s, hits, 1), 0);
  return ops::SelectV2(s, mask, ops::OnesLike(s, shape), shape);
}

Output BroadcastReductionGrad(const Scope& s, const Output& x, const Output& axes,
                              const Output& dy) {
  Output shape = ops::Shape(s, x);
  Output kept = ops::Reshape(s, dy, ReducedShape(s, shape, axes));
  return ops::BroadcastTo(s, kept, shape);
}

void RegisterMathGradients(GradientRegistry* r) {
  auto add = [](const Scope&, const Output&, const Output&, const Output&, const Output& dy,
                Output* gx, Output* gy) { *gx = dy, *gy = dy; };
  Binary(r, "Add", add);
  Binary(r, "AddV2", add);
  // The sum passes its gradient to every input unchanged.
  (void)r->Register("AddN", [](const Scope& s, const Operation& op, const Grads& dy, Grads* dx) {
    *dx = Grads(op.num_inputs(), dy[0]);
    return s.status();
  });
  Binary(r, "Sub", [](const Scope& s, const Output&, const Output&, const Output&,
                      const Output& dy, Output* gx, Output* gy) {
    *gx = dy;
    *gy = ops::Neg(s, dy);
  });
  Binary(r, "Mul", [](const Scope& s, const Output& x, const Output& y, const Output&,
                      const Output& dy, Output* gx, Output* gy) {
    *gx = ops::Mul(s, dy, y);
    *gy = ops::Mul(s, x, dy);
  });
  auto div = [](const Scope& s, const Output& x, const Output& y, const Output&, const Output& dy,
                Output* gx, Output* gy) {
    *gx = ops::RealDiv(s, dy, y);
    *gy = ops::Mul(s, dy, ops::RealDiv(s, ops::RealDiv(s, ops::Neg(s, x), y), y));
  };
  Binary(r, "RealDiv", div);
  // x mod y = x - floor(x / y) y: slope 1 in x and -floor(x / y) in y, away from the jumps.
  Binary(r, "FloorMod", [](const Scope& s, const Output& x, const Output& y, const Output&,
                           const Output& dy, Output* gx, Output* gy) {
    *gx = dy;
    *gy = ops::Mul(s, dy, ops::Neg(s, ops::FloorDiv(s, x, y)));
  });
  Binary(r, "Div", div);
  // atan2(y, x): d/dy = x / (x^2 + y^2), d/dx = -y / (x^2 + y^2).
  Binary(r, "Atan2", [](const Scope& s, const Output& y, const Output& x, const Output&,
                        const Output& dy, Output* gy, Output* gx) {
    Output scaled = ops::RealDiv(s, dy, ops::AddV2(s, ops::Square(s, y), ops::Square(s, x)));
    *gy = ops::Mul(s, x, scaled);
    *gx = ops::Mul(s, ops::Neg(s, y), scaled);
  });
  // Xdivy and Xlogy: the slopes of x / y and x * log(y), with x's slope 0 where x is 0.
  Binary(r, "Xdivy", [](const Scope& s, const Output& x, const Output& y, const Output&,
                        const Output& dy, Output* gx, Output* gy) {
    *gx = ops::Mul(s, ops::Xdivy(s, NonZero(s, x), y), dy);
    *gy = ops::Mul(s, ops::Xdivy(s, ops::Neg(s, x), ops::Square(s, y)), dy);
  });
  Binary(r, "Xlogy", [](const Scope& s, const Output& x, const Output& y, const Output&,
                        const Output& dy, Output* gx, Output* gy) {
    *gx = ops::Mul(s, ops::Xlogy(s, NonZero(s, x), y), dy);
    *gy = ops::Mul(s, ops::Xdivy(s, x, y), dy);
  });
  Binary(r, "Xlog1py", [](const Scope& s, const Output& x, const Output& y, const Output&,
                          const Output& dy, Output* gx, Output* gy) {
    *gx = ops::Mul(s, ops::Xlog1py(s, NonZero(s, x), y), dy);
    *gy = ops::Mul(s, ops::Xdivy(s, x, ops::Add(s, y, ops::OnesLike(s, y))), dy);
  });
  // DivNoNan and MulNoNan (TensorFlow's rules): where y is 0 both slopes are 0.
  Binary(r, "DivNoNan", [](const Scope& s, const Output& x, const Output& y, const Output&,
                           const Output& dy, Output* gx, Output* gy) {
    *gx = ops::DivNoNan(s, dy, y);
    *gy = ops::Mul(s, dy, ops::DivNoNan(s, ops::DivNoNan(s, ops::Neg(s, x), y), y));
  });
  Binary(r, "MulNoNan", [](const Scope& s, const Output& x, const Output& y, const Output&,
                           const Output& dy, Output* gx, Output* gy) {
    *gx = ops::MulNoNan(s, dy, y);
    *gy = ops::MulNoNan(s, x, dy);
  });
  Binary(r, "SquaredDifference", [](const Scope& s, const Output& x, const Output& y,
                                    const Output&, const Output& dy, Output* gx, Output* gy) {
    *gx = ops::Mul(s, ops::Mul(s, dy, 2.0f), ops::Sub(s, x, y));
    *gy = ops::Neg(s, *gx);
  });
  auto select = [](bool max) {
    return [max](const Scope& s, const Output& x, const Output& y, const Output&,
                 const Output& dy, Output* gx, Output* gy) {
      Output xmask = max ? ops::GreaterEqual(s, x, y) : ops::LessEqual(s, x, y);
      Output zeros = ops::ZerosLike(s, dy);
      *gx = ops::SelectV2(s, xmask, dy, zeros);
      *gy = ops::SelectV2(s, xmask, zeros, dy);
    };
  };
  Binary(r, "Maximum", select(true));
  Binary(r, "Minimum", select(false));
  Binary(r, "Pow", [](const Scope& s, const Output& x, const Output& y, const Output& z,
                      const Output& dy, Output* gx, Output* gy) {
    *gx = ops::Mul(s, dy, ops::Mul(s, y, ops::Pow(s, x, ops::Sub(s, y, ops::OnesLike(s, y)))));
    // d/dy x^y = x^y log x, taken as 0 where x <= 0 (as TensorFlow does).
    Output positive = ops::Greater(s, x, ops::ZerosLike(s, x));
    Output safe_x = ops::SelectV2(s, positive, x, ops::OnesLike(s, x));
    Output log_x = ops::SelectV2(s, positive, ops::Log(s, safe_x), ops::ZerosLike(s, x));
    *gy = ops::Mul(s, dy, ops::Mul(s, z, log_x));
  });

  Unary(r, "Neg", [](const Scope& s, const Operation&, const Output& dy) { return ops::Neg(s, dy); });
  Unary(r, "Identity", [](const Scope&, const Operation&, const Output& dy) { return dy; });
  Unary(r, "EnsureShape", [](const Scope&, const Operation&, const Output& dy) { return dy; });
  (void)r->Register("IdentityN", [](const Scope& s, const Operation&, const Grads& dy, Grads* dx) {
    *dx = dy;
    return s.status();
  });
  Unary(r, "Square", [](const Scope& s, const Operation& op, const Output& dy) {
    return ops::Mul(s, dy, ops::Mul(s, op.input(0), 2.0f));
  });
  Unary(r, "Exp", [](const Scope& s, const Operation& op, const Output& dy) {
    return ops::Mul(s, dy, op.output(0));
  });
  Unary(r, "Log", [](const Scope& s, const Operation& op, const Output& dy) {
    return ops::Mul(s, dy, ops::Reciprocal(s, op.input(0)));
  });
  Unary(r, "Sin", [](const Scope& s, const Operation& op, const Output& dy) {
    return ops::Mul(s, dy, ops::Cos(s, op.input(0)));
  });
  Unary(r, "Cos", [](const Scope& s, const Operation& op, const Output& dy) {
    return ops::Neg(s, ops::Mul(s, dy, ops::Sin(s, op.input(0))));
  });
  Unary(r, "Sqrt", [](const Scope& s, const Operation& op, const Output& dy) {
    return ops::SqrtGrad(s, op.output(0), dy);
  });
  Unary(r, "Rsqrt", [](const Scope& s, const Operation& op, const Output& dy) {
    return ops::RsqrtGrad(s, op.output(0), dy);
  });
  Unary(r, "Reciprocal", [](const Scope& s, const Operation& op, const Output& dy) {
    return ops::ReciprocalGrad(s, op.output(0), dy);
  });
  Unary(r, "Sigmoid", [](const Scope& s, const Operation& op, const Output& dy) {
    return ops::SigmoidGrad(s, op.output(0), dy);
  });
  Unary(r, "Tanh", [](const Scope& s, const Operation& op, const Output& dy) {
    return ops::TanhGrad(s, op.output(0), dy);
  });
  Unary(r, "Relu", [](const Scope& s, const Operation& op, const Output& dy) {
    return ops::ReluGrad(s, dy, op.output(0));
  });
  Unary(r, "Abs", [](const Scope& s, const Operation& op, const Output& dy) {
    Output x = op.input(0), zeros = ops::ZerosLike(s, x);
    // sign(x) * dy, with sign(0) = 0.
    return ops::SelectV2(s, ops::Greater(s, x, zeros), dy,
                         ops::SelectV2(s, ops::Less(s, x, zeros), ops::Neg(s, dy),
                                       ops::ZerosLike(s, dy)));
  });

  // Sign is flat where it is defined; Round and Rint have no gradient (TensorFlow's rules).
  Unary(r, "Sign", [](const Scope& s, const Operation& op, const Output&) {
    return ops::ZerosLike(s, op.input(0));
  });
  // d erf(x) / dx = 2 / sqrt(pi) * exp(-x^2); erfc's is its negation.
  auto erf_slope = [](const Scope& s, const Operation& op, const Output& dy) {
    Output x = op.input(0);
    return ops::Mul(s, dy, ops::Mul(s, ops::Exp(s, ops::Neg(s, ops::Square(s, x))),
                                    1.1283791670955126));
  };
  Unary(r, "Erf", erf_slope);
  Unary(r, "Erfc", [erf_slope](const Scope& s, const Operation& op, const Output& dy) {
    return ops::Neg(s, erf_slope(s, op, dy));
  });

  // The inverse and hyperbolic trigonometric functions and the rest of TensorFlow's math_grad.py
  // unary rules.
  Unary(r, "Log1p", [](const Scope& s, const Operation& op, const Output& dy) {
    return ops::Mul(s, dy, ops::Reciprocal(s, ops::Add(s, op.input(0), ops::OnesLike(s, dy))));
  });
  Unary(r, "Expm1", [](const Scope& s, const Operation& op, const Output& dy) {
    return ops::Mul(s, dy, ops::Exp(s, op.input(0)));
  });
  Unary(r, "Tan", [](const Scope& s, const Operation& op, const Output& dy) {
    return ops::Mul(s, dy, ops::Square(s, ops::Reciprocal(s, ops::Cos(s, op.input(0)))));
  });
  auto one_minus_x2 = [](const Scope& s, const Output& x) {
    return ops::Sub(s, ops::OnesLike(s, x), ops::Square(s, x));
  };
  Unary(r, "Asin", [one_minus_x2](const Scope& s, const Operation& op, const Output& dy) {
    return ops::Mul(s, dy, ops::Rsqrt(s, one_minus_x2(s, op.input(0))));
  });
  Unary(r, "Acos", [one_minus_x2](const Scope& s, const Operation& op, const Output& dy) {
    return ops::Neg(s, ops::Mul(s, dy, ops::Rsqrt(s, one_minus_x2(s, op.input(0)))));
  });
  Unary(r, "Atan", [](const Scope& s, const Operation& op, const Output& dy) {
    Output x = op.input(0);
    return ops::Mul(s, dy, ops::Reciprocal(s, ops::Add(s, ops::OnesLike(s, x), ops::Square(s, x))));
  });
  Unary(r, "Sinh", [](const Scope& s, const Operation& op, const Output& dy) {
    return ops::Mul(s, dy, ops::Cosh(s, op.input(0)));
  });
  Unary(r, "Cosh", [](const Scope& s, const Operation& op, const Output& dy) {
    return ops::Mul(s, dy, ops::Sinh(s, op.input(0)));
  });
  Unary(r, "Asinh", [](const Scope& s, const Operation& op, const Output& dy) {
    return ops::Mul(s, dy, ops::Reciprocal(s, ops::Cosh(s, op.output(0))));
  });
  Unary(r, "Acosh", [](const Scope& s, const Operation& op, const Output& dy) {
    return ops::Mul(s, dy, ops::Reciprocal(s, ops::Sinh(s, op.output(0))));
  });
  Unary(r, "Atanh", [one_minus_x2](const Scope& s, const Operation& op, const Output& dy) {
    return ops::Mul(s, dy, ops::Reciprocal(s, one_minus_x2(s, op.input(0))));
  });
  Unary(r, "Lgamma", [](const Scope& s, const Operation& op, const Output& dy) {
    return ops::Mul(s, dy, ops::Digamma(s, op.input(0)));
  });
  // d erfinv(x) / dx = sqrt(pi) / 2 * exp(erfinv(x)^2); d ndtri(x) / dx = sqrt(2 pi) *
  // exp(ndtri(x)^2 / 2).
  Unary(r, "Erfinv", [](const Scope& s, const Operation& op, const Output& dy) {
    return ops::Mul(s, dy, ops::Mul(s, ops::Exp(s, ops::Square(s, op.output(0))),
                                    0.88622692545275801365));
  });
  Unary(r, "Ndtri", [](const Scope& s, const Operation& op, const Output& dy) {
    return ops::Mul(s, dy, ops::Mul(s, ops::Exp(s, ops::Mul(s, ops::Square(s, op.output(0)), 0.5)),
                                    2.50662827463100050242));
  });

  (void)r->Register("MatMul", [](const Scope& s, const Operation& op, const Grads& dy, Grads* dx) {
    *dx = MatMulGrads(s, op.input(0), op.input(1), dy[0], BoolAttr(op, "transpose_a"),
                      BoolAttr(op, "transpose_b"));
    return s.status();
  });
  (void)r->Register("Sum", [](const Scope& s, const Operation& op, const Grads& dy, Grads* dx) {
    *dx = {BroadcastReductionGrad(s, op.input(0), op.input(1), dy[0]), Output()};
    return s.status();
  });
  (void)r->Register("Mean", [](const Scope& s, const Operation& op, const Grads& dy, Grads* dx) {
    Output x = op.input(0);
    Output g = BroadcastReductionGrad(s, x, op.input(1), dy[0]);
    const DataType t = x.type();
    Output count = ops::RealDiv(s, ops::Cast(s, ops::Size(s, x), t),
                                ops::Cast(s, ops::Size(s, op.output(0)), t));
    *dx = {ops::RealDiv(s, g, count), Output()};
    return s.status();
  });
  auto extreme = [](const Scope& s, const Operation& op, const Grads& dy, Grads* dx) {
    // The gradient goes to every element equal to the extreme value, split evenly among ties.
    Output x = op.input(0), axes = op.input(1);
    Output shape = ops::Shape(s, x);
    Output kept_shape = ReducedShape(s, shape, axes);
    Output y = ops::Reshape(s, op.output(0), kept_shape);
    Output hits = ops::Cast(s, ops::Equal(s, y, x), x.type());
    Output count = ops::Sum(s, hits, axes, ops::SumAttrs().KeepDims(true));
    Output g = ops::Reshape(s, dy[0], kept_shape);
    *dx = {ops::Mul(s, ops::RealDiv(s, hits, count), g), Output()};
    return s.status();
  };
  (void)r->Register("Max", extreme);
  (void)r->Register("Min", extreme);
  // Cumsum: each x[j] counts in the outputs after it (before it when reversed), so its gradient is
  // the running sum of dy in the other direction.
  (void)r->Register("Cumsum", [](const Scope& s, const Operation& op, const Grads& dy, Grads* dx) {
    auto attrs =
        ops::CumsumAttrs().Exclusive(BoolAttr(op, "exclusive")).Reverse(!BoolAttr(op, "reverse"));
    *dx = {ops::Cumsum(s, dy[0], op.input(1), attrs), Output()};
    return s.status();
  });
  // Cumprod: out[i] / x[j] is d out[i] / d x[j] for the x[j] in out[i], so the gradient is the
  // reverse running sum of out * dy, divided by x; 0 where x is 0 (TensorFlow's div_no_nan).
  (void)r->Register("Cumprod", [](const Scope& s, const Operation& op, const Grads& dy, Grads* dx) {
    Output x = op.input(0);
    auto attrs =
        ops::CumsumAttrs().Exclusive(BoolAttr(op, "exclusive")).Reverse(!BoolAttr(op, "reverse"));
    Output sums = ops::Cumsum(s, ops::Mul(s, op.output(0), dy[0]), op.input(1), attrs);
    Output zeros = ops::ZerosLike(s, x);
    *dx = {ops::SelectV2(s, ops::Equal(s, x, zeros), zeros, ops::RealDiv(s, sums, x)), Output()};
    return s.status();
  });
  (void)r->Register("Cast", [](const Scope& s, const Operation& op, const Grads& dy, Grads* dx) {
    *dx = {ops::Cast(s, dy[0], BaseType(op.input(0).type()))};
    return s.status();
  });

  for (const char* op : {"Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual",
                         "LogicalAnd", "LogicalOr", "LogicalNot", "All", "Any", "ArgMax", "ArgMin",
                         "RandomUniform", "RandomStandardNormal", "TruncatedNormal",
                         "RandomUniformInt", "RandomShuffle", "Range",
                         "BroadcastGradientArgs", "InvertPermutation", "Round", "Rint", "Floor", "Ceil", "FloorDiv",
                         "TruncateDiv", "IsFinite", "IsNan", "IsInf", "BitwiseAnd", "BitwiseOr",
                         "BitwiseXor", "LeftShift", "RightShift", "Invert", "BroadcastArgs",
                         "ConcatOffset", "ShapeN"})
    r->RegisterNoGradient(op);
}

}  // namespace cfx::internal
