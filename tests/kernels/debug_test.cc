// Assert, Print and CheckNumerics through the kernel harness: TensorFlow's message formats, the
// pass-through without copies, Print's first_n and stderr sink, CheckNumerics on every dtype.
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "conflux/kernel_runner.h"
#include "kernel_test_util.h"

namespace cfx {
namespace {

using test::MakeNode;
using test::MakeScalar;
using test::MakeStringVector;
using test::MakeTensor;
using test::MakeVector;
using test::RunNode;

NodeDef AssertNode(std::vector<DataType> types, int64_t summarize = -2) {
  NodeDef n =
      MakeNode("Assert", 1 + static_cast<int>(types.size()), {{"T", AttrValue::TypeList(types)}});
  if (summarize != -2) n.attr["summarize"] = AttrValue::Int(summarize);
  return n;
}

TEST(Assert, TrueConditionSucceedsWithoutOutputs) {
  auto out = RunNode(AssertNode({DT_FLOAT}), {MakeScalar<bool>(true), MakeVector<float>({1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(out->empty());
}

TEST(Assert, FalseConditionListsTheDataTensors) {
  auto out = RunNode(AssertNode({DT_FLOAT, DT_STRING, DT_INT32, DT_BOOL}),
                     {MakeScalar<bool>(false), MakeVector<float>({1, 2.5f, 3, 4, 5}),
                      MakeStringVector({"x < y", "q\"t"}), MakeScalar<int32_t>(-7),
                      MakeVector<bool>({true, false})});
  test::ExpectError(out, Code::kInvalidArgument,
                    "assertion failed: [1 2.5 3...] [\"x < y\" \"q\\\"t\"] [-7] [1 0]");
}

TEST(Assert, SummarizeLimitsEachTensor) {
  Tensor v = MakeVector<int64_t>({10, 20, 30, 40});
  test::ExpectError(RunNode(AssertNode({DT_INT64}, 1), {MakeScalar<bool>(false), v}),
                    Code::kInvalidArgument, "assertion failed: [10...]");
  test::ExpectError(RunNode(AssertNode({DT_INT64}, -1), {MakeScalar<bool>(false), v}),
                    Code::kInvalidArgument, "assertion failed: [10 20 30 40]");
  test::ExpectError(RunNode(AssertNode({DT_INT64}, 0), {MakeScalar<bool>(false), v}),
                    Code::kInvalidArgument, "assertion failed: [...]");
}

TEST(Assert, MatricesNestByRow) {
  Tensor m = MakeTensor<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  test::ExpectError(RunNode(AssertNode({DT_INT32}, 4), {MakeScalar<bool>(false), m}),
                    Code::kInvalidArgument, "assertion failed: [[1 2 3][4...]...]");
  test::ExpectError(RunNode(AssertNode({DT_INT32}, 6), {MakeScalar<bool>(false), m}),
                    Code::kInvalidArgument, "assertion failed: [[1 2 3][4 5 6]]");
}

TEST(Assert, FloatsPrintTheirShortestExactForm) {
  Tensor f = MakeVector<float>({0.1f, 1e10f, -0.0f});
  Tensor d = MakeVector<double>({0.1, 1.0 / 3.0});
  test::ExpectError(RunNode(AssertNode({DT_FLOAT, DT_DOUBLE}, -1), {MakeScalar<bool>(false), f, d}),
                    Code::kInvalidArgument, "[0.1 1e+10 -0] [0.1 0.33333333333333331]");
}

TEST(Assert, NonScalarConditionIsAnError) {
  const Tensor data = MakeScalar<int32_t>(1);
  auto out = test::RunKernelOnly(AssertNode({DT_INT32}), {MakeVector<bool>({true, true}), data});
  test::ExpectError(out, Code::kInvalidArgument, "condition must be a bool scalar");
  // TensorFlow accepts a one-element vector as a scalar.
  EXPECT_TRUE(RunNode(AssertNode({DT_INT32}), {MakeVector<bool>({true}), data}).ok());
}

TEST(Assert, DataIsRequired) {
  // TensorFlow's OpDef: T is a list of at least one type.
  test::ExpectError(RunNode(AssertNode({}), {MakeScalar<bool>(true)}), Code::kInvalidArgument,
                    "attr 'T' has 0 elements; expected at least 1");
}

NodeDef PrintNode(DataType t, std::vector<DataType> u, const std::string& message,
                  int64_t first_n = -1, int64_t summarize = 3) {
  return MakeNode("Print", 1 + static_cast<int>(u.size()),
                  {{"T", AttrValue::Type(t)},
                   {"U", AttrValue::TypeList(u)},
                   {"message", AttrValue::String(message)},
                   {"first_n", AttrValue::Int(first_n)},
                   {"summarize", AttrValue::Int(summarize)}});
}

TEST(Print, ForwardsTheInputBufferAndWritesOneLineToStderr) {
  Tensor x = MakeTensor<float>({2}, {1, 2});
  testing::internal::CaptureStderr();
  auto out = RunNode(PrintNode(DT_FLOAT, {DT_INT32, DT_STRING}, "values: "),
                     {x, MakeVector<int32_t>({4, 5, 6, 7}), MakeStringVector({"a"})});
  std::string err = testing::internal::GetCapturedStderr();
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 1u);
  EXPECT_EQ((*out)[0].raw_data(), x.raw_data());
  EXPECT_EQ(err, "values: [4 5 6...][\"a\"]\n");
}

TEST(Print, FirstNLimitsHowOftenTheKernelPrints) {
  Tensor x = MakeScalar<int32_t>(3);
  Runtime& rt = test::TestRuntime();
  auto dev = rt.FindDevice("CPU:0");
  ASSERT_TRUE(dev.ok()) << dev.status();
  auto runner = KernelRunner::Create(rt, *dev, PrintNode(DT_INT32, {DT_INT32}, "step ", 2));
  ASSERT_TRUE(runner.ok()) << runner.status();
  testing::internal::CaptureStderr();
  for (int i = 0; i < 4; ++i) {
    auto out = (*runner)->Run({x, MakeScalar<int32_t>(i)});
    ASSERT_TRUE(out.ok()) << out.status();
    test::ExpectTensorEqual(x, (*out)[0]);
  }
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "step [0]\nstep [1]\n");
}

TEST(Print, NoDataPrintsTheMessageAlone) {
  testing::internal::CaptureStderr();
  auto out = RunNode(PrintNode(DT_BOOL, {}, "checkpoint reached"), {MakeScalar<bool>(true)});
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "checkpoint reached\n");
  ASSERT_TRUE(out.ok()) << out.status();
}

NodeDef CheckNode(DataType t, const std::string& message = "check") {
  return MakeNode("CheckNumerics", 1,
                  {{"T", AttrValue::Type(t)}, {"message", AttrValue::String(message)}});
}

template <typename T>
Tensor Filled(int64_t n, T value) {
  return MakeTensor<T>({n}, std::vector<T>(static_cast<size_t>(n), value));
}

TEST(CheckNumerics, FiniteInputPassesThroughWithoutACopy) {
  Tensor x = MakeTensor<float>({3}, {1, -std::numeric_limits<float>::max(), 0});
  auto out = RunNode(CheckNode(DT_FLOAT), {x});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].raw_data(), x.raw_data());
  auto empty = RunNode(CheckNode(DT_DOUBLE), {MakeVector<double>({})});
  EXPECT_TRUE(empty.ok()) << empty.status();
}

TEST(CheckNumerics, ReportsNaNInfOrBothLikeTensorFlow) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  test::ExpectError(RunNode(CheckNode(DT_FLOAT, "grad"), {MakeVector<float>({1, nan})}),
                    Code::kInvalidArgument, "grad : Tensor had NaN values");
  test::ExpectError(RunNode(CheckNode(DT_FLOAT, "grad"), {MakeVector<float>({-inf, 1})}),
                    Code::kInvalidArgument, "grad : Tensor had Inf values");
  test::ExpectError(RunNode(CheckNode(DT_FLOAT, "grad"), {MakeVector<float>({inf, nan})}),
                    Code::kInvalidArgument, "grad : Tensor had Inf and NaN values");
  test::ExpectError(RunNode(CheckNode(DT_DOUBLE), {MakeVector<double>({0, std::nan("")})}),
                    Code::kInvalidArgument, "check : Tensor had NaN values");
  test::ExpectError(RunNode(CheckNode(DT_DOUBLE), {MakeVector<double>({1e308 * 10})}),
                    Code::kInvalidArgument, "check : Tensor had Inf values");
}

// Half and bfloat16 tensors from raw bit patterns.
Tensor Bits16(DataType dtype, const std::vector<uint16_t>& bits) {
  Tensor t(dtype, TensorShape({static_cast<int64_t>(bits.size())}));
  std::memcpy(t.raw_data(), bits.data(), bits.size() * 2);
  return t;
}

TEST(CheckNumerics, HalfAndBFloat16) {
  // half: 1.0 = 0x3C00, 65504 = 0x7BFF (largest finite), +Inf = 0x7C00, NaN = 0x7E00.
  EXPECT_TRUE(RunNode(CheckNode(DT_HALF), {Bits16(DT_HALF, {0x3C00, 0x7BFF, 0xFBFF})}).ok());
  test::ExpectError(RunNode(CheckNode(DT_HALF), {Bits16(DT_HALF, {0x3C00, 0xFC00})}),
                    Code::kInvalidArgument, "Inf values");
  test::ExpectError(RunNode(CheckNode(DT_HALF), {Bits16(DT_HALF, {0x7E00, 0x7C00})}),
                    Code::kInvalidArgument, "Inf and NaN values");
  // bfloat16: the top half of a float. 0x7F7F is finite, 0x7F80 is +Inf, 0x7FC0 is NaN.
  EXPECT_TRUE(RunNode(CheckNode(DT_BFLOAT16), {Bits16(DT_BFLOAT16, {0x3F80, 0x7F7F})}).ok());
  test::ExpectError(RunNode(CheckNode(DT_BFLOAT16), {Bits16(DT_BFLOAT16, {0x7FC0})}),
                    Code::kInvalidArgument, "NaN values");
}

TEST(CheckNumerics, FindsOneBadValueAnywhereInALargeTensor) {
  constexpr int64_t kN = (1 << 20) + 3;
  for (int64_t pos : {int64_t{0}, kN / 3, kN / 2 + 1, kN - 1}) {
    Tensor x = Filled<float>(kN, 0.5f);
    x.at<float>(pos) = std::numeric_limits<float>::quiet_NaN();
    test::ExpectError(RunNode(CheckNode(DT_FLOAT), {x}), Code::kInvalidArgument, "NaN values");
    Tensor y = Filled<double>(kN, -2.0);
    y.at<double>(pos) = -std::numeric_limits<double>::infinity();
    test::ExpectError(RunNode(CheckNode(DT_DOUBLE), {y}), Code::kInvalidArgument, "Inf values");
  }
  EXPECT_TRUE(RunNode(CheckNode(DT_FLOAT), {Filled<float>(kN, 1e30f)}).ok());
}

TEST(CheckNumerics, RejectsNonFloatingTypesAtTheOp) {
  test::ExpectError(RunNode(CheckNode(DT_INT32), {MakeVector<int32_t>({1})}),
                    Code::kInvalidArgument, "");
}

}  // namespace
}  // namespace cfx
