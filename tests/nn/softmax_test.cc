// Softmax and LogSoftmax from the ops-nn plugin: values against a long-double reference,
// numerical stability on large logits, empty inputs, bad ranks and shape inference.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "nn_test_util.h"

namespace cfx {
namespace {

using namespace test;  // NOLINT

NodeDef SoftmaxNode(const std::string& op, DataType t = DT_FLOAT) {
  return MakeNode(op, 1, {{"T", AttrValue::Type(t)}});
}

// exp(x) / sum(exp(x)) per row of the last dimension, straight from the definition (the inputs
// are small enough that nothing overflows in long double).
template <typename T>
std::vector<T> Reference(const std::vector<T>& x, int64_t n, bool log) {
  std::vector<T> y(x.size());
  for (size_t r = 0; r < x.size() / n; ++r) {
    long double sum = 0;
    for (int64_t k = 0; k < n; ++k) sum += std::exp(static_cast<long double>(x[r * n + k]));
    for (int64_t k = 0; k < n; ++k) {
      long double p = std::exp(static_cast<long double>(x[r * n + k])) / sum;
      y[r * n + k] = static_cast<T>(log ? std::log(p) : p);
    }
  }
  return y;
}

template <typename T>
void CheckSoftmax(const std::vector<int64_t>& dims, bool log) {
  SCOPED_TRACE(TensorShape(dims).ToString() + (log ? " LogSoftmax" : " Softmax"));
  std::vector<T> x = Ramp<T>(TensorShape(dims).num_elements(), 5.0);
  Tensor out = RunNodeOk(SoftmaxNode(log ? "LogSoftmax" : "Softmax", DataTypeOf<T>()),
                         {MakeTensor<T>(TensorShape(dims), x)});
  const double tol = std::is_same_v<T, float> ? 1e-6 : 1e-13;
  ExpectTensorNear(MakeTensor<T>(TensorShape(dims), Reference(x, dims.back(), log)), out, tol,
                   tol * 10);
}

TEST(Softmax, MatchesTheDefinitionOverTheLastDimension) {
  for (bool log : {false, true}) {
    CheckSoftmax<float>({7}, log);
    CheckSoftmax<float>({2, 3, 5}, log);
    CheckSoftmax<double>({4, 6}, log);
    CheckSoftmax<float>({3, 1}, log);      // one class: softmax 1, log-softmax 0
    CheckSoftmax<float>({64, 1000}, log);  // rows spread over threads
    CheckSoftmax<double>({129, 3}, log);
  }
}

TEST(Softmax, HandWorkedExample) {
  // softmax([0, ln 3]) = [1/4, 3/4].
  Tensor x = MakeVector<double>({0, std::log(3.0)});
  ExpectTensorNear(MakeVector<double>({0.25, 0.75}),
                   RunNodeOk(SoftmaxNode("Softmax", DT_DOUBLE), {x}), 1e-15);
  ExpectTensorNear(MakeVector<double>({std::log(0.25), std::log(0.75)}),
                   RunNodeOk(SoftmaxNode("LogSoftmax", DT_DOUBLE), {x}), 1e-15);
}

// Float softmax's vectorized exponential: relative accuracy down to where e^x leaves the normal
// floats (shifted logits >= -87), exact zeros for -inf and below that, NaN rows stay NaN.
TEST(Softmax, FloatExponentialsAcrossTheRange) {
  // The largest logit is 0, so each is its own shifted logit; the smallest is just above -87.
  const std::vector<float> x = {0.0f, -1.5f, -10.25f, -40.5f, -80.75f, -86.9f, -0.001f};
  const Tensor out = RunNodeOk(SoftmaxNode("Softmax"), {MakeVector<float>(x)});
  const std::vector<float> want = Reference(x, static_cast<int64_t>(x.size()), false);
  for (size_t k = 0; k < x.size(); ++k)
    EXPECT_NEAR(out.data<float>()[k], want[k], 1e-6 * want[k]) << "logit " << x[k];
  const float inf = std::numeric_limits<float>::infinity();
  ExpectTensorNear(MakeVector<float>({1.0f, 0.0f, 0.0f}),
                   RunNodeOk(SoftmaxNode("Softmax"), {MakeVector<float>({0.0f, -inf, -100.0f})}),
                   0, 0);
  const Tensor nan_row = RunNodeOk(
      SoftmaxNode("Softmax"),
      {MakeVector<float>({1.0f, std::numeric_limits<float>::quiet_NaN(), 2.0f})});
  for (int k = 0; k < 3; ++k) EXPECT_TRUE(std::isnan(nan_row.data<float>()[k])) << k;
}

TEST(Softmax, LargeLogitsDoNotOverflow) {
  // Softmax is invariant under a shift; exp(1000) overflows float and double.
  std::vector<float> small = {0, 1, 2, -1}, big, very_negative;
  for (float v : small) big.push_back(v + 1000);
  for (float v : small) very_negative.push_back(v - 1000);
  Tensor want = MakeVector<float>(Reference(small, 4, false));
  ExpectTensorNear(want, RunNodeOk(SoftmaxNode("Softmax"), {MakeVector<float>(big)}), 1e-6);
  ExpectTensorNear(want, RunNodeOk(SoftmaxNode("Softmax"), {MakeVector<float>(very_negative)}),
                   1e-6);
  Tensor want_log = MakeVector<float>(Reference(small, 4, true));
  ExpectTensorNear(want_log, RunNodeOk(SoftmaxNode("LogSoftmax"), {MakeVector<float>(big)}), 1e-5);
  // log-softmax([0, -200]) = [-log(1 + e^-200), -200 - log(1 + e^-200)]: finite although
  // softmax's second entry underflows to 0.
  Tensor out = RunNodeOk(SoftmaxNode("LogSoftmax"), {MakeVector<float>({0, -200})});
  ExpectTensorNear(MakeVector<float>({0, -200}), out, 1e-5);
}

TEST(Softmax, EmptyInputsGiveEmptyResults) {
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    for (const TensorShape& s : {TensorShape({0, 5}), TensorShape({3, 0}), TensorShape({0})}) {
      Tensor out = RunNodeOk(SoftmaxNode(op), {Tensor(DT_FLOAT, s)});
      EXPECT_EQ(out.shape(), s) << op << " " << s.ToString();
    }
  }
}

TEST(Softmax, ScalarLogitsAreAnError) {
  for (const char* op : {"Softmax", "LogSoftmax"})
    for (auto run : {&RunNode, &RunKernelOnly})
      ExpectError(run(SoftmaxNode(op), {MakeScalar<float>(1)}, "CPU:0"), Code::kInvalidArgument,
                  "logits must have rank >= 1");
}

TEST(Softmax, IntegerLogitsAreRefused) {
  EXPECT_FALSE(RunNode(SoftmaxNode("Softmax", DT_INT32), {MakeVector<int32_t>({1, 2})}).ok());
}

TEST(SoftmaxShapes, OutputIsTheLogitsShape) {
  using P = PartialTensorShape;
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    auto out = InferShapes(SoftmaxNode(op), {P({-1, 7})});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0], P({-1, 7}));
    out = InferShapes(SoftmaxNode(op), {P()});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_TRUE((*out)[0].unknown_rank());
    EXPECT_EQ(InferShapes(SoftmaxNode(op), {P(std::vector<int64_t>{})}).status().code(),
              Code::kInvalidArgument);
  }
}

}  // namespace
}  // namespace cfx
