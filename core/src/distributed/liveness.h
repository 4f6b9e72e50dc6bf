// LivenessLinks: a TCP connection from every worker task to the chief, there only to end. The
// kernel closes a process's sockets when the process ends, however it ends (kill -9, a crash,
// an OOM kill), and the other end then reads the end of the stream at once. So the chief learns
// within milliseconds that a worker process is gone, and a worker that its chief is gone, where
// heartbeats need their timeout (cluster.heartbeat.timeout). Heartbeats still cover what a
// socket cannot see: a process that hangs, a host that vanishes from the network.
//
// A link that ends on purpose says goodbye first (one byte), so that a normal shutdown is not
// taken for a death. The chief listens on every IPv4 address of its host (port chosen by the
// kernel) and sends the workers its addresses and a random token over the transport; a worker
// tries the addresses in turn and keeps the first connection that echoes the token's
// acknowledgement. A worker that cannot connect logs why and relies on heartbeats alone.
#ifndef CONFLUX_CORE_SRC_DISTRIBUTED_LIVENESS_H_
#define CONFLUX_CORE_SRC_DISTRIBUTED_LIVENESS_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "conflux/status.h"

namespace cfx::internal {

class LivenessLinks {
 public:
  // Runs on the links' thread when the link of `rank` ended without a goodbye.
  using Ended = std::function<void(int rank)>;

  // Chief: listens and accepts the workers' links. `Invitation()` is what the workers need.
  static StatusOr<std::unique_ptr<LivenessLinks>> Listen(Ended ended);
  // Worker `rank`: connects to the chief `chief` with the chief's invitation. Returns at once;
  // connecting happens on the links' thread.
  static std::unique_ptr<LivenessLinks> Connect(const std::string& invitation, int rank,
                                                int chief, Ended ended);
  // Says goodbye on every link, closes them and ends the thread.
  ~LivenessLinks();
  LivenessLinks(const LivenessLinks&) = delete;
  LivenessLinks& operator=(const LivenessLinks&) = delete;

  // Chief: "<token> <ip>:<port> <ip>:<port> ...".
  const std::string& Invitation() const { return invitation_; }
  // Worker: waits up to `limit` for the link to the chief; true once the chief has accepted and
  // identified it (so that it sees this process end from then on), false when connecting failed
  // or takes longer.
  bool WaitUntilConnected(std::chrono::milliseconds limit);

 private:
  struct Link {
    int fd = -1;
    int rank = -1;         // -1 until the worker said who it is
    std::string received;  // the chief: the identification so far
    bool goodbye = false;  // the other end said goodbye: its end is not a death
  };
  explicit LivenessLinks(Ended ended);
  void Serve();                  // the chief's thread: accept, identify, watch
  void Watch(int chief);         // a worker's thread: connect, then watch
  bool Stopping();               // the wake-up pipe was written
  Ended ended_;
  std::string invitation_;
  uint64_t token_ = 0;
  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};       // written once, by the destructor
  std::string chief_invitation_;  // worker
  int rank_ = -1;                 // worker
  std::vector<Link> links_;      // touched by the thread only, until it ended
  std::thread thread_;
  std::mutex dial_mu_;  // worker: the outcome of connecting, once known
  std::condition_variable dialed_cv_;
  int dialed_ = 0;  // 0 = not yet, 1 = connected, -1 = failed
};

}  // namespace cfx::internal

#endif  // CONFLUX_CORE_SRC_DISTRIBUTED_LIVENESS_H_
