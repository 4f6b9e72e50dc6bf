// TensorList ops through the kernel harness: values, copy on write (an op never changes the list
// its input holds), the unset elements of reserved lists, every error (naming the node, index,
// length and shapes, as TensorFlow's do), and shape inference.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "conflux/kernel_runner.h"
#include "kernel_test_util.h"

namespace cfx {
namespace {

using test::MakeNode;
using test::MakeScalar;
using test::MakeTensor;
using test::MakeVector;
using test::RunNode;
using test::Values;

AttrValue F32() { return AttrValue::Type(DT_FLOAT); }
AttrValue I32() { return AttrValue::Type(DT_INT32); }

// Runs `op` on `inputs` and returns output `i`; fails the test on an error.
Tensor RunOk(const NodeDef& node, const std::vector<Tensor>& inputs, int i = 0) {
  auto out = RunNode(node, inputs);
  EXPECT_TRUE(out.ok()) << node.op << ": " << out.status();
  return out.ok() ? (*out)[i] : Tensor();
}

// The error of running `node`; every one of `parts` must be in its message.
void ExpectError(const NodeDef& node, const std::vector<Tensor>& inputs,
                 const std::vector<std::string>& parts) {
  auto out = RunNode(node, inputs);
  ASSERT_FALSE(out.ok()) << node.op << " succeeded";
  EXPECT_EQ(out.status().code(), Code::kInvalidArgument) << out.status();
  for (const std::string& p : parts)
    EXPECT_NE(out.status().message().find(p), std::string::npos)
        << "'" << p << "' not in: " << out.status();
}

Tensor UnknownShape() { return MakeScalar<int32_t>(-1); }

Tensor Empty(const Tensor& shape = UnknownShape(), int32_t max = -1) {
  return RunOk(MakeNode("EmptyTensorList", 2, {{"element_dtype", F32()}, {"shape_type", I32()}}),
             {shape, MakeScalar(max)});
}
Tensor Reserve(const Tensor& shape, int32_t n) {
  return RunOk(MakeNode("TensorListReserve", 2, {{"element_dtype", F32()}, {"shape_type", I32()}}),
             {shape, MakeScalar(n)});
}
NodeDef PushBackNode() { return MakeNode("TensorListPushBack", 2, {{"element_dtype", F32()}}); }
Tensor PushBack(const Tensor& list, const Tensor& item) {
  return RunOk(PushBackNode(), {list, item});
}
NodeDef PopBackNode() { return MakeNode("TensorListPopBack", 2, {{"element_dtype", F32()}}); }
int32_t Length(const Tensor& list) {
  return RunOk(MakeNode("TensorListLength", 1), {list}).at<int32_t>(0);
}
NodeDef StackNode(int64_t n = -1) {
  return MakeNode("TensorListStack", 2,
                  {{"element_dtype", F32()}, {"num_elements", AttrValue::Int(n)}});
}
NodeDef GetItemNode() { return MakeNode("TensorListGetItem", 3, {{"element_dtype", F32()}}); }
NodeDef SetItemNode(bool resize = false) {
  return MakeNode("TensorListSetItem", 3,
                  {{"element_dtype", F32()},
                   {"resize_if_index_out_of_bounds", AttrValue::Bool(resize)}});
}
Tensor FromTensor(const Tensor& value, const Tensor& shape = UnknownShape()) {
  return RunOk(MakeNode("TensorListFromTensor", 2, {{"element_dtype", F32()}, {"shape_type", I32()}}),
             {value, shape});
}

TEST(TensorList, PushBackThenPopBackIsLastInFirstOut) {
  Tensor list = PushBack(PushBack(Empty(), MakeVector<float>({1, 2})), MakeVector<float>({3, 4}));
  EXPECT_EQ(list.dtype(), DT_VARIANT);
  EXPECT_EQ(list.shape(), TensorShape());
  EXPECT_EQ(Length(list), 2);
  auto popped = RunNode(PopBackNode(), {list, UnknownShape()});
  ASSERT_TRUE(popped.ok()) << popped.status();
  EXPECT_EQ(Values<float>((*popped)[1]), (std::vector<float>{3, 4}));
  EXPECT_EQ(Length((*popped)[0]), 1);
  auto again = RunNode(PopBackNode(), {(*popped)[0], UnknownShape()});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(Values<float>((*again)[1]), (std::vector<float>{1, 2}));
  EXPECT_EQ(Length((*again)[0]), 0);
}

// An op outputs a new list: the list its input holds, which other consumers read, is unchanged.
TEST(TensorList, OpsNeverChangeTheirInputList) {
  Tensor one = PushBack(Empty(), MakeScalar(1.0f));
  Tensor two = PushBack(one, MakeScalar(2.0f));
  EXPECT_EQ(Length(one), 1);
  EXPECT_EQ(Length(two), 2);
  Tensor set = RunOk(SetItemNode(), {two, MakeScalar(0), MakeScalar(9.0f)});
  EXPECT_EQ(Values<float>(RunOk(StackNode(), {two, UnknownShape()})), (std::vector<float>{1, 2}));
  EXPECT_EQ(Values<float>(RunOk(StackNode(), {set, UnknownShape()})), (std::vector<float>{9, 2}));
  RunOk(PopBackNode(), {two, UnknownShape()});
  EXPECT_EQ(Length(two), 2);
  Tensor resized = RunOk(MakeNode("TensorListResize", 2), {two, MakeScalar(5)});
  EXPECT_EQ(Length(resized), 5);
  EXPECT_EQ(Length(two), 2);
  // A deep copy of the tensor (a Send/Recv between devices) shares the immutable list.
  auto copy = two.DeepCopy();
  ASSERT_TRUE(copy.ok()) << copy.status();
  EXPECT_TRUE(copy->Equals(two));
  EXPECT_EQ(Length(*copy), 2);
}

TEST(TensorList, ReservedElementsReadAsZerosOfTheElementShape) {
  Tensor list = Reserve(MakeVector<int32_t>({2}), 3);
  EXPECT_EQ(Length(list), 3);
  list = RunOk(SetItemNode(), {list, MakeScalar(1), MakeVector<float>({5, 6})});
  EXPECT_EQ(Values<float>(RunOk(GetItemNode(), {list, MakeScalar(0), UnknownShape()})),
            (std::vector<float>{0, 0}));
  EXPECT_EQ(Values<float>(RunOk(GetItemNode(), {list, MakeScalar(1), UnknownShape()})),
            (std::vector<float>{5, 6}));
  Tensor stacked = RunOk(StackNode(3), {list, UnknownShape()});
  EXPECT_EQ(stacked.shape(), TensorShape({3, 2}));
  EXPECT_EQ(Values<float>(stacked), (std::vector<float>{0, 0, 5, 6, 0, 0}));
  // With an unknown element shape, an unset element takes the op's element_shape.
  Tensor unknown = Reserve(UnknownShape(), 1);
  EXPECT_EQ(RunOk(GetItemNode(), {unknown, MakeScalar(0), MakeVector<int32_t>({2, 1})}).shape(),
            TensorShape({2, 1}));
  ExpectError(GetItemNode(), {unknown, MakeScalar(0), UnknownShape()},
              {"node", "element 0", "unset", "<unknown>"});
}

TEST(TensorList, SetItemGrowsOnlyWhenAsked) {
  Tensor list = Reserve(UnknownShape(), 1);
  ExpectError(SetItemNode(), {list, MakeScalar(3), MakeScalar(1.0f)},
              {"node", "Trying to modify element 3 in a list with 1 elements."});
  ExpectError(SetItemNode(), {list, MakeScalar(-1), MakeScalar(1.0f)}, {"element -1"});
  Tensor grown = RunOk(SetItemNode(true), {list, MakeScalar(3), MakeScalar(1.0f)});
  EXPECT_EQ(Length(grown), 4);
}

TEST(TensorList, FromTensorStackAndGatherRoundTrip) {
  Tensor value = MakeTensor<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor list = FromTensor(value, MakeVector<int32_t>({-1}));
  EXPECT_EQ(Length(list), 3);
  test::ExpectTensorEqual(value, RunOk(StackNode(3), {list, MakeVector<int32_t>({2})}));
  Tensor gathered = RunOk(MakeNode("TensorListGather", 3, {{"element_dtype", F32()}}),
                        {list, MakeVector<int32_t>({2, 0}), UnknownShape()});
  test::ExpectTensorEqual(MakeTensor<float>({2, 2}, {5, 6, 1, 2}), gathered);
  Tensor shape = RunOk(MakeNode("TensorListElementShape", 1, {{"shape_type", I32()}}), {list});
  EXPECT_EQ(Values<int32_t>(shape), (std::vector<int32_t>{-1}));
  Tensor unknown = RunOk(MakeNode("TensorListElementShape", 1, {{"shape_type", I32()}}), {Empty()});
  EXPECT_EQ(unknown.shape(), TensorShape());
  EXPECT_EQ(unknown.at<int32_t>(0), -1);
}

TEST(TensorList, ScatterAndResize) {
  NodeDef into = MakeNode("TensorListScatterIntoExistingList", 3, {{"element_dtype", F32()}});
  Tensor list = RunOk(into, {Empty(), MakeTensor<float>({2, 1}, {7, 8}), MakeVector<int32_t>({2, 0})});
  EXPECT_EQ(Length(list), 3);
  EXPECT_EQ(Values<float>(RunOk(StackNode(), {list, UnknownShape()})), (std::vector<float>{8, 0, 7}));
  ExpectError(into, {list, MakeTensor<float>({2, 1}, {7, 8}), MakeVector<int32_t>({0})},
              {"Expected: 1 Actual: 2"});
  ExpectError(into, {list, MakeTensor<float>({1, 1}, {7}), MakeVector<int32_t>({-2})},
              {"non-negative", "-2"});
  NodeDef v2 = MakeNode("TensorListScatterV2", 4, {{"element_dtype", F32()}, {"shape_type", I32()}});
  Tensor scattered =
      RunOk(v2, {MakeTensor<float>({1, 2}, {1, 2}), MakeVector<int32_t>({1}), UnknownShape(),
               MakeScalar(4)});
  EXPECT_EQ(Length(scattered), 4);
  Tensor shrunk = RunOk(MakeNode("TensorListResize", 2), {scattered, MakeScalar(2)});
  EXPECT_EQ(Values<float>(RunOk(StackNode(), {shrunk, UnknownShape()})),
            (std::vector<float>{0, 0, 1, 2}));
  ExpectError(MakeNode("TensorListResize", 2), {scattered, MakeScalar(-1)},
              {"non-negative", "-1"});
}

TEST(TensorList, SplitAndConcat) {
  NodeDef split = MakeNode("TensorListSplit", 3, {{"element_dtype", F32()}, {"shape_type", I32()}});
  Tensor value = MakeTensor<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor list = RunOk(split, {value, MakeVector<int32_t>({-1, 2}), MakeVector<int64_t>({1, 0, 2})});
  EXPECT_EQ(Length(list), 3);
  NodeDef concat =
      MakeNode("TensorListConcatV2", 3, {{"element_dtype", F32()}, {"shape_type", I32()}});
  auto out = RunNode(concat, {list, MakeVector<int32_t>({-1, 2}), MakeVector<int64_t>({})});
  ASSERT_TRUE(out.ok()) << out.status();
  test::ExpectTensorEqual(value, (*out)[0]);
  EXPECT_EQ(Values<int64_t>((*out)[1]), (std::vector<int64_t>{1, 0, 2}));
  ExpectError(split, {value, MakeVector<int32_t>({-1, 2}), MakeVector<int64_t>({1, 1})},
              {"sum to 2", "3 rows"});
  ExpectError(split, {value, MakeVector<int32_t>({-1, 3}), MakeVector<int64_t>({3})},
              {"[3,2]", "[?,3]"});
  // Unset elements take their rows from leading_dims.
  Tensor reserved = Reserve(MakeVector<int32_t>({-1, 2}), 2);
  auto zeros = RunNode(concat, {reserved, MakeVector<int32_t>({-1, 2}), MakeVector<int64_t>({1, 2})});
  ASSERT_TRUE(zeros.ok()) << zeros.status();
  EXPECT_EQ((*zeros)[0].shape(), TensorShape({3, 2}));
  ExpectError(concat, {reserved, MakeVector<int32_t>({-1, 2}), MakeVector<int64_t>({})},
              {"element 0", "leading_dims"});
  ExpectError(concat, {PushBack(Empty(), MakeScalar(1.0f)), UnknownShape(), MakeVector<int64_t>({})},
              {"scalar", "index 0"});
}

TEST(TensorList, ErrorsNameTheIndexTheLengthAndTheShapes) {
  Tensor list = PushBack(Empty(MakeVector<int32_t>({2})), MakeVector<float>({1, 2}));
  ExpectError(GetItemNode(), {list, MakeScalar(5), UnknownShape()},
              {"node", "Trying to access element 5 in a list with 1 elements."});
  ExpectError(PushBackNode(), {list, MakeVector<float>({1, 2, 3})}, {"[3]", "[2]", "incompatible"});
  ExpectError(PushBackNode(), {list, MakeTensor<int32_t>({2}, {1, 2})}, {"int32", "float"});
  ExpectError(MakeNode("TensorListGetItem", 3, {{"element_dtype", I32()}}),
              {list, MakeScalar(0), UnknownShape()},
              {"Invalid data types; op elements int32 but list elements float"});
  ExpectError(PopBackNode(), {Empty(), UnknownShape()}, {"Trying to pop from an empty list."});
  ExpectError(StackNode(), {Empty(), UnknownShape()}, {"no elements", "fully defined"});
  ExpectError(StackNode(4), {list, UnknownShape()},
              {"expected a list with 4 elements but got a list with 1 elements"});
  ExpectError(StackNode(), {list, MakeVector<int32_t>({3})}, {"[2]", "[3]"});
  ExpectError(MakeNode("TensorListReserve", 2, {{"element_dtype", F32()}, {"shape_type", I32()}}),
              {UnknownShape(), MakeScalar(-3)}, {"non negative", "-3"});
  ExpectError(MakeNode("EmptyTensorList", 2, {{"element_dtype", F32()}, {"shape_type", I32()}}),
              {MakeScalar<int32_t>(4), MakeScalar(-1)}, {"scalar", "-1", "4"});
  Tensor full = PushBack(Empty(UnknownShape(), 1), MakeScalar(1.0f));
  ExpectError(PushBackNode(), {full, MakeScalar(2.0f)}, {"full list", "size: 1", "max: 1"});
  ExpectError(MakeNode("TensorListLength", 1), {MakeScalar(1.0f)}, {"variant", "TensorList"});
  ExpectError(MakeNode("TensorListFromTensor", 2, {{"element_dtype", F32()}, {"shape_type", I32()}}),
              {MakeScalar(1.0f), UnknownShape()}, {"rank at least 1"});
}

TEST(TensorList, GetItemOfAnUnsetElementTakesTheShapeTheSetOnesShare) {
  // As in TensorFlow: neither the list nor the op fixes the shape, the set element does.
  Tensor list = RunOk(SetItemNode(), {Reserve(UnknownShape(), 3), MakeScalar(2),
                                      MakeTensor<float>({1, 2}, {7, 8})});
  Tensor item = RunOk(GetItemNode(), {list, MakeScalar(0), UnknownShape()});
  EXPECT_EQ(item.shape(), TensorShape({1, 2}));
  EXPECT_EQ(Values<float>(item), (std::vector<float>{0, 0}));
}

NodeDef ZerosLikeNode() { return MakeNode("ZerosLike", 1, {{"T", AttrValue::Type(DT_VARIANT)}}); }
NodeDef AddNNode(int n) {
  return MakeNode("AddN", n, {{"N", AttrValue::Int(n)}, {"T", AttrValue::Type(DT_VARIANT)}});
}

TEST(TensorList, ZerosLikeKeepsTheLengthShapeAndUnsetElements) {
  Tensor list = RunOk(SetItemNode(), {Reserve(MakeVector<int32_t>({-1}), 2), MakeScalar(1),
                                      MakeVector<float>({3, 4, 5})});
  Tensor zeros = RunOk(ZerosLikeNode(), {list});
  EXPECT_EQ(Length(zeros), 2);
  EXPECT_EQ(Values<float>(RunOk(GetItemNode(), {zeros, MakeScalar(1), UnknownShape()})),
            (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(
      RunOk(MakeNode("TensorListElementShape", 1, {{"shape_type", I32()}}), {zeros}).at<int32_t>(0),
      -1);
  // Element 0 is still unset: a stack with element shape [2] gives it zeros of [2], which would
  // fail against a set element of shape [3].
  Tensor stacked = RunOk(
      StackNode(),
      {RunOk(MakeNode("TensorListResize", 2), {zeros, MakeScalar(1)}), MakeVector<int32_t>({2})});
  EXPECT_EQ(stacked.shape(), TensorShape({1, 2}));
  EXPECT_EQ(Values<float>(RunOk(StackNode(), {list, UnknownShape()})),
            (std::vector<float>{0, 0, 0, 3, 4, 5}))
      << "ZerosLike changed its input";
}

TEST(TensorList, AddNSumsElementWiseAndNeverChangesItsInputs) {
  Tensor reserved = Reserve(MakeVector<int32_t>({2}), 3);
  Tensor a = RunOk(SetItemNode(), {reserved, MakeScalar(0), MakeVector<float>({1, 2})});
  Tensor b = RunOk(SetItemNode(), {reserved, MakeScalar(0), MakeVector<float>({10, 20})});
  b = RunOk(SetItemNode(), {b, MakeScalar(1), MakeVector<float>({30, 40})});
  Tensor sum = RunOk(AddNNode(3), {a, b, a});
  EXPECT_EQ(Length(sum), 3);
  EXPECT_EQ(Values<float>(RunOk(StackNode(), {sum, UnknownShape()})),
            (std::vector<float>{12, 24, 30, 40, 0, 0}));
  EXPECT_EQ(Values<float>(RunOk(StackNode(), {a, UnknownShape()})),
            (std::vector<float>{1, 2, 0, 0, 0, 0}));
  EXPECT_EQ(Values<float>(RunOk(StackNode(), {b, UnknownShape()})),
            (std::vector<float>{10, 20, 30, 40, 0, 0}));
}

TEST(TensorList, AddNOfMismatchedListsNamesBothSides) {
  Tensor two = Reserve(MakeVector<int32_t>({2}), 2);
  ExpectError(AddNNode(2), {two, Reserve(MakeVector<int32_t>({2}), 3)},
              {"node", "input 1", "different lengths. One is 2 and the other is 3"});
  ExpectError(AddNNode(2), {two, Reserve(MakeVector<int32_t>({3}), 2)},
              {"incompatible element shapes", "[2]", "[3]"});
  Tensor ints =
      RunOk(MakeNode("TensorListReserve", 2, {{"element_dtype", I32()}, {"shape_type", I32()}}),
            {MakeVector<int32_t>({2}), MakeScalar(2)});
  ExpectError(AddNNode(2), {two, ints}, {"different dtypes", "float", "int32"});
  Tensor a =
      RunOk(SetItemNode(), {Reserve(UnknownShape(), 1), MakeScalar(0), MakeVector<float>({1, 2})});
  Tensor b = RunOk(SetItemNode(),
                   {Reserve(UnknownShape(), 1), MakeScalar(0), MakeVector<float>({1, 2, 3})});
  ExpectError(AddNNode(2), {a, b}, {"index 0", "[2]", "[3]"});
  ExpectError(AddNNode(2), {two, MakeScalar(1.0f)}, {"input 1", "variant"});
}

TEST(TensorList, ShapeInferenceReadsTheElementShapeInputs) {
  Runtime& rt = test::TestRuntime();
  Tensor shape = MakeVector<int32_t>({-1, 3});
  auto stack = InferNodeShapes(rt, StackNode(4), {PartialTensorShape({}), PartialTensorShape({2})},
                               {nullptr, &shape});
  ASSERT_TRUE(stack.ok()) << stack.status();
  EXPECT_EQ((*stack)[0], PartialTensorShape({4, -1, 3}));
  Tensor unknown = UnknownShape();
  auto item = InferNodeShapes(rt, GetItemNode(),
                              {PartialTensorShape({}), PartialTensorShape({}), PartialTensorShape({})},
                              {nullptr, nullptr, &unknown});
  ASSERT_TRUE(item.ok()) << item.status();
  EXPECT_TRUE((*item)[0].unknown_rank());
  auto push = InferNodeShapes(rt, PushBackNode(), {PartialTensorShape({}), PartialTensorShape({3})},
                              {});
  ASSERT_TRUE(push.ok()) << push.status();
  EXPECT_EQ((*push)[0], PartialTensorShape({}));
  auto bad = InferNodeShapes(rt, PushBackNode(), {PartialTensorShape({2}), PartialTensorShape({3})},
                             {});
  EXPECT_FALSE(bad.ok());
  Tensor indices = MakeVector<int32_t>({0, 1});
  auto gather = InferNodeShapes(rt, MakeNode("TensorListGather", 3, {{"element_dtype", F32()}}),
                                {PartialTensorShape({}), PartialTensorShape({2}),
                                 PartialTensorShape({2})},
                                {nullptr, &indices, &shape});
  ASSERT_TRUE(gather.ok()) << gather.status();
  EXPECT_EQ((*gather)[0], PartialTensorShape({2, -1, 3}));
}

}  // namespace
}  // namespace cfx
