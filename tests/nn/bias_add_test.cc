// BiasAdd and BiasAddGrad from the ops-nn plugin: values against direct index arithmetic in both
// layouts, empty batches, bad shapes and shape inference.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "nn_test_util.h"

namespace cfx {
namespace {

using namespace test;  // NOLINT

NodeDef BiasAddNode(const std::string& op, DataType t, const std::string& format = "") {
  NodeDef n = MakeNode(op, op == "BiasAdd" ? 2 : 1, {{"T", AttrValue::Type(t)}});
  if (!format.empty()) n.attr["data_format"] = AttrValue::String(format);
  return n;
}

// The channel index of flat element i of a tensor of `dims` (channel dimension `cdim`).
int64_t ChannelOf(int64_t i, const std::vector<int64_t>& dims, size_t cdim) {
  for (size_t d = dims.size(); d-- > cdim + 1;) i /= dims[d];
  return i % dims[cdim];
}

template <typename T>
void CheckBiasAdd(const std::vector<int64_t>& dims, const std::string& format) {
  SCOPED_TRACE(TensorShape(dims).ToString() + " " + format);
  const size_t cdim = format == "NCHW" ? 1 : dims.size() - 1;
  const int64_t n = TensorShape(dims).num_elements();
  std::vector<T> x = Ramp<T>(n), b = Ramp<T>(dims[cdim], 10.0), want(x.size());
  for (int64_t i = 0; i < n; ++i) want[i] = x[i] + b[ChannelOf(i, dims, cdim)];
  Tensor out = RunNodeOk(BiasAddNode("BiasAdd", DataTypeOf<T>(), format),
                         {MakeTensor<T>(TensorShape(dims), x), MakeVector<T>(b)});
  ExpectTensorEqual(MakeTensor<T>(TensorShape(dims), want), out);
}

TEST(BiasAdd, AddsTheBiasAlongTheLastDimensionInNHWC) {
  CheckBiasAdd<float>({2, 3, 2, 4}, "NHWC");
  CheckBiasAdd<float>({5, 3}, "");  // NHWC is the default
  CheckBiasAdd<double>({2, 2, 2, 3, 2}, "NHWC");
  CheckBiasAdd<int32_t>({3, 4}, "NHWC");
  CheckBiasAdd<int64_t>({2, 1, 3}, "NHWC");
}

TEST(BiasAdd, AddsTheBiasAlongDimensionOneInNCHW) {
  CheckBiasAdd<float>({2, 3, 2, 4}, "NCHW");
  CheckBiasAdd<double>({2, 3, 2, 1, 2}, "NCHW");
  CheckBiasAdd<float>({4, 3}, "NCHW");  // rank 2: dimension 1 is also the last
  CheckBiasAdd<float>({1, 5, 7}, "NCHW");
}

TEST(BiasAdd, HandWorkedExample) {
  // [[1, 2], [3, 4]] + [10, 20] in NHWC adds per column; in NCHW (rank 2) too.
  Tensor x = MakeTensor<float>(TensorShape({2, 2}), {1, 2, 3, 4});
  Tensor out = RunNodeOk(BiasAddNode("BiasAdd", DT_FLOAT), {x, MakeVector<float>({10, 20})});
  ExpectTensorEqual(MakeTensor<float>(TensorShape({2, 2}), {11, 22, 13, 24}), out);
  // NCHW [1, 2, 2]: channel 0 is {1, 2}, channel 1 is {3, 4}.
  Tensor y = MakeTensor<float>(TensorShape({1, 2, 2}), {1, 2, 3, 4});
  out = RunNodeOk(BiasAddNode("BiasAdd", DT_FLOAT, "NCHW"), {y, MakeVector<float>({10, 20})});
  ExpectTensorEqual(MakeTensor<float>(TensorShape({1, 2, 2}), {11, 12, 23, 24}), out);
}

TEST(BiasAdd, EmptyBatchGivesAnEmptyResult) {
  for (const std::string format : {"NHWC", "NCHW"}) {
    std::vector<int64_t> dims = {0, 3, 2, 3};
    Tensor out = RunNodeOk(BiasAddNode("BiasAdd", DT_FLOAT, format),
                           {Tensor(DT_FLOAT, TensorShape(dims)), MakeVector<float>({1, 2, 3})});
    EXPECT_EQ(out.shape(), TensorShape(dims)) << format;
  }
}

TEST(BiasAdd, BadShapesAreErrors) {
  Tensor x = MakeTensor<float>(TensorShape({2, 3}), Ramp<float>(6));
  Tensor bias2d = MakeTensor<float>(TensorShape({1, 3}), {1, 2, 3});
  NodeDef nhwc = BiasAddNode("BiasAdd", DT_FLOAT), nchw = BiasAddNode("BiasAdd", DT_FLOAT, "NCHW");
  // Through the harness (shape inference) and straight into the kernel: both refuse.
  for (auto run : {&RunNode, &RunKernelOnly}) {
    ExpectError(run(nhwc, {x, bias2d}, "CPU:0"), Code::kInvalidArgument, "bias must be 1-D");
    ExpectError(run(nhwc, {MakeVector<float>({1, 2, 3}), MakeVector<float>({1, 2, 3})}, "CPU:0"),
                Code::kInvalidArgument, "rank >= 2");
    ExpectError(run(nhwc, {x, MakeVector<float>({1, 2})}, "CPU:0"), Code::kInvalidArgument,
                "channel dimension");
    // [2, 3] in NCHW has 3 channels too, but [2, 3, 4] has 3, not 4.
    ExpectError(run(nchw,
                    {MakeTensor<float>(TensorShape({2, 3, 4}), Ramp<float>(24)),
                     MakeVector<float>({1, 2, 3, 4})},
                    "CPU:0"),
                Code::kInvalidArgument, "has size 3");
  }
  NodeDef bad_format = BiasAddNode("BiasAdd", DT_FLOAT, "NDHWC");
  EXPECT_FALSE(RunNode(bad_format, {x, MakeVector<float>({1, 2, 3})}).ok());
  // Mixed dtypes are refused by the op's signature.
  EXPECT_FALSE(RunNode(nhwc, {x, MakeVector<double>({1, 2, 3})}).ok());
}

template <typename T>
void CheckBiasAddGrad(const std::vector<int64_t>& dims, const std::string& format) {
  SCOPED_TRACE(TensorShape(dims).ToString() + " " + format);
  const size_t cdim = format == "NCHW" ? 1 : dims.size() - 1;
  const int64_t n = TensorShape(dims).num_elements();
  std::vector<T> g = Ramp<T>(n);
  std::vector<double> want(static_cast<size_t>(dims[cdim]), 0.0);
  for (int64_t i = 0; i < n; ++i) want[ChannelOf(i, dims, cdim)] += static_cast<double>(g[i]);
  Tensor out = RunNodeOk(BiasAddNode("BiasAddGrad", DataTypeOf<T>(), format),
                         {MakeTensor<T>(TensorShape(dims), g)});
  std::vector<T> want_t(want.begin(), want.end());
  ExpectTensorNear(MakeVector<T>(want_t), out, 1e-5, 1e-5);
}

TEST(BiasAddGrad, SumsOverEveryDimensionButTheChannel) {
  CheckBiasAddGrad<float>({2, 3, 4}, "NHWC");
  CheckBiasAddGrad<float>({2, 3, 2, 2}, "NCHW");
  CheckBiasAddGrad<double>({3, 2, 2, 5}, "NHWC");
  CheckBiasAddGrad<double>({3, 5, 2, 1, 3}, "NCHW");
  CheckBiasAddGrad<float>({7, 2}, "NCHW");
  CheckBiasAddGrad<int32_t>({4, 3}, "NHWC");
  // Many channels and rows: work is split over channels.
  CheckBiasAddGrad<float>({300, 257}, "NHWC");
  CheckBiasAddGrad<float>({8, 129, 33}, "NCHW");
}

TEST(BiasAddGrad, HandWorkedExample) {
  Tensor g = MakeTensor<float>(TensorShape({2, 3}), {1, 2, 3, 4, 5, 6});
  ExpectTensorEqual(MakeVector<float>({5, 7, 9}),
                    RunNodeOk(BiasAddNode("BiasAddGrad", DT_FLOAT), {g}));
  // NCHW [2, 2, 2]: channel 0 holds {1, 2} and {5, 6}; channel 1 {3, 4} and {7, 8}.
  Tensor h = MakeTensor<float>(TensorShape({2, 2, 2}), {1, 2, 3, 4, 5, 6, 7, 8});
  ExpectTensorEqual(MakeVector<float>({14, 22}),
                    RunNodeOk(BiasAddNode("BiasAddGrad", DT_FLOAT, "NCHW"), {h}));
}

TEST(BiasAddGrad, LongSumsKeepFloatPrecision) {
  // 100000 x 0.1f: a float running sum drifts by ~1e-4 relative; the kernel must not.
  const int64_t rows = 100000;
  Tensor g = MakeTensor<float>(TensorShape({rows, 2}), std::vector<float>(rows * 2, 0.1f));
  Tensor out = RunNodeOk(BiasAddNode("BiasAddGrad", DT_FLOAT), {g});
  const double want = static_cast<double>(0.1f) * rows;
  ExpectTensorNear(MakeVector<float>({static_cast<float>(want), static_cast<float>(want)}), out, 0,
                   1e-6);
}

TEST(BiasAddGrad, EmptyBatchGivesZeros) {
  Tensor out =
      RunNodeOk(BiasAddNode("BiasAddGrad", DT_FLOAT), {Tensor(DT_FLOAT, TensorShape({0, 3}))});
  ExpectTensorEqual(MakeVector<float>({0, 0, 0}), out);
  out = RunNodeOk(BiasAddNode("BiasAddGrad", DT_FLOAT, "NCHW"),
                  {Tensor(DT_FLOAT, TensorShape({0, 2, 5}))});
  ExpectTensorEqual(MakeVector<float>({0, 0}), out);
}

// A zero-sized input whose other dimensions multiply to 3 * 2^40 (a kernel that loops over them
// instead of its elements never ends).
TEST(BiasAddGrad, EmptyInputWithHugeDimensionsEndsAtOnce) {
  const Tensor grad(DT_INT64, TensorShape({int64_t{1} << 40, 3, 0}));
  ExpectTensorEqual(MakeVector<int64_t>({0, 0, 0}),
                    RunNodeOk(BiasAddNode("BiasAddGrad", DT_INT64, "NCHW"), {grad}));
  const Tensor out = RunNodeOk(BiasAddNode("BiasAdd", DT_INT64, "NCHW"),
                               {grad, MakeVector<int64_t>({1, 2, 3})});
  EXPECT_EQ(out.shape(), grad.shape());
}

TEST(BiasAddGrad, RankBelowTwoIsAnError) {
  for (auto run : {&RunNode, &RunKernelOnly})
    ExpectError(run(BiasAddNode("BiasAddGrad", DT_FLOAT), {MakeVector<float>({1, 2})}, "CPU:0"),
                Code::kInvalidArgument, "out_backprop must have rank >= 2");
}

TEST(BiasAddShapes, OutputIsTheValueShapeWithTheChannelFromTheBias) {
  using P = PartialTensorShape;
  auto infer = [](const std::string& format, P value, P bias) {
    return InferShapes(BiasAddNode("BiasAdd", DT_FLOAT, format), {value, bias});
  };
  auto out = infer("NHWC", P({-1, -1, 5}), P({-1}));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], P({-1, -1, 5}));
  out = infer("", P({2, -1}), P({7}));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], P({2, 7}));
  out = infer("NCHW", P({2, -1, 4, 4}), P({3}));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], P({2, 3, 4, 4}));
  out = infer("NHWC", P(), P({3}));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE((*out)[0].unknown_rank());

  EXPECT_EQ(infer("NHWC", P({2, 3}), P({1, 3})).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(infer("NHWC", P({3}), P({3})).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(infer("NHWC", P({2, 3}), P({4})).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(infer("NCHW", P({2, 3, 4}), P({4})).status().code(), Code::kInvalidArgument);
}

TEST(BiasAddShapes, GradIsAVectorOfTheChannelDimension) {
  using P = PartialTensorShape;
  auto infer = [](const std::string& format, P grad) {
    return InferShapes(BiasAddNode("BiasAddGrad", DT_FLOAT, format), {grad});
  };
  auto out = infer("NHWC", P({2, 3, 4}));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], P({4}));
  out = infer("NCHW", P({2, 3, 4}));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], P({3}));
  out = infer("NCHW", P());
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], P({-1}));
  EXPECT_EQ(infer("NHWC", P({5})).status().code(), Code::kInvalidArgument);
}

TEST(OpsNnPlugin, IsLoadedByTheDefaultConfigAndOwnsItsOps) {
  for (const char* op : {"BiasAdd", "BiasAddGrad", "Softmax", "LogSoftmax"}) {
    const OpRegistration* reg = TestRuntime().ops().LookUp(op);
    ASSERT_NE(reg, nullptr) << op;
    EXPECT_EQ(reg->registered_by, "ops-nn") << op;
  }
}

}  // namespace
}  // namespace cfx
