// Parameter-server training across real processes: run under mpirun with 4 ranks (ctest
// distributed.parameter_server). The cluster is /job:ps/task:0 and task:1, which hold the
// variables, and /job:worker/task:0 (the chief, which runs these tests) and task:1, which hold
// the replicas; the other ranks serve inside Runtime::Create.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "conflux/cc/client_session.h"
#include "conflux/cc/distributed.h"
#include "conflux/cc/ops/standard_ops.h"
#include "conflux/cc/optimizers.h"
#include "conflux/cc/saver.h"
#include "conflux/cc/variables.h"
#include "conflux/runtime.h"
#include "cluster_test_main.h"
#include "kernel_test_util.h"

namespace cfx {
namespace {

using namespace test;  // NOLINT

Runtime* g_runtime = nullptr;

std::string ClusterYaml() {
  return ClusterYamlHead() + R"(cluster:
  transport: mpi
  chief: worker:0
  jobs:
    - {name: ps, tasks: 2}
    - {name: worker, tasks: 2}
)";
}

// y = x w + b with w [3, 1] and b [1]: a linear regression whose exact answer is known.
struct Linear {
  Output x, y, loss, w, b;
};

Linear BuildLinear(const Scope& s) {
  Linear m;
  m.x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT);
  m.y = ops::Placeholder(s.WithOpName("y"), DT_FLOAT);
  m.w = Variable(s.WithOpName("w"), PartialTensorShape({3, 1}), DT_FLOAT,
                 ops::Const(s, MakeTensor<float>({3, 1}, {0.5f, -0.5f, 0.25f})))
            .var;
  m.b = Variable(s.WithOpName("b"), PartialTensorShape({1}), DT_FLOAT,
                 ops::Const(s, MakeTensor<float>({1}, {0.0f})))
            .var;
  Output out = ops::Add(s, ops::MatMul(s, m.x, m.w), m.b);
  m.loss = ops::Mean(s, ops::Square(s, ops::Sub(s, out, m.y)), {0, 1});
  return m;
}

// Both replicas' models; returns their losses.
std::vector<Output> BuildReplicas(const ParameterServer& ps, std::vector<Linear>* models) {
  std::vector<Output> losses;
  for (int r = 0; r < ps.num_replicas(); ++r) {
    models->push_back(BuildLinear(ps.ReplicaScope(r)));
    losses.push_back(models->back().loss);
  }
  return losses;
}

const float kTrueW[3] = {2.0f, -1.0f, 0.5f};
constexpr float kTrueB = 0.75f;

// Rows of x, uniform in [-1, 1) from `seed`, and y = x w* + b*.
std::pair<Tensor, Tensor> Batch(int rows, int seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(rows * 3), y(rows);
  for (int i = 0; i < rows; ++i) {
    y[i] = kTrueB;
    for (int j = 0; j < 3; ++j) {
      x[i * 3 + j] = u(rng);
      y[i] += x[i * 3 + j] * kTrueW[j];
    }
  }
  return {MakeTensor<float>({rows, 3}, x), MakeTensor<float>({rows, 1}, y)};
}

// A step that waits (for a token, for gradients) fails after 60 s instead of hanging the test.
Status RunWaiting(ClientSession& session, const ClientSession::FeedType& feeds,
                  const Operation& op) {
  RunOptions options;
  options.timeout_ms = 60000;
  return session.Run(options, feeds, {}, {op}, nullptr, nullptr);
}

int64_t Scalar64(ClientSession& session, const Output& v) {
  std::vector<Tensor> out;
  EXPECT_TRUE(session.Run({}, {v}, &out).ok());
  return out.empty() ? -1 : Values<int64_t>(out[0])[0];
}

// Trains the model in one process for `steps` steps of Momentum(0.1, 0.9), each on batch 2i
// and batch 2i + 1 of 6 rows at once (what replicas 0 and 1 get in step i), and expects its
// w and b to be `got`.
void ExpectOneProcessOnBothBatches(int steps, const std::vector<Tensor>& got) {
  Scope one = Scope::NewRootScope(&TestRuntime());
  Linear single = BuildLinear(one);
  MomentumOptimizer plain(0.1f, 0.9f);
  Operation train = plain.Minimize(one, single.loss);
  Operation init = GlobalVariablesInitializer(one);
  ASSERT_TRUE(one.ok()) << one.status();
  ClientSession local(one, &TestRuntime());
  ASSERT_TRUE(local.Run({}, {}, {init}, nullptr).ok());
  for (int i = 0; i < steps; ++i) {
    auto [x0, y0] = Batch(6, 2 * i);
    auto [x1, y1] = Batch(6, 2 * i + 1);
    std::vector<float> xs = Values<float>(x0), ys = Values<float>(y0);
    for (float f : Values<float>(x1)) xs.push_back(f);
    for (float f : Values<float>(y1)) ys.push_back(f);
    ASSERT_TRUE(local.Run({{single.x, MakeTensor<float>({12, 3}, xs)},
                           {single.y, MakeTensor<float>({12, 1}, ys)}},
                          {}, {train}, nullptr)
                    .ok());
  }
  std::vector<Tensor> want;
  ASSERT_TRUE(local.Run({}, {single.w, single.b}, &want).ok());
  ASSERT_EQ(got.size(), 2u);
  ExpectTensorNear(want[0], got[0], 1e-5);
  ExpectTensorNear(want[1], got[1], 1e-5);
}

// Each variable lives on a ps task (the larger w on task 0, then b on the emptier task 1), and
// replica 1 gets replica 0's variables rather than copies of its own.
TEST(ParameterServer, VariablesLiveOnPsTasksAndReplicasShareThem) {
  Scope root = Scope::NewRootScope(g_runtime);
  ParameterServer ps(root);
  ASSERT_EQ(ps.num_replicas(), 2);
  EXPECT_EQ(ps.num_ps_tasks(), 2);
  EXPECT_EQ(ps.device(1), "/job:worker/replica:0/task:1");
  Linear m0 = BuildLinear(ps.ReplicaScope(0));
  Linear m1 = BuildLinear(ps.ReplicaScope(1));
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(m0.w.node()->def().device, "/job:ps/replica:0/task:0");
  EXPECT_EQ(m0.b.node()->def().device, "/job:ps/replica:0/task:1");
  EXPECT_TRUE(m1.w == m0.w);
  EXPECT_TRUE(m1.b == m0.b);
  EXPECT_EQ(root.GetCollection(kTrainableVariables).size(), 2u);
  EXPECT_EQ(ps.Variables().size(), 2u);
  EXPECT_EQ(m1.loss.node()->def().device, "/job:worker/replica:0/task:1");
  EXPECT_EQ(m1.loss.node()->name().rfind("replica_1/", 0), 0u) << m1.loss.node()->name();
}

// Asynchronous mode: a replica steps on its own (which a synchronous scheme could not), both
// replicas stepping at once from two threads never wait for each other, every step counts
// once, and the shared variables reach the regression's exact answer.
TEST(ParameterServer, AsyncReplicasStepIndependentlyAndLearnTheSharedModel) {
  Scope root = Scope::NewRootScope(g_runtime);
  ParameterServer ps(root);
  std::vector<Linear> m;
  std::vector<Output> losses = BuildReplicas(ps, &m);
  Output step = GlobalStep(root);
  GradientDescentOptimizer sgd(0.2f);
  std::vector<Operation> train = ps.MinimizeAsync(&sgd, losses, step);
  Operation init = GlobalVariablesInitializer(root);
  ASSERT_TRUE(root.ok()) << root.status();
  ASSERT_EQ(train.size(), 2u);
  GraphDef g;
  ASSERT_TRUE(root.ToGraphDef(&g).ok());
  int locked = 0;
  for (const NodeDef& n : g.node)
    if (n.op == "ApplyGradientDescent") locked += n.attr.at("use_locking").b;
  EXPECT_EQ(locked, 4) << "two variables updated by two replicas, all locked";

  ClientSession session(root, g_runtime);
  ASSERT_TRUE(session.Run({}, {}, {init}, nullptr).ok());
  for (int i = 0; i < 5; ++i) {
    auto [x, y] = Batch(8, 1000 + i);
    Status s = session.Run({{m[1].x, x}, {m[1].y, y}}, {}, {train[1]}, nullptr);
    ASSERT_TRUE(s.ok()) << s;
  }
  EXPECT_EQ(Scalar64(session, step), 5);
  constexpr int kSteps = 120;
  std::vector<Status> failed(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      for (int i = 0; i < kSteps && failed[r].ok(); ++i) {
        auto [x, y] = Batch(8, r * kSteps + i);
        failed[r] = session.Run({{m[r].x, x}, {m[r].y, y}}, {}, {train[r]}, nullptr);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < 2; ++r) ASSERT_TRUE(failed[r].ok()) << "replica " << r << ": " << failed[r];
  EXPECT_EQ(Scalar64(session, step), 5 + 2 * kSteps);
  std::vector<Tensor> values;
  ASSERT_TRUE(session.Run({}, {m[0].w, m[0].b}, &values).ok());
  for (int j = 0; j < 3; ++j) EXPECT_NEAR(Values<float>(values[0])[j], kTrueW[j], 0.02f);
  EXPECT_NEAR(Values<float>(values[1])[0], kTrueB, 0.02f);
}

// Synchronous mode: one step applies the mean of both replicas' gradients, so training equals
// one process training on both batches at once.
TEST(ParameterServer, SyncStepsMatchOneProcessOnBothBatches) {
  constexpr int kSteps = 10;
  Scope root = Scope::NewRootScope(g_runtime);
  ParameterServer ps(root);
  std::vector<Linear> m;
  std::vector<Output> losses = BuildReplicas(ps, &m);
  MomentumOptimizer momentum(0.1f, 0.9f);
  Operation train = ps.MinimizeSync(&momentum, losses, GlobalStep(root));
  Operation init = GlobalVariablesInitializer(root);
  ASSERT_TRUE(root.ok()) << root.status();
  ClientSession session(root, g_runtime);
  ASSERT_TRUE(session.Run({}, {}, {init}, nullptr).ok());
  for (int i = 0; i < kSteps; ++i) {
    ClientSession::FeedType feeds;
    for (int r = 0; r < 2; ++r) {
      auto [x, y] = Batch(6, 2 * i + r);
      feeds.emplace_back(m[r].x, x);
      feeds.emplace_back(m[r].y, y);
    }
    Status s = session.Run(feeds, {}, {train}, nullptr);
    ASSERT_TRUE(s.ok()) << s;
  }
  std::vector<Tensor> got;
  ASSERT_TRUE(session.Run({}, {m[0].w, m[0].b}, &got).ok());

  ExpectOneProcessOnBothBatches(kSteps, got);
}

// SyncReplicas aggregating both replicas: every update is the mean of both replicas' gradients
// at the same variables, so training equals one process on both batches at once.
TEST(SyncReplicas, AggregatingEveryReplicaMatchesOneProcessOnBothBatches) {
  constexpr int kSteps = 8;
  Scope root = Scope::NewRootScope(g_runtime);
  ParameterServer ps(root);
  std::vector<Linear> m;
  std::vector<Output> losses = BuildReplicas(ps, &m);
  Output step = GlobalStep(root);
  MomentumOptimizer momentum(0.1f, 0.9f);
  SyncReplicas sync(&momentum, ps, 2);
  SyncReplicas::Steps steps = sync.Minimize(losses, step);
  Operation init = GlobalVariablesInitializer(root);
  ASSERT_TRUE(root.ok()) << root.status();
  ASSERT_EQ(steps.replica.size(), 2u);
  ClientSession session(root, g_runtime);
  ASSERT_TRUE(session.Run({}, {}, {init}, nullptr).ok());
  std::vector<Status> failed(3);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      for (int i = 0; i < kSteps && failed[r].ok(); ++i) {
        auto [x, y] = Batch(6, 2 * i + r);
        failed[r] = RunWaiting(session, {{m[r].x, x}, {m[r].y, y}}, steps.replica[r]);
      }
    });
  threads.emplace_back([&] {
    for (int i = 0; i < kSteps && failed[2].ok(); ++i)
      failed[2] = RunWaiting(session, {}, steps.chief);
  });
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < 3; ++t) ASSERT_TRUE(failed[t].ok()) << "thread " << t << ": " << failed[t];
  EXPECT_EQ(Scalar64(session, step), kSteps);
  std::vector<Tensor> got;
  ASSERT_TRUE(session.Run({}, {m[0].w, m[0].b}, &got).ok());

  ExpectOneProcessOnBothBatches(kSteps, got);
}

// Aggregating one replica: the chief updates with the first gradient; the other replica's
// gradient, computed from the variables before that update, is dropped rather than applied to
// the newer variables, and its next gradient counts again.
TEST(SyncReplicas, AStragglersStaleGradientIsDropped) {
  Scope root = Scope::NewRootScope(g_runtime);
  ParameterServer ps(root);
  std::vector<Linear> m;
  std::vector<Output> losses = BuildReplicas(ps, &m);
  Output step = GlobalStep(root);
  GradientDescentOptimizer sgd(0.1f);
  SyncReplicas sync(&sgd, ps, 1);
  SyncReplicas::Steps steps = sync.Minimize(losses, step);
  Output pending = ops::AccumulatorNumAccumulated(root, steps.accumulators[0]);
  Operation init = GlobalVariablesInitializer(root);
  ASSERT_TRUE(root.ok()) << root.status();
  ClientSession session(root, g_runtime);
  ASSERT_TRUE(session.Run({}, {}, {init}, nullptr).ok());
  auto run_replica = [&](int r, int seed) {
    auto [x, y] = Batch(6, seed);
    return RunWaiting(session, {{m[r].x, x}, {m[r].y, y}}, steps.replica[r]);
  };
  Status first;
  std::thread replica0([&] { first = run_replica(0, 1); });  // waits for its token
  Status s = RunWaiting(session, {}, steps.chief);  // takes replica 0's gradient
  replica0.join();
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_TRUE(first.ok()) << first;
  EXPECT_EQ(Scalar64(session, step), 1);
  s = run_replica(1, 2);  // read the variables at step 0: dropped; takes the second token
  ASSERT_TRUE(s.ok()) << s;
  std::vector<Tensor> count;
  ASSERT_TRUE(session.Run({}, {pending}, &count).ok());
  EXPECT_EQ(Values<int32_t>(count[0])[0], 0) << "the stale gradient was accumulated";
  std::thread replica1([&] { first = run_replica(1, 3); });  // now at step 1: it counts
  ASSERT_TRUE(RunWaiting(session, {}, steps.chief).ok());
  replica1.join();
  ASSERT_TRUE(first.ok()) << first;
  EXPECT_EQ(Scalar64(session, step), 2);
}

TEST(ParameterServer, AReplicaWithAnotherModelIsAnError) {
  Scope root = Scope::NewRootScope(g_runtime);
  ParameterServer ps(root);
  BuildLinear(ps.ReplicaScope(0));
  Scope r1 = ps.ReplicaScope(1);
  Variable(r1.WithOpName("extra"), PartialTensorShape({2}), DT_FLOAT, ops::Const(r1, {1.f, 2.f}));
  ASSERT_FALSE(root.ok());
  EXPECT_NE(root.status().message().find("replica 1 makes variable replica_1/extra"),
            std::string::npos)
      << root.status();
  EXPECT_NE(root.status().message().find("every replica must build the same model"),
            std::string::npos);

  Scope other = Scope::NewRootScope(g_runtime);
  ParameterServer ps2(other);
  Scope a = ps2.ReplicaScope(0), b = ps2.ReplicaScope(1);
  Variable(a.WithOpName("v"), PartialTensorShape({2}), DT_FLOAT, ops::Const(a, {1.f, 2.f}));
  Variable(b.WithOpName("v"), PartialTensorShape({3}), DT_FLOAT, ops::Const(b, {1.f, 2.f, 3.f}));
  EXPECT_NE(other.status().message().find("the shapes and dtypes must match"), std::string::npos)
      << other.status();

  Scope missing = Scope::NewRootScope(g_runtime);
  ParameterServer ps3(missing, "params");
  EXPECT_NE(missing.status().message().find("has no job 'params'; its jobs are ps, worker"),
            std::string::npos)
      << missing.status();
}

// Each task saves its own variables to a shard of its own, the chief writes one index, and a
// restore puts every variable back from its task's shard; a Saver over another placement is
// told that the checkpoint needs a cluster of the same shape.
TEST(ParameterServer, CheckpointsAreShardedByTaskWithOneIndex) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(CONFLUX_BINARY_DIR) / "tests" / "parameter_server_checkpoints";
  fs::remove_all(dir);
  Scope root = Scope::NewRootScope(g_runtime);
  ParameterServer ps(root);
  std::vector<Linear> m;
  std::vector<Output> losses = BuildReplicas(ps, &m);
  Output step = GlobalStep(root);  // on the chief
  GradientDescentOptimizer sgd(0.2f);
  std::vector<Operation> train = ps.MinimizeAsync(&sgd, losses, step);
  Operation init = GlobalVariablesInitializer(root);
  Saver saver(root);
  ASSERT_TRUE(root.ok()) << root.status();
  GraphDef g;
  ASSERT_TRUE(root.ToGraphDef(&g).ok());
  std::vector<std::string> save_devices;
  for (const NodeDef& n : g.node)
    if (n.op == "SaveV2") save_devices.push_back(n.device);
  EXPECT_EQ(save_devices, (std::vector<std::string>{"", "/job:ps/replica:0/task:0",
                                                    "/job:ps/replica:0/task:1"}));

  ClientSession session(root, g_runtime);
  ASSERT_TRUE(session.Run({}, {}, {init}, nullptr).ok());
  for (int i = 0; i < 3; ++i) {
    auto [x, y] = Batch(8, i);
    ASSERT_TRUE(session.Run({{m[0].x, x}, {m[0].y, y}}, {}, {train[0]}, nullptr).ok());
  }
  std::vector<Tensor> saved;
  ASSERT_TRUE(session.Run({}, {m[0].w, m[0].b, step}, &saved).ok());
  auto written = saver.Save(&session, (dir / "model.ckpt").string(), 3);
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_FALSE(fs::exists(*written + ".index"));
  EXPECT_TRUE(fs::exists(*written + ".cfxindex"));
  for (int k = 0; k < 3; ++k)
    EXPECT_TRUE(fs::exists(*written + "-shard-0000" + std::to_string(k) + "-of-00003.index"))
        << "shard " << k;
  std::ifstream index(*written + ".cfxindex");
  std::string text((std::istreambuf_iterator<char>(index)), {});
  EXPECT_NE(text.find("shard 1 /job:ps/replica:0/task:0 model.ckpt-3-shard-00001-of-00003"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("variable 1 w\n"), std::string::npos) << text;
  EXPECT_NE(text.find("variable 2 b\n"), std::string::npos) << text;
  EXPECT_NE(text.find("variable 0 global_step\n"), std::string::npos) << text;
  auto latest = LatestCheckpoint(dir.string());
  ASSERT_TRUE(latest.ok()) << latest.status();
  EXPECT_EQ(*latest, *written);

  // Train on, then restore: every shard's values come back.
  for (int i = 0; i < 3; ++i) {
    auto [x, y] = Batch(8, 10 + i);
    ASSERT_TRUE(session.Run({{m[1].x, x}, {m[1].y, y}}, {}, {train[1]}, nullptr).ok());
  }
  Status restored = saver.Restore(&session, *latest);
  ASSERT_TRUE(restored.ok()) << restored;
  std::vector<Tensor> back;
  ASSERT_TRUE(session.Run({}, {m[0].w, m[0].b, step}, &back).ok());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(back[i].DebugString(), saved[i].DebugString()) << i;

  // One process's Saver (every variable on one task) cannot take the three shards.
  Scope one = Scope::NewRootScope(&TestRuntime());
  BuildLinear(one);
  GlobalStep(one);
  Saver local_saver(one);
  ASSERT_TRUE(one.ok()) << one.status();
  ClientSession local(one, &TestRuntime());
  Status wrong = local_saver.Restore(&local, *latest);
  EXPECT_EQ(wrong.code(), Code::kFailedPrecondition) << wrong;
  EXPECT_NE(wrong.message().find("has 3 shards"), std::string::npos) << wrong;
  EXPECT_NE(wrong.message().find("a cluster of the same shape"), std::string::npos) << wrong;
}

// Without a cluster: one replica, variables where the scope puts them, one train op.
TEST(ParameterServer, WithoutAClusterOneReplicaTrainsLocally) {
  Scope root = Scope::NewRootScope(&TestRuntime());
  ParameterServer ps(root);
  ASSERT_EQ(ps.num_replicas(), 1);
  EXPECT_EQ(ps.num_ps_tasks(), 0);
  Linear m = BuildLinear(ps.ReplicaScope(0));
  EXPECT_EQ(m.w.node()->def().device, "");
  GradientDescentOptimizer sgd(0.2f);
  std::vector<Operation> train = ps.MinimizeAsync(&sgd, {m.loss});
  Operation init = GlobalVariablesInitializer(root);
  ASSERT_TRUE(root.ok()) << root.status();
  ASSERT_EQ(train.size(), 1u);
  ClientSession session(root, &TestRuntime());
  ASSERT_TRUE(session.Run({}, {}, {init}, nullptr).ok());
  for (int i = 0; i < 150; ++i) {
    auto [x, y] = Batch(8, i);
    ASSERT_TRUE(session.Run({{m.x, x}, {m.y, y}}, {}, {train[0]}, nullptr).ok());
  }
  std::vector<Tensor> values;
  ASSERT_TRUE(session.Run({}, {m.w}, &values).ok());
  EXPECT_NEAR(Values<float>(values[0])[0], kTrueW[0], 0.02f);
}

}  // namespace
}  // namespace cfx

int main(int argc, char** argv) {
  return cfx::test::RunClusterTests(argc, argv, cfx::ClusterYaml(), "parameter_server_test",
                                    &cfx::g_runtime);
}
