// Placement: device requests (full and partial), colocation (`_class`, resource edges), named
// errors, the greedy cost-based choice (spreading heavy branches, keeping chains together,
// reacting to measured stats) and determinism. Runs on the CPU plugin with two CPU devices.
#include "passes/placer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "conflux/config.h"
#include "conflux/runtime.h"
#include "kernel_test_util.h"
#include "passes/cost_model.h"

namespace cfx {
namespace {

using test::NodeOf;

using ::testing::ContainsRegex;
using ::testing::HasSubstr;

// Two CPU devices (config/examples/two-cpus.yaml), plus test ops that the standard set lacks: a
// resource producer and its consumer (CPU kernels registered without code: the placer only asks
// whether they exist) and an op with no kernel anywhere.
Runtime& TwoCpuRuntime() {
  static Runtime* runtime = [] {
    auto config =
        Config::FromFile(std::string(CONFLUX_SOURCE_DIR) + "/config/examples/two-cpus.yaml");
    if (!config.ok()) {
      ADD_FAILURE() << config.status();
      std::abort();
    }
    config->plugin_paths.insert(config->plugin_paths.begin(), test::BuildPluginDir());
    auto rt = Runtime::Create(*config);
    if (!rt.ok()) {
      ADD_FAILURE() << rt.status();
      std::abort();
    }
    Runtime* r = std::move(rt).value().release();
    auto reg = [&](const OpDefBuilder& b) {
      auto built = b.Build();
      EXPECT_OK(built.status());
      EXPECT_OK(r->ops().Register(*built));
    };
    reg(OpDefBuilder("TestResourceHandle").Output("resource: resource").SetIsStateful());
    reg(OpDefBuilder("TestResourceRead").Input("resource: resource").Output("value: float"));
    reg(OpDefBuilder("TestNoKernel").Input("x: T").Output("y: T").Attr("T: type"));
    for (const char* op : {"TestResourceHandle", "TestResourceRead"}) {
      KernelDef k;
      k.op = op;
      k.device_type = "CPU";
      k.registered_by = "placer_test";
      EXPECT_OK(r->kernels().Register(k));
    }
    return r;
  }();
  return *runtime;
}

std::vector<Device*> Devices() {
  std::vector<Device*> d;
  for (const auto& dev : TwoCpuRuntime().devices()) d.push_back(dev.get());
  return d;
}

Device* Cpu(int i) { return TwoCpuRuntime().FindDevice("CPU:" + std::to_string(i)).value(); }

NodeDef Unary(const std::string& name, const std::string& op, const std::string& input,
              const std::string& device = "") {
  return NodeOf(name, op, {input}, {{"T", AttrValue::Type(DT_FLOAT)}}, device);
}

NodeDef ConstOf(const std::string& name, const TensorShape& shape, const std::string& device = "") {
  Tensor t(DT_FLOAT, shape);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = 1.0f;
  return NodeOf(name, "Const", {},
                {{"dtype", AttrValue::Type(DT_FLOAT)}, {"value", AttrValue::TensorValue(t)}},
                device);
}

NodeDef MatMulOf(const std::string& name, const std::string& a, const std::string& b) {
  return NodeOf(name, "MatMul", {a, b}, {{"T", AttrValue::Type(DT_FLOAT)}});
}

std::unique_ptr<Graph> Build(std::vector<NodeDef> nodes) {
  GraphDef def;
  def.node = std::move(nodes);
  auto g = Graph::FromGraphDef(def, &TwoCpuRuntime().ops());
  EXPECT_OK(g.status());
  return g.ok() ? std::move(g).value() : nullptr;
}

StatusOr<PlacementResult> Place(const Graph& g, const CostModel& costs) {
  return PlaceGraph(g, Devices(), TwoCpuRuntime().kernels(), costs);
}

Device* DeviceOf(const Graph& g, const PlacementResult& r, const std::string& node) {
  return r.device_of.at(g.FindNode(node)->id());
}

TEST(Placer, HonoursFullDeviceRequests) {
  auto g = Build({ConstOf("x", TensorShape({4})), Unary("a", "Square", "x", Cpu(1)->full_name()),
                  Unary("b", "Neg", "a", Cpu(0)->full_name()),
                  Unary("c", "Neg", "b", Cpu(1)->full_name())});
  ASSERT_NE(g, nullptr);
  CostModel costs;
  auto r = Place(*g, costs);
  ASSERT_OK(r.status());
  EXPECT_EQ(DeviceOf(*g, *r, "a"), Cpu(1));
  EXPECT_EQ(DeviceOf(*g, *r, "b"), Cpu(0));
  EXPECT_EQ(DeviceOf(*g, *r, "c"), Cpu(1));
}

TEST(Placer, HonoursPartialDeviceRequests) {
  // Without requests this chain would stay on CPU:0 (see ChainStaysOnOneDevice).
  auto g = Build({ConstOf("x", TensorShape({4})), Unary("a", "Square", "x", "/device:CPU:1"),
                  Unary("b", "Neg", "a", "/cpu:0"), Unary("c", "Neg", "b", "CPU:1"),
                  Unary("d", "Neg", "c", "/job:localhost/device:CPU:0"),
                  Unary("e", "Neg", "d", "/device:CPU:*")});
  ASSERT_NE(g, nullptr);
  CostModel costs;
  auto r = Place(*g, costs);
  ASSERT_OK(r.status());
  EXPECT_EQ(DeviceOf(*g, *r, "a"), Cpu(1));
  EXPECT_EQ(DeviceOf(*g, *r, "b"), Cpu(0));
  EXPECT_EQ(DeviceOf(*g, *r, "c"), Cpu(1));
  EXPECT_EQ(DeviceOf(*g, *r, "d"), Cpu(0));
  // "any CPU": the cheapest is where its input already is.
  EXPECT_EQ(DeviceOf(*g, *r, "e"), Cpu(0));
}

TEST(Placer, BadDeviceRequestIsAnError) {
  auto g = Build({ConstOf("x", TensorShape({4}), "/device:CPU:zero")});
  ASSERT_NE(g, nullptr);
  CostModel costs;
  auto r = Place(*g, costs);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("node 'x'"));
}

TEST(Placer, ColocatesThroughClassAttr) {
  NodeDef b = Unary("b", "Neg", "x");
  b.attr["_class"] = AttrValue::StringList({"loc:@a"});
  auto g = Build({ConstOf("x", TensorShape({4}), "/device:CPU:0"),
                  Unary("a", "Square", "x", "/device:CPU:1"), b,
                  // A constraint naming a node that is not in the graph binds nothing.
                  [] {
                    NodeDef c = Unary("c", "Neg", "b");
                    c.attr["_class"] = AttrValue::StringList({"loc:@pruned_away"});
                    return c;
                  }()});
  ASSERT_NE(g, nullptr);
  CostModel costs;
  auto r = Place(*g, costs);
  ASSERT_OK(r.status());
  EXPECT_EQ(DeviceOf(*g, *r, "a"), Cpu(1));
  // b reads x on CPU:0, so alone it would stay there; its constraint takes it to a.
  EXPECT_EQ(DeviceOf(*g, *r, "b"), Cpu(1));
}

TEST(Placer, ClassConstraintCarriesAnotherNodesRequest) {
  NodeDef b = Unary("b", "Neg", "a");
  b.attr["_class"] = AttrValue::StringList({"loc:@x"});
  auto g = Build({ConstOf("x", TensorShape({4}), "/device:CPU:1"), Unary("a", "Square", "x"), b});
  ASSERT_NE(g, nullptr);
  CostModel costs;
  auto r = Place(*g, costs);
  ASSERT_OK(r.status());
  EXPECT_EQ(DeviceOf(*g, *r, "b"), Cpu(1));
}

TEST(Placer, ColocatesResourceConsumersWithTheProducer) {
  auto g = Build({NodeOf("handle", "TestResourceHandle", {}, {}, "/device:CPU:1"),
                  ConstOf("x", TensorShape({4}), "/device:CPU:0"), Unary("sq", "Square", "x"),
                  NodeOf("read", "TestResourceRead", {"handle", "^sq"})});
  ASSERT_NE(g, nullptr);
  CostModel costs;
  auto r = Place(*g, costs);
  ASSERT_OK(r.status());
  EXPECT_EQ(DeviceOf(*g, *r, "handle"), Cpu(1));
  EXPECT_EQ(DeviceOf(*g, *r, "read"), Cpu(1));
}

TEST(Placer, ResourceConsumerRequestMovesTheProducer) {
  auto g = Build({NodeOf("handle", "TestResourceHandle", {}),
                  NodeOf("read", "TestResourceRead", {"handle"}, {}, "/device:CPU:1")});
  ASSERT_NE(g, nullptr);
  CostModel costs;
  auto r = Place(*g, costs);
  ASSERT_OK(r.status());
  EXPECT_EQ(DeviceOf(*g, *r, "handle"), Cpu(1));
}

TEST(Placer, ConflictingColocationIsANamedError) {
  NodeDef b = Unary("b", "Neg", "x", "/device:CPU:1");
  b.attr["_class"] = AttrValue::StringList({"loc:@a"});
  auto g = Build({ConstOf("x", TensorShape({4})), Unary("a", "Square", "x", "/device:CPU:0"), b});
  ASSERT_NE(g, nullptr);
  CostModel costs;
  auto r = Place(*g, costs);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  std::string m = r.status().message();
  EXPECT_THAT(m, HasSubstr("cannot colocate"));
  EXPECT_THAT(m, HasSubstr("a (op Square; requests '/device:CPU:0'; kernels on CPU:0, CPU:1)"));
  EXPECT_THAT(m, HasSubstr("b (op Neg; requests '/device:CPU:1'"));
  EXPECT_THAT(m, HasSubstr("b: _class loc:@a"));
}

TEST(Placer, ConflictingResourceColocationIsANamedError) {
  auto g = Build({NodeOf("handle", "TestResourceHandle", {}, {}, "/device:CPU:0"),
                  NodeOf("read", "TestResourceRead", {"handle"}, {}, "/device:CPU:1")});
  ASSERT_NE(g, nullptr);
  CostModel costs;
  auto r = Place(*g, costs);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("handle (op TestResourceHandle"));
  EXPECT_THAT(r.status().message(), HasSubstr("read: reads resource output handle:0"));
}

TEST(Placer, NodeWithoutAnyKernelIsANamedError) {
  auto g = Build({ConstOf("x", TensorShape({4})), Unary("nk", "TestNoKernel", "x")});
  ASSERT_NE(g, nullptr);
  CostModel costs;
  auto r = Place(*g, costs);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(r.status().message(),
              HasSubstr("cannot place node 'nk' (op TestNoKernel, T=float): no device has a "
                        "kernel for it; device types with a kernel for it: none; without: CPU"));
}

TEST(Placer, DtypeWithoutKernelIsANamedError) {
  // MatMul accepts half, but the CPU plugin has no half kernel for it.
  NodeDef mm = NodeOf("mm", "MatMul", {"x", "x"}, {{"T", AttrValue::Type(DT_HALF)}});
  Tensor t(DT_HALF, TensorShape({2, 2}));
  auto g =
      Build({NodeOf("x", "Const", {},
                    {{"dtype", AttrValue::Type(DT_HALF)}, {"value", AttrValue::TensorValue(t)}}),
             mm});
  ASSERT_NE(g, nullptr);
  CostModel costs;
  auto r = Place(*g, costs);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("node 'mm' (op MatMul, T=half)"));
  EXPECT_THAT(r.status().message(), HasSubstr("without: CPU"));
}

TEST(Placer, RequestForAMissingDeviceIsANamedError) {
  auto g = Build({ConstOf("x", TensorShape({4})), Unary("a", "Square", "x", "/device:GPU:0")});
  ASSERT_NE(g, nullptr);
  CostModel costs;
  auto r = Place(*g, costs);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(r.status().message(),
              HasSubstr("node 'a' (op Square, T=float): it requests device '/device:GPU:0', "
                        "which matches none of the devices (CPU:0, CPU:1)"));
  EXPECT_THAT(r.status().message(), HasSubstr("device types with a kernel for it: CPU"));
}

TEST(Placer, SpreadsIndependentHeavyBranches) {
  auto g = Build({ConstOf("a1", TensorShape({512, 512})), ConstOf("b1", TensorShape({512, 512})),
                  ConstOf("a2", TensorShape({512, 512})), ConstOf("b2", TensorShape({512, 512})),
                  MatMulOf("mm1", "a1", "b1"), MatMulOf("mm2", "a2", "b2"),
                  NodeOf("sum", "AddV2", {"mm1", "mm2"}, {{"T", AttrValue::Type(DT_FLOAT)}})});
  ASSERT_NE(g, nullptr);
  CostModel costs;
  auto r = Place(*g, costs);
  ASSERT_OK(r.status());
  EXPECT_NE(DeviceOf(*g, *r, "mm1"), DeviceOf(*g, *r, "mm2"));
  // Each Const went with its only consumer.
  EXPECT_EQ(DeviceOf(*g, *r, "a1"), DeviceOf(*g, *r, "mm1"));
  EXPECT_EQ(DeviceOf(*g, *r, "b2"), DeviceOf(*g, *r, "mm2"));
  // The two products overlap in the simulated schedule.
  double mm_us = costs.ComputeUs(*g->FindNode("mm1"), "CPU");
  EXPECT_LT(r->estimated_makespan_us, 2 * mm_us);
  EXPECT_GT(r->estimated_makespan_us, mm_us);
}

TEST(Placer, ChainStaysOnOneDevice) {
  auto g = Build({ConstOf("x", TensorShape({256, 256})), MatMulOf("m1", "x", "x"),
                  MatMulOf("m2", "m1", "m1"), Unary("r", "Relu", "m2"), Unary("n", "Neg", "r"),
                  MatMulOf("m3", "n", "n")});
  ASSERT_NE(g, nullptr);
  CostModel costs;
  auto r = Place(*g, costs);
  ASSERT_OK(r.status());
  for (const auto& n : g->nodes()) EXPECT_EQ(r->device_of[n->id()], Cpu(0)) << n->name();
}

TEST(Placer, MeasuredStatsChangeTheDecision) {
  auto graph = [] {
    return Build(
        {ConstOf("x", TensorShape({64})), Unary("a", "Square", "x"), Unary("b", "Neg", "x")});
  };
  auto g = graph();
  ASSERT_NE(g, nullptr);
  CostModel costs;
  EXPECT_FALSE(costs.measured());
  auto before = Place(*g, costs);
  ASSERT_OK(before.status());
  // Both are cheap: moving x costs more than waiting for a.
  EXPECT_EQ(DeviceOf(*g, *before, "a"), DeviceOf(*g, *before, "b"));

  // A step shows that `a` takes 50 ms: `b` is better off on the other device.
  StepStats stats;
  DeviceStepStats dev;
  dev.device = Cpu(0)->full_name();
  NodeExecStats a;
  a.node_name = "a";
  a.op = "Square";
  a.start_us = 1000;
  a.end_us = 51000;
  a.output_bytes = {256};
  dev.nodes.push_back(a);
  stats.devices.push_back(dev);
  costs.Record(stats, {{Cpu(0)->full_name(), "CPU"}, {Cpu(1)->full_name(), "CPU"}});
  EXPECT_TRUE(costs.measured());
  EXPECT_DOUBLE_EQ(costs.ComputeUs(*g->FindNode("a"), "CPU"), 50000);

  auto after = Place(*g, costs);
  ASSERT_OK(after.status());
  EXPECT_NE(DeviceOf(*g, *after, "a"), DeviceOf(*g, *after, "b"));
  // b now runs while a does.
  EXPECT_LT(after->finish_us[g->FindNode("b")->id()], after->finish_us[g->FindNode("a")->id()]);
}

TEST(Placer, RecordSkipsUnknownDevicesAndAveragesRuns) {
  auto g = Build({ConstOf("x", TensorShape({64})), Unary("a", "Square", "x")});
  ASSERT_NE(g, nullptr);
  CostModel costs;
  auto step = [](const std::string& device, int64_t us) {
    StepStats s;
    DeviceStepStats d;
    d.device = device;
    NodeExecStats n;
    n.node_name = "a";
    n.end_us = us;
    d.nodes.push_back(n);
    s.devices.push_back(d);
    return s;
  };
  std::map<std::string, std::string> types = {{Cpu(0)->full_name(), "CPU"}};
  costs.Record(step("/job:elsewhere/device:CPU:0", 999), types);
  EXPECT_FALSE(costs.measured());
  costs.Record(step(Cpu(0)->full_name(), 100), types);
  costs.Record(step(Cpu(0)->full_name(), 300), types);
  EXPECT_DOUBLE_EQ(costs.ComputeUs(*g->FindNode("a"), "CPU"), 200);
}

TEST(CostModel, StaticEstimatesFollowFlopsAndBytes) {
  auto g = Build({ConstOf("s", TensorShape({64, 64})), ConstOf("l", TensorShape({512, 512})),
                  MatMulOf("small", "s", "s"), MatMulOf("large", "l", "l"),
                  Unary("ew_small", "Neg", "s"), Unary("ew_large", "Neg", "l")});
  ASSERT_NE(g, nullptr);
  CostModel costs;
  double small = costs.ComputeUs(*g->FindNode("small"), "CPU");
  double large = costs.ComputeUs(*g->FindNode("large"), "CPU");
  // 512^3 / 64^3 = 512 times the work; the per-node overhead keeps the ratio a little lower.
  EXPECT_GT(large / small, 100);
  EXPECT_GT(costs.ComputeUs(*g->FindNode("ew_large"), "CPU"),
            costs.ComputeUs(*g->FindNode("ew_small"), "CPU"));
  EXPECT_LT(costs.ComputeUs(*g->FindNode("ew_large"), "CPU"), large);
  // Shapes inferred over the graph give the same answer as the node's own view here.
  std::vector<NodeShapes> shapes = InferGraphShapes(*g);
  EXPECT_DOUBLE_EQ(
      costs.ComputeUs(*g->FindNode("large"), "CPU", shapes[g->FindNode("large")->id()]), large);
  EXPECT_EQ(shapes[g->FindNode("large")->id()].outputs[0], PartialTensorShape({512, 512}));
}

TEST(CostModel, TransfersCostNothingOnTheSameDevice) {
  CostModel costs;
  EXPECT_EQ(costs.TransferUs(1 << 20, *Cpu(0), *Cpu(0)), 0);
  double small = costs.TransferUs(16, *Cpu(0), *Cpu(1));
  double large = costs.TransferUs(1 << 20, *Cpu(0), *Cpu(1));
  EXPECT_GT(small, 0);
  EXPECT_GT(large, small);
}

TEST(Placer, IsDeterministic) {
  // A random DAG of element-wise ops and small MatMuls.
  std::mt19937 rng(7);
  std::vector<NodeDef> nodes;
  for (int i = 0; i < 4; ++i) nodes.push_back(ConstOf("c" + std::to_string(i), {32, 32}));
  for (int i = 0; i < 40; ++i) {
    auto pick = [&] { return nodes[rng() % nodes.size()].name; };
    std::string name = "n" + std::to_string(i);
    switch (rng() % 3) {
      case 0:
        nodes.push_back(MatMulOf(name, pick(), pick()));
        break;
      case 1:
        nodes.push_back(
            NodeOf(name, "AddV2", {pick(), pick()}, {{"T", AttrValue::Type(DT_FLOAT)}}));
        break;
      default:
        nodes.push_back(Unary(name, "Tanh", pick()));
    }
  }
  auto g1 = Build(nodes);
  auto g2 = Build(nodes);
  ASSERT_NE(g1, nullptr);
  CostModel costs1, costs2;
  auto r1 = Place(*g1, costs1);
  auto r2 = Place(*g2, costs2);
  auto r3 = Place(*g1, costs1);
  ASSERT_OK(r1.status());
  ASSERT_OK(r2.status());
  ASSERT_OK(r3.status());
  EXPECT_EQ(r1->device_of, r2->device_of);
  EXPECT_EQ(r1->device_of, r3->device_of);
  EXPECT_EQ(r1->estimated_makespan_us, r2->estimated_makespan_us);
  EXPECT_EQ(r1->Report(*g1), r2->Report(*g2));
}

TEST(Placer, ReportListsEveryNode) {
  auto g = Build({ConstOf("x", TensorShape({4})), Unary("a", "Square", "x", "/device:CPU:1")});
  ASSERT_NE(g, nullptr);
  CostModel costs;
  auto r = Place(*g, costs);
  ASSERT_OK(r.status());
  std::string report = r->Report(*g);
  EXPECT_THAT(report, ContainsRegex("x +Const +" + Cpu(1)->full_name() + " +start +0.0 us"));
  EXPECT_THAT(report, ContainsRegex("a +Square +" + Cpu(1)->full_name()));
  EXPECT_THAT(report, HasSubstr("finish"));
  EXPECT_EQ(std::count(report.begin(), report.end(), '\n'), 2);
  EXPECT_GT(r->finish_us[g->FindNode("a")->id()], r->start_us[g->FindNode("a")->id()]);
}

}  // namespace
}  // namespace cfx
