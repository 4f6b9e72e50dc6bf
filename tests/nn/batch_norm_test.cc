// FusedBatchNormV3 and FusedBatchNormGradV3 from the ops-nn plugin: every output against a
// double-precision reference in all four data formats, training (with and without running
// averages) and inference; the gradients against finite differences of the reference forward op;
// empty inputs, bad shapes and attrs, and shape inference.
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

NodeDef BnNode(bool training, const std::string& format = "NHWC", float epsilon = 1e-3f,
               float factor = 1.0f) {
  return MakeNode("FusedBatchNormV3", 5,
                  {{"T", AttrValue::Type(DT_FLOAT)},
                   {"U", AttrValue::Type(DT_FLOAT)},
                   {"epsilon", AttrValue::Float(epsilon)},
                   {"exponential_avg_factor", AttrValue::Float(factor)},
                   {"data_format", AttrValue::String(format)},
                   {"is_training", AttrValue::Bool(training)}});
}

NodeDef BnGradNode(bool training, const std::string& format = "NHWC", float epsilon = 1e-3f) {
  return MakeNode("FusedBatchNormGradV3", 6,
                  {{"T", AttrValue::Type(DT_FLOAT)},
                   {"U", AttrValue::Type(DT_FLOAT)},
                   {"epsilon", AttrValue::Float(epsilon)},
                   {"data_format", AttrValue::String(format)},
                   {"is_training", AttrValue::Bool(training)}});
}

// x seen as [outer, channels, inner]; element (o, c, i) at (o * channels + c) * inner + i.
struct Layout {
  int64_t outer = 1, channels = 1, inner = 1;
  Layout(const std::vector<int64_t>& dims, const std::string& format) {
    const size_t cdim = format.back() == 'C' ? dims.size() - 1 : 1;
    for (size_t d = 0; d < dims.size(); ++d) {
      if (d < cdim) outer *= dims[d];
      if (d > cdim) inner *= dims[d];
    }
    channels = dims[cdim];
  }
  int64_t n() const { return outer * inner; }
  template <typename F>
  void ForEach(F f) const {  // f(flat index, channel)
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t c = 0; c < channels; ++c)
        for (int64_t i = 0; i < inner; ++i) f((o * channels + c) * inner + i, c);
  }
};

struct BnInputs {
  std::vector<double> x, scale, offset, mean, variance;
};

struct BnOutputs {
  std::vector<double> y, batch_mean, batch_variance, saved_mean, saved_variance;
};

// The forward op in double, from the definition.
BnOutputs Reference(const Layout& l, const BnInputs& in, bool training, double epsilon,
                    double factor) {
  BnOutputs out;
  std::vector<double> m(l.channels, 0.0), v(l.channels, 0.0);
  if (training) {
    l.ForEach([&](int64_t e, int64_t c) { m[c] += in.x[e] / l.n(); });
    l.ForEach([&](int64_t e, int64_t c) { v[c] += (in.x[e] - m[c]) * (in.x[e] - m[c]) / l.n(); });
  } else {
    m = in.mean;
    v = in.variance;
  }
  out.y.resize(in.x.size());
  l.ForEach([&](int64_t e, int64_t c) {
    out.y[e] = (in.x[e] - m[c]) / std::sqrt(v[c] + epsilon) * in.scale[c] + in.offset[c];
  });
  out.saved_mean = m;
  out.saved_variance = v;
  out.batch_mean = m;
  out.batch_variance = v;
  if (training) {
    const double bessel = l.n() > 1 ? static_cast<double>(l.n()) / (l.n() - 1) : 1.0;
    for (int64_t c = 0; c < l.channels; ++c) {
      out.batch_variance[c] = v[c] * bessel;
      if (factor != 1.0) {
        out.batch_mean[c] = (1 - factor) * in.mean[c] + factor * m[c];
        out.batch_variance[c] = (1 - factor) * in.variance[c] + factor * v[c] * bessel;
      }
    }
  }
  return out;
}

BnInputs RandomInputs(const Layout& l, double x_center, double x_spread, unsigned seed) {
  BnInputs in;
  in.x = RoundTo<float>(RandomValues(l.n() * l.channels, -x_spread, x_spread, seed));
  for (double& v : in.x) v = static_cast<float>(v + x_center);
  in.scale = RoundTo<float>(RandomValues(l.channels, 0.5, 2, seed + 1));
  in.offset = RoundTo<float>(RandomValues(l.channels, -1, 1, seed + 2));
  in.mean = RoundTo<float>(RandomValues(l.channels, -1, 1, seed + 3));
  in.variance = RoundTo<float>(RandomValues(l.channels, 0.5, 3, seed + 4));
  return in;
}

std::vector<Tensor> ForwardInputs(const std::vector<int64_t>& dims, const BnInputs& in) {
  TensorShape c({static_cast<int64_t>(in.scale.size())});
  return {TensorOf<float>(TensorShape(dims), in.x), TensorOf<float>(c, in.scale),
          TensorOf<float>(c, in.offset), TensorOf<float>(c, in.mean),
          TensorOf<float>(c, in.variance)};
}

void CheckForward(const std::vector<int64_t>& dims, const std::string& format, bool training,
                  double factor = 1.0, double x_center = 0, double x_spread = 3) {
  SCOPED_TRACE(TensorShape(dims).ToString() + " " + format +
               (training ? " training" : " inference") + " factor " + std::to_string(factor));
  const Layout l(dims, format);
  const BnInputs in = RandomInputs(l, x_center, x_spread, 11);
  const double eps = 1e-3;
  const BnOutputs want = Reference(l, in, training, eps, factor);
  auto out = RunNode(BnNode(training, format, static_cast<float>(eps), static_cast<float>(factor)),
                     ForwardInputs(dims, in));
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 6u);
  ExpectAllNear(want.y, DoublesOf<float>((*out)[0]), 2e-5, 2e-5, "y");
  ExpectAllNear(want.batch_mean, DoublesOf<float>((*out)[1]), 1e-5, 1e-5, "batch_mean");
  ExpectAllNear(want.batch_variance, DoublesOf<float>((*out)[2]), 1e-5, 1e-5, "batch_variance");
  ExpectAllNear(want.saved_mean, DoublesOf<float>((*out)[3]), 1e-5, 1e-5, "reserve_space_1");
  ExpectAllNear(want.saved_variance, DoublesOf<float>((*out)[4]), 1e-5, 1e-5, "reserve_space_2");
  ExpectTensorEqual(MakeScalar<float>(0), (*out)[5]);
}

TEST(FusedBatchNormV3, TrainingMatchesTheReferenceInEveryFormat) {
  CheckForward({2, 3, 4, 5}, "NHWC", true);
  CheckForward({2, 3, 4, 5}, "NCHW", true);
  CheckForward({2, 2, 3, 5, 4}, "NDHWC", true);
  CheckForward({2, 3, 2, 3, 5}, "NCDHW", true);
  CheckForward({3, 5, 7, 3}, "NHWC", true);
  CheckForward({1, 1, 1, 3}, "NHWC", true);  // one element per channel: Bessel's factor is 1
  CheckForward({1, 7, 1, 1}, "NCHW", true);
  CheckForward({16, 32, 32, 16}, "NHWC", true);  // many row blocks, over threads
  CheckForward({4, 8, 33, 33}, "NCHW", true);    // many planes, over threads
}

TEST(FusedBatchNormV3, TrainingBlendsRunningAveragesWithTheFactor) {
  CheckForward({2, 3, 4, 5}, "NHWC", true, 0.3);
  CheckForward({2, 5, 3, 4}, "NCHW", true, 0.01);
  CheckForward({2, 3, 4, 5}, "NHWC", true, 0.0);  // keeps the old averages
}

TEST(FusedBatchNormV3, InferenceUsesThePopulationStatistics) {
  CheckForward({2, 3, 4, 5}, "NHWC", false);
  CheckForward({2, 3, 4, 5}, "NCHW", false);
  CheckForward({2, 2, 3, 5, 4}, "NDHWC", false);
  CheckForward({2, 3, 2, 3, 5}, "NCDHW", false);
  CheckForward({8, 16, 16, 32}, "NHWC", false);
  // The factor only matters in training.
  CheckForward({2, 3, 4, 5}, "NHWC", false, 0.5);
}

TEST(FusedBatchNormV3, VarianceOfDataFarFromZeroKeepsItsDigits) {
  // Mean 1000, spread 0.05: E[x^2] - E[x]^2 in float would lose every digit of the variance.
  CheckForward({4, 5, 6, 3}, "NHWC", true, 1.0, 1000, 0.05);
  CheckForward({4, 3, 6, 5}, "NCHW", true, 1.0, -1000, 0.05);
}

TEST(FusedBatchNormV3, TrainingAcceptsEmptyMeanAndVariance) {
  // TensorFlow's documented usage: mean and variance are empty in training.
  const std::vector<int64_t> dims = {2, 2, 2, 3};
  std::vector<Tensor> in = ForwardInputs(dims, RandomInputs(Layout(dims, "NHWC"), 0, 3, 5));
  in[3] = Tensor(DT_FLOAT, TensorShape({0}));
  in[4] = Tensor(DT_FLOAT, TensorShape({0}));
  auto out = RunNode(BnNode(true), in);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[1].shape(), TensorShape({3}));
}

TEST(FusedBatchNormV3, EmptyInputGivesNaNStatistics) {
  const std::vector<int64_t> dims = {0, 2, 2, 3};
  BnInputs in = RandomInputs(Layout(dims, "NHWC"), 0, 1, 6);
  for (bool training : {true, false}) {
    auto out = RunNode(BnNode(training), ForwardInputs(dims, in));
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].shape(), TensorShape(dims));
    for (int i = 1; i <= 4; ++i)
      for (double v : DoublesOf<float>((*out)[i])) EXPECT_TRUE(std::isnan(v)) << "output " << i;
  }
}

// Sum(dy * y(x, scale, offset)) through the reference forward op: its gradient is what
// FusedBatchNormGradV3 returns.
double Objective(const Layout& l, const BnInputs& in, const std::vector<double>& dy, bool training,
                 double eps) {
  const std::vector<double> y = Reference(l, in, training, eps, 1.0).y;
  double s = 0;
  for (size_t i = 0; i < y.size(); ++i) s += dy[i] * y[i];
  return s;
}

void CheckGradient(const std::vector<int64_t>& dims, const std::string& format, bool training) {
  SCOPED_TRACE(TensorShape(dims).ToString() + " " + format +
               (training ? " training" : " inference"));
  const Layout l(dims, format);
  const BnInputs in = RandomInputs(l, 0.5, 2, 21);
  const std::vector<double> dy = RoundTo<float>(RandomValues(l.n() * l.channels, -1, 1, 22));
  const double eps = 1e-3;
  // The forward op's reserve spaces feed the gradient op, as in a training graph.
  auto fwd = RunNode(BnNode(training, format, eps), ForwardInputs(dims, in));
  ASSERT_TRUE(fwd.ok()) << fwd.status();
  const TensorShape shape(dims);
  auto out = RunNode(BnGradNode(training, format, eps),
                     {TensorOf<float>(shape, dy), TensorOf<float>(shape, in.x),
                      ForwardInputs(dims, in)[1], (*fwd)[3], (*fwd)[4], (*fwd)[5]});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 5u);

  auto numeric = [&](std::vector<double> BnInputs::*field) {
    return NumericGradient(
        [&](const std::vector<double>& v) {
          BnInputs moved = in;
          moved.*field = v;
          return Objective(l, moved, dy, training, eps);
        },
        in.*field);
  };
  ExpectAllNear(numeric(&BnInputs::x), DoublesOf<float>((*out)[0]), 1e-4, 1e-3, "x_backprop");
  ExpectAllNear(numeric(&BnInputs::scale), DoublesOf<float>((*out)[1]), 1e-4, 1e-4,
                "scale_backprop");
  ExpectAllNear(numeric(&BnInputs::offset), DoublesOf<float>((*out)[2]), 1e-4, 1e-4,
                "offset_backprop");
  EXPECT_EQ((*out)[3].shape(), TensorShape({0}));
  EXPECT_EQ((*out)[4].shape(), TensorShape({0}));
}

TEST(FusedBatchNormGradV3, MatchesFiniteDifferencesOfTheForwardOp) {
  for (bool training : {true, false}) {
    CheckGradient({2, 3, 4, 3}, "NHWC", training);
    CheckGradient({2, 3, 4, 3}, "NCHW", training);
    CheckGradient({2, 2, 3, 2, 3}, "NDHWC", training);
    CheckGradient({1, 2, 3, 2, 2}, "NCDHW", training);
    CheckGradient({5, 1, 1, 7}, "NHWC", training);
  }
}

// Large inputs against the gradient formulas in double (finite differences would be slow).
void CheckLargeGradient(const std::vector<int64_t>& dims, const std::string& format,
                        bool training) {
  SCOPED_TRACE(TensorShape(dims).ToString() + " " + format);
  const Layout l(dims, format);
  const BnInputs in = RandomInputs(l, 0, 2, 31);
  const std::vector<double> dy = RoundTo<float>(RandomValues(l.n() * l.channels, -1, 1, 32));
  const BnOutputs ref = Reference(l, in, training, 1e-3, 1.0);
  std::vector<double> sum_dy(l.channels), sum_dy_xc(l.channels), dx(dy.size());
  l.ForEach([&](int64_t e, int64_t c) {
    sum_dy[c] += dy[e];
    sum_dy_xc[c] += dy[e] * (in.x[e] - ref.saved_mean[c]);
  });
  std::vector<double> scale_bp(l.channels);
  for (int64_t c = 0; c < l.channels; ++c)
    scale_bp[c] = sum_dy_xc[c] / std::sqrt(ref.saved_variance[c] + 1e-3);
  l.ForEach([&](int64_t e, int64_t c) {
    const double r = 1 / std::sqrt(ref.saved_variance[c] + 1e-3), n = l.n();
    const double xc = in.x[e] - ref.saved_mean[c];
    dx[e] = training ? in.scale[c] * r * (dy[e] - sum_dy[c] / n - xc * r * r * sum_dy_xc[c] / n)
                     : in.scale[c] * r * dy[e];
  });
  const TensorShape shape(dims), cs({l.channels});
  auto out = RunNode(BnGradNode(training, format),
                     {TensorOf<float>(shape, dy), TensorOf<float>(shape, in.x),
                      TensorOf<float>(cs, in.scale), TensorOf<float>(cs, ref.saved_mean),
                      TensorOf<float>(cs, ref.saved_variance), MakeScalar<float>(0)});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectAllNear(dx, DoublesOf<float>((*out)[0]), 1e-5, 1e-4, "x_backprop");
  ExpectAllNear(scale_bp, DoublesOf<float>((*out)[1]), 1e-3, 1e-5, "scale_backprop");
  ExpectAllNear(sum_dy, DoublesOf<float>((*out)[2]), 1e-3, 1e-5, "offset_backprop");
}

TEST(FusedBatchNormGradV3, LargeInputsMatchTheGradientFormulas) {
  for (bool training : {true, false}) {
    CheckLargeGradient({16, 32, 32, 16}, "NHWC", training);
    CheckLargeGradient({4, 8, 33, 33}, "NCHW", training);
  }
}

TEST(FusedBatchNormGradV3, EmptyInputGivesZeroScaleAndOffsetGradients) {
  const TensorShape shape({0, 2, 2, 3});
  auto out = RunNode(BnGradNode(true), {Tensor(DT_FLOAT, shape), Tensor(DT_FLOAT, shape),
                                        MakeVector<float>({1, 2, 3}), MakeVector<float>({0, 0, 0}),
                                        MakeVector<float>({1, 1, 1}), MakeScalar<float>(0)});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), shape);
  ExpectTensorEqual(MakeVector<float>({0, 0, 0}), (*out)[1]);
  ExpectTensorEqual(MakeVector<float>({0, 0, 0}), (*out)[2]);
}

TEST(FusedBatchNormV3, BadShapesAreErrors) {
  const std::vector<int64_t> dims = {2, 2, 2, 3};
  const std::vector<Tensor> good = ForwardInputs(dims, RandomInputs(Layout(dims, "NHWC"), 0, 1, 7));
  auto with = [&](int i, Tensor t) {
    std::vector<Tensor> in = good;
    in[i] = std::move(t);
    return in;
  };
  Tensor two = MakeVector<float>({1, 2});
  for (auto run : {&RunNode, &RunKernelOnly}) {
    ExpectError(run(BnNode(true), with(0, Tensor(DT_FLOAT, TensorShape({2, 2, 3}))), "CPU:0"),
                Code::kInvalidArgument, "x must have rank 4");
    ExpectError(run(BnNode(true, "NDHWC"), good, "CPU:0"), Code::kInvalidArgument,
                "x must have rank 5");
    ExpectError(run(BnNode(true), with(1, two), "CPU:0"), Code::kInvalidArgument,
                "scale has 2 elements but x has 3 channels");
    ExpectError(
        run(BnNode(true), with(2, MakeTensor<float>(TensorShape({1, 3}), {1, 2, 3})), "CPU:0"),
        Code::kInvalidArgument, "offset must");
    ExpectError(run(BnNode(false), with(3, two), "CPU:0"), Code::kInvalidArgument,
                "mean has 2 elements");
    ExpectError(run(BnNode(false), with(4, two), "CPU:0"), Code::kInvalidArgument,
                "variance has 2 elements");
    ExpectError(run(BnNode(true, "NHWC", 1e-3f, 0.5f), with(3, two), "CPU:0"),
                Code::kInvalidArgument, "mean has 2 elements");
  }
  ExpectError(
      RunKernelOnly(BnNode(true), with(3, MakeTensor<float>(TensorShape({1, 3}), {1, 2, 3}))),
      Code::kInvalidArgument, "mean must be 1-D");
}

TEST(FusedBatchNormV3, BadAttrsAreErrors) {
  const std::vector<int64_t> dims = {2, 2, 2, 3};
  const std::vector<Tensor> in = ForwardInputs(dims, RandomInputs(Layout(dims, "NHWC"), 0, 1, 8));
  ExpectError(RunNode(BnNode(true, "NHWC", -1e-3f), in), Code::kInvalidArgument,
              "epsilon must be finite and >= 0");
  ExpectError(RunNode(BnNode(true, "NHWC", std::nanf("")), in), Code::kInvalidArgument, "epsilon");
  ExpectError(RunNode(BnNode(true, "NHWC", 1e-3f, INFINITY), in), Code::kInvalidArgument,
              "exponential_avg_factor must be finite");
  EXPECT_FALSE(RunNode(BnNode(true, "NWHC"), in).ok()) << "not an allowed data_format";
  ExpectError(RunNode(BnGradNode(true, "NHWC", -1.0f), {in[0], in[0], in[1], in[1], in[1], in[1]}),
              Code::kInvalidArgument, "epsilon");
}

TEST(FusedBatchNormGradV3, BadShapesAreErrors) {
  const TensorShape shape({2, 2, 2, 3});
  const Tensor x(DT_FLOAT, shape), c3 = MakeVector<float>({1, 1, 1});
  const Tensor r3 = MakeScalar<float>(0);
  for (auto run : {&RunNode, &RunKernelOnly}) {
    ExpectError(run(BnGradNode(true),
                    {Tensor(DT_FLOAT, TensorShape({2, 2, 3, 3})), x, c3, c3, c3, r3}, "CPU:0"),
                Code::kInvalidArgument, "must have the same shape");
    ExpectError(run(BnGradNode(true), {x, x, c3, MakeVector<float>({0, 0}), c3, r3}, "CPU:0"),
                Code::kInvalidArgument, "reserve_space_1");
    ExpectError(run(BnGradNode(false), {x, x, c3, c3, MakeVector<float>({0, 0}), r3}, "CPU:0"),
                Code::kInvalidArgument, "reserve_space_2");
    ExpectError(run(BnGradNode(true, "NCDHW"), {x, x, c3, c3, c3, r3}, "CPU:0"),
                Code::kInvalidArgument, "rank 5");
  }
}

TEST(BatchNormShapes, ForwardOutputsFollowTheChannelDimension) {
  auto out = InferShapes(BnNode(true), {P({-1, 4, 4, -1}), P({3}), P({-1}), P({0}), P({0})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], P({-1, 4, 4, 3}));
  for (int i = 1; i <= 4; ++i) EXPECT_EQ((*out)[i], P({3})) << i;
  EXPECT_TRUE((*out)[5].unknown_rank());
  out = InferShapes(BnNode(false, "NCHW"), {P({2, -1, 5, 5}), P(), P({7}), P({-1}), P()});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], P({2, 7, 5, 5}));
  out = InferShapes(BnNode(false, "NCDHW"), {P(), P({4}), P(), P(), P()});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], P({-1, 4, -1, -1, -1}));
  // Inference checks mean and variance; training (factor 1) ignores them.
  EXPECT_EQ(
      InferShapes(BnNode(false), {P({2, 4, 4, 3}), P({3}), P({3}), P({4}), P({3})}).status().code(),
      Code::kInvalidArgument);
  EXPECT_EQ(InferShapes(BnNode(true, "NHWC", 1e-3f, 0.5f),
                        {P({2, 4, 4, 3}), P({3}), P({3}), P({4}), P({3})})
                .status()
                .code(),
            Code::kInvalidArgument);
  EXPECT_TRUE(InferShapes(BnNode(true), {P({2, 4, 4, 3}), P({3}), P({3}), P({4}), P({3})}).ok());
  EXPECT_EQ(InferShapes(BnNode(true), {P({2, 4, 3}), P(), P(), P(), P()}).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(InferShapes(BnNode(true), {P({2, 4, 4, 3}), P({3, 1}), P(), P(), P()}).status().code(),
            Code::kInvalidArgument);
}

TEST(BatchNormShapes, GradOutputsAreXAndTwoChannelVectors) {
  auto out =
      InferShapes(BnGradNode(true), {P({2, 4, 4, -1}), P({-1, -1, -1, -1}), P({3}), P(), P(), P()});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], P({2, 4, 4, 3}));
  EXPECT_EQ((*out)[1], P({3}));
  EXPECT_EQ((*out)[2], P({3}));
  EXPECT_EQ((*out)[3], P({0}));
  EXPECT_EQ((*out)[4], P({0}));
  EXPECT_EQ(InferShapes(BnGradNode(true), {P({2, 4, 4, 3}), P({2, 4, 4, 2}), P(), P(), P(), P()})
                .status()
                .code(),
            Code::kInvalidArgument);
  EXPECT_EQ(InferShapes(BnGradNode(true, "NCHW"), {P({2, 4, 4, 3}), P(), P(), P({3}), P(), P()})
                .status()
                .code(),
            Code::kInvalidArgument);
}

TEST(OpsNnPlugin, OwnsTheBatchNormOps) {
  for (const char* op : {"FusedBatchNormV3", "FusedBatchNormGradV3"}) {
    const OpRegistration* reg = TestRuntime().ops().LookUp(op);
    ASSERT_NE(reg, nullptr) << op;
    EXPECT_EQ(reg->registered_by, "ops-nn") << op;
  }
}

}  // namespace
}  // namespace cfx
