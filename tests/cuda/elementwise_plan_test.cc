// The element-wise kernels' host planning and their device index arithmetic (BroadcastOffsets,
// compiled for the host here): broadcasting adds computed through the plan match the definition,
// BiasAdd's bias broadcasts along the channels of NHWC and NCHW, and bad shapes name themselves.
#include "kernels/elementwise_plan.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace cfx::cuda {
namespace {

std::vector<float> Values(const sdk::Shape& shape, float base) {
  std::vector<float> v(static_cast<size_t>(sdk::NumElements(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = base + static_cast<float>(i);
  return v;
}

// x + y the way the device kernel computes it: one output element at a time through the plan.
std::vector<float> AddThroughPlan(const DeviceBroadcast& b, const std::vector<float>& x,
                                  const std::vector<float>& y) {
  std::vector<float> z(static_cast<size_t>(b.num_elements));
  for (int64_t i = 0; i < b.num_elements; ++i) {
    int64_t ox, oy;
    BroadcastOffsets(b.index, i, &ox, &oy);
    z[i] = x[ox] + y[oy];
  }
  return z;
}

// x + y from the definition of broadcasting: right-aligned dims, size-1 dims stretch.
std::vector<float> AddByDefinition(const sdk::Shape& xs, const std::vector<float>& x,
                                   const sdk::Shape& ys, const std::vector<float>& y,
                                   const sdk::Shape& out) {
  std::vector<float> z;
  const int64_t n = sdk::NumElements(out);
  auto offset = [&](const sdk::Shape& s, const std::vector<int64_t>& coord) {
    int64_t o = 0;
    const size_t pad = out.size() - s.size();
    for (size_t d = 0; d < s.size(); ++d) o = o * s[d] + (s[d] == 1 ? 0 : coord[d + pad]);
    return o;
  };
  for (int64_t i = 0; i < n; ++i) {
    std::vector<int64_t> coord(out.size());
    for (int64_t rest = i, d = static_cast<int64_t>(out.size()) - 1; d >= 0; --d) {
      coord[d] = rest % out[d];
      rest /= out[d];
    }
    z.push_back(x[offset(xs, coord)] + y[offset(ys, coord)]);
  }
  return z;
}

TEST(ElementwisePlan, BroadcastIndexMatchesTheDefinition) {
  const std::vector<std::pair<sdk::Shape, sdk::Shape>> cases = {{{2, 3}, {2, 3}},
                                                                {{2, 3}, {}},
                                                                {{}, {4}},
                                                                {{4, 1}, {1, 5}},
                                                                {{8, 1, 6, 6}, {8, 1, 1, 1}},
                                                                {{3, 1, 5}, {4, 1}},
                                                                {{2, 1, 3, 1, 2}, {1, 4, 1, 5, 1}},
                                                                {{1}, {1}},
                                                                {{7, 1, 1}, {7, 1, 1}}};
  for (const auto& [xs, ys] : cases) {
    SCOPED_TRACE(sdk::ShapeString(xs) + " + " + sdk::ShapeString(ys));
    auto b = PlanBinary(xs, ys, "Add");
    ASSERT_TRUE(b.ok()) << b.status().message();
    const std::vector<float> x = Values(xs, 0), y = Values(ys, 1000);
    EXPECT_EQ(AddThroughPlan(*b, x, y), AddByDefinition(xs, x, ys, y, b->output_shape));
  }
  // Same shapes merge into one dim walked with stride 1 by both: the kernel's fast path.
  auto same = PlanBinary({2, 3, 4}, {2, 3, 4}, "Add");
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->index.rank, 1);
  EXPECT_EQ(same->index.strides[0][0], 1);
  EXPECT_EQ(same->index.strides[1][0], 1);
}

TEST(ElementwisePlan, TooManyDimsAndMismatchesAreErrors) {
  auto bad = PlanBinary({2, 3}, {4}, "Add");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("Incompatible shapes: x [2,3] vs. y [4]"),
            std::string::npos)
      << bad.status().message();
  // Alternating broadcast patterns cannot merge: 9 dims.
  auto deep = PlanBinary({2, 1, 2, 1, 2, 1, 2, 1, 2}, {1, 2, 1, 2, 1, 2, 1, 2, 1}, "Mul");
  ASSERT_FALSE(deep.ok());
  EXPECT_EQ(deep.status().code(), CFX_UNIMPLEMENTED);
  EXPECT_NE(deep.status().message().find("needs 9 dimensions after merging; at most 8"),
            std::string::npos)
      << deep.status().message();
}

TEST(ElementwisePlan, BiasBroadcastsAlongTheChannels) {
  // NHWC: channels last; NCHW: channels at dim 1, then trailing ones.
  EXPECT_EQ(BiasShape({2, 5, 5, 3}, {3}, sdk::DataFormat::kNHWC).value(), (sdk::Shape{3}));
  EXPECT_EQ(BiasShape({2, 3, 5, 5}, {3}, sdk::DataFormat::kNCHW).value(), (sdk::Shape{3, 1, 1}));
  EXPECT_EQ(BiasShape({4, 3}, {3}, sdk::DataFormat::kNCHW).value(), (sdk::Shape{3}));
  // The NCHW plan adds bias[c] to every element of channel c.
  const sdk::Shape value = {2, 3, 2, 2};
  auto b = PlanBinary(value, BiasShape(value, {3}, sdk::DataFormat::kNCHW).value(), "BiasAdd");
  ASSERT_TRUE(b.ok());
  const std::vector<float> x(24, 0.0f), bias = {10, 20, 30};
  const std::vector<float> z = AddThroughPlan(*b, x, bias);
  for (int64_t i = 0; i < 24; ++i) EXPECT_EQ(z[i], bias[(i / 4) % 3]) << i;

  auto wrong = BiasShape({2, 5, 5, 3}, {5}, sdk::DataFormat::kNHWC);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find(
                "bias must be a vector of the 3 channels of value [2,5,5,3] (data_format NHWC), "
                "got shape [5]"),
            std::string::npos)
      << wrong.status().message();
  EXPECT_FALSE(BiasShape({3}, {3}, sdk::DataFormat::kNHWC).ok());
}

}  // namespace
}  // namespace cfx::cuda
