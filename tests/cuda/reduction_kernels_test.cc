// The GPU's reduction kernels against the CPU's on layouts the conformance cases do not reach:
// every launch shape of reduction.cu (a thread, warp or block per row; rows and columns split
// into segments; narrow, wide and partial column tiles; multi-pass layouts such as NCHW's
// BiasAddGrad), int32 and int64 (exact), ArgMax/ArgMin over middle and leading axes with ties,
// and BiasAddGrad in both data formats. Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "conflux/kernel_runner.h"
#include "cuda_test_util.h"

namespace cfx {
namespace {

using namespace test;  // NOLINT

Tensor Input(DataType t, const TensorShape& shape, int seed) {
  const int64_t n = shape.num_elements();
  if (t == DT_FLOAT) {
    std::vector<float> v(n);
    // Values in [0, 1) on a grid of 1/64, so that ties occur (ArgMax) and sums stay exact enough.
    for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>((i * 7919 + seed * 31) % 64) / 64;
    return MakeTensor<float>(shape, v);
  }
  if (t == DT_INT32) {
    std::vector<int32_t> v(n);
    for (int64_t i = 0; i < n; ++i) v[i] = static_cast<int32_t>((i * 7919 + seed) % 201) - 100;
    return MakeTensor<int32_t>(shape, v);
  }
  std::vector<int64_t> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = (i * 7919 + seed) % 2001 - 1000;
  return MakeTensor<int64_t>(shape, v);
}

// Runs `node` on GPU:0 and CPU:0 and compares: integers exactly, floats within 1e-4 relative.
void ExpectGpuMatchesCpu(const NodeDef& node, const std::vector<Tensor>& inputs,
                         const std::string& what) {
  SCOPED_TRACE(what);
  auto cpu = RunKernelOnce(CudaRuntime(), CudaRuntime().FindDevice("CPU:0").value(), node, inputs);
  auto gpu = RunKernelOnce(CudaRuntime(), GpuDevice(), node, inputs);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  ASSERT_EQ(cpu->size(), gpu->size());
  for (size_t i = 0; i < cpu->size(); ++i) {
    const Tensor &e = (*cpu)[i], &a = (*gpu)[i];
    ASSERT_EQ(e.dtype(), a.dtype());
    ASSERT_EQ(e.shape(), a.shape());
    if (e.dtype() != DT_FLOAT) {
      ExpectTensorEqual(e, a);
      continue;
    }
    int64_t bad = 0;
    for (int64_t k = 0; k < e.num_elements(); ++k) {
      const double x = e.at<float>(k), y = a.at<float>(k);
      if (x == y || std::fabs(x - y) <= 1e-5 + 1e-4 * std::fabs(x) ||
          (std::isnan(x) && std::isnan(y)))  // x == y: also the infinities of empty Max / Min
        continue;
      if (++bad <= 3)
        ADD_FAILURE() << "output " << i << " element " << k << ": " << x << " vs " << y;
    }
    EXPECT_EQ(bad, 0);
  }
}

struct Spec {
  TensorShape shape;
  std::vector<int64_t> axes;
};

const std::vector<Spec>& Layouts() {
  static const std::vector<Spec> specs = {
      {{100000, 3}, {1}},         // a thread per row
      {{3000, 200}, {1}},         // a warp per row
      {{600, 5000}, {1}},         // a block per row
      {{3, 300000}, {-1}},        // rows in segments
      {{1 << 21}, {0}},           // a full reduction in segments
      {{65536, 10}, {0}},         // a batch sum: narrow columns in segments
      {{20000, 10}, {0}},         // narrow columns
      {{2000, 300}, {0}},         // 32-column tiles in segments, a partial last tile
      {{50000, 5, 4}, {1}},       // a thread per column (short middle axis)
      {{8, 700, 130}, {1}},       // middle dims, wide tiles
      {{4, 3, 5, 6}, {0, 2, 3}},  // NCHW BiasAddGrad: rows, then columns
      {{6, 40, 5, 7}, {1, 3}},
      {{2, 3, 4, 5, 6}, {0, 2, 4}},
      {{64, 7, 7, 32}, {0, 1, 2}},
      {{5, 1, 3}, {0, 1}},
      {{4, 1, 5}, {1}},  // nothing reduced: a copy
      {{0, 3}, {0}},     // empty reductions: the identities
      {{3, 0}, {1}},
  };
  return specs;
}

TEST(GpuReductions, MatchTheCpuOnEveryLaunchShape) {
  SKIP_WITHOUT_GPU();
  struct Op {
    const char* name;
    std::vector<DataType> types;
  };
  const Op ops[] = {{"Sum", {DT_FLOAT, DT_INT32, DT_INT64}},
                    {"Mean", {DT_FLOAT}},
                    {"Max", {DT_FLOAT, DT_INT32, DT_INT64}},
                    {"Min", {DT_FLOAT, DT_INT64}},
                    {"Prod", {DT_INT32}}};
  for (const Op& op : ops)
    for (DataType t : op.types)
      for (const Spec& s : Layouts())
        for (bool keep_dims : {false, true}) {
          if (keep_dims && s.shape.rank() != 3) continue;
          NodeDef node = MakeNode(op.name, 2,
                                  {{"T", AttrValue::Type(t)},
                                   {"Tidx", AttrValue::Type(DT_INT64)},
                                   {"keep_dims", AttrValue::Bool(keep_dims)}});
          ExpectGpuMatchesCpu(node, {Input(t, s.shape, 3), MakeVector<int64_t>(s.axes)},
                              std::string(op.name) + " " + DataTypeString(t) + " " +
                                  s.shape.ToString() + (keep_dims ? " keep_dims" : ""));
        }
}

TEST(GpuReductions, ArgMaxAndArgMinMatchTheCpu) {
  SKIP_WITHOUT_GPU();
  const std::vector<std::pair<TensorShape, int>> specs = {
      {{1000, 10}, 1},    {{200, 3000}, 1}, {{4, 300000}, 1}, {{1 << 21}, 0},
      {{8, 700, 130}, 1}, {{65536, 10}, 0}, {{3000, 300}, 0}, {{7, 5, 3}, -3}};
  for (const char* op : {"ArgMax", "ArgMin"})
    for (DataType out : {DT_INT32, DT_INT64})
      for (const auto& [shape, axis] : specs) {
        NodeDef node = MakeNode(op, 2,
                                {{"T", AttrValue::Type(DT_FLOAT)},
                                 {"Tidx", AttrValue::Type(DT_INT32)},
                                 {"output_type", AttrValue::Type(out)}});
        ExpectGpuMatchesCpu(
            node, {Input(DT_FLOAT, shape, 5), MakeScalar<int32_t>(axis)},
            std::string(op) + " " + shape.ToString() + " axis " + std::to_string(axis));
      }
}

TEST(GpuReductions, BiasAddGradAndL2LossMatchTheCpu) {
  SKIP_WITHOUT_GPU();
  const std::vector<std::pair<TensorShape, const char*>> specs = {
      {{65536, 10}, "NHWC"}, {{32, 14, 14, 64}, "NHWC"}, {{8, 64, 14, 14}, "NCHW"},
      {{1, 5}, "NHWC"},      {{0, 4}, "NHWC"},           {{2, 3}, "NCHW"}};
  for (const auto& [shape, format] : specs) {
    NodeDef node =
        MakeNode("BiasAddGrad", 1,
                 {{"T", AttrValue::Type(DT_FLOAT)}, {"data_format", AttrValue::String(format)}});
    ExpectGpuMatchesCpu(node, {Input(DT_FLOAT, shape, 1)},
                        "BiasAddGrad " + shape.ToString() + " " + format);
  }
  for (const TensorShape& shape :
       {TensorShape{}, TensorShape{0}, TensorShape{3, 5}, TensorShape{1 << 21}}) {
    NodeDef node = MakeNode("L2Loss", 1, {{"T", AttrValue::Type(DT_FLOAT)}});
    ExpectGpuMatchesCpu(node, {Input(DT_FLOAT, shape, 2)}, "L2Loss " + shape.ToString());
  }
}

}  // namespace
}  // namespace cfx
