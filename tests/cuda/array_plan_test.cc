// The array kernels' host planning and their device index arithmetic (StridedOffset and
// BroadcastOffsetsOf, compiled for the host here): copies computed through the plans match the
// ops' definitions for Transpose, Tile, BroadcastTo, Slice and StridedSlice (negative strides,
// masks), row layouts of joins and cuts, Select's broadcast, and GatherV2's refusal.
#include "kernels/array_plan.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace cfx::cuda {
namespace {

// The input offsets a copy reads, in output order, the way the device kernel computes them
// (with a 32-bit and a 64-bit flat index, which must agree).
Dims OffsetsThroughPlan(const StridedCopyPlan& plan) {
  Dims offsets;
  for (int64_t i = 0; i < plan.num_elements; ++i) {
    const int64_t wide = StridedOffset<int64_t>(plan.index, i);
    EXPECT_EQ(StridedOffset<uint32_t>(plan.index, static_cast<uint32_t>(i)), wide) << i;
    offsets.push_back(plan.contiguous ? plan.index.base + i : wide);
  }
  return offsets;
}

// The coordinates of flat element i of a row-major shape.
Dims Coordinates(const Dims& dims, int64_t i) {
  Dims c(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    c[d] = i % dims[d];
    i /= dims[d];
  }
  return c;
}

// The flat offset of coordinates c in a row-major shape.
int64_t Flat(const Dims& dims, const Dims& c) {
  int64_t o = 0;
  for (size_t d = 0; d < dims.size(); ++d) o = o * dims[d] + c[d];
  return o;
}

TEST(ArrayPlan, TransposeReadsThePermutedElement) {
  const std::vector<std::pair<Dims, Dims>> cases = {{{3, 5}, {1, 0}},
                                                    {{2, 3, 4}, {2, 0, 1}},
                                                    {{2, 3, 4}, {0, 2, 1}},
                                                    {{2, 1, 3, 1, 4}, {4, 3, 2, 1, 0}},
                                                    {{33, 7, 257}, {1, 2, 0}}};
  for (const auto& [input, perm] : cases) {
    SCOPED_TRACE(shape_rules::ShapeStr(input) + " perm " + shape_rules::ListStr(perm));
    Dims out_shape;
    ASSERT_EQ(shape_rules::TransposeShape(input, perm, &out_shape), "");
    auto plan = PlanTranspose(input, perm);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    Dims expected;
    for (int64_t i = 0; i < shape_rules::NumElements(out_shape); ++i) {
      const Dims c = Coordinates(out_shape, i);
      Dims in_c(input.size());
      for (size_t k = 0; k < perm.size(); ++k) in_c[perm[k]] = c[k];
      expected.push_back(Flat(input, in_c));
    }
    EXPECT_EQ(OffsetsThroughPlan(*plan), expected);
  }
  // Moving the last two of [2,3,4] keeps dim 0 outermost; nothing merges.
  EXPECT_EQ(PlanTranspose({2, 3, 4}, {0, 2, 1})->index.rank, 3);
  // Dims that stay neighbours merge: [2,3,4] -> [4,2,3] is a 2-D transpose.
  EXPECT_EQ(PlanTranspose({2, 3, 4}, {2, 0, 1})->index.rank, 2);
}

TEST(ArrayPlan, TileAndBroadcastToRepeatTheInput) {
  // Tile: output coordinate c reads input coordinate c mod the input's dim.
  const std::vector<std::pair<Dims, Dims>> tiles = {
      {{3}, {4}}, {{2, 3}, {3, 2}}, {{1, 257}, {33, 1}}, {{2, 1, 3}, {1, 4, 2}}};
  for (const auto& [input, multiples] : tiles) {
    SCOPED_TRACE(shape_rules::ShapeStr(input) + " multiples " + shape_rules::ListStr(multiples));
    Dims out_shape;
    ASSERT_EQ(shape_rules::TileShape(input, multiples, &out_shape), "");
    auto plan = PlanTile(input, multiples);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    Dims expected;
    for (int64_t i = 0; i < shape_rules::NumElements(out_shape); ++i) {
      Dims c = Coordinates(out_shape, i);
      for (size_t d = 0; d < c.size(); ++d) c[d] %= input[d];
      expected.push_back(Flat(input, c));
    }
    EXPECT_EQ(OffsetsThroughPlan(*plan), expected);
  }
  // BroadcastTo: the input aligned on the right; its dims of 1 (and missing dims) repeat.
  const std::vector<std::pair<Dims, Dims>> broadcasts = {
      {{}, {4, 5}}, {{3}, {2, 3}}, {{4, 1}, {4, 6}}, {{1, 3, 1}, {2, 3, 5}}};
  for (const auto& [input, shape] : broadcasts) {
    SCOPED_TRACE(shape_rules::ShapeStr(input) + " to " + shape_rules::ShapeStr(shape));
    auto plan = PlanBroadcastTo(input, shape);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    Dims expected;
    const size_t offset = shape.size() - input.size();
    for (int64_t i = 0; i < shape_rules::NumElements(shape); ++i) {
      const Dims c = Coordinates(shape, i);
      Dims in_c(input.size());
      for (size_t d = 0; d < input.size(); ++d) in_c[d] = input[d] == 1 ? 0 : c[d + offset];
      expected.push_back(Flat(input, in_c));
    }
    EXPECT_EQ(OffsetsThroughPlan(*plan), expected);
  }
  // Empty outputs plan nothing.
  EXPECT_EQ(PlanTile({0, 3}, {2, 2})->num_elements, 0);
  EXPECT_EQ(PlanBroadcastTo({0, 1}, {2, 0, 7})->num_elements, 0);
}

TEST(ArrayPlan, TooManyDimsAfterMergingIsUnimplemented) {
  // Tile splits each of 9 dims in two, none of which merge: 18 > kMaxCopyDims.
  const Dims input(9, 3), multiples(9, 2);
  auto plan = PlanTile(input, multiples);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), CFX_UNIMPLEMENTED);
  EXPECT_NE(plan.status().message().find("Tile on GPU: the copy of shape "
                                         "[2,3,2,3,2,3,2,3,2,3,2,3,2,3,2,3,2,3] needs 18 "
                                         "dimensions after merging; at most 16"),
            std::string::npos)
      << plan.status().message();
  // Eight dims, each tiled, fit.
  EXPECT_TRUE(PlanTile(Dims(8, 3), Dims(8, 2)).ok());
}

// StridedSlice through the SDK's rule and PlanSlice, as the kernel runs it.
Dims StridedSliceOffsets(const Dims& input, shape_rules::StridedSliceSpec spec, Dims* out_shape) {
  shape_rules::StridedSliceDense dense;
  EXPECT_EQ(shape_rules::StridedSliceShape(input, spec, &dense, out_shape), "");
  auto plan = PlanSlice(input, dense.begin, dense.stride, dense.size, "StridedSlice");
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return plan.ok() ? OffsetsThroughPlan(*plan) : Dims{};
}

TEST(ArrayPlan, SlicesWalkBackwardsAndThroughMasks) {
  Dims out;
  // x[::-1] and x[-1:0:-1] of a vector of 7.
  shape_rules::StridedSliceSpec reverse;
  reverse.begin = {0};
  reverse.end = {0};
  reverse.strides = {-1};
  reverse.begin_mask = reverse.end_mask = 1;
  EXPECT_EQ(StridedSliceOffsets({7}, reverse, &out), (Dims{6, 5, 4, 3, 2, 1, 0}));
  reverse.begin = {-1};
  reverse.begin_mask = reverse.end_mask = 0;
  EXPECT_EQ(StridedSliceOffsets({7}, reverse, &out), (Dims{6, 5, 4, 3, 2, 1}));
  // x[1:6:2].
  shape_rules::StridedSliceSpec steps;
  steps.begin = {1};
  steps.end = {6};
  steps.strides = {2};
  EXPECT_EQ(StridedSliceOffsets({7}, steps, &out), (Dims{1, 3, 5}));
  // x[2] of a [4,5] matrix (shrink_axis_mask): row 2, shape [5].
  shape_rules::StridedSliceSpec row;
  row.begin = {2, 0};
  row.end = {3, 5};
  row.strides = {1, 1};
  row.shrink_axis_mask = 1;
  EXPECT_EQ(StridedSliceOffsets({4, 5}, row, &out), (Dims{10, 11, 12, 13, 14}));
  EXPECT_EQ(out, (Dims{5}));
  // x[::-2, 1:3] of [4,5] with a new axis in front: rows 3 and 1, columns 1 and 2.
  shape_rules::StridedSliceSpec mixed;
  mixed.begin = {0, 0, 1};
  mixed.end = {0, 0, 3};
  mixed.strides = {1, -2, 1};
  mixed.new_axis_mask = 1;
  mixed.begin_mask = mixed.end_mask = 2;
  EXPECT_EQ(StridedSliceOffsets({4, 5}, mixed, &out), (Dims{16, 17, 6, 7}));
  EXPECT_EQ(out, (Dims{1, 2, 2}));
  // Slice of [4,5,3] from [1,0,1] taking [2,5,2]: stride 1, a box.
  auto box = PlanSlice({4, 5, 3}, {1, 0, 1}, {1, 1, 1}, {2, 5, 2}, "Slice");
  ASSERT_TRUE(box.ok());
  Dims expected;
  for (int64_t a = 1; a < 3; ++a)
    for (int64_t b = 0; b < 5; ++b)
      for (int64_t c = 1; c < 3; ++c) expected.push_back(Flat({4, 5, 3}, {a, b, c}));
  EXPECT_EQ(OffsetsThroughPlan(*box), expected);
  // A contiguous range is a memcpy from its first element.
  auto tail = PlanSlice({1 << 20}, {1}, {1}, {(1 << 20) - 2}, "Slice");
  ASSERT_TRUE(tail.ok());
  EXPECT_TRUE(tail->contiguous);
  EXPECT_EQ(tail->index.base, 1);
  // An empty box may begin past the end: nothing to copy.
  EXPECT_EQ(PlanSlice({0, 3}, {0, 0}, {1, 1}, {0, 3}, "Slice")->num_elements, 0);
  // A single element taken with a huge stride never steps by it.
  auto single = PlanSlice({7}, {3}, {int64_t{1} << 62}, {1}, "StridedSlice");
  ASSERT_TRUE(single.ok());
  EXPECT_EQ(OffsetsThroughPlan(*single), (Dims{3}));
}

TEST(ArrayPlan, RowsAroundAnAxis) {
  // [2,3,4] floats around dim 1: 2 rows of 3 * 4 * 4 bytes; around dim 0: one row of all.
  EXPECT_EQ(RowsOf({2, 3, 4}, 1, 4).outer, 2);
  EXPECT_EQ(RowsOf({2, 3, 4}, 1, 4).bytes, 48);
  EXPECT_EQ(RowsOf({2, 3, 4}, 0, 4).outer, 1);
  EXPECT_EQ(RowsOf({2, 3, 4}, 0, 4).bytes, 96);
  // Around the end (Pack along a new last dim): one element per row.
  EXPECT_EQ(RowsOf({2, 3}, 2, 8).outer, 6);
  EXPECT_EQ(RowsOf({2, 3}, 2, 8).bytes, 8);
  EXPECT_EQ(RowsOf({0, 3}, 1, 4).outer, 0);
}

// Select through the plan: condition ? t : e with t's values i and e's values -1 - i.
std::vector<int64_t> SelectThroughPlan(const DeviceBroadcast& b, const std::vector<bool>& c) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < b.num_elements; ++i) {
    int64_t o[3];
    BroadcastOffsetsOf<3>(b.index, i, o);
    out.push_back(c[o[0]] ? o[1] : -1 - o[2]);
  }
  return out;
}

TEST(ArrayPlan, SelectBroadcastsItsThreeOperands) {
  // v1: a vector condition picks rows of t and e.
  auto rows = PlanSelect({2}, {2, 3}, {2, 3}, /*v2=*/false);
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  EXPECT_EQ(rows->output_shape, (sdk::Shape{2, 3}));
  EXPECT_EQ(SelectThroughPlan(*rows, {true, false}), (std::vector<int64_t>{0, 1, 2, -4, -5, -6}));
  // v2: [2,1] condition, [1,3] t, [3] e.
  auto wide = PlanSelect({2, 1}, {1, 3}, {3}, /*v2=*/true);
  ASSERT_TRUE(wide.ok()) << wide.status().message();
  EXPECT_EQ(wide->output_shape, (sdk::Shape{2, 3}));
  EXPECT_EQ(SelectThroughPlan(*wide, {false, true}), (std::vector<int64_t>{-1, -2, -3, 0, 1, 2}));
  // Equal shapes take the kernels' path without index arithmetic.
  auto same = PlanSelect({7}, {7}, {7}, /*v2=*/false);
  ASSERT_TRUE(same.ok());
  EXPECT_TRUE(SameShapes(same->index, 3));
  EXPECT_FALSE(SameShapes(wide->index, 3));

  auto mismatch = PlanSelect({3}, {2, 3}, {2, 3}, /*v2=*/false);
  ASSERT_FALSE(mismatch.ok());
  EXPECT_EQ(mismatch.status().message(),
            "'condition' is a vector of 3 elements but 't' has 2 rows (shape [2,3]); they must "
            "match");
  auto te = PlanSelect({}, {2, 3}, {3, 2}, /*v2=*/false);
  ASSERT_FALSE(te.ok());
  EXPECT_EQ(te.status().message(), "'t' and 'e' must have the same shape, got [2,3] and [3,2]");
  auto v2 = PlanSelect({2}, {3}, {3}, /*v2=*/true);
  ASSERT_FALSE(v2.ok());
  EXPECT_NE(v2.status().message().find("Incompatible shapes"), std::string::npos)
      << v2.status().message();
}

TEST(ArrayPlan, GatherNamesTheBadIndexAndTheRange) {
  EXPECT_EQ(BadIndexMessage({2, 3}, 5, 7, 5), "indices[1,2] = 7 is not in [0, 5)");
  EXPECT_EQ(BadIndexMessage({4}, 0, -1, 3), "indices[0] = -1 is not in [0, 3)");
  EXPECT_EQ(BadIndexMessage({}, 0, 9, 9), "indices[] = 9 is not in [0, 9)");
  shape_rules::GatherSizes sizes;
  sizes.batch = 3;
  sizes.outer = 2;
  sizes.axis_size = 5;
  sizes.inner = 4;
  sizes.per_batch = 6;
  const GatherLayout l = LayoutOf(sizes);
  EXPECT_EQ(l.batch, 3);
  EXPECT_EQ(l.outer, 2);
  EXPECT_EQ(l.axis_size, 5);
  EXPECT_EQ(l.inner, 4);
  EXPECT_EQ(l.per_batch, 6);
}

}  // namespace
}  // namespace cfx::cuda
