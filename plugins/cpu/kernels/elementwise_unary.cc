// Unary math on CPU: Neg, Abs, Square, Relu, Sign, Round for float, double, int32 and int64; Exp,
// Log, Sqrt, Rsqrt, Tanh, Sigmoid, Sin, Cos, Reciprocal, Rint, Erf, Erfc for float and double
// (TensorFlow registers them on CPU for floating point and complex types only); _MklSwish for
// float.
#include <cmath>
#include <type_traits>

#include "kernels/broadcast.h"
#include "kernels/vector_math.h"
#include "kernels/util.h"

namespace cfx::cpu {
namespace {

// -INT_MIN and |INT_MIN| wrap around to INT_MIN, as in TensorFlow.
using NegFn = ElementFn<1, []<typename T>(T x) { return WrappingSub(T(0), x); }>;
using AbsFn = ElementFn<1, []<typename T>(T x) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::fabs(x);
  } else {
    return x < 0 ? WrappingSub(T(0), x) : x;
  }
}>;
using SquareFn = ElementFn<1, [](auto x) { return WrappingMultiply(x, x); }>;
// NaN stays NaN.
using ReluFn = ElementFn<1, []<typename T>(T x) { return (x > T(0) || IsNan(x)) ? x : T(0); }>;
using SinFn = ElementFn<20, [](auto x) { return std::sin(x); }>;
using CosFn = ElementFn<20, [](auto x) { return std::cos(x); }>;
using ReciprocalFn = ElementFn<4, []<typename T>(T x) { return T(1) / x; }>;
using LogFn = ElementFn<20, [](auto x) { return std::log(x); }>;
using SqrtFn = ElementFn<4, [](auto x) { return std::sqrt(x); }>;
using RsqrtFn = ElementFn<6, []<typename T>(T x) { return T(1) / std::sqrt(x); }>;

// Sign of NaN is NaN and of -0 is +0, as TensorFlow's.
// (Comparisons in parentheses: a bare '>' would end the template argument list.)
using SignFn = ElementFn<1, []<typename T>(T x) {
  if ((x > T(0))) return T(1);
  if ((x < T(0))) return T(-1);
  return x == T(0) ? T(0) : x;
}>;
// Round half to even (nearbyint in the default rounding mode); integers are already round.
using RoundFn = ElementFn<2, []<typename T>(T x) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::nearbyint(x);
  } else {
    return x;
  }
}>;
// Float goes through the vectorized loops of vector_math.h, double through the C library
// (`kScalar`).
template <VectorFunction kFunction, int64_t kCostPerElement, auto kScalar>
struct VectorizedFn {
  static constexpr int64_t kCost = kCostPerElement;
  template <typename T>
  T operator()(T x) const {
    return kScalar(x);
  }
  static void Span(const float* x, float* y, int64_t n) { VectorSpan(kFunction, x, y, n); }
};
using ErfFn = VectorizedFn<VectorFunction::kErf, 20, [](auto x) { return std::erf(x); }>;
using ErfcFn = VectorizedFn<VectorFunction::kErfc, 20, [](auto x) { return std::erfc(x); }>;
using ExpFn = VectorizedFn<VectorFunction::kExp, 20, [](auto x) { return std::exp(x); }>;
using TanhFn = VectorizedFn<VectorFunction::kTanh, 30, [](auto x) { return std::tanh(x); }>;
// 1 / (1 + e^-x), or e^x / (1 + e^x) below 0 (so that it does not flush to 0 where e^-x
// overflows), as the float loops compute it.
using SigmoidFn = VectorizedFn<VectorFunction::kSigmoid, 25, []<typename T>(T x) {
  const T e = std::exp(-std::fabs(x));
  return (x < T(0) ? e : T(1)) / (T(1) + e);
}>;
// x * sigmoid(x) (TensorFlow's _MklSwish), float only as TensorFlow's CPU kernel.
using SwishFn = VectorizedFn<VectorFunction::kSwish, 26, []<typename T>(T x) {
  const T e = std::exp(-std::fabs(x));
  return x * ((x < T(0) ? e : T(1)) / (T(1) + e));
}>;
using IsFiniteFn = ElementFn<1, [](auto x) { return std::isfinite(x); }>;
using IsNanFn = ElementFn<1, [](auto x) { return std::isnan(x); }>;
using IsInfFn = ElementFn<1, [](auto x) { return std::isinf(x); }>;

template <typename F>
void RegisterReal(sdk::Plugin& p, const char* op) {
  RegisterForTypes<Unary<F>::template Kernel, float, double, int32_t, int64_t>(p, op);
}

template <typename F>
void RegisterFloat(sdk::Plugin& p, const char* op) {
  RegisterForTypes<Unary<F>::template Kernel, float, double>(p, op);
}

}  // namespace

void RegisterUnaryMathKernels(sdk::Plugin& p) {
  RegisterReal<NegFn>(p, "Neg");
  RegisterReal<AbsFn>(p, "Abs");
  RegisterReal<SquareFn>(p, "Square");
  RegisterReal<ReluFn>(p, "Relu");
  RegisterFloat<ExpFn>(p, "Exp");
  RegisterFloat<SinFn>(p, "Sin");
  RegisterFloat<CosFn>(p, "Cos");
  RegisterFloat<ReciprocalFn>(p, "Reciprocal");
  RegisterFloat<LogFn>(p, "Log");
  RegisterFloat<SqrtFn>(p, "Sqrt");
  RegisterFloat<RsqrtFn>(p, "Rsqrt");
  RegisterFloat<TanhFn>(p, "Tanh");
  RegisterFloat<SigmoidFn>(p, "Sigmoid");
  RegisterForTypes<Unary<SwishFn>::template Kernel, float>(p, "_MklSwish");
  RegisterReal<SignFn>(p, "Sign");
  RegisterReal<RoundFn>(p, "Round");
  RegisterFloat<RoundFn>(p, "Rint");
  RegisterFloat<ErfFn>(p, "Erf");
  RegisterFloat<ErfcFn>(p, "Erfc");
  RegisterForTypes<UnaryTo<IsFiniteFn, bool>::template Kernel, float, double>(p, "IsFinite");
  RegisterForTypes<UnaryTo<IsNanFn, bool>::template Kernel, float, double>(p, "IsNan");
  RegisterForTypes<UnaryTo<IsInfFn, bool>::template Kernel, float, double>(p, "IsInf");
}

}  // namespace cfx::cpu
