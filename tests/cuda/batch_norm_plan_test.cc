// The host plan of the CUDA batch normalization (kernels/batch_norm_launch.h) and the element walk
// its device code uses, run here on the host: over every block and thread of a pass, the elements
// of each channel are visited exactly once and only by threads of that channel; the block's sum
// tree joins threads of one channel only; grids stay within CUDA's limits and slices are never
// empty; and tensors of 2^31 elements and more per channel keep 64-bit offsets in range. Runs
// without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "kernels/batch_norm_launch.h"

// A namespace of its own: the tests of this folder are compiled in unity batches.
namespace cfx::cuda::batch_norm_plan_test {
namespace {

struct Layout {
  int64_t outer, channels, inner;
};

std::string Name(const Layout& l) {
  return "[" + std::to_string(l.outer) + ", " + std::to_string(l.channels) + ", " +
         std::to_string(l.inner) + "]";
}

// The plan's invariants that do not need a walk.
void ExpectSaneGrid(const BatchNormPlan& p) {
  EXPECT_GE(p.blocks_x, 1);
  EXPECT_LE(p.blocks_x, 0x7fffffff);
  EXPECT_GE(p.slices, 1);
  EXPECT_LE(p.slices, 65535);
  EXPECT_GE(p.runs_per_slice, 1);
  // Every slice holds at least one run, and together they hold them all.
  EXPECT_GE(p.slices * p.runs_per_slice, p.runs);
  EXPECT_LT((p.slices - 1) * p.runs_per_slice, p.runs);
  EXPECT_EQ(p.width & (p.width - 1), 0) << "width " << p.width << " is not a power of 2";
  EXPECT_LE(p.width, kBatchNormThreads);
  if (p.rows) {
    EXPECT_EQ(p.inner, 1);
    EXPECT_EQ(p.runs, p.outer);
    EXPECT_LE(p.width, 32);
    EXPECT_GE(p.width * p.blocks_x, p.channels);
    EXPECT_LT(p.width * (p.blocks_x - 1), p.channels);
  } else {
    EXPECT_EQ(p.blocks_x, p.channels);
    EXPECT_LE(p.piece, kBatchNormMaxPiece);
    EXPECT_GE(p.piece * p.pieces, p.inner);
    EXPECT_LT(p.piece * (p.pieces - 1), p.inner);
    EXPECT_EQ(p.runs, p.outer * p.pieces);
  }
}

// Walks every thread of every block of a pass as the device does and checks that each element
// is visited once, by a thread of its own channel.
void ExpectEveryElementOnce(const Layout& l) {
  SCOPED_TRACE(Name(l));
  const BatchNormPlan p = PlanBatchNorm(l.outer, l.channels, l.inner);
  ExpectSaneGrid(p);
  const int64_t total = l.outer * l.channels * l.inner;
  std::vector<int> visits(total, 0);
  int64_t wrong_channel = 0, out_of_range = 0;
  for (int64_t bx = 0; bx < p.blocks_x; ++bx)
    for (int64_t s = 0; s < p.slices; ++s)
      for (int t = 0; t < kBatchNormThreads; ++t) {
        const int64_t c = BatchNormChannel(p, bx, t);
        if (c >= l.channels) continue;  // a spare lane: the device code skips it
        BatchNormForEachElement(p, s, t, c, [&](int64_t o) {
          if (o < 0 || o >= total) {
            ++out_of_range;
            return;
          }
          ++visits[o];
          if ((o / l.inner) % l.channels != c) ++wrong_channel;
        });
      }
  EXPECT_EQ(out_of_range, 0);
  EXPECT_EQ(wrong_channel, 0);
  const int64_t not_once =
      std::count_if(visits.begin(), visits.end(), [](int v) { return v != 1; });
  EXPECT_EQ(not_once, 0) << "elements visited other than once";
}

TEST(BatchNormPlan, EveryElementIsVisitedOnceByItsChannel) {
  const std::vector<Layout> layouts = {
      // Rows (NHWC, NDHWC, or 1x1 planes): one channel, few, a partial tile, whole tiles, many.
      {1, 1, 1},
      {7, 1, 1},
      {100000, 1, 1},
      {33, 3, 1},
      {2 * 4 * 4, 3, 1},
      {1000, 5, 1},
      {50, 33, 1},
      {32 * 14 * 14, 64, 1},
      {13, 1000, 1},
      {3, 4099, 1},
      // Pieces (NCHW, NCDHW): short planes, planes wider than a block, planes cut in pieces.
      {1, 1, 2},
      {2, 3, 16},
      {8, 64, 14 * 14},
      {5, 7, 49},
      {3, 2, 257},
      {2, 3, 4096},
      {2, 3, 4097},
      {1, 2, 70 * 70},
      {3, 1, 3 * 9000 + 5},
      {4000, 1, 3},
      {2, 1, 200000},
  };
  for (const Layout& l : layouts) ExpectEveryElementOnce(l);
}

TEST(BatchNormPlan, TheBlockTreeJoinsThreadsOfOneChannel) {
  // The sum kernel folds thread t + half into thread t for half = 128, 64, ... down to the
  // number of channel lanes (width in rows, 1 in pieces): both must work on the same channel,
  // and the threads left at the end (t < lanes) hold the block's distinct channels.
  for (const Layout& l : std::vector<Layout>{
           {100, 1, 1}, {100, 3, 1}, {100, 33, 1}, {100, 1000, 1}, {4, 5, 49}, {2, 3, 5000}}) {
    SCOPED_TRACE(Name(l));
    const BatchNormPlan p = PlanBatchNorm(l.outer, l.channels, l.inner);
    const int lanes = p.rows ? p.width : 1;
    for (int64_t bx = 0; bx < p.blocks_x; ++bx) {
      for (int half = kBatchNormThreads / 2; half >= lanes; half /= 2)
        for (int t = 0; t < half; ++t)
          ASSERT_EQ(BatchNormChannel(p, bx, t), BatchNormChannel(p, bx, t + half))
              << "block " << bx << " thread " << t << " half " << half;
      for (int t = 0; t < lanes; ++t)
        EXPECT_EQ(BatchNormChannel(p, bx, t), p.rows ? bx * p.width + t : bx);
    }
  }
}

TEST(BatchNormPlan, EmptyTensorsHaveNoRuns) {
  for (const Layout& l : std::vector<Layout>{{0, 3, 1}, {0, 3, 16}, {2, 3, 0}, {4, 0, 1}}) {
    SCOPED_TRACE(Name(l));
    const BatchNormPlan p = PlanBatchNorm(l.outer, l.channels, l.inner);
    EXPECT_TRUE(p.empty());
    EXPECT_EQ(p.channels, l.channels);
  }
  EXPECT_FALSE(PlanBatchNorm(1, 1, 1).empty());
}

TEST(BatchNormPlan, SlicesFollowTheShapeAlone) {
  // Enough blocks for a large GPU when the channels are few, one slice per channel tile when
  // they alone fill the target, and never slices of fewer elements per thread than the minimum
  // (unless the channel is that small).
  const BatchNormPlan one = PlanBatchNorm(int64_t{1} << 24, 1, 1);
  EXPECT_EQ(one.blocks_x * one.slices, kBatchNormTargetBlocks);
  const BatchNormPlan tiny = PlanBatchNorm(100, 1, 1);
  EXPECT_EQ(tiny.slices, 1);
  const BatchNormPlan many = PlanBatchNorm(64, 8192, 1);
  EXPECT_EQ(many.slices, 1);
  EXPECT_EQ(many.blocks_x, 8192 / 32);
  const BatchNormPlan planes = PlanBatchNorm(32, 64, 56 * 56);
  EXPECT_GE(planes.runs_per_slice * planes.piece, kBatchNormMinPerThread * kBatchNormThreads);
  EXPECT_LE(planes.blocks_x * planes.slices, kBatchNormTargetBlocks + planes.blocks_x);
  // The same shape gives the same plan: the reduction tree is fixed by it.
  const BatchNormPlan again = PlanBatchNorm(32, 64, 56 * 56);
  EXPECT_EQ(again.slices, planes.slices);
  EXPECT_EQ(again.runs_per_slice, planes.runs_per_slice);
}

// The largest offset thread `t` of slice `s` visits in channel c (-1 when none), and whether its
// offsets rise and belong to c.
int64_t LastOffset(const BatchNormPlan& p, int64_t s, int t, int64_t c, bool* ordered) {
  int64_t last = -1;
  BatchNormForEachElement(p, s, t, c, [&](int64_t o) {
    if (o <= last || (o / p.inner) % p.channels != c) *ordered = false;
    last = o;
  });
  return last;
}

TEST(BatchNormPlan, ChannelsOfMoreThanTwoToThe31ElementsStayInRange) {
  // N*H*W beyond 2^31 with one and with three channels (rows), and an NCHW plane of 2^31 + 3
  // elements (pieces): the last slice's threads reach the last element of the last channel and
  // no further; no offset wraps.
  const std::vector<Layout> layouts = {{(int64_t{1} << 31) + 7, 1, 1},
                                       {(int64_t{1} << 32) + 1, 3, 1},
                                       {1, 2, (int64_t{1} << 31) + 3},
                                       {3, 1, (int64_t{1} << 30) + 1}};
  for (const Layout& l : layouts) {
    SCOPED_TRACE(Name(l));
    const BatchNormPlan p = PlanBatchNorm(l.outer, l.channels, l.inner);
    ExpectSaneGrid(p);
    // Each thread's share stays bounded: the slices spread a channel over the target blocks.
    const int64_t per_channel = l.outer * l.inner;
    EXPECT_GT(p.slices * p.blocks_x, kBatchNormTargetBlocks / 2);
    const int64_t total = l.outer * l.channels * l.inner;
    const int64_t c = l.channels - 1;
    const int64_t bx = p.rows ? c / p.width : c;
    int64_t last = -1;
    bool ordered = true;
    for (int t = 0; t < kBatchNormThreads; ++t) {
      if (BatchNormChannel(p, bx, t) != c) continue;
      last = std::max(last, LastOffset(p, p.slices - 1, t, c, &ordered));
    }
    EXPECT_TRUE(ordered);
    EXPECT_EQ(last, total - 1);
    // Slice 0's first thread starts at the channel's first element.
    int64_t first = -1;
    BatchNormForEachElement(p, 0, p.rows ? static_cast<int>(c % p.width) : 0, c, [&](int64_t o) {
      if (first < 0) first = o;
    });
    EXPECT_EQ(first, p.rows ? c : c * l.inner);
    EXPECT_GT(per_channel, int64_t{1} << 30);
  }
}

}  // namespace
}  // namespace cfx::cuda::batch_norm_plan_test
