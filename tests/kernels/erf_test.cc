// The vectorized float erf and erfc of the CPU plugin (plugins/cpu/kernels/erf.h), at every
// instruction-set level this CPU runs, against double-precision std::erf and std::erfc (exact
// for float's purposes) over a sweep of all float bit patterns, dense around the switch between
// the near-zero and the tail formula, and at the special values. The bounds are those the
// implementation meets with a little room; the C library's own erfcf reaches about 3 ulp.
#include "kernels/erf.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace cfx::cpu {
namespace {

constexpr double kErfMaxUlp = 1.5;
constexpr double kErfcMaxUlp = 4.0;

// |y - exact| in units in the last place of the float nearest to `exact` (for denormals, the
// smallest denormal). NaN against NaN and equal infinities count as 0; anything else against NaN
// or an infinity as infinitely wrong.
double UlpError(float y, double exact) {
  if (std::isnan(exact)) return std::isnan(y) ? 0.0 : INFINITY;
  const float nearest = std::fabs(static_cast<float>(exact));
  if (std::isinf(nearest) || std::isnan(y)) return y == static_cast<float>(exact) ? 0.0 : INFINITY;
  const double ulp = static_cast<double>(std::nextafter(nearest, INFINITY)) - nearest;
  return std::fabs(static_cast<double>(y) - exact) / ulp;
}

std::vector<SimdLevel> Levels() {
  std::vector<SimdLevel> levels;
  for (int l = 0; l <= static_cast<int>(BestSimdLevel()); ++l)
    levels.push_back(static_cast<SimdLevel>(l));
  return levels;
}

struct Worst {
  double ulp = 0;
  float at = 0;
  void Add(double u, float x) {
    if (!(u <= ulp)) {
      ulp = u;
      at = x;
    }
  }
};

// Checks both functions at every level on `x`; worst errors are reported per function.
void ExpectAccurate(const std::vector<float>& x) {
  std::vector<double> erf_exact(x.size()), erfc_exact(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    erf_exact[i] = std::erf(static_cast<double>(x[i]));
    erfc_exact[i] = std::erfc(static_cast<double>(x[i]));
  }
  std::vector<float> y(x.size());
  for (SimdLevel level : Levels()) {
    SCOPED_TRACE(Name(level));
    Worst erf_worst, erfc_worst;
    ErfSpan(x.data(), y.data(), static_cast<int64_t>(x.size()), level);
    for (size_t i = 0; i < x.size(); ++i) erf_worst.Add(UlpError(y[i], erf_exact[i]), x[i]);
    ErfcSpan(x.data(), y.data(), static_cast<int64_t>(x.size()), level);
    for (size_t i = 0; i < x.size(); ++i) erfc_worst.Add(UlpError(y[i], erfc_exact[i]), x[i]);
    EXPECT_LE(erf_worst.ulp, kErfMaxUlp) << "erf at " << erf_worst.at;
    EXPECT_LE(erfc_worst.ulp, kErfcMaxUlp) << "erfc at " << erfc_worst.at;
  }
}

// Every 509th bit pattern of the 2^32: all binades, both signs, denormals, NaNs and infinities.
TEST(FloatErf, SweepOfAllBitPatterns) {
  std::vector<float> x;
  x.reserve((uint64_t{1} << 32) / 509 + 1);
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 509)
    x.push_back(std::bit_cast<float>(static_cast<uint32_t>(bits)));
  ExpectAccurate(x);
}

// Every float in [0.9375, 1.0625] and its negative (where the two formulas meet and erfc is
// least accurate), the smallest denormals, and erfc's descent into the denormals up to where it
// becomes 0 (x ~ 10.05).
TEST(FloatErf, DenseNearTheSwitchAndInTheTails) {
  std::vector<float> x;
  for (float v = 0.9375f; v <= 1.0625f; v = std::nextafter(v, 2.0f)) {
    x.push_back(v);
    x.push_back(-v);
  }
  for (uint32_t bits = 1; bits < (1u << 16); ++bits) {
    x.push_back(std::bit_cast<float>(bits));
    x.push_back(-std::bit_cast<float>(bits));
  }
  for (float v = 9.0f; v <= 10.25f; v = std::nextafter(v, 11.0f)) x.push_back(v);
  for (float v = 3.8f; v <= 4.0f; v = std::nextafter(v, 5.0f)) x.push_back(-v);
  ExpectAccurate(x);
}

TEST(FloatErf, SpecialValues) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const std::vector<float> x = {0.0f, -0.0f, kInf, -kInf, std::nanf(""), 20.0f, -20.0f};
  for (SimdLevel level : Levels()) {
    SCOPED_TRACE(Name(level));
    std::vector<float> erf(x.size()), erfc(x.size());
    ErfSpan(x.data(), erf.data(), static_cast<int64_t>(x.size()), level);
    ErfcSpan(x.data(), erfc.data(), static_cast<int64_t>(x.size()), level);
    EXPECT_EQ(std::bit_cast<uint32_t>(erf[0]), std::bit_cast<uint32_t>(0.0f));
    EXPECT_EQ(std::bit_cast<uint32_t>(erf[1]), std::bit_cast<uint32_t>(-0.0f));
    EXPECT_EQ(erf[2], 1.0f);
    EXPECT_EQ(erf[3], -1.0f);
    EXPECT_TRUE(std::isnan(erf[4]));
    EXPECT_EQ(erf[5], 1.0f);
    EXPECT_EQ(erf[6], -1.0f);
    EXPECT_EQ(erfc[0], 1.0f);
    EXPECT_EQ(erfc[1], 1.0f);
    EXPECT_EQ(erfc[2], 0.0f);
    EXPECT_EQ(erfc[3], 2.0f);
    EXPECT_TRUE(std::isnan(erfc[4]));
    EXPECT_EQ(erfc[5], 0.0f);
    EXPECT_EQ(erfc[6], 2.0f);
  }
}

// In place (as the kernels run when they may reuse the input), at lengths that end inside a
// vector and inside a tile, gives what a separate output gets.
TEST(FloatErf, InPlaceAndRaggedLengthsMatch) {
  for (int64_t n : {1, 7, 17, 255, 256, 257, 1000}) {
    std::vector<float> x(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      x[static_cast<size_t>(i)] = -6.0f + 0.0123f * static_cast<float>(i);
    std::vector<float> apart(x.size()), in_place = x;
    ErfcSpan(x.data(), apart.data(), n);
    ErfcSpan(in_place.data(), in_place.data(), n);
    EXPECT_EQ(apart, in_place) << n;
    for (size_t i = 0; i < x.size(); ++i)
      EXPECT_LE(UlpError(apart[i], std::erfc(static_cast<double>(x[i]))), kErfcMaxUlp) << x[i];
  }
}

}  // namespace
}  // namespace cfx::cpu
