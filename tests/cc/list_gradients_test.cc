// Gradients of the TensorList ops (core/src/cc/list_grad.cc) against finite differences, through
// lists built and read in every way the forward ops allow: rows, pushes and scatters (V1 and V2)
// in, stacks, pops, items, gathers and concatenations (V1 and V2) out, with elements overwritten,
// scattered, resized and left unset (their gradients read as zeros), and through a WhileLoop (a
// list loop variable and a list loop invariant) and a Cond. A list read twice sums its gradient
// lists with AddN of variants; a list output no one differentiates gets ZerosLike of a variant.
// Those two kernels are also checked directly here (their errors in
// tests/kernels/tensor_list_test.cc).
#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <string>

#include "conflux/cc/client_session.h"
#include "conflux/cc/control_flow.h"
#include "conflux/cc/gradient_checker.h"
#include "conflux/cc/gradients.h"
#include "conflux/cc/ops/standard_ops.h"
#include "kernel_test_util.h"

namespace cfx {
namespace {

using test::TestRuntime;
using X = std::vector<Output>;

Tensor RandomList(TensorShape shape, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(-1, 1);
  Tensor t(DT_DOUBLE, shape);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.at<double>(i) = dist(gen);
  return t;
}

// The largest difference between the symbolic and the numeric Jacobian of build(xs) at `inputs`
// (double placeholders). Fails the test when building or running the gradient fails.
double GradientError(const std::vector<Tensor>& inputs,
                     const std::function<Output(const Scope&, const X&)>& build) {
  Scope root = Scope::NewRootScope(&TestRuntime());
  X xs;
  for (size_t i = 0; i < inputs.size(); ++i) xs.push_back(ops::Placeholder(root, DT_DOUBLE));
  Output y = build(root, xs);
  auto err = ComputeGradientError(root, &TestRuntime(), xs, inputs, {y}, 1e-5);
  EXPECT_TRUE(err.ok()) << err.status();
  return err.ok() ? *err : 1e9;
}

constexpr double kBound = 1e-6;

// A list of the rows of `t`, of unknown element shape (as TensorFlow's tf.TensorArray v2 makes).
Output Rows(const Scope& s, const Output& t) { return ops::TensorListFromTensor(s, t, -1); }
Output Stack(const Scope& s, const Output& list, const Input& element_shape = -1) {
  return ops::TensorListStack(s, list, element_shape, DT_DOUBLE);
}
Output Item(const Scope& s, const Output& list, int index) {
  return ops::TensorListGetItem(s, list, index, -1, DT_DOUBLE);
}

TEST(ListGradients, FromTensorThenStack) {
  // Weighted so that a row moved to another index changes the gradient.
  const Tensor w = RandomList({3, 2}, 2);
  EXPECT_LT(GradientError({RandomList({3, 2}, 1)},
                          [&](const Scope& s, const X& x) {
                            return ops::Mul(s, Stack(s, Rows(s, x[0])), ops::Const(s, w));
                          }),
            kBound);
}

TEST(ListGradients, PushBackChainThenStack) {
  EXPECT_LT(GradientError({RandomList({2}, 3), RandomList({2}, 4)},
                          [](const Scope& s, const X& x) {
                            Output list = ops::EmptyTensorList(s, {2}, -1, DT_DOUBLE);
                            list = ops::TensorListPushBack(s, list, ops::Sin(s, x[0]));
                            list = ops::TensorListPushBack(s, list, ops::Mul(s, x[0], x[1]));
                            list = ops::TensorListPushBack(s, list, x[1]);
                            return Stack(s, list, {2});
                          }),
            kBound);
}

TEST(ListGradients, PopBackBothOutputs) {
  // The popped row times the rows left: both outputs of PopBack carry a gradient.
  EXPECT_LT(GradientError({RandomList({3, 2}, 5)},
                          [](const Scope& s, const X& x) {
                            auto popped = ops::TensorListPopBack(s, Rows(s, x[0]), -1, DT_DOUBLE);
                            return ops::Mul(s, Stack(s, popped.output_handle), popped.tensor);
                          }),
            kBound);
}

TEST(ListGradients, PopBackOfTheItemAloneGetsAZerosLikeListForTheRest) {
  // The list PopBack outputs is not read: its gradient is ZerosLike of a list.
  EXPECT_LT(GradientError({RandomList({3, 2}, 6)},
                          [](const Scope& s, const X& x) {
                            auto popped = ops::TensorListPopBack(s, Rows(s, x[0]), -1, DT_DOUBLE);
                            return ops::Square(s, popped.tensor);
                          }),
            kBound);
}

TEST(ListGradients, GetItemLeavesTheOtherElementsUnsetWhichStackAsZeros) {
  EXPECT_LT(GradientError({RandomList({3, 2}, 7)},
                          [](const Scope& s, const X& x) {
                            return ops::Square(s, Item(s, Rows(s, x[0]), 1));
                          }),
            kBound);
}

TEST(ListGradients, GetItemReadTwiceSumsTheGradientListsWithAddN) {
  // Element 0 is read twice and element 2 once: three gradient lists, summed by AddN.
  EXPECT_LT(GradientError({RandomList({3, 2}, 8)},
                          [](const Scope& s, const X& x) {
                            Output list = Rows(s, x[0]);
                            Output first = Item(s, list, 0);
                            return ops::Add(s, ops::Mul(s, first, Item(s, list, 2)),
                                            ops::Sin(s, Item(s, list, 0)));
                          }),
            kBound);
}

TEST(ListGradients, SetItemOverwritesOneElement) {
  // Row 1 of x is overwritten: its gradient is zero, v's is row 1 of the stack's.
  const Tensor w = RandomList({3, 2}, 11);
  EXPECT_LT(GradientError({RandomList({3, 2}, 9), RandomList({2}, 10)},
                          [&](const Scope& s, const X& x) {
                            Output list =
                                ops::TensorListSetItem(s, Rows(s, x[0]), 1, ops::Sin(s, x[1]));
                            return ops::Mul(s, Stack(s, list), ops::Const(s, w));
                          }),
            kBound);
}

TEST(ListGradients, SetItemThatGrowsTheListResizesItsGradientBack) {
  // Two rows, then element 3 set: element 2 is unset (zeros in the stack), and the list's
  // gradient is cut back to the two rows.
  const Tensor w = RandomList({4, 2}, 14);
  EXPECT_LT(GradientError({RandomList({2, 2}, 12), RandomList({2}, 13)},
                          [&](const Scope& s, const X& x) {
                            Output list = ops::TensorListSetItem(
                                s, Rows(s, x[0]), 3, x[1],
                                ops::TensorListSetItemAttrs().ResizeIfIndexOutOfBounds(true));
                            return ops::Mul(s, Stack(s, list, {2}), ops::Const(s, w));
                          }),
            kBound);
}

TEST(ListGradients, ResizeShrinkingAndGrowing) {
  EXPECT_LT(GradientError({RandomList({3, 2}, 15)},
                          [](const Scope& s, const X& x) {
                            Output shrunk = ops::TensorListResize(s, Rows(s, x[0]), 2);
                            Output grown = ops::TensorListResize(s, shrunk, 4);
                            return ops::Square(s, Stack(s, grown, {2}));
                          }),
            kBound);
}

TEST(ListGradients, GatherScattersItsGradientIntoAListLikeTheInput) {
  EXPECT_LT(
      GradientError({RandomList({3, 2}, 16)},
                    [](const Scope& s, const X& x) {
                      Output rows = ops::TensorListGather(s, Rows(s, x[0]), {2, 0}, -1, DT_DOUBLE);
                      return ops::Sin(s, rows);
                    }),
      kBound);
}

TEST(ListGradients, ScatterV2GathersItsGradient) {
  // Rows scattered to 2 and 0 of a list of 4: elements 1 and 3 stay unset (zeros).
  const Tensor w = RandomList({4, 2}, 18);
  EXPECT_LT(GradientError({RandomList({2, 2}, 17)},
                          [&](const Scope& s, const X& x) {
                            Output list = ops::TensorListScatterV2(s, x[0], {2, 0}, {2}, 4);
                            return ops::Mul(s, Stack(s, list, {2}), ops::Const(s, w));
                          }),
            kBound);
}

TEST(ListGradients, ScatterIntoExistingListZeroesTheOverwrittenElements) {
  const Tensor w = RandomList({3, 2}, 21);
  EXPECT_LT(GradientError({RandomList({3, 2}, 19), RandomList({2, 2}, 20)},
                          [&](const Scope& s, const X& x) {
                            Output list = ops::TensorListScatterIntoExistingList(
                                s, Rows(s, x[0]), ops::Square(s, x[1]), {2, 0});
                            return ops::Mul(s, Stack(s, list), ops::Const(s, w));
                          }),
            kBound);
}

TEST(ListGradients, SplitThenConcat) {
  const Tensor w = RandomList({5, 2}, 23);
  EXPECT_LT(GradientError(
                {RandomList({5, 2}, 22)},
                [&](const Scope& s, const X& x) {
                  Output list = ops::TensorListSplit(s, x[0], {-1, 2}, std::vector<int64_t>{2, 3});
                  auto concat =
                      ops::TensorListConcatV2(s, list, {-1, 2}, std::vector<int64_t>{}, DT_DOUBLE);
                  return ops::Mul(s, concat.tensor, ops::Const(s, w));
                }),
            kBound);
}

TEST(ListGradients, SplitThenGetItemConcatenatesUnsetPiecesAsZeros) {
  // Only piece 1 (rows 2..4) is read: piece 0's gradient is unset and reads as two zero rows.
  EXPECT_LT(GradientError(
                {RandomList({5, 2}, 24)},
                [](const Scope& s, const X& x) {
                  Output list = ops::TensorListSplit(s, x[0], {-1, 2}, std::vector<int64_t>{2, 3});
                  return ops::Square(s, Item(s, list, 1));
                }),
            kBound);
}

TEST(ListGradients, SplitThenConcatV1) {
  // TensorListConcat (V1) has ConcatV2's gradient: the tensor's gradient split by the lengths.
  const Tensor w = RandomList({5, 2}, 29);
  EXPECT_LT(GradientError(
                {RandomList({5, 2}, 28)},
                [&](const Scope& s, const X& x) {
                  Output list = ops::TensorListSplit(s, x[0], {-1, 2}, std::vector<int64_t>{3, 2});
                  auto concat = ops::TensorListConcat(
                      s, list, DT_DOUBLE, ops::TensorListConcatAttrs().ElementShape({-1, 2}));
                  return ops::Mul(s, concat.tensor, ops::Const(s, w));
                }),
            kBound);
}

TEST(ListGradients, ScatterV1ThenConcatV1ReadsTheUnsetElementAsZeros) {
  // Rows 0 and 1 of x scattered to 2 and 0: element 1 is unset and concatenates as zeros of the
  // two rows the set elements share; its gradient is dropped, the others are gathered back.
  const Tensor w = RandomList({6, 3}, 31);
  EXPECT_LT(GradientError({RandomList({2, 2, 3}, 30)},
                          [&](const Scope& s, const X& x) {
                            Output list = ops::TensorListScatter(s, ops::Sin(s, x[0]), {2, 0}, -1);
                            auto concat = ops::TensorListConcat(s, list, DT_DOUBLE);
                            return ops::Mul(s, concat.tensor, ops::Const(s, w));
                          }),
            kBound);
}

TEST(ListGradients, ScatterV1ThenStack) {
  const Tensor w = RandomList({4, 2}, 33);
  EXPECT_LT(GradientError({RandomList({3, 2}, 32)},
                          [&](const Scope& s, const X& x) {
                            Output list = ops::TensorListScatter(s, x[0], {3, 0, 1}, {2});
                            return ops::Mul(s, Stack(s, list, {2}), ops::Const(s, w));
                          }),
            kBound);
}

TEST(ListGradients, BatchedListOpsAreNotDifferentiable) {
  // As TensorFlow's list_ops.py declares them: a path through them carries no gradient.
  for (const char* op : {"TensorListConcatLists", "TensorListPushBackBatch"})
    EXPECT_TRUE(StandardGradients().IsNoGradient(op)) << op;
  Scope root = Scope::NewRootScope(&TestRuntime());
  Output x = ops::Placeholder(root, DT_DOUBLE);
  Output joined =
      ops::TensorListConcatLists(root, Rows(root, x), Rows(root, ops::Square(root, x)), DT_DOUBLE);
  Output y = ops::Add(root, ops::Sum(root, Stack(root, joined), 0), x);
  std::vector<Output> grads;
  ASSERT_OK(AddSymbolicGradients(root, {y}, {x}, &grads));
  ClientSession session(root, &TestRuntime());
  std::vector<Tensor> out;
  ASSERT_OK(session.Run({{x, {2.0, 3.0}}}, grads, &out));
  // Only y's direct term in x: d(x)/dx = 1 each, nothing through the lists.
  EXPECT_EQ(out[0].at<double>(0), 1.0);
  EXPECT_EQ(out[0].at<double>(1), 1.0);
}

// for (i = 0; i < 3; ++i) vars = body(i, vars), returning the final vars (after the counter).
std::vector<Output> ThreeTimes(
    const Scope& s, const std::vector<Output>& vars,
    const std::function<std::vector<Output>(const Scope&, const Output& i, const X& vars)>& body) {
  std::vector<Output> init{ops::Const(s, 0)};
  init.insert(init.end(), vars.begin(), vars.end());
  std::vector<Output> out;
  Status status = WhileLoop(
      s, init,
      [](const Scope& c, const X& v, Output* pred) {
        *pred = ops::Less(c, v[0], 3);
        return c.status();
      },
      [&](const Scope& b, const X& v, X* next) {
        *next = {ops::AddV2(b, v[0], 1)};
        X rest = body(b, v[0], X(v.begin() + 1, v.end()));
        next->insert(next->end(), rest.begin(), rest.end());
        return b.status();
      },
      &out);
  EXPECT_TRUE(status.ok()) << status;
  return X(out.begin() + 1, out.end());
}

TEST(ListGradients, PushBackInAWhileLoopPopsInTheBackwardLoop) {
  // The list is a loop variable: its gradient runs through the backward loop, one PopBack per
  // iteration; x is a loop invariant whose gradient sums the popped rows.
  EXPECT_LT(GradientError({RandomList({2}, 25)},
                          [](const Scope& s, const X& x) {
                            Output empty = ops::EmptyTensorList(s, {2}, -1, DT_DOUBLE);
                            X out = ThreeTimes(
                                s, {empty}, [&](const Scope& b, const Output& i, const X& v) -> X {
                                  Output scale = ops::Cast(b, ops::AddV2(b, i, 1), DT_DOUBLE);
                                  Output row = ops::Mul(b, ops::Sin(b, x[0]), scale);
                                  return {ops::TensorListPushBack(b, v[0], row)};
                                });
                            return Stack(s, out[0], {2});
                          }),
            kBound);
}

TEST(ListGradients, GetItemOfALoopInvariantListSumsItsGradientListsInTheLoop) {
  // The list is a loop invariant read once per iteration: its gradient is the sum (AddN of lists)
  // of one gradient list per iteration, each with one element set.
  EXPECT_LT(GradientError({RandomList({3, 2}, 26)},
                          [](const Scope& s, const X& x) {
                            Output list = Rows(s, x[0]);
                            Output zero = ops::ZerosLike(s, Item(s, list, 0));
                            X out = ThreeTimes(
                                s, {zero}, [&](const Scope& b, const Output& i, const X& v) -> X {
                                  Output item = ops::TensorListGetItem(b, list, i, -1, DT_DOUBLE);
                                  return {ops::AddV2(b, v[0], ops::Square(b, item))};
                                });
                            return out[0];
                          }),
            kBound);
}

TEST(ListGradients, GetItemInTheBranchesOfACond) {
  // The list enters both branches through a Switch: the taken branch's gradient list comes back
  // through the Switch's gradient (a Merge of lists).
  for (bool take : {true, false}) {
    SCOPED_TRACE(take ? "true branch" : "false branch");
    EXPECT_LT(GradientError({RandomList({3, 2}, 27)},
                            [&](const Scope& s, const X& x) {
                              Output list = Rows(s, x[0]);
                              X out;
                              Status status = Cond(
                                  s, ops::Const(s, take),
                                  [&](const Scope& b, X* o) {
                                    *o = {ops::Square(b, Item(b, list, 0))};
                                    return b.status();
                                  },
                                  [&](const Scope& b, X* o) {
                                    *o = {ops::Sin(b, Item(b, list, 2))};
                                    return b.status();
                                  },
                                  &out);
                              EXPECT_TRUE(status.ok()) << status;
                              return out[0];
                            }),
              kBound);
  }
}

// The values of `list` stacked with element shape [2] (unset elements: zeros), and its length.
void ExpectList(const Scope& root, const Output& list, const std::vector<double>& values,
                int length) {
  ClientSession session(root, &TestRuntime());
  std::vector<Tensor> out;
  ASSERT_OK(session.Run({}, {Stack(root, list, {2}), ops::TensorListLength(root, list)}, &out));
  ASSERT_EQ(out[0].num_elements(), static_cast<int64_t>(values.size()));
  for (size_t i = 0; i < values.size(); ++i)
    EXPECT_EQ(out[0].at<double>(static_cast<int64_t>(i)), values[i]) << "at " << i;
  EXPECT_EQ(out[1].at<int32_t>(0), length);
}

TEST(ListGradientKernels, ZerosLikeOfAListZeroesSetElementsAndLeavesUnsetOnes) {
  Scope root = Scope::NewRootScope(&TestRuntime());
  Output list = ops::TensorListSetItem(root, ops::TensorListReserve(root, -1, 3, DT_DOUBLE), 1,
                                       ops::Const(root, {4.0, 5.0}));
  Output zeros = ops::ZerosLike(root, list);
  ExpectList(root, zeros, {0, 0, 0, 0, 0, 0}, 3);
  // Element 0 stayed unset: with no element shape, GetItem reads zeros of the set element's.
  ClientSession session(root, &TestRuntime());
  std::vector<Tensor> out;
  ASSERT_OK(session.Run({}, {Item(root, zeros, 0), Item(root, zeros, 1)}, &out));
  EXPECT_EQ(out[0].shape(), TensorShape({2}));
  EXPECT_EQ(out[1].shape(), TensorShape({2}));
}

TEST(ListGradientKernels, AddNOfListsSumsElementWiseAndUnsetReadsAsTheOther) {
  Scope root = Scope::NewRootScope(&TestRuntime());
  Output reserved = ops::TensorListReserve(root, {2}, 3, DT_DOUBLE);
  Output a = ops::TensorListSetItem(root, reserved, 0, ops::Const(root, {1.0, 2.0}));
  Output b = ops::TensorListSetItem(root, reserved, 0, ops::Const(root, {10.0, 20.0}));
  b = ops::TensorListSetItem(root, b, 2, ops::Const(root, {30.0, 40.0}));
  Tensor rows(DT_DOUBLE, TensorShape({3, 2}));
  for (int64_t i = 0; i < 6; ++i) rows.at<double>(i) = 100.0 * (i + 1);
  Output c = ops::TensorListFromTensor(root, ops::Const(root, rows), -1);
  ExpectList(root, ops::AddN(root, {a, b}), {11, 22, 0, 0, 30, 40}, 3);
  ExpectList(root, ops::AddN(root, {a, b, c}), {111, 222, 300, 400, 530, 640}, 3);
}

TEST(ListGradientKernels, AddNOfListsOfDifferentLengthsIsAnErrorNamingBoth) {
  Scope root = Scope::NewRootScope(&TestRuntime());
  Output two = ops::TensorListReserve(root, {2}, 2, DT_DOUBLE);
  Output three = ops::TensorListReserve(root, {2}, 3, DT_DOUBLE);
  Output sum = ops::AddN(root, {two, three});
  ClientSession session(root, &TestRuntime());
  std::vector<Tensor> out;
  Status s = session.Run({}, {ops::TensorListLength(root, sum)}, &out);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("different lengths. One is 2 and the other is 3"), std::string::npos)
      << s;
}

}  // namespace
}  // namespace cfx
