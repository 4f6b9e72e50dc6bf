// What the conformance cases do not reach in the CUDA plugin's array and element-wise kernels:
// GatherV2's refusal of an index out of range (found on the device, reported with its position
// and the range) after which the device keeps working, Equal and NotEqual of shapes that do not
// broadcast, AddN of more inputs than one pass adds, a Tile of rank 8 (16 walked dims),
// LeakyRelu's alpha, and UnsortedSegmentSum's sums in the CPU's order (the same bits) and its
// refusal of an id out of range. Values are compared with the CPU kernels. Skips without a GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "conflux/kernel_runner.h"
#include "cuda_test_util.h"

namespace cfx {
namespace {

using namespace test;  // NOLINT

Device* Cpu() { return CudaRuntime().FindDevice("CPU:0").value(); }

StatusOr<std::vector<Tensor>> OnGpu(const NodeDef& node, const std::vector<Tensor>& inputs) {
  return RunKernelOnce(CudaRuntime(), GpuDevice(), node, inputs);
}

// Runs `node` on the GPU and the CPU and expects the same bytes.
void ExpectSameAsCpu(const NodeDef& node, const std::vector<Tensor>& inputs) {
  auto gpu = OnGpu(node, inputs);
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  auto cpu = RunKernelOnce(CudaRuntime(), Cpu(), node, inputs);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  ASSERT_EQ(gpu->size(), cpu->size());
  for (size_t i = 0; i < gpu->size(); ++i) {
    const Tensor &g = (*gpu)[i], &c = (*cpu)[i];
    ASSERT_EQ(g.shape(), c.shape()) << "output " << i;
    ASSERT_EQ(g.TotalBytes(), c.TotalBytes()) << "output " << i;
    EXPECT_EQ(std::memcmp(g.raw_data(), c.raw_data(), g.TotalBytes()), 0) << "output " << i;
  }
}

NodeDef Gather(DataType indices) {
  return MakeNode("GatherV2", 3,
                  {{"Tparams", AttrValue::Type(DT_FLOAT)},
                   {"Tindices", AttrValue::Type(indices)},
                   {"Taxis", AttrValue::Type(DT_INT32)},
                   {"batch_dims", AttrValue::Int(0)}});
}

TEST(GpuKernels, GatherRefusesAnIndexOutOfRangeNamingIt) {
  SKIP_WITHOUT_GPU();
  const Tensor params =
      MakeTensor<float>(TensorShape({4, 3}), {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  auto bad = OnGpu(
      Gather(DT_INT32),
      {params, MakeTensor<int32_t>(TensorShape({2, 2}), {0, 3, 5, 9}), MakeScalar<int32_t>(0)});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument) << bad.status();
  // The first bad index in row-major order, with its position and the range.
  EXPECT_NE(bad.status().message().find("indices[1,0] = 5 is not in [0, 4)"), std::string::npos)
      << bad.status();
  EXPECT_NE(bad.status().message().find("node"), std::string::npos) << bad.status();
  auto negative =
      OnGpu(Gather(DT_INT64), {params, MakeVector<int64_t>({2, -1}), MakeScalar<int32_t>(0)});
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.status().message().find("indices[1] = -1 is not in [0, 4)"), std::string::npos)
      << negative.status();
  // The refusal leaves the device working: a good gather along axis 1 afterwards.
  ExpectSameAsCpu(Gather(DT_INT32),
                  {params, MakeVector<int32_t>({2, 0, 2}), MakeScalar<int32_t>(1)});
}

NodeDef SegmentSum(DataType t, DataType ids) {
  return MakeNode("UnsortedSegmentSum", 3,
                  {{"T", AttrValue::Type(t)},
                   {"Tindices", AttrValue::Type(ids)},
                   {"Tnumsegments", AttrValue::Type(DT_INT32)}});
}

TEST(GpuKernels, UnsortedSegmentSumAddsInTheCpuOrder) {
  SKIP_WITHOUT_GPU();
  // 3000 rows of 37 floats of varied magnitude into 11 segments (some ids -1, some segments
  // empty): float sums depend on their order, so equal bits mean the CPU's order.
  const int64_t rows = 3000, cols = 37;
  std::vector<float> data(rows * cols);
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = static_cast<float>((i * 7919) % 1000) * (i % 3 == 0 ? 1e-3f : 1.7f) - 400.0f;
  std::vector<int32_t> ids(rows);
  for (int64_t j = 0; j < rows; ++j) ids[j] = static_cast<int32_t>((j * 13) % 12) - 1;
  std::vector<int64_t> ids64(ids.begin(), ids.end());
  const Tensor x = MakeTensor<float>(TensorShape({rows, cols}), data);
  ExpectSameAsCpu(SegmentSum(DT_FLOAT, DT_INT32),
                  {x, MakeTensor<int32_t>(TensorShape({rows}), ids), MakeScalar<int32_t>(13)});
  ExpectSameAsCpu(SegmentSum(DT_FLOAT, DT_INT64),
                  {x, MakeTensor<int64_t>(TensorShape({rows}), ids64), MakeScalar<int32_t>(11)});
  // Integer sums wrap around as on the CPU; ids of rank 2.
  ExpectSameAsCpu(
      SegmentSum(DT_INT32, DT_INT32),
      {MakeTensor<int32_t>(TensorShape({2, 2, 2}), {2147483647, 1, 5, 6, 2147483647, 3, -7, 8}),
       MakeTensor<int32_t>(TensorShape({2, 2}), {0, 1, 0, 1}), MakeScalar<int32_t>(3)});
  // Nothing to add: zeros.
  ExpectSameAsCpu(SegmentSum(DT_FLOAT, DT_INT32),
                  {MakeTensor<float>(TensorShape({0, 3}), {}),
                   MakeTensor<int32_t>(TensorShape({0}), {}), MakeScalar<int32_t>(4)});
}

TEST(GpuKernels, UnsortedSegmentSumRefusesAnIdOutOfRangeNamingIt) {
  SKIP_WITHOUT_GPU();
  auto bad = OnGpu(SegmentSum(DT_FLOAT, DT_INT32),
                   {MakeTensor<float>(TensorShape({4}), {1, 2, 3, 4}),
                    MakeVector<int32_t>({0, 5, 1, 7}), MakeScalar<int32_t>(3)});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument) << bad.status();
  // The first bad row, as the CPU kernel words it.
  EXPECT_NE(bad.status().message().find("segment_ids[1] = 5 is out of range [0, 3)"),
            std::string::npos)
      << bad.status();
}

TEST(GpuKernels, EqualityOfShapesThatDoNotBroadcast) {
  SKIP_WITHOUT_GPU();
  const std::vector<Tensor> inputs = {MakeVector<float>({1, 2}), MakeVector<float>({1, 2, 3})};
  for (const char* op : {"Equal", "NotEqual"}) {
    SCOPED_TRACE(op);
    NodeDef lenient = MakeNode(
        op, 2,
        {{"T", AttrValue::Type(DT_FLOAT)}, {"incompatible_shape_error", AttrValue::Bool(false)}});
    auto out = OnGpu(lenient, inputs);
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ((*out)[0].shape(), TensorShape());
    EXPECT_EQ(*(*out)[0].data<bool>(), std::string(op) == "NotEqual");
    NodeDef strict = MakeNode(
        op, 2,
        {{"T", AttrValue::Type(DT_FLOAT)}, {"incompatible_shape_error", AttrValue::Bool(true)}});
    auto refused = OnGpu(strict, inputs);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().code(), Code::kInvalidArgument) << refused.status();
    // "Incompatible shapes" from the kernel, "incompatible shapes" from shape inference.
    EXPECT_NE(refused.status().message().find("ncompatible shapes"), std::string::npos)
        << refused.status();
  }
}

TEST(GpuKernels, AddNOfManyInputsAddsLeftToRight) {
  SKIP_WITHOUT_GPU();
  // 37 inputs take three passes of the device kernel; the CPU adds in the same order, so the
  // float sums agree bit for bit.
  std::vector<Tensor> inputs;
  for (int k = 0; k < 37; ++k) {
    std::vector<float> v(1000);
    for (size_t i = 0; i < v.size(); ++i) v[i] = 0.1f * static_cast<float>((k * 7919 + i) % 97) - 4;
    inputs.push_back(MakeVector<float>(v));
  }
  ExpectSameAsCpu(
      MakeNode("AddN", 37, {{"T", AttrValue::Type(DT_FLOAT)}, {"N", AttrValue::Int(37)}}), inputs);
}

TEST(GpuKernels, TileAndTransposeOfHighRank) {
  SKIP_WITHOUT_GPU();
  std::vector<int32_t> values(2 * 3 * 2 * 1 * 2 * 3 * 2 * 2);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<int32_t>(i);
  const Tensor x = MakeTensor<int32_t>(TensorShape({2, 3, 2, 1, 2, 3, 2, 2}), values);
  ExpectSameAsCpu(
      MakeNode("Tile", 2,
               {{"T", AttrValue::Type(DT_INT32)}, {"Tmultiples", AttrValue::Type(DT_INT32)}}),
      {x, MakeVector<int32_t>({2, 2, 2, 3, 2, 2, 2, 2})});
  ExpectSameAsCpu(
      MakeNode("Transpose", 2,
               {{"T", AttrValue::Type(DT_INT32)}, {"Tperm", AttrValue::Type(DT_INT32)}}),
      {x, MakeVector<int32_t>({7, 0, 5, 1, 6, 3, 2, 4})});
}

TEST(GpuKernels, LeakyReluTakesItsAlpha) {
  SKIP_WITHOUT_GPU();
  const Tensor features = MakeVector<float>({-3, -0.5f, 0, 0.25f, 7});
  ExpectSameAsCpu(MakeNode("LeakyRelu", 1,
                           {{"T", AttrValue::Type(DT_FLOAT)}, {"alpha", AttrValue::Float(0.3f)}}),
                  {features});
  ExpectSameAsCpu(MakeNode("LeakyReluGrad", 2,
                           {{"T", AttrValue::Type(DT_FLOAT)}, {"alpha", AttrValue::Float(0.3f)}}),
                  {MakeVector<float>({1, 2, 3, 4, 5}), features});
}

}  // namespace
}  // namespace cfx
