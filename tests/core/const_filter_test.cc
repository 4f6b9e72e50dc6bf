// MarkConstantFilters: a Conv2D whose filter is a Const (directly or through Identity nodes) is
// marked `_filter_const`; one whose filter is fed, computed, or read through a control input is
// not.
#include "passes/const_filter.h"

#include <gtest/gtest.h>

#include "graph_builder.h"
#include "kernel_test_util.h"

namespace cfx {
namespace {

using namespace test;  // NOLINT

bool Marked(const GraphDef& g, const std::string& name) {
  for (const NodeDef& n : g.node)
    if (n.name == name) return n.attr.count("_filter_const") && n.attr.at("_filter_const").b;
  ADD_FAILURE() << "no node " << name;
  return false;
}

TEST(MarkConstantFilters, ConstFiltersThroughIdentitiesAreMarked) {
  const AttrValue f = AttrValue::Type(DT_FLOAT);
  GraphBuilder b;
  b.Placeholder("x", DT_FLOAT);
  b.Const("w", MakeTensor<float>(TensorShape({1, 1, 1, 1}), {2}));
  b.Op("w_read", "Identity", {"w"}, {{"T", f}});
  b.Op("w_read2", "Identity", {"w_read"}, {{"T", f}});
  b.Placeholder("fed", DT_FLOAT);
  b.Op("computed", "Neg", {"w"}, {{"T", f}});
  std::vector<std::pair<std::string, AttrValue>> attrs = {
      {"T", f},
      {"strides", AttrValue::IntList({1, 1, 1, 1})},
      {"padding", AttrValue::String("SAME")}};
  b.Op("direct", "Conv2D", {"x", "w"}, attrs);
  b.Op("through_identities", "Conv2D", {"x", "w_read2"}, attrs);
  b.Op("from_feed", "Conv2D", {"x", "fed"}, attrs);
  b.Op("from_op", "Conv2D", {"x", "computed"}, attrs);
  GraphDef g = b.graph();
  EXPECT_EQ(MarkConstantFilters(&g), 2);
  EXPECT_TRUE(Marked(g, "direct"));
  EXPECT_TRUE(Marked(g, "through_identities"));
  EXPECT_FALSE(Marked(g, "from_feed"));
  EXPECT_FALSE(Marked(g, "from_op"));
}

// Identity nodes that feed each other (not a valid graph, but the pass must end) and inputs that
// name no node leave the convolution unmarked.
TEST(MarkConstantFilters, CyclesAndMissingNodesEnd) {
  const AttrValue f = AttrValue::Type(DT_FLOAT);
  GraphDef g;
  NodeDef a, c, conv, conv2;
  a.name = "a", a.op = "Identity", a.input = {"c"}, a.attr["T"] = f;
  c.name = "c", c.op = "Identity", c.input = {"a:0"}, c.attr["T"] = f;
  conv.name = "conv", conv.op = "Conv2D", conv.input = {"x", "a"};
  conv2.name = "conv2", conv2.op = "Conv2D", conv2.input = {"x", "nowhere"};
  g.node = {a, c, conv, conv2};
  EXPECT_EQ(MarkConstantFilters(&g), 0);
}

}  // namespace
}  // namespace cfx
