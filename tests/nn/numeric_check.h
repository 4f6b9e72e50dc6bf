// Reference-side helpers of the ops-nn tests: seeded random inputs, tensors as vectors of
// doubles, and numeric gradients (central finite differences) of references written in double.
#ifndef CONFLUX_TESTS_NN_NUMERIC_CHECK_H_
#define CONFLUX_TESTS_NN_NUMERIC_CHECK_H_

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "kernel_test_util.h"

namespace cfx::test {

// n values drawn uniformly from [lo, hi] by a generator seeded with `seed`.
inline std::vector<double> RandomValues(int64_t n, double lo, double hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) x = u(rng);
  return v;
}

// The values as T (rounded), and back: what the kernel sees, exactly.
template <typename T>
std::vector<double> RoundTo(const std::vector<double>& v) {
  std::vector<double> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = static_cast<double>(static_cast<T>(v[i]));
  return out;
}

template <typename T>
Tensor TensorOf(const TensorShape& shape, const std::vector<double>& v) {
  return MakeTensor<T>(shape, std::vector<T>(v.begin(), v.end()));
}

template <typename T>
std::vector<double> DoublesOf(const Tensor& t) {
  std::vector<T> v = Values<T>(t);
  return std::vector<double>(v.begin(), v.end());
}

// d f / d x_i at x by central differences, with step h * max(1, |x_i|).
inline std::vector<double> NumericGradient(
    const std::function<double(const std::vector<double>&)>& f, std::vector<double> x,
    double h = 1e-6) {
  std::vector<double> g(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double x0 = x[i], step = h * std::max(1.0, std::fabs(x0));
    x[i] = x0 + step;
    const double up = f(x);
    x[i] = x0 - step;
    const double down = f(x);
    x[i] = x0;
    g[i] = (up - down) / (2 * step);
  }
  return g;
}

// Each actual[i] within atol + rtol * |expected[i]|; `what` names the comparison.
inline void ExpectAllNear(const std::vector<double>& expected, const std::vector<double>& actual,
                          double atol, double rtol, const std::string& what) {
  ASSERT_EQ(expected.size(), actual.size()) << what;
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_NEAR(actual[i], expected[i], atol + rtol * std::fabs(expected[i]))
        << what << ", element " << i;
}

}  // namespace cfx::test

#endif  // CONFLUX_TESTS_NN_NUMERIC_CHECK_H_
