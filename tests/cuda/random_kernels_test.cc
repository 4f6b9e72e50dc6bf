// The CUDA random kernels draw the CPU kernels' numbers for the same node (seed, seed2), on the
// first run and on later ones.
//
// Here (no GPU needed): FillRandomGroup, the per-group function the device kernel runs, called on
// the host for every group as the kernel's grid-stride loop calls it, from a generator that
// reserves blocks by the GPU kernel's rule, gives the CPU kernel's bits: several shapes, sizes not
// multiples of the group, two successive runs. On a GPU: the GPU kernels against the CPU kernels
// over two runs, several shapes and the empty shape (uniform and integer draws bit for bit;
// normals within a few ulp, CUDA's logf/sinf/cosf not being glibc's), and Range,
// BroadcastGradientArgs and NoOp on the GPU device type.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "conflux/kernel_runner.h"
#include "conflux/sdk/philox.h"
#include "cuda_test_util.h"
#include "kernels/random_launch.h"

namespace cfx::random_kernels_test {
namespace {

using cuda::RandomDist;
using test::CudaRuntime;

constexpr int64_t kSeed = 0x0123456789abcdefll, kSeed2 = 77;

struct DistCase {
  RandomDist dist;
  const char* op;
  DataType dtype;
};

const DistCase kCases[] = {
    {RandomDist::kUniformFloat, "RandomUniform", DT_FLOAT},
    {RandomDist::kNormalFloat, "RandomStandardNormal", DT_FLOAT},
    {RandomDist::kTruncatedNormalFloat, "TruncatedNormal", DT_FLOAT},
    {RandomDist::kUniformInt32, "RandomUniformInt", DT_INT32},
    {RandomDist::kUniformInt64, "RandomUniformInt", DT_INT64},
};

bool IsInt(RandomDist d) {
  return d == RandomDist::kUniformInt32 || d == RandomDist::kUniformInt64;
}

NodeDef NodeFor(const DistCase& c) {
  if (IsInt(c.dist)) {
    return test::MakeNode(c.op, 3,
                          {{"Tout", AttrValue::Type(c.dtype)},
                           {"T", AttrValue::Type(DT_INT32)},
                           {"seed", AttrValue::Int(kSeed)},
                           {"seed2", AttrValue::Int(kSeed2)}});
  }
  return test::MakeNode(c.op, 1,
                        {{"dtype", AttrValue::Type(c.dtype)},
                         {"T", AttrValue::Type(DT_INT32)},
                         {"seed", AttrValue::Int(kSeed)},
                         {"seed2", AttrValue::Int(kSeed2)}});
}

// The bounds of the integer draws: a range that is not a power of two, and negative values.
constexpr int64_t kLo = -1000, kHi = 12345;

std::vector<Tensor> InputsFor(const DistCase& c, const std::vector<int32_t>& dims) {
  std::vector<Tensor> in = {
      test::MakeTensor<int32_t>(TensorShape({static_cast<int64_t>(dims.size())}), dims)};
  if (c.dist == RandomDist::kUniformInt32) {
    in.push_back(test::MakeScalar<int32_t>(static_cast<int32_t>(kLo)));
    in.push_back(test::MakeScalar<int32_t>(static_cast<int32_t>(kHi)));
  } else if (c.dist == RandomDist::kUniformInt64) {
    in.push_back(test::MakeScalar<int64_t>(kLo));
    in.push_back(test::MakeScalar<int64_t>(kHi));
  }
  return in;
}

int64_t ElementsOf(const std::vector<int32_t>& dims) {
  int64_t n = 1;
  for (int32_t d : dims) n *= d;
  return n;
}

size_t ElementSize(RandomDist d) { return d == RandomDist::kUniformInt64 ? 8 : 4; }

// The GPU kernel's host side and device loop, run on the host: reserve by the kernel's rule,
// then FillRandomGroup for every group.
class HostModel {
 public:
  explicit HostModel(RandomDist dist) : dist_(dist) { gen_.Init(kSeed, kSeed2); }

  std::vector<unsigned char> Draw(int64_t n) {
    std::vector<unsigned char> out(static_cast<size_t>(n) * ElementSize(dist_));
    if (n == 0) return out;
    cuda::RandomFillArgs a;
    a.dist = dist_;
    a.n = n;
    a.out = out.data();
    if (dist_ == RandomDist::kUniformInt32) {
      a.lo = static_cast<uint32_t>(static_cast<int32_t>(kLo));
      a.range = static_cast<uint32_t>(kHi - kLo);
    } else if (dist_ == RandomDist::kUniformInt64) {
      a.lo = static_cast<uint64_t>(kLo);
      a.range = static_cast<uint64_t>(kHi - kLo);
    }
    a.base = gen_.Reserve(cuda::RandomBlocksToReserve(dist_, n));
    const int64_t groups = cuda::RandomGroups(dist_, n);
    // The device loop visits groups in any order; visit them backwards to show it does not matter.
    for (int64_t g = groups; g-- > 0;) cuda::FillRandomGroup(a, g);
    return out;
  }

 private:
  RandomDist dist_;
  sdk::GuardedPhilox gen_;
};

std::unique_ptr<KernelRunner> RunnerOn(const char* device, const NodeDef& node) {
  auto dev = CudaRuntime().FindDevice(device);
  EXPECT_TRUE(dev.ok()) << dev.status();
  if (!dev.ok()) return nullptr;
  auto runner = KernelRunner::Create(CudaRuntime(), *dev, node);
  EXPECT_TRUE(runner.ok()) << runner.status();
  return runner.ok() ? std::move(*runner) : nullptr;
}

const std::vector<std::vector<int32_t>> kShapes = {{1}, {7}, {3, 5}, {4, 0}, {1001}, {2, 3, 33}};

TEST(CudaRandomHost, GroupFunctionGivesTheCpuKernelsBitsOverTwoRuns) {
  for (const DistCase& c : kCases) {
    for (const auto& dims : kShapes) {
      SCOPED_TRACE(std::string(c.op) + " " + DataTypeString(c.dtype) + " of " +
                   std::to_string(ElementsOf(dims)) + " elements");
      // A fresh node per shape: the second run continues after the first's reservation.
      auto cpu = RunnerOn("CPU:0", NodeFor(c));
      ASSERT_NE(cpu, nullptr);
      HostModel model(c.dist);
      for (int run = 0; run < 2; ++run) {
        auto out = cpu->Run(InputsFor(c, dims));
        ASSERT_TRUE(out.ok()) << out.status();
        const Tensor& t = (*out)[0];
        const std::vector<unsigned char> want = model.Draw(ElementsOf(dims));
        ASSERT_EQ(t.TotalBytes(), want.size()) << "run " << run;
        EXPECT_EQ(std::memcmp(t.raw_data(), want.data(), want.size()), 0) << "run " << run;
      }
    }
  }
}

TEST(CudaRandomHost, ReservationIsTheCpuRule) {
  // 64-block multiples of what a call reads; TruncatedNormal's groups own 256 blocks each.
  EXPECT_EQ(cuda::RandomBlocksToReserve(RandomDist::kUniformFloat, 0), 0u);
  EXPECT_EQ(cuda::RandomBlocksToReserve(RandomDist::kUniformFloat, 1), 64u);
  EXPECT_EQ(cuda::RandomBlocksToReserve(RandomDist::kUniformFloat, 257), 128u);
  EXPECT_EQ(cuda::RandomBlocksToReserve(RandomDist::kUniformInt64, 129), 128u);
  EXPECT_EQ(cuda::RandomBlocksToReserve(RandomDist::kTruncatedNormalFloat, 5), 512u);
}

// ---- On the GPU

// Distance in ulps between two finite floats of the same sign (or both zero-ish).
int64_t UlpDistance(float a, float b) {
  int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  if (ia < 0) ia = INT32_MIN - ia;
  if (ib < 0) ib = INT32_MIN - ib;
  return std::llabs(int64_t{ia} - int64_t{ib});
}

TEST(CudaRandom, GpuDrawsTheCpuNumbersOverTwoRuns) {
  SKIP_WITHOUT_GPU();
  for (const DistCase& c : kCases) {
    for (const auto& dims : kShapes) {
      SCOPED_TRACE(std::string(c.op) + " " + DataTypeString(c.dtype) + " of " +
                   std::to_string(ElementsOf(dims)) + " elements");
      auto cpu = RunnerOn("CPU:0", NodeFor(c));
      auto gpu = RunnerOn("GPU:0", NodeFor(c));
      ASSERT_NE(cpu, nullptr);
      ASSERT_NE(gpu, nullptr);
      for (int run = 0; run < 2; ++run) {
        auto want = cpu->Run(InputsFor(c, dims));
        auto got = gpu->Run(InputsFor(c, dims));
        ASSERT_TRUE(want.ok()) << want.status();
        ASSERT_TRUE(got.ok()) << got.status();
        const Tensor &w = (*want)[0], &g = (*got)[0];
        ASSERT_EQ(g.shape(), w.shape()) << "run " << run;
        ASSERT_EQ(g.dtype(), w.dtype()) << "run " << run;
        if (c.dist == RandomDist::kNormalFloat || c.dist == RandomDist::kTruncatedNormalFloat) {
          const std::vector<float> wv = test::Values<float>(w), gv = test::Values<float>(g);
          int64_t differ = 0;
          for (size_t i = 0; i < wv.size(); ++i) {
            if (wv[i] == gv[i]) continue;
            ++differ;
            EXPECT_LE(UlpDistance(wv[i], gv[i]), 4)
                << "run " << run << " element " << i << ": " << gv[i] << " vs " << wv[i];
          }
          // The last bit differs only now and then.
          EXPECT_LE(differ * 10, static_cast<int64_t>(wv.size())) << "run " << run;
        } else {
          EXPECT_EQ(std::memcmp(g.raw_data(), w.raw_data(), w.TotalBytes()), 0) << "run " << run;
        }
      }
    }
  }
}

TEST(CudaRandom, UniformIntRefusesAnEmptyRangeOnTheGpu) {
  SKIP_WITHOUT_GPU();
  auto gpu = RunnerOn("GPU:0", NodeFor(kCases[3]));
  ASSERT_NE(gpu, nullptr);
  auto bad = gpu->Run(
      {test::MakeVector<int32_t>({3}), test::MakeScalar<int32_t>(5), test::MakeScalar<int32_t>(5)});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("Need minval < maxval: 5 >= 5"), std::string::npos)
      << bad.status();
}

TEST(CudaHostOps, RangeBroadcastGradientArgsAndNoOpRunOnTheGpuDeviceType) {
  SKIP_WITHOUT_GPU();
  auto range = RunnerOn("GPU:0", test::MakeNode("Range", 3, {{"Tidx", AttrValue::Type(DT_INT64)}}));
  ASSERT_NE(range, nullptr);
  auto r = range->Run(
      {test::MakeScalar<int64_t>(3), test::MakeScalar<int64_t>(-4), test::MakeScalar<int64_t>(-2)});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(test::Values<int64_t>((*r)[0]), (std::vector<int64_t>{3, 1, -1, -3}));

  auto bga = RunnerOn(
      "GPU:0", test::MakeNode("BroadcastGradientArgs", 2, {{"T", AttrValue::Type(DT_INT32)}}));
  ASSERT_NE(bga, nullptr);
  auto b = bga->Run({test::MakeVector<int32_t>({2, 1, 3}), test::MakeVector<int32_t>({4, 1})});
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(test::Values<int32_t>((*b)[0]), (std::vector<int32_t>{1}));
  EXPECT_EQ(test::Values<int32_t>((*b)[1]), (std::vector<int32_t>{0, 2}));

  auto noop = RunnerOn("GPU:0", test::MakeNode("NoOp", 0, {}));
  ASSERT_NE(noop, nullptr);
  EXPECT_TRUE(noop->Run({}).ok());
}

}  // namespace
}  // namespace cfx::random_kernels_test
