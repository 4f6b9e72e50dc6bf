// ConcatV2, Pack, Split and Unpack through the kernel harness.
#include <cstdint>
#include <vector>

#include "array_test_util.h"
#include "graph_builder.h"

namespace cfx {
namespace {

using test::Iota;
using test::MakeNode;
using test::MakeScalar;
using test::MakeTensor;
using test::RunNode;
using test::RunNodeOk;

// Reference concatenation: element by element, finding the input that holds each output index.
template <typename T>
Tensor ConcatReference(const std::vector<Tensor>& inputs, int axis) {
  TensorShape shape = inputs[0].shape();
  int64_t total = 0;
  for (const Tensor& t : inputs) total += t.dim(axis);
  shape.set_dim(axis, total);
  Tensor out(inputs[0].dtype(), shape);
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    std::vector<int64_t> index = test::MultiIndex(i, shape);
    size_t k = 0;
    while (index[axis] >= inputs[k].dim(axis)) index[axis] -= inputs[k++].dim(axis);
    out.at<T>(i) = inputs[k].at<T>(test::FlatIndex(index, inputs[k].shape()));
  }
  return out;
}

NodeDef ConcatNode(DataType t, int n, DataType tidx = DT_INT32) {
  return MakeNode(
      "ConcatV2", n + 1,
      {{"T", AttrValue::Type(t)}, {"N", AttrValue::Int(n)}, {"Tidx", AttrValue::Type(tidx)}});
}
NodeDef PackNode(DataType t, int n, int64_t axis) {
  return MakeNode(
      "Pack", n,
      {{"T", AttrValue::Type(t)}, {"N", AttrValue::Int(n)}, {"axis", AttrValue::Int(axis)}});
}
NodeDef SplitNode(DataType t, int num_split) {
  return MakeNode("Split", 2,
                  {{"T", AttrValue::Type(t)}, {"num_split", AttrValue::Int(num_split)}});
}
NodeDef UnpackNode(DataType t, int num, int64_t axis) {
  return MakeNode(
      "Unpack", 1,
      {{"T", AttrValue::Type(t)}, {"num", AttrValue::Int(num)}, {"axis", AttrValue::Int(axis)}});
}

template <typename T>
class ArrayConcatTyped : public ::testing::Test {};
TYPED_TEST_SUITE(ArrayConcatTyped, test::ArrayElementTypes);

TYPED_TEST(ArrayConcatTyped, EveryAxisMatchesReference) {
  constexpr DataType kType = test::DataTypeOf<TypeParam>();
  for (int axis = 0; axis < 3; ++axis) {
    TensorShape a({2, 3, 4}), b({2, 3, 4}), c({2, 3, 4});
    b.set_dim(axis, 1);
    c.set_dim(axis, 5);
    std::vector<Tensor> inputs = {Iota<TypeParam>(a), Iota<TypeParam>(b, 100),
                                  Iota<TypeParam>(c, 200)};
    Tensor expected = ConcatReference<TypeParam>(inputs, axis);
    for (int axis_value : {axis, axis - 3}) {  // negative axes count from the end
      std::vector<Tensor> args = inputs;
      args.push_back(MakeScalar<int32_t>(axis_value));
      test::ExpectTensorEqual(expected, RunNodeOk(ConcatNode(kType, 3), args));
    }
  }
}

TYPED_TEST(ArrayConcatTyped, SplitUndoesConcat) {
  constexpr DataType kType = test::DataTypeOf<TypeParam>();
  Tensor x = Iota<TypeParam>({4, 6});
  for (int axis : {0, 1, -1}) {
    auto pieces = RunNode(SplitNode(kType, 2), {MakeScalar<int32_t>(axis), x});
    ASSERT_TRUE(pieces.ok()) << pieces.status();
    ASSERT_EQ(pieces->size(), 2u);
    EXPECT_EQ((*pieces)[0].dim(axis < 0 ? 1 : axis), axis == 0 ? 2 : 3);
    std::vector<Tensor> args = *pieces;
    args.push_back(MakeScalar<int32_t>(axis));
    test::ExpectTensorEqual(x, RunNodeOk(ConcatNode(kType, 2), args));
  }
}

TEST(ArrayConcat, EmptyInputsAndInt64Axis) {
  Tensor a = Iota<float>({2, 2}), empty = Iota<float>({2, 0}), b = Iota<float>({2, 1}, 10);
  test::ExpectTensorEqual(
      MakeTensor<float>({2, 3}, {0, 1, 10, 2, 3, 11}),
      RunNodeOk(ConcatNode(DT_FLOAT, 3, DT_INT64), {a, empty, b, MakeScalar<int64_t>(1)}));
  test::ExpectTensorEqual(Iota<float>({0, 3}), RunNodeOk(ConcatNode(DT_FLOAT, 2),
                                                         {Iota<float>({0, 3}), Iota<float>({0, 3}),
                                                          MakeScalar<int32_t>(0)}));
}

TEST(ArrayConcat, LargeInputsMatchReference) {
  // Rows long enough for the copy to be split over threads, and a single outer row.
  for (int axis : {0, 1}) {
    std::vector<Tensor> inputs = {Iota<int32_t>({64, 700}), Iota<int32_t>({64, 700}, 1 << 20)};
    std::vector<Tensor> args = inputs;
    args.push_back(MakeScalar<int32_t>(axis));
    test::ExpectTensorEqual(ConcatReference<int32_t>(inputs, axis),
                            RunNodeOk(ConcatNode(DT_INT32, 2), args));
  }
}

TEST(ArrayConcat, RejectsMismatchedShapesScalarsAndBadAxes) {
  Tensor a = Iota<float>({2, 3});
  test::ExpectError(
      RunNode(ConcatNode(DT_FLOAT, 2), {a, Iota<float>({3, 3}), MakeScalar<int32_t>(1)}),
      Code::kInvalidArgument,
      "input 1 has shape [3,3] but input 0 has shape [2,3]; only dimension 1");
  test::ExpectError(RunNode(ConcatNode(DT_FLOAT, 2), {a, Iota<float>({6}), MakeScalar<int32_t>(0)}),
                    Code::kInvalidArgument, "same rank");
  test::ExpectError(RunNode(ConcatNode(DT_FLOAT, 2), {a, a, MakeScalar<int32_t>(2)}),
                    Code::kInvalidArgument, "axis 2 is out of range [-2, 2)");
  test::ExpectError(RunNode(ConcatNode(DT_FLOAT, 2),
                            {MakeScalar<float>(1), MakeScalar<float>(2), MakeScalar<int32_t>(0)}),
                    Code::kInvalidArgument, "cannot concatenate scalars");
}

TEST(ArrayPack, StacksAlongEveryAxis) {
  Tensor a = MakeTensor<int32_t>({2, 2}, {1, 2, 3, 4}),
         b = MakeTensor<int32_t>({2, 2}, {5, 6, 7, 8});
  test::ExpectTensorEqual(MakeTensor<int32_t>({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}),
                          RunNodeOk(PackNode(DT_INT32, 2, 0), {a, b}));
  test::ExpectTensorEqual(MakeTensor<int32_t>({2, 2, 2}, {1, 2, 5, 6, 3, 4, 7, 8}),
                          RunNodeOk(PackNode(DT_INT32, 2, 1), {a, b}));
  test::ExpectTensorEqual(MakeTensor<int32_t>({2, 2, 2}, {1, 5, 2, 6, 3, 7, 4, 8}),
                          RunNodeOk(PackNode(DT_INT32, 2, -1), {a, b}));
  test::ExpectTensorEqual(
      MakeTensor<float>({3}, {1, 2, 3}),
      RunNodeOk(PackNode(DT_FLOAT, 3, 0), {MakeScalar(1.0f), MakeScalar(2.0f), MakeScalar(3.0f)}));
  test::ExpectTensorEqual(MakeTensor<bool>({1, 0}, {}),
                          RunNodeOk(PackNode(DT_BOOL, 1, 0), {MakeTensor<bool>({0}, {})}));
}

TEST(ArrayPack, RejectsMismatchedShapesAndBadAxis) {
  test::ExpectError(RunNode(PackNode(DT_FLOAT, 2, 0), {Iota<float>({2}), Iota<float>({3})}),
                    Code::kInvalidArgument,
                    "all inputs must have the same shape, but input 0 has shape [2] and input 1 "
                    "has shape [3]");
  test::ExpectError(RunNode(PackNode(DT_FLOAT, 2, 2), {Iota<float>({2}), Iota<float>({2})}),
                    Code::kInvalidArgument, "axis 2 is out of range [-2, 2)");
}

TEST(ArrayUnpack, SlicesAlongEveryAxis) {
  Tensor x = MakeTensor<double>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto rows = RunNode(UnpackNode(DT_DOUBLE, 2, 0), {x});
  ASSERT_TRUE(rows.ok()) << rows.status();
  test::ExpectTensorEqual(MakeTensor<double>({3}, {4, 5, 6}), (*rows)[1]);
  auto columns = RunNode(UnpackNode(DT_DOUBLE, 3, -1), {x});
  ASSERT_TRUE(columns.ok()) << columns.status();
  ASSERT_EQ(columns->size(), 3u);
  for (int k = 0; k < 3; ++k)
    test::ExpectTensorEqual(MakeTensor<double>({2}, {1.0 + k, 4.0 + k}), (*columns)[k]);
  auto none = RunNode(UnpackNode(DT_DOUBLE, 0, 0), {MakeTensor<double>({0, 2}, {})});
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->empty());
  auto scalars = RunNode(UnpackNode(DT_INT64, 2, 0), {MakeTensor<int64_t>({2}, {7, 8})});
  ASSERT_TRUE(scalars.ok()) << scalars.status();
  test::ExpectTensorEqual(MakeScalar<int64_t>(8), (*scalars)[1]);
}

TEST(ArrayUnpack, RejectsWrongNumAndScalars) {
  test::ExpectError(RunNode(UnpackNode(DT_FLOAT, 3, 0), {Iota<float>({2, 3})}),
                    Code::kInvalidArgument, "has size 2 but attr num is 3");
  test::ExpectError(RunNode(UnpackNode(DT_FLOAT, 1, 0), {MakeScalar(1.0f)}), Code::kInvalidArgument,
                    "cannot unpack a scalar");
  test::ExpectError(RunNode(UnpackNode(DT_FLOAT, 2, -3), {Iota<float>({2, 3})}),
                    Code::kInvalidArgument, "axis -3 is out of range [-2, 2)");
}

TEST(ArraySplit, OnePieceAndExplicitValues) {
  Tensor x = MakeTensor<int32_t>({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  test::ExpectTensorEqual(x, RunNodeOk(SplitNode(DT_INT32, 1), {MakeScalar<int32_t>(0), x}));
  auto pieces = RunNode(SplitNode(DT_INT32, 4), {MakeScalar<int32_t>(1), x});
  ASSERT_TRUE(pieces.ok()) << pieces.status();
  test::ExpectTensorEqual(MakeTensor<int32_t>({2, 1}, {3, 7}), (*pieces)[2]);
}

// One Split node run step after step in a session keeps its pieces' shapes from the first split
// for later ones with the same input shape and split_dim: each step still cuts its own values,
// and a new split_dim (also the same axis written negative) or input shape is worked out anew.
TEST(ArraySplit, AKeptPlanServesOnlyTheSameShapeAndAxis) {
  test::GraphBuilder b;
  b.Placeholder("x", DT_INT32);
  b.Placeholder("axis", DT_INT32);
  b.Op("split", "Split", {"axis", "x"}).attr = SplitNode(DT_INT32, 2).attr;
  auto session = test::NewTestSession(b.graph());
  ASSERT_NE(session, nullptr);
  auto run = [&](const Tensor& x, int32_t axis) {
    std::vector<Tensor> out;
    EXPECT_OK(session->Run({{"x", x}, {"axis", MakeScalar<int32_t>(axis)}}, {"split:0", "split:1"},
                           {}, &out));
    return out;
  };
  const Tensor x = MakeTensor<int32_t>({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  for (int step = 0; step < 2; ++step) {  // the first step keeps its plan, the second runs it
    std::vector<Tensor> rows = run(x, 0);
    ASSERT_EQ(rows.size(), 2u);
    test::ExpectTensorEqual(MakeTensor<int32_t>({1, 4}, {5, 6, 7, 8}), rows[1]);
  }
  const Tensor y = MakeTensor<int32_t>({2, 4}, {9, 10, 11, 12, 13, 14, 15, 16});
  test::ExpectTensorEqual(MakeTensor<int32_t>({1, 4}, {13, 14, 15, 16}), run(y, 0)[1]);
  test::ExpectTensorEqual(MakeTensor<int32_t>({2, 2}, {3, 4, 7, 8}), run(x, 1)[1]);
  test::ExpectTensorEqual(MakeTensor<int32_t>({2, 2}, {3, 4, 7, 8}), run(x, -1)[1]);
  const Tensor tall = MakeTensor<int32_t>({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  test::ExpectTensorEqual(MakeTensor<int32_t>({2, 2}, {5, 6, 7, 8}), run(tall, 0)[1]);
}

TEST(ArraySplit, RejectsUnevenSplitsAndBadAxes) {
  Tensor x = Iota<float>({2, 5});
  test::ExpectError(RunNode(SplitNode(DT_FLOAT, 2), {MakeScalar<int32_t>(1), x}),
                    Code::kInvalidArgument,
                    "num_split 2 does not evenly divide dimension 1 of size 5");
  test::ExpectError(RunNode(SplitNode(DT_FLOAT, 2), {MakeScalar<int32_t>(2), x}),
                    Code::kInvalidArgument, "split_dim 2 is out of range [-2, 2)");
  test::ExpectError(RunNode(SplitNode(DT_FLOAT, 1), {MakeScalar<int32_t>(0), MakeScalar(1.0f)}),
                    Code::kInvalidArgument, "cannot split a scalar");
}

}  // namespace
}  // namespace cfx
