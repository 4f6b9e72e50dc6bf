// Unary math on CPU: Neg, Abs, Square, Relu, Sign, Round for float, double, int32 and int64; Exp,
// Log, Sqrt, Rsqrt, Tanh, Sigmoid, Sin, Cos, Reciprocal, Rint, Erf, Erfc, Floor, Ceil, Log1p,
// Expm1, Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh, Lgamma, Digamma, Erfinv, Ndtri
// for float and double (TensorFlow registers them on CPU for floating point and complex types
// only); _MklSwish for float; Invert for the integer types. The C library's functions (correctly rounded or within an ulp or
// two), Eigen's digamma and ndtri (as TensorFlow's kernels use).
#include <unsupported/Eigen/SpecialFunctions>

#include <cmath>
#include <limits>
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
using FloorFn = ElementFn<1, [](auto x) { return std::floor(x); }>;
using CeilFn = ElementFn<1, [](auto x) { return std::ceil(x); }>;
using Log1pFn = ElementFn<20, [](auto x) { return std::log1p(x); }>;
using Expm1Fn = ElementFn<20, [](auto x) { return std::expm1(x); }>;
using TanFn = ElementFn<25, [](auto x) { return std::tan(x); }>;
using AsinFn = ElementFn<25, [](auto x) { return std::asin(x); }>;
using AcosFn = ElementFn<25, [](auto x) { return std::acos(x); }>;
using AtanFn = ElementFn<25, [](auto x) { return std::atan(x); }>;
using SinhFn = ElementFn<25, [](auto x) { return std::sinh(x); }>;
using CoshFn = ElementFn<25, [](auto x) { return std::cosh(x); }>;
using AsinhFn = ElementFn<25, [](auto x) { return std::asinh(x); }>;
using AcoshFn = ElementFn<25, [](auto x) { return std::acosh(x); }>;
using AtanhFn = ElementFn<25, [](auto x) { return std::atanh(x); }>;
// lgamma_r: the C library's lgamma writes the sign to a global (a data race across threads).
using LgammaFn = ElementFn<40, []<typename T>(T x) {
  int sign;
  if constexpr (std::is_same_v<T, float>) {
    return ::lgammaf_r(x, &sign);
  } else {
    return ::lgamma_r(x, &sign);
  }
}>;
using DigammaFn = ElementFn<40, [](auto x) { return Eigen::numext::digamma(x); }>;
// NaN outside [0, 1] (and for NaN), -inf at 0 and inf at 1, as TensorFlow's.
using NdtriFn = ElementFn<40, []<typename T>(T x) {
  if (!(x >= T(0) && x <= T(1))) return std::numeric_limits<T>::quiet_NaN();
  if (x == T(0)) return -std::numeric_limits<T>::infinity();
  if (x == T(1)) return std::numeric_limits<T>::infinity();
  return Eigen::numext::ndtri(x);
}>;

// erfinv(x) in double (more accurate than TensorFlow's near 0, which computes ndtri((1 + x) / 2)
// in the input's type: docs/tensorflow-compat.md): from ndtri (erfinv(x) = ndtri((1 + x) / 2) / sqrt(2), through 1 - |x|
// for |x| > 1/2, which is exact there, so that results near +-1 keep their precision; a series
// for tiny |x|), then one Newton step on erf (erfc near +-1). Float rounds the double result.
double ErfinvDouble(double x) {
  if (!(x >= -1.0 && x <= 1.0)) return std::numeric_limits<double>::quiet_NaN();
  const double a = std::fabs(x);
  if (a == 1.0) return std::copysign(std::numeric_limits<double>::infinity(), x);
  constexpr double kHalfSqrtPi = 0.88622692545275801365;    // sqrt(pi) / 2
  constexpr double kTwoOverSqrtPi = 1.12837916709551257390;  // d erf / dx at 0
  constexpr double kSqrtHalf = 0.70710678118654752440;
  double r;
  if (a < 1e-8) {
    r = a * kHalfSqrtPi * (1.0 + 0.26179938779914943654 * a * a);  // + pi/12 x^3
  } else if (a <= 0.5) {
    r = Eigen::numext::ndtri(0.5 + 0.5 * a) * kSqrtHalf;
    r -= (std::erf(r) - a) / (kTwoOverSqrtPi * std::exp(-r * r));
  } else {
    r = -Eigen::numext::ndtri(0.5 * (1.0 - a)) * kSqrtHalf;
    r += (std::erfc(r) - (1.0 - a)) / (kTwoOverSqrtPi * std::exp(-r * r));
  }
  return std::copysign(r, x);
}
using ErfinvFn = ElementFn<60, []<typename T>(T x) { return static_cast<T>(ErfinvDouble(x)); }>;

using InvertFn = ElementFn<1, [](auto x) { return static_cast<decltype(x)>(~x); }>;

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
  RegisterFloat<FloorFn>(p, "Floor");
  RegisterFloat<CeilFn>(p, "Ceil");
  RegisterFloat<Log1pFn>(p, "Log1p");
  RegisterFloat<Expm1Fn>(p, "Expm1");
  RegisterFloat<TanFn>(p, "Tan");
  RegisterFloat<AsinFn>(p, "Asin");
  RegisterFloat<AcosFn>(p, "Acos");
  RegisterFloat<AtanFn>(p, "Atan");
  RegisterFloat<SinhFn>(p, "Sinh");
  RegisterFloat<CoshFn>(p, "Cosh");
  RegisterFloat<AsinhFn>(p, "Asinh");
  RegisterFloat<AcoshFn>(p, "Acosh");
  RegisterFloat<AtanhFn>(p, "Atanh");
  RegisterFloat<LgammaFn>(p, "Lgamma");
  RegisterFloat<DigammaFn>(p, "Digamma");
  RegisterFloat<ErfinvFn>(p, "Erfinv");
  RegisterFloat<NdtriFn>(p, "Ndtri");
  RegisterForTypes<Unary<InvertFn>::template Kernel, int8_t, int16_t, int32_t, int64_t, uint8_t,
                   uint16_t, uint32_t, uint64_t>(p, "Invert");
  RegisterForTypes<UnaryTo<IsFiniteFn, bool>::template Kernel, float, double>(p, "IsFinite");
  RegisterForTypes<UnaryTo<IsNanFn, bool>::template Kernel, float, double>(p, "IsNan");
  RegisterForTypes<UnaryTo<IsInfFn, bool>::template Kernel, float, double>(p, "IsInf");
}

}  // namespace cfx::cpu
