// SoftmaxCrossEntropyWithLogits, SparseSoftmaxCrossEntropyWithLogits and L2Loss from the ops-nn
// plugin: values against double-precision references, backprop against finite differences of
// the reference loss, label broadcasting, stability on large logits, bad labels and shapes, and
// shape inference.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "nn_test_util.h"
#include "numeric_check.h"

namespace cfx {
namespace {

using namespace test;  // NOLINT
using P = PartialTensorShape;

NodeDef XentNode(DataType t = DT_FLOAT) {
  return MakeNode("SoftmaxCrossEntropyWithLogits", 2, {{"T", AttrValue::Type(t)}});
}
NodeDef SparseNode(DataType t = DT_FLOAT, DataType labels = DT_INT64) {
  return MakeNode("SparseSoftmaxCrossEntropyWithLogits", 2,
                  {{"T", AttrValue::Type(t)}, {"Tlabels", AttrValue::Type(labels)}});
}

// -sum_k labels_k * log_softmax(logits)_k of one row, in long double.
double RowLoss(const double* logits, const double* labels, int64_t n) {
  long double max = logits[0], sum = 0, loss = 0;
  for (int64_t k = 1; k < n; ++k) max = std::max<long double>(max, logits[k]);
  for (int64_t k = 0; k < n; ++k) sum += std::exp(static_cast<long double>(logits[k]) - max);
  for (int64_t k = 0; k < n; ++k) loss -= labels[k] * (logits[k] - max - std::log(sum));
  return static_cast<double>(loss);
}

// The broadcast of an operand of shape `s` to [rows, cols] (TensorFlow's rule; s has rank <= 2).
std::vector<double> Stretch(const std::vector<double>& v, const TensorShape& s, int64_t rows,
                            int64_t cols) {
  const int64_t d0 = s.rank() >= 2 ? s.dim(0) : 1, d1 = s.rank() >= 1 ? s.dim(s.rank() - 1) : 1;
  std::vector<double> out(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < cols; ++k)
      out[r * cols + k] = v[(d0 == 1 ? 0 : r) * d1 + (d1 == 1 ? 0 : k)];
  return out;
}

// Labels of shape `s` (rank <= 2) whose broadcast rows of `cols` entries each sum to 1: the
// backprop softmax - labels is the loss's gradient only for such labels.
std::vector<double> Distributions(const TensorShape& s, int64_t cols) {
  const int64_t d1 = s.rank() >= 1 ? s.dim(s.rank() - 1) : 1;
  std::vector<double> v = RandomValues(s.num_elements(), 0.1, 1, 5);
  for (size_t row = 0; row * d1 < v.size(); ++row) {
    double sum = 0;
    for (int64_t k = 0; k < d1; ++k) sum += v[row * d1 + k];
    // A column broadcast along the classes repeats its one entry `cols` times.
    for (int64_t k = 0; k < d1; ++k) v[row * d1 + k] = d1 == 1 ? 1.0 / cols : v[row * d1 + k] / sum;
  }
  return v;
}

struct XentCase {
  TensorShape features, labels;
  int64_t rows, cols;  // the broadcast shape
};

template <typename T>
void CheckXent(const XentCase& c) {
  SCOPED_TRACE("features " + c.features.ToString() + " labels " + c.labels.ToString());
  const std::vector<double> x = RoundTo<T>(RandomValues(c.features.num_elements(), -5, 5, 4));
  const std::vector<double> l = RoundTo<T>(Distributions(c.labels, c.cols));
  const std::vector<double> xs = Stretch(x, c.features, c.rows, c.cols);
  const std::vector<double> ls = Stretch(l, c.labels, c.rows, c.cols);
  std::vector<double> loss(c.rows), backprop(xs.size());
  for (int64_t r = 0; r < c.rows; ++r) {
    loss[r] = RowLoss(&xs[r * c.cols], &ls[r * c.cols], c.cols);
    // d loss / d logits by finite differences of the reference (labels held constant).
    std::vector<double> row(xs.begin() + r * c.cols, xs.begin() + (r + 1) * c.cols);
    std::vector<double> g = NumericGradient(
        [&](const std::vector<double>& v) { return RowLoss(v.data(), &ls[r * c.cols], c.cols); },
        row);
    std::copy(g.begin(), g.end(), backprop.begin() + r * c.cols);
  }
  auto out =
      RunNode(XentNode(DataTypeOf<T>()), {TensorOf<T>(c.features, x), TensorOf<T>(c.labels, l)});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ((*out)[0].shape(), TensorShape({c.rows}));
  ASSERT_EQ((*out)[1].shape(), TensorShape({c.rows, c.cols}));
  const double tol = std::is_same_v<T, float> ? 2e-5 : 1e-8;
  ExpectAllNear(loss, DoublesOf<T>((*out)[0]), tol, tol, "loss");
  ExpectAllNear(backprop, DoublesOf<T>((*out)[1]), tol, tol, "backprop");
}

TEST(SoftmaxCrossEntropy, MatchesTheReferenceAndItsNumericGradient) {
  const std::vector<XentCase> cases = {
      {TensorShape({3, 5}), TensorShape({3, 5}), 3, 5},
      {TensorShape({1, 1}), TensorShape({1, 1}), 1, 1},
      {TensorShape({4, 1}), TensorShape({4, 1}), 4, 1},
      {TensorShape({7, 33}), TensorShape({7, 33}), 7, 33},
      {TensorShape({130, 67}), TensorShape({130, 67}), 130, 67},  // rows over threads
      // Broadcasting: a row of labels, labels per row, a broadcast feature row, a scalar.
      {TensorShape({3, 5}), TensorShape({5}), 3, 5},
      {TensorShape({3, 5}), TensorShape({1, 5}), 3, 5},
      {TensorShape({3, 5}), TensorShape({3, 1}), 3, 5},
      {TensorShape({1, 5}), TensorShape({3, 5}), 3, 5},
      {TensorShape({3, 1}), TensorShape({3, 5}), 3, 5},
      {TensorShape({2, 4}), TensorShape(), 2, 4},
  };
  for (const XentCase& c : cases) {
    CheckXent<float>(c);
    CheckXent<double>(c);
  }
}

TEST(SoftmaxCrossEntropy, HandWorkedExample) {
  // logits [0, ln 3]: softmax [1/4, 3/4]; labels [1, 0]: loss ln 4, backprop [-3/4, 3/4].
  auto out =
      RunNode(XentNode(DT_DOUBLE), {MakeTensor<double>(TensorShape({1, 2}), {0, std::log(3.0)}),
                                    MakeTensor<double>(TensorShape({1, 2}), {1, 0})});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorNear(MakeVector<double>({std::log(4.0)}), (*out)[0], 1e-15);
  ExpectTensorNear(MakeTensor<double>(TensorShape({1, 2}), {-0.75, 0.75}), (*out)[1], 1e-15);
}

TEST(SoftmaxCrossEntropy, LabelsThatAreNotADistributionFollowTheFormula) {
  // TensorFlow does not normalize labels: with logits [0, ln 3] (softmax [1/4, 3/4]) and labels
  // [1, 1], loss = -(ln 1/4 + ln 3/4) = ln(16/3) and backprop = softmax - labels.
  auto out =
      RunNode(XentNode(DT_DOUBLE), {MakeTensor<double>(TensorShape({1, 2}), {0, std::log(3.0)}),
                                    MakeTensor<double>(TensorShape({1, 2}), {1, 1})});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorNear(MakeVector<double>({std::log(16.0 / 3.0)}), (*out)[0], 1e-15);
  ExpectTensorNear(MakeTensor<double>(TensorShape({1, 2}), {-0.75, -0.25}), (*out)[1], 1e-15);
}

TEST(SoftmaxCrossEntropy, LargeLogitsStayFinite) {
  // Shifting every logit by 1000 changes nothing; exp(1000) overflows float and double.
  Tensor labels = MakeTensor<float>(TensorShape({1, 3}), {0.2f, 0.3f, 0.5f});
  auto small = RunNode(XentNode(), {MakeTensor<float>(TensorShape({1, 3}), {0, 1, 2}), labels});
  auto big =
      RunNode(XentNode(), {MakeTensor<float>(TensorShape({1, 3}), {1000, 1001, 1002}), labels});
  ASSERT_TRUE(small.ok() && big.ok());
  ExpectTensorNear((*small)[0], (*big)[0], 1e-4);
  ExpectTensorNear((*small)[1], (*big)[1], 1e-6);
}

TEST(SoftmaxCrossEntropy, EmptyBatchesAndClasses) {
  auto out = RunNode(
      XentNode(), {Tensor(DT_FLOAT, TensorShape({0, 4})), Tensor(DT_FLOAT, TensorShape({0, 4}))});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), TensorShape({0}));
  EXPECT_EQ((*out)[1].shape(), TensorShape({0, 4}));
  // No classes: a sum over nothing, 0 per row.
  out = RunNode(XentNode(),
                {Tensor(DT_FLOAT, TensorShape({2, 0})), Tensor(DT_FLOAT, TensorShape({2, 0}))});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(MakeVector<float>({0, 0}), (*out)[0]);
}

TEST(SoftmaxCrossEntropy, ShapesThatDoNotBroadcastToAMatrixAreErrors) {
  for (auto run : {&RunNode, &RunKernelOnly}) {
    ExpectError(run(XentNode(),
                    {Tensor(DT_FLOAT, TensorShape({3, 5})), Tensor(DT_FLOAT, TensorShape({3, 4}))},
                    "CPU:0"),
                Code::kInvalidArgument, "must be broadcastable");
    ExpectError(
        run(XentNode(), {Tensor(DT_FLOAT, TensorShape({5})), Tensor(DT_FLOAT, TensorShape({5}))},
            "CPU:0"),
        Code::kInvalidArgument, "broadcast to [5]");
    ExpectError(
        run(XentNode(),
            {Tensor(DT_FLOAT, TensorShape({2, 3, 5})), Tensor(DT_FLOAT, TensorShape({3, 5}))},
            "CPU:0"),
        Code::kInvalidArgument, "must be matrices");
  }
}

// ---- Sparse labels.

template <typename T, typename L>
void CheckSparse(int64_t rows, int64_t cols) {
  SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols));
  const std::vector<double> x = RoundTo<T>(RandomValues(rows * cols, -5, 5, 6));
  std::vector<L> labels(rows);
  for (int64_t r = 0; r < rows; ++r) labels[r] = static_cast<L>((r * 7 + 3) % cols);
  std::vector<double> loss(rows), backprop(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<double> onehot(cols, 0.0);
    onehot[labels[r]] = 1;
    loss[r] = RowLoss(&x[r * cols], onehot.data(), cols);
    std::vector<double> g = NumericGradient(
        [&](const std::vector<double>& v) { return RowLoss(v.data(), onehot.data(), cols); },
        std::vector<double>(x.begin() + r * cols, x.begin() + (r + 1) * cols));
    std::copy(g.begin(), g.end(), backprop.begin() + r * cols);
  }
  auto out = RunNode(SparseNode(DataTypeOf<T>(), DataTypeOf<L>()),
                     {TensorOf<T>(TensorShape({rows, cols}), x), MakeVector<L>(labels)});
  ASSERT_TRUE(out.ok()) << out.status();
  const double tol = std::is_same_v<T, float> ? 2e-5 : 1e-8;
  ExpectAllNear(loss, DoublesOf<T>((*out)[0]), tol, tol, "loss");
  ExpectAllNear(backprop, DoublesOf<T>((*out)[1]), tol, tol, "backprop");
}

TEST(SparseSoftmaxCrossEntropy, MatchesTheReferenceAndItsNumericGradient) {
  CheckSparse<float, int32_t>(3, 5);
  CheckSparse<float, int64_t>(1, 1);
  CheckSparse<double, int32_t>(4, 7);
  CheckSparse<double, int64_t>(9, 2);
  CheckSparse<float, int64_t>(129, 37);  // rows over threads
}

TEST(SparseSoftmaxCrossEntropy, OutOfRangeLabelsNameTheirIndexAndValue) {
  Tensor x = MakeTensor<float>(TensorShape({3, 4}), Ramp<float>(12));
  for (auto run : {&RunNode, &RunKernelOnly}) {
    ExpectError(run(SparseNode(DT_FLOAT, DT_INT32), {x, MakeVector<int32_t>({0, 4, 1})}, "CPU:0"),
                Code::kInvalidArgument,
                "labels[1] = 4 is outside the valid range of classes [0, 4)");
    ExpectError(run(SparseNode(DT_FLOAT, DT_INT64), {x, MakeVector<int64_t>({0, 1, -1})}, "CPU:0"),
                Code::kInvalidArgument, "labels[2] = -1");
  }
}

TEST(SparseSoftmaxCrossEntropy, BadShapesAreErrors) {
  Tensor x = MakeTensor<float>(TensorShape({3, 4}), Ramp<float>(12));
  Tensor labels = MakeVector<int64_t>({0, 1, 2});
  for (auto run : {&RunNode, &RunKernelOnly}) {
    ExpectError(run(SparseNode(), {MakeVector<float>({1, 2, 3}), labels}, "CPU:0"),
                Code::kInvalidArgument, "features must have rank 2");
    ExpectError(
        run(SparseNode(), {x, MakeTensor<int64_t>(TensorShape({3, 1}), {0, 1, 2})}, "CPU:0"),
        Code::kInvalidArgument, "labels must have rank 1");
    ExpectError(run(SparseNode(), {x, MakeVector<int64_t>({0, 1})}, "CPU:0"),
                Code::kInvalidArgument, "same first dimension");
  }
  ExpectError(
      RunNode(SparseNode(), {Tensor(DT_FLOAT, TensorShape({2, 0})), MakeVector<int64_t>({0, 0})}),
      Code::kInvalidArgument, "at least one class");
  auto empty =
      RunNode(SparseNode(), {Tensor(DT_FLOAT, TensorShape({0, 3})), MakeVector<int64_t>({})});
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ((*empty)[1].shape(), TensorShape({0, 3}));
}

TEST(CrossEntropyShapes, LossIsTheBatchAndBackpropTheMatrix) {
  auto out = InferShapes(XentNode(), {P({-1, 10}), P({-1, 10})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], P({-1}));
  EXPECT_EQ((*out)[1], P({-1, 10}));
  out = InferShapes(XentNode(), {P({8, -1}), P({10})});  // labels broadcast along the batch
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], P({8}));
  EXPECT_EQ((*out)[1], P({8, 10}));
  out = InferShapes(XentNode(), {P({8, 1}), P()});  // 1 may stretch: unknown
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[1], P({8, -1}));
  EXPECT_EQ(InferShapes(XentNode(), {P({8, 10}), P({8, 9})}).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(InferShapes(XentNode(), {P({10}), P({10})}).status().code(), Code::kInvalidArgument);

  out = InferShapes(SparseNode(), {P({-1, 10}), P({32})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], P({32}));
  EXPECT_EQ((*out)[1], P({32, 10}));
  EXPECT_EQ(InferShapes(SparseNode(), {P({4, 10}), P({5})}).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(InferShapes(SparseNode(), {P({10}), P({10})}).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(InferShapes(SparseNode(), {P({4, 10}), P({4, 1})}).status().code(),
            Code::kInvalidArgument);
}

// ---- L2Loss.

template <typename T>
void CheckL2Loss(const TensorShape& s) {
  SCOPED_TRACE(s.ToString());
  const std::vector<double> x = RoundTo<T>(RandomValues(s.num_elements(), -2, 2, 7));
  long double want = 0;
  for (double v : x) want += static_cast<long double>(v) * v;
  Tensor out = RunNodeOk(MakeNode("L2Loss", 1, {{"T", AttrValue::Type(DataTypeOf<T>())}}),
                         {TensorOf<T>(s, x)});
  ASSERT_EQ(out.shape(), TensorShape());
  const double tol = std::is_same_v<T, float> ? 1e-7 : 1e-15;
  EXPECT_NEAR(out.data<T>()[0], static_cast<double>(want / 2),
              tol * static_cast<double>(want) + 1e-30);
}

TEST(L2Loss, IsHalfTheSumOfSquares) {
  for (const TensorShape& s :
       {TensorShape(), TensorShape({0}), TensorShape({7}), TensorShape({3, 4}),
        TensorShape({2, 0, 5}), TensorShape({1000003})}) {
    CheckL2Loss<float>(s);
    CheckL2Loss<double>(s);
  }
  // (1 + 4 + 9) / 2 = 7.
  ExpectTensorEqual(MakeScalar<float>(7),
                    RunNodeOk(MakeNode("L2Loss", 1, {{"T", AttrValue::Type(DT_FLOAT)}}),
                              {MakeVector<float>({1, -2, 3})}));
  auto out = InferShapes(MakeNode("L2Loss", 1, {{"T", AttrValue::Type(DT_FLOAT)}}), {P({-1, 3})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], P(std::vector<int64_t>{}));
}

TEST(OpsNnPlugin, OwnsTheLossOps) {
  for (const char* op :
       {"SoftmaxCrossEntropyWithLogits", "SparseSoftmaxCrossEntropyWithLogits", "L2Loss"}) {
    const OpRegistration* reg = TestRuntime().ops().LookUp(op);
    ASSERT_NE(reg, nullptr) << op;
    EXPECT_EQ(reg->registered_by, "ops-nn") << op;
  }
}

}  // namespace
}  // namespace cfx
