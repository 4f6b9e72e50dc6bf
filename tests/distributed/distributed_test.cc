// The distributed runtime across real processes: run under mpirun with 3 ranks (ctest
// distributed.three_tasks). The cluster is /job:ps/task:0, /job:worker/task:0 (the chief, which
// runs these tests) and /job:worker/task:1; the other two ranks serve as workers inside
// Runtime::Create and exit when the chief's process exits. Every result is checked against the
// same graph run in one process, or against values computed here.
#include <gtest/gtest.h>

#include <signal.h>

#include <cstdio>
#include <memory>
#include <random>
#include <set>
#include <thread>
#include <atomic>
#include <string>

#include "conflux/config.h"
#include "conflux/runtime.h"
#include "conflux/session.h"
#include "distributed/cluster.h"
#include "cluster_test_main.h"
#include "graph_builder.h"
#include "kernel_test_util.h"
#include "loop_graph.h"
#include "random_program.h"

namespace cfx {
namespace {

using namespace test;  // NOLINT

constexpr const char* kPs = "/job:ps/replica:0/task:0/device:CPU:0";
constexpr const char* kChief = "/job:worker/replica:0/task:0/device:CPU:0";
constexpr const char* kWorker1 = "/job:worker/replica:0/task:1/device:CPU:0";
constexpr const char* kPsAsync = "/job:ps/replica:0/task:0/device:ASYNC:0";

Runtime* g_runtime = nullptr;

std::string ClusterYaml() {
  return std::string("plugin_paths: [\"") + CONFLUX_BUILD_PLUGIN_DIR + R"("]
plugins:
  - {name: cpu}
  - {name: ops-nn}
  - {name: transport-mpi}
  - {path: ")" + CONFLUX_FIXTURE_PLUGIN_DIR + R"(/libconflux_async_device.so"}
devices:
  CPU: {count: 1}
  ASYNC: {count: 0}
threads: {intra_op: 1, inter_op: 2}
cluster:
  transport: mpi
  chief: worker:0
  heartbeat: {interval: 200ms, timeout: 3s}
  jobs:
    - name: ps
      tasks: 1
      devices:
        CPU: {count: 1}
        ASYNC: {count: 1}
    - {name: worker, tasks: 2}
)";
}

std::unique_ptr<Session> NewSession(const GraphDef& g, Runtime* rt = nullptr) {
  auto s = Session::Create(rt ? rt : g_runtime, g);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? std::move(*s) : nullptr;
}

TEST(Distributed, ListsTheDevicesOfEveryTask) {
  auto session = NewSession(GraphDef());
  ASSERT_NE(session, nullptr);
  std::vector<std::string> names;
  for (const DeviceAttributes& d : session->ListDevices()) names.push_back(d.name);
  EXPECT_EQ(names, (std::vector<std::string>{kChief, kPsAsync, kPs, kWorker1}));
  EXPECT_EQ(g_runtime->task_name(), "/job:worker/replica:0/task:0");
}

// y = tanh(x @ w1) on ps, @ w2 on worker 1, + b on the chief: a model-parallel chain.
GraphDef ModelParallel(bool spread) {
  GraphBuilder b;
  auto dev = [&](const char* d) { return spread ? std::string(d) : std::string(); };
  b.Placeholder("x", DT_FLOAT);
  std::vector<float> w1(16 * 32), w2(32 * 8), bias(8);
  std::mt19937 rng(7);
  std::normal_distribution<float> n(0, 0.3f);
  for (float& v : w1) v = n(rng);
  for (float& v : w2) v = n(rng);
  for (float& v : bias) v = n(rng);
  b.Const("w1", MakeTensor<float>({16, 32}, w1), dev(kPs));
  b.Const("w2", MakeTensor<float>({32, 8}, w2), dev(kWorker1));
  b.Const("bias", MakeVector<float>(bias), dev(kChief));
  b.Op("mm1", "MatMul", {"x", "w1"}, {{"T", F()}}, dev(kPs));
  b.Op("h", "Tanh", {"mm1"}, {{"T", F()}}, dev(kPs));
  b.Op("mm2", "MatMul", {"h", "w2"}, {{"T", F()}}, dev(kWorker1));
  b.Op("y", "AddV2", {"mm2", "bias"}, {{"T", F()}}, dev(kChief));
  return b.graph();
}

TEST(Distributed, ModelParallelGraphGivesTheSingleProcessResult) {
  std::vector<float> x(4 * 16);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * i);
  const Tensor xt = MakeTensor<float>({4, 16}, x);
  auto local = NewSession(ModelParallel(false), &TestRuntime());
  ASSERT_NE(local, nullptr);
  auto spread = NewSession(ModelParallel(true));
  ASSERT_NE(spread, nullptr);
  std::vector<Tensor> want, got;
  ASSERT_TRUE(local->Run({{"x", xt}}, {"y:0"}, {}, &want).ok());
  RunOptions options;
  options.trace = true;
  RunMetadata meta;
  Status s = spread->Run(options, {{"x", xt}}, {"y:0"}, {}, &got, &meta);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(Values<float>(got[0]), Values<float>(want[0]));
  // One partition per task, and the workers' step stats came back.
  std::set<std::string> parts, traced;
  for (const auto& [device, graph] : meta.partition_graphs) parts.insert(device);
  for (const DeviceStepStats& d : meta.step_stats.devices) traced.insert(d.device);
  EXPECT_EQ(parts, (std::set<std::string>{kChief, kPs, kWorker1}));
  EXPECT_EQ(traced, parts);
  // Again: the registered partitions are reused.
  ASSERT_TRUE(spread->Run({{"x", xt}}, {"y:0"}, {}, &got).ok());
  EXPECT_EQ(Values<float>(got[0]), Values<float>(want[0]));
}

// Tensors of every kind cross tasks intact: dtypes, strings, empty and large tensors.
TEST(Distributed, TensorsCrossTasksIntact) {
  GraphBuilder b;
  std::vector<std::pair<std::string, Tensor>> feeds;
  std::vector<Tensor> values = {
      MakeTensor<int64_t>({3}, {1, -(int64_t{1} << 40), 7}),
      MakeTensor<double>({0, 3}, {}),
      MakeTensor<uint8_t>({5}, {0, 1, 128, 254, 255}),
  };
  Tensor flags(DT_BOOL, TensorShape({2, 2}));
  for (int i = 0; i < 4; ++i) flags.data<bool>()[i] = i % 3 == 0;
  values.push_back(flags);
  Tensor strings(DT_STRING, TensorShape({3}));
  strings.data<std::string>()[0] = "";
  strings.data<std::string>()[1] = "hello";
  strings.data<std::string>()[2] = std::string(1000, 'z') + std::string("\0x", 2);
  values.push_back(strings);
  std::vector<float> big(3 << 20);  // 12 MiB
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(i % 1013) - 500.0f;
  values.push_back(MakeTensor<float>({3 << 20}, big));
  std::vector<std::string> fetches;
  for (size_t i = 0; i < values.size(); ++i) {
    const std::string p = "v" + std::to_string(i);
    b.Placeholder(p, values[i].dtype());
    const AttrValue t = AttrValue::Type(values[i].dtype());
    b.Op(p + "_ps", "Identity", {p}, {{"T", t}}, kPs);
    b.Op(p + "_w1", "Identity", {p + "_ps"}, {{"T", t}}, kWorker1);
    feeds.push_back({p, values[i]});
    fetches.push_back(p + "_w1:0");
  }
  auto session = NewSession(b.graph());
  ASSERT_NE(session, nullptr);
  std::vector<Tensor> out;
  Status s = session->Run(feeds, fetches, {}, &out);
  ASSERT_TRUE(s.ok()) << s;
  for (size_t i = 0; i < values.size(); ++i)
    EXPECT_TRUE(out[i].Equals(values[i])) << fetches[i] << ": " << out[i].DebugString();
}

// Tensors in device memory the host cannot address (the ASYNC fixture device on ps) are staged
// through host memory on both sides of the transport.
TEST(Distributed, DeviceMemoryIsStagedThroughTheHost) {
  GraphBuilder b;
  b.Placeholder("x", DT_FLOAT);
  b.Op("neg", "Neg", {"x"}, {{"T", F()}}, kPsAsync);
  b.Const("three", MakeVector<float>({3, 3, 3, 3}), kPs);
  b.Binary("scaled", "Mul", "neg", "three", DT_FLOAT, kPsAsync);
  b.Binary("y", "AddV2", "scaled", "x", DT_FLOAT, kWorker1);
  auto session = NewSession(b.graph());
  ASSERT_NE(session, nullptr);
  std::vector<Tensor> out;
  Status s = session->Run({{"x", MakeVector<float>({1, -2, 0.5f, 8})}}, {"scaled:0", "y:0"}, {},
                          &out);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(Values<float>(out[0]), (std::vector<float>{-3, 6, -1.5f, -24}));
  EXPECT_EQ(Values<float>(out[1]), (std::vector<float>{-2, 4, -1, -16}));
}

// for (i = 0; i < n; ++i) x = x * 2 + 1, the body on worker 1 and the loop's control on the
// chief: the partitioner gives worker 1 a control loop driven by the chief's LoopCond.
TEST(Distributed, WhileLoopWhoseBodyRunsOnAnotherTask) {
  GraphBuilder b;
  b.Placeholder("x", DT_FLOAT);
  b.Placeholder("n", DT_INT32);
  auto exits = AddCountedLoop(b, {"loop/", "f", 10, ""}, "n", {{"x", "x", DT_FLOAT}},
                              [&](const std::string& i, const std::vector<std::string>& v) {
                                FrameConst(b, "loop/two", MakeScalar<float>(2), i).device = kWorker1;
                                FrameConst(b, "loop/c1", MakeScalar<float>(1), i).device = kPs;
                                b.Binary("loop/mul", "Mul", v[0], "loop/two", DT_FLOAT, kWorker1);
                                b.Binary("loop/add", "AddV2", "loop/mul", "loop/c1", DT_FLOAT, kPs);
                                return std::vector<std::string>{"loop/add"};
                              });
  auto session = NewSession(b.graph());
  ASSERT_NE(session, nullptr);
  for (int n : {0, 1, 7, 40}) {
    std::vector<Tensor> out;
    Status s = session->Run({{"x", MakeScalar<float>(0.5f)}, {"n", MakeScalar<int32_t>(n)}},
                            {exits[0] + ":0"}, {}, &out);
    ASSERT_TRUE(s.ok()) << s;
    double want = 0.5;
    for (int i = 0; i < n; ++i) want = want * 2 + 1;
    EXPECT_FLOAT_EQ(Values<float>(out[0])[0], static_cast<float>(want)) << "n = " << n;
  }
}

// if (x > 0) x * 3 on ps else x - 5 on worker 1: the untaken branch's dead tensors cross tasks.
TEST(Distributed, CondAcrossTasks) {
  GraphBuilder b;
  b.Placeholder("x", DT_FLOAT);
  b.Const("zero", MakeScalar<float>(0), kChief);
  b.Binary("pred", "Greater", "x", "zero", DT_FLOAT, kChief);
  b.Op("switch", "Switch", {"x", "pred"}, {{"T", F()}}, kChief);
  b.Const("three", MakeScalar<float>(3), kPs).input.push_back("^switch");
  b.Binary("then", "Mul", "switch:1", "three", DT_FLOAT, kPs);
  b.Const("five", MakeScalar<float>(5), kWorker1).input.push_back("^switch");
  b.Binary("else", "Sub", "switch:0", "five", DT_FLOAT, kWorker1);
  b.Op("merge", "Merge", {"else", "then"}, {{"T", F()}, {"N", AttrValue::Int(2)}}, kChief);
  auto session = NewSession(b.graph());
  ASSERT_NE(session, nullptr);
  for (float x : {2.0f, -2.0f, 0.5f, -0.25f}) {
    std::vector<Tensor> out;
    Status s = session->Run({{"x", MakeScalar<float>(x)}}, {"merge:0", "merge:1"}, {}, &out);
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_FLOAT_EQ(Values<float>(out[0])[0], x > 0 ? x * 3 : x - 5);
    EXPECT_EQ(Values<int32_t>(out[1])[0], x > 0 ? 1 : 0);
  }
}

// A variable on ps, updated by deltas that the two workers compute.
TEST(Distributed, VariableOnPsUpdatedFromTwoWorkers) {
  GraphBuilder b;
  b.Op("v", "VariableV2", {}, {{"dtype", F()}, {"shape", AttrValue::Shape(PartialTensorShape({2}))}},
       kPs);
  b.Const("init_value", MakeVector<float>({1, 2}), kPs);
  b.Op("init", "Assign", {"v", "init_value"}, {{"T", F()}}, kPs);
  for (const char* w : {kChief, kWorker1}) {
    const std::string p = w == kChief ? "w0" : "w1";
    b.Const(p + "/scale", MakeVector<float>({w == kChief ? 1.0f : 10.0f, 100.0f}), w);
    b.Op(p + "/read", "Identity", {"v"}, {{"T", F()}}, w);
    b.Binary(p + "/delta", "Mul", p + "/read", p + "/scale", DT_FLOAT, w);
    b.Op(p + "/update", "AssignAdd", {"v", p + "/delta"}, {{"T", F()}}, kPs);
  }
  auto session = NewSession(b.graph());
  ASSERT_NE(session, nullptr);
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {}, {"init"}, nullptr).ok());
  std::vector<float> want = {1, 2};
  for (int step = 0; step < 3; ++step) {
    for (const char* p : {"w0/update", "w1/update"}) {
      Status s = session->Run({}, {}, {p}, nullptr);
      ASSERT_TRUE(s.ok()) << s;
      const bool first = std::string(p) == "w0/update";
      want[0] += want[0] * (first ? 1.0f : 10.0f);
      want[1] += want[1] * 100.0f;
    }
  }
  // Fetching the variable itself: the fetch runs in the chief's task, the variable stays on ps.
  Status s = session->Run({}, {"v:0"}, {}, &out);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(Values<float>(out[0]), want);
}

GraphDef QueueGraph() {
  GraphBuilder b;
  b.Op("q", "FIFOQueueV2", {},
       {{"component_types", AttrValue::TypeList({DT_FLOAT})}, {"capacity", AttrValue::Int(8)}},
       kPs);
  b.Placeholder("x", DT_FLOAT);
  b.Const("offset", MakeScalar<float>(1000), kWorker1);
  b.Binary("shifted", "AddV2", "x", "offset", DT_FLOAT, kWorker1);
  b.Op("enqueue", "QueueEnqueueV2", {"q", "shifted"},
       {{"Tcomponents", AttrValue::TypeList({DT_FLOAT})}});
  b.Op("dequeue", "QueueDequeueV2", {"q"}, {{"component_types", AttrValue::TypeList({DT_FLOAT})}});
  return b.graph();
}

TEST(Distributed, QueueOnOneTaskFedFromAnother) {
  auto session = NewSession(QueueGraph());
  ASSERT_NE(session, nullptr);
  for (float x : {1.0f, 2.0f, 3.0f}) {
    Status s = session->Run({{"x", MakeScalar<float>(x)}}, {}, {"enqueue"}, nullptr);
    ASSERT_TRUE(s.ok()) << s;
  }
  for (float x : {1.0f, 2.0f, 3.0f}) {
    std::vector<Tensor> out;
    Status s = session->Run({}, {"dequeue:0"}, {}, &out);
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ(Values<float>(out[0])[0], x + 1000);
  }
}

// A blocked step (a dequeue from the empty queue on ps) times out everywhere; the session and
// the queue work for the next step.
TEST(Distributed, TimedOutStepIsAbortedEverywhereAndTheSessionGoesOn) {
  auto session = NewSession(QueueGraph());
  ASSERT_NE(session, nullptr);
  RunOptions options;
  options.timeout_ms = 300;
  std::vector<Tensor> out;
  Status s = session->Run(options, {}, {"dequeue:0"}, {}, &out, nullptr);
  EXPECT_EQ(s.code(), Code::kDeadlineExceeded) << s;
  ASSERT_TRUE(session->Run({{"x", MakeScalar<float>(5)}}, {}, {"enqueue"}, nullptr).ok());
  s = session->Run(options, {}, {"dequeue:0"}, {}, &out, nullptr);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(Values<float>(out[0])[0], 1005.0f);
}

// A kernel error on worker 1 reaches the client naming the task and the node, aborts the
// chief's pending receive, and the session stays usable.
TEST(Distributed, ErrorInAWorkersKernelNamesTheTaskAndNode) {
  GraphBuilder b;
  b.Placeholder("x", DT_FLOAT);
  b.Placeholder("shape", DT_INT32);
  b.Op("reshape", "Reshape", {"x", "shape"}, {{"T", F()}, {"Tshape", AttrValue::Type(DT_INT32)}},
       kWorker1);
  b.Op("y", "Neg", {"reshape"}, {{"T", F()}}, kChief);
  auto session = NewSession(b.graph());
  ASSERT_NE(session, nullptr);
  std::vector<Tensor> out;
  const Tensor x = MakeVector<float>({1, 2, 3, 4, 5, 6});
  Status s = session->Run({{"x", x}, {"shape", MakeVector<int32_t>({4, 2})}}, {"y:0"}, {}, &out);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("/job:worker/replica:0/task:1"), std::string::npos) << s;
  EXPECT_NE(s.message().find("reshape"), std::string::npos) << s;
  s = session->Run({{"x", x}, {"shape", MakeVector<int32_t>({3, 2})}}, {"y:0"}, {}, &out);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(out[0].shape(), TensorShape({3, 2}));
}

// Random nested loops and conditionals whose arithmetic is scattered over the three tasks.
TEST(Distributed, RandomLoopsAndCondsAcrossTasksMatchDirectEvaluation) {
  for (uint32_t seed = 0; seed < 12; ++seed) {
    std::mt19937 rng(seed);
    const std::vector<Stmt> program = RandomProgram(rng, 0);
    Emitter emitter(&rng, {kChief, kPs, kWorker1}, kChief);
    emitter.builder().Placeholder("x", DT_FLOAT);
    const std::string y = emitter.Emit(program, "x", "");
    auto session = NewSession(emitter.builder().graph());
    ASSERT_NE(session, nullptr);
    RunOptions options;
    options.timeout_ms = 60000;  // a lost dead signal would hang the step: fail instead
    for (float x : {-0.7f, 0.9f}) {
      std::vector<Tensor> out;
      Status s =
          session->Run(options, {{"x:0", MakeScalar<float>(x)}}, {y + ":0"}, {}, &out, nullptr);
      ASSERT_TRUE(s.ok()) << "seed " << seed << ": " << s;
      EXPECT_NEAR(Values<float>(out[0])[0], Evaluate(program, x), 1e-4)
          << "seed " << seed << ", x " << x;
    }
  }
}

// Concurrent steps of one session, each with its own step id across the cluster.
TEST(Distributed, ConcurrentStepsDoNotMix) {
  auto session = NewSession(ModelParallel(true));
  ASSERT_NE(session, nullptr);
  auto local = NewSession(ModelParallel(false), &TestRuntime());
  ASSERT_NE(local, nullptr);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 5; ++i) {
        std::vector<float> x(4 * 16, static_cast<float>(t * 10 + i) / 50);
        const Tensor xt = MakeTensor<float>({4, 16}, x);
        std::vector<Tensor> got, want;
        if (!session->Run({{"x", xt}}, {"y:0"}, {}, &got).ok() ||
            !local->Run({{"x", xt}}, {"y:0"}, {}, &want).ok() ||
            Values<float>(got[0]) != Values<float>(want[0]))
          ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
}

// A second Runtime of the chief opens its own session with the workers, beside the first.
TEST(Distributed, ASecondRuntimeOpensItsOwnSessionWithTheWorkers) {
  auto config = Config::FromString(ClusterYaml(), "second");
  ASSERT_TRUE(config.ok()) << config.status();
  auto rt = Runtime::Create(*config);
  ASSERT_TRUE(rt.ok()) << rt.status();
  auto a = NewSession(ModelParallel(true), rt->get());
  ASSERT_NE(a, nullptr);
  auto b = NewSession(ModelParallel(true));
  ASSERT_NE(b, nullptr);
  const Tensor xt = MakeTensor<float>({4, 16}, std::vector<float>(64, 0.25f));
  std::vector<Tensor> from_a, from_b;
  ASSERT_TRUE(a->Run({{"x", xt}}, {"y:0"}, {}, &from_a).ok());
  ASSERT_TRUE(b->Run({{"x", xt}}, {"y:0"}, {}, &from_b).ok());
  EXPECT_EQ(Values<float>(from_a[0]), Values<float>(from_b[0]));
}

// Run alone (ctest distributed.heartbeat_failure): it leaves the cluster with a dead task.
// Worker 1 stops (SIGSTOP) in the middle of the run: the chief's heartbeats find it silent, and
// the step waiting for it fails with an error naming the task instead of waiting for ever; steps
// that do not need it go on; steps that do fail at once.
TEST(DistributedFailure, ASilentTaskIsDetectedAndItsStepsFail) {
  GraphBuilder b;
  b.Placeholder("x", DT_FLOAT);
  b.Op("far", "Neg", {"x"}, {{"T", F()}}, kWorker1);
  b.Op("near", "Neg", {"x"}, {{"T", F()}}, kPs);
  auto session = NewSession(b.graph());
  ASSERT_NE(session, nullptr);
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({{"x", MakeScalar<float>(2)}}, {"far:0"}, {}, &out).ok());
  // "host vm, pid 4711": the transport knows where each task runs.
  internal::ProcessGroup* group = g_runtime->cluster()->group();
  const std::string where = group->transport()->DescribePeer(group->RankOfDevice(kWorker1));
  const size_t at = where.find("pid ");
  ASSERT_NE(at, std::string::npos) << where;
  const pid_t pid = static_cast<pid_t>(std::stol(where.substr(at + 4)));
  ASSERT_EQ(kill(pid, SIGSTOP), 0);
  Status s = session->Run({{"x", MakeScalar<float>(3)}}, {"far:0"}, {}, &out);
  EXPECT_EQ(s.code(), Code::kUnavailable) << s;
  EXPECT_NE(s.message().find("/job:worker/replica:0/task:1"), std::string::npos) << s;
  EXPECT_NE(s.message().find("did not answer"), std::string::npos) << s;
  s = session->Run({{"x", MakeScalar<float>(4)}}, {"near:0"}, {}, &out);
  EXPECT_TRUE(s.ok()) << s;
  s = session->Run({{"x", MakeScalar<float>(5)}}, {"far:0"}, {}, &out);
  EXPECT_EQ(s.code(), Code::kUnavailable) << s;
  kill(pid, SIGCONT);  // so that the job ends cleanly
}

}  // namespace
}  // namespace cfx

int main(int argc, char** argv) {
  return cfx::test::RunClusterTests(argc, argv, cfx::ClusterYaml(), "distributed_test",
                                    &cfx::g_runtime);
}
