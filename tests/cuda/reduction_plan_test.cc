// The CUDA reductions' host planning (kernels/reduction_plan_cuda.h) and the index arithmetic of
// their device kernels, run on the host: plans become the expected passes (one for rows, columns
// and middle dims), long axes split into segments that tile them exactly, and every schedule,
// emulated launch by launch the way reduction.cu indexes memory, gives the reduction's values for
// many shapes and axes (integer sums: exact whatever the order).
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <numeric>
#include <vector>

#include "kernels/reduction_plan_cuda.h"

namespace cfx::cuda {
namespace {

sdk::ReductionPlan Plan(const sdk::Shape& shape, const std::vector<int64_t>& axes,
                        bool keep_dims = false) {
  auto plan = sdk::PlanReduction(shape, axes, keep_dims);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return plan.ok() ? *plan : sdk::ReductionPlan{};
}

void ExpectPasses(const std::vector<ReducePass>& got, const std::vector<ReducePass>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(got[i].outer, want[i].outer);
    EXPECT_EQ(got[i].n, want[i].n);
    EXPECT_EQ(got[i].inner, want[i].inner);
  }
}

TEST(ReductionPlanCuda, CommonLayoutsAreOnePass) {
  // Rows: the last dims.
  ExpectPasses(ReducePasses(Plan({2, 3, 4}, {1, 2})), {{2, 12, 1}});
  ExpectPasses(ReducePasses(Plan({1024, 1024}, {-1})), {{1024, 1024, 1}});
  // A full reduction.
  ExpectPasses(ReducePasses(Plan({4, 5, 3}, {0, 1, 2})), {{1, 60, 1}});
  // Columns: the first dims (a batch sum) and the middle ones.
  ExpectPasses(ReducePasses(Plan({2, 3, 4}, {0})), {{1, 2, 12}});
  ExpectPasses(ReducePasses(Plan({64, 7, 7, 32}, {0, 1, 2})), {{1, 64 * 49, 32}});
  ExpectPasses(ReducePasses(Plan({4, 5, 3}, {1})), {{4, 5, 3}});
  // Axes of length 1 are no groups: [5,1,3] over {0,1} is a column reduction.
  ExpectPasses(ReducePasses(Plan({5, 1, 3}, {0, 1})), {{1, 5, 3}});
}

TEST(ReductionPlanCuda, OtherLayoutsFoldTheLastReducedGroupFirst) {
  // NCHW BiasAddGrad: [N, C, HW] over N and HW: rows first, then a column reduction.
  ExpectPasses(ReducePasses(Plan({2, 3, 4, 5}, {0, 2, 3})), {{6, 20, 1}, {1, 2, 3}});
  ExpectPasses(ReducePasses(Plan({2, 3, 4, 5}, {1, 3})), {{24, 5, 1}, {2, 3, 4}});
  ExpectPasses(ReducePasses(Plan({2, 3, 4, 5, 6}, {0, 2, 4})),
               {{120, 6, 1}, {6, 4, 5}, {1, 2, 15}});
}

TEST(ReductionPlanCuda, NothingReducedIsNoPass) {
  EXPECT_FALSE(ReducesAnything(Plan({4, 5}, {})));
  EXPECT_FALSE(ReducesAnything(Plan({4, 1, 5}, {1})));
  EXPECT_FALSE(ReducesAnything(Plan({}, {})));
  EXPECT_TRUE(ReducePasses(Plan({4, 1, 5}, {1})).empty());
  EXPECT_TRUE(ReducesAnything(Plan({4, 5}, {0})));
}

TEST(ReductionPlanCuda, SegmentsTileTheAxisExactly) {
  for (int64_t n : {1, 2, 7, 1000, 1 << 20, (1 << 20) + 3})
    for (int64_t segments : {1, 2, 3, 7, 256, 1024}) {
      if (segments > n) continue;
      EXPECT_EQ(SegmentBegin(n, segments, 0), 0);
      EXPECT_EQ(SegmentBegin(n, segments, segments), n);
      for (int64_t s = 0; s < segments; ++s) {
        const int64_t len = SegmentBegin(n, segments, s + 1) - SegmentBegin(n, segments, s);
        EXPECT_TRUE(len == n / segments || len == n / segments + 1) << n << " " << segments;
      }
    }
  // No overflow for huge axes.
  const int64_t huge = int64_t{1} << 62;
  EXPECT_EQ(SegmentBegin(huge, 1024, 1024), huge);
  EXPECT_EQ(SegmentBegin(huge, 1024, 512), huge / 2);
}

TEST(ReductionPlanCuda, LongAxesWithFewOutputsAreSplit) {
  constexpr int kSms = 132;
  // A full reduction of 2^20 elements: many segments, each long enough for its block.
  const int64_t full = ReduceSegments({1, 1 << 20, 1}, kSms);
  EXPECT_GT(full, 64);
  EXPECT_LE(full, kMaxSegments);
  // Many rows: no split; short rows never.
  EXPECT_EQ(ReduceSegments({4096, 1 << 14, 1}, kSms), 1);
  EXPECT_EQ(ReduceSegments({1, 1000, 1}, kSms), 1);
  // A batch sum [65536, 10]: one tile of columns, so the batch is split.
  EXPECT_GT(ReduceSegments({1, 65536, 10}, kSms), 64);
  // [1024, 1024] over the first axis: 32 tiles of 32 columns, split a little.
  const int64_t cols = ReduceSegments({1, 1024, 1024}, kSms);
  EXPECT_GT(cols, 1);
  EXPECT_LE(cols * 8 * ColumnTileRows(1024), 1024);
  // Short columns are not split.
  EXPECT_EQ(ReduceSegments({1, 16, 10}, kSms), 1);
  // The schedule adds a second launch over the partial results.
  ReduceSchedule s = ScheduleReduction({{1, 1 << 20, 1}}, kSms);
  ASSERT_EQ(s.steps.size(), 2u);
  ASSERT_EQ(s.temps.size(), 1u);
  EXPECT_EQ(s.temps[0], full);
  EXPECT_EQ(s.steps[0].src, kReduceInput);
  EXPECT_EQ(s.steps[0].dst, 0);
  EXPECT_TRUE(s.steps[0].first);
  EXPECT_FALSE(s.steps[0].last);
  EXPECT_EQ(s.steps[1].shape.n, full);
  EXPECT_EQ(s.steps[1].shape.segments, 1);
  EXPECT_EQ(s.steps[1].src, 0);
  EXPECT_EQ(s.steps[1].dst, kReduceOutput);
  EXPECT_TRUE(s.steps[1].last);
}

// ---- Emulation of reduction.cu's kernels (sums of int64), indexing memory as they do.

using Buffer = std::vector<int64_t>;

// Checks the launch's contract and folds `in` into `out` kernel by kernel; `reads` counts the
// reads of each input element.
void EmulateLaunch(const ReduceShape& s, const Buffer& in, Buffer& out, std::vector<int>& reads) {
  ASSERT_GE(s.outer, 1);
  ASSERT_GE(s.n, 1);
  ASSERT_GE(s.inner, 1);
  ASSERT_GE(s.segments, 1);
  ASSERT_LE(s.segments, s.n);
  ASSERT_LE(s.segments, kMaxSegments);
  ASSERT_EQ(static_cast<int64_t>(in.size()), s.outer * s.n * s.inner);
  ASSERT_EQ(static_cast<int64_t>(out.size()), s.outer * s.segments * s.inner);
  auto load = [&](int64_t offset) {
    EXPECT_GE(offset, 0);
    EXPECT_LT(offset, static_cast<int64_t>(in.size()));
    ++reads[offset];
    return in[offset];
  };
  auto store = [&](int64_t pos, int64_t v) {
    ASSERT_GE(pos, 0);
    ASSERT_LT(pos, static_cast<int64_t>(out.size()));
    out[pos] = v;
  };
  const bool whole = s.segments == 1;
  if (s.inner == 1 && !(whole && s.n <= kRowsPerWarpMax)) {
    // RowsBlockKernel (threads stride the segment; the block folds their sums).
    for (int64_t item = 0; item < s.outer * s.segments; ++item) {
      const int64_t row = item / s.segments, seg = item % s.segments;
      const int64_t end = SegmentBegin(s.n, s.segments, seg + 1), base = row * s.n;
      int64_t acc = 0;
      for (int tid = 0; tid < kReduceThreads; ++tid)
        for (int64_t j = SegmentBegin(s.n, s.segments, seg) + tid; j < end; j += kReduceThreads)
          acc += load(base + j);
      store(item, acc);
    }
  } else if (s.inner == 1) {
    // RowsThreadKernel and RowsWarpKernel: row r's output at r.
    for (int64_t row = 0; row < s.outer; ++row) {
      int64_t acc = 0;
      for (int64_t j = 0; j < s.n; ++j) acc += load(row * s.n + j);
      store(row, acc);
    }
  } else if (whole && s.n <= kRowsPerThreadMax) {
    // ColumnsThreadKernel.
    for (int64_t t = 0; t < s.outer * s.inner; ++t) {
      const int64_t o = t / s.inner, k = t % s.inner, base = o * s.n * s.inner + k;
      int64_t acc = 0;
      for (int64_t j = 0; j < s.n; ++j) acc += load(base + j * s.inner);
      store(t, acc);
    }
  } else {
    // ColumnsTileKernel: blocks (t, seg), threads (rr, c), then the shared-memory tree.
    const int64_t width = ColumnTileWidth(s.inner), rows = kReduceThreads / width;
    ASSERT_GE(rows, 1);
    const int64_t tiles_per_outer = (s.inner + width - 1) / width;
    int64_t pow2 = 1;
    while (pow2 < rows) pow2 *= 2;
    for (int64_t seg = 0; seg < s.segments; ++seg) {
      const int64_t begin = SegmentBegin(s.n, s.segments, seg);
      const int64_t end = SegmentBegin(s.n, s.segments, seg + 1);
      for (int64_t t = 0; t < s.outer * tiles_per_outer; ++t) {
        std::vector<int64_t> scratch(kReduceThreads, 0);
        const int64_t o = t / tiles_per_outer;
        for (int tid = 0; tid < kReduceThreads; ++tid) {
          const int64_t c = tid % width, rr = tid / width, k = t % tiles_per_outer * width + c;
          if (rr < rows && k < s.inner)
            for (int64_t j = begin + rr; j < end; j += rows)
              scratch[tid] += load((o * s.n + j) * s.inner + k);
        }
        for (int64_t half = pow2 / 2; half > 0; half /= 2)
          for (int tid = 0; tid < kReduceThreads; ++tid) {
            const int64_t rr = tid / width;
            if (rr < half && rr + half < rows) scratch[tid] += scratch[tid + half * width];
          }
        for (int tid = 0; tid < kReduceThreads; ++tid) {
          const int64_t c = tid % width, rr = tid / width, k = t % tiles_per_outer * width + c;
          if (rr == 0 && k < s.inner) store((o * s.segments + seg) * s.inner + k, scratch[tid]);
        }
      }
    }
  }
}

// The sum of `input` (shape) over `axes`, element by element.
Buffer ReferenceSum(const sdk::Shape& shape, const std::vector<int64_t>& axes,
                    const Buffer& input) {
  const sdk::ReductionPlan plan = Plan(shape, axes);
  std::vector<bool> reduced(shape.size(), false);
  for (int64_t a : axes) reduced[a < 0 ? a + shape.size() : a] = true;
  Buffer out(static_cast<size_t>(plan.output_elements), 0);
  std::vector<int64_t> index(shape.size(), 0);
  for (size_t i = 0; i < input.size(); ++i) {
    int64_t rest = static_cast<int64_t>(i), pos = 0, stride = 1;
    for (size_t d = shape.size(); d-- > 0;) {
      index[d] = rest % shape[d];
      rest /= shape[d];
    }
    for (size_t d = shape.size(); d-- > 0;) {
      if (reduced[d]) continue;
      pos += index[d] * stride;
      stride *= shape[d];
    }
    out[pos] += input[i];
  }
  return out;
}

// Runs ScheduleReduction's launches through the emulator.
Buffer RunSchedule(const sdk::Shape& shape, const std::vector<int64_t>& axes, const Buffer& input,
                   int sms) {
  const sdk::ReductionPlan plan = Plan(shape, axes);
  const ReduceSchedule schedule = ScheduleReduction(ReducePasses(plan), sms);
  std::vector<Buffer> temps;
  for (int64_t n : schedule.temps) temps.emplace_back(static_cast<size_t>(n), -1);
  Buffer output(static_cast<size_t>(plan.output_elements), -1);
  std::vector<int> input_reads(input.size(), 0);
  for (const ReduceStep& step : schedule.steps) {
    const Buffer& src = step.src == kReduceInput ? input : temps.at(step.src);
    EXPECT_EQ(step.first, step.src == kReduceInput);
    EXPECT_EQ(step.last, step.dst == kReduceOutput);
    Buffer& dst = step.dst == kReduceOutput ? output : temps.at(step.dst);
    std::vector<int> reads(src.size(), 0);
    EmulateLaunch(step.shape, src, dst, reads);
    for (size_t i = 0; i < reads.size(); ++i) EXPECT_EQ(reads[i], 1) << "element " << i;
  }
  EXPECT_TRUE(schedule.steps.back().last);
  return output;
}

TEST(ReductionPlanCuda, SchedulesComputeTheReduction) {
  struct Spec {
    sdk::Shape shape;
    std::vector<int64_t> axes;
  };
  const std::vector<Spec> specs = {
      {{7}, {0}},
      {{4, 5, 3}, {1}},
      {{4, 5, 3}, {0, 2}},
      {{4, 5, 3}, {-1}},
      {{4, 5, 3}, {0, 1, 2}},
      {{257, 33}, {0}},
      {{33, 257}, {1}},
      {{33, 257}, {0, 1}},
      {{3, 1500}, {1}},    // a block per row
      {{2, 70000}, {1}},   // rows split into segments
      {{70000}, {0}},      // a full reduction, split
      {{5000, 10}, {0}},   // a batch sum, split (thread-less columns)
      {{3000, 300}, {0}},  // wide columns: 32-column tiles, split
      {{4, 9, 200}, {1}},  // middle dims, 32-column tiles with a partial last tile
      {{40000, 3}, {0}},   // narrow columns: 85 rows of 3 per tile
      {{6, 40, 5, 7}, {0, 2, 3}},
      {{6, 40, 5, 7}, {1, 3}},
      {{2, 3, 4, 5, 6}, {0, 2, 4}},
      {{2, 2, 2, 2, 2, 2, 2}, {0, 2, 4, 6}},
  };
  for (int sms : {1, 4, 132}) {
    for (const Spec& s : specs) {
      SCOPED_TRACE(sdk::ShapeString(s.shape) + " sms=" + std::to_string(sms));
      Buffer input(static_cast<size_t>(sdk::NumElements(s.shape)));
      for (size_t i = 0; i < input.size(); ++i)
        input[i] = static_cast<int64_t>((i * 2654435761u) % 1000) - 500;
      EXPECT_EQ(RunSchedule(s.shape, s.axes, input, sms), ReferenceSum(s.shape, s.axes, input));
    }
  }
}

TEST(ReductionPlanCuda, ArgPassIsTheAxisBetweenOuterAndInner) {
  const ReducePass p = ArgPass({4, 5, 3}, 1);
  EXPECT_EQ(p.outer, 4);
  EXPECT_EQ(p.n, 5);
  EXPECT_EQ(p.inner, 3);
  const ReducePass last = ArgPass({257, 33}, 1);
  EXPECT_EQ(last.outer, 257);
  EXPECT_EQ(last.inner, 1);
  const ReducePass only = ArgPass({7}, 0);
  EXPECT_EQ(only.outer, 1);
  EXPECT_EQ(only.n, 7);
  EXPECT_EQ(only.inner, 1);
}

}  // namespace
}  // namespace cfx::cuda
