// Transfers and steps across processes, against raw MPI in the same program (docs/distributed.md).
//
//   mpirun -n 2 build/bin/distributed_bench        # tensor transfer: runtime vs raw MPI
//   mpirun -n 4 build/bin/distributed_bench        # also: an empty step over 4 tasks
// (as root add --allow-run-as-root; with more ranks than cores --oversubscribe)
//
// 1. Raw MPI: a ping-pong of S bytes between ranks 0 and 1 (MPI_Send/MPI_Recv into buffers
//    allocated once), for S from 8 B to 64 MiB: round-trip time and bandwidth (2 S / rtt).
// 2. The same through the runtime: one step of a while loop whose body moves a tensor of S
//    bytes to task 1 (an Identity there) and back to the chief (an Identity), K iterations;
//    rtt = step time / K. Every iteration is two _Send/_Recv pairs across processes plus the
//    loop's own control (Enter/Merge/Switch/NextIteration and the control loop on task 1).
// 3. An empty distributed step (a NoOp on every task) and a 10,000-iteration while loop whose
//    body (an AddV2) sits on task 1: the master/worker protocol's per-step cost and the
//    iterations per second of a loop split across processes.
// 4. A step whose work (a 512x512 MatMul of random numbers, a few milliseconds) runs on task 1
//    and whose result, one float, goes to the chief, against the same step on the chief alone:
//    the difference is what running a step's work on another task adds (the request to run it,
//    and a reply that comes after milliseconds without traffic).
// 5. The tensor of 2. as float32, with cluster.compression none, truncate16 and half (a session
//    of the same cluster per mode): round-trip time and the bytes sent per byte of tensor.
// Ranks not in a measurement wait in a sleeping barrier, so they do not take a core.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "conflux/cc/control_flow.h"
#include "conflux/cc/ops/standard_ops.h"
#include "conflux/config.h"
#include "conflux/runtime.h"
#include "mpi_bench_util.h"
#include "conflux/session.h"
#include "distributed/compression.h"

namespace {

using cfx::bench::Clock;
using cfx::bench::IdleBarrier;
using cfx::bench::Seconds;

const std::vector<size_t> kSizes = {8, 64, 1024, 16 << 10, 256 << 10, 1 << 20, 4 << 20,
                                    16 << 20, 64 << 20};

// Round trips for a size: enough to move ~1 GiB, between 20 and 5000.
int Reps(size_t bytes) {
  return static_cast<int>(std::clamp<size_t>((size_t{1} << 30) / (2 * bytes), 20, 5000));
}

// Raw MPI ping-pong on `pair` (ranks 0 and 1); the best of three runs, in microseconds per round
// trip (rank 0's view).
std::vector<double> RawPingPong(int rank, MPI_Comm pair) {
  std::vector<double> rtt;
  std::vector<char> buffer(kSizes.back());
  for (size_t bytes : kSizes) {
    const int reps = Reps(bytes);
    double best = 1e30;
    for (int run = 0; run < 3; ++run) {
      MPI_Barrier(pair);
      auto start = Clock::now();
      for (int i = 0; i < reps; ++i) {
        if (rank == 0) {
          MPI_Send(buffer.data(), static_cast<int>(bytes), MPI_BYTE, 1, 0, pair);
          MPI_Recv(buffer.data(), static_cast<int>(bytes), MPI_BYTE, 1, 0, pair,
                   MPI_STATUS_IGNORE);
        } else {
          MPI_Recv(buffer.data(), static_cast<int>(bytes), MPI_BYTE, 0, 0, pair,
                   MPI_STATUS_IGNORE);
          MPI_Send(buffer.data(), static_cast<int>(bytes), MPI_BYTE, 0, 0, pair);
        }
      }
      best = std::min(best, Seconds(start) * 1e6 / reps);
    }
    rtt.push_back(best);
  }
  return rtt;
}

std::string ClusterYaml(int tasks, const std::string& compression = "none") {
  return std::string("plugin_paths: [\"") + CONFLUX_BUILD_PLUGIN_DIR + R"("]
plugins:
  - {name: cpu}
  - {name: transport-mpi}
devices:
  CPU: {count: 1}
threads: {intra_op: 1, inter_op: 1}
cluster:
  transport: mpi
  transport_options: {)" + cfx::bench::TransportOptions() + R"(}
  compression: {mode: )" + compression + R"(}
  jobs:
    - {name: worker, tasks: )" + std::to_string(tasks) + "}\n";
}

std::string Task(int t) {
  return "/job:worker/replica:0/task:" + std::to_string(t) + "/device:CPU:0";
}

// Microseconds per iteration of a loop of `trips` iterations whose body sends `x` to task 1 and
// back (best of three steps).
double RuntimeRoundTrip(cfx::Runtime* rt, size_t bytes, int trips,
                        cfx::DataType dtype = cfx::DT_UINT8) {
  using namespace cfx;  // NOLINT
  Scope root = Scope::NewRootScope(rt);
  Scope chief = root.WithDevice(Task(0));
  Output x = ops::Placeholder(chief, dtype);
  Output n = ops::Placeholder(chief, DT_INT32);
  Output i0 = ops::Const(chief, 0);
  std::vector<Output> out;
  Status built = WhileLoop(
      chief, {i0, x},
      [&](const Scope& s, const std::vector<Output>& v, Output* pred) {
        *pred = ops::Less(s, v[0], n);
        return s.status();
      },
      [&](const Scope& s, const std::vector<Output>& v, std::vector<Output>* next) {
        Output there = ops::Identity(s.WithDevice(Task(1)), v[1]);
        Output back = ops::Identity(s, there);
        *next = {ops::AddV2(s, v[0], 1), back};
        return s.status();
      },
      &out, {.parallel_iterations = 1});
  GraphDef graph;
  if (!built.ok() || !root.ToGraphDef(&graph).ok()) {
    std::fprintf(stderr, "building the graph: %s\n", built.ToString().c_str());
    std::exit(1);
  }
  auto session = Session::Create(rt, graph).value();
  Tensor value(dtype, TensorShape({static_cast<int64_t>(bytes / DataTypeSize(dtype))}));
  std::memset(value.raw_data(), 1, bytes);
  Tensor count(DT_INT32, TensorShape({}));
  std::vector<Tensor> result;
  double best = 1e30;
  for (int run = 0; run < 4; ++run) {
    count.data<int32_t>()[0] = run == 0 ? 2 : trips;  // the first run registers the graph
    auto start = Clock::now();
    Status s = session->Run({{x.name(), value}, {n.name(), count}}, {out[1].name()}, {}, &result);
    if (!s.ok()) {
      std::fprintf(stderr, "step: %s\n", s.ToString().c_str());
      std::exit(1);
    }
    if (run > 0) best = std::min(best, Seconds(start) * 1e6 / trips);
  }
  return best;
}

// Microseconds per step of a NoOp on every task (best of three runs of `steps` steps).
double EmptyStep(cfx::Runtime* rt, int tasks, int steps) {
  using namespace cfx;  // NOLINT
  Scope root = Scope::NewRootScope(rt);
  std::vector<std::string> targets;
  for (int t = 0; t < tasks; ++t) targets.push_back(ops::NoOp(root.WithDevice(Task(t))).name());
  GraphDef graph;
  (void)root.ToGraphDef(&graph);
  auto session = Session::Create(rt, graph).value();
  (void)session->Run({}, {}, targets, nullptr);
  double best = 1e30;
  for (int run = 0; run < 3; ++run) {
    auto start = Clock::now();
    for (int i = 0; i < steps; ++i) (void)session->Run({}, {}, targets, nullptr);
    best = std::min(best, Seconds(start) * 1e6 / steps);
  }
  return best;
}

// Microseconds per step of Sum(MatMul(x, x)) for a 512x512 x of RandomUniform (stateful, so not
// folded into a constant), all on `task`, its
// sum fetched by the chief (mean of `steps` steps, best of three runs).
double MatMulStep(cfx::Runtime* rt, int task, int steps) {
  using namespace cfx;  // NOLINT
  Scope root = Scope::NewRootScope(rt);
  Scope s = root.WithDevice(Task(task));
  Output x = ops::RandomUniform(s, ops::Const(s, {512, 512}), DT_FLOAT);
  Output sum = ops::Sum(s, ops::MatMul(s, x, x), ops::Const(s, {0, 1}));
  GraphDef graph;
  if (!root.ToGraphDef(&graph).ok()) std::exit(1);
  auto session = Session::Create(rt, graph).value();
  std::vector<Tensor> result;
  double best = 1e30;
  for (int run = 0; run < 4; ++run) {
    auto start = Clock::now();
    for (int i = 0; i < steps; ++i) {
      Status st = session->Run({}, {sum.name()}, {}, &result);
      if (!st.ok()) {
        std::fprintf(stderr, "matmul step: %s\n", st.ToString().c_str());
        std::exit(1);
      }
    }
    if (run > 0) best = std::min(best, Seconds(start) * 1e6 / steps);
  }
  return best;
}

// Iterations per second of a 10,000-iteration loop whose body (x + 1) runs on task 1.
double LoopOnAnotherTask(cfx::Runtime* rt, int trips) {
  using namespace cfx;  // NOLINT
  Scope root = Scope::NewRootScope(rt);
  Scope chief = root.WithDevice(Task(0));
  std::vector<Output> out;
  Status built = WhileLoop(
      chief, {ops::Const(chief, 0), ops::Const(chief, 0.0f)},
      [&](const Scope& s, const std::vector<Output>& v, Output* pred) {
        *pred = ops::Less(s, v[0], trips);
        return s.status();
      },
      [&](const Scope& s, const std::vector<Output>& v, std::vector<Output>* next) {
        *next = {ops::AddV2(s, v[0], 1), ops::AddV2(s.WithDevice(Task(1)), v[1], 1.0f)};
        return s.status();
      },
      &out);
  GraphDef graph;
  if (!built.ok() || !root.ToGraphDef(&graph).ok()) std::exit(1);
  auto session = Session::Create(rt, graph).value();
  std::vector<Tensor> result;
  double best = 0;
  for (int run = 0; run < 3; ++run) {
    auto start = Clock::now();
    Status s = session->Run({}, {out[1].name()}, {}, &result);
    if (!s.ok() || result[0].data<float>()[0] != static_cast<float>(trips)) {
      std::fprintf(stderr, "loop: %s\n", s.ToString().c_str());
      std::exit(1);
    }
    best = std::max(best, trips / Seconds(start));
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  int rank = 0, size = 0;
  if (!cfx::bench::StartMpi(&argc, &argv, &rank, &size)) return 2;
  MPI_Comm pair;
  MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, rank, &pair);
  std::vector<double> raw;
  if (rank < 2) {
    raw = RawPingPong(rank, pair);
    MPI_Comm_free(&pair);
  }
  IdleBarrier();

  // Ranks other than 0 serve as workers inside this call and exit when rank 0 is done.
  std::unique_ptr<cfx::Runtime> runtime =
      cfx::bench::ClusterRuntime(ClusterYaml(size), "distributed_bench");
  std::printf("Tensor transfer, ranks 0 <-> 1 (round trip; bandwidth = 2 x size / rtt)\n");
  std::printf("%10s %12s %12s %10s %10s %8s %10s\n", "bytes", "raw rtt us", "rt rtt us",
              "raw MB/s", "rt MB/s", "bw ratio", "+us/way");
  for (size_t k = 0; k < kSizes.size(); ++k) {
    const size_t bytes = kSizes[k];
    const double rt = RuntimeRoundTrip(runtime.get(), bytes, std::min(Reps(bytes), 2000));
    std::printf("%10zu %12.1f %12.1f %10.0f %10.0f %8.2f %10.1f\n", bytes, raw[k], rt,
                2.0 * bytes / raw[k], 2.0 * bytes / rt, raw[k] / rt, (rt - raw[k]) / 2);
  }
  std::printf("\nEmpty step over %d tasks: %.1f us\n", size, EmptyStep(runtime.get(), size, 500));
  std::printf("While loop of 10000 iterations, body on task 1: %.0f iterations/s\n",
              LoopOnAnotherTask(runtime.get(), 10000));
  const double local = MatMulStep(runtime.get(), 0, 300);
  const double remote = MatMulStep(runtime.get(), 1, 300);
  std::printf("512x512 MatMul step: %.1f us on the chief, %.1f us on task 1 (+%.1f us)\n", local,
              remote, remote - local);

  // cluster.compression: float32 tensors as 16-bit values (another session of the same cluster
  // per mode); bytes as counted by the sender.
  std::vector<std::unique_ptr<cfx::Runtime>> compressed;
  for (const char* mode : {"truncate16", "half"})
    compressed.push_back(cfx::bench::ClusterRuntime(ClusterYaml(size, mode), mode));
  std::printf("\nFloat32 tensors, ranks 0 <-> 1, cluster.compression (rtt us; ratio = none / "
              "mode; wire = bytes sent per byte of tensor)\n");
  std::printf("%10s %10s %12s %8s %8s %12s %8s %8s\n", "bytes", "none", "truncate16", "ratio",
              "wire", "half", "ratio", "wire");
  for (size_t bytes : kSizes) {
    if (bytes < 1024) continue;
    const int trips = std::min(Reps(bytes), 2000);
    const double plain = RuntimeRoundTrip(runtime.get(), bytes, trips, cfx::DT_FLOAT);
    std::printf("%10zu %10.1f", bytes, plain);
    for (auto& rt : compressed) {
      auto& sent = cfx::internal::SentBytes();
      const uint64_t tensor0 = sent.tensor_bytes, wire0 = sent.wire_bytes;
      const double t = RuntimeRoundTrip(rt.get(), bytes, trips, cfx::DT_FLOAT);
      const double wire = static_cast<double>(sent.wire_bytes - wire0) /
                          static_cast<double>(std::max<uint64_t>(sent.tensor_bytes - tensor0, 1));
      std::printf(" %12.1f %8.2f %8.2f", t, plain / t, wire);
    }
    std::printf("\n");
  }
  compressed.clear();
  runtime.reset();
  return 0;
}
