// The vectorized float erf, erfc, exp, sigmoid and tanh of the CPU plugin
// (plugins/cpu/kernels/vector_math.h), at every instruction-set level this CPU runs, against the
// double-precision functions (exact for float's purposes) over a sweep of all float bit patterns,
// dense where formulas switch and in the tails, and at the special values. The bounds are those
// the implementation meets with a little room; the C library's own erfcf reaches about 3 ulp.
#include "kernels/vector_math.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace cfx::cpu {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

struct Function {
  VectorFunction f;
  const char* name;
  double (*exact)(double);
  double max_ulp;
};

double Sigmoid(double x) { return x >= 0 ? 1 / (1 + std::exp(-x)) : std::exp(x) / (1 + std::exp(x)); }

const std::vector<Function>& Functions() {
  static const std::vector<Function> functions = {
      {VectorFunction::kErf, "erf", [](double x) { return std::erf(x); }, 1.5},
      {VectorFunction::kErfc, "erfc", [](double x) { return std::erfc(x); }, 4.0},
      {VectorFunction::kExp, "exp", [](double x) { return std::exp(x); }, 1.5},
      {VectorFunction::kSigmoid, "sigmoid", &Sigmoid, 3.0},
      {VectorFunction::kTanh, "tanh", [](double x) { return std::tanh(x); }, 2.0},
  };
  return functions;
}

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

// Checks every function at every level on `x`, reporting the worst error of each.
void ExpectAccurate(const std::vector<float>& x) {
  std::vector<float> y(x.size());
  std::vector<double> exact(x.size());
  for (const Function& fn : Functions()) {
    for (size_t i = 0; i < x.size(); ++i) exact[i] = fn.exact(static_cast<double>(x[i]));
    for (SimdLevel level : Levels()) {
      VectorSpan(fn.f, x.data(), y.data(), static_cast<int64_t>(x.size()), level);
      double worst = 0;
      float at = 0;
      for (size_t i = 0; i < x.size(); ++i) {
        const double u = UlpError(y[i], exact[i]);
        if (!(u <= worst)) worst = u, at = x[i];
      }
      EXPECT_LE(worst, fn.max_ulp) << fn.name << " at " << at << " (" << Name(level) << ")";
    }
  }
}

// Every 509th bit pattern of the 2^32: all binades, both signs, denormals, NaNs and infinities.
TEST(VectorMath, SweepOfAllBitPatterns) {
  std::vector<float> x;
  x.reserve((uint64_t{1} << 32) / 509 + 1);
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 509)
    x.push_back(std::bit_cast<float>(static_cast<uint32_t>(bits)));
  ExpectAccurate(x);
}

// Every float around erf's switch at ±1 and tanh's at ±0.625, the smallest denormals, erfc's
// descent into the denormals, and exp's and sigmoid's ends of the float range.
TEST(VectorMath, DenseWhereFormulasSwitchAndInTheTails) {
  std::vector<float> x;
  auto both_signs = [&](float lo, float hi) {
    for (float v = lo; v <= hi; v = std::nextafter(v, INFINITY)) {
      x.push_back(v);
      x.push_back(-v);
    }
  };
  both_signs(0.9375f, 1.0625f);
  both_signs(0.6f, 0.65f);
  for (uint32_t bits = 1; bits < (1u << 16); ++bits) {
    x.push_back(std::bit_cast<float>(bits));
    x.push_back(-std::bit_cast<float>(bits));
  }
  for (float v = 9.0f; v <= 10.25f; v = std::nextafter(v, 11.0f)) x.push_back(v);
  for (float v = 3.8f; v <= 4.0f; v = std::nextafter(v, 5.0f)) x.push_back(-v);
  both_signs(86.0f, 89.0f);
  both_signs(100.0f, 105.0f);
  ExpectAccurate(x);
}

// Swish is x times the same sigmoid, rounded once more: bit for bit what Mul(x, Sigmoid(x))
// gives (the remapper replaces one by the other), at every level, over a sweep of every 4099th
// float and the special values.
TEST(VectorMath, SwishIsXTimesSigmoidBitForBit) {
  std::vector<float> x = {0.0f, -0.0f, kInf, -kInf, std::nanf("")};
  for (uint64_t bits = 0; bits <= 0xffffffffu; bits += 4099)
    x.push_back(std::bit_cast<float>(static_cast<uint32_t>(bits)));
  const int64_t n = static_cast<int64_t>(x.size());
  for (SimdLevel level : Levels()) {
    SCOPED_TRACE(Name(level));
    std::vector<float> sigmoid(x.size()), swish(x.size());
    VectorSpan(VectorFunction::kSigmoid, x.data(), sigmoid.data(), n, level);
    VectorSpan(VectorFunction::kSwish, x.data(), swish.data(), n, level);
    int64_t differ = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const float want = x[i] * sigmoid[i];
      if (std::isnan(want) ? !std::isnan(swish[i])
                           : std::bit_cast<uint32_t>(want) != std::bit_cast<uint32_t>(swish[i])) {
        if (differ++ < 5) ADD_FAILURE() << "at " << x[i] << ": " << swish[i] << " != " << want;
      }
    }
    EXPECT_EQ(differ, 0);
  }
}

TEST(VectorMath, SpecialValues) {
  const std::vector<float> x = {0.0f, -0.0f, kInf, -kInf, std::nanf(""), 20.0f, -20.0f};
  struct Expected {
    VectorFunction f;
    std::vector<float> y;  // at each x; NaN where NaN
  };
  const float nan = std::nanf("");
  const std::vector<Expected> expected = {
      {VectorFunction::kErf, {0.0f, -0.0f, 1.0f, -1.0f, nan, 1.0f, -1.0f}},
      {VectorFunction::kErfc, {1.0f, 1.0f, 0.0f, 2.0f, nan, 0.0f, 2.0f}},
      {VectorFunction::kExp, {1.0f, 1.0f, kInf, 0.0f, nan, 485165195.4f, 2.0611536e-09f}},
      {VectorFunction::kSigmoid, {0.5f, 0.5f, 1.0f, 0.0f, nan, 1.0f, 2.0611537e-09f}},
      {VectorFunction::kTanh, {0.0f, -0.0f, 1.0f, -1.0f, nan, 1.0f, -1.0f}},
  };
  for (SimdLevel level : Levels()) {
    for (const Expected& e : expected) {
      std::vector<float> y(x.size());
      VectorSpan(e.f, x.data(), y.data(), static_cast<int64_t>(x.size()), level);
      for (size_t i = 0; i < x.size(); ++i) {
        SCOPED_TRACE(testing::Message() << Name(level) << " function " << static_cast<int>(e.f)
                                        << " at " << x[i]);
        if (std::isnan(e.y[i])) {
          EXPECT_TRUE(std::isnan(y[i])) << y[i];
        } else if (i == 5 || i == 6) {  // finite values: within the function's bound
          EXPECT_NEAR(y[i], e.y[i], std::fabs(e.y[i]) * 1e-6);
        } else {  // zeros keep their sign
          EXPECT_EQ(std::bit_cast<uint32_t>(y[i]), std::bit_cast<uint32_t>(e.y[i])) << y[i];
        }
      }
    }
  }
}

// In place (as the kernels run when they may reuse the input), at lengths that end inside a
// vector and inside a tile, gives what a separate output gets.
TEST(VectorMath, InPlaceAndRaggedLengthsMatch) {
  for (const Function& fn : Functions()) {
    for (int64_t n : {1, 7, 17, 255, 256, 257, 1000}) {
      std::vector<float> x(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i)
        x[static_cast<size_t>(i)] = -6.0f + 0.0123f * static_cast<float>(i);
      std::vector<float> apart(x.size()), in_place = x;
      VectorSpan(fn.f, x.data(), apart.data(), n);
      VectorSpan(fn.f, in_place.data(), in_place.data(), n);
      EXPECT_EQ(apart, in_place) << fn.name << " " << n;
      for (size_t i = 0; i < x.size(); ++i)
        EXPECT_LE(UlpError(apart[i], fn.exact(static_cast<double>(x[i]))), fn.max_ulp)
            << fn.name << " at " << x[i];
    }
  }
}

}  // namespace
}  // namespace cfx::cpu
