// Ping-pong between ranks 0 and 1 through the mpi transport plugin (the runtime's Transport, as
// the distributed runtime uses it) against raw MPI_Send/MPI_Recv measured in the same run, and
// the CPU an idle transport uses. Run with two ranks:
//   mpirun -n 2 build/bin/transport_pingpong [--funnel]
// Prints, per message size, the one-way time of each and their ratio.
#include <mpi.h>
#include <sys/resource.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "conflux/kernel_registry.h"
#include "conflux/op_def.h"
#include "plugin/plugin_manager.h"
#include "plugin/plugin_transport.h"

namespace {

using Clock = std::chrono::steady_clock;

// Blocks until one operation's done ran.
class Waiter {
 public:
  cfx::Transport::Done Callback() {
    return [this](const cfx::Status& s) {
      std::lock_guard<std::mutex> lock(mu_);
      status_ = s;
      done_ = true;
      cv_.notify_one();
    };
  }
  cfx::Status Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return done_; });
    done_ = false;
    return status_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  cfx::Status status_;
};

double TransportOneWayUs(cfx::Transport& t, std::vector<char>& buffer, size_t bytes, int rounds) {
  const int peer = 1 - t.rank();
  Waiter sent, received;
  auto alloc = [&buffer](std::string_view, uint64_t) -> cfx::StatusOr<void*> {
    return static_cast<void*>(buffer.data());
  };
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < rounds; ++i) {
    const std::string key = std::to_string(bytes) + ";" + std::to_string(i);
    if (t.rank() == 0) {
      t.Send(peer, key + "p", "", buffer.data(), bytes, sent.Callback());
      t.Recv(peer, key + "q", alloc, received.Callback());
    } else {
      t.Recv(peer, key + "p", alloc, received.Callback());
      if (!received.Wait().ok()) std::abort();
      t.Send(peer, key + "q", "", buffer.data(), bytes, sent.Callback());
    }
    if (!sent.Wait().ok()) std::abort();
    if (t.rank() == 0 && !received.Wait().ok()) std::abort();
  }
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count() / rounds / 2;
}

double RawOneWayUs(int rank, std::vector<char>& buffer, size_t bytes, int rounds) {
  const int peer = 1 - rank;
  MPI_Barrier(MPI_COMM_WORLD);
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < rounds; ++i) {
    if (rank == 0) {
      MPI_Send(buffer.data(), static_cast<int>(bytes), MPI_BYTE, peer, 1, MPI_COMM_WORLD);
      MPI_Recv(buffer.data(), static_cast<int>(bytes), MPI_BYTE, peer, 1, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(buffer.data(), static_cast<int>(bytes), MPI_BYTE, peer, 1, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
      MPI_Send(buffer.data(), static_cast<int>(bytes), MPI_BYTE, peer, 1, MPI_COMM_WORLD);
    }
  }
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count() / rounds / 2;
}

double CpuSeconds() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

}  // namespace

int main(int argc, char** argv) {
  const bool funnel = argc > 1 && std::strcmp(argv[1], "--funnel") == 0;
  cfx::OpRegistry ops;
  cfx::KernelRegistry kernels;
  cfx::PluginManager plugins(&ops, &kernels, {});
  cfx::PluginSpec spec;
  spec.path = std::string(CONFLUX_BUILD_PLUGIN_DIR) + "/libconflux_transport-mpi.so";
  if (cfx::Status s = plugins.Load(spec); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  const auto& entry = plugins.transports().at("mpi");
  auto made = cfx::internal::CreatePluginTransport(entry.desc, entry.plugin,
                                                   {{"funnel", funnel ? "true" : "false"}}, 2);
  if (!made.ok()) {
    std::fprintf(stderr, "%s\n", made.status().ToString().c_str());
    return 1;
  }
  cfx::Transport& t = **made;
  std::vector<char> buffer(64 << 20, 1);
  if (t.rank() == 0)
    std::printf("%10s %14s %14s %8s %12s\n", "bytes", "transport us", "raw MPI us", "ratio",
                "transport GB/s");
  for (size_t bytes : {size_t{8}, size_t{1} << 10, size_t{64} << 10, size_t{1} << 20,
                       size_t{16} << 20, size_t{64} << 20}) {
    const int rounds = bytes <= (64 << 10) ? 2000 : bytes <= (1 << 20) ? 200 : 20;
    TransportOneWayUs(t, buffer, bytes, rounds / 10 + 1);  // warm up
    const double ours = TransportOneWayUs(t, buffer, bytes, rounds);
    const double raw = RawOneWayUs(t.rank(), buffer, bytes, rounds);
    if (t.rank() == 0)
      std::printf("%10zu %14.2f %14.2f %8.2f %12.2f\n", bytes, ours, raw, ours / raw,
                  bytes / ours / 1e3);
  }
  // An idle transport: its progress thread sleeps after a short spin.
  MPI_Barrier(MPI_COMM_WORLD);
  const double cpu_before = CpuSeconds();
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const double idle_cpu = CpuSeconds() - cpu_before;
  if (t.rank() == 0)
    std::printf("idle: %.1f ms of CPU in 2 s (%.2f%% of a core)%s\n", idle_cpu * 1e3,
                idle_cpu / 2 * 100, funnel ? ", funnel" : "");
  MPI_Barrier(MPI_COMM_WORLD);
  made->reset();
  return 0;
}
