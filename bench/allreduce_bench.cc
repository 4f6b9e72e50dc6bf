// All-reduce through a graph step against raw MPI_Allreduce in the same program
// (docs/distributed.md).
//
//   mpirun -n 2 build/bin/allreduce_bench [--replication between-graph|in-graph]
//                                         [--max-bytes N]   (or -n 4)
// (as root add --allow-run-as-root; with more ranks than cores --oversubscribe)
//
// For float tensors of 4 B, 64 KiB, 4 MiB and 64 MiB (sum over every rank):
// 1. raw: MPI_Allreduce on MPI_COMM_WORLD between buffers allocated once, time per call;
// 2. step: a Session step whose graph is one CollectiveReduceV2 per task (every rank's tensor a
//    variable's value, the result consumed on its task), time per step. Between graphs (the
//    default) every rank runs its own session on its own graph, as a Horovod program does; in
//    graph, rank 0's session runs one graph over every task, which adds the master/worker
//    protocol of a step;
// 3. chain: one step of 16 CollectiveReduceV2 per task, each reducing the previous one's result,
//    time per all-reduce: the per-collective cost without the per-step one.
// Times are the best of 5 rounds (each round as many calls as move ~256 MiB, 5 to 2000), taken
// on rank 0 after a barrier.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "conflux/cc/client_session.h"
#include "conflux/cc/ops/standard_ops.h"
#include "conflux/cc/variables.h"
#include "conflux/config.h"
#include "conflux/runtime.h"
#include "mpi_bench_util.h"

namespace {

using cfx::bench::Clock;
using cfx::bench::IdleBarrier;
using cfx::bench::Seconds;

const std::vector<size_t> kBytes = {4, 64 << 10, 4 << 20, 64 << 20};
constexpr int kChain = 16;
constexpr int kRounds = 5;

int Calls(size_t bytes) {
  return static_cast<int>(std::clamp<size_t>((size_t{256} << 20) / bytes, 5, 2000));
}

// Microseconds per MPI_Allreduce (rank 0's best round; every rank runs this).
double RawAllReduce(size_t bytes) {
  const int count = static_cast<int>(bytes / sizeof(float));
  std::vector<float> in(count, 1.0f), out(count);
  const int calls = Calls(bytes);
  double best = 1e30;
  for (int round = 0; round < kRounds; ++round) {
    MPI_Barrier(MPI_COMM_WORLD);
    const auto t0 = Clock::now();
    for (int i = 0; i < calls; ++i)
      MPI_Allreduce(in.data(), out.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    best = std::min(best, Seconds(t0) / calls);
  }
  return best * 1e6;
}

std::string ClusterYaml(int tasks, const std::string& replication) {
  return std::string("plugin_paths: [\"") + CONFLUX_BUILD_PLUGIN_DIR + R"("]
plugins:
  - {name: cpu}
  - {name: transport-mpi}
devices:
  CPU: {count: 1}
threads: {intra_op: 1, inter_op: 1}
cluster:
  replication: )" +
         replication + R"(
  transport: mpi
  transport_options: {)" +
         cfx::bench::TransportOptions() + R"(}
  jobs:
    - {name: worker, tasks: )" +
         std::to_string(tasks) + "}\n";
}

// Microseconds per step (chain = 1) or per all-reduce of a chain of `chain` in one step. Between
// graphs every rank builds and runs its own task's part; in graph rank 0 builds every task's.
double GraphAllReduce(cfx::Runtime* rt, int tasks, bool between, size_t bytes, int chain) {
  using namespace cfx;  // NOLINT
  Scope root = Scope::NewRootScope(rt);
  const int64_t count = static_cast<int64_t>(bytes / sizeof(float));
  std::vector<Operation> targets;
  std::vector<Operation> inits;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (int t = between ? rank : 0; t < (between ? rank + 1 : tasks); ++t) {
    Scope s = root.WithDevice("/job:worker/replica:0/task:" + std::to_string(t));
    auto v = Variable(s.WithOpName("v" + std::to_string(t) + "_" + std::to_string(bytes) + "_" +
                                      std::to_string(chain)),
                      PartialTensorShape({count}),
                      DT_FLOAT, ops::Fill(s, {count}, 0.0f));
    inits.push_back(v.initializer.op());
    Output x = ops::Identity(s, v.var);
    for (int k = 0; k < chain; ++k)
      x = ops::CollectiveReduceV2(s, x, tasks, 1, k + 1, {}, "Add", "Id");
    // The result stays on its task: a NoOp there depends on it.
    targets.push_back(ops::NoOp(s.WithControlDependencies({x.op()})));
  }
  if (!root.ok()) {
    std::fprintf(stderr, "%s\n", root.status().ToString().c_str());
    std::exit(1);
  }
  ClientSession session(root, rt);
  Status s = session.Run({}, {}, inits, nullptr);
  if (s.ok()) s = session.Run({}, {}, targets, nullptr);  // warm-up: registers the partitions
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    std::exit(1);
  }
  const int steps = std::max(3, Calls(bytes) / chain);
  double best = 1e30;
  for (int round = 0; round < kRounds; ++round) {
    if (between) MPI_Barrier(MPI_COMM_WORLD);
    const auto t0 = Clock::now();
    for (int i = 0; i < steps; ++i) (void)session.Run({}, {}, targets, nullptr);
    best = std::min(best, Seconds(t0) / steps / chain);
  }
  return best * 1e6;
}

std::string Size(size_t b) {
  if (b >= (1 << 20)) return std::to_string(b >> 20) + " MiB";
  if (b >= (1 << 10)) return std::to_string(b >> 10) + " KiB";
  return std::to_string(b) + " B";
}

}  // namespace

int main(int argc, char** argv) {
  int rank = 0, size = 0;
  if (!cfx::bench::StartMpi(&argc, &argv, &rank, &size)) return 2;
  std::string replication = "between-graph";
  size_t max_bytes = kBytes.back();
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--replication" && i + 1 < argc) {
      replication = argv[++i];
    } else if (arg == "--max-bytes" && i + 1 < argc) {
      max_bytes = std::strtoull(argv[++i], nullptr, 10);
    } else {
      if (rank == 0)
        std::fprintf(stderr,
                     "usage: allreduce_bench [--replication between-graph|in-graph] "
                     "[--max-bytes N]\n");
      return 2;
    }
  }
  std::vector<size_t> sizes;
  for (size_t b : kBytes)
    if (b <= max_bytes) sizes.push_back(b);
  const bool between = replication == "between-graph";
  std::vector<double> raw;
  for (size_t b : sizes) raw.push_back(RawAllReduce(b));
  IdleBarrier();
  // In graph, ranks other than 0 serve as workers inside this call and exit when rank 0 is done.
  std::unique_ptr<cfx::Runtime> runtime =
      cfx::bench::ClusterRuntime(ClusterYaml(size, replication), "allreduce_bench");
  if (rank == 0) {
    std::printf("All-reduce (sum) of float tensors over %d ranks, %s replication, microseconds\n",
                size, replication.c_str());
    std::printf("%8s %12s %12s %12s %10s %10s\n", "size", "raw MPI", "graph step", "in chain",
                "step/raw", "chain/raw");
  }
  for (size_t k = 0; k < sizes.size(); ++k) {
    const double step = GraphAllReduce(runtime.get(), size, between, sizes[k], 1);
    const double chain = GraphAllReduce(runtime.get(), size, between, sizes[k], kChain);
    if (rank == 0)
      std::printf("%8s %12.1f %12.1f %12.1f %10.2f %10.2f\n", Size(sizes[k]).c_str(), raw[k], step,
                  chain, step / raw[k], chain / raw[k]);
  }
  runtime.reset();
  return 0;
}
