// Graph construction from GraphDefs, validation errors, topological order, the serial evaluator,
// and device names.
#include "conflux/graph.h"

#include "conflux/device.h"
#include "conflux/session.h"
#include "kernel_test_util.h"
#include "runtime/serial_evaluator.h"

namespace cfx {
namespace {

using test::NodeOf;

NodeDef Const(const std::string& name, Tensor t) {
  DataType d = t.dtype();
  return NodeOf(name, "Const", {},
                {{"value", AttrValue::TensorValue(std::move(t))}, {"dtype", AttrValue::Type(d)}});
}

GraphDef Affine() {
  // y = x * w + b, with a NoOp control dependency.
  GraphDef g;
  g.node.push_back(NodeOf("y", "AddV2", {"xw", "b"}, {{"T", AttrValue::Type(DT_FLOAT)}}));
  g.node.push_back(NodeOf("xw", "Mul", {"x", "w", "^init"}, {{"T", AttrValue::Type(DT_FLOAT)}}));
  g.node.push_back(NodeOf("x", "Placeholder", {}, {{"dtype", AttrValue::Type(DT_FLOAT)}}));
  g.node.push_back(Const("w", test::MakeVector<float>({2, 3})));
  g.node.push_back(Const("b", test::MakeVector<float>({1, 1})));
  g.node.push_back(NodeOf("init", "NoOp", {}));
  return g;
}

TEST(Graph, BuildsEdgesInAnyNodeOrderAndRoundTrips) {
  Runtime& rt = test::TestRuntime();
  GraphDef def = Affine();
  auto g = Graph::FromGraphDef(def, &rt.ops());
  ASSERT_TRUE(g.ok()) << g.status();
  Node* xw = (*g)->FindNode("xw");
  ASSERT_NE(xw, nullptr);
  EXPECT_EQ(xw->in_data_edges()[0]->src->name(), "x");
  EXPECT_EQ(xw->in_data_edges()[1]->src->name(), "w");
  ASSERT_EQ(xw->in_control_edges().size(), 1u);
  EXPECT_EQ(xw->in_control_edges()[0]->src->name(), "init");
  auto order = (*g)->TopologicalOrder();
  ASSERT_TRUE(order.ok());
  std::map<std::string, int> pos;
  for (size_t i = 0; i < order->size(); ++i) pos[(*order)[i]->name()] = static_cast<int>(i);
  EXPECT_LT(pos["init"], pos["xw"]);
  EXPECT_LT(pos["xw"], pos["y"]);
  EXPECT_EQ((*g)->ToGraphDef(), def);
}

TEST(Graph, ErrorsNameTheNode) {
  Runtime& rt = test::TestRuntime();
  auto expect = [&](GraphDef def, const std::string& part) {
    auto g = Graph::FromGraphDef(def, &rt.ops());
    ASSERT_FALSE(g.ok()) << part;
    EXPECT_NE(g.status().message().find(part), std::string::npos) << g.status();
  };
  GraphDef unknown_op = Affine();
  unknown_op.node[0].op = "Frobnicate";
  expect(unknown_op, "op Frobnicate is not registered");
  GraphDef missing_input = Affine();
  missing_input.node[0].input[1] = "nope";
  expect(missing_input, "node y: input 'nope' names node 'nope'");
  GraphDef bad_port = Affine();
  bad_port.node[0].input[1] = "b:3";
  expect(bad_port, "asks for output 3 of node b");
  GraphDef wrong_type = Affine();
  wrong_type.node[4] = Const("b", test::MakeVector<int32_t>({1, 1}));
  expect(wrong_type, "node y: input 1 ('b') is int32; expected float");
  GraphDef dup = Affine();
  dup.node.push_back(NodeOf("x", "NoOp", {}));
  expect(dup, "duplicate node name 'x'");
  // A list length attr is not trusted as a size (it was allocated before being checked).
  GraphDef huge_n = Affine();
  huge_n.node.push_back(NodeOf("p", "Pack", {"x", "x"},
                               {{"T", AttrValue::Type(DT_FLOAT)},
                                {"N", AttrValue::Int(int64_t{1} << 62)},
                                {"axis", AttrValue::Int(0)}}));
  expect(huge_n, "node p (op Pack): attr 'N' is 4611686018427387904, the length of argument "
                 "'values'; at most 1048576 is allowed");
  GraphDef huge_num = Affine();
  huge_num.node.push_back(NodeOf("u", "Unpack", {"x"},
                                 {{"T", AttrValue::Type(DT_FLOAT)},
                                  {"num", AttrValue::Int(int64_t{1} << 40)},
                                  {"axis", AttrValue::Int(0)}}));
  expect(huge_num, "attr 'num' is 1099511627776, the length of argument 'output'");
  GraphDef cycle;
  cycle.node.push_back(NodeOf("a", "Identity", {"b"}, {{"T", AttrValue::Type(DT_FLOAT)}}));
  cycle.node.push_back(NodeOf("b", "Identity", {"a"}, {{"T", AttrValue::Type(DT_FLOAT)}}));
  auto g = Graph::FromGraphDef(cycle, &rt.ops());
  ASSERT_TRUE(g.ok());
  auto order = (*g)->TopologicalOrder();
  ASSERT_FALSE(order.ok());
  EXPECT_NE(order.status().message().find("cycle"), std::string::npos);
}

// A Pack whose N is 2^62 sizes nothing from N: running such a graph fails with the error of
// importing it, and the process goes on.
TEST(Graph, PackWithAHugeNFailsWhenRunNotWhenChecked) {
  GraphDef g = Affine();
  g.node.push_back(NodeOf("p", "Pack", {"x", "x"},
                          {{"T", AttrValue::Type(DT_FLOAT)},
                           {"N", AttrValue::Int(int64_t{1} << 62)},
                           {"axis", AttrValue::Int(0)}}));
  Status s;
  auto session = Session::Create(&test::TestRuntime(), g);
  if (session.ok()) {
    std::vector<Tensor> out;
    s = (*session)->Run({{"x", test::MakeVector<float>({1, 2})}}, {"p"}, {}, &out);
  } else {
    s = session.status();
  }
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("node p (op Pack): attr 'N' is 4611686018427387904"),
            std::string::npos)
      << s;
}

// Shapes in a GraphDef (shape attrs, tensor shapes) whose known dims multiply past int64 are
// refused when the graph is read, naming the node and the attr.
TEST(Graph, ShapeAttrsWhoseElementCountOverflowsAreRefusedOnImport) {
  const std::string text = R"pb(
    node {
      name: "x"
      op: "Placeholder"
      attr {
        key: "dtype"
        value { type: DT_FLOAT }
      }
      attr {
        key: "shape"
        value {
          shape {
            dim { size: -1 }
            dim { size: 1099511627776 }
            dim { size: 1099511627776 }
          }
        }
      }
    }
  )pb";
  auto g = ParseGraphDef(text, GraphFormat::kText);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), Code::kInvalidArgument) << g.status();
  EXPECT_NE(g.status().message().find("node 'x' attr 'shape': shape [?,1099511627776,"
                                      "1099511627776] has more than 2^63-1 elements"),
            std::string::npos)
      << g.status();
}

TEST(Graph, AddNodeRejectsBadNodesWithoutChangingTheGraph) {
  Runtime& rt = test::TestRuntime();
  Graph g(&rt.ops());
  ASSERT_TRUE(g.AddNode(Const("c", test::MakeScalar<float>(1))).ok());
  auto bad = g.AddNode(NodeOf("i", "Identity", {"missing"}, {{"T", AttrValue::Type(DT_FLOAT)}}));
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(g.num_nodes(), 1);
  EXPECT_TRUE(g.nodes()[0]->out_edges().empty());
  ASSERT_TRUE(g.AddNode(NodeOf("i", "Identity", {"c"}, {{"T", AttrValue::Type(DT_FLOAT)}})).ok());
  EXPECT_EQ(g.nodes()[0]->out_edges().size(), 1u);
}

TEST(SerialEvaluator, RunsWhatTheFetchesNeed) {
  Runtime& rt = test::TestRuntime();
  auto g = Graph::FromGraphDef(Affine(), &rt.ops());
  ASSERT_TRUE(g.ok());
  Device* cpu = *rt.FindDevice("CPU:0");
  auto out = EvaluateSerially(rt, **g, cpu, {{"x", test::MakeVector<float>({10, 20})}}, {"y"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(test::Values<float>((*out)[0]), (std::vector<float>{21, 61}));
  // A feed may replace any edge: feeding xw makes x unnecessary.
  out = EvaluateSerially(rt, **g, cpu, {{"xw:0", test::MakeVector<float>({5, 5})}}, {"y:0"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(test::Values<float>((*out)[0]), (std::vector<float>{6, 6}));
  out = EvaluateSerially(rt, **g, cpu, {}, {"y"});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("node x is a Placeholder and must be fed"),
            std::string::npos);
  out = EvaluateSerially(rt, **g, cpu, {{"x", test::MakeVector<int32_t>({1, 2})}}, {"y"});
  EXPECT_FALSE(out.ok());
  out = EvaluateSerially(rt, **g, cpu, {}, {"w:1"});
  EXPECT_FALSE(out.ok());
}

TEST(DeviceName, ParsesFullPartialAndShortForms) {
  auto full = DeviceName::Parse("/job:worker/replica:0/task:1/device:GPU:2");
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(full->job, "worker");
  EXPECT_EQ(full->task, 1);
  EXPECT_EQ(full->type, "GPU");
  EXPECT_EQ(full->id, 2);
  EXPECT_EQ(full->ToString(), "/job:worker/replica:0/task:1/device:GPU:2");
  EXPECT_EQ(DeviceName::Parse("/cpu:0")->type, "CPU");
  EXPECT_EQ(DeviceName::Parse("CPU:1")->id, 1);
  auto any_gpu = DeviceName::Parse("/device:GPU:*");
  ASSERT_TRUE(any_gpu.ok());
  EXPECT_EQ(any_gpu->id, -1);
  EXPECT_TRUE(any_gpu->Matches(*full));
  EXPECT_TRUE(DeviceName::Parse("/job:worker/task:1")->Matches(*full));
  EXPECT_FALSE(DeviceName::Parse("/job:ps")->Matches(*full));
  EXPECT_FALSE(DeviceName::Parse("/task:x").ok());
  EXPECT_FALSE(DeviceName::Parse("/device:GPU:zero").ok());
}

}  // namespace
}  // namespace cfx
