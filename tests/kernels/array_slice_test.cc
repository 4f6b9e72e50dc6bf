// Slice and StridedSlice through the kernel harness, against a reference built from Python's
// slicing rules.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "array_test_util.h"
#include "graph_builder.h"

namespace cfx {
namespace {

using test::Iota;
using test::MakeNode;
using test::MakeTensor;
using test::MakeVector;
using test::RunNode;
using test::RunNodeOk;

// The indices Python's start:stop:step selects from a dimension of size n.
std::vector<int64_t> PySlice(int64_t start, int64_t stop, int64_t step, int64_t n) {
  const int64_t lo = step > 0 ? 0 : -1, hi = step > 0 ? n : n - 1;
  start = start < 0 ? std::max(start + n, lo) : std::min(start, hi);
  stop = stop < 0 ? std::max(stop + n, lo) : std::min(stop, hi);
  std::vector<int64_t> out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) out.push_back(i);
  return out;
}

// x[picks[0][a], picks[1][b], ...] for every combination, in row-major order.
template <typename T>
Tensor Pick(const Tensor& x, const std::vector<std::vector<int64_t>>& picks) {
  TensorShape shape;
  for (const auto& p : picks) EXPECT_OK(shape.AddDim(static_cast<int64_t>(p.size())));
  Tensor out(x.dtype(), shape);
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    std::vector<int64_t> index = test::MultiIndex(i, shape);
    for (size_t d = 0; d < index.size(); ++d) index[d] = picks[d][index[d]];
    out.at<T>(i) = x.at<T>(test::FlatIndex(index, x.shape()));
  }
  return out;
}

NodeDef SliceNode(DataType t, DataType index = DT_INT32) {
  return MakeNode("Slice", 3, {{"T", AttrValue::Type(t)}, {"Index", AttrValue::Type(index)}});
}

struct Masks {
  int64_t begin = 0, end = 0, ellipsis = 0, new_axis = 0, shrink = 0;
};
NodeDef StridedSliceNode(DataType t, Masks m = {}, DataType index = DT_INT32) {
  return MakeNode("StridedSlice", 4,
                  {{"T", AttrValue::Type(t)},
                   {"Index", AttrValue::Type(index)},
                   {"begin_mask", AttrValue::Int(m.begin)},
                   {"end_mask", AttrValue::Int(m.end)},
                   {"ellipsis_mask", AttrValue::Int(m.ellipsis)},
                   {"new_axis_mask", AttrValue::Int(m.new_axis)},
                   {"shrink_axis_mask", AttrValue::Int(m.shrink)}});
}
Tensor StridedSlice(const Tensor& x, std::vector<int32_t> begin, std::vector<int32_t> end,
                    std::vector<int32_t> strides, Masks m = {}) {
  return RunNodeOk(StridedSliceNode(x.dtype(), m),
                   {x, MakeVector(begin), MakeVector(end), MakeVector(strides)});
}

template <typename T>
class ArraySliceTyped : public ::testing::Test {};
TYPED_TEST_SUITE(ArraySliceTyped, test::ArrayElementTypes);

TYPED_TEST(ArraySliceTyped, SliceMatchesReference) {
  Tensor x = Iota<TypeParam>({3, 4, 5});
  const NodeDef node = SliceNode(test::DataTypeOf<TypeParam>());
  auto slice = [&](std::vector<int32_t> begin, std::vector<int32_t> size) {
    return RunNodeOk(node, {x, MakeVector(begin), MakeVector(size)});
  };
  test::ExpectTensorEqual(Pick<TypeParam>(x, {{1, 2}, {0, 1, 2}, {3}}),
                          slice({1, 0, 3}, {2, 3, 1}));
  test::ExpectTensorEqual(Pick<TypeParam>(x, {{2}, {1, 2, 3}, {0, 1, 2, 3, 4}}),
                          slice({2, 1, 0}, {-1, -1, -1}));
  test::ExpectTensorEqual(Pick<TypeParam>(x, {{}, {0}, {0, 1}}), slice({3, 0, 0}, {0, 1, 2}));
}

TYPED_TEST(ArraySliceTyped, OneDimensionalStridedSliceMatchesPython) {
  Tensor x = Iota<TypeParam>({6});
  const NodeDef node = StridedSliceNode(test::DataTypeOf<TypeParam>());
  for (int32_t step : {-3, -2, -1, 1, 2, 4})
    for (int32_t begin = -8; begin <= 8; ++begin)
      for (int32_t end = -8; end <= 8; ++end) {
        SCOPED_TRACE(::testing::Message() << begin << ":" << end << ":" << step);
        test::ExpectTensorEqual(
            Pick<TypeParam>(x, {PySlice(begin, end, step, 6)}),
            RunNodeOk(node, {x, MakeVector<int32_t>({begin}), MakeVector<int32_t>({end}),
                             MakeVector<int32_t>({step})}));
      }
}

// One StridedSlice node run step after step in a session keeps the plan of its first slice for
// later ones with the same input shape and begin/end/strides: each step must still slice its own
// input values, and new indices or a new input shape must not reuse the kept plan.
TEST(ArrayStridedSlice, AKeptPlanServesOnlyTheSameShapeAndIndices) {
  test::GraphBuilder b;
  b.Placeholder("x", DT_FLOAT);
  for (const char* name : {"begin", "end", "strides"}) b.Placeholder(name, DT_INT32);
  NodeDef& slice = b.Op("slice", "StridedSlice", {"x", "begin", "end", "strides"});
  slice.attr = StridedSliceNode(DT_FLOAT).attr;
  auto session = test::NewTestSession(b.graph());
  ASSERT_NE(session, nullptr);
  auto run = [&](const Tensor& x, std::vector<int32_t> begin, std::vector<int32_t> end,
                 std::vector<int32_t> strides) {
    std::vector<Tensor> out;
    EXPECT_OK(session->Run({{"x", x},
                            {"begin", MakeVector(begin)},
                            {"end", MakeVector(end)},
                            {"strides", MakeVector(strides)}},
                           {"slice:0"}, {}, &out));
    return out.empty() ? Tensor() : out[0];
  };
  const Tensor x = Iota<float>({3, 4});
  Tensor other = Iota<float>({3, 4});
  for (int64_t i = 0; i < other.num_elements(); ++i) other.at<float>(i) += 100;
  const std::vector<int64_t> rows = {1, 2}, odd = {1, 3};
  for (int step = 0; step < 2; ++step)  // the first step keeps its plan, the second runs it
    test::ExpectTensorEqual(Pick<float>(x, {rows, odd}), run(x, {1, 1}, {3, 4}, {1, 2}));
  test::ExpectTensorEqual(Pick<float>(other, {rows, odd}), run(other, {1, 1}, {3, 4}, {1, 2}));
  test::ExpectTensorEqual(Pick<float>(x, {{0, 1}, odd}), run(x, {0, 1}, {2, 4}, {1, 2}));
  test::ExpectTensorEqual(Pick<float>(x, {rows, {1, 2, 3}}), run(x, {1, 1}, {3, 4}, {1, 1}));
  const Tensor wide = Iota<float>({3, 6});
  test::ExpectTensorEqual(Pick<float>(wide, {rows, odd}), run(wide, {1, 1}, {3, 4}, {1, 2}));
  const Tensor tall = Iota<float>({4, 4});
  test::ExpectTensorEqual(Pick<float>(tall, {{1, 2}, odd}), run(tall, {1, 1}, {3, 4}, {1, 2}));
  test::ExpectTensorEqual(Pick<float>(x, {rows, odd}), run(x, {1, 1}, {3, 4}, {1, 2}));
}

TEST(ArrayStridedSlice, ThreeDimensionalSweepMatchesPython) {
  // A deterministic pseudo-random sample of begin/end/stride per dimension.
  Tensor x = Iota<float>({4, 5, 6});
  uint32_t state = 12345;
  auto next = [&](int lo, int hi) {
    state = state * 1664525u + 1013904223u;
    return lo + static_cast<int>((state >> 8) % static_cast<uint32_t>(hi - lo + 1));
  };
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<int32_t> begin, end, strides;
    std::vector<std::vector<int64_t>> picks;
    for (int d = 0; d < 3; ++d) {
      begin.push_back(next(-8, 8));
      end.push_back(next(-8, 8));
      int step = next(-3, 3);
      strides.push_back(step == 0 ? 1 : step);
      picks.push_back(PySlice(begin[d], end[d], strides[d], x.dim(d)));
    }
    SCOPED_TRACE(trial);
    test::ExpectTensorEqual(Pick<float>(x, picks), StridedSlice(x, begin, end, strides));
  }
}

TEST(ArrayStridedSlice, LargeReversedSliceMatchesReference) {
  // Rows long enough for the copy to be split over threads; the inner step is -1.
  Tensor x = Iota<int32_t>({128, 600});
  test::ExpectTensorEqual(
      Pick<int32_t>(x, {PySlice(127, -129, -2, 128), PySlice(599, -601, -1, 600)}),
      StridedSlice(x, {-1, -1}, {-129, -601}, {-2, -1}));
}

TEST(ArrayStridedSlice, MasksFollowNumpyIndexing) {
  Tensor x = Iota<int32_t>({2, 3, 4});  // x[i, j, k] = 12 i + 4 j + k
  // x[1]
  test::ExpectTensorEqual(Pick<int32_t>(x, {{1}, {0, 1, 2}, {0, 1, 2, 3}}).Reshaped({3, 4}).value(),
                          StridedSlice(x, {1}, {2}, {1}, {.shrink = 1}));
  // x[:, -1, ::-2]
  test::ExpectTensorEqual(MakeTensor<int32_t>({2, 2}, {11, 9, 23, 21}),
                          StridedSlice(x, {0, -1, 0}, {0, 0, 0}, {1, 1, -2},
                                       {.begin = 0b101, .end = 0b101, .shrink = 0b010}));
  // x[None, 1:]
  Tensor expected = Pick<int32_t>(x, {{1}, {0, 1, 2}, {0, 1, 2, 3}}).Reshaped({1, 1, 3, 4}).value();
  test::ExpectTensorEqual(expected,
                          StridedSlice(x, {0, 1}, {0, 0}, {1, 1}, {.end = 0b10, .new_axis = 0b01}));
  // x[..., 1]
  test::ExpectTensorEqual(MakeTensor<int32_t>({2, 3}, {1, 5, 9, 13, 17, 21}),
                          StridedSlice(x, {0, 1}, {0, 2}, {1, 1}, {.ellipsis = 1, .shrink = 2}));
  // x[1, ..., None, ::-1]
  Tensor out = StridedSlice(x, {1, 0, 0, 0}, {2, 0, 0, 0}, {1, 1, 1, -1},
                            {.begin = 8, .end = 8, .ellipsis = 2, .new_axis = 4, .shrink = 1});
  ASSERT_EQ(out.shape(), TensorShape({3, 1, 4}));
  for (int j = 0; j < 3; ++j)
    for (int k = 0; k < 4; ++k) EXPECT_EQ(out.at<int32_t>(j * 4 + k), 12 + 4 * j + 3 - k);
  // x[3:1] is empty; x[:] is x.
  EXPECT_EQ(StridedSlice(x, {3}, {1}, {1}).shape(), TensorShape({0, 3, 4}));
  test::ExpectTensorEqual(x, StridedSlice(x, {0}, {0}, {1}, {.begin = 1, .end = 1}));
}

TEST(ArrayStridedSlice, OtherIndexTypesAndScalarResults) {
  Tensor x = MakeTensor<double>({3}, {1.5, 2.5, 3.5});
  test::ExpectTensorEqual(test::MakeScalar(3.5),
                          RunNodeOk(StridedSliceNode(DT_DOUBLE, {.shrink = 1}, DT_INT16),
                                    {x, MakeVector<int16_t>({-1}), MakeVector<int16_t>({0}),
                                     MakeVector<int16_t>({1})}));
  test::ExpectTensorEqual(MakeTensor<double>({2}, {3.5, 1.5}),
                          RunNodeOk(StridedSliceNode(DT_DOUBLE, {}, DT_INT64),
                                    {x, MakeVector<int64_t>({2}), MakeVector<int64_t>({-4}),
                                     MakeVector<int64_t>({-2})}));
}

TEST(ArrayStridedSlice, RejectsBadSpecifications) {
  Tensor x = Iota<float>({2, 3});
  auto run = [&](std::vector<int32_t> b, std::vector<int32_t> e, std::vector<int32_t> s, Masks m) {
    return RunNode(StridedSliceNode(DT_FLOAT, m), {x, MakeVector(b), MakeVector(e), MakeVector(s)});
  };
  test::ExpectError(run({0}, {1}, {0}, {}), Code::kInvalidArgument,
                    "strides[0] is 0; strides must be non-zero");
  test::ExpectError(run({5}, {6}, {1}, {.shrink = 1}), Code::kInvalidArgument,
                    "index 5 is out of bounds for dimension 0 of size 2");
  test::ExpectError(run({-3}, {0}, {1}, {.shrink = 1}), Code::kInvalidArgument,
                    "index -3 is out of bounds");
  test::ExpectError(run({0, 0}, {1, 1}, {1, 1}, {.ellipsis = 3}), Code::kInvalidArgument,
                    "ellipsis_mask 3 has more than one bit set");
  test::ExpectError(run({0, 0, 0}, {1, 1, 1}, {1, 1, 1}, {}), Code::kInvalidArgument,
                    "too many range specifications for an input of shape [2,3]");
  test::ExpectError(run({0, 0}, {1}, {1, 1}, {}), Code::kInvalidArgument,
                    "begin, end and strides must have the same length, got 2, 1 and 2");
  test::ExpectError(run({1}, {0}, {-1}, {.shrink = 1}), Code::kInvalidArgument, "must be positive");
}

TEST(ArraySlice, WholeInputIsForwardedAndScalarsWork) {
  Tensor x = Iota<float>({2, 3});
  Tensor out = RunNodeOk(SliceNode(DT_FLOAT),
                         {x, MakeVector<int32_t>({0, 0}), MakeVector<int32_t>({-1, 3})});
  test::ExpectTensorEqual(x, out);
  EXPECT_EQ(out.raw_data(), x.raw_data());
  Tensor scalar = test::MakeScalar<int64_t>(5);
  test::ExpectTensorEqual(scalar,
                          RunNodeOk(SliceNode(DT_INT64, DT_INT64),
                                    {scalar, MakeVector<int64_t>({}), MakeVector<int64_t>({})}));
}

TEST(ArraySlice, RejectsOutOfRangeBoxes) {
  Tensor x = Iota<float>({3, 4});
  auto run = [&](std::vector<int32_t> begin, std::vector<int32_t> size) {
    return RunNode(SliceNode(DT_FLOAT), {x, MakeVector(begin), MakeVector(size)});
  };
  test::ExpectError(run({4, 0}, {0, 1}), Code::kInvalidArgument,
                    "begin[0] = 4 is out of range [0, 3] for input shape [3,4]");
  test::ExpectError(run({-1, 0}, {1, 1}), Code::kInvalidArgument, "begin[0] = -1 is out of range");
  test::ExpectError(run({1, 2}, {1, 3}), Code::kInvalidArgument,
                    "begin[1] + size[1] = 2 + 3 exceeds dimension 1 of size 4");
  test::ExpectError(RunNode(SliceNode(DT_FLOAT, DT_INT64),
                            {x, MakeVector<int64_t>({0, 1}), MakeVector<int64_t>({1, INT64_MAX})}),
                    Code::kInvalidArgument, "exceeds dimension 1 of size 4");
  test::ExpectError(run({0, 0}, {1, -2}), Code::kInvalidArgument, "size[1] = -2 must be >= -1");
  test::ExpectError(run({0}, {1}), Code::kInvalidArgument,
                    "must each have one entry per dimension of the input (shape [3,4])");
}

}  // namespace
}  // namespace cfx
