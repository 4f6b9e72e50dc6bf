// Collective ops and data-parallel training across real processes: run under mpirun with 3
// ranks (ctest distributed.collectives). The cluster is /job:worker/task:0 (the chief, which runs
// these tests), task:1 and task:2; the other ranks serve as workers inside Runtime::Create. Every
// result is checked against values computed here or against the same model in one process.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <random>
#include <set>
#include <string>

#include "cluster_test_main.h"
#include "conflux/cc/client_session.h"
#include "conflux/cc/control_flow.h"
#include "conflux/cc/distributed.h"
#include "conflux/cc/ops/standard_ops.h"
#include "conflux/cc/optimizers.h"
#include "conflux/cc/variables.h"
#include "conflux/config.h"
#include "conflux/runtime.h"
#include "conflux/session.h"
#include "control_flow_builders.h"
#include "graph_builder.h"
#include "kernel_test_util.h"
#include "replica_model.h"

namespace cfx {
namespace {

using namespace test;  // NOLINT

const std::string kTask[3] = {"/job:worker/replica:0/task:0/device:CPU:0",
                              "/job:worker/replica:0/task:1/device:CPU:0",
                              "/job:worker/replica:0/task:2/device:CPU:0"};

Runtime* g_runtime = nullptr;

// fusion_bytes 64: the data-parallel model's gradients (8 + 24 + 12 + 48 bytes, last first)
// make two buckets.
std::string ClusterYaml() {
  return ClusterYamlHead() + R"(cluster:
  transport: mpi
  fusion_bytes: 64
  jobs:
    - {name: worker, tasks: 3}
)";
}

std::unique_ptr<Session> NewSession(const GraphDef& g, Runtime* rt = nullptr) {
  auto s = Session::Create(rt ? rt : g_runtime, g);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? std::move(*s) : nullptr;
}

// The int32 scalar consts a collective node reads, on `device`.
std::vector<std::string> GroupInputs(GraphBuilder* b, const std::string& prefix, int size,
                                     int key, int instance, const std::string& device) {
  b->Const(prefix + "/size", MakeScalar<int32_t>(size), device);
  b->Const(prefix + "/key", MakeScalar<int32_t>(key), device);
  b->Const(prefix + "/instance", MakeScalar<int32_t>(instance), device);
  return {prefix + "/size", prefix + "/key", prefix + "/instance"};
}

// A CollectiveReduceV2 node `name` of `input` on `device`.
void Reduce(GraphBuilder* b, const std::string& name, const std::string& input, DataType t,
            int size, int key, int instance, const std::string& merge, const std::string& final_op,
            const std::string& device) {
  std::vector<std::string> in = {input};
  for (const std::string& g : GroupInputs(b, name, size, key, instance, device)) in.push_back(g);
  b->Op(name, "CollectiveReduceV2", in,
        {{"T", Type(t)}, {"merge_op", AttrValue::String(merge)},
         {"final_op", AttrValue::String(final_op)}},
        device);
}

TEST(Collectives, AllReduceOverThreeTasks) {
  GraphBuilder b;
  const std::vector<std::pair<std::string, std::string>> kinds = {
      {"Add", "Id"}, {"Add", "Div"}, {"Max", "Id"}, {"Min", "Id"}, {"Mul", "Id"}};
  std::vector<std::string> fetches;
  for (int t = 0; t < 3; ++t) {
    const std::string x = "x" + std::to_string(t);
    b.Const(x, MakeVector<float>({t + 1.0f, -2.0f * t, 0.5f * t + 1}), kTask[t]);
    b.Const(x + "i", MakeVector<int64_t>({t * 1000000000000LL, -t}), kTask[t]);
    b.Const(x + "d", MakeVector<double>({0.1 * t}), kTask[t]);
    for (size_t k = 0; k < kinds.size(); ++k) {
      const std::string name = "r" + std::to_string(k) + "_" + std::to_string(t);
      Reduce(&b, name, x, DT_FLOAT, 3, 7, static_cast<int>(k), kinds[k].first, kinds[k].second,
             kTask[t]);
      fetches.push_back(name + ":0");
    }
    Reduce(&b, "ri_" + std::to_string(t), x + "i", DT_INT64, 3, 7, 10, "Add", "Id", kTask[t]);
    Reduce(&b, "rd_" + std::to_string(t), x + "d", DT_DOUBLE, 3, 7, 11, "Add", "Id", kTask[t]);
    fetches.push_back("ri_" + std::to_string(t) + ":0");
    fetches.push_back("rd_" + std::to_string(t) + ":0");
  }
  auto session = NewSession(b.graph());
  ASSERT_NE(session, nullptr);
  for (int run = 0; run < 3; ++run) {
    std::vector<Tensor> out;
    Status s = session->Run({}, fetches, {}, &out);
    ASSERT_TRUE(s.ok()) << s;
    const std::vector<std::vector<float>> want = {
        {6, -6, 4.5f}, {2, -2, 1.5f}, {3, 0, 2}, {1, -4, 1}, {6, 0, 3}};
    const size_t per_task = kinds.size() + 2;
    for (int t = 0; t < 3; ++t) {
      for (size_t k = 0; k < kinds.size(); ++k)
        EXPECT_EQ(Values<float>(out[t * per_task + k]), want[k])
            << kinds[k].first << "/" << kinds[k].second << " on task " << t;
      EXPECT_EQ(Values<int64_t>(out[t * per_task + kinds.size()]),
                (std::vector<int64_t>{3000000000000LL, -3}));
      EXPECT_DOUBLE_EQ(Values<double>(out[t * per_task + kinds.size() + 1])[0], 0.0 + 0.1 + 0.2);
    }
  }
}

TEST(Collectives, GatherConcatenatesInRankOrderAndBroadcastReachesEveryTask) {
  GraphBuilder b;
  std::vector<std::string> fetches;
  for (int t = 0; t < 3; ++t) {
    const std::string d = kTask[t], x = "x" + std::to_string(t);
    b.Const(x, MakeTensor<float>({1, 2}, {10.0f * t, 10.0f * t + 1}), d);
    auto g = GroupInputs(&b, "g" + std::to_string(t), 3, 9, 1, d);
    b.Op("gather" + std::to_string(t), "CollectiveGatherV2", {x, g[0], g[1], g[2]},
         {{"T", Type(DT_FLOAT)}}, d);
    fetches.push_back("gather" + std::to_string(t) + ":0");
    // Task 1 broadcasts a bool matrix; the others receive it.
    auto c = GroupInputs(&b, "c" + std::to_string(t), 3, 9, 2, d);
    if (t == 1) {
      Tensor flags(DT_BOOL, TensorShape({2, 2}));
      for (int i = 0; i < 4; ++i) flags.data<bool>()[i] = i != 2;
      b.Const("flags", flags, d);
      b.Op("bcast1", "CollectiveBcastSendV2", {"flags", c[0], c[1], c[2]},
           {{"T", Type(DT_BOOL)}}, d);
    } else {
      b.Const("shape" + std::to_string(t), MakeVector<int32_t>({2, 2}), d);
      b.Op("bcast" + std::to_string(t), "CollectiveBcastRecvV2",
           {c[0], c[1], c[2], "shape" + std::to_string(t)}, {{"T", Type(DT_BOOL)}}, d);
    }
    fetches.push_back("bcast" + std::to_string(t) + ":0");
  }
  auto session = NewSession(b.graph());
  ASSERT_NE(session, nullptr);
  std::vector<Tensor> out;
  Status s = session->Run({}, fetches, {}, &out);
  ASSERT_TRUE(s.ok()) << s;
  for (int t = 0; t < 3; ++t) {
    EXPECT_EQ(out[2 * t].shape(), TensorShape({3, 2}));
    EXPECT_EQ(Values<float>(out[2 * t]), (std::vector<float>{0, 1, 10, 11, 20, 21}));
    EXPECT_EQ(Values<bool>(out[2 * t + 1]), (std::vector<bool>{true, true, false, true}));
  }
}

// Forty reductions made in a different order on each task (and on a group of two of the three
// tasks) still pair up: every task issues them in instance_key order.
TEST(Collectives, ManyInstancesPairUpWhateverTheGraphOrder) {
  GraphBuilder b;
  std::mt19937 rng(3);
  std::vector<std::string> fetches;
  constexpr int kInstances = 40;
  for (int t : {0, 2}) {
    std::vector<int> order(kInstances);
    for (int i = 0; i < kInstances; ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    for (int i : order) {
      const std::string x = "x" + std::to_string(t) + "_" + std::to_string(i);
      std::vector<float> v(1 + i * 37);
      for (size_t j = 0; j < v.size(); ++j) v[j] = static_cast<float>(t * 1000 + i + j);
      b.Const(x, MakeVector<float>(v), kTask[t]);
      Reduce(&b, "r" + x, x, DT_FLOAT, 2, 4, 100 + i, "Add", "Id", kTask[t]);
    }
  }
  for (int t : {0, 2})
    for (int i = 0; i < kInstances; ++i)
      fetches.push_back("rx" + std::to_string(t) + "_" + std::to_string(i) + ":0");
  auto session = NewSession(b.graph());
  ASSERT_NE(session, nullptr);
  for (int run = 0; run < 2; ++run) {
    std::vector<Tensor> out;
    Status s = session->Run({}, fetches, {}, &out);
    ASSERT_TRUE(s.ok()) << s;
    for (int k = 0; k < 2 * kInstances; ++k) {
      const int i = k % kInstances;
      std::vector<float> got = Values<float>(out[k]);
      ASSERT_EQ(got.size(), static_cast<size_t>(1 + i * 37));
      for (size_t j = 0; j < got.size(); ++j)
        ASSERT_EQ(got[j], static_cast<float>(2000 + 2 * (i + j))) << "instance " << i;
    }
  }
}

TEST(Collectives, MembersWithAnotherShapeFailTheStepOnEveryMember) {
  GraphBuilder b;
  for (int t = 0; t < 3; ++t) {
    b.Placeholder("x" + std::to_string(t), DT_FLOAT).device = kTask[t];
    Reduce(&b, "r" + std::to_string(t), "x" + std::to_string(t), DT_FLOAT, 3, 5, 1, "Add", "Id",
           kTask[t]);
  }
  auto session = NewSession(b.graph());
  ASSERT_NE(session, nullptr);
  auto feeds = [](int64_t n2) {
    return std::vector<std::pair<std::string, Tensor>>{
        {"x0", MakeVector<float>({1, 2})},
        {"x1", MakeVector<float>({3, 4})},
        {"x2", MakeVector<float>(std::vector<float>(n2, 1.0f))}};
  };
  std::vector<Tensor> out;
  Status s = session->Run(feeds(3), {"r0:0", "r1:0", "r2:0"}, {}, &out);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("disagree on the dtype or shape"), std::string::npos) << s;
  // The members agreed that they disagree: the group is still usable.
  s = session->Run(feeds(2), {"r0:0", "r1:0", "r2:0"}, {}, &out);
  ASSERT_TRUE(s.ok()) << s;
  for (int t = 0; t < 3; ++t) EXPECT_EQ(Values<float>(out[t]), (std::vector<float>{5, 7}));
}

Status RunError(const GraphDef& g, const std::vector<std::string>& fetches,
                Runtime* rt = nullptr,
                const std::vector<std::pair<std::string, Tensor>>& feeds = {}) {
  auto session = Session::Create(rt ? rt : g_runtime, g);
  if (!session.ok()) return session.status();
  std::vector<Tensor> out;
  return (*session)->Run(feeds, fetches, {}, &out);
}

TEST(Collectives, MisconfiguredGroupsAreRejectedBeforeTheStepRuns) {
  {  // group_size 3, members on two tasks
    GraphBuilder b;
    for (int t = 0; t < 2; ++t) {
      b.Const("x" + std::to_string(t), MakeVector<float>({1}), kTask[t]);
      Reduce(&b, "r" + std::to_string(t), "x" + std::to_string(t), DT_FLOAT, 3, 1, 1, "Add", "Id",
             kTask[t]);
    }
    Status s = RunError(b.graph(), {"r0:0", "r1:0"});
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
    EXPECT_NE(s.message().find("group 1 has group_size 3 but its members"), std::string::npos)
        << s;
  }
  {  // two members of an instance on one task
    GraphBuilder b;
    b.Const("x", MakeVector<float>({1}), kTask[0]);
    Reduce(&b, "a", "x", DT_FLOAT, 2, 1, 1, "Add", "Id", kTask[0]);
    Reduce(&b, "b", "x", DT_FLOAT, 2, 1, 1, "Add", "Id", kTask[0]);
    b.Const("y", MakeVector<float>({1}), kTask[1]);
    Reduce(&b, "c", "y", DT_FLOAT, 2, 1, 1, "Add", "Id", kTask[1]);
    Status s = RunError(b.graph(), {"a:0", "b:0", "c:0"});
    EXPECT_NE(s.message().find("are on the same task"), std::string::npos) << s;
  }
  {  // a group_key that is not a constant
    GraphBuilder b;
    b.Const("x", MakeVector<float>({1}), kTask[0]);
    b.Placeholder("key", DT_INT32).device = kTask[0];
    b.Const("n", MakeScalar<int32_t>(1), kTask[0]);
    b.Op("r", "CollectiveReduceV2", {"x", "n", "key", "n"},
         {{"T", Type(DT_FLOAT)}, {"merge_op", AttrValue::String("Add")},
          {"final_op", AttrValue::String("Id")}},
         kTask[0]);
    Status s = RunError(b.graph(), {"r:0"}, nullptr, {{"key", MakeScalar<int32_t>(1)}});
    EXPECT_NE(s.message().find("group_key must be an int32 scalar from a Const node"),
              std::string::npos)
        << s;
  }
  {  // a collective in a conditional branch
    GraphBuilder b;
    b.Const("x", MakeVector<float>({1}), kTask[0]);
    b.Const("p", MakeScalar<bool>(true), kTask[0]);
    b.Op("sw", "Switch", {"x", "p"}, {{"T", Type(DT_FLOAT)}}, kTask[0]);
    Reduce(&b, "r", "sw:1", DT_FLOAT, 1, 1, 1, "Add", "Id", kTask[0]);
    Status s = RunError(b.graph(), {"r:0"});
    EXPECT_NE(s.message().find("conditional branch"), std::string::npos) << s;
  }
}

TEST(Collectives, AGroupOfOneInOneProcessPassesTheValueOn) {
  GraphBuilder b;
  b.Const("x", MakeVector<float>({1, 2}));
  Reduce(&b, "mean", "x", DT_FLOAT, 1, 1, 1, "Add", "Div", "");
  std::vector<Tensor> out;
  auto session = NewSession(b.graph(), &TestRuntime());
  ASSERT_NE(session, nullptr);
  ASSERT_TRUE(session->Run({}, {"mean:0"}, {}, &out).ok());
  EXPECT_EQ(Values<float>(out[0]), (std::vector<float>{1, 2}));
  // Two members in one process cannot form a group.
  GraphBuilder two;
  two.Const("x", MakeVector<float>({1}));
  Reduce(&two, "a", "x", DT_FLOAT, 2, 1, 1, "Add", "Id", "");
  Reduce(&two, "b", "x", DT_FLOAT, 2, 1, 2, "Add", "Id", "");
  Status s = RunError(two.graph(), {"a:0", "b:0"}, &TestRuntime());
  EXPECT_NE(s.message().find("one member per task"), std::string::npos) << s;
}

// An all-reduce (sum) of `x` in group 5 over the three tasks.
Output Sum(const Scope& s, const Output& x, int instance, const std::string& merge = "Add") {
  return ops::CollectiveReduceV2(s, x, 3, 5, instance, {}, merge, "Id");
}

// While loops whose bodies make two all-reduces per task, one of which depends neither on the
// other nor on the previous iteration's (so iterations running at once would issue them in
// different orders on different tasks); one all-reduce feeds the loops and one reads their
// results. `one_loop`: a single loop on task 0 whose body runs on all three tasks (a control
// loop in each partition); else a loop of its own per task. The session runs such loops one
// iteration at a time, as blocks between the outer calls; the results follow the recurrence
// computed here.
void CheckAllReducesInLoops(bool one_loop) {
  constexpr int kIterations = 4;
  const float factor[3] = {0.5f, 0.25f, 0.125f};
  Scope root = Scope::NewRootScope(g_runtime);
  std::vector<Scope> task;
  Output pre[3], weights[3];
  for (int t = 0; t < 3; ++t) {
    task.push_back(root.NewSubScope("task" + std::to_string(t)).WithDevice(kTask[t]));
    pre[t] = Sum(task[t], ops::Const(task[t], {t + 1.0f, 2.0f * t}), 1);
    weights[t] = ops::Const(task[t], {t + 1.0f, 1.0f, -1.0f * t});
  }
  // Loop variables: the iteration, then (a, b) of each task in the loop.
  auto cond = [&](const Scope& c, const std::vector<Output>& v, Output* pred) {
    *pred = ops::Less(c, v[0], kIterations);
    return c.status();
  };
  auto body = [&](const std::vector<int>& tasks) {
    return [&, tasks](const Scope& b, const std::vector<Output>& v, std::vector<Output>* next) {
      next->assign(1, ops::AddV2(b, v[0], 1));
      for (size_t k = 0; k < tasks.size(); ++k) {
        const int t = tasks[k];
        Scope on = b.WithDevice(kTask[t]);
        Output i = ops::Cast(on, v[0], DT_FLOAT);
        next->push_back(ops::Mul(on, Sum(on, v[1 + 2 * k], 2), factor[t]));
        next->push_back(ops::AddV2(on, v[2 + 2 * k], Sum(on, ops::Mul(on, i, weights[t]), 3)));
      }
      return b.status();
    };
  };
  auto start = [&](const Scope& s, const std::vector<int>& tasks) {
    std::vector<Output> vars = {ops::Const(s, 0)};
    for (int t : tasks) {
      vars.push_back(pre[t]);
      vars.push_back(ops::Const(task[t], {0.0f, 0.0f, 0.0f}));
    }
    return vars;
  };
  WhileLoopOptions options;
  options.parallel_iterations = 10;
  Output a[3], b[3];
  for (int t = 0; t < 3; ++t) {
    if (one_loop && t > 0) break;
    const std::vector<int> tasks = one_loop ? std::vector<int>{0, 1, 2} : std::vector<int>{t};
    std::vector<Output> out;
    Status st = WhileLoop(task[t], start(task[t], tasks), cond, body(tasks), &out, options);
    ASSERT_TRUE(st.ok()) << st;
    for (size_t k = 0; k < tasks.size(); ++k) {
      a[tasks[k]] = out[1 + 2 * k];
      b[tasks[k]] = out[2 + 2 * k];
    }
  }
  std::vector<Output> fetches;
  for (int t = 0; t < 3; ++t) fetches.insert(fetches.end(), {Sum(task[t], a[t], 4), a[t], b[t]});
  ASSERT_TRUE(root.ok()) << root.status();
  // The recurrence: a_t <- (sum over tasks of a) * factor_t, from a = pre = {6, 6} everywhere.
  std::vector<float> want_a[3];
  for (int t = 0; t < 3; ++t) want_a[t] = {6, 6};
  for (int k = 0; k < kIterations; ++k) {
    std::vector<float> sum(2, 0.0f);
    for (int t = 0; t < 3; ++t)
      for (int j = 0; j < 2; ++j) sum[j] += want_a[t][j];
    for (int t = 0; t < 3; ++t)
      for (int j = 0; j < 2; ++j) want_a[t][j] = sum[j] * factor[t];
  }
  std::vector<float> post(2, 0.0f);
  for (int t = 0; t < 3; ++t)
    for (int j = 0; j < 2; ++j) post[j] += want_a[t][j];
  // b = sum over iterations i of i * (sum over tasks of weights) = 6 * {6, 3, -3}.
  const std::vector<float> want_b = {36, 18, -18};
  ClientSession session(root, g_runtime);
  for (int run = 0; run < 3; ++run) {
    std::vector<Tensor> out;
    RunMetadata metadata;
    Status st = session.Run(RunOptions(), {}, fetches, {}, &out, &metadata);
    ASSERT_TRUE(st.ok()) << st;
    for (int t = 0; t < 3; ++t) {
      EXPECT_EQ(Values<float>(out[3 * t]), post) << "task " << t;
      EXPECT_EQ(Values<float>(out[3 * t + 1]), want_a[t]) << "task " << t;
      EXPECT_EQ(Values<float>(out[3 * t + 2]), want_b) << "task " << t;
    }
    std::set<std::string> devices;
    for (const auto& [device, part] : metadata.partition_graphs)
      for (const NodeDef& n : part.node)
        if (n.op == "Enter") {
          devices.insert(device);
          EXPECT_EQ(n.attr.at("parallel_iterations").i, 1) << n.name << " on " << device;
        }
    EXPECT_EQ(devices.size(), 3u);  // every task runs a loop (or its control loop)
  }
}

TEST(Collectives, AllReducesInsideWhileLoopsPairUpIterationByIteration) {
  CheckAllReducesInLoops(false);
}

TEST(Collectives, AllReducesInsideALoopAcrossTasksPairUpIterationByIteration) {
  CheckAllReducesInLoops(true);
}

// The loop runs while any task still wants another iteration: its predicate is an all-reduce
// (Max) of each task's own wish, so every task runs it as often as the longest, and the
// predicate's all-reduce pairs up in every test, the last one too.
TEST(Collectives, ALoopWhosePredicateIsAnAllReduceRunsAsOftenOnEveryTask) {
  const int wanted[3] = {2, 5, 3};
  Scope root = Scope::NewRootScope(g_runtime);
  std::vector<Output> fetches;
  for (int t = 0; t < 3; ++t) {
    Scope s = root.NewSubScope("task" + std::to_string(t)).WithDevice(kTask[t]);
    std::vector<Output> out;
    Status st = WhileLoop(
        s, {ops::Const(s, 0), ops::Const(s, 0.0f)},
        [&](const Scope& c, const std::vector<Output>& v, Output* pred) {
          Output mine = ops::Cast(c, ops::Less(c, v[0], wanted[t]), DT_FLOAT);
          *pred = ops::Greater(c, Sum(c, mine, 1, "Max"), 0.0f);
          return c.status();
        },
        [&](const Scope& b, const std::vector<Output>& v, std::vector<Output>* next) {
          *next = {ops::AddV2(b, v[0], 1), ops::AddV2(b, v[1], Sum(b, ops::Const(b, 1.0f), 2))};
          return b.status();
        },
        &out);
    ASSERT_TRUE(st.ok()) << st;
    fetches.push_back(out[0]);
    fetches.push_back(out[1]);
  }
  ASSERT_TRUE(root.ok()) << root.status();
  ClientSession session(root, g_runtime);
  std::vector<Tensor> out;
  Status st = session.Run({}, fetches, &out);
  ASSERT_TRUE(st.ok()) << st;
  for (int t = 0; t < 3; ++t) {
    EXPECT_EQ(out[2 * t].at<int32_t>(0), 5) << "task " << t;
    EXPECT_EQ(out[2 * t + 1].at<float>(0), 15.0f) << "task " << t;  // 5 iterations x 3 tasks
  }
}

// A while loop that replaces x by Sum(x, instance) `times` times; its final x.
Output RepeatedSum(const Scope& s, const Output& x, int times, int instance) {
  return ForLoop(s, times, x, [instance](const Scope& b, const Output&, const Output& v) {
    return Sum(b, v, instance);
  });
}

// Collectives inside loops that could not pair up are rejected before the step runs.
TEST(Collectives, LoopsThatWouldMisorderCollectivesAreRejected) {
  // Builds each task's part of a graph with `build`, runs it: the error.
  auto run = [](const std::function<Output(const Scope&, int)>& build) {
    Scope root = Scope::NewRootScope(g_runtime);
    std::vector<Output> fetches;
    for (int t = 0; t < 3; ++t)
      fetches.push_back(
          build(root.NewSubScope("task" + std::to_string(t)).WithDevice(kTask[t]), t));
    ClientSession session(root, g_runtime);
    std::vector<Tensor> out;
    Status st = session.Run({}, fetches, &out);
    EXPECT_EQ(st.code(), Code::kInvalidArgument) << st;
    return st;
  };
  // Task 0 reduces inside a loop what tasks 1 and 2 reduce outside.
  Status st = run([](const Scope& s, int t) {
    Output x = ops::Const(s, {1.0f});
    return t > 0 ? Sum(s, x, 1) : RepeatedSum(s, x, 1, 1);
  });
  EXPECT_NE(st.message().find("do not sit in the same while loops"), std::string::npos) << st;
  EXPECT_NE(st.message().find("(5:1)"), std::string::npos) << st;
  // Instance 3 feeds a loop whose body holds instance 2: the loop's block comes first.
  st = run(
      [](const Scope& s, int) { return RepeatedSum(s, Sum(s, ops::Const(s, {1.0f}), 3), 2, 2); });
  EXPECT_NE(st.message().find("feeds a while loop whose first collective comes before it"),
            std::string::npos)
      << st;

  // A loop in one process whose body holds groups of one: "in_branch" in a Cond, "in_body" on
  // the loop variable, and "invariant" on values from outside the loop only (which the builder
  // ties to the loop's body with a control edge, as TensorFlow's does).
  Scope root = Scope::NewRootScope(&TestRuntime());
  Output outside = ops::Const(root, {0.5f});
  Output size = ops::Const(root, 1), key = ops::Const(root, 9), instance = ops::Const(root, 3);
  Output result = ForLoop(
      root, 3, ops::Const(root, {1.0f}), [&](const Scope& b, const Output& i, const Output& v) {
        Output merged = IfElse(
            b, ops::Less(b, i, 1),
            [&](const Scope& y) {
              return ops::CollectiveReduceV2(y.WithOpName("in_branch"), v, 1, 9, 2, {}, "Add",
                                             "Id");
            },
            [&](const Scope& n) { return ops::Identity(n, v); });
        Output body =
            ops::CollectiveReduceV2(b.WithOpName("in_body"), merged, 1, 9, 1, {}, "Add", "Id");
        Output invariant = ops::CollectiveReduceV2(b.WithOpName("invariant"), outside, size, key,
                                                   instance, {}, "Add", "Id");
        return ops::AddV2(b, body, invariant);
      });
  ASSERT_TRUE(root.ok()) << root.status();
  GraphDef g;
  ASSERT_TRUE(root.ToGraphDef(&g).ok()) << root.status();
  auto node = [&](const std::string& name) -> NodeDef& {
    for (NodeDef& n : g.node)
      if (n.name.size() >= name.size() &&
          n.name.compare(n.name.size() - name.size(), name.size(), name) == 0)
        return n;
    ADD_FAILURE() << "no node " << name;
    return g.node[0];
  };
  {  // a collective in a conditional branch inside the loop
    Status s = RunError(g, {result.name()}, &TestRuntime());
    EXPECT_NE(s.message().find("in_branch"), std::string::npos) << s;
    EXPECT_NE(s.message().find("conditional branch"), std::string::npos) << s;
  }
  // Without the branch's collective the loop runs: groups of one pass their values on.
  NodeDef& branch = node("/in_branch");
  branch.op = "Identity";
  branch.input.resize(1);
  branch.attr = {{"T", Type(DT_FLOAT)}};
  {
    auto session = NewSession(g, &TestRuntime());
    ASSERT_NE(session, nullptr);
    std::vector<Tensor> values;
    Status s = session->Run({}, {result.name()}, {}, &values);
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ(Values<float>(values[0]), (std::vector<float>{2.5f}));  // 1 + 3 x 0.5
  }
  // Without its control edge from the body (a GraphDef from another builder may lack it),
  // "invariant" would also run in the test that ends the loop.
  NodeDef& invariant = node("/invariant");
  std::vector<std::string> data;
  for (const std::string& in : invariant.input)
    if (in[0] != '^') data.push_back(in);
  ASSERT_LT(data.size(), invariant.input.size());
  invariant.input = data;
  Status s = RunError(g, {result.name()}, &TestRuntime());
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("invariant"), std::string::npos) << s;
  EXPECT_NE(s.message().find("neither runs in its body"), std::string::npos) << s;
}

// Nested loops: each task's outer loop (2 iterations) runs an inner loop of three all-reduces,
// then an all-reduce of the inner loop's result and one that depends only on the outer
// iteration. The session orders the inner loop as a block within each outer iteration and runs
// both loops one iteration at a time.
TEST(Collectives, AllReducesInNestedLoopsPairUp) {
  const float factor[3] = {1.0f, 0.5f, 0.25f};
  Scope root = Scope::NewRootScope(g_runtime);
  std::vector<Output> fetches;
  for (int t = 0; t < 3; ++t) {
    Scope s = root.NewSubScope("task" + std::to_string(t)).WithDevice(kTask[t]);
    Output w = ops::Const(s, t + 1.0f);
    std::vector<Output> out;
    Status st = WhileLoop(
        s, {ops::Const(s, 0), ops::Const(s, {t + 1.0f}), ops::Const(s, 0.0f)},
        [](const Scope& c, const std::vector<Output>& v, Output* pred) {
          *pred = ops::Less(c, v[0], 2);
          return c.status();
        },
        [&](const Scope& b, const std::vector<Output>& v, std::vector<Output>* next) {
          Output inner = RepeatedSum(b, v[1], 3, 2);
          Output z = Sum(b, ops::Mul(b, ops::Cast(b, v[0], DT_FLOAT), w), 4);
          *next = {ops::AddV2(b, v[0], 1), ops::Mul(b, Sum(b, inner, 3), factor[t]),
                   ops::AddV2(b, v[2], z)};
          return b.status();
        },
        &out);
    ASSERT_TRUE(st.ok()) << st;
    fetches.push_back(out[1]);
    fetches.push_back(out[2]);
  }
  ASSERT_TRUE(root.ok()) << root.status();
  float x[3] = {1, 2, 3};
  for (int j = 0; j < 2; ++j) {
    for (int k = 0; k < 4; ++k) {  // three in the inner loop, one after it
      const float sum = x[0] + x[1] + x[2];
      for (int t = 0; t < 3; ++t) x[t] = k < 3 ? sum : sum * factor[t];
    }
  }
  ClientSession session(root, g_runtime);
  for (int run = 0; run < 2; ++run) {
    std::vector<Tensor> out;
    Status st = session.Run({}, fetches, &out);
    ASSERT_TRUE(st.ok()) << st;
    for (int t = 0; t < 3; ++t) {
      EXPECT_EQ(Values<float>(out[2 * t]), std::vector<float>{x[t]}) << "task " << t;
      EXPECT_EQ(out[2 * t + 1].at<float>(0), 6.0f) << "task " << t;  // (0 + 1) x (1 + 2 + 3)
    }
  }
}

// Trains the model data-parallel over the three tasks of `rt`'s cluster for kSteps (replica r
// on its own batches, replica 0's initial values broadcast to the others) and one process on
// the three batches at once; returns (every replica's variables, the one process's).
constexpr int kSteps = 15;

std::pair<std::vector<std::vector<Tensor>>, std::vector<Tensor>> TrainBothWays(Runtime* rt) {
  std::vector<std::vector<Tensor>> values(3);
  std::vector<Tensor> want;
  Scope root = Scope::NewRootScope(rt);
  DataParallel dp(root);
  EXPECT_EQ(dp.num_replicas(), 3);
  std::vector<Replica> replicas;
  std::vector<Output> losses;
  for (int r = 0; r < 3; ++r) {
    replicas.push_back(BuildReplica(dp.ReplicaScope(r), 100 + r));  // different initial values
    losses.push_back(replicas.back().loss);
  }
  MomentumOptimizer momentum(0.05f, 0.9f);
  DistributedOptimizer opt(&momentum, dp);
  Operation train = opt.Minimize(root, losses, GlobalStep(root));
  Operation init = GlobalVariablesInitializer(root);
  Operation sync = dp.BroadcastVariables(root);
  EXPECT_TRUE(root.ok()) << root.status();
  ClientSession session(root, rt);
  EXPECT_TRUE(session.Run({}, {}, {init}, nullptr).ok());
  Status s = session.Run({}, {}, {sync}, nullptr);
  EXPECT_TRUE(s.ok()) << s;
  for (int step = 0; step < kSteps && s.ok(); ++step) {
    ClientSession::FeedType feeds;
    for (int r = 0; r < 3; ++r) {
      feeds.emplace_back(replicas[r].x, ReplicaX(step, 3, r));
      feeds.emplace_back(replicas[r].y, ReplicaY(step, 3, r));
    }
    s = session.Run(feeds, {}, {train}, nullptr);
    EXPECT_TRUE(s.ok()) << s;
  }
  for (int r = 0; r < 3; ++r) EXPECT_TRUE(session.Run({}, dp.Variables(r), &values[r]).ok());
  want = TrainOneProcess(3, kSteps);
  return {values, want};
}

// Three replicas on their own batches end bit-identical (replica 0's initial values broadcast to
// the others, the same averaged gradients applied everywhere), and equal to one process trained
// on the three batches at once.
TEST(DataParallel, ReplicasStayIdenticalAndMatchOneProcessOnTheWholeBatch) {
  {
    // fusion_bytes 64: two fused all-reduces per replica.
    Scope root = Scope::NewRootScope(g_runtime);
    DataParallel dp(root);
    EXPECT_EQ(dp.device(2), "/job:worker/replica:0/task:2");
    std::vector<Output> losses;
    for (int r = 0; r < 3; ++r) losses.push_back(BuildReplica(dp.ReplicaScope(r), r).loss);
    GradientDescentOptimizer sgd(0.1f);
    DistributedOptimizer opt(&sgd, dp);
    opt.Minimize(root, losses);
    GraphDef g;
    ASSERT_TRUE(root.ToGraphDef(&g).ok()) << root.status();
    int reductions = 0;
    for (const NodeDef& n : g.node) reductions += n.op == "CollectiveReduceV2";
    EXPECT_EQ(reductions, 2 * 3);
  }
  auto [values, want] = TrainBothWays(g_runtime);
  for (int r = 0; r < 3; ++r) {
    ASSERT_EQ(values[r].size(), 4u);
    for (size_t i = 0; i < 4; ++i)
      EXPECT_EQ(Values<float>(values[r][i]), Values<float>(values[0][i]))
          << "replica " << r << " variable " << i;
  }
  for (size_t i = 0; i < 4; ++i) ExpectTensorNear(want[i], values[0][i], 1e-5);
}

// cluster.compression: the replicas' batches (the feeds, "_arg_*") cross tasks as bfloat16
// (truncated) and the gradients are all-reduced as bfloat16; the replicas still end
// bit-identical, near the exact result. (The edges pattern keeps the fetched variables exact.)
TEST(DataParallel, CompressedTrainingKeepsReplicasIdentical) {
  std::string yaml = ClusterYaml();
  // min_bytes 0: this model's tensors are all below the default.
  yaml += "  compression: {mode: truncate16, edges: [\"_arg_*\"], min_bytes: 0}\n";
  auto config = Config::FromString(yaml, "collectives_test (compressed)");
  ASSERT_TRUE(config.ok()) << config.status();
  auto rt = Runtime::Create(*config);  // another session with the same cluster
  ASSERT_TRUE(rt.ok()) << rt.status();
  auto [values, want] = TrainBothWays(rt->get());
  for (int r = 0; r < 3; ++r)
    for (size_t i = 0; i < 4; ++i)
      EXPECT_EQ(Values<float>(values[r][i]), Values<float>(values[0][i]))
          << "replica " << r << " variable " << i;
  bool differs = false;
  for (size_t i = 0; i < 4; ++i) {
    ExpectTensorNear(want[i], values[0][i], 3e-2);
    differs |= Values<float>(want[i]) != Values<float>(values[0][i]);
  }
  EXPECT_TRUE(differs) << "16-bit transfers should leave a trace in the values";
}

}  // namespace
}  // namespace cfx

int main(int argc, char** argv) {
  return cfx::test::RunClusterTests(argc, argv, cfx::ClusterYaml(), "collectives_test", &cfx::g_runtime);
}
