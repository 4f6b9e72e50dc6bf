// Relu6, Elu, Selu, Softplus and their gradient ops from the ops-nn plugin: values against
// double-precision references, gradients against finite differences of those references,
// Softplus at extreme inputs, empty and odd shapes, shape errors and shape inference.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "nn_test_util.h"
#include "numeric_check.h"

namespace cfx {
namespace {

using namespace test;  // NOLINT

constexpr double kSeluScale = 1.0507009873554804934193349852946;
constexpr double kSeluAlpha = 1.6732632423543772848170429916717;

struct Activation {
  const char* op;
  const char* grad_op;
  bool grad_takes_outputs;  // EluGrad and SeluGrad take the forward op's outputs
  std::function<double(double)> f;
  std::vector<double> kinks;  // where f' jumps: finite differences stay away from them
};

const std::vector<Activation>& Activations() {
  static const std::vector<Activation> all = {
      {"Relu6",
       "Relu6Grad",
       false,
       [](double x) { return std::min(std::max(x, 0.0), 6.0); },
       {0, 6}},
      {"Elu", "EluGrad", true, [](double x) { return x < 0 ? std::expm1(x) : x; }, {0}},
      {"Selu",
       "SeluGrad",
       true,
       [](double x) { return kSeluScale * (x < 0 ? kSeluAlpha * std::expm1(x) : x); },
       {0}},
      // log(1 + e^x), written so that neither branch overflows.
      {"Softplus",
       "SoftplusGrad",
       false,
       [](double x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); },
       {}},
      // The default alpha, 0.2 as a float attr (the kernels scale by the float's value).
      {"LeakyRelu",
       "LeakyReluGrad",
       false,
       [](double x) { return x > 0 ? x : static_cast<double>(0.2f) * x; },
       {0}},
  };
  return all;
}

NodeDef Node(const std::string& op, DataType t) {
  return MakeNode(op, op.ends_with("Grad") ? 2 : 1, {{"T", AttrValue::Type(t)}});
}

const std::vector<TensorShape>& Shapes() {
  static const std::vector<TensorShape> shapes = {
      TensorShape(),       TensorShape({0}),       TensorShape({1}),     TensorShape({7}),
      TensorShape({3, 5}), TensorShape({2, 0, 3}), TensorShape({33, 31})};  // spread over threads
  return shapes;
}

template <typename T>
void CheckForward(const Activation& a) {
  const double tol = std::is_same_v<T, float> ? 1e-6 : 1e-14;
  for (const TensorShape& s : Shapes()) {
    SCOPED_TRACE(std::string(a.op) + " " + s.ToString());
    std::vector<double> x = RoundTo<T>(RandomValues(s.num_elements(), -8, 8, 1));
    std::vector<double> want(x.size());
    for (size_t i = 0; i < x.size(); ++i) want[i] = a.f(x[i]);
    Tensor out = RunNodeOk(Node(a.op, DataTypeOf<T>()), {TensorOf<T>(s, x)});
    ASSERT_EQ(out.shape(), s);
    ExpectAllNear(want, DoublesOf<T>(out), tol, tol, "values");
  }
}

TEST(Activations, MatchDoublePrecisionReferences) {
  for (const Activation& a : Activations()) {
    CheckForward<float>(a);
    CheckForward<double>(a);
  }
}

// The gradient op against gradients * f'(x), f' by central differences of the reference.
template <typename T>
void CheckGradient(const Activation& a) {
  const double atol = std::is_same_v<T, float> ? 2e-6 : 1e-8;
  const double rtol = std::is_same_v<T, float> ? 1e-4 : 1e-7;
  for (const TensorShape& s : Shapes()) {
    SCOPED_TRACE(std::string(a.grad_op) + " " + s.ToString());
    std::vector<double> x = RandomValues(s.num_elements(), -8, 8, 2);
    for (double& v : x)
      for (double k : a.kinks)
        if (std::fabs(v - k) < 0.05) v = k + 0.05;
    x = RoundTo<T>(x);
    const std::vector<double> g = RoundTo<T>(RandomValues(s.num_elements(), -3, 3, 3));
    std::vector<double> second(x.size()), want(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      second[i] = a.grad_takes_outputs ? static_cast<double>(static_cast<T>(a.f(x[i]))) : x[i];
      const double h = 1e-6;
      want[i] = g[i] * (a.f(x[i] + h) - a.f(x[i] - h)) / (2 * h);
    }
    Tensor out =
        RunNodeOk(Node(a.grad_op, DataTypeOf<T>()), {TensorOf<T>(s, g), TensorOf<T>(s, second)});
    ASSERT_EQ(out.shape(), s);
    ExpectAllNear(want, DoublesOf<T>(out), atol, rtol, "backprops");
  }
}

TEST(ActivationGrads, MatchFiniteDifferencesOfTheForwardReference) {
  for (const Activation& a : Activations()) {
    CheckGradient<float>(a);
    CheckGradient<double>(a);
  }
}

TEST(LeakyRelu, AlphaAttrSetsTheSlopeBelowZero) {
  const AttrValue half = AttrValue::Float(0.5f);
  NodeDef fwd = MakeNode("LeakyRelu", 1, {{"T", AttrValue::Type(DT_FLOAT)}, {"alpha", half}});
  NodeDef grad = MakeNode("LeakyReluGrad", 2, {{"T", AttrValue::Type(DT_FLOAT)}, {"alpha", half}});
  const Tensor x = MakeVector<float>({-2, 0, 3});
  ExpectTensorEqual(MakeVector<float>({-1, 0, 3}), RunNodeOk(fwd, {x}));
  // At 0 the slope is alpha's (TensorFlow selects on features > 0).
  ExpectTensorEqual(MakeVector<float>({2, 2, 4}),
                    RunNodeOk(grad, {MakeVector<float>({4, 4, 4}), x}));
}

TEST(Relu6, HandWorkedExampleIncludingTheBoundaries) {
  Tensor x = MakeVector<float>({-1, 0, 3, 6, 7});
  ExpectTensorEqual(MakeVector<float>({0, 0, 3, 6, 6}), RunNodeOk(Node("Relu6", DT_FLOAT), {x}));
  // The gradient passes only strictly inside (0, 6).
  Tensor g = MakeVector<float>({10, 20, 30, 40, 50});
  ExpectTensorEqual(MakeVector<float>({0, 0, 30, 0, 0}),
                    RunNodeOk(Node("Relu6Grad", DT_FLOAT), {g, x}));
  // Integer types too.
  ExpectTensorEqual(MakeVector<int32_t>({0, 2, 6}),
                    RunNodeOk(Node("Relu6", DT_INT32), {MakeVector<int32_t>({-5, 2, 9})}));
  ExpectTensorEqual(MakeVector<int64_t>({0, 7, 0}),
                    RunNodeOk(Node("Relu6Grad", DT_INT64),
                              {MakeVector<int64_t>({4, 7, 9}), MakeVector<int64_t>({-5, 2, 9})}));
}

TEST(Relu6, KeepsNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor out = RunNodeOk(Node("Relu6", DT_FLOAT), {MakeVector<float>({nan, 1})});
  EXPECT_TRUE(std::isnan(out.data<float>()[0]));
  EXPECT_EQ(out.data<float>()[1], 1.0f);
}

TEST(EluGrad, UsesTheForwardOutputs) {
  // For y = elu(x) < 0, elu'(x) = e^x = y + 1: outputs -0.5 give gradient * 0.5.
  Tensor out = RunNodeOk(Node("EluGrad", DT_DOUBLE),
                         {MakeVector<double>({4, 4}), MakeVector<double>({-0.5, 2})});
  ExpectTensorEqual(MakeVector<double>({2, 4}), out);
  // selu'(x) = y + scale * alpha for y < 0, scale otherwise.
  out = RunNodeOk(Node("SeluGrad", DT_DOUBLE),
                  {MakeVector<double>({2, 2}), MakeVector<double>({-0.5, 2})});
  ExpectTensorNear(MakeVector<double>({2 * (-0.5 + kSeluScale * kSeluAlpha), 2 * kSeluScale}), out,
                   1e-15);
}

TEST(Softplus, IsFiniteAndAccurateAtExtremes) {
  // softplus(x) -> x for large x, e^x for very negative x; exp(x) alone overflows at 89 (float).
  for (double x : {-1000.0, -100.0, -20.0, -1e-3, 0.0, 1e-3, 20.0, 100.0, 1000.0}) {
    const double want = x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
    Tensor f = RunNodeOk(Node("Softplus", DT_FLOAT), {MakeScalar<float>(static_cast<float>(x))});
    EXPECT_TRUE(std::isfinite(f.data<float>()[0])) << x;
    EXPECT_NEAR(f.data<float>()[0], want, 1e-6 * std::max(1.0, want) + 1e-45) << x;
    if (x < -50) {
      EXPECT_LE(f.data<float>()[0], 1e-20) << x;
    }
    Tensor d = RunNodeOk(Node("Softplus", DT_DOUBLE), {MakeScalar<double>(x)});
    EXPECT_NEAR(d.data<double>()[0], want, 1e-15 * std::max(1.0, want)) << x;
    if (x > -100 && x < 0) {
      EXPECT_GT(d.data<double>()[0], 0) << "e^x must not round to 0: " << x;
    }
  }
  // The gradient is the logistic function: 0 and 1 at the extremes, never NaN.
  Tensor g = RunNodeOk(Node("SoftplusGrad", DT_FLOAT),
                       {MakeVector<float>({1, 1, 1}), MakeVector<float>({-1000, 0, 1000})});
  ExpectTensorNear(MakeVector<float>({0, 0.5f, 1}), g, 1e-7);
}

TEST(ActivationGrads, MismatchedShapesAreErrors) {
  for (const Activation& a : Activations()) {
    const std::string second = a.grad_takes_outputs ? "outputs" : "features";
    NodeDef node = Node(a.grad_op, DT_FLOAT);
    Tensor g = MakeVector<float>({1, 2, 3});
    Tensor x = MakeTensor<float>(TensorShape({3, 1}), {1, 2, 3});
    for (auto run : {&RunNode, &RunKernelOnly})
      ExpectError(run(node, {g, x}, "CPU:0"), Code::kInvalidArgument,
                  "gradients (shape [3]) and " + second + " (shape [3,1])");
    EXPECT_FALSE(RunNode(node, {g, MakeVector<double>({1, 2, 3})}).ok()) << "mixed dtypes";
  }
}

TEST(Activations, IntegerTypesAreRefusedWhereTensorFlowRefusesThem) {
  for (const char* op : {"Elu", "Selu", "Softplus"})
    EXPECT_FALSE(RunNode(Node(op, DT_INT32), {MakeVector<int32_t>({1})}).ok()) << op;
}

TEST(ActivationShapes, UnaryKeepsTheShapeAndGradsMergeTheirInputs) {
  using P = PartialTensorShape;
  for (const Activation& a : Activations()) {
    auto out = InferShapes(Node(a.op, DT_FLOAT), {P({-1, 3})});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0], P({-1, 3}));
    out = InferShapes(Node(a.grad_op, DT_FLOAT), {P({2, -1}), P({-1, 3})});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0], P({2, 3}));
    out = InferShapes(Node(a.grad_op, DT_FLOAT), {P(), P({4})});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0], P({4}));
    EXPECT_EQ(InferShapes(Node(a.grad_op, DT_FLOAT), {P({2, 3}), P({3, 2})}).status().code(),
              Code::kInvalidArgument);
    EXPECT_EQ(InferShapes(Node(a.grad_op, DT_FLOAT), {P({2, 3}), P({2, 3, 1})}).status().code(),
              Code::kInvalidArgument);
  }
}

TEST(OpsNnPlugin, OwnsTheActivationOps) {
  for (const Activation& a : Activations())
    for (const char* op : {a.op, a.grad_op}) {
      const OpRegistration* reg = TestRuntime().ops().LookUp(op);
      ASSERT_NE(reg, nullptr) << op;
      EXPECT_EQ(reg->registered_by, "ops-nn") << op;
    }
}

}  // namespace
}  // namespace cfx
