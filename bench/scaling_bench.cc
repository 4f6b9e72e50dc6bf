// Training throughput of one process against several (docs/distributed.md): examples per second
// of the MLP 784-512-512-10 or the Fashion-MNIST CNN (examples/fashion_mnist), each replica on
// its own batches of `--batch` examples (weak scaling, as Horovod reports it), Adam, on synthetic
// data fed every step. bench/scaling.sh runs every mode below one after the other and prints
// the ratios.
//
//   build/bin/scaling_bench --model mlp --mode single                  one process
//   mpirun -n 2 build/bin/scaling_bench --model mlp --mode dp          data-parallel, 2 workers
//   mpirun -n 2 build/bin/scaling_bench --model mlp --mode dp-between  the same, between-graph
//                                                                      replication (every rank
//                                                                      runs its own replica)
//   mpirun -n 3 build/bin/scaling_bench --model mlp --mode ps          1 ps task + 2 workers,
//                                                                      asynchronous updates
// Options: --steps N (per replica, after --warmup W), --batch B, --threads T (intra-op threads
// per process, default 1; one inter-op thread), --trace FILE (a Chrome trace of one more step of
// the first train op, every task's nodes), --fusion-bytes SIZE (dp: the config's
// cluster.fusion_bytes), --optimizer adam|sgd (default adam; sgd's update is one pass over the
// weights, Adam's three arrays' worth). $CONFLUX_BENCH_TRANSPORT_OPTIONS: the transport's options
// (e.g. "shared_memory: off"). Prints one line: "<model> <mode> replicas R examples/s X".
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "../examples/fashion_mnist/model.h"
#include "conflux/cc/client_session.h"
#include "conflux/cc/distributed.h"
#include "conflux/cc/layers.h"
#include "conflux/cc/ops/nn_ops.h"
#include "conflux/cc/ops/standard_ops.h"
#include "conflux/cc/optimizers.h"
#include "conflux/cc/variables.h"
#include "conflux/config.h"
#include "conflux/runtime.h"
#include "conflux/trace.h"

namespace {

using namespace cfx;  // NOLINT
using Clock = std::chrono::steady_clock;

struct Flags {
  std::string model = "mlp", mode = "single", trace, fusion_bytes, optimizer = "adam";
  int steps = 200, warmup = 20, batch = 64, threads = 1;
};

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "scaling_bench: %s\n", what.c_str());
  std::exit(1);
}

Flags Parse(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) Fail("missing value after " + a);
    const std::string v = argv[++i];
    if (a == "--model") f.model = v;
    else if (a == "--mode") f.mode = v;
    else if (a == "--steps") f.steps = std::atoi(v.c_str());
    else if (a == "--warmup") f.warmup = std::atoi(v.c_str());
    else if (a == "--batch") f.batch = std::atoi(v.c_str());
    else if (a == "--threads") f.threads = std::atoi(v.c_str());
    else if (a == "--trace") f.trace = v;
    else if (a == "--fusion-bytes") f.fusion_bytes = v;
    else if (a == "--optimizer") f.optimizer = v;
    else Fail("unknown option " + a);
  }
  if (f.model != "mlp" && f.model != "cnn") Fail("--model is mlp or cnn, not " + f.model);
  if (f.mode != "single" && f.mode != "dp" && f.mode != "dp-between" && f.mode != "ps")
    Fail("--mode is single, dp, dp-between or ps, not " + f.mode);
  if (f.optimizer != "adam" && f.optimizer != "sgd")
    Fail("--optimizer is adam or sgd, not " + f.optimizer);
  if (f.steps < 1 || f.batch < 1 || f.threads < 1 || f.warmup < 0) Fail("bad counts");
  return f;
}

// The cluster of a mode: dp: `ranks` workers; ps: one ps task and ranks - 1 workers.
std::string Yaml(const Flags& f, int ranks) {
  std::string y = std::string("plugin_paths: [\"") + CONFLUX_BUILD_PLUGIN_DIR + R"("]
plugins:
  - {name: cpu}
  - {name: ops-nn}
)";
  if (f.mode != "single") y += "  - {name: transport-mpi}\n";
  y += "devices:\n  CPU: {count: 1}\n";
  y += "threads: {intra_op: " + std::to_string(f.threads) + ", inter_op: 1}\n";
  const bool dp = f.mode == "dp" || f.mode == "dp-between";
  if (dp)
    y += "cluster:\n  transport: mpi\n  jobs:\n    - {name: worker, tasks: " +
         std::to_string(ranks) + "}\n";
  if (f.mode == "dp-between") y += "  replication: between-graph\n";
  // As the other MPI benchmarks: $CONFLUX_BENCH_TRANSPORT_OPTIONS, e.g. "shared_memory: off".
  const char* options = std::getenv("CONFLUX_BENCH_TRANSPORT_OPTIONS");
  const std::string transport_options =
      options != nullptr ? "  transport_options: {" + std::string(options) + "}\n" : "";
  if (dp) y += transport_options;
  if (dp && !f.fusion_bytes.empty()) y += "  fusion_bytes: " + f.fusion_bytes + "\n";
  if (f.mode == "ps")
    y += "cluster:\n  transport: mpi\n  chief: worker:0\n  jobs:\n    - {name: ps, tasks: 1}\n"
         "    - {name: worker, tasks: " +
         std::to_string(ranks - 1) + "}\n" + transport_options;
  return y;
}

struct Replica {
  Output images, labels, loss;
  Output training;  // the CNN's dropout switch
};

Replica Build(const Scope& s, const Flags& f) {
  Replica r;
  r.labels = ops::Placeholder(s.WithOpName("labels"), DT_INT32);
  if (f.model == "cnn") {
    r.images = ops::Placeholder(s.WithOpName("images"), DT_FLOAT,
                                ops::PlaceholderAttrs().Shape({f.batch, 28, 28, 1}));
    r.training = ops::Const(s, true);
    r.loss = fashion::BuildModel(s, r.images, r.labels, r.training, 0.5f).loss;
    return r;
  }
  r.images = ops::Placeholder(s.WithOpName("images"), DT_FLOAT,
                              ops::PlaceholderAttrs().Shape({f.batch, 784}));
  Output h = layers::Dense(s, r.images, 512, layers::Activation::kRelu);
  h = layers::Dense(s, h, 512, layers::Activation::kRelu);
  Output logits = layers::Dense(s, h, 10);
  r.loss = ops::Mean(s, ops::SparseSoftmaxCrossEntropyWithLogits(s, logits, r.labels).loss, 0);
  return r;
}

ClientSession::FeedType Feeds(const Replica& r, const Flags& f, int seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  const int64_t pixels = f.model == "cnn" ? 28 * 28 : 784;
  Tensor images(DT_FLOAT, f.model == "cnn" ? TensorShape({f.batch, 28, 28, 1})
                                           : TensorShape({f.batch, 784}));
  Tensor labels(DT_INT32, TensorShape({f.batch}));
  float* x = images.data<float>();
  for (int64_t i = 0; i < f.batch * pixels; ++i) x[i] = u(rng);
  for (int i = 0; i < f.batch; ++i) labels.data<int32_t>()[i] = static_cast<int32_t>(rng() % 10);
  return {{r.images, images}, {r.labels, labels}};
}

double ExamplesPerSecond(Runtime* rt, const Flags& f) {
  Scope root = Scope::NewRootScope(rt);
  layers::SetGraphSeed(root, 1);
  std::vector<Replica> replicas;
  std::vector<Output> losses;
  std::vector<Operation> train;
  Operation sync;
  // Between graphs each rank runs one of the group's replicas at the pace of them all.
  int group = 1;
  AdamOptimizer adam(1e-3f);
  GradientDescentOptimizer sgd(1e-2f);
  Optimizer* optimizer = &adam;
  if (f.optimizer == "sgd") optimizer = &sgd;
  if (f.mode == "ps") {
    ParameterServer ps(root);
    for (int r = 0; r < ps.num_replicas(); ++r) replicas.push_back(Build(ps.ReplicaScope(r), f));
    for (const Replica& r : replicas) losses.push_back(r.loss);
    train = ps.MinimizeAsync(optimizer, losses, GlobalStep(root));
  } else {
    DataParallel dp(root);
    for (int r = 0; r < dp.num_replicas(); ++r) replicas.push_back(Build(dp.ReplicaScope(r), f));
    for (const Replica& r : replicas) losses.push_back(r.loss);
    DistributedOptimizer opt(optimizer, dp);
    train.push_back(opt.Minimize(root, losses, GlobalStep(root)));
    sync = dp.BroadcastVariables(root);
    if (f.mode == "dp-between") group = dp.group_size();
  }
  Operation init = GlobalVariablesInitializer(root);
  if (!root.ok()) Fail(root.status().ToString());
  ClientSession session(root, rt);
  Status s = session.Run({}, {}, {init}, nullptr);
  if (s.ok() && sync.valid()) s = session.Run({}, {}, {sync}, nullptr);
  if (!s.ok()) Fail(s.ToString());
  // One thread per train op: data-parallel has one (a step runs every replica), the parameter
  // server one per replica (each steps on its own).
  std::vector<ClientSession::FeedType> feeds(train.size());
  for (size_t t = 0; t < train.size(); ++t) {
    if (f.mode == "ps") {
      feeds[t] = Feeds(replicas[t], f, static_cast<int>(t));
    } else {
      for (size_t r = 0; r < replicas.size(); ++r)
        for (auto& feed : Feeds(replicas[r], f, static_cast<int>(r))) feeds[t].push_back(feed);
    }
  }
  std::vector<Status> failed(train.size());
  auto run = [&](int steps) {
    std::vector<std::thread> threads;
    for (size_t t = 0; t < train.size(); ++t)
      threads.emplace_back([&, t] {
        for (int i = 0; i < steps && failed[t].ok(); ++i)
          failed[t] = session.Run(feeds[t], {}, {train[t]}, nullptr);
      });
    for (std::thread& th : threads) th.join();
    for (const Status& e : failed)
      if (!e.ok()) Fail(e.ToString());
  };
  run(f.warmup);
  const auto t0 = Clock::now();
  run(f.steps);
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  if (!f.trace.empty()) {
    RunOptions options;
    options.trace = true;
    RunMetadata metadata;
    s = session.Run(options, feeds[0], {}, {train[0]}, nullptr, &metadata);
    std::FILE* out = s.ok() ? std::fopen(f.trace.c_str(), "w") : nullptr;
    if (out == nullptr) Fail("cannot write the trace to " + f.trace + " " + s.ToString());
    const std::string json = StepStatsToChromeTrace(metadata.step_stats);
    std::fwrite(json.data(), 1, json.size(), out);
    std::fclose(out);
  }
  return static_cast<double>(f.steps) * f.batch * static_cast<double>(replicas.size() * group) /
         seconds;
}

}  // namespace

int main(int argc, char** argv) {
  const Flags f = Parse(argc, argv);
  int ranks = 1;
  if (const char* size = std::getenv("OMPI_COMM_WORLD_SIZE")) ranks = std::atoi(size);
  if (f.mode == "single" && ranks != 1) Fail("--mode single runs without mpirun");
  if ((f.mode == "dp" || f.mode == "dp-between") && ranks < 2)
    Fail("--mode " + f.mode + " runs under mpirun -n 2 or more");
  if (f.mode == "ps" && ranks < 2) Fail("--mode ps runs under mpirun -n 2 or more");
  auto config = Config::FromString(Yaml(f, ranks), "scaling_bench");
  if (!config.ok()) Fail(config.status().ToString());
  // In graph, ranks other than the chief serve inside Runtime::Create and exit when the chief is
  // done; between graphs every rank trains.
  auto rt = Runtime::Create(*config);
  if (!rt.ok()) Fail(rt.status().ToString());
  const double rate = ExamplesPerSecond(rt->get(), f);
  const int replicas = f.mode == "single" ? 1 : f.mode == "ps" ? ranks - 1 : ranks;
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  if (rank != nullptr && std::atoi(rank) != 0) return 0;  // between graphs: rank 0 reports
  std::printf("%s %s replicas %d examples/s %.1f\n", f.model.c_str(), f.mode.c_str(), replicas,
              rate);
  return 0;
}
