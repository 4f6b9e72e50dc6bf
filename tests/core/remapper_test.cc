// FuseContractions (passes/remapper.h): which Conv2D/MatMul + BiasAdd (+ activation) patterns
// become _FusedConv2D / _FusedMatMul nodes and what those carry, and which are left alone
// (intermediate outputs read elsewhere, kept nodes, control consumers, mixed dtypes or devices,
// NCHW, a predicate that places them elsewhere); and CpuOnlyPredicate over the test runtime's
// devices. tests/nn/fused_contraction_test.cc checks the values.
#include "passes/remapper.h"

#include <gtest/gtest.h>

#include "conflux/runtime.h"
#include "graph_builder.h"
#include "kernel_test_util.h"

namespace cfx {
namespace {

using namespace test;  // NOLINT

const AttrValue kFloat = AttrValue::Type(DT_FLOAT);

const NodeDef* Find(const GraphDef& g, const std::string& name) {
  for (const NodeDef& n : g.node)
    if (n.name == name) return &n;
  return nullptr;
}

bool AlwaysCpu(const NodeDef&, const std::vector<const NodeDef*>&) { return true; }

// x, w (filter), b (bias) and a conv -> bias_add chain; `tail_op` (if any) after it as "act"
// (LeakyRelu with alpha 0.3).
GraphBuilder ConvChain(const std::string& tail_op) {
  GraphBuilder b;
  b.Placeholder("x", DT_FLOAT);
  b.Const("w", MakeTensor<float>(TensorShape({1, 1, 2, 2}), {1, 2, 3, 4}));
  b.Const("b", MakeTensor<float>(TensorShape({2}), {1, -1}));
  b.Op("conv", "Conv2D", {"x", "w"},
       {{"T", kFloat},
        {"strides", AttrValue::IntList({1, 1, 1, 1})},
        {"padding", AttrValue::String("SAME")},
        {"_filter_const", AttrValue::Bool(true)}});
  b.Op("bias_add", "BiasAdd", {"conv", "b"}, {{"T", kFloat}});
  if (tail_op.empty()) return b;
  NodeDef& act = b.Op("act", tail_op, {"bias_add"}, {{"T", kFloat}});
  if (tail_op == "LeakyRelu") act.attr["alpha"] = AttrValue::Float(0.3f);
  return b;
}

std::vector<std::string> FusedOps(const NodeDef& n) { return n.attr.at("fused_ops").list.s; }

TEST(FuseContractions, ConvBiasAddActivationBecomesOneNode) {
  for (const char* activation : {"Relu", "Relu6", "Elu", "LeakyRelu"}) {
    SCOPED_TRACE(activation);
    GraphBuilder b = ConvChain(activation);
    b.Op("out", "Identity", {"act"}, {{"T", kFloat}});
    GraphDef g = b.graph();
    ASSERT_EQ(FuseContractions(&g, {}, AlwaysCpu), 1);
    EXPECT_EQ(Find(g, "conv"), nullptr);
    EXPECT_EQ(Find(g, "bias_add"), nullptr);
    const NodeDef* fused = Find(g, "act");
    ASSERT_NE(fused, nullptr);
    EXPECT_EQ(fused->op, "_FusedConv2D");
    EXPECT_EQ(fused->input, (std::vector<std::string>{"x", "w", "b"}));
    EXPECT_EQ(FusedOps(*fused), (std::vector<std::string>{"BiasAdd", activation}));
    EXPECT_EQ(fused->attr.at("num_args").i, 1);
    EXPECT_EQ(fused->attr.at("TArgs").list.type, (std::vector<DataType>{DT_FLOAT}));
    EXPECT_EQ(fused->attr.at("padding").s, "SAME");
    EXPECT_TRUE(fused->attr.at("_filter_const").b);
    EXPECT_FLOAT_EQ(fused->attr.at("leakyrelu_alpha").f,
                    std::string(activation) == "LeakyRelu" ? 0.3f : 0.2f);
    EXPECT_EQ(Find(g, "out")->input[0], "act");
  }
}

TEST(FuseContractions, MatMulBiasAddWithAndWithoutActivation) {
  GraphBuilder b;
  b.Placeholder("a", DT_FLOAT);
  b.Placeholder("m", DT_FLOAT);
  b.Placeholder("b", DT_FLOAT);
  b.Op("ctl", "NoOp");
  b.Op("mm", "MatMul", {"a", "m", "^ctl"},
       {{"T", kFloat}, {"transpose_b", AttrValue::Bool(true)}, {"grad_a", AttrValue::Bool(true)}});
  b.Op("bias_add", "BiasAdd", {"mm", "b"}, {{"T", kFloat}});
  b.Op("mm2", "MatMul", {"bias_add", "m"}, {{"T", kFloat}});
  b.Op("bias_add2", "BiasAdd", {"mm2", "b"}, {{"T", kFloat}});
  b.Op("tanh", "Tanh", {"bias_add2"}, {{"T", kFloat}});
  GraphDef g = b.graph();
  ASSERT_EQ(FuseContractions(&g, {}, AlwaysCpu), 2);
  const NodeDef* first = Find(g, "bias_add");
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->op, "_FusedMatMul");
  EXPECT_EQ(first->input, (std::vector<std::string>{"a", "m", "b", "^ctl"}));
  EXPECT_EQ(FusedOps(*first), (std::vector<std::string>{"BiasAdd"}));
  EXPECT_TRUE(first->attr.at("transpose_b").b);
  EXPECT_EQ(first->attr.count("grad_a"), 0u);  // not an attr of _FusedMatMul
  EXPECT_EQ(first->attr.count("TArgs"), 0u);
  // Tanh is not fused: MatMul + BiasAdd is, and Tanh reads it.
  EXPECT_EQ(Find(g, "bias_add2")->op, "_FusedMatMul");
  EXPECT_EQ(Find(g, "tanh")->input[0], "bias_add2");
  EXPECT_EQ(g.node.size(), 7u);
}

TEST(FuseContractions, LeavesPatternsWithOtherReadersAlone) {
  struct Case {
    const char* what;
    std::function<void(GraphBuilder&)> add;
    std::set<std::string> keep;
    int fused;
    const char* fused_name;  // the node that became fused, if any
  };
  const std::vector<Case> cases = {
      {"conv read twice",
       [](GraphBuilder& b) {
         b.Op("other", "Neg", {"conv"}, {{"T", kFloat}});
       },
       {},
       0,
       ""},
      {"conv read by a control edge",
       [](GraphBuilder& b) { b.Op("other", "NoOp", {"^conv"}); },
       {},
       0,
       ""},
      {"conv kept (fetched)", [](GraphBuilder&) {}, {"conv"}, 0, ""},
      // BiasAdd read elsewhere: the activation stays, Conv2D + BiasAdd fuse.
      {"bias_add read twice",
       [](GraphBuilder& b) {
         b.Op("other", "Neg", {"bias_add"}, {{"T", kFloat}});
       },
       {},
       1,
       "bias_add"},
      {"bias_add kept", [](GraphBuilder&) {}, {"bias_add"}, 1, "bias_add"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    GraphBuilder b = ConvChain("Relu");
    c.add(b);
    GraphDef g = b.graph();
    const GraphDef before = g;
    EXPECT_EQ(FuseContractions(&g, c.keep, AlwaysCpu), c.fused);
    if (c.fused == 0) {
      EXPECT_EQ(g.node.size(), before.node.size());
      EXPECT_EQ(Find(g, "act")->op, "Relu");
    } else {
      EXPECT_EQ(Find(g, c.fused_name)->op, "_FusedConv2D");
      EXPECT_EQ(FusedOps(*Find(g, c.fused_name)), (std::vector<std::string>{"BiasAdd"}));
      EXPECT_EQ(Find(g, "act")->op, "Relu");
    }
  }
}

TEST(FuseContractions, LeavesMismatchedPatternsAlone) {
  {
    GraphBuilder b = ConvChain("Relu");
    GraphDef g = b.graph();
    for (NodeDef& n : g.node)
      if (n.name == "act") n.device = "/device:CPU:1";
    EXPECT_EQ(FuseContractions(&g, {}, AlwaysCpu), 1) << "conv + bias_add, not the relu";
    EXPECT_EQ(Find(g, "act")->op, "Relu");
  }
  {
    GraphBuilder b = ConvChain("");
    GraphDef g = b.graph();
    for (NodeDef& n : g.node)
      if (n.name == "conv") n.attr["data_format"] = AttrValue::String("NCHW");
    EXPECT_EQ(FuseContractions(&g, {}, AlwaysCpu), 0);
  }
  {
    GraphBuilder b = ConvChain("");
    GraphDef g = b.graph();
    for (NodeDef& n : g.node)
      if (n.name == "bias_add") n.attr["T"] = AttrValue::Type(DT_DOUBLE);
    EXPECT_EQ(FuseContractions(&g, {}, AlwaysCpu), 0);
  }
}

// The predicate sees the fused node and the parts, contraction first, and can refuse.
TEST(FuseContractions, PredicateDecides) {
  GraphDef g = ConvChain("Relu").graph();
  std::vector<std::string> seen;
  const GraphDef before = g;
  EXPECT_EQ(FuseContractions(&g, {},
                             [&](const NodeDef& fused, const std::vector<const NodeDef*>& parts) {
                               seen.push_back(fused.op);
                               for (const NodeDef* p : parts) seen.push_back(p->name);
                               return false;
                             }),
            0);
  EXPECT_EQ(seen, (std::vector<std::string>{"_FusedConv2D", "conv", "bias_add", "act",
                                            "_FusedConv2D", "conv", "bias_add"}));
  EXPECT_EQ(g.node.size(), before.node.size());
}

// On the test runtime (CPU devices only, both plugins): unconstrained and CPU requests fuse, a
// request for a device type it does not have does not, nor an unparsable one.
TEST(CpuOnlyPredicate, FusesOnlyWhereACpuRunsIt) {
  Runtime& rt = TestRuntime();
  const std::vector<Device*> devices = rt.cluster_devices();
  const FusionPredicate on_cpu = CpuOnlyPredicate(devices, rt.ops(), rt.kernels());
  for (const auto& [device, fuses] : std::vector<std::pair<std::string, bool>>{
           {"", true}, {"/device:CPU:0", true}, {"/device:GPU:0", false}, {"no such", false}}) {
    SCOPED_TRACE(device);
    GraphDef g = ConvChain("Relu").graph();
    for (NodeDef& n : g.node) n.device = device;
    EXPECT_EQ(FuseContractions(&g, {}, on_cpu), fuses ? 1 : 0);
  }
  // A dtype without a fused CPU kernel (double) is not fused either.
  GraphDef g = ConvChain("Relu").graph();
  for (NodeDef& n : g.node)
    if (n.attr.count("T")) n.attr["T"] = AttrValue::Type(DT_DOUBLE);
  EXPECT_EQ(FuseContractions(&g, {}, on_cpu), 0);
}

}  // namespace
}  // namespace cfx
