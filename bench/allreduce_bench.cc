// All-reduce through a graph step against raw MPI_Allreduce in the same program
// (docs/distributed.md).
//
//   mpirun -n 2 build/bin/allreduce_bench [--replication between-graph|in-graph]
//                                         [--max-bytes N] [--rounds R]   (or -n 4)
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
// Times are the best of R rounds (default 5; each round as many calls as move ~256 MiB, 5 to
// 2000), taken on rank 0 after a barrier. Between graphs the rounds of the three alternate (raw,
// step, chain, raw, ...), so that a machine whose speed drifts affects them alike.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
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

int Calls(size_t bytes) {
  return static_cast<int>(std::clamp<size_t>((size_t{256} << 20) / bytes, 5, 2000));
}

// Microseconds per MPI_Allreduce in one round (every rank runs this).
double RawRound(size_t bytes) {
  const int count = static_cast<int>(bytes / sizeof(float));
  std::vector<float> in(count, 1.0f), out(count);
  const int calls = Calls(bytes);
  MPI_Barrier(MPI_COMM_WORLD);
  const auto t0 = Clock::now();
  for (int i = 0; i < calls; ++i)
    MPI_Allreduce(in.data(), out.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  return Seconds(t0) / calls * 1e6;
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

// A session whose step all-reduces a `bytes` tensor `chain` times in a row. Between graphs every
// rank builds and runs its own task's part; in graph rank 0 builds every task's.
class GraphAllReduce {
 public:
  GraphAllReduce(cfx::Runtime* rt, int tasks, bool between, size_t bytes, int chain)
      : root_(cfx::Scope::NewRootScope(rt)), between_(between), chain_(chain) {
    using namespace cfx;  // NOLINT
    const int64_t count = static_cast<int64_t>(bytes / sizeof(float));
    std::vector<Operation> inits;
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int t = between ? rank : 0; t < (between ? rank + 1 : tasks); ++t) {
      Scope s = root_.WithDevice("/job:worker/replica:0/task:" + std::to_string(t));
      auto v = Variable(s.WithOpName("v" + std::to_string(t) + "_" + std::to_string(bytes) + "_" +
                                     std::to_string(chain)),
                        PartialTensorShape({count}), DT_FLOAT, ops::Fill(s, {count}, 0.0f));
      inits.push_back(v.initializer.op());
      Output x = ops::Identity(s, v.var);
      for (int k = 0; k < chain; ++k)
        x = ops::CollectiveReduceV2(s, x, tasks, 1, k + 1, {}, "Add", "Id");
      // The result stays on its task: a NoOp there depends on it.
      targets_.push_back(ops::NoOp(s.WithControlDependencies({x.op()})));
    }
    if (!root_.ok()) Fail(root_.status());
    session_ = std::make_unique<ClientSession>(root_, rt);
    Status s = session_->Run({}, {}, inits, nullptr);
    if (s.ok()) s = session_->Run({}, {}, targets_, nullptr);  // warm-up: registers the partitions
    if (!s.ok()) Fail(s);
    steps_ = std::max(3, Calls(bytes) / chain);
  }

  // Microseconds per step (chain 1) or per all-reduce of the chain in one round of steps.
  double Round() {
    if (between_) MPI_Barrier(MPI_COMM_WORLD);
    const auto t0 = Clock::now();
    for (int i = 0; i < steps_; ++i) (void)session_->Run({}, {}, targets_, nullptr);
    return Seconds(t0) / steps_ / chain_ * 1e6;
  }

 private:
  [[noreturn]] static void Fail(const cfx::Status& s) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    std::exit(1);
  }
  cfx::Scope root_;
  bool between_;
  int chain_;
  int steps_ = 0;
  std::vector<cfx::Operation> targets_;
  std::unique_ptr<cfx::ClientSession> session_;
};

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
  int rounds = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--replication" && i + 1 < argc) {
      replication = argv[++i];
    } else if (arg == "--max-bytes" && i + 1 < argc) {
      max_bytes = std::strtoull(argv[++i], nullptr, 10);
    } else if (arg == "--rounds" && i + 1 < argc) {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else {
      if (rank == 0)
        std::fprintf(stderr,
                     "usage: allreduce_bench [--replication between-graph|in-graph] "
                     "[--max-bytes N] [--rounds R]\n");
      return 2;
    }
  }
  std::vector<size_t> sizes;
  for (size_t b : kBytes)
    if (b <= max_bytes) sizes.push_back(b);
  const bool between = replication == "between-graph";
  // In graph, ranks other than 0 serve as workers inside ClusterRuntime and exit when rank 0 is
  // done: raw MPI runs first. Between graphs every rank returns, and each round of raw calls is
  // followed by a round of steps and one of chains, so that the three see the same machine (a
  // shared one varies by tens of percent from minute to minute).
  std::vector<std::vector<double>> raw_rounds(sizes.size());
  if (!between)
    for (size_t k = 0; k < sizes.size(); ++k)
      for (int round = 0; round < rounds; ++round) raw_rounds[k].push_back(RawRound(sizes[k]));
  IdleBarrier();
  std::unique_ptr<cfx::Runtime> runtime =
      cfx::bench::ClusterRuntime(ClusterYaml(size, replication), "allreduce_bench");
  if (rank == 0) {
    std::printf("All-reduce (sum) of float tensors over %d ranks, %s replication, microseconds\n",
                size, replication.c_str());
    std::printf("%8s %12s %12s %12s %10s %10s\n", "size", "raw MPI", "graph step", "in chain",
                "step/raw", "chain/raw");
  }
  for (size_t k = 0; k < sizes.size(); ++k) {
    GraphAllReduce step(runtime.get(), size, between, sizes[k], 1);
    GraphAllReduce chain(runtime.get(), size, between, sizes[k], kChain);
    double raw_best = 1e30, step_best = 1e30, chain_best = 1e30;
    for (int round = 0; round < rounds; ++round) {
      raw_best = std::min(raw_best, between ? RawRound(sizes[k]) : raw_rounds[k][round]);
      step_best = std::min(step_best, step.Round());
      chain_best = std::min(chain_best, chain.Round());
    }
    if (rank == 0)
      std::printf("%8s %12.1f %12.1f %12.1f %10.2f %10.2f\n", Size(sizes[k]).c_str(), raw_best,
                  step_best, chain_best, step_best / raw_best, chain_best / raw_best);
  }
  runtime.reset();
  return 0;
}
