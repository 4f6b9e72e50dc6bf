// erf, erfc, exp, sigmoid and tanh of float arrays (see vector_math.h).
//
// Near zero (|x| < 1), erf(x) = x + x q(x^2) with q a polynomial of degree 6; erfc is 1 minus
// that. In the tails, erfc(|x|) = t exp(-x^2 + P(t)) with t = 2 / (2 + |x|) and P a polynomial
// of degree 8 in t - kTailCenter, erf is 1 minus that (with x's sign) and erfc(-|x|) is 2 minus
// it. Beyond |x| = 10.5 erfc underflows to 0 and erf is ±1, so the argument is clamped there.
// The coefficients are least-squares fits on Chebyshev nodes (near-minimax) to double-precision
// erf and erfc, rounded to float: errors of the fits are below 4e-9, well under float's 6e-8.
//
// exp reduces x by n ln2 (ln2 in two parts, so that n ln2 is exact enough) to |r| <= ln2 / 2 and
// takes e^r from a polynomial; sigmoid is 1 / (1 + e^-x); tanh is x + x^3 q(x^2) near zero (q a
// least-squares fit like erf's) and 1 - 2 / (e^2|x| + 1) beyond.
//
// The loops (vector_math_loops.inc) are compiled three times, for the baseline instruction set, for
// AVX2 + FMA and for AVX-512F with 512-bit vectors; bench/vector_math_bench.cc measures them
// against the C library's.
#include "kernels/vector_math.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define CFX_CPU_SIMD_LOOPS 1
#endif

namespace cfx::cpu {
namespace {

// erf(x) / x - 1 as a polynomial in x^2 on [0, 1].
constexpr std::array<float, 7> kErfNearZero = {
    0.12837916612625122f,  -0.3761262595653534f,    0.11283597350120544f,  -0.02685432881116867f,
    0.005189312156289816f, -0.0008018855005502701f, 7.882497448008507e-05f};
// log(erfc(x) / t) + x^2 with t = 2 / (2 + x), as a polynomial in t - kTailCenter, for x in
// [1, 10.5] (t in [0.16, 0.667]).
constexpr float kTailCenter = 0.41333332657814026f;
constexpr float kErfcTail0 = -0.7867292165756226f;
constexpr std::array<float, 8> kErfcTailRest = {
    1.3044947385787964f,  0.2780836820602417f, -0.30120378732681274f, -0.2611190676689148f,
    0.17891225218772888f, 0.2652575373649597f, -0.14947377145290375f, -0.24861891567707062f};
constexpr float kTailClamp = 10.5f;
// (exp(r) - 1 - r) / r^2 on |r| <= ln2 / 2 (and a little more, for the rounding of n).
constexpr std::array<float, 6> kExpRemainder = {0.5f,
                                                0.1666666716337204f,
                                                0.041666414588689804f,
                                                0.008333289995789528f,
                                                0.0013938960619270802f,
                                                0.00019906176021322608f};
constexpr float kLog2e = 1.44269504088896341f;
// ln 2 = kLn2High + kLn2Low, kLn2High with 9 significant bits so that n kLn2High is exact.
constexpr float kLn2High = 0.693359375f;
constexpr float kLn2Low = -2.12194440e-4f;
// Adding and subtracting 1.5 * 2^23 rounds a float of magnitude below 2^22 to an integer.
constexpr float kRoundingShift = 12582912.0f;
// e^x is +inf above kExpHigh (the largest float below ln FLT_MAX's rounding) and 0 below
// kExpLow (where it is below half the smallest denormal).
constexpr float kExpHigh = 88.72283172607421875f;
constexpr float kExpLow = -103.972084045410156f;
constexpr float kInfinity = std::numeric_limits<float>::infinity();
// (tanh(x) - x) / x^3 as a polynomial in x^2 on [0, kTanhSplit]: within 0.77 ulp there.
constexpr float kTanhSplit = 0.625f;
constexpr std::array<float, 6> kTanhNearZero = {
    -0.3333333134651184f,  0.13333211839199066f,   -0.05394745245575905f,
    0.021703999489545822f, -0.008184662088751793f, 0.0021489840000867844f};
constexpr float kTanhClamp = 10.0f;

namespace baseline_isa {
#include "kernels/vector_math_loops.inc"
}  // namespace baseline_isa

#ifdef CFX_CPU_SIMD_LOOPS
#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace avx2_isa {
#include "kernels/vector_math_loops.inc"
}  // namespace avx2_isa
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx512f,prefer-vector-width=512")
namespace avx512_isa {
#include "kernels/vector_math_loops.inc"
}  // namespace avx512_isa
#pragma GCC pop_options
#endif

}  // namespace

SimdLevel BestSimdLevel() {
#ifdef CFX_CPU_SIMD_LOOPS
  static const SimdLevel level = __builtin_cpu_supports("avx512f") ? SimdLevel::kAvx512
                                 : (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
                                     ? SimdLevel::kAvx2
                                     : SimdLevel::kBaseline;
  return level;
#else
  return SimdLevel::kBaseline;
#endif
}

void VectorSpan(VectorFunction f, const float* x, float* y, int64_t n, SimdLevel level) {
#ifdef CFX_CPU_SIMD_LOOPS
  if (level == SimdLevel::kAvx512) return avx512_isa::Run(f, x, y, n);
  if (level == SimdLevel::kAvx2) return avx2_isa::Run(f, x, y, n);
#endif
  baseline_isa::Run(f, x, y, n);
}

const char* Name(SimdLevel level) {
  switch (level) {
    case SimdLevel::kBaseline:
      return "baseline";
    case SimdLevel::kAvx2:
      return "avx2";
    case SimdLevel::kAvx512:
      return "avx512";
  }
  return "unknown";
}

}  // namespace cfx::cpu
