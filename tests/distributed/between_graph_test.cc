// Between-graph replication across real processes (cluster.replication: between-graph): every
// rank of `mpirun -n 3` runs these tests with a runtime of its own task, builds its own graph
// and runs its own steps; collectives join them (ctest distributed.between_graph). Results are
// checked against values computed here, against the other ranks (by a Max and a Min all-reduce:
// equal means bit-identical everywhere) and against the same model trained in one process.
//
// With --kill-test (ctest distributed.between_graph_kill, under mpirun --enable-recovery) the
// last rank kills itself after a few steps, and the others check that their next step fails
// with an error that names it; with --stop-test=R (distributed.between_graph_stop_*) rank R
// stops itself instead, which only heartbeats notice.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>

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

Runtime* g_runtime = nullptr;
int g_rank = 0;
constexpr int kTasks = 3;

std::string BetweenGraphYaml() {
  return ClusterYamlHead() + R"(cluster:
  transport: mpi
  replication: between-graph
  fusion_bytes: 64
  jobs:
    - {name: worker, tasks: 3}
)";
}

std::string Device() {
  return "/job:worker/replica:0/task:" + std::to_string(g_rank) + "/device:CPU:0";
}

std::unique_ptr<Session> NewSession(const GraphDef& g) {
  auto s = Session::Create(g_runtime, g);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? std::move(*s) : nullptr;
}

std::vector<std::string> GroupInputs(GraphBuilder* b, const std::string& prefix, int size, int key,
                                     int instance) {
  b->Const(prefix + "/size", MakeScalar<int32_t>(size));
  b->Const(prefix + "/key", MakeScalar<int32_t>(key));
  b->Const(prefix + "/instance", MakeScalar<int32_t>(instance));
  return {prefix + "/size", prefix + "/key", prefix + "/instance"};
}

void Collective(GraphBuilder* b, const std::string& name, const std::string& op,
                std::vector<std::string> inputs, int size, int key, int instance, DataType t,
                std::vector<std::pair<std::string, AttrValue>> attrs = {}) {
  for (const std::string& g : GroupInputs(b, name, size, key, instance)) inputs.push_back(g);
  attrs.emplace_back("T", Type(t));
  b->Op(name, op, inputs, attrs, "");
}

void Reduce(GraphBuilder* b, const std::string& name, const std::string& input, int key,
            int instance, const std::string& merge, const std::string& final_op) {
  Collective(b, name, "CollectiveReduceV2", {input}, kTasks, key, instance, DT_FLOAT,
             {{"merge_op", AttrValue::String(merge)}, {"final_op", AttrValue::String(final_op)}});
}

Status RunError(const GraphDef& g, const std::vector<std::string>& fetches) {
  auto session = NewSession(g);
  if (session == nullptr) return errors::Internal("no session");
  std::vector<Tensor> out;
  return session->Run({}, fetches, {}, &out);
}

TEST(BetweenGraph, EachRanksOwnGraphJoinsTheOthersInItsCollectives) {
  ASSERT_EQ(g_runtime->task_name(), "/job:worker/replica:0/task:" + std::to_string(g_rank));
  GraphBuilder b;
  const float r = static_cast<float>(g_rank);
  b.Const("x", MakeVector<float>({r + 1, -2 * r, 0.5f * r + 1}));
  Reduce(&b, "sum", "x", 1, 1, "Add", "Id");
  Reduce(&b, "mean", "x", 1, 2, "Add", "Div");
  Reduce(&b, "max", "x", 1, 3, "Max", "Id");
  Collective(&b, "gather", "CollectiveGatherV2", {"x"}, kTasks, 1, 4, DT_FLOAT);
  // Rank 1 sends: the receivers learn the root when the step runs.
  if (g_rank == 1) {
    b.Const("b", MakeVector<float>({7, 8}));
    Collective(&b, "bcast", "CollectiveBcastSendV2", {"b"}, kTasks, 1, 5, DT_FLOAT);
  } else {
    b.Const("shape", MakeVector<int32_t>({2}));
    std::vector<std::string> in;
    for (const std::string& g : GroupInputs(&b, "bcast", kTasks, 1, 5)) in.push_back(g);
    in.push_back("shape");
    b.Op("bcast", "CollectiveBcastRecvV2", in, {{"T", Type(DT_FLOAT)}}, "");
  }
  auto session = NewSession(b.graph());
  ASSERT_NE(session, nullptr);
  for (int run = 0; run < 3; ++run) {
    std::vector<Tensor> out;
    Status s = session->Run({}, {"sum:0", "mean:0", "max:0", "gather:0", "bcast:0"}, {}, &out);
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ(Values<float>(out[0]), (std::vector<float>{6, -6, 4.5f}));
    EXPECT_EQ(Values<float>(out[1]), (std::vector<float>{2, -2, 1.5f}));
    EXPECT_EQ(Values<float>(out[2]), (std::vector<float>{3, 0, 2}));
    EXPECT_EQ(Values<float>(out[3]),
              (std::vector<float>{1, 0, 1, 2, -2, 1.5f, 3, -4, 2}));  // rank order
    EXPECT_EQ(out[3].shape(), TensorShape({9}));
    EXPECT_EQ(Values<float>(out[4]), (std::vector<float>{7, 8}));
  }
}

TEST(BetweenGraph, AGroupMustSpanEveryTask) {
  GraphBuilder b;
  b.Const("x", MakeVector<float>({1}));
  Collective(&b, "r", "CollectiveReduceV2", {"x"}, 2, 9, 1, DT_FLOAT,
             {{"merge_op", AttrValue::String("Add")}, {"final_op", AttrValue::String("Id")}});
  Status s = RunError(b.graph(), {"r:0"});
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("group_size must be 3"), std::string::npos) << s;
}

TEST(BetweenGraph, NodesOfAnotherTaskAreAnError) {
  GraphBuilder b;
  const int other = (g_rank + 1) % kTasks;
  b.Const("x", MakeVector<float>({1}),
          "/job:worker/replica:0/task:" + std::to_string(other) + "/device:CPU:0");
  Status s = RunError(b.graph(), {"x:0"});
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("task:" + std::to_string(other)), std::string::npos) << s;
}

TEST(BetweenGraph, MembersWithAnotherShapeFailTheStepOnEveryRank) {
  GraphBuilder b;
  b.Const("x", g_rank == 2 ? MakeVector<float>({1, 2, 3}) : MakeVector<float>({1, 2}));
  Reduce(&b, "r", "x", 11, 1, "Add", "Id");
  Status s = RunError(b.graph(), {"r:0"});
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("disagree on the dtype or shape"), std::string::npos) << s;
}

TEST(BetweenGraph, ABroadcastWithTwoSendersFailsOnEveryRank) {
  GraphBuilder b;
  b.Const("v", MakeVector<float>({1, 2}));
  if (g_rank == 2) {
    b.Const("shape", MakeVector<int32_t>({2}));
    std::vector<std::string> in;
    for (const std::string& g : GroupInputs(&b, "bcast", kTasks, 12, 1)) in.push_back(g);
    in.push_back("shape");
    b.Op("bcast", "CollectiveBcastRecvV2", in, {{"T", Type(DT_FLOAT)}}, "");
  } else {
    Collective(&b, "bcast", "CollectiveBcastSendV2", {"v"}, kTasks, 12, 1, DT_FLOAT);
  }
  Status s = RunError(b.graph(), {"bcast:0"});
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("more than one CollectiveBcastSendV2"), std::string::npos) << s;
}

// Each rank trains its replica on its own batches, from its own initial values until the
// chief's are broadcast; the variables end bit-identical on every rank and equal to one process
// trained on the three batches at once.
// Several steps of gradient descent on 0.5 |w - target_r|^2 per Session::Run, inside a while
// loop (as Keras' steps_per_execution builds it): each iteration all-reduces the gradient's mean
// and, independently, the step number (so iterations running at once would pair the two
// differently on different ranks). The session runs such loops one iteration at a time; w ends
// the same on every rank, at the recurrence computed here.
TEST(BetweenGraph, StepsInsideAWhileLoopAllReduceIterationByIteration) {
  constexpr int kIterations = 6;
  constexpr float kRate = 0.5f;
  Scope root = Scope::NewRootScope(g_runtime);
  const float r = static_cast<float>(g_rank);
  Output target = ops::Const(root, {r, 2 * r, -r});
  std::vector<Output> out;
  WhileLoopOptions options;
  options.parallel_iterations = 8;
  Status st = WhileLoop(
      root, {ops::Const(root, 0), ops::Const(root, {1.0f, 1.0f, 1.0f}), ops::Const(root, 0.0f)},
      [](const Scope& c, const std::vector<Output>& v, Output* pred) {
        *pred = ops::Less(c, v[0], kIterations);
        return c.status();
      },
      [&](const Scope& b, const std::vector<Output>& v, std::vector<Output>* next) {
        Output grad =
            ops::CollectiveReduceV2(b, ops::Sub(b, v[1], target), kTasks, 3, 1, {}, "Add", "Div");
        Output step =
            ops::CollectiveReduceV2(b, ops::Cast(b, v[0], DT_FLOAT), kTasks, 3, 2, {}, "Add", "Id");
        *next = {ops::AddV2(b, v[0], 1), ops::Sub(b, v[1], ops::Mul(b, grad, kRate)),
                 ops::AddV2(b, v[2], step)};
        return b.status();
      },
      &out, options);
  ASSERT_TRUE(st.ok()) << st;
  Output highest = ops::CollectiveReduceV2(root, out[1], kTasks, 3, 3, {}, "Max", "Id");
  Output lowest = ops::CollectiveReduceV2(root, out[1], kTasks, 3, 4, {}, "Min", "Id");
  ClientSession session(root, g_runtime);
  std::vector<float> w = {1, 1, 1};
  const std::vector<float> mean_target = {1, 2, -1};  // ranks 0, 1, 2
  for (int k = 0; k < kIterations; ++k)
    for (int j = 0; j < 3; ++j) w[j] -= kRate * (w[j] - mean_target[j]);
  for (int run = 0; run < 2; ++run) {
    std::vector<Tensor> values;
    st = session.Run({}, {out[1], out[2], highest, lowest}, &values);
    ASSERT_TRUE(st.ok()) << st;
    ExpectTensorNear(MakeVector<float>(w), values[0], 1e-6);
    EXPECT_EQ(values[1].at<float>(0), kTasks * 15.0f);  // 0 + 1 + ... + 5 on each rank
    EXPECT_EQ(Values<float>(values[2]), Values<float>(values[0]));
    EXPECT_EQ(Values<float>(values[3]), Values<float>(values[0]));
  }
}

TEST(BetweenGraph, DataParallelReplicasStayIdenticalAndMatchOneProcess) {
  constexpr int kSteps = 15;
  Scope root = Scope::NewRootScope(g_runtime);
  DataParallel dp(root);
  ASSERT_EQ(dp.num_replicas(), 1);
  EXPECT_EQ(dp.group_size(), kTasks);
  EXPECT_EQ(dp.device(0), g_runtime->task_name());
  Replica replica = BuildReplica(dp.ReplicaScope(0), 100 + g_rank);  // differs until the sync
  MomentumOptimizer momentum(0.05f, 0.9f);
  DistributedOptimizer opt(&momentum, dp);
  Operation train = opt.Minimize(root, {replica.loss}, GlobalStep(root));
  Operation init = GlobalVariablesInitializer(root);
  Operation sync = dp.BroadcastVariables(root);
  // Every rank's variables, max- and min-reduced over the ranks: equal to its own when every
  // rank holds the same bits.
  std::vector<Output> vars = dp.Variables(0), highest, lowest;
  for (size_t i = 0; i < vars.size(); ++i) {
    const int instance = 1000 + 2 * static_cast<int>(i);
    Output value = ops::Identity(root, vars[i]);
    highest.push_back(ops::CollectiveReduceV2(root, value, kTasks, 77, instance, {}, "Max", "Id"));
    lowest.push_back(
        ops::CollectiveReduceV2(root, value, kTasks, 77, instance + 1, {}, "Min", "Id"));
  }
  ASSERT_TRUE(root.ok()) << root.status();
  GraphDef g;
  ASSERT_TRUE(root.ToGraphDef(&g).ok());
  int reductions = 0;
  for (const NodeDef& n : g.node)
    reductions += n.op == "CollectiveReduceV2" && n.name.find("allreduce") != std::string::npos;
  EXPECT_EQ(reductions, 2);  // fusion_bytes 64: two buckets
  ClientSession session(root, g_runtime);
  ASSERT_TRUE(session.Run({}, {}, {init}, nullptr).ok());
  Status s = session.Run({}, {}, {sync}, nullptr);
  ASSERT_TRUE(s.ok()) << s;
  for (int step = 0; step < kSteps; ++step) {
    s = session.Run(
        {{replica.x, ReplicaX(step, kTasks, g_rank)}, {replica.y, ReplicaY(step, kTasks, g_rank)}},
        {}, {train}, nullptr);
    ASSERT_TRUE(s.ok()) << s;
  }
  std::vector<Tensor> mine, max, min;
  ASSERT_TRUE(session.Run({}, vars, &mine).ok());
  ASSERT_TRUE(session.Run({}, highest, &max).ok());
  ASSERT_TRUE(session.Run({}, lowest, &min).ok());
  for (size_t i = 0; i < vars.size(); ++i) {
    EXPECT_EQ(Values<float>(max[i]), Values<float>(mine[i])) << "variable " << i;
    EXPECT_EQ(Values<float>(min[i]), Values<float>(mine[i])) << "variable " << i;
  }

  const std::vector<Tensor> want = TrainOneProcess(kTasks, kSteps);
  ASSERT_EQ(want.size(), mine.size());
  for (size_t i = 0; i < want.size(); ++i) ExpectTensorNear(want[i], mine[i], 1e-5);
}

// A recurrent model: h = tanh(h W + b) three times from h = x in a while loop, then a mean
// squared error of h V against y. Its gradients come out of the loop's gradient (a backward
// loop), and their all-reduces follow that loop's Exit nodes.
Replica BuildRecurrentReplica(const Scope& s, uint64_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  auto init = [&](std::vector<int64_t> dims) {
    std::vector<float> v(dims.size() == 1 ? dims[0] : dims[0] * dims[1]);
    for (float& e : v) e = u(rng);
    return ops::Const(s, MakeTensor<float>(TensorShape(dims), v));
  };
  Replica r;
  r.x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT);
  r.y = ops::Placeholder(s.WithOpName("y"), DT_FLOAT);
  auto w = Variable(s.WithOpName("w"), PartialTensorShape({4, 4}), DT_FLOAT, init({4, 4}));
  auto b = Variable(s.WithOpName("b"), PartialTensorShape({4}), DT_FLOAT, init({4}));
  auto v = Variable(s.WithOpName("v"), PartialTensorShape({4, 2}), DT_FLOAT, init({4, 2}));
  Output wv = ops::Identity(s, w.var), bv = ops::Identity(s, b.var);
  Output h = ForLoop(s, 3, r.x, [&](const Scope& c, const Output&, const Output& l) {
    return ops::Tanh(c, ops::Add(c, ops::MatMul(c, l, wv), bv));
  });
  EXPECT_TRUE(s.ok()) << s.status();
  r.loss = ops::Mean(s, ops::Square(s, ops::Sub(s, ops::MatMul(s, h, v.var), r.y)), {0, 1});
  return r;
}

// Data-parallel training of a model with a while loop: every rank ends with the same variables,
// those of the model trained in one process on all the ranks' batches at once.
TEST(BetweenGraph, DataParallelTrainingThroughAWhileLoop) {
  constexpr int kSteps = 8;
  auto train = [](Runtime* rt, int replicas, bool distributed) {
    Scope root = Scope::NewRootScope(rt);
    DataParallel dp(root);
    Replica replica = BuildRecurrentReplica(distributed ? dp.ReplicaScope(0) : root, 7);
    MomentumOptimizer momentum(0.05f, 0.9f);
    DistributedOptimizer opt(&momentum, dp);
    Operation step =
        distributed ? opt.Minimize(root, {replica.loss}) : momentum.Minimize(root, replica.loss);
    Operation init = GlobalVariablesInitializer(root);
    EXPECT_TRUE(root.ok()) << root.status();
    ClientSession session(root, rt);
    EXPECT_TRUE(session.Run({}, {}, {init}, nullptr).ok());
    for (int k = 0; k < kSteps; ++k) {
      std::vector<Tensor> xs, ys;
      for (int r = 0; r < replicas; ++r) {
        const int rank = distributed ? g_rank : r;
        xs.push_back(ReplicaX(k, kTasks, rank));
        ys.push_back(ReplicaY(k, kTasks, rank));
      }
      Status s = session.Run({{replica.x, Rows(xs)}, {replica.y, Rows(ys)}}, {}, {step}, nullptr);
      EXPECT_TRUE(s.ok()) << s;
      if (!s.ok()) return std::vector<std::vector<Tensor>>();
    }
    std::vector<Output> vars = root.GetCollection(kTrainableVariables), checks;
    for (size_t i = 0; distributed && i < vars.size(); ++i)
      for (const char* merge : {"Max", "Min"})
        checks.push_back(ops::CollectiveReduceV2(root, ops::Identity(root, vars[i]), kTasks, 78,
                                                 static_cast<int>(checks.size()) + 1, {}, merge,
                                                 "Id"));
    std::vector<Tensor> mine, extremes;
    EXPECT_TRUE(session.Run({}, vars, &mine).ok());
    if (distributed) EXPECT_TRUE(session.Run({}, checks, &extremes).ok());
    return std::vector<std::vector<Tensor>>{mine, extremes};
  };
  auto mine = train(g_runtime, 1, true);
  ASSERT_EQ(mine.size(), 2u);
  ASSERT_EQ(mine[0].size(), 3u);
  ASSERT_EQ(mine[1].size(), 6u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(Values<float>(mine[1][2 * i]), Values<float>(mine[0][i])) << "variable " << i;
    EXPECT_EQ(Values<float>(mine[1][2 * i + 1]), Values<float>(mine[0][i])) << "variable " << i;
  }
  auto want = train(&TestRuntime(), kTasks, false);
  ASSERT_EQ(want.size(), 2u);
  for (size_t i = 0; i < 3; ++i) ExpectTensorNear(want[0][i], mine[0][i], 1e-5);
}

// A failure test's session: a sum over every rank (instance `instance`), after three steps
// that every rank ran; then the ranks wait until 200 ms later (the others may still be
// finishing their third step when one rank's has ended: a death while a step runs cancels that
// step, rightly), which the function returns.
std::chrono::steady_clock::time_point ThreeSteps(int instance, std::unique_ptr<Session>* session) {
  GraphBuilder b;
  b.Const("x", MakeVector<float>({1}));
  Reduce(&b, "sum", "x", instance, 1, "Add", "Id");
  *session = NewSession(b.graph());
  EXPECT_NE(*session, nullptr);
  for (int step = 0; *session != nullptr && step < 3; ++step) {
    std::vector<Tensor> out;
    Status s = (*session)->Run({}, {"sum:0"}, {}, &out);
    EXPECT_TRUE(s.ok()) << s;
    if (s.ok()) EXPECT_EQ(Values<float>(out[0]), std::vector<float>{3});
  }
  const auto at = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
  std::this_thread::sleep_until(at);
  return at;
}

// The next step of a rank that outlived `gone`'s failure at `since`, `wait_ms` later: it fails
// with Unavailable naming that task (and, for a stopped one, the heartbeats), within 5 s.
void ExpectTheNextStepFails(Session* session, int gone, const char* how, int wait_ms,
                            std::chrono::steady_clock::time_point since) {
  std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
  std::vector<Tensor> out;
  Status s = session->Run({}, {"sum:0"}, {}, &out);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
  EXPECT_EQ(s.code(), Code::kUnavailable) << s;
  EXPECT_NE(s.message().find("task:" + std::to_string(gone)), std::string::npos) << s;
  if (std::strcmp(how, "stopped") == 0)
    EXPECT_NE(s.message().find("heartbeat"), std::string::npos) << s;
  EXPECT_LT(seconds, 5.0);
  std::printf("rank %d saw the %s task within %.2f s: %s\n", g_rank, how, seconds,
              s.ToString().c_str());
}

// The last rank kills itself (SIGKILL) 200 ms after its third step; the others' next step, half a
// second later, fails with Unavailable naming it, well within 5 s of the kill. Each survivor
// prints the time it took.
TEST(BetweenGraphFailure, AKilledTaskFailsTheOthersSteps) {
  std::unique_ptr<Session> session;
  const auto killed = ThreeSteps(21, &session);
  ASSERT_NE(session, nullptr);
  if (g_rank == kTasks - 1) {
    std::fflush(stdout);
    std::raise(SIGKILL);
  }
  ExpectTheNextStepFails(session.get(), kTasks - 1, "dead", 500, killed);
}

// --stop-test=R: rank R stops itself (SIGSTOP) 200 ms after its third step and stays stopped
// until the script kills it; its sockets stay open, so only heartbeats (every 250 ms, a 1.5 s
// timeout here) can tell. The others' next step, 3 s later, fails with Unavailable naming it,
// within 5 s of the stop: a stopped worker is found by the chief, which tells the other worker;
// a stopped chief by each worker. Each survivor prints the time it took.
int g_stopped_rank = -1;

TEST(BetweenGraphFailure, AStoppedTaskFailsTheOthersSteps) {
  std::unique_ptr<Session> session;
  const auto stopped = ThreeSteps(22, &session);
  ASSERT_NE(session, nullptr);
  if (g_rank == g_stopped_rank) {
    std::printf("rank %d pid %d stops\n", g_rank, static_cast<int>(getpid()));
    std::fflush(stdout);
    std::raise(SIGSTOP);
    return;  // not reached: the script kills this process
  }
  ExpectTheNextStepFails(session.get(), g_stopped_rank, "stopped", 3000, stopped);
}

}  // namespace
}  // namespace cfx

int main(int argc, char** argv) {
  bool kill_test = false;
  for (int i = 1; i < argc; ++i) {
    kill_test |= std::strcmp(argv[i], "--kill-test") == 0;
    if (std::strncmp(argv[i], "--stop-test=", 12) == 0)
      cfx::g_stopped_rank = std::atoi(argv[i] + 12);
  }
  std::string yaml = cfx::BetweenGraphYaml();
  ::testing::GTEST_FLAG(filter) = "BetweenGraph.*";
  if (kill_test) ::testing::GTEST_FLAG(filter) = "BetweenGraphFailure.AKilled*";
  if (cfx::g_stopped_rank >= 0) {
    ::testing::GTEST_FLAG(filter) = "BetweenGraphFailure.AStopped*";
    yaml += "  heartbeat: {interval: 250ms, timeout: 1500ms}\n";
  }
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  cfx::g_rank = rank != nullptr ? std::atoi(rank) : 0;
  return cfx::test::RunClusterTests(argc, argv, yaml, "between_graph_test", &cfx::g_runtime);
}
