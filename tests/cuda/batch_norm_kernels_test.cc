// The GPU's FusedBatchNormV3 and FusedBatchNormGradV3 against the CPU kernels of the ops-nn
// plugin, on what the conformance cases do not all reach: NHWC, NCHW and the 3-D formats, training
// with exponential_avg_factor 1 and 0.3, inference, one channel, odd shapes, planes cut into
// pieces (inner > 4096), thousands of channels, a channel of 2^20 rows (many slices), data far
// from zero, empty batches and empty statistics, the gradient in both modes, the same bits on
// every run, and the CPU's refusals of bad shapes. Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "conflux/kernel_runner.h"
#include "cuda_test_util.h"

// A namespace of its own: the tests of this folder are compiled in unity batches.
namespace cfx::gpu_batch_norm_test {
namespace {

using namespace test;  // NOLINT

NodeDef Forward(bool training, const std::string& format, float factor = 1.0f) {
  return MakeNode("FusedBatchNormV3", 5,
                  {{"T", AttrValue::Type(DT_FLOAT)},
                   {"U", AttrValue::Type(DT_FLOAT)},
                   {"epsilon", AttrValue::Float(1e-3f)},
                   {"exponential_avg_factor", AttrValue::Float(factor)},
                   {"data_format", AttrValue::String(format)},
                   {"is_training", AttrValue::Bool(training)}});
}

NodeDef Grad(bool training, const std::string& format) {
  return MakeNode("FusedBatchNormGradV3", 6,
                  {{"T", AttrValue::Type(DT_FLOAT)},
                   {"U", AttrValue::Type(DT_FLOAT)},
                   {"epsilon", AttrValue::Float(1e-3f)},
                   {"data_format", AttrValue::String(format)},
                   {"is_training", AttrValue::Bool(training)}});
}

Tensor Uniform(const TensorShape& shape, float lo, float hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  Tensor t(DT_FLOAT, shape);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

int64_t ChannelsOf(const TensorShape& x, const std::string& format) {
  return format.back() == 'C' ? x.dim(x.rank() - 1) : x.dim(1);
}

std::vector<Tensor> ForwardInputs(const TensorShape& x, const std::string& format,
                                  float center = 0.0f) {
  const TensorShape c({ChannelsOf(x, format)});
  return {Uniform(x, center - 3, center + 3, 1), Uniform(c, 0.5f, 2, 2), Uniform(c, -1, 1, 3),
          Uniform(c, -1, 1, 4), Uniform(c, 0.5f, 2, 5)};
}

std::vector<Tensor> GradInputs(const TensorShape& x, const std::string& format) {
  const TensorShape c({ChannelsOf(x, format)});
  return {Uniform(x, -1, 1, 6), Uniform(x, -3, 3, 7),    Uniform(c, 0.5f, 2, 8),
          Uniform(c, -1, 1, 9), Uniform(c, 0.5f, 2, 10), MakeScalar<float>(0)};
}

StatusOr<std::vector<Tensor>> OnGpu(const NodeDef& node, const std::vector<Tensor>& inputs) {
  return RunKernelOnce(CudaRuntime(), GpuDevice(), node, inputs);
}

// Runs `node` on GPU:0 and CPU:0 and compares every output within the conformance suite's
// normalization tolerance (1e-4 absolute plus 1e-4 relative); NaN must meet NaN.
void ExpectGpuMatchesCpu(const NodeDef& node, const std::vector<Tensor>& inputs,
                         const std::string& what) {
  SCOPED_TRACE(what);
  auto cpu = RunKernelOnce(CudaRuntime(), CudaRuntime().FindDevice("CPU:0").value(), node, inputs);
  auto gpu = OnGpu(node, inputs);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  ASSERT_EQ(cpu->size(), gpu->size());
  for (size_t i = 0; i < cpu->size(); ++i) {
    const Tensor &e = (*cpu)[i], &a = (*gpu)[i];
    ASSERT_EQ(e.dtype(), a.dtype()) << "output " << i;
    ASSERT_EQ(e.shape(), a.shape()) << "output " << i;
    int64_t bad = 0;
    for (int64_t k = 0; k < e.num_elements(); ++k) {
      const double x = e.at<float>(k), y = a.at<float>(k);
      if (std::fabs(x - y) <= 1e-4 + 1e-4 * std::fabs(x) || (std::isnan(x) && std::isnan(y)))
        continue;
      if (++bad <= 3)
        ADD_FAILURE() << "output " << i << " element " << k << ": CPU " << x << ", GPU " << y;
    }
    EXPECT_EQ(bad, 0) << "output " << i;
  }
}

struct Spec {
  TensorShape x;
  const char* format;
};

std::string Name(const Spec& s) { return s.x.ToString() + " " + s.format; }

const std::vector<Spec>& Specs() {
  static const std::vector<Spec> specs = {
      {{2, 4, 4, 3}, "NHWC"},      {{2, 3, 4, 4}, "NCHW"},      // small, both layouts
      {{5, 3, 7, 1}, "NHWC"},      {{5, 1, 3, 7}, "NCHW"},      // one channel
      {{3, 5, 7, 33}, "NHWC"},     {{3, 33, 5, 7}, "NCHW"},     // odd sizes, a partial tile
      {{4, 3, 3, 2000}, "NHWC"},   {{2, 2000, 1, 1}, "NCHW"},   // thousands of channels
      {{2, 3, 70, 70}, "NCHW"},    {{1, 2, 1, 9001}, "NCHW"},   // planes cut into pieces
      {{1024, 32, 32, 1}, "NHWC"}, {{32, 14, 14, 64}, "NHWC"},  // many slices
      {{8, 64, 14, 14}, "NCHW"},   {{2, 2, 3, 3, 5}, "NDHWC"},  // a CNN shape, 3-D
      {{2, 5, 2, 3, 3}, "NCDHW"},  {{1, 1, 1, 1}, "NHWC"},      // 3-D, one element
  };
  return specs;
}

TEST(GpuBatchNorm, TrainingMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  for (const Spec& s : Specs())
    for (float factor : {1.0f, 0.3f})
      ExpectGpuMatchesCpu(Forward(true, s.format, factor), ForwardInputs(s.x, s.format),
                          Name(s) + " factor " + std::to_string(factor));
}

TEST(GpuBatchNorm, InferenceMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  for (const Spec& s : Specs())
    ExpectGpuMatchesCpu(Forward(false, s.format), ForwardInputs(s.x, s.format), Name(s));
}

TEST(GpuBatchNorm, GradientMatchesTheCpuInBothModes) {
  SKIP_WITHOUT_GPU();
  for (const Spec& s : Specs())
    for (bool training : {true, false})
      ExpectGpuMatchesCpu(Grad(training, s.format), GradInputs(s.x, s.format),
                          Name(s) + (training ? " training" : " inference"));
}

TEST(GpuBatchNorm, DataFarFromZeroKeepsItsVariance) {
  SKIP_WITHOUT_GPU();
  // Values 1000 +- 3: a one-pass variance without the shift would lose every digit in float.
  for (const Spec& s : std::vector<Spec>{{{16, 8, 8, 5}, "NHWC"}, {{16, 5, 8, 8}, "NCHW"}})
    ExpectGpuMatchesCpu(Forward(true, s.format), ForwardInputs(s.x, s.format, 1000.0f), Name(s));
}

TEST(GpuBatchNorm, EmptyBatchGivesNaNStatisticsAndZeroGradients) {
  SKIP_WITHOUT_GPU();
  for (const Spec& s : std::vector<Spec>{{{0, 4, 4, 3}, "NHWC"}, {{0, 3, 4, 4}, "NCHW"}}) {
    for (bool training : {true, false}) {
      const std::string what = Name(s) + (training ? " training" : " inference");
      ExpectGpuMatchesCpu(Forward(training, s.format), ForwardInputs(s.x, s.format), what);
      ExpectGpuMatchesCpu(Grad(training, s.format), GradInputs(s.x, s.format), what + " grad");
    }
    auto out = OnGpu(Forward(true, s.format), ForwardInputs(s.x, s.format));
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ((*out)[1].num_elements(), 3);
    for (int i = 1; i <= 4; ++i) EXPECT_TRUE(std::isnan((*out)[i].at<float>(0))) << "output " << i;
  }
}

TEST(GpuBatchNorm, TrainingTakesEmptyMeanAndVariance) {
  SKIP_WITHOUT_GPU();
  // Without averaging, TensorFlow's graphs feed empty statistics in training.
  std::vector<Tensor> in = ForwardInputs({4, 5, 5, 3}, "NHWC");
  in[3] = Tensor(DT_FLOAT, TensorShape({0}));
  in[4] = Tensor(DT_FLOAT, TensorShape({0}));
  ExpectGpuMatchesCpu(Forward(true, "NHWC"), in, "empty mean and variance");
}

TEST(GpuBatchNorm, RunsGiveTheSameBits) {
  SKIP_WITHOUT_GPU();
  // The sums' tree is fixed by the shape: two runs agree bit for bit.
  for (const Spec& s : std::vector<Spec>{{{1024, 32, 32, 1}, "NHWC"}, {{8, 64, 14, 14}, "NCHW"}}) {
    SCOPED_TRACE(Name(s));
    for (const auto& [node, inputs] : std::vector<std::pair<NodeDef, std::vector<Tensor>>>{
             {Forward(true, s.format), ForwardInputs(s.x, s.format)},
             {Grad(true, s.format), GradInputs(s.x, s.format)}}) {
      auto first = OnGpu(node, inputs);
      auto second = OnGpu(node, inputs);
      ASSERT_TRUE(first.ok()) << first.status();
      ASSERT_TRUE(second.ok()) << second.status();
      for (size_t i = 0; i < first->size(); ++i)
        EXPECT_EQ(
            std::memcmp((*first)[i].raw_data(), (*second)[i].raw_data(), (*first)[i].TotalBytes()),
            0)
            << node.op << " output " << i;
    }
  }
}

TEST(GpuBatchNorm, RefusesWhatTheCpuRefuses) {
  SKIP_WITHOUT_GPU();
  std::vector<Tensor> in = ForwardInputs({2, 2, 2, 3}, "NHWC");
  in[1] = MakeVector<float>({1, 2});
  auto bad = OnGpu(Forward(true, "NHWC"), in);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument) << bad.status();
  EXPECT_NE(bad.status().message().find("scale has 2 elements but x has 3 channels"),
            std::string::npos)
      << bad.status();
  std::vector<Tensor> grad = GradInputs({2, 2, 2, 3}, "NHWC");
  grad[0] = Uniform(TensorShape({2, 2, 3, 3}), -1, 1, 11);
  auto mismatch = OnGpu(Grad(true, "NHWC"), grad);
  ASSERT_FALSE(mismatch.ok());
  EXPECT_NE(mismatch.status().message().find("must have the same shape"), std::string::npos)
      << mismatch.status();
}

}  // namespace
}  // namespace cfx::gpu_batch_norm_test
