// InTopKV2 from the ops-nn plugin: against a direct count of higher-scoring classes, TensorFlow's
// treatment of ties, non-finite predictions and out-of-range targets, bad shapes and shape
// inference.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "nn_test_util.h"
#include "numeric_check.h"

namespace cfx {
namespace {

using namespace test;  // NOLINT
using P = PartialTensorShape;

NodeDef InTopKNode(DataType t = DT_INT32) {
  return MakeNode("InTopKV2", 3, {{"T", AttrValue::Type(t)}});
}

// Reference: the target is in the top k when fewer than k finite classes score strictly higher,
// the whole row is finite and the target is a valid class.
bool Reference(const std::vector<float>& row, int64_t target, int64_t k) {
  if (target < 0 || target >= static_cast<int64_t>(row.size())) return false;
  int64_t higher = 0;
  for (float v : row) {
    if (!std::isfinite(v)) return false;
    higher += v > row[target];
  }
  return higher < k;
}

template <typename T>
std::vector<bool> RunInTopK(const std::vector<std::vector<float>>& rows,
                            const std::vector<T>& targets, T k) {
  const int64_t n = rows.empty() ? 0 : static_cast<int64_t>(rows[0].size());
  std::vector<float> flat;
  for (const auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
  Tensor out =
      RunNodeOk(InTopKNode(DataTypeOf<T>()),
                {MakeTensor<float>(TensorShape({static_cast<int64_t>(rows.size()), n}), flat),
                 MakeVector<T>(targets), MakeScalar<T>(k)});
  EXPECT_EQ(out.dtype(), DT_BOOL);
  std::vector<bool> v;
  for (int64_t i = 0; i < out.num_elements(); ++i) v.push_back(out.data<bool>()[i]);
  return v;
}

template <typename T>
void CheckRandom(int64_t batch, int64_t classes) {
  SCOPED_TRACE(std::to_string(batch) + "x" + std::to_string(classes));
  // Values on a coarse grid so that ties are common.
  std::vector<double> v = RandomValues(batch * classes, 0, 4, 8);
  std::vector<std::vector<float>> rows(batch);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t c = 0; c < classes; ++c) rows[b].push_back(std::round(v[b * classes + c]));
  std::vector<T> targets(batch);
  for (int64_t b = 0; b < batch; ++b) targets[b] = static_cast<T>((b * 5 + 1) % classes);
  for (T k : {T(0), T(1), T(2), T(3), static_cast<T>(classes)}) {
    std::vector<bool> want;
    for (int64_t b = 0; b < batch; ++b) want.push_back(Reference(rows[b], targets[b], k));
    EXPECT_EQ(RunInTopK<T>(rows, targets, k), want) << "k = " << k;
  }
}

TEST(InTopKV2, MatchesADirectCountOfHigherClasses) {
  CheckRandom<int32_t>(6, 5);
  CheckRandom<int64_t>(1, 1);
  CheckRandom<int64_t>(300, 11);  // rows over threads
  CheckRandom<int32_t>(7, 1000);
}

TEST(InTopKV2, TiesCountInTheTargetsFavour) {
  // Row [1, 3, 3, 0]: classes 1 and 2 tie for the top, so both are "in the top 1"; class 0 has
  // two higher classes, so it is in the top 3 but not the top 2.
  const std::vector<std::vector<float>> rows(4, std::vector<float>{1, 3, 3, 0});
  EXPECT_EQ(RunInTopK<int32_t>(rows, {1, 2, 0, 3}, 1),
            (std::vector<bool>{true, true, false, false}));
  EXPECT_EQ(RunInTopK<int32_t>(rows, {1, 2, 0, 3}, 2),
            (std::vector<bool>{true, true, false, false}));
  EXPECT_EQ(RunInTopK<int32_t>(rows, {1, 2, 0, 3}, 3),
            (std::vector<bool>{true, true, true, false}));
}

TEST(InTopKV2, NonFinitePredictionsAndBadTargetsGiveFalse) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  // A NaN or infinity anywhere in the row, even below the target, makes the answer false.
  const std::vector<std::vector<float>> rows = {{5, nan, 1}, {5, 1, inf}, {-inf, 1, 2},
                                                {5, 1, 2},   {5, 1, 2},   {5, 1, 2}};
  EXPECT_EQ(RunInTopK<int64_t>(rows, {0, 0, 2, 3, -1, 0}, 3),
            (std::vector<bool>{false, false, false, false, false, true}));
}

TEST(InTopKV2, EmptyBatch) {
  Tensor out = RunNodeOk(InTopKNode(), {Tensor(DT_FLOAT, TensorShape({0, 4})),
                                        MakeVector<int32_t>({}), MakeScalar<int32_t>(1)});
  EXPECT_EQ(out.shape(), TensorShape({0}));
}

TEST(InTopKV2, BadShapesAreErrors) {
  Tensor p = MakeTensor<float>(TensorShape({2, 3}), Ramp<float>(6));
  Tensor t = MakeVector<int32_t>({0, 1});
  Tensor k = MakeScalar<int32_t>(1);
  for (auto run : {&RunNode, &RunKernelOnly}) {
    ExpectError(run(InTopKNode(), {MakeVector<float>({1, 2}), t, k}, "CPU:0"),
                Code::kInvalidArgument, "predictions must have rank 2");
    ExpectError(
        run(InTopKNode(), {p, MakeTensor<int32_t>(TensorShape({2, 1}), {0, 1}), k}, "CPU:0"),
        Code::kInvalidArgument, "targets must have rank 1");
    ExpectError(run(InTopKNode(), {p, MakeVector<int32_t>({0, 1, 2}), k}, "CPU:0"),
                Code::kInvalidArgument, "same first dimension");
    ExpectError(run(InTopKNode(), {p, t, MakeVector<int32_t>({1})}, "CPU:0"),
                Code::kInvalidArgument, "k must");
  }
  EXPECT_FALSE(RunNode(InTopKNode(DT_INT32), {p, MakeVector<int64_t>({0, 1}), k}).ok());
}

TEST(InTopKV2Shapes, OutputIsABoolPerBatchRow) {
  auto out = InferShapes(InTopKNode(), {P({-1, 10}), P({16}), P(std::vector<int64_t>{})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], P({16}));
  out = InferShapes(InTopKNode(), {P(), P(), P()});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], P({-1}));
  EXPECT_EQ(InferShapes(InTopKNode(), {P({4, 10}), P({5}), P()}).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(InferShapes(InTopKNode(), {P({4, 10}), P({4}), P({1})}).status().code(),
            Code::kInvalidArgument);
  const OpRegistration* reg = TestRuntime().ops().LookUp("InTopKV2");
  ASSERT_NE(reg, nullptr);
  EXPECT_EQ(reg->registered_by, "ops-nn");
}

}  // namespace
}  // namespace cfx
