// Automatic differentiation: every standard gradient against finite differences
// (ComputeGradientError, in double), and AddSymbolicGradients' rules (unused outputs,
// StopGradient, PreventGradient, missing gradients, integer inputs, grad_ys, unreachable xs).
#include <functional>
#include <random>

#include <gtest/gtest.h>

#include "conflux/cc/client_session.h"
#include "conflux/cc/gradient_checker.h"
#include "conflux/cc/ops/standard_ops.h"
#include "kernel_test_util.h"

namespace cfx {
namespace {

using test::TestRuntime;

// Values in [lo, hi], away from kinks when `lo` > 0.
Tensor Random(TensorShape shape, double lo = -1, double hi = 1, unsigned seed = 7) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  Tensor t(DT_DOUBLE, shape);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.at<double>(i) = dist(gen);
  return t;
}

struct Case {
  const char* name;
  std::vector<Tensor> inputs;
  std::function<Output(const Scope&, const std::vector<Output>&)> build;
  // Central differences in double with this step: truncation error near 1e-10 times the third
  // derivative, rounding error near 1e-11; far below the bound.
  double delta = 1e-5;
  double bound = 1e-6;
};

double GradientError(const Case& c) {
  Scope root = Scope::NewRootScope(&TestRuntime());
  std::vector<Output> xs;
  for (size_t i = 0; i < c.inputs.size(); ++i) xs.push_back(ops::Placeholder(root, DT_DOUBLE));
  Output y = c.build(root, xs);
  auto err = ComputeGradientError(root, &TestRuntime(), xs, c.inputs, {y}, c.delta);
  EXPECT_TRUE(err.ok()) << c.name << ": " << err.status();
  return err.ok() ? *err : 1e9;
}

using X = std::vector<Output>;

// An int32 paddings matrix [rank, 2] of (before, after) pairs.
Output Paddings(const Scope& s, const std::vector<int32_t>& pairs) {
  Tensor t(DT_INT32, TensorShape({static_cast<int64_t>(pairs.size() / 2), 2}));
  for (size_t i = 0; i < pairs.size(); ++i) t.at<int32_t>(static_cast<int64_t>(i)) = pairs[i];
  return ops::Const(s, t);
}

std::vector<Case> Cases() {
  const Tensor m23 = Random({2, 3}), m3 = Random({3}, -1, 1, 8), p23 = Random({2, 3}, 0.5, 2, 9);
  const Tensor m32 = Random({3, 2}, -1, 1, 10), m22 = Random({2, 2}, -1, 1, 11);
  return {
      {"AddBroadcast", {m23, m3}, [](const Scope& s, const X& x) { return ops::Add(s, x[0], x[1]); }},
      {"AddV2", {m23, m23}, [](const Scope& s, const X& x) { return ops::AddV2(s, x[0], x[1]); }},
      {"AddN", {m23, p23, Random({2, 3}, -1, 1, 12)},
       [](const Scope& s, const X& x) { return ops::AddN(s, {x[0], x[1], x[2]}); }},
      // Intermediate values (whose buffers the sum may take over) and inputs given twice.
      {"AddNOfIntermediatesAndRepeats", {m23, p23},
       [](const Scope& s, const X& x) {
         return ops::AddN(s, {ops::Mul(s, x[0], x[1]), ops::Sin(s, x[0]), x[1],
                              ops::Square(s, x[1]), x[0]});
       }},
      {"SubBroadcast", {m3, m23}, [](const Scope& s, const X& x) { return ops::Sub(s, x[0], x[1]); }},
      {"MulBroadcast", {m23, m3}, [](const Scope& s, const X& x) { return ops::Mul(s, x[0], x[1]); }},
      {"RealDiv", {m23, p23}, [](const Scope& s, const X& x) { return ops::RealDiv(s, x[0], x[1]); }},
      // x / y in (2.09, 2.8): floor(x / y) = 2 around every point, away from the jumps.
      {"FloorMod", {Random({2, 3}, 2.2, 2.8, 21), Random({2, 3}, 1, 1.05, 22)},
       [](const Scope& s, const X& x) { return ops::FloorMod(s, x[0], x[1]); }},
      // Points right of the origin (away from the jump at negative x); x broadcast along rows.
      {"Atan2", {m23, Random({3}, 0.5, 2, 30)},
       [](const Scope& s, const X& x) { return ops::Atan2(s, x[0], x[1]); }},
      {"Xdivy", {m23, p23}, [](const Scope& s, const X& x) { return ops::Xdivy(s, x[0], x[1]); }},
      {"Xlogy", {m3, p23}, [](const Scope& s, const X& x) { return ops::Xlogy(s, x[0], x[1]); }},
      {"SquaredDifference", {m23, m3},
       [](const Scope& s, const X& x) { return ops::SquaredDifference(s, x[0], x[1]); }},
      {"Maximum", {m23, Random({2, 3}, -1, 1, 99)},
       [](const Scope& s, const X& x) { return ops::Maximum(s, x[0], x[1]); }},
      {"Minimum", {m23, Random({2, 3}, -1, 1, 98)},
       [](const Scope& s, const X& x) { return ops::Minimum(s, x[0], x[1]); }},
      {"Pow", {p23, m23}, [](const Scope& s, const X& x) { return ops::Pow(s, x[0], x[1]); }},
      {"Neg", {m23}, [](const Scope& s, const X& x) { return ops::Neg(s, x[0]); }},
      {"Square", {m23}, [](const Scope& s, const X& x) { return ops::Square(s, x[0]); }},
      {"Exp", {m23}, [](const Scope& s, const X& x) { return ops::Exp(s, x[0]); }},
      {"Log", {p23}, [](const Scope& s, const X& x) { return ops::Log(s, x[0]); }},
      {"Sin", {m23}, [](const Scope& s, const X& x) { return ops::Sin(s, x[0]); }},
      {"Cos", {m23}, [](const Scope& s, const X& x) { return ops::Cos(s, x[0]); }},
      {"Sqrt", {p23}, [](const Scope& s, const X& x) { return ops::Sqrt(s, x[0]); }},
      {"Rsqrt", {p23}, [](const Scope& s, const X& x) { return ops::Rsqrt(s, x[0]); }},
      {"Reciprocal", {p23}, [](const Scope& s, const X& x) { return ops::Reciprocal(s, x[0]); }},
      {"Sigmoid", {m23}, [](const Scope& s, const X& x) { return ops::Sigmoid(s, x[0]); }},
      {"Tanh", {m23}, [](const Scope& s, const X& x) { return ops::Tanh(s, x[0]); }},
      {"Relu", {m23}, [](const Scope& s, const X& x) { return ops::Relu(s, x[0]); }},
      {"Abs", {m23}, [](const Scope& s, const X& x) { return ops::Abs(s, x[0]); }},
      {"Sign", {m23}, [](const Scope& s, const X& x) { return ops::Sign(s, x[0]); }},
      {"EnsureShape", {m23},
       [](const Scope& s, const X& x) {
         return ops::Square(s, ops::EnsureShape(s, x[0], PartialTensorShape({-1, 3})));
       }},
      {"IdentityN", {m23, p23},
       [](const Scope& s, const X& x) {
         auto both = ops::IdentityN(s, {x[0], x[1]});
         return ops::Mul(s, both.output[0], both.output[1]);
       }},
      {"Erf", {m23}, [](const Scope& s, const X& x) { return ops::Erf(s, x[0]); }},
      {"Erfc", {m23}, [](const Scope& s, const X& x) { return ops::Erfc(s, x[0]); }},
      // Segments 0 (rows 0-1), 2 (rows 2-4); segment 1 is empty.
      {"SegmentSum", {Random({5, 3}, -1, 1, 50)},
       [](const Scope& s, const X& x) { return ops::SegmentSum(s, x[0], {0, 0, 2, 2, 2}); }},
      {"SegmentMean", {Random({5, 3}, -1, 1, 51)},
       [](const Scope& s, const X& x) { return ops::SegmentMean(s, x[0], {0, 0, 2, 2, 2}); }},
      {"SegmentMax", {Random({5, 3}, -1, 1, 52)},
       [](const Scope& s, const X& x) { return ops::SegmentMax(s, x[0], {0, 0, 2, 2, 2}); }},
      {"SegmentMin", {Random({5, 3}, -1, 1, 53)},
       [](const Scope& s, const X& x) { return ops::SegmentMin(s, x[0], {0, 0, 2, 2, 2}); }},
      {"Log1p", {p23}, [](const Scope& s, const X& x) { return ops::Log1p(s, x[0]); }},
      {"Expm1", {m23}, [](const Scope& s, const X& x) { return ops::Expm1(s, x[0]); }},
      {"Tan", {m23}, [](const Scope& s, const X& x) { return ops::Tan(s, x[0]); }},
      {"Asin", {Random({2, 3}, -0.9, 0.9, 40)},
       [](const Scope& s, const X& x) { return ops::Asin(s, x[0]); }},
      {"Acos", {Random({2, 3}, -0.9, 0.9, 41)},
       [](const Scope& s, const X& x) { return ops::Acos(s, x[0]); }},
      {"Atan", {m23}, [](const Scope& s, const X& x) { return ops::Atan(s, x[0]); }},
      {"Sinh", {m23}, [](const Scope& s, const X& x) { return ops::Sinh(s, x[0]); }},
      {"Cosh", {m23}, [](const Scope& s, const X& x) { return ops::Cosh(s, x[0]); }},
      {"Asinh", {m23}, [](const Scope& s, const X& x) { return ops::Asinh(s, x[0]); }},
      {"Acosh", {Random({2, 3}, 1.2, 3, 42)},
       [](const Scope& s, const X& x) { return ops::Acosh(s, x[0]); }},
      {"Atanh", {Random({2, 3}, -0.9, 0.9, 43)},
       [](const Scope& s, const X& x) { return ops::Atanh(s, x[0]); }},
      {"Lgamma", {p23}, [](const Scope& s, const X& x) { return ops::Lgamma(s, x[0]); }},
      {"Erfinv", {Random({2, 3}, -0.9, 0.9, 44)},
       [](const Scope& s, const X& x) { return ops::Erfinv(s, x[0]); }},
      {"Ndtri", {Random({2, 3}, 0.05, 0.95, 45)},
       [](const Scope& s, const X& x) { return ops::Ndtri(s, x[0]); }},
      {"MatMul", {m23, m32}, [](const Scope& s, const X& x) { return ops::MatMul(s, x[0], x[1]); }},
      {"MatMulTA", {m32, m32},
       [](const Scope& s, const X& x) {
         return ops::MatMul(s, x[0], x[1], ops::MatMulAttrs().TransposeA(true));
       }},
      {"MatMulTB", {m23, m23},
       [](const Scope& s, const X& x) {
         return ops::MatMul(s, x[0], x[1], ops::MatMulAttrs().TransposeB(true));
       }},
      {"MatMulTATB", {m32, m23},
       [](const Scope& s, const X& x) {
         return ops::MatMul(s, x[0], x[1], ops::MatMulAttrs().TransposeA(true).TransposeB(true));
       }},
      {"SumAxis0", {m23}, [](const Scope& s, const X& x) { return ops::Sum(s, x[0], 0); }},
      {"SumNegativeAxisKeepDims", {m23},
       [](const Scope& s, const X& x) {
         return ops::Sum(s, x[0], -1, ops::SumAttrs().KeepDims(true));
       }},
      {"SumAll", {m23}, [](const Scope& s, const X& x) { return ops::Sum(s, x[0], {0, 1}); }},
      {"Mean", {m23}, [](const Scope& s, const X& x) { return ops::Mean(s, x[0], 1); }},
      {"Max", {m23}, [](const Scope& s, const X& x) { return ops::Max(s, x[0], 1); }},
      {"Min", {m23}, [](const Scope& s, const X& x) { return ops::Min(s, x[0], {0}); }},
      {"CastRoundTrip", {m23},
       [](const Scope& s, const X& x) { return ops::Cast(s, ops::Cast(s, x[0], DT_FLOAT), DT_DOUBLE); },
       // Through float: the rounding of each value (about 6e-8) over a step of 2e-2.
       1e-2, 1e-5},
      {"Reshape", {m23}, [](const Scope& s, const X& x) { return ops::Reshape(s, x[0], {3, 2}); }},
      {"ExpandDims", {m23}, [](const Scope& s, const X& x) { return ops::ExpandDims(s, x[0], 1); }},
      {"Squeeze", {Random({2, 1, 3})}, [](const Scope& s, const X& x) { return ops::Squeeze(s, x[0]); }},
      {"Transpose", {m23}, [](const Scope& s, const X& x) { return ops::Transpose(s, x[0], {1, 0}); }},
      {"ConcatV2", {m23, m22},
       [](const Scope& s, const X& x) { return ops::ConcatV2(s, {x[0], x[1]}, -1); }},
      {"Pack", {m23, m23}, [](const Scope& s, const X& x) { return ops::Pack(s, {x[0], x[1]}); }},
      {"UnpackOnePartUsed", {m23},
       [](const Scope& s, const X& x) { return ops::Unpack(s, x[0], 2).output[1]; }},
      {"BroadcastTo", {m3},
       [](const Scope& s, const X& x) { return ops::BroadcastTo(s, x[0], {2, 3}); }},
      {"SelectV2", {m23, m3},
       [](const Scope& s, const X& x) {
         return ops::SelectV2(s, ops::Greater(s, x[0], 0.0), x[0], x[1]);
       }},
      {"SelectRows", {m23, p23},
       [](const Scope& s, const X& x) {
         // A vector condition picks whole rows (Select, not SelectV2's broadcasting).
         Tensor rows(DT_BOOL, TensorShape({2}));
         rows.data<bool>()[0] = true;
         rows.data<bool>()[1] = false;
         return ops::Select(s, ops::Const(s, rows), x[0], x[1]);
       }},
      {"Split", {m23},
       [](const Scope& s, const X& x) {
         auto parts = ops::Split(s, 1, x[0], 3);
         return ops::AddV2(s, ops::Mul(s, parts.output[0], parts.output[2]), parts.output[1]);
       }},
      {"SplitOnePieceUsed", {m23},
       [](const Scope& s, const X& x) { return ops::Split(s, 0, x[0], 2).output[1]; }},
      {"GatherV2RepeatedRows", {m32},
       [](const Scope& s, const X& x) { return ops::GatherV2(s, x[0], {2, 0, 2}, 0); }},
      {"Pad", {m23},
       [](const Scope& s, const X& x) { return ops::Pad(s, x[0], Paddings(s, {1, 2, 0, 1})); }},
      {"PadV2", {m23},
       [](const Scope& s, const X& x) {
         return ops::PadV2(s, x[0], Paddings(s, {2, 0, 1, 1}), 0.5);
       }},
      {"MirrorPadReflect", {Random({3, 4}, -1, 1, 13)},
       [](const Scope& s, const X& x) {
         return ops::MirrorPad(s, x[0], Paddings(s, {2, 1, 1, 3}), "REFLECT");
       }},
      {"MirrorPadSymmetric", {Random({2, 3, 2}, -1, 1, 14)},
       [](const Scope& s, const X& x) {
         return ops::MirrorPad(s, x[0], Paddings(s, {1, 2, 3, 0, 0, 2}), "SYMMETRIC");
       }},
      {"MirrorPadGrad", {Random({6, 7}, -1, 1, 15)},
       [](const Scope& s, const X& x) {
         return ops::MirrorPadGrad(s, x[0], Paddings(s, {2, 1, 1, 2}), "REFLECT");
       }},
      // Distinct values: the k largest are the same around every point.
      {"TopKV2", {Random({3, 5}, -1, 1, 23)},
       [](const Scope& s, const X& x) { return ops::TopKV2(s, x[0], 3).values; }},
      {"ReverseV2", {Random({2, 3, 2}, -1, 1, 24)},
       [](const Scope& s, const X& x) {
         return ops::Mul(s, ops::ReverseV2(s, x[0], {0, -1}), x[0]);
       }},
      {"SplitV", {Random({2, 5}, -1, 1, 25)},
       [](const Scope& s, const X& x) {
         auto parts = ops::SplitV(s, x[0], {1, -1, 2}, 1, 3);
         return ops::Mul(s, parts.output[1], parts.output[2]);  // piece 0 gets zeros
       }},
      {"Cumsum", {Random({2, 4}, -1, 1, 26)},
       [](const Scope& s, const X& x) { return ops::Mul(s, ops::Cumsum(s, x[0], 1), x[0]); }},
      {"CumsumExclusiveReverse", {Random({3, 2}, -1, 1, 27)},
       [](const Scope& s, const X& x) {
         return ops::Cumsum(s, x[0], 0, ops::CumsumAttrs().Exclusive(true).Reverse(true));
       }},
      {"Cumprod", {Random({2, 4}, 0.5, 2, 28)},
       [](const Scope& s, const X& x) { return ops::Cumprod(s, x[0], -1); }},
      {"CumprodExclusiveReverseNegative", {Random({4, 2}, -2, -0.5, 29)},
       [](const Scope& s, const X& x) {
         return ops::Cumprod(s, x[0], 0, ops::CumprodAttrs().Exclusive(true).Reverse(true));
       }},
      {"GatherNdRepeatedRows", {m32},
       [](const Scope& s, const X& x) {
         return ops::GatherNd(s, x[0], test::MakeTensor<int32_t>({3, 1}, {2, 0, 2}));
       }},
      {"GatherNdElements", {m32},
       [](const Scope& s, const X& x) {
         return ops::GatherNd(s, x[0], test::MakeTensor<int64_t>({2, 2}, {0, 1, 2, 0}));
       }},
      {"ScatterNd", {m32},
       [](const Scope& s, const X& x) {
         Tensor indices = test::MakeTensor<int32_t>({3, 1}, {1, 3, 1});
         return ops::Square(s, ops::ScatterNd(s, indices, x[0], {4, 2}));
       }},
      {"TensorScatterUpdate", {Random({4, 2}, -1, 1, 31), m22},
       [](const Scope& s, const X& x) {
         Tensor indices = test::MakeTensor<int32_t>({2, 1}, {3, 1});
         return ops::Mul(s, ops::TensorScatterUpdate(s, x[0], indices, x[1]), x[0]);
       }},
      {"Roll", {Random({3, 4}, -1, 1, 37)},
       [](const Scope& s, const X& x) {
         return ops::Mul(s, ops::Roll(s, x[0], {1, -5}, {0, 1}), Random({3, 4}, -1, 1, 38));
       }},
      // Row 1 picked twice: its updates' gradients are both that row of dy.
      {"TensorScatterAdd", {Random({4, 2}, -1, 1, 33), Random({3, 2}, -1, 1, 34)},
       [](const Scope& s, const X& x) {
         Tensor indices = test::MakeTensor<int32_t>({3, 1}, {1, 3, 1});
         return ops::Square(s, ops::TensorScatterAdd(s, x[0], indices, x[1]));
       }},
      {"TensorScatterSub", {Random({4, 2}, -1, 1, 35), Random({3, 2}, -1, 1, 36)},
       [](const Scope& s, const X& x) {
         Tensor indices = test::MakeTensor<int32_t>({3, 1}, {1, 3, 1});
         return ops::Square(s, ops::TensorScatterSub(s, x[0], indices, x[1]));
       }},
      {"MatrixBandPart", {Random({2, 3, 4}, -1, 1, 32)},
       [](const Scope& s, const X& x) {
         return ops::Mul(s, ops::MatrixBandPart(s, x[0], int64_t{1}, int64_t{0}), x[0]);
       }},
      {"SpaceToDepth", {Random({1, 4, 2, 3}, -1, 1, 33)},
       [](const Scope& s, const X& x) {
         return ops::Square(s, ops::SpaceToDepth(s, x[0], 2));
       }},
      {"DepthToSpace", {Random({1, 2, 1, 8}, -1, 1, 34)},
       [](const Scope& s, const X& x) {
         return ops::Mul(s, ops::DepthToSpace(s, x[0], 2), ops::DepthToSpace(s, x[0], 2));
       }},
      {"EinsumMatMul", {m23, m32},
       [](const Scope& s, const X& x) { return ops::Einsum(s, {x[0], x[1]}, "ij,jk->ki"); }},
      {"EinsumAttention", {Random({2, 3, 2, 2}, -1, 1, 35), Random({2, 4, 2, 2}, -1, 1, 36)},
       [](const Scope& s, const X& x) { return ops::Einsum(s, {x[0], x[1]}, "bqhd,bkhd->bhqk"); }},
      {"EinsumSummedInOneInput", {m23, m3},
       [](const Scope& s, const X& x) {
         return ops::Square(s, ops::Einsum(s, {x[0], x[1]}, "ij,k->ik"));
       }},
      {"EinsumUnary", {Random({2, 3, 4}, -1, 1, 37)},
       [](const Scope& s, const X& x) { return ops::Square(s, ops::Einsum(s, {x[0]}, "ijk->ki")); }},
      {"Chain", {m23, m32},
       [](const Scope& s, const X& x) {
         Output h = ops::Tanh(s, ops::MatMul(s, x[0], x[1]));
         return ops::Mean(s, ops::Square(s, h), {0, 1});
       }},
  };
}

class StandardGradient : public ::testing::TestWithParam<size_t> {};

TEST_P(StandardGradient, MatchesFiniteDifferences) {
  const Case c = Cases()[GetParam()];
  EXPECT_LT(GradientError(c), c.bound) << c.name;
}

INSTANTIATE_TEST_SUITE_P(AllOps, StandardGradient, ::testing::Range<size_t>(0, Cases().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return std::string(Cases()[info.param].name);
                         });

TEST(StandardGradients, LogicalReductionsHaveNoGradient) {
  for (const char* op : {"All", "Any"}) EXPECT_TRUE(StandardGradients().IsNoGradient(op)) << op;
}

TEST(StandardGradients, RoundingClassifyingAndOneHotHaveNoGradient) {
  for (const char* op : {"Round", "Rint", "IsFinite", "IsNan", "IsInf", "FloorDiv", "TruncateDiv",
                         "OneHot"})
    EXPECT_TRUE(StandardGradients().IsNoGradient(op)) << op;
}

// Einsum's gradient takes neither "..." nor a diagonal: an error naming the node.
TEST(StandardGradients, EinsumWithEllipsisIsUnimplementedNamingTheNode) {
  Scope root = Scope::NewRootScope(&TestRuntime());
  Output x = ops::Placeholder(root, DT_DOUBLE);
  Output y = ops::Einsum(root.WithOpName("contract"), {x, x}, "...ij,...jk->...ik");
  std::vector<Output> grads;
  Status s = AddSymbolicGradients(root, {y}, {x}, &grads);
  EXPECT_EQ(s.code(), Code::kUnimplemented) << s;
  EXPECT_NE(s.message().find("contract"), std::string::npos) << s;
}

TEST(AddSymbolicGradients, StopGradientCutsThePath) {
  Scope root = Scope::NewRootScope(&TestRuntime());
  Output x = ops::Placeholder(root, DT_DOUBLE);
  // y = x * stop(x): dy/dx = stop(x) = x, not 2x.
  Output y = ops::Mul(root, x, ops::StopGradient(root, x));
  std::vector<Output> g;
  ASSERT_OK(AddSymbolicGradients(root, {y}, {x}, &g));
  ClientSession session(root, &TestRuntime());
  std::vector<Tensor> out;
  ASSERT_OK(session.Run({{x, 3.0}}, g, &out));
  EXPECT_DOUBLE_EQ(out[0].at<double>(0), 3.0);
}

TEST(AddSymbolicGradients, PreventGradientIsAnErrorNamingTheNode) {
  Scope root = Scope::NewRootScope(&TestRuntime());
  Output x = ops::Placeholder(root, DT_DOUBLE);
  Output y = ops::Square(root, ops::PreventGradient(root.WithOpName("guard"), x,
                                                    ops::PreventGradientAttrs().Message("no")));
  std::vector<Output> g;
  Status s = AddSymbolicGradients(root, {y}, {x}, &g);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("PreventGradient node 'guard': no"), std::string::npos) << s;
}

TEST(AddSymbolicGradients, MissingGradientNamesTheOpAndNode) {
  Scope root = Scope::NewRootScope(&TestRuntime());
  Output x = ops::Placeholder(root, DT_DOUBLE);
  Output y = ops::MatrixDeterminant(root.WithOpName("det"), x);
  std::vector<Output> g;
  Status s = AddSymbolicGradients(root, {y}, {x}, &g);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("no gradient is defined for op MatrixDeterminant (node 'det')"),
            std::string::npos)
      << s;
}

TEST(AddSymbolicGradients, UnreachedXGetsZerosAndGradYsWeight) {
  Scope root = Scope::NewRootScope(&TestRuntime());
  Output a = ops::Placeholder(root, DT_DOUBLE);
  Output b = ops::Placeholder(root, DT_DOUBLE);
  Output y = ops::Mul(root, a, 2.0);
  Output w = ops::Placeholder(root, DT_DOUBLE);
  std::vector<Output> g;
  ASSERT_OK(AddSymbolicGradients(root, {y}, {a, b}, {w}, &g));
  ClientSession session(root, &TestRuntime());
  std::vector<Tensor> out;
  ASSERT_OK(session.Run({{a, {1.0, 2.0}}, {b, {5.0, 6.0, 7.0}}, {w, {10.0, 100.0}}}, g, &out));
  EXPECT_DOUBLE_EQ(out[0].at<double>(0), 20.0);
  EXPECT_DOUBLE_EQ(out[0].at<double>(1), 200.0);
  ASSERT_EQ(out[1].num_elements(), 3);
  EXPECT_DOUBLE_EQ(out[1].at<double>(2), 0.0);
}

TEST(AddSymbolicGradients, IntegerInputsGetNoGradientAndSharedPathsSum) {
  Scope root = Scope::NewRootScope(&TestRuntime());
  Output x = ops::Placeholder(root, DT_DOUBLE);
  Output n = ops::Placeholder(root, DT_INT32);
  // y = x * cast(n) + x^2: dy/dx = n + 2x; the int input only scales.
  Output y = ops::AddV2(root, ops::Mul(root, x, ops::Cast(root, n, DT_DOUBLE)),
                       ops::Square(root, x));
  std::vector<Output> g;
  ASSERT_OK(AddSymbolicGradients(root, {y}, {x}, &g));
  ClientSession session(root, &TestRuntime());
  std::vector<Tensor> out;
  ASSERT_OK(session.Run({{x, 1.5}, {n, 4}}, g, &out));
  EXPECT_DOUBLE_EQ(out[0].at<double>(0), 4 + 3.0);
}

}  // namespace
}  // namespace cfx
