// Sum, Mean, Max, Min, Prod, All, Any, ArgMax and ArgMin on CPU: every op and dtype against
// reference loops written here (one element at a time, in double for floats), over shapes and axis
// sets that take every path of the kernels (rows, columns, permuted, segmented, empty); their
// shape functions; and their errors.
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "kernel_test_util.h"

namespace cfx {
namespace {

using Dims = std::vector<int64_t>;

enum class Reducer { kSum, kMean, kMax, kMin, kProd };
constexpr Reducer kReducers[] = {Reducer::kSum, Reducer::kMean, Reducer::kMax, Reducer::kMin,
                                 Reducer::kProd};

const char* OpName(Reducer r) {
  switch (r) {
    case Reducer::kSum:
      return "Sum";
    case Reducer::kMean:
      return "Mean";
    case Reducer::kMax:
      return "Max";
    case Reducer::kMin:
      return "Min";
    case Reducer::kProd:
      return "Prod";
  }
  return "";
}

std::string DimsString(const Dims& d) { return TensorShape(d).ToString(); }

// Random values in [lo, hi]; integers are drawn from the integers in that range.
template <typename T>
Tensor RandomTensor(const Dims& dims, double lo, double hi, unsigned seed) {
  Tensor t(test::DataTypeOf<T>(), TensorShape(dims));
  std::mt19937_64 rng(seed);
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    if constexpr (std::is_floating_point_v<T>) {
      t.data<T>()[i] = static_cast<T>(std::uniform_real_distribution<double>(lo, hi)(rng));
    } else {
      t.data<T>()[i] = static_cast<T>(std::uniform_int_distribution<int64_t>(
          static_cast<int64_t>(lo), static_cast<int64_t>(hi))(rng));
    }
  }
  return t;
}

// Integer sums and products wrap around; floats fold in double.
template <typename T>
using RefAcc = std::conditional_t<std::is_floating_point_v<T>, double, T>;

template <typename T>
RefAcc<T> RefFold(Reducer r, RefAcc<T> acc, T x) {
  using U = std::make_unsigned_t<std::conditional_t<std::is_integral_v<T>, T, int>>;
  switch (r) {
    case Reducer::kSum:
    case Reducer::kMean:
      if constexpr (std::is_integral_v<T>)
        return static_cast<T>(static_cast<U>(acc) + static_cast<U>(x));
      return acc + x;
    case Reducer::kProd:
      if constexpr (std::is_integral_v<T>)
        return static_cast<T>(static_cast<U>(acc) * static_cast<U>(x));
      return acc * x;
    case Reducer::kMax:
    case Reducer::kMin:
      if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(acc) || std::isnan(x)) return std::numeric_limits<double>::quiet_NaN();
      }
      return r == Reducer::kMax ? std::max<RefAcc<T>>(acc, x) : std::min<RefAcc<T>>(acc, x);
  }
  return acc;
}

// TensorFlow's identities: 0, 1, -inf (lowest for integers), +inf (max); Mean of nothing is NaN
// for floats and 0 for integers.
template <typename T>
RefAcc<T> RefIdentity(Reducer r) {
  using L = std::numeric_limits<T>;
  switch (r) {
    case Reducer::kSum:
    case Reducer::kMean:
      return 0;
    case Reducer::kProd:
      return 1;
    case Reducer::kMax:
      return L::has_infinity ? -L::infinity() : L::lowest();
    case Reducer::kMin:
      return L::has_infinity ? L::infinity() : L::max();
  }
  return 0;
}

struct Reference {
  Tensor output;
  std::vector<double> magnitude;  // the sum of |x| folded into each output
};

template <typename T>
Reference ReferenceReduce(Reducer r, const Tensor& in, const Dims& axes, bool keep_dims) {
  const int rank = in.rank();
  std::vector<bool> reduced(rank, false);
  for (int64_t a : axes) reduced[a < 0 ? a + rank : a] = true;
  Dims out_dims;
  for (int i = 0; i < rank; ++i) {
    if (!reduced[i])
      out_dims.push_back(in.dim(i));
    else if (keep_dims)
      out_dims.push_back(1);
  }
  Reference ref{Tensor(test::DataTypeOf<T>(), TensorShape(out_dims)), {}};
  const int64_t outputs = ref.output.num_elements();
  std::vector<RefAcc<T>> acc(outputs, RefIdentity<T>(r));
  std::vector<int64_t> count(outputs, 0);
  ref.magnitude.assign(outputs, 0.0);
  Dims index(rank, 0);
  for (int64_t e = 0; e < in.num_elements(); ++e) {
    int64_t o = 0;
    for (int i = 0; i < rank; ++i)
      if (!reduced[i]) o = o * in.dim(i) + index[i];
    const T x = in.data<T>()[e];
    acc[o] = RefFold<T>(r, acc[o], x);
    ++count[o];
    ref.magnitude[o] += std::fabs(static_cast<double>(x));
    for (int i = rank - 1; i >= 0; --i) {
      if (++index[i] < in.dim(i)) break;
      index[i] = 0;
    }
  }
  for (int64_t o = 0; o < outputs; ++o) {
    RefAcc<T> v = acc[o];
    if (r == Reducer::kMean) {
      if constexpr (std::is_floating_point_v<T>)
        v = v / static_cast<double>(count[o]);
      else
        v = count[o] == 0 ? 0 : static_cast<T>(static_cast<int64_t>(v) / count[o]);
      ref.magnitude[o] /= static_cast<double>(std::max<int64_t>(count[o], 1));
    }
    ref.output.data<T>()[o] = static_cast<T>(v);
  }
  return ref;
}

NodeDef ReduceNode(const char* op, DataType dtype, DataType index_dtype, bool keep_dims) {
  return test::MakeNode(op, 2,
                        {{"T", AttrValue::Type(dtype)},
                         {"Tidx", AttrValue::Type(index_dtype)},
                         {"keep_dims", AttrValue::Bool(keep_dims)}});
}

Tensor AxesTensor(const Dims& axes) {
  std::vector<int32_t> v(axes.begin(), axes.end());
  return test::MakeVector<int32_t>(v);
}

// Max and Min select an element: exact. Sums are compared against the sum of magnitudes (their
// condition), products relatively.
template <typename T>
void ExpectMatches(Reducer r, const Reference& ref, const Tensor& got) {
  ASSERT_EQ(ref.output.dtype(), got.dtype());
  ASSERT_EQ(ref.output.shape(), got.shape())
      << ref.output.shape().ToString() << " vs " << got.shape().ToString();
  if constexpr (!std::is_floating_point_v<T>) {
    test::ExpectTensorEqual(ref.output, got);
  } else {
    const double eps = std::is_same_v<T, float> ? 1e-5 : 1e-12;
    for (int64_t i = 0; i < got.num_elements(); ++i) {
      const double want = ref.output.data<T>()[i], have = got.data<T>()[i];
      if (std::isnan(want) || std::isinf(want) || r == Reducer::kMax || r == Reducer::kMin) {
        if (std::isnan(want))
          EXPECT_TRUE(std::isnan(have)) << "element " << i;
        else
          EXPECT_EQ(want, have) << "element " << i;
        continue;
      }
      const double scale = r == Reducer::kProd ? 10 * std::fabs(want) : ref.magnitude[i];
      EXPECT_NEAR(want, have, eps * scale + eps) << "element " << i;
    }
  }
}

struct Case {
  Dims shape, axes;
};

const std::vector<Case>& ReductionCases() {
  static const std::vector<Case> cases = {
      // Small: every layout the planner distinguishes.
      {{}, {}},
      {{5}, {0}},
      {{5}, {-1}},
      {{5}, {}},
      {{3, 4}, {0}},
      {{3, 4}, {1}},
      {{3, 4}, {0, 1}},
      {{3, 4}, {-1}},
      {{3, 4}, {-2, 1}},
      {{3, 4}, {1, 1}},  // a repeated axis counts once
      {{2, 3, 4}, {0}},
      {{2, 3, 4}, {1}},
      {{2, 3, 4}, {2}},
      {{2, 3, 4}, {0, 2}},
      {{2, 3, 4}, {0, 1}},
      {{2, 3, 4}, {1, 2}},
      {{2, 3, 4}, {0, 1, 2}},
      {{2, 3, 4}, {-1, 0}},
      {{2, 1, 3, 1, 4}, {1}},
      {{2, 1, 3, 1, 4}, {0, 2}},
      {{2, 1, 3, 1, 4}, {1, 3}},
      {{2, 1, 3, 1, 4}, {0, 4}},
      {{2, 1, 3, 1, 4}, {2, 4}},
      {{1, 1}, {0}},
      {{2, 3, 4, 5}, {0, 2}},
      {{2, 3, 4, 5}, {1, 3}},
      {{2, 3, 4, 5}, {0, 3}},
      {{2, 3, 4, 5}, {1, 2}},
      {{3, 2, 2, 3, 2}, {0, 2, 4}},
      // Empty axes, reduced or kept.
      {{0, 3}, {0}},
      {{0, 3}, {1}},
      {{3, 0}, {1}},
      {{3, 0}, {0}},
      {{2, 0, 3}, {1}},
      {{2, 0, 3}, {0, 2}},
      {{0}, {}},
      {{0}, {0}},
      // Large enough for the parallel and segmented paths.
      {{3000, 3}, {0}},
      {{3, 40000}, {1}},
      {{100000}, {0}},
      {{64, 300, 5}, {1}},
      {{40, 50, 60}, {0, 2}},
      {{20000, 20}, {0}},
      {{500, 700}, {1}},
      {{7, 3, 3000}, {0, 2}},
  };
  return cases;
}

template <typename T>
class ReductionTest : public ::testing::Test {};
using ReductionTypes = ::testing::Types<float, double, int32_t, int64_t>;
TYPED_TEST_SUITE(ReductionTest, ReductionTypes);

TYPED_TEST(ReductionTest, MatchesReferenceForEveryOpShapeAndAxisSet) {
  using T = TypeParam;
  unsigned seed = 1;
  for (const Case& c : ReductionCases()) {
    for (Reducer r : kReducers) {
      // Products stay near 1 so that long runs neither overflow nor vanish.
      const Tensor in = r == Reducer::kProd && std::is_floating_point_v<T>
                            ? RandomTensor<T>(c.shape, 0.995, 1.005, ++seed)
                            : RandomTensor<T>(c.shape, -5, 5, ++seed);
      for (bool keep_dims : {false, true}) {
        SCOPED_TRACE(std::string(OpName(r)) + " of " + DimsString(c.shape) + " over " +
                     DimsString(c.axes) + (keep_dims ? " keep_dims" : ""));
        const Reference ref = ReferenceReduce<T>(r, in, c.axes, keep_dims);
        auto out = test::RunNode(ReduceNode(OpName(r), in.dtype(), DT_INT32, keep_dims),
                                 {in, AxesTensor(c.axes)});
        ASSERT_TRUE(out.ok()) << out.status();
        ExpectMatches<T>(r, ref, (*out)[0]);
      }
    }
  }
}

TYPED_TEST(ReductionTest, EmptyReductionsGiveTheIdentity) {
  using T = TypeParam;
  using L = std::numeric_limits<T>;
  const Tensor in(test::DataTypeOf<T>(), TensorShape({0, 2}));
  auto reduce = [&](const char* op) {
    return test::RunNodeOk(ReduceNode(op, in.dtype(), DT_INT32, false), {in, AxesTensor({0})});
  };
  const T lowest = L::has_infinity ? -L::infinity() : L::lowest();
  const T highest = L::has_infinity ? L::infinity() : L::max();
  test::ExpectTensorEqual(test::MakeVector<T>({0, 0}), reduce("Sum"));
  test::ExpectTensorEqual(test::MakeVector<T>({1, 1}), reduce("Prod"));
  test::ExpectTensorEqual(test::MakeVector<T>({lowest, lowest}), reduce("Max"));
  test::ExpectTensorEqual(test::MakeVector<T>({highest, highest}), reduce("Min"));
  const T mean_of_nothing = L::has_quiet_NaN ? L::quiet_NaN() : T(0);
  test::ExpectTensorEqual(test::MakeVector<T>({mean_of_nothing, mean_of_nothing}), reduce("Mean"));
}

TYPED_TEST(ReductionTest, AcceptsInt64AndScalarAxes) {
  using T = TypeParam;
  const Tensor in = test::MakeTensor<T>({2, 3}, {1, 2, 3, 4, 5, 6});
  NodeDef node = ReduceNode("Sum", in.dtype(), DT_INT64, false);
  test::ExpectTensorEqual(test::MakeVector<T>({6, 15}),
                          test::RunNodeOk(node, {in, test::MakeVector<int64_t>({-1})}));
  node = ReduceNode("Max", in.dtype(), DT_INT32, true);
  test::ExpectTensorEqual(test::MakeTensor<T>({1, 3}, {4, 5, 6}),
                          test::RunNodeOk(node, {in, test::MakeScalar<int32_t>(0)}));
}

TEST(ReductionValues, NaNPropagatesThroughMaxMinAndSum) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor in = test::MakeVector<float>({1, nan, 3});
  for (const char* op : {"Max", "Min", "Sum", "Mean", "Prod"}) {
    Tensor out = test::RunNodeOk(ReduceNode(op, DT_FLOAT, DT_INT32, false), {in, AxesTensor({0})});
    EXPECT_TRUE(std::isnan(out.data<float>()[0])) << op;
  }
}

TEST(ReductionValues, IntegerSumsWrapAround) {
  const int32_t big = std::numeric_limits<int32_t>::max();
  Tensor out = test::RunNodeOk(ReduceNode("Sum", DT_INT32, DT_INT32, false),
                               {test::MakeVector<int32_t>({big, 1}), AxesTensor({0})});
  EXPECT_EQ(out.data<int32_t>()[0], std::numeric_limits<int32_t>::min());
}

TEST(ReductionValues, IntegerMeanTruncatesTowardZero) {
  Tensor out = test::RunNodeOk(ReduceNode("Mean", DT_INT32, DT_INT32, false),
                               {test::MakeTensor<int32_t>({2, 2}, {1, 2, -7, 0}), AxesTensor({1})});
  test::ExpectTensorEqual(test::MakeVector<int32_t>({1, -3}), out);
}

// Float sums of 2^20 values (all positive, so the condition number is 1). Summed in one float
// accumulator the relative error is around 1e-5, and 16 interleaved accumulators still leave
// 1.5e-7 to 3e-7 for runs of 2^17 to 2^20; pairwise it stays near 1e-8.
TEST(ReductionAccuracy, FloatSumsOfAMillionValuesAreAccurate) {
  const Tensor in = RandomTensor<float>({1 << 20}, 0, 1, 7);
  double exact = 0;
  for (int64_t i = 0; i < in.num_elements(); ++i) exact += in.data<float>()[i];
  Tensor sum = test::RunNodeOk(ReduceNode("Sum", DT_FLOAT, DT_INT32, false), {in, AxesTensor({0})});
  EXPECT_LT(std::fabs(sum.data<float>()[0] - exact) / exact, 1e-7);
  Tensor mean =
      test::RunNodeOk(ReduceNode("Mean", DT_FLOAT, DT_INT32, false), {in, AxesTensor({0})});
  const double exact_mean = exact / static_cast<double>(in.num_elements());
  EXPECT_LT(std::fabs(mean.data<float>()[0] - exact_mean) / exact_mean, 1e-7);
  // The same values as 8 runs of 2^17 (enough runs that none is split across threads) ...
  Tensor rows = test::RunNodeOk(ReduceNode("Sum", DT_FLOAT, DT_INT32, false),
                                {*in.Reshaped(TensorShape({8, 1 << 17})), AxesTensor({1})});
  for (int r = 0; r < 8; ++r) {
    double row = 0;
    for (int64_t k = 0; k < (1 << 17); ++k) row += in.data<float>()[r * (1 << 17) + k];
    EXPECT_LT(std::fabs(rows.data<float>()[r] - row) / row, 1e-7) << "row " << r;
  }
  // ... and as 4 columns of 2^18 rows.
  Tensor columns = test::RunNodeOk(ReduceNode("Sum", DT_FLOAT, DT_INT32, false),
                                   {*in.Reshaped(TensorShape({1 << 18, 4})), AxesTensor({0})});
  for (int k = 0; k < 4; ++k) {
    double column = 0;
    for (int64_t r = 0; r < (1 << 18); ++r) column += in.data<float>()[r * 4 + k];
    EXPECT_LT(std::fabs(columns.data<float>()[k] - column) / column, 1e-7) << "column " << k;
  }
}

// ---- Errors: from the shape function (the harness runs it first) and from the kernel itself.

TEST(ReductionErrors, OutOfRangeAxesAreInvalidArgument) {
  const Tensor in = test::MakeTensor<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  for (const char* op : {"Sum", "Mean", "Max", "Min", "Prod"}) {
    const NodeDef node = ReduceNode(op, DT_FLOAT, DT_INT32, false);
    for (int32_t axis : {2, -3, 100}) {
      SCOPED_TRACE(std::string(op) + " axis " + std::to_string(axis));
      test::ExpectError(test::RunNode(node, {in, AxesTensor({0, axis})}), Code::kInvalidArgument,
                        "out of range for input of shape [2,3]");
      test::ExpectError(test::RunKernelOnly(node, {in, AxesTensor({axis})}), Code::kInvalidArgument,
                        "expected values in [-2, 2)");
    }
  }
}

TEST(ReductionErrors, AxesMustBeAScalarOrVector) {
  const Tensor in = test::MakeTensor<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor axes = test::MakeTensor<int32_t>({1, 1}, {0});
  const NodeDef node = ReduceNode("Sum", DT_FLOAT, DT_INT32, false);
  test::ExpectError(test::RunNode(node, {in, axes}), Code::kInvalidArgument, "scalar or a vector");
  test::ExpectError(test::RunKernelOnly(node, {in, axes}), Code::kInvalidArgument, "scalar or a vector");
}

// ---- Shape functions.

StatusOr<std::vector<PartialTensorShape>> InferReduction(
    const NodeDef& node, const std::vector<PartialTensorShape>& shapes, const Tensor* index_value) {
  return InferNodeShapes(test::TestRuntime(), node, shapes, {nullptr, index_value});
}

TEST(ReductionShapes, ConstantAxesGiveTheExactShape) {
  const PartialTensorShape in(Dims{2, -1, 4});
  const Tensor axes = test::MakeVector<int32_t>({-1, 0, 0});
  auto out = InferReduction(ReduceNode("Sum", DT_FLOAT, DT_INT32, false),
                            {in, PartialTensorShape(Dims{3})}, &axes);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], PartialTensorShape(Dims{-1}));
  out = InferReduction(ReduceNode("Sum", DT_FLOAT, DT_INT32, true),
                       {in, PartialTensorShape(Dims{3})}, &axes);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], PartialTensorShape(Dims{1, -1, 1}));
  const Tensor bad = test::MakeVector<int32_t>({3});
  EXPECT_EQ(InferReduction(ReduceNode("Sum", DT_FLOAT, DT_INT32, false),
                           {in, PartialTensorShape(Dims{1})}, &bad)
                .status()
                .code(),
            Code::kInvalidArgument);
}

TEST(ReductionShapes, UnknownAxesGiveTheRankWhenItIsKnown) {
  const PartialTensorShape in(Dims{2, 1, 4});
  auto infer = [&](bool keep_dims, const PartialTensorShape& axes_shape) {
    auto out = InferReduction(ReduceNode("Mean", DT_FLOAT, DT_INT32, keep_dims), {in, axes_shape},
                              nullptr);
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? (*out)[0] : PartialTensorShape();
  };
  EXPECT_EQ(infer(true, PartialTensorShape(Dims{2})), PartialTensorShape(Dims{-1, 1, -1}));
  EXPECT_EQ(infer(false, PartialTensorShape(Dims{})), PartialTensorShape(Dims{-1, -1}));
  EXPECT_EQ(infer(false, PartialTensorShape(Dims{0})), in);
  EXPECT_TRUE(infer(false, PartialTensorShape(Dims{2})).unknown_rank());
  auto unknown =
      InferReduction(ReduceNode("Mean", DT_FLOAT, DT_INT32, true),
                     {PartialTensorShape::UnknownRank(), PartialTensorShape(Dims{1})}, nullptr);
  ASSERT_TRUE(unknown.ok()) << unknown.status();
  EXPECT_TRUE((*unknown)[0].unknown_rank());
}

// ---- All and Any, against the reference Min and Max of the same values as int32 0 and 1: All
// is "the minimum is positive" and Any "the maximum is positive", which also holds for empty
// reductions (All of nothing is true, Any of nothing false).

NodeDef LogicalNode(const char* op, DataType index_dtype, bool keep_dims) {
  return test::MakeNode(
      op, 2, {{"Tidx", AttrValue::Type(index_dtype)}, {"keep_dims", AttrValue::Bool(keep_dims)}});
}

Tensor RandomBools(const Dims& dims, double p_true, unsigned seed) {
  Tensor t(DT_BOOL, TensorShape(dims));
  std::mt19937_64 rng(seed);
  std::bernoulli_distribution draw(p_true);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<bool>()[i] = draw(rng);
  return t;
}

Tensor ReferenceLogical(bool all, const Tensor& in, const Dims& axes, bool keep_dims) {
  Tensor ints(DT_INT32, in.shape());
  for (int64_t i = 0; i < in.num_elements(); ++i) ints.data<int32_t>()[i] = in.data<bool>()[i];
  const Reference ref =
      ReferenceReduce<int32_t>(all ? Reducer::kMin : Reducer::kMax, ints, axes, keep_dims);
  Tensor out(DT_BOOL, ref.output.shape());
  for (int64_t i = 0; i < out.num_elements(); ++i)
    out.data<bool>()[i] = ref.output.data<int32_t>()[i] > 0;
  return out;
}

TEST(LogicalReduction, AllAndAnyMatchReferenceForEveryShapeAndAxisSet) {
  unsigned seed = 500;
  for (const Case& c : ReductionCases()) {
    // Even odds, and values almost all true or almost all false, so that long runs reduce to
    // either answer too.
    for (double p_true : {0.5, 1 - 1e-4, 1e-4}) {
      const Tensor in = RandomBools(c.shape, p_true, ++seed);
      for (const char* op : {"All", "Any"}) {
        for (bool keep_dims : {false, true}) {
          SCOPED_TRACE(std::string(op) + " of " + DimsString(c.shape) + " over " +
                       DimsString(c.axes) + (keep_dims ? " keep_dims" : "") +
                       " p_true=" + std::to_string(p_true));
          test::ExpectTensorEqual(
              ReferenceLogical(std::string(op) == "All", in, c.axes, keep_dims),
              test::RunNodeOk(LogicalNode(op, DT_INT32, keep_dims), {in, AxesTensor(c.axes)}));
        }
      }
    }
  }
}

TEST(LogicalReduction, EmptyReductionsGiveTheIdentity) {
  const Tensor in(DT_BOOL, TensorShape({0, 2}));
  test::ExpectTensorEqual(
      test::MakeVector<bool>({true, true}),
      test::RunNodeOk(LogicalNode("All", DT_INT32, false), {in, AxesTensor({0})}));
  test::ExpectTensorEqual(
      test::MakeVector<bool>({false, false}),
      test::RunNodeOk(LogicalNode("Any", DT_INT32, false), {in, AxesTensor({0})}));
}

TEST(LogicalReduction, AcceptsInt64AndScalarAxes) {
  const Tensor in = test::MakeTensor<bool>({2, 3}, {true, true, true, false, true, false});
  test::ExpectTensorEqual(
      test::MakeVector<bool>({true, false}),
      test::RunNodeOk(LogicalNode("All", DT_INT64, false), {in, test::MakeVector<int64_t>({-1})}));
  test::ExpectTensorEqual(
      test::MakeTensor<bool>({1, 3}, {true, true, true}),
      test::RunNodeOk(LogicalNode("Any", DT_INT32, true), {in, test::MakeScalar<int32_t>(0)}));
}

TEST(LogicalReduction, BadAxesAndInputsAreInvalidArgument) {
  const Tensor in = test::MakeTensor<bool>({2, 3}, {true, true, true, false, true, false});
  for (const char* op : {"All", "Any"}) {
    const NodeDef node = LogicalNode(op, DT_INT32, false);
    for (int32_t axis : {2, -3}) {
      SCOPED_TRACE(std::string(op) + " axis " + std::to_string(axis));
      test::ExpectError(test::RunNode(node, {in, AxesTensor({0, axis})}), Code::kInvalidArgument,
                        "out of range for input of shape [2,3]");
      test::ExpectError(test::RunKernelOnly(node, {in, AxesTensor({axis})}), Code::kInvalidArgument,
                        "expected values in [-2, 2)");
    }
    const Tensor matrix_axes = test::MakeTensor<int32_t>({1, 1}, {0});
    test::ExpectError(test::RunNode(node, {in, matrix_axes}), Code::kInvalidArgument,
                      "scalar or a vector");
    test::ExpectError(test::RunKernelOnly(node, {in, matrix_axes}), Code::kInvalidArgument,
                      "scalar or a vector");
    // Only bool: the op has no type attr to take another dtype.
    test::ExpectError(test::RunNode(node, {test::MakeVector<float>({1, 0}), AxesTensor({0})}),
                      Code::kInvalidArgument, "input 0 is float; expected bool");
  }
}

TEST(LogicalReduction, ShapesFollowTheOtherReductions) {
  const PartialTensorShape in(Dims{2, -1, 4});
  const Tensor axes = test::MakeVector<int32_t>({-1, 0, 0});
  auto out =
      InferReduction(LogicalNode("All", DT_INT32, true), {in, PartialTensorShape(Dims{3})}, &axes);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], PartialTensorShape(Dims{1, -1, 1}));
  out = InferReduction(LogicalNode("Any", DT_INT32, false), {in, PartialTensorShape(Dims{})},
                       nullptr);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], PartialTensorShape(Dims{-1, -1}));
  const Tensor bad = test::MakeVector<int32_t>({3});
  EXPECT_EQ(
      InferReduction(LogicalNode("Any", DT_INT32, false), {in, PartialTensorShape(Dims{1})}, &bad)
          .status()
          .code(),
      Code::kInvalidArgument);
}

// ---- ArgMax and ArgMin.

NodeDef ArgNode(const char* op, DataType dtype, DataType output_type) {
  return test::MakeNode(op, 2,
                        {{"T", AttrValue::Type(dtype)},
                         {"Tidx", AttrValue::Type(DT_INT32)},
                         {"output_type", AttrValue::Type(output_type)}});
}

// The first index of the largest (or smallest) value along `axis`; NaN counts as extreme.
template <typename T, typename Index>
Tensor ReferenceArg(bool max, const Tensor& in, int axis) {
  Dims out_dims;
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < in.rank(); ++i) {
    if (i == axis) continue;
    out_dims.push_back(in.dim(i));
    (i < axis ? outer : inner) *= in.dim(i);
  }
  const int64_t n = in.dim(axis);
  Tensor out(test::DataTypeOf<Index>(), TensorShape(out_dims));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t k = 0; k < inner; ++k) {
      const T* p = in.data<T>() + o * n * inner + k;
      int64_t best = 0;
      for (int64_t r = 1; r < n; ++r) {
        const double x = p[r * inner], b = p[best * inner];
        if (std::isnan(b)) break;
        if (std::isnan(x) || (max ? x > b : x < b)) best = r;
      }
      out.data<Index>()[o * inner + k] = static_cast<Index>(best);
    }
  }
  return out;
}

template <typename T>
class ArgMaxTest : public ::testing::Test {};
TYPED_TEST_SUITE(ArgMaxTest, ReductionTypes);

TYPED_TEST(ArgMaxTest, MatchesReferenceWithFirstIndexOnTies) {
  using T = TypeParam;
  const std::vector<std::pair<Dims, int>> cases = {
      {{5}, 0},       {{5}, -1},        {{3, 4}, 0},      {{3, 4}, 1},        {{2, 3, 4}, 0},
      {{2, 3, 4}, 1}, {{2, 3, 4}, 2},   {{2, 3, 4}, -2},  {{1, 7}, 1},        {{7, 1}, 0},
      {{0, 3}, 1},    {{3, 100000}, 1}, {{100000, 3}, 0}, {{50, 300, 70}, 1}, {{1000, 500}, 1}};
  unsigned seed = 100;
  for (const auto& [shape, dimension] : cases) {
    // Few distinct values (whole numbers for floats too), so that ties are common.
    const Tensor in = RandomTensor<T>(shape, -3, 3, ++seed);
    if constexpr (std::is_floating_point_v<T>) {
      for (int64_t i = 0; i < in.num_elements(); ++i) in.data<T>()[i] = std::round(in.data<T>()[i]);
    }
    const int axis = dimension < 0 ? dimension + static_cast<int>(shape.size()) : dimension;
    for (const char* op : {"ArgMax", "ArgMin"}) {
      const bool max = std::string(op) == "ArgMax";
      SCOPED_TRACE(std::string(op) + " of " + DimsString(shape) + " along " +
                   std::to_string(dimension));
      test::ExpectTensorEqual(ReferenceArg<T, int64_t>(max, in, axis),
                              test::RunNodeOk(ArgNode(op, in.dtype(), DT_INT64),
                                              {in, test::MakeScalar<int32_t>(dimension)}));
      test::ExpectTensorEqual(ReferenceArg<T, int32_t>(max, in, axis),
                              test::RunNodeOk(ArgNode(op, in.dtype(), DT_INT32),
                                              {in, test::MakeScalar<int32_t>(dimension)}));
    }
  }
}

TEST(ArgMaxValues, FirstNaNCountsAsTheExtreme) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor in = test::MakeVector<float>({1, 7, nan, 5, nan});
  for (const char* op : {"ArgMax", "ArgMin"}) {
    Tensor out =
        test::RunNodeOk(ArgNode(op, DT_FLOAT, DT_INT64), {in, test::MakeScalar<int32_t>(0)});
    EXPECT_EQ(out.data<int64_t>()[0], 2) << op;
  }
}

TEST(ArgMaxValues, NarrowOutputTypes) {
  const Tensor in = test::MakeTensor<int32_t>({2, 3}, {4, 9, 1, 8, 2, 8});
  const Tensor dim = test::MakeScalar<int32_t>(1);
  Tensor out = test::RunNodeOk(ArgNode("ArgMax", DT_INT32, DT_INT16), {in, dim});
  test::ExpectTensorEqual(test::MakeVector<int16_t>({1, 0}), out);
  out = test::RunNodeOk(ArgNode("ArgMax", DT_INT32, DT_UINT16), {in, dim});
  test::ExpectTensorEqual(test::MakeVector<uint16_t>({1, 0}), out);
  out = test::RunNodeOk(ArgNode("ArgMin", DT_INT32, DT_INT32), {in, dim});
  test::ExpectTensorEqual(test::MakeVector<int32_t>({2, 1}), out);
  // TensorFlow's ArgMin has no 16-bit output types.
  test::ExpectError(test::RunNode(ArgNode("ArgMin", DT_INT32, DT_UINT16), {in, dim}),
                    Code::kInvalidArgument, "attr 'output_type' is uint16");
}

TEST(ArgMaxErrors, BadAxesAndEmptyAxesAreInvalidArgument) {
  const NodeDef node = ArgNode("ArgMax", DT_FLOAT, DT_INT64);
  const Tensor in = test::MakeTensor<float>({3, 0}, {});
  test::ExpectError(test::RunNode(node, {in, test::MakeScalar<int32_t>(1)}), Code::kInvalidArgument,
                    "axis 1 of length 0");
  const Tensor matrix = test::MakeTensor<float>({2, 2}, {1, 2, 3, 4});
  for (int32_t axis : {2, -3}) {
    test::ExpectError(test::RunNode(node, {matrix, test::MakeScalar<int32_t>(axis)}),
                      Code::kInvalidArgument, "out of range for input of shape [2,2]");
    test::ExpectError(test::RunKernelOnly(node, {matrix, test::MakeScalar<int32_t>(axis)}),
                      Code::kInvalidArgument, "expected values in [-2, 2)");
  }
  test::ExpectError(test::RunNode(node, {matrix, test::MakeVector<int32_t>({0})}),
                    Code::kInvalidArgument, "must be a scalar");
  test::ExpectError(test::RunKernelOnly(node, {matrix, test::MakeVector<int32_t>({0})}),
                    Code::kInvalidArgument, "must be a scalar");
  test::ExpectError(test::RunNode(node, {test::MakeScalar<float>(1), test::MakeScalar<int32_t>(0)}),
                    Code::kInvalidArgument, "out of range");
}

TEST(ArgMaxErrors, IndicesThatDoNotFitTheOutputTypeAreInvalidArgument) {
  const Tensor in(DT_FLOAT, TensorShape({40000}));
  std::fill(in.data<float>(), in.data<float>() + 40000, 0.0f);
  test::ExpectError(
      test::RunNode(ArgNode("ArgMax", DT_FLOAT, DT_INT16), {in, test::MakeScalar<int32_t>(0)}),
      Code::kInvalidArgument, "cannot hold");
}

TEST(ArgMaxShapes, InferredShapes) {
  const NodeDef node = ArgNode("ArgMin", DT_FLOAT, DT_INT64);
  const PartialTensorShape in(Dims{2, -1, 4}), scalar(Dims{});
  const Tensor dim = test::MakeScalar<int32_t>(-2);
  auto out = InferReduction(node, {in, scalar}, &dim);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], PartialTensorShape(Dims{2, 4}));
  out = InferReduction(node, {in, scalar}, nullptr);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], PartialTensorShape(Dims{-1, -1}));
  out = InferReduction(node, {PartialTensorShape(Dims{5}), scalar}, nullptr);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], PartialTensorShape(Dims{}));
  const Tensor bad = test::MakeScalar<int32_t>(3);
  EXPECT_EQ(InferReduction(node, {in, scalar}, &bad).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(InferReduction(node, {in, PartialTensorShape(Dims{1})}, nullptr).status().code(),
            Code::kInvalidArgument);
}

}  // namespace
}  // namespace cfx
