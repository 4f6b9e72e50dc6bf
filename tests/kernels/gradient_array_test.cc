// The array ops that gradient functions build on, on CPU through the kernel harness:
// BroadcastGradientArgs (TensorFlow's BCast examples, and random shape pairs checked by summing
// a broadcast gradient over the dimensions it names), BroadcastTo, InvertPermutation,
// StopGradient, PreventGradient and UnsortedSegmentSum against element-by-element references,
// their shape functions and their errors.
#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "array_test_util.h"
#include "conflux/kernel_runner.h"

namespace cfx {
namespace {

using test::Type;

using test::Iota;
using test::MakeNode;
using test::MakeScalar;
using test::MakeVector;
using test::RunKernelOnly;
using test::RunNode;
using test::RunNodeOk;
using Dims = std::vector<int64_t>;

// ---- BroadcastGradientArgs ------------------------------------------------------------------

template <typename T>
std::pair<Dims, Dims> GradientArgs(const Dims& s0, const Dims& s1) {
  const DataType t = test::DataTypeOf<T>();
  auto out = RunNode(MakeNode("BroadcastGradientArgs", 2, {{"T", Type(t)}}),
                     {MakeVector<T>(std::vector<T>(s0.begin(), s0.end())),
                      MakeVector<T>(std::vector<T>(s1.begin(), s1.end()))});
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return {};
  std::pair<Dims, Dims> r;
  for (int k = 0; k < 2; ++k) {
    const std::vector<T> v = test::Values<T>((*out)[k]);
    (k == 0 ? r.first : r.second).assign(v.begin(), v.end());
  }
  return r;
}

TEST(BroadcastGradientArgs, TensorFlowsExamples) {
  struct Example {
    Dims s0, s1, r0, r1;
  };
  // From TensorFlow's BCast tests (grad_x_reduce_idx, grad_y_reduce_idx).
  const std::vector<Example> examples = {
      {{11, 7, 5, 3, 2}, {11, 7, 5, 3, 2}, {}, {}},
      {{1, 1}, {1}, {0, 1}, {0, 1}},
      {{1}, {1, 1}, {0, 1}, {0, 1}},
      {{11, 7, 5, 3, 2}, {1}, {}, {0, 1, 2, 3, 4}},
      {{1}, {11, 7, 5, 3, 2}, {0, 1, 2, 3, 4}, {}},
      {{11, 7, 5, 3, 2, 1}, {1}, {5}, {0, 1, 2, 3, 4, 5}},
      {{11, 7, 5, 3, 2}, {3, 2}, {}, {0, 1, 2}},
      {{11, 7, 5, 3, 2}, {3, 1}, {}, {0, 1, 2, 4}},
      {{3, 1}, {11, 7, 5, 3, 2}, {0, 1, 2, 4}, {}},
      {{11, 7, 5, 3, 2}, {7, 5, 1, 1}, {}, {0, 3, 4}},
      {{11, 1, 5, 1, 2}, {7, 1, 3, 1}, {1, 3}, {0, 2, 4}},
      {{2, 0, 5}, {5}, {}, {0, 1}},
      {{2, 0, 3, 0, 5}, {3, 1, 5}, {}, {0, 1, 3}},
      {{3, 1, 5}, {2, 0, 3, 0, 5}, {0, 1, 3}, {}},
  };
  for (const Example& e : examples) {
    SCOPED_TRACE(::testing::PrintToString(e.s0) + " vs " + ::testing::PrintToString(e.s1));
    EXPECT_EQ(GradientArgs<int32_t>(e.s0, e.s1), std::make_pair(e.r0, e.r1));
    EXPECT_EQ(GradientArgs<int64_t>(e.s0, e.s1), std::make_pair(e.r0, e.r1));
  }
}

// out[j] = sum over the elements i of the broadcast of x's shape to `z`'s that land on x's j:
// the gradient of x in z = x op y for dz = z and d(z_i)/d(x_j) = 1.
Tensor ReduceToShape(const Tensor& z, const Dims& x_dims) {
  const TensorShape x_shape(x_dims);
  Tensor out(DT_DOUBLE, x_shape);
  std::fill(out.data<double>(), out.data<double>() + out.num_elements(), 0.0);
  const int offset = z.rank() - x_shape.rank();
  for (int64_t i = 0; i < z.num_elements(); ++i) {
    const Dims index = test::MultiIndex(i, z.shape());
    Dims x_index(x_dims.size());
    for (size_t d = 0; d < x_dims.size(); ++d) x_index[d] = x_dims[d] == 1 ? 0 : index[offset + d];
    out.data<double>()[test::FlatIndex(x_index, x_shape)] += z.data<double>()[i];
  }
  return out;
}

// Sum(z, axes) reshaped to `dims`: what a gradient function does with r0 and r1.
Tensor SumAndReshape(const Tensor& z, const Dims& axes, const Dims& dims) {
  Tensor sum = RunNodeOk(MakeNode("Sum", 2, {{"T", Type(DT_DOUBLE)}, {"Tidx", Type(DT_INT64)}}),
                         {z, MakeVector<int64_t>(axes)});
  return RunNodeOk(MakeNode("Reshape", 2, {{"T", Type(DT_DOUBLE)}, {"Tshape", Type(DT_INT64)}}),
                   {sum, MakeVector<int64_t>(dims)});
}

TEST(BroadcastGradientArgs, ReducingOverTheResultGivesEachOperandsGradient) {
  std::mt19937 rng(7);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  for (int trial = 0; trial < 200; ++trial) {
    // A broadcast shape, and two operands: suffixes of it with some dims replaced by 1.
    Dims z_dims(pick(5));
    for (int64_t& d : z_dims) d = pick(4) + (pick(10) == 0 ? 0 : 1);  // 0 to 4, rarely 0
    auto operand = [&] {
      Dims s(z_dims.begin() + pick(static_cast<int>(z_dims.size()) + 1), z_dims.end());
      for (int64_t& d : s)
        if (pick(3) == 0) d = 1;
      return s;
    };
    const Dims s0 = operand(), s1 = operand();
    SCOPED_TRACE(::testing::PrintToString(s0) + " vs " + ::testing::PrintToString(s1));
    // z's shape is the broadcast of s0 and s1 (a dim where both are 1 stays 1).
    Dims shape(std::max(s0.size(), s1.size()), 1);
    for (size_t i = 0; i < s0.size(); ++i) shape[shape.size() - s0.size() + i] = s0[i];
    for (size_t i = 0; i < s1.size(); ++i) {
      int64_t& d = shape[shape.size() - s1.size() + i];
      if (d == 1) d = s1[i];
    }
    Tensor z(DT_DOUBLE, TensorShape(shape));
    for (int64_t i = 0; i < z.num_elements(); ++i) z.data<double>()[i] = pick(100) - 50;
    const auto [r0, r1] = GradientArgs<int32_t>(s0, s1);
    EXPECT_TRUE(std::is_sorted(r0.begin(), r0.end()));
    EXPECT_TRUE(std::is_sorted(r1.begin(), r1.end()));
    test::ExpectTensorEqual(ReduceToShape(z, s0), SumAndReshape(z, r0, s0));
    test::ExpectTensorEqual(ReduceToShape(z, s1), SumAndReshape(z, r1, s1));
  }
}

TEST(BroadcastGradientArgs, Errors) {
  NodeDef n = MakeNode("BroadcastGradientArgs", 2, {{"T", Type(DT_INT32)}});
  test::ExpectError(RunNode(n, {MakeVector<int32_t>({5, 3, 2}), MakeVector<int32_t>({3})}),
                    Code::kInvalidArgument, "Incompatible shapes: [5,3,2] vs. [3]");
  test::ExpectError(
      RunKernelOnly(n, {MakeVector<int32_t>({5, 3, 2}), MakeVector<int32_t>({10, 1, 1})}),
      Code::kInvalidArgument, "Incompatible shapes");
  test::ExpectError(RunKernelOnly(n, {MakeVector<int32_t>({2, -1}), MakeVector<int32_t>({2})}),
                    Code::kInvalidArgument, "s0[1] = -1 must be >= 0");
  test::ExpectError(RunKernelOnly(n, {MakeScalar<int32_t>(2), MakeVector<int32_t>({2})}),
                    Code::kInvalidArgument, "s0 must be a vector");
  test::ExpectError(RunNode(n, {MakeScalar<int32_t>(2), MakeVector<int32_t>({2})}),
                    Code::kInvalidArgument, "rank");
}

// ---- BroadcastTo ----------------------------------------------------------------------------

template <typename T>
Tensor BroadcastReference(const Tensor& in, const Dims& shape) {
  Tensor out(in.dtype(), TensorShape(shape));
  const int offset = static_cast<int>(shape.size()) - in.rank();
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    const Dims index = test::MultiIndex(i, out.shape());
    Dims source(in.rank());
    for (int d = 0; d < in.rank(); ++d) source[d] = in.dim(d) == 1 ? 0 : index[offset + d];
    out.at<T>(i) = in.at<T>(test::FlatIndex(source, in.shape()));
  }
  return out;
}

template <typename T>
class BroadcastToTyped : public ::testing::Test {};
TYPED_TEST_SUITE(BroadcastToTyped, test::ArrayElementTypes);

TYPED_TEST(BroadcastToTyped, MatchesTheReference) {
  using T = TypeParam;
  struct Spec {
    Dims input, shape;
  };
  const std::vector<Spec> specs = {{{}, {}},
                                   {{}, {2, 3}},
                                   {{3}, {4, 3}},
                                   {{4, 1}, {4, 5}},
                                   {{1, 3, 1}, {2, 3, 4}},
                                   {{2, 1, 3}, {2, 5, 3}},
                                   {{3}, {1, 3}},
                                   {{0, 1}, {2, 0, 3}},
                                   {{1}, {0}},
                                   {{1, 64}, {300, 64}},
                                   {{300, 1}, {300, 200}}};
  for (const Spec& s : specs) {
    SCOPED_TRACE(::testing::PrintToString(s.input) + " -> " + ::testing::PrintToString(s.shape));
    Tensor in = Iota<T>(TensorShape(s.input), 1);
    for (DataType tidx : {DT_INT32, DT_INT64}) {
      NodeDef n = MakeNode("BroadcastTo", 2, {{"T", Type(in.dtype())}, {"Tidx", Type(tidx)}});
      Tensor shape = tidx == DT_INT32
                         ? MakeVector<int32_t>(std::vector<int32_t>(s.shape.begin(), s.shape.end()))
                         : MakeVector<int64_t>(s.shape);
      test::ExpectTensorEqual(BroadcastReference<T>(in, s.shape), RunNodeOk(n, {in, shape}));
    }
  }
}

TEST(BroadcastTo, Errors) {
  NodeDef n = MakeNode("BroadcastTo", 2, {{"T", Type(DT_FLOAT)}});
  Tensor x = test::MakeTensor<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  for (auto run : {RunNode, RunKernelOnly}) {
    test::ExpectError(run(n, {x, MakeVector<int32_t>({2, 4})}, "CPU:0"), Code::kInvalidArgument,
                      "cannot broadcast a tensor of shape [2,3] to shape [2,4]");
    test::ExpectError(run(n, {x, MakeVector<int32_t>({3})}, "CPU:0"), Code::kInvalidArgument,
                      "the input has rank 2, more than 1");
    test::ExpectError(run(n, {test::MakeVector<float>({}), MakeVector<int32_t>({1})}, "CPU:0"),
                      Code::kInvalidArgument, "dimension 0 is 1 but the input's is 0");
  }
  test::ExpectError(RunKernelOnly(n, {x, MakeVector<int32_t>({-2, 2, 3})}), Code::kInvalidArgument,
                    "shape[0] = -2 must be >= 0");
  test::ExpectError(RunKernelOnly(n, {x, MakeScalar<int32_t>(3)}), Code::kInvalidArgument,
                    "shape must be a vector");
}

TEST(BroadcastTo, ShapeInferenceFillsWhatTheInputDetermines) {
  constexpr int64_t kU = kUnknownDim;
  NodeDef n = MakeNode("BroadcastTo", 2, {{"T", Type(DT_FLOAT)}});
  Tensor shape = MakeVector<int32_t>({-1, -1, 4});
  auto out =
      InferNodeShapes(test::TestRuntime(), n, {PartialTensorShape({3, 1}), PartialTensorShape({3})},
                      {nullptr, &shape});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], PartialTensorShape({kU, 3, 4})) << (*out)[0].ToString();
  out = InferNodeShapes(test::TestRuntime(), n, {PartialTensorShape({5}), PartialTensorShape({2})},
                        {nullptr, nullptr});
  ASSERT_TRUE(out.ok()) << out.status();
  // A shape of unknown values but known length 2: the input's 5 aligns with the last entry.
  EXPECT_EQ((*out)[0], PartialTensorShape({kU, 5})) << (*out)[0].ToString();
}

// ---- InvertPermutation, StopGradient, PreventGradient ----------------------------------------

TEST(InvertPermutation, InvertsRandomPermutations) {
  std::mt19937 rng(11);
  for (int64_t n : {0, 1, 5, 1000}) {
    std::vector<int64_t> perm(static_cast<size_t>(n));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    std::vector<int64_t> inverse(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) inverse[perm[i]] = static_cast<int64_t>(i);
    test::ExpectTensorEqual(
        MakeVector<int64_t>(inverse),
        RunNodeOk(MakeNode("InvertPermutation", 1, {{"T", Type(DT_INT64)}}), {MakeVector(perm)}));
    std::vector<int32_t> perm32(perm.begin(), perm.end()),
        inverse32(inverse.begin(), inverse.end());
    test::ExpectTensorEqual(MakeVector<int32_t>(inverse32),
                            RunNodeOk(MakeNode("InvertPermutation", 1), {MakeVector(perm32)}));
  }
}

TEST(InvertPermutation, Errors) {
  NodeDef n = MakeNode("InvertPermutation", 1);
  test::ExpectError(RunNode(n, {MakeVector<int32_t>({0, 3, 1})}), Code::kInvalidArgument,
                    "x[1] = 3 is not in [0, 3)");
  test::ExpectError(RunNode(n, {MakeVector<int32_t>({1, -1, 0})}), Code::kInvalidArgument,
                    "x[1] = -1 is not in [0, 3)");
  test::ExpectError(RunNode(n, {MakeVector<int32_t>({2, 0, 2})}), Code::kInvalidArgument,
                    "x[2] = 2 is duplicated (also x[0])");
  test::ExpectError(RunKernelOnly(n, {test::MakeTensor<int32_t>({1, 1}, {0})}),
                    Code::kInvalidArgument, "x must be a vector");
  test::ExpectError(RunNode(n, {test::MakeTensor<int32_t>({1, 1}, {0})}), Code::kInvalidArgument,
                    "rank");
}

TEST(StopAndPreventGradient, PassTheInputThrough) {
  Tensor f = test::MakeTensor<float>({2, 2}, {1, -2, 3, 4});
  Tensor s = test::MakeStringVector({"a", "bc"});
  for (const Tensor& x : {f, s}) {
    test::ExpectTensorEqual(x,
                            RunNodeOk(MakeNode("StopGradient", 1, {{"T", Type(x.dtype())}}), {x}));
    test::ExpectTensorEqual(
        x, RunNodeOk(MakeNode("PreventGradient", 1,
                              {{"T", Type(x.dtype())}, {"message", AttrValue::String("no")}}),
                     {x}));
  }
}

// ---- UnsortedSegmentSum ---------------------------------------------------------------------

// output[s, k...] = sum of data[j..., k...] over the positions j... of segment_ids (of rank
// ids_rank) holding s; negative ids add nowhere.
template <typename T>
Tensor SegmentSumReference(const Tensor& data, int ids_rank, const std::vector<int64_t>& ids,
                           int64_t num_segments) {
  TensorShape shape({num_segments});
  int64_t inner = 1;
  for (int d = ids_rank; d < data.rank(); ++d) {
    EXPECT_OK(shape.AddDim(data.dim(d)));
    inner *= data.dim(d);
  }
  Tensor out(data.dtype(), shape);
  for (int64_t i = 0; i < out.num_elements(); ++i) out.at<T>(i) = T(0);
  for (size_t j = 0; j < ids.size(); ++j) {
    if (ids[j] < 0) continue;
    for (int64_t k = 0; k < inner; ++k)
      out.at<T>(ids[j] * inner + k) += data.at<T>(static_cast<int64_t>(j) * inner + k);
  }
  return out;
}

template <typename T>
class UnsortedSegmentSumTyped : public ::testing::Test {};
using SegmentSumTypes = ::testing::Types<float, double, int32_t, int64_t>;
TYPED_TEST_SUITE(UnsortedSegmentSumTyped, SegmentSumTypes);

TYPED_TEST(UnsortedSegmentSumTyped, MatchesTheReference) {
  using T = TypeParam;
  struct Spec {
    Dims data, ids;
    int64_t num_segments;
  };
  // Vectors, rows, a matrix of ids, a scalar id, no rows, no segments, and many rows of a wide
  // inner dimension (the parallel path).
  const std::vector<Spec> specs = {
      {{7}, {7}, 3},    {{6, 4}, {6}, 10}, {{2, 3, 5}, {2, 3}, 4},  {{4, 2}, {}, 3},
      {{0, 3}, {0}, 2}, {{5, 2}, {5}, 0},  {{3000, 70}, {3000}, 40}};
  std::mt19937 rng(3);
  for (const Spec& s : specs) {
    SCOPED_TRACE(::testing::PrintToString(s.data) + " ids " + ::testing::PrintToString(s.ids));
    Tensor data = Iota<T>(TensorShape(s.data), -20);
    std::vector<int64_t> ids(static_cast<size_t>(TensorShape(s.ids).num_elements()));
    for (int64_t& id : ids)
      id = static_cast<int64_t>(rng() % static_cast<unsigned>(s.num_segments + 1)) -
           1;  // -1: dropped
    const Tensor expected =
        SegmentSumReference<T>(data, static_cast<int>(s.ids.size()), ids, s.num_segments);
    for (DataType tindices : {DT_INT32, DT_INT64}) {
      Tensor id_tensor(tindices, TensorShape(s.ids));
      for (size_t j = 0; j < ids.size(); ++j) {
        if (tindices == DT_INT32)
          id_tensor.at<int32_t>(static_cast<int64_t>(j)) = static_cast<int32_t>(ids[j]);
        else
          id_tensor.at<int64_t>(static_cast<int64_t>(j)) = ids[j];
      }
      NodeDef n = MakeNode("UnsortedSegmentSum", 3,
                           {{"T", Type(data.dtype())},
                            {"Tindices", Type(tindices)},
                            {"Tnumsegments", Type(DT_INT64)}});
      test::ExpectTensorEqual(expected,
                              RunNodeOk(n, {data, id_tensor, MakeScalar<int64_t>(s.num_segments)}));
    }
  }
}

TEST(UnsortedSegmentSum, Errors) {
  NodeDef n =
      MakeNode("UnsortedSegmentSum", 3, {{"T", Type(DT_FLOAT)}, {"Tindices", Type(DT_INT32)}});
  Tensor data = test::MakeTensor<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  test::ExpectError(RunNode(n, {data, MakeVector<int32_t>({0, 3, 1}), MakeScalar<int32_t>(3)}),
                    Code::kInvalidArgument, "segment_ids[1] = 3 is out of range [0, 3)");
  for (auto run : {RunNode, RunKernelOnly}) {
    test::ExpectError(run(n, {data, MakeVector<int32_t>({0, 1}), MakeScalar<int32_t>(3)}, "CPU:0"),
                      Code::kInvalidArgument,
                      "data.shape = [3,2] does not start with segment_ids.shape = [2]");
  }
  test::ExpectError(RunNode(n, {data, MakeVector<int32_t>({0, 1, 1}), MakeScalar<int32_t>(-1)}),
                    Code::kInvalidArgument, "num_segments = -1 must be >= 0");
  test::ExpectError(
      RunKernelOnly(n, {data, MakeVector<int32_t>({0, 1, 1}), MakeVector<int32_t>({3})}),
      Code::kInvalidArgument, "num_segments must be a scalar");
}

TEST(UnsortedSegmentSum, ShapeInference) {
  constexpr int64_t kU = kUnknownDim;
  NodeDef n =
      MakeNode("UnsortedSegmentSum", 3, {{"T", Type(DT_FLOAT)}, {"Tindices", Type(DT_INT32)}});
  Tensor five = MakeScalar<int32_t>(5);
  auto out = InferNodeShapes(
      test::TestRuntime(), n,
      {PartialTensorShape({kU, 3, 4}), PartialTensorShape({2, kU}), PartialTensorShape(Dims{})},
      {nullptr, nullptr, &five});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], PartialTensorShape({5, 4}));
  out = InferNodeShapes(
      test::TestRuntime(), n,
      {PartialTensorShape({6, 4}), PartialTensorShape({6}), PartialTensorShape(Dims{})},
      {nullptr, nullptr, nullptr});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], PartialTensorShape({kU, 4}));
  out = InferNodeShapes(
      test::TestRuntime(), n,
      {PartialTensorShape({6, 4}), PartialTensorShape({6}), PartialTensorShape({1})},
      {nullptr, nullptr, nullptr});
  EXPECT_FALSE(out.ok());
}

}  // namespace
}  // namespace cfx
