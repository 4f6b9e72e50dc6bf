// The process group of a cluster (docs/distributed.md): the transport, which rank runs which
// task, and the control channel between the chief (the master) and the other tasks (workers).
//
// One ProcessGroup per process, created on the first Runtime whose config has a `cluster:`
// section and kept until the process exits (a transport such as MPI joins a group once per
// process). On the chief, each Runtime opens a session of the group with the workers (Cluster);
// the workers serve it (worker.h) until it closes, and the next one after it; when the chief
// process exits, the workers exit too.
#ifndef CONFLUX_CORE_SRC_DISTRIBUTED_CLUSTER_H_
#define CONFLUX_CORE_SRC_DISTRIBUTED_CLUSTER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "conflux/config.h"
#include "conflux/device.h"
#include "conflux/step_stats.h"
#include "distributed/wire.h"
#include "runtime/step.h"
#include "runtime/transport.h"

namespace cfx::internal {

// Control messages (master -> worker), in the order a worker serves them.
enum class ControlType : uint8_t {
  kOpen = 1,        // a chief Runtime starts: its config; reply: the worker's devices
  kClose = 2,       // that Runtime ends
  kRegister = 3,    // partitions of one signature; reply: status
  kDeregister = 4,  // forget them
  kRun = 5,         // run them for one step; reply when done: status (and stats)
  kAbort = 6,       // abort a step
  kPing = 7,        // echo (link measurement); reply: the payload
  kExit = 8,        // the chief process exits
};

// A worker's view of the chief's heartbeats: armed by the first ping, then overdue once the
// chief has been silent for longer than the timeout. A process that was itself stopped (SIGSTOP,
// a debugger) finds its checks far apart: the chief's pings are queued, not missing, and it gets
// a fresh timeout. Thread-safe.
class ChiefSilence {
 public:
  explicit ChiefSilence(int64_t timeout_ms) : timeout_ms_(timeout_ms) {}
  int64_t timeout_ms() const { return timeout_ms_; }
  // Something came from the chief; `ping` when it was a heartbeat.
  void Heard(bool ping);
  // Called about every `period`: 0 while the chief is in time (or before its first ping), else
  // how many ms it has been silent.
  int64_t Overdue(std::chrono::milliseconds period);

 private:
  const int64_t timeout_ms_;
  std::mutex mu_;
  bool armed_ = false;
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point checked_ = last_;
};

class ProcessGroup {
 public:
  ProcessGroup(std::shared_ptr<Transport> transport, std::vector<ClusterTask> tasks, int chief);
  // On the chief: tells every worker to exit. Then leaves the group.
  ~ProcessGroup();

  Transport* transport() const { return transport_.get(); }
  int rank() const { return rank_; }
  int size() const { return static_cast<int>(tasks_.size()); }
  int chief() const { return chief_; }
  bool is_chief() const { return rank_ == chief_; }
  const std::vector<ClusterTask>& tasks() const { return tasks_; }
  // "/job:worker/replica:0/task:1"
  const std::string& task_name(int rank) const { return names_[rank]; }
  // The rank of the task a full device name ("/job:ps/replica:0/task:0/device:CPU:0") is in; -1
  // when it names no task of the cluster.
  int RankOfDevice(std::string_view device) const;

  // Chief: checks that the workers answer (a ping every `interval_ms`; none for `timeout_ms`
  // means dead). Started once, by the first Runtime that opens the group; interval 0 = never.
  void StartHeartbeats(int64_t interval_ms, int64_t timeout_ms);
  // OK while `rank` answers; once it stopped answering, Unavailable naming the task (for good:
  // a task that came back is not taken back).
  Status TaskHealth(int rank) const;
  // Worker: watches the chief's liveness link (liveness.h), once the chief's StartHeartbeats
  // sent its invitation; `chief_ended` runs when the chief's process ended.
  void WatchChief(std::function<void()> chief_ended);

  // Between-graph replication (cluster.replication): every rank runs its own program and no
  // task serves control messages. The chief watches the other tasks' liveness links and every
  // other task the chief's (and hears from the chief of the others' deaths). With
  // `interval_ms` > 0 the chief also pings every worker that often, and the workers' transport
  // threads answer: a worker that leaves the pings unanswered for `timeout_ms`, or a chief that
  // stops sending them for as long, is taken for dead too (a process that hangs, or is stopped,
  // keeps its sockets open). A task taken for dead cancels every step this process runs
  // (AddStep) with an Unavailable error naming it, and fails later steps (AnyDead). A step past
  // its time limit is cancelled the same way. A step still running kStuckStepGraceMs after its
  // cancellation is blocked in a collective that a peer never joins, which nothing can
  // interrupt: the process then logs why and exits with status 1. Called once, when the process
  // joins the group.
  void StartBetweenGraph(int64_t interval_ms, int64_t timeout_ms);
  bool between_graph() const { return between_graph_.load(std::memory_order_acquire); }
  static constexpr int64_t kStuckStepGraceMs = 1000;
  // `timeout_ms` > 0: the step is cancelled with DeadlineExceeded once it runs that long.
  void AddStep(CancellationManager* step, int64_t timeout_ms);
  void RemoveStep(CancellationManager* step);
  // OK while every task is alive; else the error of the first task taken for dead.
  Status AnyDead() const;

  // Chief: sends a control message to a worker (keys "ctl;<seq>" in order per worker). With
  // `wait`, returns once the transport has sent it; without, at once (errors are logged): for
  // callers that must not block, such as a step's cancellation callbacks, which may run while
  // the transport's thread waits for them.
  Status SendControl(int rank, ControlType type, std::string_view body, bool wait = true);
  // Worker: blocks for the next control message from the chief.
  Status NextControl(ControlType* type, std::string* body);
  // Unique across the group's lifetime: step ids (on the chief) and runtime ids.
  int64_t NewStepId() { return next_step_id_.fetch_add(1); }
  int64_t NewRuntimeId() { return next_runtime_id_.fetch_add(1); }
  // The transport's collectives over host memory (null when it has none), created with the
  // group on every rank.
  Collectives* host_collectives() const { return host_collectives_.get(); }
  void set_host_collectives(std::unique_ptr<Collectives> c) { host_collectives_ = std::move(c); }
  // Its collectives for device memory (a device plugin's, e.g. NCCL for GPU), created with the
  // group on every rank when every rank has devices of their type (runtime.cc).
  DeviceCollectives& device_collectives() { return device_collectives_; }
  const DeviceCollectives& device_collectives() const { return device_collectives_; }

 private:
  std::shared_ptr<Transport> transport_;
  std::unique_ptr<Collectives> host_collectives_;  // destroyed before the transport
  DeviceCollectives device_collectives_;           // destroyed before the transport
  std::vector<ClusterTask> tasks_;
  std::vector<std::string> names_;
  std::unordered_map<std::string, int> rank_of_task_;
  int rank_ = 0;
  int chief_ = 0;
  std::mutex mu_;
  std::vector<int64_t> next_seq_;  // chief: per worker; worker: [0] = the next to receive
  struct Health;
  std::shared_ptr<Health> health_;
  // From then on, steps and replies that need `rank` fail with `why` (once per rank); `ended`
  // when its process is known to have ended.
  void TakeForDead(int rank, const Status& why, bool ended);
  // Listens for the workers' liveness links (the chief's half of StartHeartbeats).
  void ListenForWorkers();
  // Chief: the heartbeat thread, which pings the workers every `interval_ms` (control messages
  // in graph, byte messages between graphs) and takes those silent for `timeout_ms` for dead.
  void Ping(int64_t interval_ms, int64_t timeout_ms);
  // A worker between graphs: answers the chief's ping `seq` when it comes, then awaits the next,
  // on the transport's thread; records when the last came.
  static void AnswerPing(Transport* transport, std::shared_ptr<Health> health,
                         std::shared_ptr<ChiefSilence> silence, int rank, int chief, int64_t seq);
  // Between graphs: returns once every task's program has ended (or its task was taken for
  // dead), so that all ranks finalize the transport together.
  void ExitTogether();
  // One byte message under `key` from each of `ranks`, received in the background; Await waits
  // until all came or their senders were taken for dead, at most until `deadline`, and returns
  // the live senders still awaited.
  struct Arrivals;
  std::shared_ptr<Arrivals> Expect(const std::vector<int>& ranks, const char* key);
  std::set<int> Await(const std::shared_ptr<Arrivals>& arrivals,
                      std::chrono::steady_clock::time_point deadline) const;
  std::atomic<bool> between_graph_{false};
  std::atomic<bool> any_dead_{false};
  struct Steps;
  std::shared_ptr<Steps> steps_;
  struct Liveness;
  std::shared_ptr<Liveness> liveness_;
  std::thread heartbeat_thread_;
  std::atomic<int64_t> next_step_id_{1};
  std::atomic<int64_t> next_runtime_id_{1};
};

// A device of another task, as the chief sees it: placement and partitioning use its name, type
// and incarnation; nothing runs on it in this process.
struct RemoteDeviceInfo {
  std::string name;  // full name
  std::string type;
  std::string plugin;
  std::string description;
  bool host_addressable = true;
  uint64_t incarnation = 0;
  int64_t memory_limit = 0;
};
std::string EncodeDevices(const std::vector<RemoteDeviceInfo>& devices);
StatusOr<std::vector<RemoteDeviceInfo>> DecodeDevices(std::string_view bytes,
                                                      const std::string& from);
std::unique_ptr<Device> MakeRemoteDevice(const RemoteDeviceInfo& info);

// One chief Runtime's session with the group: the workers' devices, opened in the constructor
// (kOpen to every worker; `config_yaml` is the chief's config, which workers run under) and
// closed in the destructor.
class Cluster {
 public:
  static StatusOr<std::unique_ptr<Cluster>> Open(ProcessGroup* group,
                                                 const std::string& config_yaml);
  ~Cluster();

  ProcessGroup* group() const { return group_; }
  int64_t runtime_id() const { return runtime_id_; }
  const std::vector<std::unique_ptr<Device>>& remote_devices() const { return remote_devices_; }
  // Measured round trip to the workers: one-way latency in us and bytes per us (the mean over
  // workers of a small and a 1 MiB echo).
  double latency_us() const { return latency_us_; }
  double bytes_per_us() const { return bytes_per_us_; }
  // Waits for the reply `key` from `rank` (a worker's answer to a control message).
  StatusOr<std::string> Reply(int rank, const std::string& key);

 private:
  Cluster(ProcessGroup* group, int64_t id) : group_(group), runtime_id_(id) {}
  Status MeasureLinks();
  ProcessGroup* group_;
  int64_t runtime_id_;
  std::vector<std::unique_ptr<Device>> remote_devices_;
  double latency_us_ = 50, bytes_per_us_ = 1e3;
};

// Reply keys (worker `rank` -> chief): "<kind>;<rank>;...", so that a dead task's pending
// replies can be failed by prefix (ReplyPrefixes).
std::string OpenReplyKey(int rank, int64_t runtime_id);
std::string RegisterReplyKey(int rank, int64_t runtime_id, int64_t handle);
std::string RunReplyKey(int rank, int64_t step_id);
std::string PingReplyKey(int rank, int64_t runtime_id, int64_t seq);
std::vector<std::string> ReplyPrefixes(int rank);

// Sends a reply or control message without waiting; a failure is logged (the receiver's wait
// ends through its own error path: a step abort, a heartbeat).
void SendLogged(Transport* transport, int peer, const std::string& key, std::string bytes);

// Step stats on the wire (a worker's partitions' stats for a traced step).
void EncodeStepStats(WireWriter& w, const std::vector<DeviceStepStats>& stats);
Status DecodeStepStats(WireReader& r, std::vector<DeviceStepStats>* stats);

}  // namespace cfx::internal

#endif  // CONFLUX_CORE_SRC_DISTRIBUTED_CLUSTER_H_
