// DistributedOptimizer's tensor fusion rule (core/src/cc/gradient_buckets.h): which gradients
// share an all-reduce.
#include "cc/gradient_buckets.h"

#include <gtest/gtest.h>

namespace cfx::internal {
namespace {

using Buckets = std::vector<std::vector<size_t>>;

TEST(GradientBuckets, SmallGradientsFuseLastFirstUpToTheFusionSize) {
  // Gradients 0..4 of 8, 24, 12, 48 and 4 bytes, fusion 64: taken from the last, 4 + 48 + 12
  // fill 64 bytes, then 24 + 8 start the next bucket.
  EXPECT_EQ(GradientBuckets({8, 24, 12, 48, 4}, std::vector<DataType>(5, DT_FLOAT), 64),
            (Buckets{{4, 3, 2}, {1, 0}}));
  // Fusion 0: one all-reduce per gradient.
  EXPECT_EQ(GradientBuckets({8, 24}, {DT_FLOAT, DT_FLOAT}, 0), (Buckets{{1}, {0}}));
}

TEST(GradientBuckets, AnotherDtypeStartsABucket) {
  EXPECT_EQ(GradientBuckets({4, 4, 4}, {DT_FLOAT, DT_DOUBLE, DT_DOUBLE}, 1 << 20),
            (Buckets{{2, 1}, {0}}));
}

// The MLP 784-512-512-10's gradients (weights and biases of three layers): the two large
// weight matrices go alone, in place, even under a 4 MiB fusion size; the rest fuse.
TEST(GradientBuckets, LargeGradientsGoAloneWithoutCopies) {
  const std::vector<int64_t> bytes = {784 * 512 * 4, 512 * 4, 512 * 512 * 4, 512 * 4,
                                      512 * 10 * 4,  10 * 4};
  const Buckets buckets = GradientBuckets(bytes, std::vector<DataType>(6, DT_FLOAT), 4 << 20);
  EXPECT_EQ(buckets, (Buckets{{5, 4, 3}, {2}, {1}, {0}}));
  // Just under the limit still fuses.
  EXPECT_EQ(GradientBuckets({kGradientAloneBytes - 4, 4}, {DT_FLOAT, DT_FLOAT}, 4 << 20),
            (Buckets{{1, 0}}));
  EXPECT_EQ(GradientBuckets({kGradientAloneBytes, 4}, {DT_FLOAT, DT_FLOAT}, 4 << 20),
            (Buckets{{1}, {0}}));
}

}  // namespace
}  // namespace cfx::internal
