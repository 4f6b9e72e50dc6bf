// Broadcasting element-wise kernels on CPU through the kernel harness: binary arithmetic,
// comparisons, logical ops, Select and SelectV2, each against a reference computed here with a
// plain (uncollapsed) NumPy broadcast; AddN against a sum in TensorFlow's order; and their errors
// on bad input.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernel_test_util.h"

namespace cfx {
namespace {

// ---- Reference broadcasting and test data -------------------------------------------------

std::vector<int64_t> ReferenceBroadcastShape(const std::vector<TensorShape>& shapes) {
  size_t rank = 0;
  for (const TensorShape& s : shapes) rank = std::max(rank, static_cast<size_t>(s.rank()));
  std::vector<int64_t> out(rank, 1);
  for (const TensorShape& s : shapes) {
    for (int i = 0; i < s.rank(); ++i) {
      int64_t& o = out[rank - s.rank() + i];
      if (o == 1) o = s.dim(i);
    }
  }
  return out;
}

// The flat index into an input of shape `in` that output element `i` (of shape `out`) reads.
int64_t ReferenceSourceIndex(const std::vector<int64_t>& out, const TensorShape& in, int64_t i) {
  int64_t source = 0, stride = 1;
  for (int d = static_cast<int>(out.size()) - 1, di = in.rank() - 1; d >= 0; --d, --di) {
    const int64_t coordinate = i % out[d];
    i /= out[d];
    if (di < 0) continue;
    if (in.dim(di) != 1) source += coordinate * stride;
    stride *= in.dim(di);
  }
  return source;
}

// out[i] = f(inputs[k][source index]...) over the broadcast of the inputs' shapes.
template <typename Out, typename... In, typename F>
Tensor ReferenceBroadcast(F f, const std::vector<Tensor>& inputs) {
  std::vector<TensorShape> shapes;
  for (const Tensor& t : inputs) shapes.push_back(t.shape());
  const std::vector<int64_t> out_shape = ReferenceBroadcastShape(shapes);
  Tensor out(test::DataTypeOf<Out>(), TensorShape(out_shape));
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    size_t k = 0;
    auto read = [&]<typename T>(T*) {
      const Tensor& t = inputs[k++];
      return t.data<T>()[ReferenceSourceIndex(out_shape, t.shape(), i)];
    };
    // Braced init evaluates the reads left to right.
    std::tuple<In...> args{read(static_cast<In*>(nullptr))...};
    out.data<Out>()[i] = std::apply(f, args);
  }
  return out;
}

// Deterministic values in [lo, hi] (rounded for integers).
template <typename T>
Tensor Sample(const TensorShape& shape, double lo, double hi, uint32_t seed) {
  Tensor t(test::DataTypeOf<T>(), shape);
  uint32_t state = seed * 2654435761u + 12345u;
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    state = state * 1664525u + 1013904223u;
    const double u = (state >> 8) / double(1 << 24);
    const double v = lo + u * (hi - lo);
    if constexpr (std::is_same_v<T, bool>) {
      t.data<T>()[i] = u < 0.5;
    } else if constexpr (std::is_integral_v<T>) {
      t.data<T>()[i] = static_cast<T>(std::llround(v));
    } else {
      t.data<T>()[i] = static_cast<T>(v);
    }
  }
  return t;
}

Tensor DeepCopy(const Tensor& t) {
  Tensor c(t.dtype(), t.shape());
  if (t.TotalBytes() > 0) std::memcpy(c.raw_data(), t.raw_data(), t.TotalBytes());
  return c;
}

NodeDef TypedNode(const std::string& op, int num_inputs, DataType t) {
  return test::MakeNode(op, num_inputs, {{"T", AttrValue::Type(t)}});
}

// Runs `node` and checks its one output against `expected`, and that the inputs are unchanged
// (a kernel may reuse only buffers it holds the last reference to).
void ExpectRunGives(const NodeDef& node, const std::vector<Tensor>& inputs,
                    const Tensor& expected) {
  std::vector<Tensor> before;
  for (const Tensor& t : inputs) before.push_back(DeepCopy(t));
  Tensor out = test::RunNodeOk(node, inputs);
  if (expected.dtype() == DT_FLOAT || expected.dtype() == DT_DOUBLE) {
    test::ExpectTensorNear(expected, out, 1e-6, 1e-6);
  } else {
    test::ExpectTensorEqual(expected, out);
  }
  for (size_t i = 0; i < inputs.size(); ++i) test::ExpectTensorEqual(before[i], inputs[i]);
}

struct ShapePair {
  TensorShape x, y;
};
// Same shapes, a trailing vector, both sides stretching, scalars, empty tensors, rank 5, and
// outputs large enough (> 32768 elements) that the intra-op pool splits them mid-row. Same shapes
// and a single element of no higher rank than the other operand run as one flat loop; a single
// element of higher rank ([1,1,1] with [2,1]) widens the output and needs the broadcast plan.
const std::vector<ShapePair> kBroadcastCases = {
    {{2, 3}, {2, 3}},
    {{2, 3}, {3}},
    {{3}, {2, 3}},
    {{2, 1}, {1, 3}},
    {{}, {4}},
    {{4}, {}},
    {{}, {}},
    {{2, 0}, {2, 1}},
    {{0}, {}},
    {{0, 3}, {1, 3}},
    {{3, 1, 4}, {3, 2, 4}},
    {{2, 1, 3, 1, 2}, {1, 4, 1, 5, 1}},
    {{2, 3, 2, 2, 3}, {2, 3, 2, 2, 3}},
    {{257, 129}, {257, 1}},
    {{1, 129}, {257, 129}},
    {{40000}, {}},
    {{1}, {2, 3}},
    {{2, 3}, {1, 1}},
    {{1, 1}, {1, 1, 1}},
    {{1, 1, 1}, {1}},
    {{1, 1, 1}, {2, 1}},
    {{0, 2}, {1}},
    {{1}, {40000}},
};

// ---- Binary arithmetic ----------------------------------------------------------------------

template <typename T>
struct ArithmeticCase {
  const char* op;
  std::function<T(T, T)> reference;
  double x_lo, x_hi, y_lo, y_hi;  // value ranges that keep integer results in range
};

template <typename T>
T ReferencePow(T base, T exponent) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::pow(base, exponent);
  } else {
    T result = 1;
    for (T i = 0; i < exponent; ++i) result *= base;
    return result;
  }
}

template <typename T>
std::vector<ArithmeticCase<T>> ArithmeticCases() {
  std::vector<ArithmeticCase<T>> cases = {
      {"Add", [](T a, T b) { return T(a + b); }, -50, 50, -50, 50},
      {"AddV2", [](T a, T b) { return T(a + b); }, -50, 50, -50, 50},
      {"Sub", [](T a, T b) { return T(a - b); }, -50, 50, -50, 50},
      {"Mul", [](T a, T b) { return T(a * b); }, -50, 50, -50, 50},
      {"Maximum", [](T a, T b) { return std::max(a, b); }, -5, 5, -5, 5},
      {"Minimum", [](T a, T b) { return std::min(a, b); }, -5, 5, -5, 5},
      {"SquaredDifference", [](T a, T b) { return T((a - b) * (a - b)); }, -50, 50, -50, 50},
  };
  if constexpr (std::is_floating_point_v<T>) {
    cases.push_back({"Pow", ReferencePow<T>, 0.1, 3, -2.5, 2.5});
    cases.push_back({"RealDiv", [](T a, T b) { return a / b; }, -50, 50, 0.25, 8});
  } else {
    cases.push_back({"Pow", ReferencePow<T>, -4, 4, 0, 6});
  }
  return cases;
}

template <typename T>
class ElementwiseArithmeticTest : public ::testing::Test {};
using RealTypes = ::testing::Types<float, double, int32_t, int64_t>;
TYPED_TEST_SUITE(ElementwiseArithmeticTest, RealTypes);

TYPED_TEST(ElementwiseArithmeticTest, MatchesReferenceUnderBroadcasting) {
  using T = TypeParam;
  uint32_t seed = 1;
  for (const ArithmeticCase<T>& c : ArithmeticCases<T>()) {
    for (const ShapePair& shapes : kBroadcastCases) {
      SCOPED_TRACE(std::string(c.op) + " " + shapes.x.ToString() + " " + shapes.y.ToString());
      Tensor x = Sample<T>(shapes.x, c.x_lo, c.x_hi, ++seed);
      Tensor y = Sample<T>(shapes.y, c.y_lo, c.y_hi, ++seed);
      ExpectRunGives(TypedNode(c.op, 2, test::DataTypeOf<T>()), {x, y},
                     ReferenceBroadcast<T, T, T>(c.reference, {x, y}));
    }
  }
}

TYPED_TEST(ElementwiseArithmeticTest, IncompatibleShapesAreAnError) {
  using T = TypeParam;
  for (const char* op : {"Add", "Sub", "Mul", "Maximum", "Pow"}) {
    NodeDef n = TypedNode(op, 2, test::DataTypeOf<T>());
    Tensor x = Sample<T>({2, 3}, 1, 3, 1), y = Sample<T>({4}, 1, 3, 2);
    // Shape inference catches it first; the kernel on its own says the same.
    test::ExpectError(test::RunNode(n, {x, y}), Code::kInvalidArgument, "[2,3] and [4]");
    test::ExpectError(test::RunKernelOnly(n, {x, y}), Code::kInvalidArgument,
                      "Incompatible shapes: x [2,3] vs. y [4]");
    test::ExpectError(test::RunKernelOnly(n, {Sample<T>({0}, 1, 3, 1), Sample<T>({2}, 1, 3, 2)}),
                      Code::kInvalidArgument, "Incompatible shapes: x [0] vs. y [2]");
  }
}

TEST(ElementwiseArithmetic, IntegerArithmeticWrapsAround) {
  constexpr int32_t kMax = std::numeric_limits<int32_t>::max();
  constexpr int32_t kMin = std::numeric_limits<int32_t>::min();
  NodeDef add = TypedNode("Add", 2, DT_INT32), mul = TypedNode("Mul", 2, DT_INT32);
  test::ExpectTensorEqual(test::MakeVector<int32_t>({kMin, kMax}),
                          test::RunNodeOk(add, {test::MakeVector<int32_t>({kMax, kMin}),
                                                test::MakeVector<int32_t>({1, -1})}));
  test::ExpectTensorEqual(test::MakeScalar<int32_t>(0),
                          test::RunNodeOk(mul, {test::MakeScalar<int32_t>(1 << 16),
                                                test::MakeScalar<int32_t>(1 << 16)}));
  test::ExpectTensorEqual(
      test::MakeScalar<int64_t>(int64_t{1} << 62),
      test::RunNodeOk(TypedNode("Pow", 2, DT_INT64),
                      {test::MakeScalar<int64_t>(2), test::MakeScalar<int64_t>(62)}));
}

TEST(ElementwiseArithmetic, MaximumAndMinimumPropagateNan) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = test::MakeVector<float>({nan, 1, 2}), y = test::MakeVector<float>({1, nan, 3});
  for (const char* op : {"Maximum", "Minimum"}) {
    Tensor z = test::RunNodeOk(TypedNode(op, 2, DT_FLOAT), {x, y});
    ASSERT_EQ(z.num_elements(), 3);
    EXPECT_TRUE(std::isnan(z.data<float>()[0])) << op;
    EXPECT_TRUE(std::isnan(z.data<float>()[1])) << op;
    EXPECT_EQ(z.data<float>()[2], std::string(op) == "Maximum" ? 3.f : 2.f);
  }
}

TEST(ElementwiseArithmetic, RealDivByZeroFollowsIeee) {
  Tensor z = test::RunNodeOk(TypedNode("RealDiv", 2, DT_DOUBLE),
                             {test::MakeVector<double>({1, -1, 0}), test::MakeScalar<double>(0)});
  EXPECT_EQ(z.data<double>()[0], std::numeric_limits<double>::infinity());
  EXPECT_EQ(z.data<double>()[1], -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(z.data<double>()[2]));
}

TEST(ElementwiseArithmetic, DivTruncatesIntegersAndRejectsZeroDivisors) {
  constexpr int32_t kMin = std::numeric_limits<int32_t>::min();
  // C's truncation toward zero (not Python's floor): -7 / 2 = -3; INT_MIN / -1 wraps.
  test::ExpectTensorEqual(test::MakeVector<int32_t>({3, -3, -3, 3, kMin}),
                          test::RunNodeOk(TypedNode("Div", 2, DT_INT32),
                                          {test::MakeVector<int32_t>({7, -7, 7, -7, kMin}),
                                           test::MakeVector<int32_t>({2, 2, -2, -2, -1})}));
  test::ExpectError(test::RunNode(TypedNode("Div", 2, DT_INT64),
                                  {test::MakeVector<int64_t>({1, 2}), test::MakeVector<int64_t>({1, 0})}),
                    Code::kInvalidArgument, "Integer division by zero");
  for (const char* op : {"FloorDiv", "FloorMod", "TruncateDiv"})
    test::ExpectError(test::RunNode(TypedNode(op, 2, DT_INT32), {test::MakeVector<int32_t>({1, 2}),
                                                                 test::MakeScalar<int32_t>(0)}),
                      Code::kInvalidArgument, "Integer division by zero");
  // Floats divide as RealDiv does, broadcasting.
  test::ExpectTensorNear(test::MakeVector<float>({0.5f, -1.5f}),
                         test::RunNodeOk(TypedNode("Div", 2, DT_FLOAT),
                                         {test::MakeVector<float>({1, -3}), test::MakeScalar(2.0f)}));
}

TEST(ElementwiseArithmetic, IntegerPowRejectsNegativeExponents) {
  for (DataType t : {DT_INT32, DT_INT64}) {
    NodeDef n = TypedNode("Pow", 2, t);
    Tensor x =
        t == DT_INT32 ? test::MakeVector<int32_t>({2, 3}) : test::MakeVector<int64_t>({2, 3});
    Tensor y =
        t == DT_INT32 ? test::MakeVector<int32_t>({1, -1}) : test::MakeVector<int64_t>({1, -1});
    test::ExpectError(test::RunNode(n, {x, y}), Code::kInvalidArgument,
                      "Integers to negative integer powers are not allowed");
  }
  // Negative exponents are fine for floating point.
  test::ExpectTensorNear(
      test::MakeVector<float>({0.5f, 0.25f}),
      test::RunNodeOk(TypedNode("Pow", 2, DT_FLOAT),
                      {test::MakeScalar<float>(2), test::MakeVector<float>({-1, -2})}));
}

TEST(ElementwiseArithmetic, BadInputsAreErrorsNotCrashes) {
  NodeDef add = TypedNode("Add", 2, DT_INT32);
  Tensor i = test::MakeVector<int32_t>({1, 2}), f = test::MakeVector<float>({1, 2});
  test::ExpectError(test::RunNode(add, {i}), Code::kInvalidArgument, "got 1 inputs; expected 2");
  test::ExpectError(test::RunNode(add, {f, i}), Code::kInvalidArgument,
                    "input 0 is float; expected int32");
  // The kernel checks the same when run on its own.
  test::ExpectError(test::RunKernelOnly(add, {i}), Code::kInvalidArgument, "got 1 inputs; expected 2");
  test::ExpectError(test::RunKernelOnly(add, {i, f}), Code::kInvalidArgument,
                    "input 1 is float; expected int32");
  // Types the op allows but no CPU kernel implements, and types the op does not allow.
  test::ExpectError(test::RunNode(TypedNode("RealDiv", 2, DT_INT32), {i, i}), Code::kNotFound,
                    "RealDiv");
  test::ExpectError(test::RunNode(TypedNode("Add", 2, DT_BOOL),
                                  {test::MakeScalar<bool>(true), test::MakeScalar<bool>(true)}),
                    Code::kInvalidArgument, "bool");
}

// ---- Comparisons ----------------------------------------------------------------------------

template <typename T>
class CompareTest : public ::testing::Test {};
TYPED_TEST_SUITE(CompareTest, RealTypes);

TYPED_TEST(CompareTest, MatchesReferenceUnderBroadcasting) {
  using T = TypeParam;
  const std::vector<std::pair<const char*, std::function<bool(T, T)>>> ops = {
      {"Less", [](T a, T b) { return a < b; }},
      {"LessEqual", [](T a, T b) { return a <= b; }},
      {"Greater", [](T a, T b) { return a > b; }},
      {"GreaterEqual", [](T a, T b) { return a >= b; }},
      {"Equal", [](T a, T b) { return a == b; }},
      {"NotEqual", [](T a, T b) { return a != b; }},
  };
  uint32_t seed = 7;
  for (const auto& [op, reference] : ops) {
    for (const ShapePair& shapes : kBroadcastCases) {
      SCOPED_TRACE(std::string(op) + " " + shapes.x.ToString() + " " + shapes.y.ToString());
      // Integers in [-3, 3] so that ties are common.
      Tensor x = Sample<T>(shapes.x, -3, 3, ++seed), y = Sample<T>(shapes.y, -3, 3, ++seed);
      ExpectRunGives(TypedNode(op, 2, test::DataTypeOf<T>()), {x, y},
                     ReferenceBroadcast<bool, T, T>(reference, {x, y}));
    }
  }
}

TEST(CompareEquality, BoolValuesAndNan) {
  Tensor x = test::MakeVector<bool>({true, true, false, false});
  Tensor y = test::MakeTensor<bool>({2, 1}, {true, false});
  ExpectRunGives(TypedNode("Equal", 2, DT_BOOL), {x, y},
                 test::MakeTensor<bool>({2, 4}, {1, 1, 0, 0, 0, 0, 1, 1}));
  ExpectRunGives(TypedNode("NotEqual", 2, DT_BOOL), {x, y},
                 test::MakeTensor<bool>({2, 4}, {0, 0, 1, 1, 1, 1, 0, 0}));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor n = test::MakeVector<float>({nan, 1});
  ExpectRunGives(TypedNode("Equal", 2, DT_FLOAT), {n, n}, test::MakeVector<bool>({false, true}));
  ExpectRunGives(TypedNode("NotEqual", 2, DT_FLOAT), {n, n}, test::MakeVector<bool>({true, false}));
}

TEST(CompareEquality, IncompatibleShapesGiveAScalarWhenAsked) {
  Tensor x = test::MakeVector<int32_t>({1, 2, 3}), y = test::MakeVector<int32_t>({1, 2});
  for (auto [op, result] : {std::pair{"Equal", false}, std::pair{"NotEqual", true}}) {
    NodeDef lenient = test::MakeNode(
        op, 2,
        {{"T", AttrValue::Type(DT_INT32)}, {"incompatible_shape_error", AttrValue::Bool(false)}});
    ExpectRunGives(lenient, {x, y}, test::MakeScalar<bool>(result));
    // Compatible shapes still compare element-wise.
    ExpectRunGives(lenient, {x, test::MakeScalar<int32_t>(2)},
                   test::MakeVector<bool>({result, !result, result}));
    // The default (true) makes it an error, in shape inference and in the kernel.
    NodeDef strict = TypedNode(op, 2, DT_INT32);
    test::ExpectError(test::RunNode(strict, {x, y}), Code::kInvalidArgument, "[3] and [2]");
    test::ExpectError(test::RunKernelOnly(strict, {x, y}), Code::kInvalidArgument,
                      "Incompatible shapes: x [3] vs. y [2]");
  }
}

TEST(CompareOrdering, BadInputsAreErrors) {
  NodeDef less = TypedNode("Less", 2, DT_FLOAT);
  test::ExpectError(test::RunNode(less, {test::MakeScalar<float>(1)}), Code::kInvalidArgument,
                    "expected 2");
  test::ExpectError(test::RunNode(less, {test::MakeScalar<float>(1), test::MakeScalar<int32_t>(1)}),
                    Code::kInvalidArgument, "input 1 is int32; expected float");
  // Ordering is not defined for bool.
  test::ExpectError(test::RunNode(TypedNode("Less", 2, DT_BOOL),
                                  {test::MakeScalar<bool>(true), test::MakeScalar<bool>(false)}),
                    Code::kInvalidArgument, "bool");
}

// ---- Logical ops ----------------------------------------------------------------------------

TEST(LogicalOps, TruthTablesUnderBroadcasting) {
  Tensor x = test::MakeTensor<bool>({2, 1}, {false, true});
  Tensor y = test::MakeVector<bool>({false, true});
  ExpectRunGives(test::MakeNode("LogicalAnd", 2), {x, y},
                 test::MakeTensor<bool>({2, 2}, {0, 0, 0, 1}));
  ExpectRunGives(test::MakeNode("LogicalOr", 2), {x, y},
                 test::MakeTensor<bool>({2, 2}, {0, 1, 1, 1}));
  ExpectRunGives(test::MakeNode("LogicalNot", 1), {y}, test::MakeVector<bool>({true, false}));
  for (const ShapePair& shapes : kBroadcastCases) {
    SCOPED_TRACE(shapes.x.ToString() + " " + shapes.y.ToString());
    Tensor a = Sample<bool>(shapes.x, 0, 1, 3), b = Sample<bool>(shapes.y, 0, 1, 4);
    ExpectRunGives(
        test::MakeNode("LogicalAnd", 2), {a, b},
        ReferenceBroadcast<bool, bool, bool>([](bool p, bool q) { return p && q; }, {a, b}));
    ExpectRunGives(
        test::MakeNode("LogicalOr", 2), {a, b},
        ReferenceBroadcast<bool, bool, bool>([](bool p, bool q) { return p || q; }, {a, b}));
  }
}

TEST(LogicalOps, BadInputsAreErrors) {
  test::ExpectError(test::RunNode(test::MakeNode("LogicalAnd", 2),
                                  {test::MakeVector<bool>({true}), test::MakeVector<int32_t>({1})}),
                    Code::kInvalidArgument, "input 1 is int32; expected bool");
  test::ExpectError(test::RunKernelOnly(test::MakeNode("LogicalNot", 1), {test::MakeScalar<float>(1)}),
                    Code::kInvalidArgument, "input 0 is float; expected bool");
  test::ExpectError(
      test::RunNode(test::MakeNode("LogicalOr", 2), {test::MakeVector<bool>({true, false}),
                                                     test::MakeVector<bool>({true, false, true})}),
      Code::kInvalidArgument, "[2] and [3]");
}

// ---- Select and SelectV2 --------------------------------------------------------------------

template <typename T>
class SelectTest : public ::testing::Test {};
using SelectTypes = ::testing::Types<float, double, int32_t, int64_t, bool>;
TYPED_TEST_SUITE(SelectTest, SelectTypes);

template <typename T>
T Choose(bool c, T t, T e) {
  return c ? t : e;
}

TYPED_TEST(SelectTest, SelectV2BroadcastsAllThree) {
  using T = TypeParam;
  struct Case {
    TensorShape c, t, e;
  };
  const std::vector<Case> cases = {
      {{2, 3}, {2, 3}, {2, 3}},
      {{}, {2, 3}, {2, 3}},
      {{}, {3}, {2, 3}},
      {{2, 1, 1}, {1, 3, 1}, {1, 1, 4}},
      {{3}, {2, 3}, {}},
      {{2, 0}, {2, 1}, {1, 0}},
      {{2, 1, 3, 1, 2}, {1, 4, 1, 5, 1}, {2, 4, 3, 5, 2}},
      {{300, 1}, {1, 200}, {300, 200}},
  };
  uint32_t seed = 11;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.c.ToString() + " " + c.t.ToString() + " " + c.e.ToString());
    Tensor cond = Sample<bool>(c.c, 0, 1, ++seed);
    Tensor t = Sample<T>(c.t, -9, 9, ++seed), e = Sample<T>(c.e, -9, 9, ++seed);
    ExpectRunGives(TypedNode("SelectV2", 3, test::DataTypeOf<T>()), {cond, t, e},
                   ReferenceBroadcast<T, bool, T, T>(Choose<T>, {cond, t, e}));
  }
}

TYPED_TEST(SelectTest, SelectPicksElementsOrRows) {
  using T = TypeParam;
  NodeDef n = TypedNode("Select", 3, test::DataTypeOf<T>());
  for (const TensorShape& shape : {TensorShape{2, 3}, TensorShape{5}, TensorShape{},
                                   TensorShape{0, 2}, TensorShape{2, 2, 3, 2, 2}}) {
    SCOPED_TRACE(shape.ToString());
    Tensor cond = Sample<bool>(shape, 0, 1, 5);
    Tensor t = Sample<T>(shape, -9, 9, 6), e = Sample<T>(shape, -9, 9, 7);
    ExpectRunGives(n, {cond, t, e}, ReferenceBroadcast<T, bool, T, T>(Choose<T>, {cond, t, e}));
    // A scalar condition picks a whole input.
    for (bool pick : {true, false})
      ExpectRunGives(n, {test::MakeScalar<bool>(pick), t, e}, pick ? t : e);
  }
  // A vector condition picks rows: condition [n] acts as [n, 1, 1].
  Tensor rows = test::MakeVector<bool>({true, false, true});
  Tensor t = Sample<T>({3, 2, 2}, -9, 9, 8), e = Sample<T>({3, 2, 2}, -9, 9, 9);
  ExpectRunGives(n, {rows, t, e},
                 ReferenceBroadcast<T, bool, T, T>(
                     Choose<T>, {test::MakeTensor<bool>({3, 1, 1}, {true, false, true}), t, e}));
}

TEST(SelectErrors, SelectRejectsShapesOutsideItsRules) {
  NodeDef n = TypedNode("Select", 3, DT_FLOAT);
  Tensor t = Sample<float>({3, 4}, 0, 1, 1), e = Sample<float>({3, 4}, 0, 1, 2);
  // Vector condition not matching the rows; condition of another rank; t and e differing.
  for (bool kernel_only : {false, true}) {
    auto run = [&](const std::vector<Tensor>& in) {
      return kernel_only ? test::RunKernelOnly(n, in) : test::RunNode(n, in);
    };
    test::ExpectError(run({Sample<bool>({4}, 0, 1, 3), t, e}), Code::kInvalidArgument,
                      "'condition' is a vector of 4 elements");
    test::ExpectError(run({Sample<bool>({3, 1}, 0, 1, 3), t, e}), Code::kInvalidArgument,
                      "'condition' must be a scalar");
    test::ExpectError(run({Sample<bool>({3, 4}, 0, 1, 3), t, Sample<float>({4}, 0, 1, 4)}),
                      Code::kInvalidArgument, "'t' and 'e' must have the same shape");
  }
  // v1 does not broadcast a vector condition against a vector of another length.
  test::ExpectError(test::RunNode(n, {Sample<bool>({2}, 0, 1, 3), Sample<float>({3}, 0, 1, 1),
                                      Sample<float>({3}, 0, 1, 2)}),
                    Code::kInvalidArgument, "");
  test::ExpectError(test::RunNode(n, {test::MakeScalar<float>(1), t, e}), Code::kInvalidArgument,
                    "input 0 is float; expected bool");
  test::ExpectError(test::RunKernelOnly(n, {test::MakeScalar<bool>(true), t}), Code::kInvalidArgument,
                    "got 2 inputs; expected 3");
}

TEST(SelectErrors, SelectV2RejectsShapesThatDoNotBroadcast) {
  NodeDef n = TypedNode("SelectV2", 3, DT_INT64);
  Tensor t = Sample<int64_t>({3, 4}, 0, 9, 1), e = Sample<int64_t>({4}, 0, 9, 2);
  test::ExpectError(test::RunNode(n, {Sample<bool>({2, 1}, 0, 1, 3), t, e}), Code::kInvalidArgument,
                    "[2,1]");
  test::ExpectError(test::RunKernelOnly(n, {Sample<bool>({2, 1}, 0, 1, 3), t, e}), Code::kInvalidArgument,
                    "Incompatible shapes: condition [2,1] vs. t [3,4]");
  test::ExpectError(
      test::RunKernelOnly(n, {Sample<bool>({3, 1}, 0, 1, 3), t, Sample<int64_t>({5}, 0, 9, 2)}),
      Code::kInvalidArgument, "Incompatible shapes: t [3,4] vs. e [5]");
  test::ExpectError(
      test::RunNode(n, {Sample<bool>({3, 1}, 0, 1, 3), t, Sample<int32_t>({4}, 0, 9, 2)}),
      Code::kInvalidArgument, "input 2 is int32; expected int64");
}

// ---- AddN -----------------------------------------------------------------------------------

NodeDef AddNNode(int n, DataType t) {
  return test::MakeNode("AddN", n, {{"N", AttrValue::Int(n)}, {"T", AttrValue::Type(t)}});
}

// inputs[0] + inputs[1] + ... element by element, left to right in T (TensorFlow's order), integers
// wrapping around.
template <typename T>
Tensor ReferenceAddN(const std::vector<Tensor>& inputs) {
  Tensor sum = DeepCopy(inputs[0]);
  for (size_t k = 1; k < inputs.size(); ++k) {
    for (int64_t i = 0; i < sum.num_elements(); ++i) {
      T& acc = sum.data<T>()[i];
      const T x = inputs[k].data<T>()[i];
      if constexpr (std::is_integral_v<T>) {
        using U = std::make_unsigned_t<T>;
        acc = static_cast<T>(static_cast<U>(acc) + static_cast<U>(x));
      } else {
        acc += x;
      }
    }
  }
  return sum;
}

template <typename T>
class AddNTest : public ::testing::Test {};
TYPED_TEST_SUITE(AddNTest, RealTypes);

// One input (passed through), two or three (one pass), and more (an even or odd number left after
// the first pass); shapes from a scalar to one large enough to split over the intra-op threads.
TYPED_TEST(AddNTest, MatchesReferenceForEveryCountAndShape) {
  using T = TypeParam;
  const std::vector<TensorShape> shapes = {{}, {0}, {7}, {2, 0, 3}, {3, 4, 5}, {100003}};
  uint32_t seed = 1;
  for (int n : {1, 2, 3, 4, 5, 8}) {
    for (const TensorShape& shape : shapes) {
      SCOPED_TRACE(std::to_string(n) + " inputs of shape " + shape.ToString());
      std::vector<Tensor> inputs;
      for (int k = 0; k < n; ++k) inputs.push_back(Sample<T>(shape, -50, 50, ++seed));
      ExpectRunGives(AddNNode(n, test::DataTypeOf<T>()), inputs, ReferenceAddN<T>(inputs));
    }
  }
}

TYPED_TEST(AddNTest, OneTensorGivenSeveralTimes) {
  using T = TypeParam;
  const Tensor x = Sample<T>({4, 3}, -50, 50, 7);
  ExpectRunGives(AddNNode(5, test::DataTypeOf<T>()), {x, x, x, x, x},
                 ReferenceAddN<T>({x, x, x, x, x}));
}

TEST(AddN, IntegerSumsWrapAround) {
  constexpr int32_t kMax = std::numeric_limits<int32_t>::max();
  constexpr int32_t kMin = std::numeric_limits<int32_t>::min();
  test::ExpectTensorEqual(
      test::MakeVector<int32_t>({kMin, kMax}),
      test::RunNodeOk(AddNNode(3, DT_INT32),
                      {test::MakeVector<int32_t>({kMax, kMin}), test::MakeVector<int32_t>({0, 0}),
                       test::MakeVector<int32_t>({1, -1})}));
}

TEST(AddN, InputsOfDifferentShapesAreAnErrorNamingBoth) {
  const NodeDef n = AddNNode(3, DT_FLOAT);
  const Tensor a = Sample<float>({2, 2}, 0, 1, 1), b = Sample<float>({2, 3}, 0, 1, 2);
  const std::string expected =
      "node node (op AddN): all inputs must have the same shape, but input 0 has shape [2,2] and "
      "input 2 has shape [2,3]";
  // Shape inference catches it first; the kernel on its own says the same.
  test::ExpectError(test::RunNode(n, {a, a, b}), Code::kInvalidArgument, expected);
  test::ExpectError(test::RunKernelOnly(n, {a, a, b}), Code::kInvalidArgument, expected);
  // A vector and a scalar do not broadcast here.
  test::ExpectError(test::RunKernelOnly(AddNNode(2, DT_FLOAT),
                                        {Sample<float>({1}, 0, 1, 3), Sample<float>({}, 0, 1, 4)}),
                    Code::kInvalidArgument, "input 0 has shape [1] and input 1 has shape []");
}

TEST(AddN, BadInputsAreErrorsNotCrashes) {
  const Tensor f = test::MakeVector<float>({1, 2}), i = test::MakeVector<int32_t>({1, 2});
  test::ExpectError(test::RunNode(AddNNode(2, DT_FLOAT), {f, i}), Code::kInvalidArgument,
                    "input 1 is int32; expected float");
  test::ExpectError(test::RunKernelOnly(AddNNode(2, DT_FLOAT), {f, i}), Code::kInvalidArgument,
                    "input 1 is int32; expected float");
  test::ExpectError(test::RunNode(AddNNode(3, DT_FLOAT), {f, f}), Code::kInvalidArgument,
                    "got 2 inputs; expected 3");
  // A type the op allows but no CPU kernel implements, and one the op does not allow.
  const Tensor s = test::MakeVector<int16_t>({1, 2});
  test::ExpectError(test::RunNode(AddNNode(2, DT_INT16), {s, s}), Code::kNotFound, "AddN");
  const Tensor b = test::MakeScalar<bool>(true);
  test::ExpectError(test::RunNode(AddNNode(2, DT_BOOL), {b, b}), Code::kInvalidArgument,
                    "attr 'T' is bool");
}

}  // namespace
}  // namespace cfx
