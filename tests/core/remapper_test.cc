// FuseContractions (passes/remapper.h): which Conv2D/MatMul + BiasAdd (+ activation) patterns
// become _FusedConv2D / _FusedMatMul nodes and what those carry, and which are left alone
// (intermediate outputs read elsewhere, kept nodes, control consumers, mixed dtypes or devices,
// NCHW, a predicate that places them elsewhere); and CpuOnlyPredicate over the test runtime's
// devices. tests/nn/fused_contraction_test.cc checks the values.
#include "passes/remapper.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <optional>
#include <stdexcept>

#include "conflux/runtime.h"
#include "graph_builder.h"
#include "kernel_test_util.h"

namespace cfx {
namespace {

using namespace test;  // NOLINT

const AttrValue kFloat = AttrValue::Type(DT_FLOAT);

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
    EXPECT_EQ(FindNode(g, "conv"), nullptr);
    EXPECT_EQ(FindNode(g, "bias_add"), nullptr);
    const NodeDef* fused = FindNode(g, "act");
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
    EXPECT_EQ(FindNode(g, "out")->input[0], "act");
  }
}

// Shapes for TensorShapes: `known` tensors have `shape`, the rest are unknown.
TensorShapes ShapesOf(std::map<std::string, PartialTensorShape> known) {
  return [known](const std::string& t) -> std::optional<PartialTensorShape> {
    auto it = known.find(t);
    if (it == known.end()) return std::nullopt;
    return it->second;
  };
}

// conv -> bias_add -> add(bias_add, shortcut) [-> relu] becomes one _FusedConv2D with the
// shortcut as its fourth input, [BiasAdd, Add(, Relu)] and num_args 2, taking the last node's
// name and every control input; only when the shapes prove the addend has the output's shape.
TEST(FuseContractions, ResidualAddAndActivationJoinTheConvolution) {
  const PartialTensorShape nhwc({-1, 4, 4, 2});
  for (bool relu : {true, false}) {
    SCOPED_TRACE(relu ? "relu" : "no activation");
    GraphBuilder b = ConvChain("");
    b.Placeholder("shortcut", DT_FLOAT);
    b.Op("ctl", "NoOp");
    b.Op("add", "AddV2", {"shortcut", "bias_add", "^ctl"}, {{"T", kFloat}});
    const std::string last = relu ? "relu" : "add";
    if (relu) b.Op("relu", "Relu", {"add"}, {{"T", kFloat}});
    b.Op("out", "Identity", {last}, {{"T", kFloat}});
    GraphDef g = b.graph();
    ASSERT_EQ(FuseContractions(&g, {}, AlwaysCpu, ShapesOf({{"bias_add", nhwc}, {"shortcut", nhwc}})),
              2)
        << "conv + bias_add, then the residual add";
    EXPECT_EQ(FindNode(g, "bias_add"), nullptr);
    const NodeDef* fused = FindNode(g, last);
    ASSERT_NE(fused, nullptr);
    EXPECT_EQ(fused->op, "_FusedConv2D");
    EXPECT_EQ(fused->input, (std::vector<std::string>{"x", "w", "b", "shortcut", "^ctl"}));
    EXPECT_EQ(FusedOps(*fused), relu ? (std::vector<std::string>{"BiasAdd", "Add", "Relu"})
                                     : (std::vector<std::string>{"BiasAdd", "Add"}));
    EXPECT_EQ(fused->attr.at("num_args").i, 2);
    EXPECT_EQ(fused->attr.at("TArgs").list.type, (std::vector<DataType>{DT_FLOAT, DT_FLOAT}));
    EXPECT_TRUE(fused->attr.at("_filter_const").b);
  }
  // What shapes do not prove: nothing known, another channel count, unknown spatial dims, a
  // known batch against an unknown one; and a kept (fetched) bias add, which must stay.
  for (const auto& [a, c] : std::vector<std::pair<PartialTensorShape, PartialTensorShape>>{
           {PartialTensorShape(), PartialTensorShape()},
           {nhwc, PartialTensorShape({-1, 4, 4, 1})},
           {PartialTensorShape({-1, -1, -1, 2}), PartialTensorShape({-1, -1, -1, 2})},
           {PartialTensorShape({2, 4, 4, 2}), nhwc}}) {
    SCOPED_TRACE(a.ToString() + " + " + c.ToString());
    GraphBuilder b = ConvChain("");
    b.Placeholder("shortcut", DT_FLOAT);
    b.Op("add", "AddV2", {"bias_add", "shortcut"}, {{"T", kFloat}});
    GraphDef g = b.graph();
    EXPECT_EQ(FuseContractions(&g, {}, AlwaysCpu, ShapesOf({{"bias_add", a}, {"shortcut", c}})), 1);
    EXPECT_EQ(FindNode(g, "add")->op, "AddV2");
  }
  GraphBuilder b = ConvChain("");
  b.Placeholder("shortcut", DT_FLOAT);
  b.Op("add", "AddV2", {"bias_add", "shortcut"}, {{"T", kFloat}});
  GraphDef g = b.graph();
  EXPECT_EQ(FuseContractions(&g, {"bias_add"}, AlwaysCpu,
                             ShapesOf({{"bias_add", nhwc}, {"shortcut", nhwc}})),
            1)
      << "conv + bias_add only: bias_add is kept";
  EXPECT_EQ(FindNode(g, "add")->op, "AddV2");
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
  const NodeDef* first = FindNode(g, "bias_add");
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->op, "_FusedMatMul");
  EXPECT_EQ(first->input, (std::vector<std::string>{"a", "m", "b", "^ctl"}));
  EXPECT_EQ(FusedOps(*first), (std::vector<std::string>{"BiasAdd"}));
  EXPECT_TRUE(first->attr.at("transpose_b").b);
  EXPECT_EQ(first->attr.count("grad_a"), 0u);  // not an attr of _FusedMatMul
  EXPECT_EQ(first->attr.count("TArgs"), 0u);
  // Tanh is not fused: MatMul + BiasAdd is, and Tanh reads it.
  EXPECT_EQ(FindNode(g, "bias_add2")->op, "_FusedMatMul");
  EXPECT_EQ(FindNode(g, "tanh")->input[0], "bias_add2");
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
      EXPECT_EQ(FindNode(g, "act")->op, "Relu");
    } else {
      EXPECT_EQ(FindNode(g, c.fused_name)->op, "_FusedConv2D");
      EXPECT_EQ(FusedOps(*FindNode(g, c.fused_name)), (std::vector<std::string>{"BiasAdd"}));
      EXPECT_EQ(FindNode(g, "act")->op, "Relu");
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
    EXPECT_EQ(FindNode(g, "act")->op, "Relu");
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

const Tensor& ValueOf(const GraphDef& g, const std::string& name) {
  return FindNode(g, name)->attr.at("value").tensor;
}

// Keras' BatchNormalization in inference, x * scale + offset after a Conv2D: the scale folds into
// the filter (per output channel), the add of a channel vector ([1, 1, 1, C] here) fuses as the
// bias, the Relu as the activation: one node. The Mul may take the scale on either side. After
// a Conv2D with a bias (Keras' use_bias=True), the scale folds into the bias too and the offset
// adds to it.
TEST(FuseContractions, BatchNormAsScaleAndOffsetFoldsIntoTheConvolution) {
  for (int variant = 0; variant < 3; ++variant) {
    const bool scale_first = variant == 1, with_bias = variant == 2;
    SCOPED_TRACE(with_bias ? "Mul(BiasAdd(conv, b), scale)"
                 : scale_first ? "Mul(scale, conv)" : "Mul(conv, scale)");
    GraphBuilder b;
    b.Placeholder("x", DT_FLOAT);
    b.Const("w", MakeTensor<float>(TensorShape({1, 1, 2, 2}), {1, 2, 3, 4}));
    b.Const("scale", MakeTensor<float>(TensorShape({2}), {2, -1}));
    b.Const("offset", MakeTensor<float>(TensorShape({1, 1, 1, 2}), {0.5, 1}));
    b.Op("ctl", "NoOp");
    b.Op("conv", "Conv2D", {"x", "w"},
         {{"T", kFloat},
          {"strides", AttrValue::IntList({1, 1, 1, 1})},
          {"padding", AttrValue::String("SAME")}});
    std::string product = "conv";
    if (with_bias) {
      b.Const("b", MakeTensor<float>(TensorShape({2}), {10, 20}));
      b.Op("bias_add", "BiasAdd", {"conv", "b"}, {{"T", kFloat}});
      product = "bias_add";
    }
    b.Op("mul", "Mul",
         scale_first ? std::vector<std::string>{"scale", product, "^ctl"}
                     : std::vector<std::string>{product, "scale", "^ctl"},
         {{"T", kFloat}});
    b.Op("add", "AddV2", {"mul", "offset"}, {{"T", kFloat}});
    b.Op("act", "Relu", {"add"}, {{"T", kFloat}});
    b.Op("out", "Identity", {"act"}, {{"T", kFloat}});
    GraphDef g = b.graph();
    ASSERT_EQ(FuseContractions(&g, {}, AlwaysCpu), with_bias ? 3 : 2)
        << "a scale folded, the offset merged into the bias (with one), a fusion";
    for (const char* gone : {"conv", "bias_add", "mul", "scale", "add"})
      EXPECT_EQ(FindNode(g, gone), nullptr) << gone;
    EXPECT_EQ(FindNode(g, "offset") == nullptr, with_bias);
    const NodeDef* fused = FindNode(g, "act");
    ASSERT_NE(fused, nullptr);
    EXPECT_EQ(fused->op, "_FusedConv2D");
    EXPECT_EQ(fused->input,
              (std::vector<std::string>{"x", "w", with_bias ? "b" : "offset", "^ctl"}));
    EXPECT_EQ(FusedOps(*fused), (std::vector<std::string>{"BiasAdd", "Relu"}));
    ExpectTensorEqual(MakeTensor<float>(TensorShape({1, 1, 2, 2}), {2, -2, 6, -4}),
                      ValueOf(g, "w"));
    if (with_bias)  // (b * scale) + offset
      ExpectTensorEqual(MakeTensor<float>(TensorShape({2}), {20.5, -19}), ValueOf(g, "b"));
    else
      ExpectTensorEqual(MakeTensor<float>(TensorShape({2}), {0.5, 1}), ValueOf(g, "offset"));
  }
}

// Two convolutions that read one filter and one bias Const (CSE merges equal Consts, such as the
// zero biases of an untrained model), each scaled differently: each gets its own folded copy,
// and neither sees the other's scale.
TEST(FuseContractions, SharedFiltersAndBiasesAreCopiedBeforeFolding) {
  GraphBuilder b;
  b.Placeholder("x", DT_FLOAT);
  b.Const("w", MakeTensor<float>(TensorShape({1, 1, 1, 2}), {1, 2}));
  b.Const("b", MakeTensor<float>(TensorShape({2}), {3, 4}));
  for (const char* k : {"1", "2"}) {
    const std::string n = k;
    b.Const("scale" + n, MakeTensor<float>(TensorShape({2}), {n == "1" ? 10.f : 100.f, -1}));
    b.Op("conv" + n, "Conv2D", {"x", "w"},
         {{"T", kFloat},
          {"strides", AttrValue::IntList({1, 1, 1, 1})},
          {"padding", AttrValue::String("SAME")}});
    b.Op("bias" + n, "BiasAdd", {"conv" + n, "b"}, {{"T", kFloat}});
    b.Op("y" + n, "Mul", {"bias" + n, "scale" + n}, {{"T", kFloat}});
  }
  GraphDef g = b.graph();
  ASSERT_EQ(FuseContractions(&g, {}, AlwaysCpu), 2 + 2) << "two folds, two fusions";
  for (const auto& [y, scale] : std::vector<std::pair<std::string, float>>{{"y1", 10.f},
                                                                            {"y2", 100.f}}) {
    SCOPED_TRACE(y);
    const NodeDef* fused = FindNode(g, y);
    ASSERT_NE(fused, nullptr);
    EXPECT_EQ(fused->op, "_FusedConv2D");
    ExpectTensorEqual(MakeTensor<float>(TensorShape({1, 1, 1, 2}), {1 * scale, -2}),
                      ValueOf(g, fused->input[1]));
    ExpectTensorEqual(MakeTensor<float>(TensorShape({2}), {3 * scale, -4}),
                      ValueOf(g, fused->input[2]));
  }
  EXPECT_NE(FindNode(g, "y1")->input[1], FindNode(g, "y2")->input[1]);
  EXPECT_NE(FindNode(g, "y1")->input[2], FindNode(g, "y2")->input[2]);

  // A [1, 1, 1, C] offset that two adds read becomes a vector for each fused node, and stays as
  // it was for a third reader.
  GraphBuilder shared;
  shared.Placeholder("x", DT_FLOAT);
  shared.Const("w", MakeTensor<float>(TensorShape({1, 1, 1, 2}), {1, 2}));
  shared.Const("offset", MakeTensor<float>(TensorShape({1, 1, 1, 2}), {5, 6}));
  for (const char* k : {"1", "2"}) {
    const std::string n = k;
    shared.Op("conv" + n, "Conv2D", {"x", "w"},
              {{"T", kFloat},
               {"strides", AttrValue::IntList({1, 1, 1, 1})},
               {"padding", AttrValue::String("SAME")}});
    shared.Op("y" + n, "AddV2", {"conv" + n, "offset"}, {{"T", kFloat}});
  }
  shared.Op("other", "Neg", {"offset"}, {{"T", kFloat}});
  g = shared.graph();
  ASSERT_EQ(FuseContractions(&g, {}, AlwaysCpu), 2);
  for (const char* y : {"y1", "y2"}) {
    SCOPED_TRACE(y);
    ASSERT_EQ(FindNode(g, y)->op, "_FusedConv2D");
    ExpectTensorEqual(MakeTensor<float>(TensorShape({2}), {5, 6}),
                      ValueOf(g, FindNode(g, y)->input[2]));
  }
  ExpectTensorEqual(MakeTensor<float>(TensorShape({1, 1, 1, 2}), {5, 6}), ValueOf(g, "offset"));
}

// The filter element's output channel: depthwise [kh, kw, c, m] gives channel c * m + m', MatMul
// with transpose_b a row of [n, k]; a scalar scales everything.
TEST(FuseContractions, ScalesFoldIntoDepthwiseAndMatMulFilters) {
  {
    GraphBuilder b;
    b.Placeholder("x", DT_FLOAT);
    b.Const("w", MakeTensor<float>(TensorShape({1, 1, 2, 2}), {1, 2, 3, 4}));
    b.Const("scale", MakeTensor<float>(TensorShape({4}), {1, 10, 100, 1000}));
    b.Op("conv", "DepthwiseConv2dNative", {"x", "w"},
         {{"T", kFloat},
          {"strides", AttrValue::IntList({1, 1, 1, 1})},
          {"padding", AttrValue::String("VALID")}});
    b.Op("mul", "Mul", {"conv", "scale"}, {{"T", kFloat}});
    GraphDef g = b.graph();
    ASSERT_EQ(FuseContractions(&g, {}, AlwaysCpu), 1);
    EXPECT_EQ(FindNode(g, "mul")->op, "DepthwiseConv2dNative");
    ExpectTensorEqual(MakeTensor<float>(TensorShape({1, 1, 2, 2}), {1, 20, 300, 4000}),
                      ValueOf(g, "w"));
  }
  for (const Tensor& scale : {MakeTensor<float>(TensorShape({1, 3}), {1, 10, 100}),
                              Tensor::Scalar<float>(DT_FLOAT, 3.0f)}) {
    SCOPED_TRACE(scale.DebugString());
    GraphBuilder b;
    b.Placeholder("x", DT_FLOAT);
    b.Const("w", MakeTensor<float>(TensorShape({3, 2}), {1, 2, 3, 4, 5, 6}));  // [n, k]
    b.Const("scale", scale);
    b.Op("mm", "MatMul", {"x", "w"}, {{"T", kFloat}, {"transpose_b", AttrValue::Bool(true)}});
    b.Op("mul", "Mul", {"mm", "scale"}, {{"T", kFloat}});
    GraphDef g = b.graph();
    ASSERT_EQ(FuseContractions(&g, {}, AlwaysCpu), 1);
    EXPECT_EQ(FindNode(g, "mul")->op, "MatMul");
    EXPECT_TRUE(FindNode(g, "mul")->attr.at("transpose_b").b);
    ExpectTensorEqual(scale.num_elements() == 1
                          ? MakeTensor<float>(TensorShape({3, 2}), {3, 6, 9, 12, 15, 18})
                          : MakeTensor<float>(TensorShape({3, 2}), {1, 2, 30, 40, 500, 600}),
                      ValueOf(g, "w"));
  }
}

// What would change the product's shape or values, or what others read, stays as it is: a scale
// or bias that varies along another dimension, broadcasts to a higher rank or has another
// channel count; a filter or scale that is not a Const; NCHW.
TEST(FuseContractions, ScalesAndAddsThatAreNotPerChannelStay) {
  struct Case {
    const char* what;
    std::function<void(GraphDef&)> edit;
  };
  auto node = [](GraphDef& g, const std::string& name) -> NodeDef& {
    for (NodeDef& n : g.node)
      if (n.name == name) return n;
    throw std::runtime_error("no node " + name);
  };
  auto replace_const = [node](const char* name, Tensor value) {
    return [node, name, value](GraphDef& g) {
      node(g, name).attr["value"] = AttrValue::TensorValue(value);
    };
  };
  auto add_node = [](GraphDef& g, const std::string& name, const std::string& op,
                     std::vector<std::string> inputs,
                     std::vector<std::pair<std::string, AttrValue>> attrs) {
    GraphBuilder extra;
    extra.Op(name, op, std::move(inputs), std::move(attrs));
    g.node.push_back(extra.graph().node[0]);
  };
  const std::vector<Case> cases = {
      {"scale along another dim",
       replace_const("scale", MakeTensor<float>(TensorShape({2, 1}), {2, 3}))},
      {"scale of rank 5",
       replace_const("scale", MakeTensor<float>(TensorShape({1, 1, 1, 1, 2}), {2, 3}))},
      {"bias with one channel for two",
       replace_const("offset", MakeTensor<float>(TensorShape({1}), {2}))},
      {"bias along another dim",
       replace_const("offset", MakeTensor<float>(TensorShape({1, 1, 2, 1}), {2, 3}))},
      {"filter fed",
       [&](GraphDef& g) {
         node(g, "conv").input[1] = "fed_w";
         add_node(g, "fed_w", "Placeholder", {}, {{"dtype", kFloat}});
       }},
      {"scale fed",
       [&](GraphDef& g) {
         node(g, "mul").input[1] = "fed";
         add_node(g, "fed", "Placeholder", {}, {{"dtype", kFloat}});
       }},
      {"NCHW",
       [&](GraphDef& g) { node(g, "conv").attr["data_format"] = AttrValue::String("NCHW"); }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    GraphBuilder b;
    b.Placeholder("x", DT_FLOAT);
    b.Const("w", MakeTensor<float>(TensorShape({1, 1, 2, 2}), {1, 2, 3, 4}));
    b.Const("scale", MakeTensor<float>(TensorShape({2}), {2, -1}));
    b.Const("offset", MakeTensor<float>(TensorShape({2}), {0.5, 1}));
    b.Op("conv", "Conv2D", {"x", "w"},
         {{"T", kFloat},
          {"strides", AttrValue::IntList({1, 1, 1, 1})},
          {"padding", AttrValue::String("SAME")}});
    b.Op("mul", "Mul", {"conv", "scale"}, {{"T", kFloat}});
    b.Op("add", "AddV2", {"mul", "offset"}, {{"T", kFloat}});
    GraphDef g = b.graph();
    c.edit(g);
    const bool bias_case = std::string(c.what).find("bias") != std::string::npos;
    // A bad bias still lets the scale fold (and the Mul go); everything else stays.
    EXPECT_EQ(FuseContractions(&g, {}, AlwaysCpu), bias_case ? 1 : 0);
    EXPECT_EQ(FindNode(g, "add")->op, "AddV2");
    EXPECT_EQ(FindNode(g, "mul") != nullptr && FindNode(g, "mul")->op == "Mul", !bias_case);
  }
}

// Keras' ZeroPadding2D before a VALID (or EXPLICIT) convolution becomes the convolution's own
// explicit padding; what is not zero padding of the spatial dims of one reader stays a Pad.
TEST(FuseContractions, ZeroPaddingFoldsIntoTheConvolution) {
  auto graph = [](const std::string& pad_op, const std::string& conv_op, const std::string& padding,
                  std::vector<int32_t> amounts) {
    GraphBuilder b;
    b.Placeholder("x", DT_FLOAT);
    b.Const("w", MakeTensor<float>(TensorShape({1, 1, 2, 2}), {1, 2, 3, 4}));
    b.Const("amounts", MakeTensor<int32_t>(TensorShape({4, 2}), amounts));
    b.Op("ctl", "NoOp");
    std::vector<std::string> pad_inputs = {"x", "amounts", "^ctl"};
    if (pad_op == "PadV2") {
      b.Const("zero", Tensor::Scalar<float>(DT_FLOAT, 0.0f));
      pad_inputs.insert(pad_inputs.begin() + 2, "zero");
    }
    NodeDef& pad = b.Op("pad", pad_op, pad_inputs, {{"T", kFloat}});
    if (pad_op == "MirrorPad") pad.attr["mode"] = AttrValue::String("REFLECT");
    NodeDef& conv = b.Op("conv", conv_op, {"pad", "w"},
                         {{"T", kFloat},
                          {"strides", AttrValue::IntList({1, 1, 1, 1})},
                          {"padding", AttrValue::String(padding)}});
    if (padding == "EXPLICIT")
      conv.attr["explicit_paddings"] = AttrValue::IntList({0, 0, 1, 1, 1, 1, 0, 0});
    b.Op("out", "Identity", {"conv"}, {{"T", kFloat}});
    return b.graph();
  };
  const std::vector<int32_t> spatial = {0, 0, 1, 2, 3, 0, 0, 0};
  {
    GraphDef g = graph("Pad", "Conv2D", "VALID", spatial);
    ASSERT_EQ(FuseContractions(&g, {}, AlwaysCpu), 1);
    EXPECT_EQ(FindNode(g, "pad"), nullptr);
    EXPECT_EQ(FindNode(g, "amounts"), nullptr);
    const NodeDef* conv = FindNode(g, "conv");
    EXPECT_EQ(conv->input, (std::vector<std::string>{"x", "w", "^ctl"}));
    EXPECT_EQ(conv->attr.at("padding").s, "EXPLICIT");
    EXPECT_EQ(conv->attr.at("explicit_paddings").list.i,
              (std::vector<int64_t>{0, 0, 1, 2, 3, 0, 0, 0}));
  }
  {
    GraphDef g = graph("Pad", "DepthwiseConv2dNative", "EXPLICIT", spatial);
    ASSERT_EQ(FuseContractions(&g, {}, AlwaysCpu), 1);
    EXPECT_EQ(FindNode(g, "conv")->attr.at("explicit_paddings").list.i,
              (std::vector<int64_t>{0, 0, 2, 3, 4, 1, 0, 0}));
  }
  struct Kept {
    const char* what;
    GraphDef g;
  };
  for (Kept& k : std::vector<Kept>{
           {"SAME convolution", graph("Pad", "Conv2D", "SAME", spatial)},
           {"batch padded", graph("Pad", "Conv2D", "VALID", {1, 0, 1, 2, 3, 0, 0, 0})},
           {"channels padded", graph("Pad", "Conv2D", "VALID", {0, 0, 1, 2, 3, 0, 0, 1})},
           {"PadV2", graph("PadV2", "Conv2D", "VALID", spatial)},
           {"MirrorPad", graph("MirrorPad", "Conv2D", "VALID", spatial)}}) {
    SCOPED_TRACE(k.what);
    EXPECT_EQ(FuseContractions(&k.g, {}, AlwaysCpu), 0);
    EXPECT_EQ(FindNode(k.g, "conv")->input[0], "pad");
  }
  GraphDef read_twice = graph("Pad", "Conv2D", "VALID", spatial);
  GraphBuilder other;
  other.Op("other", "Neg", {"pad"}, {{"T", kFloat}});
  read_twice.node.push_back(other.graph().node[0]);
  EXPECT_EQ(FuseContractions(&read_twice, {}, AlwaysCpu), 0);
}

// DepthwiseConv2dNative + BiasAdd + activation becomes _FusedDepthwiseConv2dNative with
// TensorFlow's attrs (no explicit_paddings, no TArgs).
TEST(FuseContractions, DepthwiseConvolutionBiasAddActivationBecomesOneNode) {
  GraphBuilder b;
  b.Placeholder("x", DT_FLOAT);
  b.Const("w", MakeTensor<float>(TensorShape({1, 1, 2, 1}), {1, 2}));
  b.Const("b", MakeTensor<float>(TensorShape({2}), {1, -1}));
  b.Op("conv", "DepthwiseConv2dNative", {"x", "w"},
       {{"T", kFloat},
        {"strides", AttrValue::IntList({1, 1, 1, 1})},
        {"padding", AttrValue::String("VALID")},
        {"explicit_paddings", AttrValue::IntList({})}});
  b.Op("bias_add", "BiasAdd", {"conv", "b"}, {{"T", kFloat}});
  b.Op("act", "Relu6", {"bias_add"}, {{"T", kFloat}});
  GraphDef g = b.graph();
  ASSERT_EQ(FuseContractions(&g, {}, AlwaysCpu), 1);
  const NodeDef* fused = FindNode(g, "act");
  EXPECT_EQ(fused->op, "_FusedDepthwiseConv2dNative");
  EXPECT_EQ(fused->input, (std::vector<std::string>{"x", "w", "b"}));
  EXPECT_EQ(FusedOps(*fused), (std::vector<std::string>{"BiasAdd", "Relu6"}));
  EXPECT_EQ(fused->attr.count("explicit_paddings"), 0u);
  EXPECT_EQ(fused->attr.count("TArgs"), 0u);
  EXPECT_EQ(fused->attr.at("padding").s, "VALID");
}

// Keras' swish, Mul(x, Sigmoid(x)) in either order, becomes _MklSwish(x) under the Mul's name
// with the control inputs of both; a Sigmoid read elsewhere, of another tensor, or a predicate
// that says no leave it as it is.
TEST(FuseContractions, SwishBecomesOneNode) {
  auto graph = [](bool sigmoid_first) {
    GraphBuilder b;
    b.Placeholder("x", DT_FLOAT);
    b.Placeholder("z", DT_FLOAT);
    b.Op("ctl", "NoOp");
    b.Op("sig", "Sigmoid", {"x", "^ctl"}, {{"T", kFloat}});
    b.Op("swish", "Mul", sigmoid_first ? std::vector<std::string>{"sig", "x"}
                                       : std::vector<std::string>{"x", "sig"},
         {{"T", kFloat}});
    b.Op("out", "Identity", {"swish"}, {{"T", kFloat}});
    return b.graph();
  };
  for (bool sigmoid_first : {false, true}) {
    GraphDef g = graph(sigmoid_first);
    ASSERT_EQ(FuseContractions(&g, {}, AlwaysCpu), 1);
    EXPECT_EQ(FindNode(g, "sig"), nullptr);
    const NodeDef* swish = FindNode(g, "swish");
    EXPECT_EQ(swish->op, "_MklSwish");
    EXPECT_EQ(swish->input, (std::vector<std::string>{"x", "^ctl"}));
    EXPECT_EQ(swish->attr.at("T").type, DT_FLOAT);
  }
  // Keras' x * sigmoid(beta * x) with beta * x simplified to Identity(x): the Identity goes too.
  GraphDef through_identity = graph(false);
  GraphBuilder identity;
  identity.Op("beta_x", "Identity", {"x"}, {{"T", kFloat}});
  through_identity.node.push_back(identity.graph().node[0]);
  for (NodeDef& n : through_identity.node)
    if (n.name == "sig") n.input[0] = "beta_x";
  ASSERT_EQ(FuseContractions(&through_identity, {}, AlwaysCpu), 1);
  EXPECT_EQ(FindNode(through_identity, "beta_x"), nullptr);
  EXPECT_EQ(FindNode(through_identity, "swish")->input, (std::vector<std::string>{"x", "^ctl"}));

  GraphDef read_twice = graph(false);
  GraphBuilder other;
  other.Op("other", "Neg", {"sig"}, {{"T", kFloat}});
  read_twice.node.push_back(other.graph().node[0]);
  EXPECT_EQ(FuseContractions(&read_twice, {}, AlwaysCpu), 0);
  GraphDef other_input = graph(false);
  for (NodeDef& n : other_input.node)
    if (n.name == "swish") n.input[0] = "z";
  EXPECT_EQ(FuseContractions(&other_input, {}, AlwaysCpu), 0);
  GraphDef refused = graph(true);
  EXPECT_EQ(FuseContractions(&refused, {}, [](const NodeDef&, const std::vector<const NodeDef*>&) {
              return false;
            }),
            0);
  EXPECT_EQ(FindNode(refused, "swish")->op, "Mul");
}

// A Dense layer on a rank-3 input as Keras writes it (Tensordot): MatMul -> Reshape -> BiasAdd
// -> activation. The Reshape moves below the BiasAdd and the activation, and the three fuse;
// the Reshape takes the activation's name and reads the fused node.
GraphBuilder DenseOnSequence(int64_t reshaped_columns, bool with_bias) {
  GraphBuilder b;
  b.Placeholder("x", DT_FLOAT);
  b.Op("ctl", "NoOp");
  b.Const("w", MakeTensor<float>(TensorShape({4, 3}), {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
  b.Const("b", MakeTensor<float>(TensorShape({3}), {1, 2, 3}));
  b.Const("shape", MakeTensor<int32_t>(TensorShape({3}), {2, -1, static_cast<int32_t>(reshaped_columns)}));
  b.Op("mm", "MatMul", {"x", "w"}, {{"T", kFloat}});
  b.Op("r", "Reshape", {"mm", "shape", "^ctl"},
       {{"T", kFloat}, {"Tshape", AttrValue::Type(DT_INT32)}});
  if (with_bias) b.Op("bias", "BiasAdd", {"r", "b"}, {{"T", kFloat}});
  b.Op("act", "Relu", {with_bias ? "bias" : "r"}, {{"T", kFloat}});
  b.Op("out", "Identity", {"act"}, {{"T", kFloat}});
  return b;
}

TEST(FuseContractions, DenseOnASequenceFusesThroughItsReshape) {
  GraphDef g = DenseOnSequence(3, true).graph();
  ASSERT_EQ(FuseContractions(&g, {}, AlwaysCpu), 1);
  const NodeDef* act = FindNode(g, "act");
  ASSERT_NE(act, nullptr);
  EXPECT_EQ(act->op, "Reshape");
  ASSERT_EQ(act->input.size(), 2u);
  EXPECT_EQ(act->input[1], "shape");
  const NodeDef* fused = FindNode(g, act->input[0]);
  ASSERT_NE(fused, nullptr);
  EXPECT_EQ(fused->op, "_FusedMatMul");
  EXPECT_EQ(fused->input, (std::vector<std::string>{"x", "w", "b", "^ctl"}));
  EXPECT_EQ(FusedOps(*fused), (std::vector<std::string>{"BiasAdd", "Relu"}));
  EXPECT_EQ(FindNode(g, "mm"), nullptr);
  EXPECT_EQ(FindNode(g, "r"), nullptr);
  EXPECT_EQ(FindNode(g, "bias"), nullptr);
  EXPECT_EQ(FindNode(g, "out")->input[0], "act");
  EXPECT_EQ(g.node.size(), 8u);  // x, ctl, w, b, shape, fused, act, out

  // A Reshape that changes the last dim: the bias would not add to the same values.
  GraphDef other_columns = DenseOnSequence(6, true).graph();
  EXPECT_EQ(FuseContractions(&other_columns, {}, AlwaysCpu), 0);
  EXPECT_EQ(FindNode(other_columns, "r")->op, "Reshape");
  EXPECT_EQ(FindNode(other_columns, "bias")->input[0], "r");
  // No bias: nothing would fuse, so nothing moves.
  GraphDef no_bias = DenseOnSequence(3, false).graph();
  EXPECT_EQ(FuseContractions(&no_bias, {}, AlwaysCpu), 0);
  EXPECT_EQ(FindNode(no_bias, "act")->op, "Relu");
  // The Reshape's output fetched: it stays where it is.
  GraphDef kept = DenseOnSequence(3, true).graph();
  EXPECT_EQ(FuseContractions(&kept, {"r"}, AlwaysCpu), 0);
  EXPECT_EQ(FindNode(kept, "bias")->input[0], "r");
}

// x [?, 4] -> MatMul by a Const [4, 3] (-> Reshape to [2, -1, 3]) -> BiasAdd "bias": a dense
// layer, through its Reshape or not, for the GELU patterns below.
void DenseLayer(GraphBuilder& b, bool through_reshape) {
  b.Placeholder("x", DT_FLOAT);
  b.Const("w", MakeTensor<float>(TensorShape({4, 3}), {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
  b.Const("b", MakeTensor<float>(TensorShape({3}), {1, 2, 3}));
  b.Const("shape", MakeTensor<int32_t>(TensorShape({3}), {2, -1, 3}));
  b.Op("mm", "MatMul", {"x", "w"}, {{"T", kFloat}});
  std::string in = "mm";
  if (through_reshape) {
    b.Op("r", "Reshape", {"mm", "shape"}, {{"T", kFloat}, {"Tshape", AttrValue::Type(DT_INT32)}});
    in = "r";
  }
  b.Op("bias", "BiasAdd", {in, "b"}, {{"T", kFloat}});
}

// GELU as tf.nn.gelu(x, approximate=False) writes it, after a dense layer (through its Reshape
// or not): it joins the _FusedMatMul as GeluExact, under the outer Mul's name.
GraphBuilder DenseGelu(bool through_reshape, float half, const std::string& extra_reader) {
  GraphBuilder b;
  b.Const("half", MakeTensor<float>(TensorShape({}), {half}));
  b.Const("scale", MakeTensor<float>(TensorShape({}), {0.70710677f}));
  DenseLayer(b, through_reshape);
  b.Op("gelu/mul", "Mul", {"half", "bias"}, {{"T", kFloat}});
  b.Op("gelu/neg", "Neg", {"bias"}, {{"T", kFloat}});
  b.Op("gelu/mul_1", "Mul", {"gelu/neg", "scale"}, {{"T", kFloat}});
  b.Op("gelu/erfc", "Erfc", {"gelu/mul_1"}, {{"T", kFloat}});
  b.Op("gelu", "Mul", {"gelu/mul", "gelu/erfc"}, {{"T", kFloat}});
  b.Op("out", "Identity", {"gelu"}, {{"T", kFloat}});
  if (!extra_reader.empty()) b.Op("other", "Identity", {extra_reader}, {{"T", kFloat}});
  return b;
}

TEST(FuseContractions, GeluJoinsTheDenseLayer) {
  for (bool through_reshape : {false, true}) {
    SCOPED_TRACE(through_reshape ? "through the Reshape" : "directly");
    GraphDef g = DenseGelu(through_reshape, 0.5f, "").graph();
    ASSERT_EQ(FuseContractions(&g, {}, AlwaysCpu), 2);
    for (const char* gone : {"gelu/mul", "gelu/neg", "gelu/mul_1", "gelu/erfc", "half", "scale"})
      EXPECT_EQ(FindNode(g, gone), nullptr) << gone;
    const NodeDef* gelu = FindNode(g, "gelu");
    ASSERT_NE(gelu, nullptr);
    const NodeDef* fused = gelu;
    if (through_reshape) {
      EXPECT_EQ(gelu->op, "Reshape");
      EXPECT_EQ(gelu->input[1], "shape");
      fused = FindNode(g, gelu->input[0]);
      ASSERT_NE(fused, nullptr);
    }
    EXPECT_EQ(fused->op, "_FusedMatMul");
    EXPECT_EQ(fused->input, (std::vector<std::string>{"x", "w", "b"}));
    EXPECT_EQ(FusedOps(*fused), (std::vector<std::string>{"BiasAdd", "GeluExact"}));
    EXPECT_EQ(g.node.size(), through_reshape ? 7u : 6u);  // the shape Const stays
  }
  // Not GELU's constant, or the product also read elsewhere: only MatMul + BiasAdd fuse.
  GraphDef other_half = DenseGelu(true, 0.25f, "").graph();
  EXPECT_EQ(FuseContractions(&other_half, {}, AlwaysCpu), 1);
  EXPECT_EQ(FindNode(other_half, "gelu/erfc")->op, "Erfc");
  GraphDef read_elsewhere = DenseGelu(true, 0.5f, "bias").graph();
  EXPECT_EQ(FuseContractions(&read_elsewhere, {}, AlwaysCpu), 1);
  EXPECT_EQ(FindNode(read_elsewhere, "gelu")->op, "Mul");
  GraphDef erfc_read_elsewhere = DenseGelu(false, 0.5f, "gelu/erfc").graph();
  EXPECT_EQ(FuseContractions(&erfc_read_elsewhere, {}, AlwaysCpu), 1);
  EXPECT_EQ(FindNode(erfc_read_elsewhere, "gelu")->op, "Mul");
}

// GELU as tf.nn.gelu(x, approximate=True) writes it, Mul(Mul(0.5, x), t) (form "keras"), or as
// BERT writes it, Mul(x, Mul(0.5, t)) (form "bert"), t = AddV2(1, Tanh(Mul(sqrt(2/pi),
// AddV2(x, Mul(0.044715, Pow(x, 3)))))), after a dense layer through its Reshape or not.
GraphBuilder DenseTanhGelu(bool through_reshape, bool bert, float cubic) {
  GraphBuilder b;
  for (const auto& [name, v] : std::vector<std::pair<std::string, float>>{
           {"half", 0.5f}, {"one", 1.0f}, {"three", 3.0f}, {"a", 0.7978845608028654f}, {"c", cubic}})
    b.Const(name, MakeTensor<float>(TensorShape({}), {v}));
  DenseLayer(b, through_reshape);
  b.Op("gelu/pow", "Pow", {"bias", "three"}, {{"T", kFloat}});
  b.Op("gelu/mul_1", "Mul", {"c", "gelu/pow"}, {{"T", kFloat}});
  b.Op("gelu/add", "AddV2", {"bias", "gelu/mul_1"}, {{"T", kFloat}});
  b.Op("gelu/mul_2", "Mul", {"gelu/add", "a"}, {{"T", kFloat}});
  b.Op("gelu/tanh", "Tanh", {"gelu/mul_2"}, {{"T", kFloat}});
  b.Op("gelu/add_1", bert ? "Add" : "AddV2", {"one", "gelu/tanh"}, {{"T", kFloat}});
  if (bert) {
    b.Op("gelu/mul", "Mul", {"gelu/add_1", "half"}, {{"T", kFloat}});
    b.Op("gelu", "Mul", {"bias", "gelu/mul"}, {{"T", kFloat}});
  } else {
    b.Op("gelu/mul", "Mul", {"half", "bias"}, {{"T", kFloat}});
    b.Op("gelu", "Mul", {"gelu/add_1", "gelu/mul"}, {{"T", kFloat}});
  }
  b.Op("out", "Identity", {"gelu"}, {{"T", kFloat}});
  return b;
}

TEST(FuseContractions, TanhGeluJoinsTheDenseLayer) {
  for (bool bert : {false, true}) {
    for (bool through_reshape : {false, true}) {
      SCOPED_TRACE(std::string(bert ? "bert " : "keras ") + (through_reshape ? "reshape" : ""));
      GraphDef g = DenseTanhGelu(through_reshape, bert, 0.044715f).graph();
      ASSERT_EQ(FuseContractions(&g, {}, AlwaysCpu), 2);
      for (const char* gone : {"gelu/pow", "gelu/mul_1", "gelu/add", "gelu/mul_2", "gelu/tanh",
                               "gelu/add_1", "gelu/mul", "half", "one", "three", "a", "c"})
        EXPECT_EQ(FindNode(g, gone), nullptr) << gone;
      const NodeDef* gelu = FindNode(g, "gelu");
      ASSERT_NE(gelu, nullptr);
      const NodeDef* fused = gelu;
      if (through_reshape) {
        EXPECT_EQ(gelu->op, "Reshape");
        fused = FindNode(g, gelu->input[0]);
        ASSERT_NE(fused, nullptr);
      }
      EXPECT_EQ(fused->op, "_FusedMatMul");
      EXPECT_EQ(fused->input, (std::vector<std::string>{"x", "w", "b"}));
      EXPECT_EQ(FusedOps(*fused), (std::vector<std::string>{"BiasAdd", "GeluApproximate"}));
      EXPECT_EQ(g.node.size(), through_reshape ? 7u : 6u);
    }
  }
  // Another cubic coefficient is not GELU: only MatMul + BiasAdd fuse.
  GraphDef other = DenseTanhGelu(true, false, 0.05f).graph();
  EXPECT_EQ(FuseContractions(&other, {}, AlwaysCpu), 1);
  EXPECT_EQ(FindNode(other, "gelu/tanh")->op, "Tanh");
  EXPECT_EQ(FindNode(other, "gelu")->op, "Mul");
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
