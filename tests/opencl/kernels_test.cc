// Every OpenCL kernel against the CPU plugin's kernel for the same node and inputs: broadcasting,
// empty tensors, odd sizes, special values, and the same errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "conflux/kernel_runner.h"
#include "opencl_test_util.h"

namespace cfx {
namespace {

using namespace test;  // NOLINT

// Deterministic values: floats in [lo, hi), with a few repeats so comparisons see ties.
Tensor FloatTensor(const TensorShape& shape, float lo, float hi, uint32_t seed) {
  Tensor t(DT_FLOAT, shape);
  uint32_t s = seed * 2654435761u + 12345u;
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    s = s * 1664525u + 1013904223u;
    float u = static_cast<float>(s >> 8) / static_cast<float>(1u << 24);
    t.data<float>()[i] = (i % 5 == 3) ? std::round(lo + (hi - lo) * u) : lo + (hi - lo) * u;
  }
  return t;
}

Tensor IntTensor(const TensorShape& shape, int32_t lo, int32_t hi, uint32_t seed) {
  Tensor t(DT_INT32, shape);
  uint32_t s = seed * 2654435761u + 777u;
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    s = s * 1664525u + 1013904223u;
    t.data<int32_t>()[i] = lo + static_cast<int32_t>((s >> 8) % static_cast<uint32_t>(hi - lo));
  }
  return t;
}

Tensor BoolTensor(const TensorShape& shape, uint32_t seed) {
  Tensor t(DT_BOOL, shape);
  uint32_t s = seed + 99u;
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    s = s * 1664525u + 1013904223u;
    t.data<bool>()[i] = ((s >> 16) & 1) != 0;
  }
  return t;
}

// Runs `node` on CPU:0 and OPENCL:0; both fail with the same code or give the same outputs.
void ExpectSameAsCpu(const NodeDef& node, const std::vector<Tensor>& inputs, double tol = 2e-6) {
  Runtime& rt = OpenClRuntime();
  auto cpu = RunKernelOnce(rt, rt.FindDevice("CPU:0").value(), node, inputs);
  auto ocl = RunKernelOnce(rt, OpenClDevice(), node, inputs);
  ASSERT_EQ(cpu.ok(), ocl.ok()) << node.op << ": CPU " << cpu.status() << " vs OPENCL "
                                << ocl.status();
  if (!cpu.ok()) {
    EXPECT_EQ(cpu.status().code(), ocl.status().code()) << ocl.status();
    return;
  }
  ASSERT_EQ(cpu->size(), ocl->size());
  for (size_t i = 0; i < cpu->size(); ++i) {
    SCOPED_TRACE(node.op + " output " + std::to_string(i) + " " +
                 (*cpu)[i].shape().ToString());
    ExpectTensorNear((*cpu)[i], (*ocl)[i], tol, tol);
  }
}

const std::vector<std::pair<TensorShape, TensorShape>>& BinaryShapes() {
  static const auto* shapes = new std::vector<std::pair<TensorShape, TensorShape>>{
      {TensorShape({2, 3}), TensorShape({2, 3})},
      {TensorShape({2, 3}), TensorShape({3})},
      {TensorShape({4, 1, 5}), TensorShape({3, 1})},
      {TensorShape(), TensorShape({7})},
      {TensorShape({1}), TensorShape()},
      {TensorShape({5, 7, 3}), TensorShape({5, 1, 3})},
      {TensorShape({2, 1, 3, 1, 2}), TensorShape({1, 4, 1, 5, 1})},
      {TensorShape({0, 3}), TensorShape({3})},
      {TensorShape({1027}), TensorShape({1027})},
  };
  return *shapes;
}

class OpenClKernels : public ::testing::Test {
 protected:
  void SetUp() override { SKIP_WITHOUT_OPENCL(); }
};

TEST_F(OpenClKernels, BinaryArithmeticFloat) {
  for (const char* op :
       {"Add", "AddV2", "Sub", "Mul", "Div", "RealDiv", "Maximum", "Minimum", "SquaredDifference"}) {
    uint32_t seed = 1;
    for (const auto& [xs, ys] : BinaryShapes()) {
      ExpectSameAsCpu(MakeNode(op, 2, {{"T", T(DT_FLOAT)}}),
                      {FloatTensor(xs, -4, 4, seed), FloatTensor(ys, 0.5f, 3, seed + 7)});
      ++seed;
    }
  }
  // Pow on positive bases (and a zero exponent).
  ExpectSameAsCpu(MakeNode("Pow", 2, {{"T", T(DT_FLOAT)}}),
                  {FloatTensor(TensorShape({3, 5}), 0.1f, 3, 4),
                   MakeTensor<float>(TensorShape({5}), {0, 1, 2.5f, -1.5f, 0.5f})},
                  1e-5);
}

TEST_F(OpenClKernels, BinaryArithmeticInt32WrapsAround) {
  for (const char* op : {"Add", "AddV2", "Sub", "Mul", "Maximum", "Minimum", "SquaredDifference"}) {
    uint32_t seed = 3;
    for (const auto& [xs, ys] : BinaryShapes()) {
      ExpectSameAsCpu(MakeNode(op, 2, {{"T", T(DT_INT32)}}),
                      {IntTensor(xs, -1000, 1000, seed), IntTensor(ys, -50, 50, seed + 1)});
      ++seed;
    }
    const int32_t big = std::numeric_limits<int32_t>::max();
    ExpectSameAsCpu(MakeNode(op, 2, {{"T", T(DT_INT32)}}),
                    {MakeVector<int32_t>({big, -big - 1, 65536, 3}),
                     MakeVector<int32_t>({1, 1, 65536, -big})});
  }
}

TEST_F(OpenClKernels, NanHandlingMatchesCpu) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = INFINITY;
  Tensor x = MakeVector<float>({nan, 1, nan, -inf, 0, -0.0f});
  Tensor y = MakeVector<float>({1, nan, nan, 2, -0.0f, 0});
  for (const char* op : {"Maximum", "Minimum", "Add", "Less", "Equal", "NotEqual", "GreaterEqual"})
    ExpectSameAsCpu(MakeNode(op, 2, {{"T", T(DT_FLOAT)}}), {x, y});
  for (const char* op : {"Relu", "Abs", "Neg", "Sqrt", "Exp", "Sigmoid", "Tanh"})
    ExpectSameAsCpu(MakeNode(op, 1, {{"T", T(DT_FLOAT)}}), {x});
}

TEST_F(OpenClKernels, IncompatibleShapesGiveTheSameError) {
  // The kernel's own check (the harness's shape inference would catch it first).
  Device* dev = OpenClDevice();
  NodeDef add = MakeNode("Add", 2, {{"T", T(DT_FLOAT)}});
  auto runner = KernelRunner::Create(OpenClRuntime(), dev, add).value();
  auto out = runner->RunOnDevice({dev->FromHost(FloatTensor(TensorShape({2, 3}), 0, 1, 1)).value(),
                                  dev->FromHost(FloatTensor(TensorShape({4}), 0, 1, 2)).value()});
  ExpectError(out, Code::kInvalidArgument, "Incompatible shapes: x [2,3] vs. y [4]");
}

TEST_F(OpenClKernels, Comparisons) {
  for (const char* op : {"Less", "LessEqual", "Greater", "GreaterEqual", "Equal", "NotEqual"}) {
    uint32_t seed = 11;
    for (const auto& [xs, ys] : BinaryShapes()) {
      ExpectSameAsCpu(MakeNode(op, 2, {{"T", T(DT_FLOAT)}}),
                      {FloatTensor(xs, 0, 3, seed), FloatTensor(ys, 0, 3, seed + 1)});
      ExpectSameAsCpu(MakeNode(op, 2, {{"T", T(DT_INT32)}}),
                      {IntTensor(xs, 0, 3, seed), IntTensor(ys, 0, 3, seed + 1)});
      ++seed;
    }
  }
  ExpectSameAsCpu(MakeNode("Equal", 2, {{"T", T(DT_BOOL)}}),
                  {BoolTensor(TensorShape({3, 4}), 1), BoolTensor(TensorShape({4}), 2)});
  // incompatible_shape_error = false: a scalar answer instead of an error.
  for (const char* op : {"Equal", "NotEqual"})
    ExpectSameAsCpu(MakeNode(op, 2,
                             {{"T", T(DT_FLOAT)},
                              {"incompatible_shape_error", AttrValue::Bool(false)}}),
                    {FloatTensor(TensorShape({2, 3}), 0, 1, 1),
                     FloatTensor(TensorShape({4}), 0, 1, 2)});
}

TEST_F(OpenClKernels, UnaryMath) {
  const std::vector<TensorShape> shapes = {TensorShape({2, 3}), TensorShape(), TensorShape({0}),
                                           TensorShape({3, 0, 2}), TensorShape({1001})};
  for (const TensorShape& s : shapes) {
    for (const char* op : {"Neg", "Abs", "Square", "Relu", "Exp", "Tanh", "Sigmoid", "Sin", "Cos"})
      ExpectSameAsCpu(MakeNode(op, 1, {{"T", T(DT_FLOAT)}}), {FloatTensor(s, -5, 5, 9)}, 1e-5);
    for (const char* op : {"Log", "Sqrt", "Rsqrt", "Reciprocal"})
      ExpectSameAsCpu(MakeNode(op, 1, {{"T", T(DT_FLOAT)}}), {FloatTensor(s, 0.01f, 50, 9)},
                      1e-5);
    for (const char* op : {"Neg", "Abs", "Square", "Relu"})
      ExpectSameAsCpu(MakeNode(op, 1, {{"T", T(DT_INT32)}}), {IntTensor(s, -30000, 30000, 5)});
  }
  const int32_t lowest = std::numeric_limits<int32_t>::lowest();
  for (const char* op : {"Neg", "Abs", "Square"})
    ExpectSameAsCpu(MakeNode(op, 1, {{"T", T(DT_INT32)}}), {MakeVector<int32_t>({lowest, 70000})});
}

TEST_F(OpenClKernels, Cast) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor f = MakeVector<float>({-2.7f, 2.7f, 0.0f, -0.0f, 3e9f, -3e9f, nan, INFINITY, 0.5f});
  Tensor i = MakeVector<int32_t>({0, 1, -1, 16777217, std::numeric_limits<int32_t>::lowest()});
  Tensor b = BoolTensor(TensorShape({2, 5}), 4);
  const std::vector<std::pair<DataType, Tensor>> sources = {
      {DT_FLOAT, f}, {DT_INT32, i}, {DT_BOOL, b}, {DT_FLOAT, Tensor(DT_FLOAT, TensorShape({0}))}};
  for (const auto& [src, x] : sources) {
    for (DataType dst : {DT_FLOAT, DT_INT32, DT_BOOL})
      ExpectSameAsCpu(MakeNode("Cast", 1, {{"SrcT", T(src)}, {"DstT", T(dst)}}), {x}, 0);
  }
}

TEST_F(OpenClKernels, SelectAndSelectV2) {
  // Select: condition scalar, same shape, or a row vector.
  NodeDef select = MakeNode("Select", 3, {{"T", T(DT_FLOAT)}});
  Tensor t = FloatTensor(TensorShape({4, 3}), -1, 1, 1), e = FloatTensor(TensorShape({4, 3}), 2, 3, 2);
  ExpectSameAsCpu(select, {BoolTensor(TensorShape({4, 3}), 1), t, e}, 0);
  ExpectSameAsCpu(select, {BoolTensor(TensorShape({4}), 2), t, e}, 0);
  ExpectSameAsCpu(select, {MakeScalar(true), t, e}, 0);
  ExpectSameAsCpu(select, {BoolTensor(TensorShape({3}), 2), t, e}, 0);  // error on both
  ExpectSameAsCpu(MakeNode("Select", 3, {{"T", T(DT_INT32)}}),
                  {BoolTensor(TensorShape({5}), 3), IntTensor(TensorShape({5}), 0, 9, 1),
                   IntTensor(TensorShape({5}), 0, 9, 2)},
                  0);
  // SelectV2 broadcasts all three.
  NodeDef v2 = MakeNode("SelectV2", 3, {{"T", T(DT_FLOAT)}});
  ExpectSameAsCpu(v2, {BoolTensor(TensorShape({2, 1, 3}), 5), FloatTensor(TensorShape({4, 1}), 0, 1, 3),
                       FloatTensor(TensorShape({3}), 5, 6, 4)},
                  0);
  ExpectSameAsCpu(v2, {BoolTensor(TensorShape({0, 3}), 5), FloatTensor(TensorShape({3}), 0, 1, 3),
                       MakeScalar(1.0f)},
                  0);
  ExpectSameAsCpu(MakeNode("SelectV2", 3, {{"T", T(DT_BOOL)}}),
                  {BoolTensor(TensorShape({6}), 1), BoolTensor(TensorShape({6}), 2),
                   MakeScalar(false)},
                  0);
}

TEST_F(OpenClKernels, ConstIdentityAndFills) {
  for (const Tensor& v : {FloatTensor(TensorShape({3, 5}), -1, 1, 3), IntTensor(TensorShape({7}), 0, 100, 1),
                          BoolTensor(TensorShape({2, 2}), 1), Tensor(DT_FLOAT, TensorShape({0, 4}))}) {
    ExpectSameAsCpu(MakeNode("Const", 0, {{"dtype", T(v.dtype())}, {"value", AttrValue::TensorValue(v)}}),
                    {}, 0);
    ExpectSameAsCpu(MakeNode("Identity", 1, {{"T", T(v.dtype())}}), {v}, 0);
    ExpectSameAsCpu(MakeNode("ZerosLike", 1, {{"T", T(v.dtype())}}), {v}, 0);
    ExpectSameAsCpu(MakeNode("OnesLike", 1, {{"T", T(v.dtype())}}), {v}, 0);
  }
  NodeDef fill_f = MakeNode("Fill", 2, {{"T", T(DT_FLOAT)}, {"index_type", T(DT_INT32)}});
  ExpectSameAsCpu(fill_f, {MakeVector<int32_t>({3, 5, 7}), MakeScalar(-2.25f)}, 0);
  ExpectSameAsCpu(fill_f, {MakeVector<int32_t>({3, 0}), MakeScalar(1.0f)}, 0);
  ExpectSameAsCpu(fill_f, {MakeVector<int32_t>({-1, 2}), MakeScalar(1.0f)}, 0);  // error
  ExpectSameAsCpu(MakeNode("Fill", 2, {{"T", T(DT_BOOL)}, {"index_type", T(DT_INT64)}}),
                  {MakeVector<int64_t>({9}), MakeScalar(true)}, 0);
}

TEST_F(OpenClKernels, ReshapeExpandDimsSqueezeShareTheBuffer) {
  Tensor x = FloatTensor(TensorShape({2, 1, 6}), 0, 1, 1);
  NodeDef reshape = MakeNode("Reshape", 2, {{"T", T(DT_FLOAT)}, {"Tshape", T(DT_INT32)}});
  ExpectSameAsCpu(reshape, {x, MakeVector<int32_t>({3, -1})}, 0);
  ExpectSameAsCpu(reshape, {x, MakeVector<int32_t>({5, -1})}, 0);  // error on both
  ExpectSameAsCpu(reshape, {Tensor(DT_FLOAT, TensorShape({0, 3})), MakeVector<int32_t>({3, 0})}, 0);
  ExpectSameAsCpu(MakeNode("ExpandDims", 2, {{"T", T(DT_FLOAT)}, {"Tdim", T(DT_INT32)}}),
                  {x, MakeScalar<int32_t>(-1)}, 0);
  ExpectSameAsCpu(MakeNode("Squeeze", 1, {{"T", T(DT_FLOAT)}}), {x}, 0);
  ExpectSameAsCpu(MakeNode("Squeeze", 1,
                           {{"T", T(DT_FLOAT)}, {"squeeze_dims", AttrValue::IntList({1})}}),
                  {x}, 0);
  // The output aliases the input's device buffer.
  Device* dev = OpenClDevice();
  Tensor on_dev = dev->FromHost(x).value();
  auto runner = KernelRunner::Create(OpenClRuntime(), dev, reshape).value();
  auto out = runner->RunOnDevice({on_dev, MakeVector<int32_t>({12})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].raw_data(), on_dev.raw_data());
  EXPECT_EQ((*out)[0].shape(), TensorShape({12}));
}

TEST_F(OpenClKernels, ManyStepsOfOneKernelStayCorrect) {
  // The same kernel object on many runs (cached program and cl_kernel, argument reuse).
  NodeDef mul = MakeNode("Mul", 2, {{"T", T(DT_FLOAT)}});
  auto runner = KernelRunner::Create(OpenClRuntime(), OpenClDevice(), mul).value();
  for (int i = 0; i < 20; ++i) {
    Tensor x = FloatTensor(TensorShape({33}), -1, 1, i);
    auto out = runner->Run({x, MakeScalar(static_cast<float>(i))});
    ASSERT_TRUE(out.ok()) << out.status();
    for (int k = 0; k < 33; ++k)
      ASSERT_FLOAT_EQ((*out)[0].data<float>()[k], x.data<float>()[k] * static_cast<float>(i));
  }
}

TEST_F(OpenClKernels, MatMulTransposesAndOddSizes) {
  struct Spec {
    int64_t m, k, n;
  };
  uint32_t seed = 40;
  for (const Spec& sp : {Spec{1, 1, 1}, Spec{33, 65, 31}, Spec{70, 45, 33}, Spec{3, 0, 4},
                         Spec{0, 4, 3}, Spec{32, 32, 32}})
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        SCOPED_TRACE(std::to_string(sp.m) + "x" + std::to_string(sp.k) + "x" +
                     std::to_string(sp.n) + (ta ? " ta" : "") + (tb ? " tb" : ""));
        Tensor a = FloatTensor(ta ? TensorShape({sp.k, sp.m}) : TensorShape({sp.m, sp.k}), -1, 1,
                               seed++);
        Tensor b = FloatTensor(tb ? TensorShape({sp.n, sp.k}) : TensorShape({sp.k, sp.n}), -1, 1,
                               seed++);
        ExpectSameAsCpu(MakeNode("MatMul", 2,
                                 {{"T", T(DT_FLOAT)},
                                  {"transpose_a", AttrValue::Bool(ta)},
                                  {"transpose_b", AttrValue::Bool(tb)}}),
                        {a, b}, 1e-5);
      }
}

TEST_F(OpenClKernels, MatMulSizeMismatchIsAnError) {
  // The kernel's own check (the harness's shape inference would catch it first).
  Device* dev = OpenClDevice();
  NodeDef mm = MakeNode("MatMul", 2, {{"T", T(DT_FLOAT)}});
  auto runner = KernelRunner::Create(OpenClRuntime(), dev, mm).value();
  auto out = runner->RunOnDevice({dev->FromHost(FloatTensor(TensorShape({2, 3}), 0, 1, 1)).value(),
                                  dev->FromHost(FloatTensor(TensorShape({4, 5}), 0, 1, 2)).value()});
  ExpectError(out, Code::kInvalidArgument, "Matrix size-incompatible: In[0]: [2,3], In[1]: [4,5]");
}

TEST_F(OpenClKernels, ReductionsOverAnyAxes) {
  const TensorShape shape({3, 1, 4, 5, 2});
  Tensor x = FloatTensor(shape, -3, 3, 50);
  Tensor xi = IntTensor(shape, -1000, 1000, 51);
  Tensor with_nan = x;
  with_nan.data<float>()[17] = std::numeric_limits<float>::quiet_NaN();
  const std::vector<std::vector<int32_t>> axes = {{}, {0}, {1}, {2, 4}, {-1, 0}, {0, 2, 3}, {3},
                                                  {0, 1, 2, 3, 4}};
  for (const auto& a : axes)
    for (bool keep : {false, true})
      for (DataType tidx : {DT_INT32, DT_INT64}) {
        Tensor idx = tidx == DT_INT32 ? MakeVector<int32_t>(a)
                                      : MakeVector<int64_t>(std::vector<int64_t>(a.begin(), a.end()));
        SCOPED_TRACE(idx.DebugString() + (keep ? " keep_dims" : ""));
        auto node = [&](const char* op, DataType t) {
          return MakeNode(op, 2, {{"T", T(t)}, {"Tidx", T(tidx)}, {"keep_dims", AttrValue::Bool(keep)}});
        };
        ExpectSameAsCpu(node("Sum", DT_FLOAT), {x, idx}, 1e-5);
        ExpectSameAsCpu(node("Mean", DT_FLOAT), {x, idx}, 1e-5);
        ExpectSameAsCpu(node("Max", DT_FLOAT), {x, idx}, 0);
        ExpectSameAsCpu(node("Max", DT_FLOAT), {with_nan, idx}, 0);
        ExpectSameAsCpu(node("Sum", DT_INT32), {xi, idx}, 0);
        ExpectSameAsCpu(node("Max", DT_INT32), {xi, idx}, 0);
      }
  // Empty reductions: Sum 0, Mean NaN, Max -inf / INT_MIN, as on the CPU.
  for (const char* op : {"Sum", "Mean", "Max"})
    ExpectSameAsCpu(MakeNode(op, 2, {{"T", T(DT_FLOAT)}, {"Tidx", T(DT_INT32)}}),
                    {Tensor(DT_FLOAT, TensorShape({3, 0})), MakeVector<int32_t>({1})}, 0);
  ExpectSameAsCpu(MakeNode("Max", 2, {{"T", T(DT_INT32)}, {"Tidx", T(DT_INT32)}}),
                  {Tensor(DT_INT32, TensorShape({0, 2})), MakeVector<int32_t>({0})}, 0);
  // int32 sums wrap around; an axis out of range is the same error.
  ExpectSameAsCpu(MakeNode("Sum", 2, {{"T", T(DT_INT32)}, {"Tidx", T(DT_INT32)}}),
                  {MakeVector<int32_t>({std::numeric_limits<int32_t>::max(), 5, 7}),
                   MakeVector<int32_t>({0})},
                  0);
  ExpectSameAsCpu(MakeNode("Sum", 2, {{"T", T(DT_FLOAT)}, {"Tidx", T(DT_INT32)}}),
                  {x, MakeVector<int32_t>({5})});
}

TEST_F(OpenClKernels, BiasAddSoftmaxLogSoftmax) {
  for (const char* format : {"NHWC", "NCHW"})
    for (TensorShape s : {TensorShape({7, 3}), TensorShape({2, 3, 4, 5}), TensorShape({0, 3}),
                          TensorShape({2, 5, 3, 1, 2})}) {
      const int64_t c = std::string(format) == "NHWC" ? s.dim(s.rank() - 1) : s.dim(1);
      ExpectSameAsCpu(MakeNode("BiasAdd", 2,
                               {{"T", T(DT_FLOAT)}, {"data_format", AttrValue::String(format)}}),
                      {FloatTensor(s, -2, 2, 60), FloatTensor(TensorShape({c}), -1, 1, 61)}, 0);
    }
  // A bias of the wrong length.
  ExpectSameAsCpu(MakeNode("BiasAdd", 2, {{"T", T(DT_FLOAT)}}),
                  {FloatTensor(TensorShape({2, 3}), 0, 1, 62), FloatTensor(TensorShape({2}), 0, 1, 63)});
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    for (TensorShape s : {TensorShape({1}), TensorShape({5, 300}), TensorShape({2, 3, 17}),
                          TensorShape({4, 0}), TensorShape({0, 4})})
      ExpectSameAsCpu(MakeNode(op, 1, {{"T", T(DT_FLOAT)}}), {FloatTensor(s, -20, 20, 64)}, 1e-5);
    // Large logits (the max is subtracted first) and -inf entries.
    const float inf = std::numeric_limits<float>::infinity();
    ExpectSameAsCpu(MakeNode(op, 1, {{"T", T(DT_FLOAT)}}),
                    {MakeTensor<float>(TensorShape({2, 3}), {1000, 999, -inf, 80, 81, 82})}, 1e-5);
  }
}

}  // namespace
}  // namespace cfx
