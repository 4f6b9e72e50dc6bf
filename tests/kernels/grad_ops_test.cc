// The gradients of element-wise activations on CPU (ReluGrad, SigmoidGrad, TanhGrad, SqrtGrad,
// RsqrtGrad, ReciprocalGrad) through the kernel harness: against TensorFlow's formulas written
// here, against central finite differences of the forward ops' own kernels, and their errors.
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernel_test_util.h"

namespace cfx {
namespace {

using test::MakeNode;
using test::RunKernelOnly;
using test::RunNode;
using test::RunNodeOk;

template <typename T>
AttrValue TypeAttr() {
  return AttrValue::Type(test::DataTypeOf<T>());
}

// A tensor of `shape` with values uniform in [lo, hi].
template <typename T>
Tensor Uniform(const TensorShape& shape, double lo, double hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  Tensor t(test::DataTypeOf<T>(), shape);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<T>()[i] = static_cast<T>(u(rng));
  return t;
}

Tensor Run1(const std::string& op, DataType t, const std::vector<Tensor>& inputs) {
  return RunNodeOk(MakeNode(op, static_cast<int>(inputs.size()), {{"T", AttrValue::Type(t)}}),
                   inputs);
}

// A unary op, its gradient op, the forward inputs' range, and the gradient in terms of y and dy.
struct GradCase {
  const char* forward;
  const char* grad;
  double lo, hi;
  std::function<double(double y, double dy)> formula;
};

const std::vector<GradCase>& Cases() {
  static const std::vector<GradCase> cases = {
      {"Sigmoid", "SigmoidGrad", -6, 6, [](double y, double dy) { return dy * y * (1 - y); }},
      {"Tanh", "TanhGrad", -3, 3, [](double y, double dy) { return dy * (1 - y * y); }},
      {"Sqrt", "SqrtGrad", 0.1, 9, [](double y, double dy) { return 0.5 * dy / y; }},
      {"Rsqrt", "RsqrtGrad", 0.1, 9, [](double y, double dy) { return -0.5 * dy * y * y * y; }},
      {"Reciprocal", "ReciprocalGrad", 0.2, 5, [](double y, double dy) { return -dy * y * y; }},
  };
  return cases;
}

// Scalars, vectors, rank 3, empty, and large enough to run in parallel.
const std::vector<TensorShape> kShapes = {{}, {7}, {2, 3, 4}, {0, 5}, {50000}};

template <typename T>
class UnaryGradTest : public ::testing::Test {};
using FloatTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(UnaryGradTest, FloatTypes);

TYPED_TEST(UnaryGradTest, MatchesTheFormulas) {
  using T = TypeParam;
  const DataType dt = test::DataTypeOf<T>();
  for (const GradCase& c : Cases()) {
    for (const TensorShape& shape : kShapes) {
      SCOPED_TRACE(std::string(c.grad) + " " + shape.ToString());
      Tensor y = Run1(c.forward, dt, {Uniform<T>(shape, c.lo, c.hi, 1)});
      Tensor dy = Uniform<T>(shape, -2, 2, 2);
      Tensor expected(dt, shape);
      for (int64_t i = 0; i < y.num_elements(); ++i)
        expected.data<T>()[i] = static_cast<T>(c.formula(y.data<T>()[i], dy.data<T>()[i]));
      const double tol = std::is_same_v<T, float> ? 1e-5 : 1e-13;
      test::ExpectTensorNear(expected, Run1(c.grad, dt, {y, dy}), tol, tol);
    }
  }
}

// dy * f'(x) for the double op `forward`, with f' from (f(x + h) - f(x - h)) / 2h evaluated by
// the op's own kernel.
Tensor NumericGradient(const std::string& forward, const Tensor& x, const Tensor& dy, double h) {
  Tensor x_plus(DT_DOUBLE, x.shape()), x_minus(DT_DOUBLE, x.shape());
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    x_plus.data<double>()[i] = x.data<double>()[i] + h;
    x_minus.data<double>()[i] = x.data<double>()[i] - h;
  }
  Tensor f_plus = Run1(forward, DT_DOUBLE, {x_plus}), f_minus = Run1(forward, DT_DOUBLE, {x_minus});
  Tensor numeric(DT_DOUBLE, x.shape());
  for (int64_t i = 0; i < x.num_elements(); ++i)
    numeric.data<double>()[i] =
        dy.data<double>()[i] * (f_plus.data<double>()[i] - f_minus.data<double>()[i]) / (2 * h);
  return numeric;
}

TEST(UnaryGrad, MatchesFiniteDifferencesOfTheForwardOp) {
  for (const GradCase& c : Cases()) {
    SCOPED_TRACE(c.grad);
    Tensor x = Uniform<double>({64}, c.lo, c.hi, 3);
    Tensor dy = Uniform<double>({64}, -2, 2, 4);
    Tensor y = Run1(c.forward, DT_DOUBLE, {x});
    test::ExpectTensorNear(NumericGradient(c.forward, x, dy, 1e-5),
                           Run1(c.grad, DT_DOUBLE, {y, dy}), 1e-6, 1e-6);
  }
}

template <typename T>
class ReluGradTest : public ::testing::Test {};
using RealTypes = ::testing::Types<float, double, int32_t, int64_t>;
TYPED_TEST_SUITE(ReluGradTest, RealTypes);

TYPED_TEST(ReluGradTest, PassesTheGradientWhereTheFeatureIsPositive) {
  using T = TypeParam;
  for (const TensorShape& shape : kShapes) {
    SCOPED_TRACE(shape.ToString());
    Tensor gradients(test::DataTypeOf<T>(), shape), features(test::DataTypeOf<T>(), shape);
    Tensor expected(test::DataTypeOf<T>(), shape);
    for (int64_t i = 0; i < gradients.num_elements(); ++i) {
      gradients.data<T>()[i] = static_cast<T>(i % 11) - T(5);
      features.data<T>()[i] = static_cast<T>(i % 7) - T(3);  // negative, zero and positive
      expected.data<T>()[i] = features.data<T>()[i] > 0 ? gradients.data<T>()[i] : T(0);
    }
    Tensor backprops =
        RunNodeOk(MakeNode("ReluGrad", 2, {{"T", TypeAttr<T>()}}), {gradients, features});
    test::ExpectTensorEqual(expected, backprops);
  }
}

// Relu(x + h) - Relu(x - h) over 2h away from 0: 1 for positive x, 0 for negative.
TEST(ReluGrad, MatchesFiniteDifferencesOfRelu) {
  Tensor x = Uniform<double>({100}, -5, 5, 5);
  for (int64_t i = 0; i < x.num_elements(); ++i)
    if (std::abs(x.data<double>()[i]) < 0.01) x.data<double>()[i] = 0.5;
  Tensor dy = Uniform<double>({100}, -2, 2, 6);
  test::ExpectTensorNear(NumericGradient("Relu", x, dy, 1e-3), Run1("ReluGrad", DT_DOUBLE, {dy, x}),
                         1e-9, 1e-9);
}

// TensorFlow multiplies by (features > 0): a NaN gradient stays NaN even where it is cut off.
TEST(ReluGrad, NanGradientsPropagateAsInTensorFlow) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor out =
      Run1("ReluGrad", DT_FLOAT,
           {test::MakeVector<float>({nan, nan, 2}), test::MakeVector<float>({1, -1, nan})});
  EXPECT_TRUE(std::isnan(out.data<float>()[0]));
  EXPECT_TRUE(std::isnan(out.data<float>()[1]));
  EXPECT_EQ(out.data<float>()[2], 0.0f);  // NaN > 0 is false
}

TEST(GradOps, InputsOfDifferentShapesAreErrors) {
  Tensor a = test::MakeVector<float>({1, 2, 3}), b = test::MakeVector<float>({1, 2});
  for (const char* op : {"SigmoidGrad", "TanhGrad", "SqrtGrad", "RsqrtGrad", "ReciprocalGrad"}) {
    SCOPED_TRACE(op);
    NodeDef n = MakeNode(op, 2, {{"T", TypeAttr<float>()}});
    test::ExpectError(RunNode(n, {a, b}), Code::kInvalidArgument, "y has shape [3]");
    test::ExpectError(RunKernelOnly(n, {a, b}), Code::kInvalidArgument,
                      "y has shape [3] and dy has shape [2]; they must be equal");
  }
  NodeDef relu = MakeNode("ReluGrad", 2, {{"T", TypeAttr<float>()}});
  test::ExpectError(RunKernelOnly(relu, {a, b}), Code::kInvalidArgument,
                    "gradients has shape [3] and features has shape [2]");
  // Same element count, other shape: still an error (the shape functions demand one shape).
  test::ExpectError(RunKernelOnly(relu, {test::MakeTensor<float>({2, 2}, {1, 2, 3, 4}),
                                         test::MakeVector<float>({1, 2, 3, 4})}),
                    Code::kInvalidArgument, "gradients has shape [2,2]");
  // A dtype the op's T does not name.
  test::ExpectError(RunKernelOnly(relu, {a, test::MakeVector<double>({1, 2, 3})}),
                    Code::kInvalidArgument, "input 1 is double; expected float");
}

TEST(GradOps, TypesOutsideTheListsAreRejected) {
  Tensor i = test::MakeVector<int32_t>({1, 2});
  EXPECT_FALSE(RunNode(MakeNode("SigmoidGrad", 2, {{"T", TypeAttr<int32_t>()}}), {i, i}).ok());
  Tensor b = test::MakeVector<bool>({true});
  EXPECT_FALSE(RunNode(MakeNode("ReluGrad", 2, {{"T", TypeAttr<bool>()}}), {b, b}).ok());
}

}  // namespace
}  // namespace cfx
