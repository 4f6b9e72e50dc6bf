// Session: partial execution, feeds replacing edges, signature caching, errors, variables,
// containers shared across sessions, two-device partitioning, concurrency and step stats.
#include "conflux/session.h"

#include <gtest/gtest.h>

#include <thread>

#include "bounded_wait.h"
#include "graph_builder.h"
#include "kernel_test_util.h"
#include "runtime/serial_evaluator.h"

namespace cfx {
namespace {

using namespace test;  // NOLINT

// x: [2,3] placeholder; y = relu(x @ w + b); total = sum(y); also an unrelated branch that
// needs an unfed placeholder.
GraphDef Affine() {
  GraphBuilder b;
  b.Placeholder("x", DT_FLOAT, PartialTensorShape({-1, 3}));
  b.Const("w", MakeTensor<float>(TensorShape({3, 2}), {0.5f, -1, 0.25f, 0.5f, -0.5f, 1}));
  b.Const("b", MakeVector<float>({0.1f, -0.2f}));
  b.Op("mm", "MatMul", {"x", "w"}, {{"T", F()}});
  b.Binary("add", "AddV2", "mm", "b");
  b.Op("y", "Relu", {"add"}, {{"T", F()}});
  b.Const("axes", MakeVector<int32_t>({0, 1}));
  b.Op("total", "Sum", {"y", "axes"}, {{"T", F()}, {"Tidx", AttrValue::Type(DT_INT32)}});
  b.Placeholder("other", DT_FLOAT);
  b.Op("other_neg", "Neg", {"other"}, {{"T", F()}});
  return b.graph();
}

Tensor X() { return MakeTensor<float>(TensorShape({2, 3}), {1, 2, 3, 4, 5, 6}); }

TEST(SessionTest, RunMatchesSerialReference) {
  GraphDef g = Affine();
  auto session = NewTestSession(g);
  std::vector<Tensor> out;
  ASSERT_OK(session->Run({{"x", X()}}, {"y:0", "total"}, {}, &out));
  auto graph = Graph::FromGraphDef(g, &TestRuntime().ops()).value();
  auto ref = EvaluateSerially(TestRuntime(), *graph, TestRuntime().FindDevice("CPU:0").value(),
                              {{"x:0", X()}}, {"y:0", "total:0"})
                 .value();
  ASSERT_EQ(out.size(), 2u);
  ExpectTensorNear(out[0], ref[0], 1e-6);
  ExpectTensorNear(out[1], ref[1], 1e-6);
  // A second run of the same signature reuses the executors and gives the same answer.
  std::vector<Tensor> again;
  ASSERT_OK(session->Run({{"x", X()}}, {"y:0", "total"}, {}, &again));
  ExpectTensorNear(again[1], out[1], 0);
}

TEST(SessionTest, OnlyWhatFetchesNeedRuns) {
  auto session = NewTestSession(Affine());
  std::vector<Tensor> out;
  // "other" is never fed: the run succeeds because other_neg is not needed.
  ASSERT_OK(session->Run({{"x", X()}}, {"total"}, {}, &out));
  // Fetching it without a feed names the placeholder.
  Status s = session->Run({{"x", X()}}, {"other_neg"}, {}, &out);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("placeholder tensor 'other'"), std::string::npos) << s;
}

TEST(SessionTest, FeedReplacesAnyEdge) {
  auto session = NewTestSession(Affine());
  std::vector<Tensor> out;
  // Feeding mm:0 cuts x out of the graph: no x feed needed.
  Tensor mm = MakeTensor<float>(TensorShape({1, 2}), {1.0f, -5.0f});
  ASSERT_OK(session->Run({{"mm:0", mm}}, {"y"}, {}, &out));
  EXPECT_EQ(Values<float>(out[0]), (std::vector<float>{1.1f, 0.0f}));
  // Fetching a fed tensor returns the feed.
  ASSERT_OK(session->Run({{"mm:0", mm}}, {"mm:0"}, {}, &out));
  EXPECT_EQ(Values<float>(out[0]), Values<float>(mm));
}

TEST(SessionTest, ClearErrors) {
  auto session = NewTestSession(Affine());
  std::vector<Tensor> out;
  Status s = session->Run({{"nope:0", X()}}, {"y"}, {}, &out);
  EXPECT_EQ(s.code(), Code::kNotFound);
  EXPECT_NE(s.message().find("feed 'nope:0'"), std::string::npos) << s;
  s = session->Run({{"x", X()}}, {"missing:0"}, {}, &out);
  EXPECT_EQ(s.code(), Code::kNotFound);
  EXPECT_NE(s.message().find("fetch 'missing:0'"), std::string::npos) << s;
  s = session->Run({{"x", X()}}, {"y:3"}, {}, &out);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  s = session->Run({{"x", MakeTensor<int32_t>(TensorShape({2, 3}), {1, 2, 3, 4, 5, 6})}}, {"y"},
                   {}, &out);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("int32"), std::string::npos) << s;
  s = session->Run({{"x", MakeTensor<float>(TensorShape({3, 2}), {1, 2, 3, 4, 5, 6})}}, {"y"}, {},
                   &out);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("[?,3]"), std::string::npos) << s;
  s = session->Run({{"x", X()}}, {}, {"no_such_target"}, &out);
  EXPECT_EQ(s.code(), Code::kNotFound);
}

TEST(SessionTest, CycleWithoutLoopOpsIsAnError) {
  GraphBuilder b;
  b.Binary("a", "AddV2", "c", "c");
  b.Op("c", "Neg", {"a"}, {{"T", F()}});
  auto session = Session::Create(&TestRuntime(), b.graph());
  Status s = session.ok() ? (*session)->Run({}, {"c"}, {}, nullptr) : session.status();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("cycle"), std::string::npos) << s;
}

TEST(SessionTest, KernelErrorAbortsTheStepAndTheSessionStaysUsable) {
  GraphBuilder b;
  b.Placeholder("shape", DT_INT32);
  b.Const("v", MakeVector<float>({1, 2, 3, 4}));
  b.Op("r", "Reshape", {"v", "shape"}, {{"T", F()}, {"Tshape", AttrValue::Type(DT_INT32)}});
  auto session = NewTestSession(b.graph());
  std::vector<Tensor> out;
  Status s = session->Run({{"shape", MakeVector<int32_t>({3})}}, {"r"}, {}, &out);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("node r"), std::string::npos) << s;
  ASSERT_OK(session->Run({{"shape", MakeVector<int32_t>({2, 2})}}, {"r"}, {}, &out));
  EXPECT_EQ(out[0].shape(), TensorShape({2, 2}));
}

// A step with nothing to do (no fetches and no targets, on an empty graph or not) returns OK at
// once; it used to wait forever for executors it had none of, step timeout or not (found by the
// graph_run fuzzer).
TEST(SessionTest, RunWithNothingToDoReturns) {
  for (const GraphDef& g : {GraphDef(), Affine()}) {
    auto session = NewTestSession(g);
    std::vector<Tensor> out;
    RunOrAbort("Session::Run with no fetches and no targets", [&] {
      EXPECT_OK(session->Run({}, {}, {}, &out));
      RunOptions options;
      options.timeout_ms = 1000;
      EXPECT_OK(session->Run(options, {}, {}, {}, &out, nullptr));
    });
    EXPECT_TRUE(out.empty());
  }
}

// Fetching a tensor of an untaken branch is the caller's mistake, InvalidArgument naming the
// fetch; it was INTERNAL, which says Conflux is broken (found by the graph_run fuzzer).
TEST(SessionTest, FetchingADeadTensorIsInvalidArgument) {
  GraphBuilder b;
  b.Const("data", MakeVector<float>({1, 2}));
  b.Const("pred", MakeScalar<bool>(false));
  b.Op("switch", "Switch", {"data", "pred"}, {{"T", F()}});
  b.Op("taken", "Identity", {"switch:1"}, {{"T", F()}});
  auto session = NewTestSession(b.graph());
  std::vector<Tensor> out;
  ASSERT_OK(session->Run({}, {"switch:0"}, {}, &out));
  for (const char* fetch : {"switch:1", "taken:0"}) {
    Status s = session->Run({}, {fetch}, {}, &out);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
    const std::string expected = std::string("fetch '") + fetch + "' has no value";
    EXPECT_NE(s.message().find(expected), std::string::npos) << s;
    EXPECT_NE(s.message().find("it is dead"), std::string::npos) << s;
  }
}

TEST(SessionTest, ExtendAddsNodes) {
  auto session = NewTestSession(Affine());
  GraphBuilder more;
  more.Op("y2", "Square", {"y"}, {{"T", F()}});
  ASSERT_OK(session->Extend(more.graph()));
  std::vector<Tensor> out;
  ASSERT_OK(session->Run({{"x", X()}}, {"y", "y2"}, {}, &out));
  std::vector<float> y = Values<float>(out[0]), y2 = Values<float>(out[1]);
  for (size_t i = 0; i < y.size(); ++i) EXPECT_FLOAT_EQ(y2[i], y[i] * y[i]);
  EXPECT_EQ(session->Extend(more.graph()).code(), Code::kInvalidArgument);  // duplicate name
}

TEST(SessionTest, ConcurrentRunsAgree) {
  auto session = NewTestSession(Affine());
  std::vector<Tensor> ref;
  ASSERT_OK(session->Run({{"x", X()}}, {"total"}, {}, &ref));
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i) {
        std::vector<Tensor> out;
        Status s = session->Run({{"x", X()}}, {"total", "y"}, {}, &out);
        if (!s.ok() || !out[0].Equals(ref[0])) failures++;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(SessionTest, StepStatsNameEveryNodeThatRan) {
  auto session = NewTestSession(Affine());
  RunOptions options;
  options.trace = true;
  RunMetadata meta;
  std::vector<Tensor> out;
  ASSERT_OK(session->Run(options, {{"x", X()}}, {"total"}, {}, &out, &meta));
  ASSERT_EQ(meta.step_stats.devices.size(), 1u);
  std::set<std::string> ran;
  for (const NodeExecStats& n : meta.step_stats.devices[0].nodes) {
    ran.insert(n.node_name);
    EXPECT_LE(n.start_us, n.end_us);
  }
  // The step runs its partition graph, where the remapper fused mm, add and y into y.
  ASSERT_EQ(meta.partition_graphs.size(), 1u);
  for (const NodeDef& n : meta.partition_graphs[0].second.node)
    EXPECT_TRUE(ran.count(n.name)) << n.name;
  for (const char* name : {"y", "total"}) EXPECT_TRUE(ran.count(name)) << name;
  EXPECT_FALSE(ran.count("other_neg"));
}

TEST(SessionTest, ListDevices) {
  auto session = NewTestSession(Affine());
  auto devices = session->ListDevices();
  ASSERT_FALSE(devices.empty());
  EXPECT_EQ(devices[0].type, "CPU");
}

TEST(SessionTest, ClosedSessionRejectsRuns) {
  auto session = NewTestSession(Affine());
  ASSERT_OK(session->Close());
  EXPECT_EQ(session->Run({{"x", X()}}, {"y"}, {}, nullptr).code(), Code::kCancelled);
}

}  // namespace
}  // namespace cfx

namespace cfx {
namespace {

using namespace test;  // NOLINT

std::unique_ptr<Runtime> RuntimeWith(bool cse, bool folding) {
  Config config = Config::Default();
  config.plugin_paths.insert(config.plugin_paths.begin(), BuildPluginDir());
  config.common_subexpression_elimination = cse;
  config.constant_folding = folding;
  return Runtime::Create(config).value();
}

// Counts the nodes of the partitions that ran.
size_t NodesThatRan(const RunMetadata& meta) {
  size_t n = 0;
  for (const auto& [device, graph] : meta.partition_graphs) n += graph.node.size();
  return n;
}

TEST(SessionOptimizerTest, ConfigSwitchesChangeNodeCountsNotResults) {
  // Two identical subexpressions of x, and a constant-only subgraph.
  GraphBuilder b;
  b.Placeholder("x", DT_FLOAT);
  b.Op("sq1", "Square", {"x"}, {{"T", AttrValue::Type(DT_FLOAT)}});
  b.Op("sq2", "Square", {"x"}, {{"T", AttrValue::Type(DT_FLOAT)}});
  b.Const("c1", MakeVector<float>({1, 2, 3}));
  b.Const("c2", MakeVector<float>({4, 5, 6}));
  b.Binary("cc", "Mul", "c1", "c2");
  b.Binary("s", "AddV2", "sq1", "sq2");
  b.Binary("y", "AddV2", "s", "cc");
  std::vector<size_t> counts;
  std::vector<std::vector<float>> results;
  for (auto [cse, folding] : {std::pair{false, false}, {true, false}, {false, true}, {true, true}}) {
    auto rt = RuntimeWith(cse, folding);
    auto session = Session::Create(rt.get(), b.graph()).value();
    RunMetadata meta;
    std::vector<Tensor> out;
    ASSERT_OK(session->Run(RunOptions(), {{"x", MakeVector<float>({1, -2, 3})}}, {"y"}, {}, &out,
                           &meta));
    counts.push_back(NodesThatRan(meta));
    results.push_back(Values<float>(out[0]));
  }
  // CSE merges sq1/sq2; folding turns c1, c2, cc into one constant; both do both.
  EXPECT_EQ(counts[1], counts[0] - 1);
  EXPECT_EQ(counts[2], counts[0] - 2);
  EXPECT_EQ(counts[3], counts[0] - 3);
  for (const auto& r : results) EXPECT_EQ(r, (std::vector<float>{6, 18, 36}));
}

}  // namespace
}  // namespace cfx
