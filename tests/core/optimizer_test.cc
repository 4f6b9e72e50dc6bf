// Graph optimizer: CSE and constant folding change node counts as expected, leave results
// identical to the unoptimized graph (both run by the serial evaluator), keep control
// dependencies, and leave kept and stateful nodes alone.
#include "passes/optimizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "conflux/graph.h"
#include "kernel_test_util.h"
#include "runtime/serial_evaluator.h"

namespace cfx {
namespace {

using test::FindNode;

using test::NodeOf;

using test::MakeTensor;
using test::TestRuntime;
using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

NodeDef F(const std::string& name, const std::string& op, std::vector<std::string> inputs) {
  return NodeOf(name, op, std::move(inputs), {{"T", AttrValue::Type(DT_FLOAT)}});
}

NodeDef ConstNode(const std::string& name, const Tensor& t) {
  return NodeOf(name, "Const", {},
                {{"dtype", AttrValue::Type(t.dtype())}, {"value", AttrValue::TensorValue(t)}});
}

NodeDef FloatConst(const std::string& name, std::vector<float> v) {
  return ConstNode(name, test::MakeVector<float>(v));
}

NodeDef PlaceholderNode(const std::string& name) {
  return NodeOf(name, "Placeholder", {}, {{"dtype", AttrValue::Type(DT_FLOAT)}});
}

GraphDef Def(std::vector<NodeDef> nodes) {
  GraphDef g;
  g.node = std::move(nodes);
  return g;
}

std::vector<Tensor> Eval(const GraphDef& def, const std::vector<std::string>& fetches,
                         const std::map<std::string, Tensor>& feeds = {}) {
  auto g = Graph::FromGraphDef(def, &TestRuntime().ops());
  EXPECT_OK(g.status());
  if (!g.ok()) return {};
  auto out = EvaluateSerially(TestRuntime(), **g, TestRuntime().FindDevice("CPU:0").value(), feeds,
                              fetches);
  EXPECT_OK(out.status());
  return out.ok() ? *out : std::vector<Tensor>{};
}

// Optimizes a copy of `def` and checks that the fetches evaluate to the same values.
GraphDef OptimizeAndCompare(const GraphDef& def, const GraphOptimizerOptions& options,
                            const std::set<std::string>& keep,
                            const std::vector<std::string>& fetches, GraphOptimizerStats* stats,
                            const std::map<std::string, Tensor>& feeds = {}) {
  GraphDef optimized = def;
  EXPECT_OK(OptimizeGraph(TestRuntime(), options, keep, &optimized, stats));
  std::vector<Tensor> want = Eval(def, fetches, feeds);
  std::vector<Tensor> got = Eval(optimized, fetches, feeds);
  EXPECT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size() && i < got.size(); ++i)
    test::ExpectTensorEqual(want[i], got[i]);
  return optimized;
}

GraphOptimizerOptions CseOnly() {
  GraphOptimizerOptions o;
  o.constant_folding = false;
  return o;
}

GraphOptimizerOptions FoldingOnly() {
  GraphOptimizerOptions o;
  o.cse = false;
  return o;
}

TEST(OptimizerCse, MergesIdenticalNodes) {
  GraphDef def = Def({PlaceholderNode("x"), F("a", "Square", {"x"}), F("b", "Square", {"x:0"}),
                      F("c", "AddV2", {"a", "b"})});
  GraphOptimizerStats stats;
  GraphDef out = OptimizeAndCompare(def, CseOnly(), {"x", "c"}, {"c:0"}, &stats,
                                    {{"x:0", test::MakeVector<float>({1, -2, 3})}});
  EXPECT_EQ(stats.nodes_before, 4);
  EXPECT_EQ(stats.nodes_after, 3);
  EXPECT_EQ(stats.cse_removed, 1);
  EXPECT_EQ(stats.folded, 0);
  EXPECT_EQ(FindNode(out, "b"), nullptr);
  EXPECT_THAT(FindNode(out, "c")->input, ElementsAre("a", "a"));
  // 2 * x^2, computed independently.
  std::vector<Tensor> r = Eval(out, {"c:0"}, {{"x:0", test::MakeVector<float>({1, -2, 3})}});
  ASSERT_EQ(r.size(), 1u);
  test::ExpectTensorEqual(test::MakeVector<float>({2, 8, 18}), r[0]);
}

TEST(OptimizerCse, CascadesThroughConsumersInOnePass) {
  GraphDef def = Def({PlaceholderNode("x"), F("a1", "Square", {"x"}), F("a2", "Square", {"x"}),
                      F("b1", "Neg", {"a1"}), F("b2", "Neg", {"a2"}), F("t1", "Tanh", {"b1"}),
                      F("t2", "Tanh", {"b2"}), F("out", "AddV2", {"t1", "t2"})});
  GraphOptimizerStats stats;
  GraphDef out = OptimizeAndCompare(def, CseOnly(), {"x", "out"}, {"out:0"}, &stats,
                                    {{"x:0", test::MakeVector<float>({0.5f, 2})}});
  EXPECT_EQ(stats.cse_removed, 3);
  EXPECT_EQ(stats.nodes_after, 5);
  EXPECT_THAT(FindNode(out, "out")->input, ElementsAre("t1", "t1"));
}

TEST(OptimizerCse, MergesEqualConstants) {
  GraphDef def = Def({FloatConst("c1", {1, 2}), FloatConst("c2", {1, 2}), FloatConst("c3", {1, 3}),
                      F("s", "AddV2", {"c1", "c2"}), F("t", "AddV2", {"s", "c3"})});
  GraphOptimizerStats stats;
  GraphDef out = OptimizeAndCompare(def, CseOnly(), {"t"}, {"t:0"}, &stats);
  EXPECT_EQ(stats.cse_removed, 1);
  EXPECT_EQ(FindNode(out, "c2"), nullptr);
  EXPECT_NE(FindNode(out, "c3"), nullptr);  // a different value
}

TEST(OptimizerCse, KeepsNodesThatDifferInAttrsDeviceOrControlInputs) {
  NodeDef on_cpu1 = F("d", "Square", {"x"});
  on_cpu1.device = "/device:CPU:1";
  GraphDef def = Def({
      PlaceholderNode("x"), NodeOf("n1", "NoOp", {}), NodeOf("n2", "NoOp", {}),
      F("a", "Square", {"x"}),
      on_cpu1,                                // another device
      F("b", "Square", {"x", "^n1"}),         // other control inputs
      F("c", "Square", {"x", "^n1", "^n2"}),  // same set as e, other order
      F("e", "Square", {"x", "^n2", "^n1"}),  //
      NodeOf("i", "Cast", {"x"},
             {{"SrcT", AttrValue::Type(DT_FLOAT)}, {"DstT", AttrValue::Type(DT_INT32)}}),
      NodeOf("j", "Cast", {"x"},
             {{"SrcT", AttrValue::Type(DT_FLOAT)},
              {"DstT", AttrValue::Type(DT_DOUBLE)}}),  // other attrs
  });
  // n1 and n2 are kept apart (two identical NoOps would merge, and b with them).
  std::set<std::string> keep = {"x", "n1", "n2"};
  GraphOptimizerStats stats;
  GraphDef out = def;
  ASSERT_OK(OptimizeGraph(TestRuntime(), CseOnly(), keep, &out, &stats));
  // Only e merges (into c); e had no consumers, so nothing else changes.
  EXPECT_EQ(stats.cse_removed, 1);
  EXPECT_EQ(FindNode(out, "e"), nullptr);
  for (const char* name : {"x", "n1", "n2", "a", "d", "b", "c", "i", "j"})
    EXPECT_NE(FindNode(out, name), nullptr) << name;
}

TEST(OptimizerCse, RewiresControlInputsToTheSurvivor) {
  GraphDef def = Def({PlaceholderNode("x"), F("a", "Square", {"x"}), F("b", "Square", {"x"}),
                      F("y", "Neg", {"x", "^b", "^a"})});
  GraphOptimizerStats stats;
  GraphDef out = def;
  ASSERT_OK(OptimizeGraph(TestRuntime(), CseOnly(), {"x", "y"}, &out, &stats));
  EXPECT_EQ(FindNode(out, "b"), nullptr);
  EXPECT_THAT(FindNode(out, "y")->input, ElementsAre("x", "^a"));
}

TEST(OptimizerCse, LeavesKeptNodesAlone) {
  GraphDef def = Def({PlaceholderNode("x"), F("a", "Square", {"x"}), F("b", "Square", {"x"}),
                      F("c", "AddV2", {"a", "b"})});
  GraphOptimizerStats stats;
  GraphDef out = def;
  // b is fetched (or fed): it must stay a node of its own.
  ASSERT_OK(OptimizeGraph(TestRuntime(), CseOnly(), {"x", "b", "c"}, &out, &stats));
  EXPECT_EQ(stats.cse_removed, 0);
  EXPECT_EQ(out, def);
}

// x * 1 and 1 * x with a scalar Const one (Keras' swish writes beta * x with beta = 1) become
// Identity(x) under the Mul's name, with every control input of the Mul and of the Const; the
// values (NaN, infinities, signed zeros) are the same bits. A one that broadcasts ([1] against a
// scalar x gives [1]), another value, a dtype the rule does not cover (int8) and a fetched Const
// stay Muls.
TEST(OptimizerFolding, MultiplyByScalarOneBecomesIdentity) {
  NodeDef one = ConstNode("one", Tensor::Scalar<float>(DT_FLOAT, 1.0f));
  one.input = {"^gate"};
  NodeDef gate = NodeOf("gate", "NoOp", {});
  GraphDef def = Def({PlaceholderNode("x"), gate, one, NodeOf("later", "NoOp", {}),
                      F("left", "Mul", {"one", "x", "^later"}), F("right", "Mul", {"x", "one"}),
                      F("out", "AddV2", {"left", "right"})});
  GraphOptimizerStats stats;
  const float inf = std::numeric_limits<float>::infinity();
  std::map<std::string, Tensor> feeds = {
      {"x:0", test::MakeVector<float>({-0.0f, inf, -inf, std::nanf(""), 3.5f})}};
  GraphOptimizerOptions keep_identities = FoldingOnly();
  keep_identities.forward_identities = false;  // to see them (OptimizerIdentities below)
  GraphDef out = OptimizeAndCompare(def, keep_identities, {"x", "out"},
                                    {"left:0", "right:0", "out:0"}, &stats, feeds);
  EXPECT_EQ(stats.simplified, 2);
  EXPECT_EQ(FindNode(out, "one"), nullptr) << "no reader is left";
  const NodeDef* left = FindNode(out, "left");
  ASSERT_NE(left, nullptr);
  EXPECT_EQ(left->op, "Identity");
  EXPECT_THAT(left->input, ElementsAre("x", "^later", "^gate"));
  EXPECT_EQ(FindNode(out, "right")->op, "Identity");
  EXPECT_THAT(FindNode(out, "right")->input, ElementsAre("x", "^gate"));

  for (const Tensor& other : {test::MakeVector<float>({1.0f}), Tensor::Scalar<float>(DT_FLOAT, 2.0f),
                              Tensor::Scalar<int8_t>(DT_INT8, 1)}) {
    SCOPED_TRACE(other.DebugString());
    const AttrValue dtype = AttrValue::Type(other.dtype());
    GraphDef kept =
        Def({NodeOf("x", "Placeholder", {}, {{"dtype", dtype}}), ConstNode("one", other),
             NodeOf("m", "Mul", {"x", "one"}, {{"T", dtype}})});
    GraphDef optimized = kept;
    ASSERT_OK(OptimizeGraph(TestRuntime(), FoldingOnly(), {"x", "m"}, &optimized, &stats));
    EXPECT_EQ(stats.simplified, 0);
    EXPECT_EQ(FindNode(optimized, "m")->op, "Mul");
  }
  GraphDef fed = Def({PlaceholderNode("x"), ConstNode("one", Tensor::Scalar<float>(DT_FLOAT, 1.0f)),
                      F("m", "Mul", {"x", "one"})});
  ASSERT_OK(OptimizeGraph(TestRuntime(), FoldingOnly(), {"x", "m", "one"}, &fed, &stats));
  EXPECT_EQ(FindNode(fed, "m")->op, "Mul") << "a kept Const may be fed another value";
}

// Identities that nothing orders on go, their readers reading their inputs and waiting for
// their control inputs; kept ones, those others wait for, those asking for another device and
// those with control inputs before a control-flow op stay.
TEST(OptimizerIdentities, ForwardsIdentitiesNothingOrdersOn) {
  GraphDef def =
      Def({PlaceholderNode("x"), NodeOf("c", "NoOp", {}), F("a", "Identity", {"x"}),
           F("b", "Identity", {"a", "^c"}), F("out", "Neg", {"b"}), F("kept", "Identity", {"x"}),
           F("waited", "Identity", {"x"}), NodeOf("after", "NoOp", {"^waited"}),
           F("elsewhere", "Identity", {"x"}), F("sum", "AddN", {"waited", "elsewhere"})});
  def.node.back().attr["N"] = AttrValue::Int(2);
  def.node[8].device = "/device:CPU:1";
  GraphOptimizerStats stats;
  GraphDef out = OptimizeAndCompare(def, CseOnly(), {"x", "out", "kept", "sum", "after"},
                                    {"out:0", "kept:0", "sum:0"}, &stats,
                                    {{"x:0", test::MakeVector<float>({1, -2})}});
  EXPECT_EQ(stats.identities_forwarded, 2);
  EXPECT_EQ(FindNode(out, "a"), nullptr);
  EXPECT_EQ(FindNode(out, "b"), nullptr);
  EXPECT_THAT(FindNode(out, "out")->input, ElementsAre("x", "^c"));
  for (const char* stays : {"kept", "waited", "elsewhere"})
    EXPECT_NE(FindNode(out, stays), nullptr);

  // An Identity with a control input before a Merge keeps it (a Merge's inputs are not all
  // waited for); without one it goes there too.
  GraphDef merge = Def({PlaceholderNode("x"), PlaceholderNode("y"), NodeOf("c", "NoOp", {}),
                        F("guarded", "Identity", {"x", "^c"}), F("plain", "Identity", {"y"}),
                        NodeOf("m", "Merge", {"guarded", "plain"},
                               {{"T", AttrValue::Type(DT_FLOAT)}, {"N", AttrValue::Int(2)}})});
  GraphDef merged = merge;
  ASSERT_OK(OptimizeGraph(TestRuntime(), CseOnly(), {"x", "y", "m"}, &merged, &stats));
  EXPECT_EQ(stats.identities_forwarded, 1);
  EXPECT_NE(FindNode(merged, "guarded"), nullptr);
  EXPECT_THAT(FindNode(merged, "m")->input, ElementsAre("guarded", "y"));

  // An Identity of a variable reads it when it runs, after its control inputs: it stays.
  GraphDef variable =
      Def({NodeOf("v", "VariableV2", {},
                  {{"dtype", AttrValue::Type(DT_FLOAT)},
                   {"shape", AttrValue::Shape(PartialTensorShape({}))}}),
           NodeOf("c", "NoOp", {}), F("read", "Identity", {"v", "^c"}), F("out", "Neg", {"read"})});
  ASSERT_OK(OptimizeGraph(TestRuntime(), CseOnly(), {"out"}, &variable, &stats));
  EXPECT_EQ(stats.identities_forwarded, 0);
  EXPECT_THAT(FindNode(variable, "out")->input, ElementsAre("read"));
}

TEST(OptimizerFolding, FoldsConstantSubgraphs) {
  GraphDef def =
      Def({FloatConst("x", {1, 2, 3}), FloatConst("y", {4, 5, 6}), F("s", "AddV2", {"x", "y"}),
           F("m", "Mul", {"s", "x"}), PlaceholderNode("p"), F("out", "AddV2", {"m", "p"})});
  GraphOptimizerStats stats;
  std::map<std::string, Tensor> feeds = {{"p:0", test::MakeVector<float>({0.5f, 0.25f, 0})}};
  GraphDef out = OptimizeAndCompare(def, FoldingOnly(), {"p", "out"}, {"out:0"}, &stats, feeds);
  EXPECT_EQ(stats.folded, 2);
  EXPECT_EQ(stats.nodes_before, 6);
  EXPECT_EQ(stats.nodes_after, 3);  // m (now a Const), p, out
  const NodeDef* m = FindNode(out, "m");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->op, "Const");
  EXPECT_TRUE(m->input.empty());
  // (x + y) * x, computed here.
  test::ExpectTensorEqual(test::MakeVector<float>({5, 14, 27}), m->attr.at("value").tensor);
  EXPECT_EQ(FindNode(out, "x"), nullptr);
  EXPECT_EQ(FindNode(out, "s"), nullptr);
  // The result serializes like any Const.
  auto round_trip =
      ParseGraphDef(SerializeGraphDef(out, GraphFormat::kBinary), GraphFormat::kBinary);
  ASSERT_OK(round_trip.status());
  test::ExpectTensorEqual(m->attr.at("value").tensor,
                          FindNode(*round_trip, "m")->attr.at("value").tensor);
}

// A node that asks for a device is folded on that device: its output buffer comes from that
// device's allocator, not CPU:0's.
TEST(OptimizerFolding, FoldsOnTheRequestedDevice) {
  Runtime& rt = test::TestRuntimeWith(1, 2);
  Device* cpu1 = rt.FindDevice("CPU:1").value();
  NodeDef big = F("s", "AddV2", {"x", "y"});
  big.device = "/device:CPU:1";
  std::vector<float> values(4096, 1.0f);
  GraphDef def = Def({FloatConst("x", values), FloatConst("y", values), big});
  const int64_t before = cpu1->allocator()->stats().num_allocs;
  GraphOptimizerStats stats;
  ASSERT_OK(OptimizeGraph(rt, FoldingOnly(), {}, &def, &stats));
  EXPECT_EQ(stats.folded, 1);
  EXPECT_GT(cpu1->allocator()->stats().num_allocs, before);
  EXPECT_EQ(FindNode(def, "s")->op, "Const");
  EXPECT_EQ(FindNode(def, "s")->device, "/device:CPU:1");
}

TEST(OptimizerFolding, CarriesControlDependencies) {
  GraphDef def = Def({NodeOf("n1", "NoOp", {}), NodeOf("n2", "NoOp", {}),
                      ConstNode("c", MakeTensor<float>(TensorShape({2}), {1, 2})),
                      [] {
                        NodeDef d = FloatConst("d", {3, 4});
                        d.input = {"^n2"};
                        return d;
                      }(),
                      F("s", "AddV2", {"c", "d", "^n1"}), F("out", "Neg", {"s"})});
  GraphOptimizerStats stats;
  GraphDef out = OptimizeAndCompare(def, FoldingOnly(), {"n1", "n2", "out"}, {"out:0"}, &stats);
  const NodeDef* s = FindNode(out, "s");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->op, "Const");
  EXPECT_THAT(s->input, UnorderedElementsAre("^n1", "^n2"));
  const NodeDef* o = FindNode(out, "out");  // kept: still a Neg, reading the folded Const
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->op, "Neg");
  EXPECT_EQ(stats.folded, 1);
}

TEST(OptimizerFolding, FoldsOnlyTheUsedOutputsOfAMultiOutputNode) {
  GraphDef def = Def(
      {ConstNode("c", MakeTensor<float>(TensorShape({3, 2}), {1, 2, 3, 4, 5, 6})),
       NodeOf("u", "Unpack", {"c"}, {{"T", AttrValue::Type(DT_FLOAT)}, {"num", AttrValue::Int(3)}}),
       PlaceholderNode("p"), F("a", "AddV2", {"u", "p"}), F("b", "AddV2", {"u:2", "p"})});
  GraphOptimizerStats stats;
  std::map<std::string, Tensor> feeds = {{"p:0", test::MakeVector<float>({10, 20})}};
  GraphDef out =
      OptimizeAndCompare(def, FoldingOnly(), {"p", "a", "b"}, {"a:0", "b:0"}, &stats, feeds);
  EXPECT_EQ(stats.folded, 1);
  ASSERT_NE(FindNode(out, "u/_folded_0"), nullptr);
  ASSERT_NE(FindNode(out, "u/_folded_2"), nullptr);
  EXPECT_EQ(FindNode(out, "u/_folded_1"), nullptr);
  EXPECT_EQ(FindNode(out, "u"), nullptr);
  EXPECT_EQ(FindNode(out, "c"), nullptr);
  EXPECT_THAT(FindNode(out, "b")->input, ElementsAre("u/_folded_2", "p"));
  test::ExpectTensorEqual(test::MakeVector<float>({5, 6}),
                          FindNode(out, "u/_folded_2")->attr.at("value").tensor);
}

// A folded output equal to a Const already in the graph is merged into it by CSE: its consumers
// must read that Const, not the folded one that no longer exists.
TEST(OptimizerFolding, FoldedOutputMergedByCseIsReadFromTheSurvivor) {
  GraphDef def = Def(
      {ConstNode("c", MakeTensor<float>(TensorShape({3, 2}), {1, 2, 3, 4, 5, 6})),
       FloatConst("same", {3, 4}),
       NodeOf("u", "Unpack", {"c"}, {{"T", AttrValue::Type(DT_FLOAT)}, {"num", AttrValue::Int(3)}}),
       PlaceholderNode("p"), F("a", "AddV2", {"u:1", "p"}), F("b", "AddV2", {"same", "p"})});
  GraphOptimizerStats stats;
  std::map<std::string, Tensor> feeds = {{"p:0", test::MakeVector<float>({10, 20})}};
  GraphDef out = OptimizeAndCompare(def, GraphOptimizerOptions(), {"p", "a", "b"}, {"a:0", "b:0"},
                                    &stats, feeds);
  EXPECT_EQ(stats.folded, 1);
  EXPECT_EQ(FindNode(out, "u/_folded_1"), nullptr);
  EXPECT_THAT(FindNode(out, "a")->input, ElementsAre("same", "p"));
}

TEST(OptimizerFolding, LeavesKeptAndFedNodesAlone) {
  GraphDef def = Def({FloatConst("c", {1, 2}), F("s", "Square", {"c"}), F("t", "Neg", {"c"}),
                      F("out", "AddV2", {"s", "t"})});
  GraphOptimizerStats stats;
  // s is fetched: it is not replaced. Nothing else folds: c is kept (it may be fed).
  GraphDef out = def;
  ASSERT_OK(OptimizeGraph(TestRuntime(), FoldingOnly(), {"c", "s", "out"}, &out, &stats));
  EXPECT_EQ(stats.folded, 0);
  EXPECT_EQ(out, def);
  // Feeding c still changes the result.
  std::vector<Tensor> r = Eval(out, {"out:0"}, {{"c:0", test::MakeVector<float>({3, 4})}});
  ASSERT_EQ(r.size(), 1u);
  test::ExpectTensorEqual(test::MakeVector<float>({6, 12}), r[0]);
}

TEST(OptimizerFolding, SkipsLargeOutputsAndFailingNodes) {
  GraphDef def =
      Def({ConstNode("dims", test::MakeVector<int32_t>({1000})),
           ConstNode("v", MakeTensor<float>(TensorShape(), {1})),
           NodeOf("fill", "Fill", {"dims", "v"},
                  {{"T", AttrValue::Type(DT_FLOAT)}, {"index_type", AttrValue::Type(DT_INT32)}}),
           F("big", "Neg", {"fill"}),
           // Reshaping 2 elements to 3 fails when it runs.
           FloatConst("two", {1, 2}), ConstNode("shape", test::MakeVector<int32_t>({3})),
           NodeOf("bad", "Reshape", {"two", "shape"},
                  {{"T", AttrValue::Type(DT_FLOAT)}, {"Tshape", AttrValue::Type(DT_INT32)}}),
           F("small", "Neg", {"v"})});
  GraphOptimizerOptions options = FoldingOnly();
  options.max_constant_bytes = 100;  // the Fill makes 4000 bytes
  GraphOptimizerStats stats;
  GraphDef out = def;
  ASSERT_OK(OptimizeGraph(TestRuntime(), options, {"big", "bad", "small"}, &out, &stats));
  EXPECT_EQ(FindNode(out, "fill")->op, "Fill");
  EXPECT_EQ(FindNode(out, "bad")->op, "Reshape");
  EXPECT_EQ(FindNode(out, "small")->op, "Neg");  // kept: fetched
  EXPECT_EQ(stats.folded, 0);
}

TEST(OptimizerFolding, DoesNotRemoveNodesThatWereAlreadyUnused) {
  GraphDef def = Def({PlaceholderNode("x"), F("unused", "Square", {"x"}), F("y", "Neg", {"x"})});
  GraphOptimizerStats stats;
  GraphDef out = def;
  ASSERT_OK(OptimizeGraph(TestRuntime(), GraphOptimizerOptions(), {"x", "y"}, &out, &stats));
  EXPECT_EQ(out, def);
}

TEST(Optimizer, LeavesStatefulOpsAlone) {
  // A stateful op with a constant input, twice: neither folded nor merged.
  static const bool registered = [] {
    auto b = OpDefBuilder("TestOptimizerStateful")
                 .Input("x: float")
                 .Output("y: float")
                 .SetIsStateful()
                 .Build();
    EXPECT_OK(b.status());
    Status s = TestRuntime().ops().Register(*b);
    EXPECT_TRUE(s.ok() || s.code() == Code::kAlreadyExists) << s;
    return true;
  }();
  ASSERT_TRUE(registered);
  GraphDef def =
      Def({FloatConst("c", {1}), NodeOf("s1", "TestOptimizerStateful", {"c"}),
           NodeOf("s2", "TestOptimizerStateful", {"c"}), F("out", "AddV2", {"s1", "s2"})});
  GraphOptimizerStats stats;
  GraphDef out = def;
  ASSERT_OK(OptimizeGraph(TestRuntime(), GraphOptimizerOptions(), {"out"}, &out, &stats));
  EXPECT_EQ(stats.cse_removed, 0);
  EXPECT_EQ(stats.folded, 0);
  EXPECT_EQ(out, def);
}

TEST(Optimizer, CseAndFoldingTogether) {
  // Two copies of a constant expression fold to equal Consts, which CSE then merges.
  GraphDef def = Def({FloatConst("c", {1, 2}), F("a", "Square", {"c"}), F("b", "Square", {"c"}),
                      F("e1", "Exp", {"a"}), F("e2", "Exp", {"b"}), PlaceholderNode("p"),
                      F("out", "AddV2", {"e1", "p"}), F("out2", "AddV2", {"e2", "p"})});
  GraphOptimizerStats stats;
  std::map<std::string, Tensor> feeds = {{"p:0", test::MakeVector<float>({1, 1})}};
  GraphDef out = OptimizeAndCompare(def, GraphOptimizerOptions(), {"p", "out", "out2"},
                                    {"out:0", "out2:0"}, &stats, feeds);
  EXPECT_EQ(stats.nodes_before, 8);
  // c, a, b, e2 gone; e1 is a Const; out and out2 differ only by name: both kept.
  EXPECT_EQ(stats.nodes_after, 4);
  EXPECT_EQ(FindNode(out, "e1")->op, "Const");
  EXPECT_THAT(FindNode(out, "out2")->input, ElementsAre("e1", "p"));
}

TEST(Optimizer, RandomGraphsKeepTheirResults) {
  // Random DAGs over two Consts and a fed Placeholder, with repeated subexpressions: whatever
  // the passes do, the fetched values stay bitwise the same.
  int merged = 0, folded = 0;
  for (int seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    std::vector<NodeDef> nodes = {FloatConst("c0", {0.5f, -1, 2}), FloatConst("c1", {3, 0.25f, -2}),
                                  PlaceholderNode("p")};
    const char* unary[] = {"Neg", "Square", "Tanh"};
    const char* binary[] = {"AddV2", "Mul", "Maximum"};
    for (int i = 0; i < 25; ++i) {
      std::string name = "n" + std::to_string(i);
      if (i > 0 && rng() % 4 == 0) {  // a duplicate of an earlier node
        NodeDef copy = nodes[3 + rng() % i];
        copy.name = name;
        nodes.push_back(copy);
        continue;
      }
      auto pick = [&] { return nodes[rng() % nodes.size()].name; };
      if (rng() % 2)
        nodes.push_back(F(name, unary[rng() % 3], {pick()}));
      else
        nodes.push_back(F(name, binary[rng() % 3], {pick(), pick()}));
    }
    GraphDef def = Def(nodes);
    std::vector<std::string> fetches = {"n22:0", "n23:0", "n24:0"};
    GraphOptimizerStats stats;
    SCOPED_TRACE("seed " + std::to_string(seed));
    OptimizeAndCompare(def, GraphOptimizerOptions(), {"p", "n22", "n23", "n24"}, fetches, &stats,
                       {{"p:0", test::MakeVector<float>({1.5f, -0.5f, 0})}});
    EXPECT_LE(stats.nodes_after, stats.nodes_before);
    merged += stats.cse_removed;
    folded += stats.folded;
  }
  // Both passes had work to do.
  EXPECT_GT(merged, 10);
  EXPECT_GT(folded, 10);
}

TEST(Optimizer, BadGraphIsAnErrorAndLeavesItUnchanged) {
  GraphDef def = Def({F("a", "Square", {"missing"})});
  GraphDef out = def;
  Status s = OptimizeGraph(TestRuntime(), GraphOptimizerOptions(), {}, &out, nullptr);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_EQ(out, def);
}

}  // namespace
}  // namespace cfx
