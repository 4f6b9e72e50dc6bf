// Swapping of a loop's gradient stacks (EuroSys 2018 §5.3) on a device with memory of its own:
// a WhileLoop on OPENCL:0 with swap_memory pushes its forward values to host memory and brings
// them back for the backward loop. The gradients are the same bits as without swapping, and the
// device's peak memory is lower, because the forward values no longer stay on the device until
// the backward loop pops them.
#include <gtest/gtest.h>

#include "opencl_test_util.h"
#include "swap_test_util.h"

namespace cfx {
namespace {

using namespace test;  // NOLINT

TEST(OpenClSwap, SwappedStacksGiveTheSameGradientsWithLessDeviceMemory) {
  SKIP_WITHOUT_OPENCL();
  // swap_threshold 0: every push with swap_memory moves its value to host memory.
  auto rt = MakeOpenClRuntime("swap_threshold: 0");
  ASSERT_TRUE(rt.ok()) << rt.status();
  ExpectSwappingSavesMemory(rt->get(), "OPENCL:0", /*side=*/192, /*iterations=*/40);
}

TEST(OpenClSwap, BelowTheThresholdNothingIsSwapped) {
  SKIP_WITHOUT_OPENCL();
  // A threshold of the whole limit is never passed: swap_memory changes nothing.
  auto rt = MakeOpenClRuntime("swap_threshold: 1\n    memory_limit: 1GiB");
  ASSERT_TRUE(rt.ok()) << rt.status();
  constexpr int64_t kSide = 192;
  constexpr int kIterations = 40;
  SwapStepResult kept = RecurrentStep(rt->get(), "OPENCL:0", kSide, kIterations, false);
  SwapStepResult asked = RecurrentStep(rt->get(), "OPENCL:0", kSide, kIterations, true);
  const int64_t pushed = int64_t{kIterations} * kSide * kSide * 4;
  EXPECT_GT(asked.peak_bytes, pushed);
  EXPECT_GT(asked.peak_bytes, kept.peak_bytes - pushed / 4);
  ASSERT_EQ(asked.values.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(SameFloatBits(kept.values[i], asked.values[i]));
}

}  // namespace
}  // namespace cfx
