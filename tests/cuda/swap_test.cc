// Swapping of a loop's gradient stacks (EuroSys 2018 §5.3) on GPU:0: a long recurrent loop with
// swap_memory gives the same gradient bits with a lower peak of GPU memory; the test prints both
// peaks.
#include <gtest/gtest.h>

#include "cuda_test_util.h"
#include "swap_test_util.h"

namespace cfx {
namespace {

using namespace test;  // NOLINT

TEST(GpuSwap, SwappedStacksGiveTheSameGradientsWithLessGpuMemory) {
  SKIP_WITHOUT_GPU();
  auto rt = MakeCudaRuntime("swap_threshold: 0");
  ASSERT_TRUE(rt.ok()) << rt.status();
  // 500 iterations of 1024x1024: 2 GiB on the stacks without swapping.
  ExpectSwappingSavesMemory(rt->get(), "GPU:0", /*side=*/1024, /*iterations=*/500);
}

}  // namespace
}  // namespace cfx
