// TensorList ops through the kernel harness: values, copy on write (an op never changes the list
// its input holds), the unset elements of reserved lists, batches of lists (variant vectors, as
// TensorFlow's pfor makes), every error (naming the node, index, length and shapes, as
// TensorFlow's do), and shape inference.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "conflux/kernel_runner.h"
#include "framework/variant.h"
#include "kernel_test_util.h"

namespace cfx {
namespace {

using test::MakeNode;
using test::MakeScalar;
using test::MakeTensor;
using test::MakeVector;
using test::RunKernelOnly;
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

// The error of running `node` (through shape inference, or with `kernel_only` straight to the
// kernel); every one of `parts` must be in its message.
void ExpectError(const NodeDef& node, const std::vector<Tensor>& inputs,
                 const std::vector<std::string>& parts, bool kernel_only = false) {
  auto out = kernel_only ? RunKernelOnly(node, inputs) : RunNode(node, inputs);
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
              {"uninitialized tensor at index 0", "leading_dims has only 0 elements"});
  ExpectError(concat, {PushBack(Empty(), MakeScalar(1.0f)), UnknownShape(), MakeVector<int64_t>({})},
              {"scalar", "index 0"});
}

NodeDef ConcatV2Node() {
  return MakeNode("TensorListConcatV2", 3, {{"element_dtype", F32()}, {"shape_type", I32()}});
}
NodeDef ConcatNode(const PartialTensorShape& element_shape = PartialTensorShape::UnknownRank()) {
  return MakeNode("TensorListConcat", 1,
                  {{"element_dtype", F32()}, {"element_shape", AttrValue::Shape(element_shape)}});
}
// TensorListConcat (V1) of `list`: its tensor and lengths.
std::pair<Tensor, std::vector<int64_t>> Concat(const Tensor& list,
                                               const NodeDef& node = ConcatNode()) {
  auto out = RunNode(node, {list});
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return {};
  return {(*out)[0], Values<int64_t>((*out)[1])};
}

TEST(TensorList, ConcatV1JoinsElementsOfDifferentLengthsAlongDimension0) {
  Tensor list = PushBack(PushBack(Empty(), MakeTensor<float>({1, 2}, {1, 2})),
                         MakeTensor<float>({2, 2}, {3, 4, 5, 6}));
  const Tensor joined = MakeTensor<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  for (const PartialTensorShape& attr :
       {PartialTensorShape::UnknownRank(), PartialTensorShape({-1, 2}),
        // As TensorFlow's V1 does, the attr's dimension 0 is not checked against the elements'.
        PartialTensorShape({1, 2})}) {
    SCOPED_TRACE(attr.ToString());
    auto [tensor, lengths] = Concat(list, ConcatNode(attr));
    test::ExpectTensorEqual(joined, tensor);
    EXPECT_EQ(lengths, (std::vector<int64_t>{1, 2}));
  }
  ExpectError(ConcatNode({-1, 3}), {list}, {"element 0", "[1,2]", "[3]"});
  ExpectError(ConcatNode(), {PushBack(list, MakeTensor<float>({1, 3}, {7, 8, 9}))},
              {"element 2", "[1,3]", "[2]"});
  ExpectError(ConcatNode(), {PushBack(Empty(), MakeScalar(1.0f))},
              {"Concat saw a scalar shape at index 0 but requires at least vectors."});
  ExpectError(ConcatNode(PartialTensorShape({})), {list}, {"element_shape must not be empty"});
  ExpectError(MakeNode("TensorListConcat", 1, {{"element_dtype", I32()}}), {list},
              {"Invalid data types; op elements int32 but list elements float"});
}

TEST(TensorList, ConcatV1ReadsTheListsElementShape) {
  // A list of partially known element shape, and one of a fully defined shape with the default
  // attr (which TensorFlow's V1 refuses: it reads only its attr).
  Tensor partial = PushBack(Empty(MakeVector<int32_t>({-1, 2})), MakeTensor<float>({1, 2}, {1, 2}));
  auto [tensor, lengths] = Concat(partial);
  test::ExpectTensorEqual(MakeTensor<float>({1, 2}, {1, 2}), tensor);
  EXPECT_EQ(lengths, (std::vector<int64_t>{1}));
  Tensor full =
      PushBack(Empty(MakeVector<int32_t>({2, 2})), MakeTensor<float>({2, 2}, {1, 2, 3, 4}));
  full = PushBack(full, MakeTensor<float>({2, 2}, {5, 6, 7, 8}));
  std::tie(tensor, lengths) = Concat(full);
  test::ExpectTensorEqual(MakeTensor<float>({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8}), tensor);
  EXPECT_EQ(lengths, (std::vector<int64_t>{2, 2}));
  // An attr that contradicts the list is an error (TensorFlow's V1 reads past the elements).
  ExpectError(ConcatNode({-1, 3}), {full}, {"[2,2]", "[?,3]"});
}

TEST(TensorList, ConcatV1OfAnEmptyListNeedsTheShapePastDimension0) {
  auto [tensor, lengths] = Concat(Empty(), ConcatNode({-1, 2}));
  EXPECT_EQ(tensor.shape(), TensorShape({0, 2}));
  EXPECT_TRUE(lengths.empty());
  std::tie(tensor, lengths) = Concat(Empty(MakeVector<int32_t>({5, 3})));
  EXPECT_EQ(tensor.shape(), TensorShape({0, 3}));
  ExpectError(ConcatNode(), {Empty()},
              {"All except the first dimension must be fully defined when concating an empty "
               "tensor list. element_shape: <unknown>"});
  ExpectError(ConcatNode({-1, -1}), {Empty()}, {"empty tensor list", "[?]"});
}

TEST(TensorList, ConcatV1GivesUnsetElementsTheDimension0TheSetOnesShare) {
  // Elements 0 and 2 are unset: zeros of the one row that element 1 has.
  Tensor one_set = RunOk(SetItemNode(), {Reserve(UnknownShape(), 3), MakeScalar(1),
                                         MakeTensor<float>({1, 2}, {1, 2})});
  auto [tensor, lengths] = Concat(one_set);
  test::ExpectTensorEqual(MakeTensor<float>({3, 2}, {0, 0, 1, 2, 0, 0}), tensor);
  EXPECT_EQ(lengths, (std::vector<int64_t>{1, 1, 1}));
  // The list's element shape fixes dimension 0 for an all-unset list.
  std::tie(tensor, lengths) = Concat(Reserve(MakeVector<int32_t>({2, 1}), 2));
  test::ExpectTensorEqual(MakeTensor<float>({4, 1}, {0, 0, 0, 0}), tensor);
  EXPECT_EQ(lengths, (std::vector<int64_t>{2, 2}));
  // Set elements of 1 and 2 rows share no dimension 0, and V1 has no leading_dims.
  Tensor two_set =
      RunOk(SetItemNode(), {one_set, MakeScalar(2), MakeTensor<float>({2, 2}, {3, 4, 5, 6})});
  ExpectError(ConcatNode(), {two_set},
              {"Concating lists with uninitialized tensors is not supported", "element 0 is unset",
               "leading_dims"});
  // The attr's dimension 0 is not used (as in TensorFlow), so nothing fixes it here.
  ExpectError(ConcatNode({1, 2}), {Reserve(MakeVector<int32_t>({-1, 2}), 2)},
              {"element 0 is unset"});
}

TEST(TensorList, ConcatV2TakesDimension0FromLeadingDimsTheShapeOrTheSetElements) {
  Tensor one_set = RunOk(SetItemNode(), {Reserve(UnknownShape(), 3), MakeScalar(1),
                                         MakeTensor<float>({1, 2}, {1, 2})});
  // No leading_dims: the set element's dimension 0; leading_dims covering element 0 only.
  for (const auto& [leading, expected_lengths] :
       std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>{{{}, {1, 1, 1}},
                                                                          {{2}, {2, 1, 1}}}) {
    auto out = RunNode(ConcatV2Node(), {one_set, UnknownShape(), MakeVector<int64_t>(leading)});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(Values<int64_t>((*out)[1]), expected_lengths);
    EXPECT_EQ((*out)[0].dim(0), 3 + (leading.empty() ? 0 : 1));
  }
  // The element_shape input's dimension 0 for an all-unset list; it must fit the set elements.
  auto zeros = RunNode(ConcatV2Node(), {Reserve(MakeVector<int32_t>({-1, 2}), 2),
                                        MakeVector<int32_t>({3, 2}), MakeVector<int64_t>({})});
  ASSERT_TRUE(zeros.ok()) << zeros.status();
  EXPECT_EQ((*zeros)[0].shape(), TensorShape({6, 2}));
  ExpectError(ConcatV2Node(), {one_set, MakeVector<int32_t>({2, 2}), MakeVector<int64_t>({})},
              {"element 1", "[1,2]", "dimension 0 at 2"});
  ExpectError(ConcatV2Node(), {one_set, UnknownShape(), MakeVector<int64_t>({-4})},
              {"leading_dims[0]", "-4"});
  ExpectError(
      ConcatV2Node(),
      {PushBack(Empty(), MakeScalar(1.0f)), MakeVector<int32_t>({}), MakeVector<int64_t>({})},
      {"at least vectors", "[]"});
}

NodeDef ScatterNode(DataType shape_type = DT_INT32) {
  return MakeNode("TensorListScatter", 3,
                  {{"element_dtype", F32()}, {"shape_type", AttrValue::Type(shape_type)}});
}

TEST(TensorList, ScatterV1ListsAsManyElementsAsTheLargestIndexNeeds) {
  Tensor rows = MakeTensor<float>({2, 2}, {1, 2, 3, 4});
  Tensor list = RunOk(ScatterNode(), {rows, MakeVector<int32_t>({2, 0}), UnknownShape()});
  EXPECT_EQ(Length(list), 3);
  // Element 1 is unset: zeros of the element shape the stack asks for.
  EXPECT_EQ(Values<float>(RunOk(StackNode(), {list, MakeVector<int32_t>({2})})),
            (std::vector<float>{3, 4, 0, 0, 1, 2}));
  // The element shape it keeps (int64 here), and the last row written to an index wins.
  Tensor dup =
      RunOk(ScatterNode(DT_INT64), {rows, MakeVector<int32_t>({0, 0}), MakeVector<int64_t>({-1})});
  EXPECT_EQ(Length(dup), 1);
  EXPECT_EQ(Values<float>(RunOk(StackNode(), {dup, UnknownShape()})), (std::vector<float>{3, 4}));
  EXPECT_EQ(
      Values<int32_t>(RunOk(MakeNode("TensorListElementShape", 1, {{"shape_type", I32()}}), {dup})),
      (std::vector<int32_t>{-1}));
  Tensor none = RunOk(ScatterNode(), {MakeTensor<float>({0, 2}, {}), MakeVector<int32_t>({}),
                                      MakeVector<int32_t>({2})});
  EXPECT_EQ(Length(none), 0);
}

TEST(TensorList, ScatterErrorsNameTheIndexTheRowsAndTheShapes) {
  Tensor rows = MakeTensor<float>({1, 2}, {1, 2});
  ExpectError(ScatterNode(), {rows, MakeVector<int32_t>({-1}), UnknownShape()},
              {"Indices in TensorListScatter must all be non-negative", "-1"});
  ExpectError(ScatterNode(), {rows, MakeVector<int32_t>({0, 1}), UnknownShape()},
              {"Invalid number of rows in input tensor. Expected: 2 Actual: 1"}, true);
  ExpectError(ScatterNode(), {rows, MakeVector<int32_t>({0}), MakeVector<int32_t>({3})},
              {"TensorListScatter", "[3]", "[2]"});
  ExpectError(ScatterNode(), {MakeScalar(1.0f), MakeVector<int32_t>({0}), UnknownShape()},
              {"rank >= 1"}, true);
  // V2 with num_elements: an index past it is an error, not a longer list (as in TensorFlow).
  NodeDef v2 =
      MakeNode("TensorListScatterV2", 4, {{"element_dtype", F32()}, {"shape_type", I32()}});
  ExpectError(v2, {rows, MakeVector<int32_t>({3}), UnknownShape(), MakeScalar(2)},
              {"Trying to scatter at index 3", "list with size 2"});
  EXPECT_EQ(Length(RunOk(v2, {rows, MakeVector<int32_t>({3}), UnknownShape(), MakeScalar(-1)})), 4);
}

// A variant vector holding the lists of `lists` (scalar list tensors), and list k of such a
// vector as a scalar list tensor.
Tensor Batch(const std::vector<Tensor>& lists) {
  Tensor batch(DT_VARIANT, TensorShape({static_cast<int64_t>(lists.size())}));
  for (size_t k = 0; k < lists.size(); ++k) batch.at<Variant>(k) = lists[k].at<Variant>(0);
  return batch;
}
Tensor ListOf(const Tensor& batch, int64_t k) {
  Tensor list(DT_VARIANT, TensorShape());
  list.at<Variant>(0) = batch.at<Variant>(k);
  return list;
}
std::vector<float> Stacked(const Tensor& list) {
  return Values<float>(RunOk(StackNode(), {list, UnknownShape()}));
}
NodeDef ConcatListsNode(const AttrValue& dtype = F32()) {
  return MakeNode("TensorListConcatLists", 2, {{"element_dtype", dtype}});
}
NodeDef PushBackBatchNode() {
  return MakeNode("TensorListPushBackBatch", 2, {{"element_dtype", F32()}});
}

TEST(TensorList, ConcatListsAppendsListBToListAElementWise) {
  Tensor a0 = PushBack(Empty(), MakeVector<float>({1}));
  Tensor a1 = PushBack(PushBack(Empty(), MakeVector<float>({2})), MakeVector<float>({3}));
  Tensor b0 = PushBack(Empty(), MakeVector<float>({4}));
  Tensor a = Batch({a0, a1});
  Tensor out = RunOk(ConcatListsNode(), {a, Batch({b0, Empty()})});
  EXPECT_EQ(out.shape(), TensorShape({2}));
  EXPECT_EQ(Stacked(ListOf(out, 0)), (std::vector<float>{1, 4}));
  EXPECT_EQ(Stacked(ListOf(out, 1)), (std::vector<float>{2, 3}));
  // The input lists are unchanged; the tensors may be scalars; a list may be joined to itself.
  EXPECT_EQ(Length(ListOf(a, 0)), 1);
  EXPECT_EQ(Stacked(RunOk(ConcatListsNode(), {a1, b0})), (std::vector<float>{2, 3, 4}));
  EXPECT_EQ(Stacked(ListOf(RunOk(ConcatListsNode(), {a, a}), 1)), (std::vector<float>{2, 3, 2, 3}));
  // Unset elements stay unset, and, as TensorFlow's, a's max_num_elements is not checked.
  Tensor joined = RunOk(
      ConcatListsNode(),
      {PushBack(Empty(UnknownShape(), 1), MakeVector<float>({5})), Reserve(UnknownShape(), 2)});
  EXPECT_EQ(Length(joined), 3);
  EXPECT_EQ(Stacked(joined), (std::vector<float>{5, 0, 0}));
}

TEST(TensorList, ConcatListsErrorsNameTheInputAndIndex) {
  Tensor list = PushBack(Empty(), MakeVector<float>({1}));
  Tensor ints =
      RunOk(MakeNode("EmptyTensorList", 2, {{"element_dtype", I32()}, {"shape_type", I32()}}),
            {UnknownShape(), MakeScalar(-1)});
  ExpectError(ConcatListsNode(), {Batch({list, list}), Batch({list, list, list})},
              {"input_a has shape [2] and input_b has shape [3]"});
  ExpectError(ConcatListsNode(), {Batch({list, list}), Batch({list, list, list})},
              {"Incompatible input TensorList tensor shapes", "[2]", "[3]"}, true);
  ExpectError(ConcatListsNode(), {Batch({list, list}), Batch({list, ints})},
              {"input_b[1]", "op elements float but list elements int32"});
  ExpectError(ConcatListsNode(I32()), {Batch({list, list}), Batch({list, ints})},
              {"input_a[0]", "op elements int32 but list elements float"});
  ExpectError(ConcatListsNode(),
              {Batch({list, list}), Batch({list, Empty(MakeVector<int32_t>({1}))})},
              {"element shapes are not identical at index 1", "<unknown>", "[1]"});
  Tensor hole(DT_VARIANT, TensorShape({1}));
  ExpectError(ConcatListsNode(), {hole, Batch({list})},
              {"input_a[0] must hold a TensorList, got an empty variant"});
}

TEST(TensorList, PushBackBatchAppendsRowKToListK) {
  Tensor a0 = PushBack(Empty(), MakeVector<float>({1}));
  Tensor a1 = PushBack(PushBack(Empty(), MakeVector<float>({2})), MakeVector<float>({3}));
  Tensor handles = Batch({a0, a1});
  Tensor out = RunOk(PushBackBatchNode(), {handles, MakeTensor<float>({2, 1}, {7, 8})});
  EXPECT_EQ(out.shape(), TensorShape({2}));
  EXPECT_EQ(Stacked(ListOf(out, 0)), (std::vector<float>{1, 7}));
  EXPECT_EQ(Stacked(ListOf(out, 1)), (std::vector<float>{2, 3, 8}));
  EXPECT_EQ(Length(ListOf(handles, 1)), 2) << "PushBackBatch changed its input";
  // As TensorFlow's, a full list takes the row; an empty batch is an empty vector.
  Tensor full = PushBack(Empty(UnknownShape(), 1), MakeVector<float>({1}));
  EXPECT_EQ(Length(ListOf(
                RunOk(PushBackBatchNode(), {Batch({full}), MakeTensor<float>({1, 1}, {2})}), 0)),
            2);
  EXPECT_EQ(RunOk(PushBackBatchNode(), {Batch({}), MakeTensor<float>({0, 3}, {})}).shape(),
            TensorShape({0}));
}

TEST(TensorList, PushBackBatchErrorsNameTheBatchSizeAndTheList) {
  Tensor list = PushBack(Empty(MakeVector<int32_t>({1})), MakeVector<float>({1}));
  Tensor handles = Batch({list, list});
  // Three rows for two lists: shape inference, then the kernel itself.
  ExpectError(PushBackBatchNode(), {handles, MakeTensor<float>({3, 1}, {7, 8, 9})},
              {"input_handles holds 2 lists but tensor has 3 rows"});
  ExpectError(PushBackBatchNode(), {handles, MakeTensor<float>({3, 1}, {7, 8, 9})},
              {"tensor.shape[0] == input_handles.size", "3 vs. 2"}, true);
  ExpectError(PushBackBatchNode(), {handles, MakeScalar(1.0f)}, {"at least a vector", "[]"}, true);
  ExpectError(PushBackBatchNode(), {list, MakeTensor<float>({1, 1}, {7})},
              {"input_handles to be a vector", "[]"}, true);
  ExpectError(PushBackBatchNode(),
              {Batch({list, Empty(MakeVector<int32_t>({2}))}), MakeTensor<float>({2, 1}, {7, 8})},
              {"input_handles[1]", "[1]", "[2]", "incompatible"});
  Tensor ints =
      RunOk(MakeNode("EmptyTensorList", 2, {{"element_dtype", I32()}, {"shape_type", I32()}}),
            {UnknownShape(), MakeScalar(-1)});
  ExpectError(PushBackBatchNode(), {Batch({list, ints}), MakeTensor<float>({2, 1}, {7, 8})},
              {"input_handles[1]", "op elements float but list elements int32"});
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
  auto concat = InferNodeShapes(rt, ConcatNode({4, -1, 3}), {PartialTensorShape({})}, {});
  ASSERT_TRUE(concat.ok()) << concat.status();
  EXPECT_EQ((*concat)[0], PartialTensorShape({-1, -1, 3}));
  EXPECT_EQ((*concat)[1], PartialTensorShape({-1}));
  auto scatter = InferNodeShapes(
      rt, ScatterNode(),
      {PartialTensorShape({2, 3}), PartialTensorShape({2}), PartialTensorShape({1})}, {});
  ASSERT_TRUE(scatter.ok()) << scatter.status();
  EXPECT_EQ((*scatter)[0], PartialTensorShape({}));
  EXPECT_FALSE(InferNodeShapes(
                   rt, ScatterNode(),
                   {PartialTensorShape({}), PartialTensorShape({2}), PartialTensorShape({1})}, {})
                   .ok());
  auto lists = InferNodeShapes(rt, ConcatListsNode(),
                               {PartialTensorShape({2, -1}), PartialTensorShape({-1, 3})}, {});
  ASSERT_TRUE(lists.ok()) << lists.status();
  EXPECT_EQ((*lists)[0], PartialTensorShape({2, 3}));
  auto batch = InferNodeShapes(rt, PushBackBatchNode(),
                               {PartialTensorShape({-1}), PartialTensorShape({4, 2})}, {});
  ASSERT_TRUE(batch.ok()) << batch.status();
  EXPECT_EQ((*batch)[0], PartialTensorShape({4}));
  EXPECT_FALSE(InferNodeShapes(rt, PushBackBatchNode(),
                               {PartialTensorShape({}), PartialTensorShape({4, 2})}, {})
                   .ok());
}

}  // namespace
}  // namespace cfx
