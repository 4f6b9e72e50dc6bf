// ProcessGroup, Cluster and the remote devices.
#include "distributed/cluster.h"

#include <chrono>
#include <condition_variable>
#include <map>
#include <set>
#include <thread>

#include "distributed/liveness.h"
#include "distributed/wire.h"
#include "util/log.h"

namespace cfx::internal {

namespace {
const char* const kReplyKinds[] = {"open", "reg", "run", "pong"};
const char* const kLivenessKey = "liveness";
// Between-graph replication: the chief tells the other tasks that a task was taken for dead.
const char* const kDeathKey = "death";
// Between-graph replication: a worker's liveness link is up (or failed), sent to the chief.
const char* const kLinkedKey = "linked";
// Between-graph replication: a rank's program has ended (both ways: worker -> chief, and the
// chief's answer once every worker has).
const char* const kExitKey = "exit";
// Between-graph replication: the chief's heartbeat `seq` to a worker (its answer: PingReplyKey).
std::string BetweenGraphPingKey(int64_t seq) { return "hb;" + std::to_string(seq); }
std::string ReplyKey(int kind, int rank, const std::string& rest) {
  return std::string(kReplyKinds[kind]) + ";" + std::to_string(rank) + ";" + rest;
}
}  // namespace

std::string OpenReplyKey(int rank, int64_t runtime_id) {
  return ReplyKey(0, rank, std::to_string(runtime_id));
}
std::string RegisterReplyKey(int rank, int64_t runtime_id, int64_t handle) {
  return ReplyKey(1, rank, std::to_string(runtime_id) + ";" + std::to_string(handle));
}
std::string RunReplyKey(int rank, int64_t step_id) {
  return ReplyKey(2, rank, std::to_string(step_id) + ";");
}
std::string PingReplyKey(int rank, int64_t runtime_id, int64_t seq) {
  return ReplyKey(3, rank, std::to_string(runtime_id) + ";" + std::to_string(seq));
}
std::vector<std::string> ReplyPrefixes(int rank) {
  std::vector<std::string> out;
  for (int k = 0; k < 4; ++k) out.push_back(ReplyKey(k, rank, ""));
  return out;
}

// The chief's view of whether each worker answers its pings.
struct ProcessGroup::Health {
  std::mutex mu;
  std::condition_variable stop_cv;
  bool stop = false;
  std::vector<std::chrono::steady_clock::time_point> last_seen;  // by rank
  std::vector<Status> dead;                                      // by rank; OK = alive
  std::vector<bool> ended;  // by rank: its process ended (its liveness link closed)
};

void ChiefSilence::Heard(bool ping) {
  std::lock_guard<std::mutex> lock(mu_);
  last_ = std::chrono::steady_clock::now();
  armed_ |= ping;
}

int64_t ChiefSilence::Overdue(std::chrono::milliseconds period) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  if (now - checked_ > 2 * period + std::chrono::milliseconds(timeout_ms_ / 2)) last_ = now;
  checked_ = now;
  if (!armed_) return 0;
  const int64_t silent = std::chrono::duration_cast<std::chrono::milliseconds>(now - last_).count();
  return silent > timeout_ms_ ? silent : 0;
}

// The steps of this process (between-graph replication), watched by a thread of their own.
struct ProcessGroup::Steps {
  using Clock = std::chrono::steady_clock;
  struct State {
    Clock::time_point deadline = Clock::time_point::max();
    int64_t timeout_ms = 0;
    Clock::time_point cancelled = Clock::time_point::max();
    Status why;
    void Cancel(CancellationManager* step, const Status& s) {
      if (cancelled != Clock::time_point::max()) return;
      cancelled = Clock::now();
      why = s;
      step->StartCancel(s);  // its callbacks do not take `mu`
    }
  };
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  std::map<CancellationManager*, State> running;
  std::thread watchdog;
  std::function<void()> tick;  // runs on every turn of the watchdog, without `mu`
  static constexpr std::chrono::milliseconds kTurn{50};

  // Cancels the steps past their deadline; ends the process when a cancelled step is still
  // running kStuckStepGraceMs later: a blocking collective that a peer never joins holds it.
  void Watch() {
    std::unique_lock<std::mutex> lock(mu);
    while (!stop) {
      cv.wait_for(lock, kTurn);
      if (tick) {
        lock.unlock();
        tick();
        lock.lock();
      }
      const Clock::time_point now = Clock::now();
      for (auto& [step, state] : running) {
        if (now >= state.deadline)
          state.Cancel(
              step, errors::DeadlineExceeded("the step timed out after ", state.timeout_ms, " ms"));
        if (now - state.cancelled < std::chrono::milliseconds(kStuckStepGraceMs)) continue;
        LogMessage(LogLevel::kError, "a step cancelled " + std::to_string(kStuckStepGraceMs) +
                                         " ms ago (" + state.why.ToString() +
                                         ") is still blocked in a collective that the other "
                                         "tasks do not join; this process exits");
        std::_Exit(1);
      }
    }
  }
};

// The process's liveness links; `closed` once the group ends (a late invitation is ignored).
struct ProcessGroup::Liveness {
  std::mutex mu;
  std::unique_ptr<LivenessLinks> links;
  bool closed = false;
};

ProcessGroup::ProcessGroup(std::shared_ptr<Transport> transport, std::vector<ClusterTask> tasks,
                           int chief)
    : transport_(std::move(transport)), tasks_(std::move(tasks)), chief_(chief) {
  rank_ = transport_->rank();
  for (const ClusterTask& t : tasks_) {
    names_.push_back(t.name());
    rank_of_task_[names_.back()] = t.rank;
    transport_->SetPeerName(t.rank, names_.back());
  }
  next_seq_.assign(tasks_.size(), 1);
  health_ = std::make_shared<Health>();
  health_->last_seen.assign(tasks_.size(), std::chrono::steady_clock::now());
  health_->dead.assign(tasks_.size(), Status());
  health_->ended.assign(tasks_.size(), false);
  liveness_ = std::make_shared<Liveness>();
  steps_ = std::make_shared<Steps>();
}

void ProcessGroup::TakeForDead(int rank, const Status& why, bool ended) {
  {
    std::lock_guard<std::mutex> lock(health_->mu);
    if (ended) health_->ended[rank] = true;
    if (!health_->dead[rank].ok()) return;
    health_->dead[rank] = why;
  }
  any_dead_.store(true, std::memory_order_release);
  LogMessage(LogLevel::kError, why.ToString());
  // Whatever waits for the task's answers (steps, registrations) gets the error now.
  for (const std::string& prefix : ReplyPrefixes(rank)) transport_->AbortPrefix(prefix, why);
  if (!between_graph()) return;
  // Between-graph replication: this process's steps would wait for the dead task in collectives,
  // and so would the other tasks' steps, which watch only the chief: it tells them.
  if (is_chief()) {
    for (int r = 0; r < size(); ++r) {
      if (r == rank_ || r == rank || !TaskHealth(r).ok()) continue;
      WireWriter w;
      w.I64(rank).Bytes(why.message());
      transport_->SendBytes(r, kDeathKey, w.str(), [](const Status&) {});
    }
  }
  std::lock_guard<std::mutex> lock(steps_->mu);
  for (auto& [step, state] : steps_->running) state.Cancel(step, why);
}

void ProcessGroup::AddStep(CancellationManager* step, int64_t timeout_ms) {
  std::lock_guard<std::mutex> lock(steps_->mu);
  Steps::State& state = steps_->running[step];
  if (timeout_ms <= 0) return;
  state.timeout_ms = timeout_ms;
  state.deadline = Steps::Clock::now() + std::chrono::milliseconds(timeout_ms);
}

void ProcessGroup::RemoveStep(CancellationManager* step) {
  std::lock_guard<std::mutex> lock(steps_->mu);
  steps_->running.erase(step);
}

Status ProcessGroup::AnyDead() const {
  if (!any_dead_.load(std::memory_order_acquire)) return Status();
  std::lock_guard<std::mutex> lock(health_->mu);
  for (const Status& s : health_->dead)
    if (!s.ok()) return s;
  return Status();
}

void ProcessGroup::StartBetweenGraph(int64_t interval_ms, int64_t timeout_ms) {
  if (between_graph_.exchange(true) || size() < 2) return;
  const int chief = chief_;
  if (!is_chief() && interval_ms > 0) {
    // Silence from the chief, once its heartbeats have started, for longer than the timeout.
    auto silence = std::make_shared<ChiefSilence>(timeout_ms);
    steps_->tick = [this, chief, silence] {
      const int64_t silent = silence->Overdue(Steps::kTurn);
      if (silent == 0 || !TaskHealth(chief).ok()) return;
      TakeForDead(chief,
                  errors::Unavailable("the chief ", names_[chief], " (",
                                      transport_->DescribePeer(chief), ") sent no heartbeat for ",
                                      silent, " ms (cluster.heartbeat.timeout is ",
                                      silence->timeout_ms(), " ms): it is taken for dead"),
                  /*ended=*/false);
    };
    AnswerPing(transport_.get(), health_, silence, rank_, chief, 1);
  }
  steps_->watchdog = std::thread([steps = steps_] { steps->Watch(); });
  // Every task's program starts its steps when Runtime::Create returns: by then each worker's
  // liveness link is up (or known to have failed), so that a task that dies in its first step
  // is noticed like any other.
  constexpr auto kLinkLimit = std::chrono::seconds(20);
  if (is_chief()) {
    ListenForWorkers();
    std::vector<int> workers;
    for (int r = 0; r < size(); ++r)
      if (r != rank_) workers.push_back(r);
    const std::set<int> unlinked =
        Await(Expect(workers, kLinkedKey), std::chrono::steady_clock::now() + kLinkLimit);
    if (!unlinked.empty()) {
      std::string tasks;
      for (int r : unlinked) tasks += " " + names_[r];
      LogMessage(LogLevel::kWarning,
                 "between-graph replication: no liveness link from" + tasks + " after " +
                     std::to_string(kLinkLimit.count()) +
                     " s; the end of those tasks is noticed by heartbeats only");
    }
    Ping(interval_ms, timeout_ms);
    return;
  }
  transport_->RecvBytes(chief, kDeathKey, [this](const Status& s, std::string message) {
    if (!s.ok()) return;  // the group ended
    WireReader r(message, "a task's death from the chief");
    int64_t dead = -1;
    std::string why;
    if (!r.I64(&dead).ok() || !r.Bytes(&why).ok() || dead < 0 || dead >= size()) return;
    TakeForDead(static_cast<int>(dead), errors::Unavailable(why), /*ended=*/true);
  });
  StatusOr<std::string> invitation = transport_->RecvSync(chief, kLivenessKey);
  if (invitation.ok() && !invitation->empty()) {
    std::lock_guard<std::mutex> lock(liveness_->mu);
    liveness_->links = LivenessLinks::Connect(*invitation, rank_, chief, [this, chief](int) {
      TakeForDead(
          chief,
          errors::Unavailable("the chief ", names_[chief], " (", transport_->DescribePeer(chief),
                              ") ended: its liveness link closed without a goodbye "
                              "(the process exited or was killed): it is taken for "
                              "dead"),
          /*ended=*/true);
    });
    liveness_->links->WaitUntilConnected(kLinkLimit);
  }
  transport_->SendBytes(chief, kLinkedKey, "", [](const Status&) {});
}

void ProcessGroup::WatchChief(std::function<void()> chief_ended) {
  std::shared_ptr<Liveness> liveness = liveness_;
  const int rank = rank_, chief = chief_;
  transport_->RecvBytes(
      chief_, kLivenessKey,
      [liveness, rank, chief, chief_ended](const Status& s, std::string invitation) {
        if (!s.ok() || invitation.empty()) return;
        std::lock_guard<std::mutex> lock(liveness->mu);
        if (liveness->closed) return;
        liveness->links =
            LivenessLinks::Connect(invitation, rank, chief, [chief_ended](int) { chief_ended(); });
      });
}

Status ProcessGroup::TaskHealth(int rank) const {
  std::lock_guard<std::mutex> lock(health_->mu);
  return health_->dead[rank];
}

void ProcessGroup::ListenForWorkers() {
  StatusOr<std::unique_ptr<LivenessLinks>> links = LivenessLinks::Listen([this](int r) {
    if (r < 0 || r >= size() || r == rank_) return;
    TakeForDead(r, errors::Unavailable("task ", names_[r], " (", transport_->DescribePeer(r),
                                       ") ended: its liveness link closed without a goodbye "
                                       "(the process exited or was killed): it is taken for dead"),
                /*ended=*/true);
  });
  if (links.ok()) {
    for (int r = 0; r < size(); ++r)
      if (r != rank_)
        transport_->SendBytes(r, kLivenessKey, (*links)->Invitation(), [](const Status&) {});
    std::lock_guard<std::mutex> lock(liveness_->mu);
    liveness_->links = std::move(links).value();
  } else {
    LogMessage(LogLevel::kWarning,
               links.status().ToString() + "; tasks that end are noticed by heartbeats only");
    // An empty invitation: the workers do not wait for a link.
    for (int r = 0; r < size(); ++r)
      if (r != rank_) transport_->SendBytes(r, kLivenessKey, "", [](const Status&) {});
  }
}

void ProcessGroup::StartHeartbeats(int64_t interval_ms, int64_t timeout_ms) {
  if (!is_chief() || interval_ms <= 0 || heartbeat_thread_.joinable() || size() < 2) return;
  // The liveness links notice a worker process that ended at once; the pings, one that hangs.
  ListenForWorkers();
  Ping(interval_ms, timeout_ms);
}

void ProcessGroup::AnswerPing(Transport* transport, std::shared_ptr<Health> health,
                              std::shared_ptr<ChiefSilence> silence, int rank, int chief,
                              int64_t seq) {
  transport->RecvBytes(
      chief, BetweenGraphPingKey(seq),
      [transport, health, silence, rank, chief, seq](const Status& s, std::string) {
        if (!s.ok()) return;  // the group ended
        {
          std::lock_guard<std::mutex> lock(health->mu);
          if (health->stop) return;
        }
        silence->Heard(/*ping=*/true);
        transport->SendBytes(chief, PingReplyKey(rank, 0, seq), "", [](const Status&) {});
        AnswerPing(transport, health, silence, rank, chief, seq + 1);
      });
}

void ProcessGroup::Ping(int64_t interval_ms, int64_t timeout_ms) {
  if (interval_ms <= 0 || heartbeat_thread_.joinable()) return;
  std::shared_ptr<Health> health = health_;
  heartbeat_thread_ = std::thread([this, health, interval_ms, timeout_ms] {
    using Clock = std::chrono::steady_clock;
    int64_t seq = 0;
    {
      std::lock_guard<std::mutex> lock(health->mu);
      for (auto& t : health->last_seen) t = Clock::now();
    }
    std::unique_lock<std::mutex> lock(health->mu);
    while (!health->stop) {
      std::vector<int> ping;
      std::vector<std::pair<int, Status>> died;
      const Clock::time_point now = Clock::now();
      for (int r = 0; r < size(); ++r) {
        if (r == rank_ || !health->dead[r].ok()) continue;
        const auto silent =
            std::chrono::duration_cast<std::chrono::milliseconds>(now - health->last_seen[r]);
        if (silent.count() > timeout_ms) {
          died.emplace_back(r, errors::Unavailable(
                                   "task ", names_[r], " (", transport_->DescribePeer(r),
                                   ") did not answer for ", silent.count(),
                                   " ms (cluster.heartbeat.timeout is ", timeout_ms,
                                   " ms): it is taken for dead"));
        } else {
          ping.push_back(r);
        }
      }
      ++seq;
      lock.unlock();
      for (const auto& [r, why] : died) TakeForDead(r, why, /*ended=*/false);
      for (int r : ping) {
        transport_->RecvBytes(r, PingReplyKey(r, 0, seq),
                              [health, r](const Status& s, std::string) {
                                if (!s.ok()) return;
                                std::lock_guard<std::mutex> l(health->mu);
                                health->last_seen[r] = std::chrono::steady_clock::now();
                              });
        if (between_graph()) {
          // No task serves control messages: the transport's thread answers (AnswerPing).
          transport_->SendBytes(r, BetweenGraphPingKey(seq), "", [](const Status&) {});
          continue;
        }
        WireWriter w;
        w.I64(0).I64(seq).Bytes("");
        (void)SendControl(r, ControlType::kPing, w.str(), /*wait=*/false);
      }
      lock.lock();
      health->stop_cv.wait_for(lock, std::chrono::milliseconds(interval_ms),
                               [&] { return health->stop; });
    }
  });
}

// Byte messages expected under one key, one from each of some ranks: those not received yet.
struct ProcessGroup::Arrivals {
  std::mutex mu;
  std::condition_variable cv;
  std::set<int> pending;
};

std::shared_ptr<ProcessGroup::Arrivals> ProcessGroup::Expect(const std::vector<int>& ranks,
                                                             const char* key) {
  auto arrivals = std::make_shared<Arrivals>();
  arrivals->pending.insert(ranks.begin(), ranks.end());
  for (int r : ranks)
    transport_->RecvBytes(r, key, [arrivals, r](const Status&, std::string) {
      std::lock_guard<std::mutex> lock(arrivals->mu);
      arrivals->pending.erase(r);
      arrivals->cv.notify_all();
    });
  return arrivals;
}

std::set<int> ProcessGroup::Await(const std::shared_ptr<Arrivals>& arrivals,
                                  std::chrono::steady_clock::time_point deadline) const {
  std::unique_lock<std::mutex> lock(arrivals->mu);
  for (;;) {
    std::set<int> awaited;  // a task taken for dead is not waited for
    for (int r : arrivals->pending)
      if (TaskHealth(r).ok()) awaited.insert(r);
    if (awaited.empty() || std::chrono::steady_clock::now() >= deadline) return awaited;
    arrivals->cv.wait_for(lock, std::chrono::milliseconds(100));
  }
}

void ProcessGroup::ExitTogether() {
  std::vector<int> peers;
  for (int r = 0; r < size(); ++r)
    if (r != rank_ && (is_chief() || r == chief_)) peers.push_back(r);
  std::shared_ptr<Arrivals> arrivals = Expect(peers, kExitKey);
  // A worker tells the chief it is done and waits for the chief's word; the chief waits for
  // every worker, then answers them.
  if (!is_chief()) transport_->SendBytes(chief_, kExitKey, "", [](const Status&) {});
  Await(arrivals, std::chrono::steady_clock::time_point::max());
  if (is_chief())
    for (int r : peers)
      if (TaskHealth(r).ok()) transport_->SendBytes(r, kExitKey, "", [](const Status&) {});
}

ProcessGroup::~ProcessGroup() {
  // Between graphs every rank leaves when its own program ends, and MPI's finalization would
  // take a rank that is still busy (the chief saving a checkpoint) for a dead one: the ranks
  // leave together.
  if (between_graph() && size() > 1) ExitTogether();
  {
    // Goodbye on every liveness link first: the exits that follow are not deaths.
    std::lock_guard<std::mutex> lock(liveness_->mu);
    liveness_->closed = true;
    liveness_->links.reset();
  }
  if (steps_->watchdog.joinable()) {
    {
      std::lock_guard<std::mutex> lock(steps_->mu);
      steps_->stop = true;
    }
    steps_->cv.notify_all();
    steps_->watchdog.join();
  }
  {
    std::lock_guard<std::mutex> lock(health_->mu);
    health_->stop = true;  // no more pings, nor answers to them
  }
  health_->stop_cv.notify_all();
  if (heartbeat_thread_.joinable()) heartbeat_thread_.join();
  if (is_chief() && !between_graph()) {
    for (int r = 0; r < size(); ++r) {
      bool ended;
      {
        std::lock_guard<std::mutex> lock(health_->mu);
        ended = health_->ended[r];
      }
      // A process that ended is not told (the message would wait for it until the transport's
      // shutdown timeout); a task taken for dead may have been only paused: it is told too,
      // without waiting.
      if (r == rank_ || ended) continue;
      Status s = SendControl(r, ControlType::kExit, "", /*wait=*/TaskHealth(r).ok());
      if (!s.ok())
        LogMessage(LogLevel::kWarning, "telling " + names_[r] + " to exit: " + s.ToString());
    }
  }
  device_collectives_.Clear();
  host_collectives_.reset();
}

int ProcessGroup::RankOfDevice(std::string_view device) const {
  size_t cut = device.find("/device:");
  std::string_view task = cut == std::string_view::npos ? device : device.substr(0, cut);
  auto it = rank_of_task_.find(std::string(task));
  return it == rank_of_task_.end() ? -1 : it->second;
}

Status ProcessGroup::SendControl(int rank, ControlType type, std::string_view body, bool wait) {
  int64_t seq;
  {
    std::lock_guard<std::mutex> lock(mu_);
    seq = next_seq_[rank]++;
  }
  std::string message(1, static_cast<char>(type));
  message.append(body.data(), body.size());
  const std::string key = "ctl;" + std::to_string(seq);
  if (!wait) {
    SendLogged(transport_.get(), rank, key, std::move(message));
    return Status();
  }
  return transport_->SendSync(rank, key, message)
      .WithPrefix("control message to " + names_[rank] + ": ");
}

Status ProcessGroup::NextControl(ControlType* type, std::string* body) {
  int64_t seq;
  {
    std::lock_guard<std::mutex> lock(mu_);
    seq = next_seq_[0]++;
  }
  CFX_ASSIGN_OR_RETURN(std::string message,
                       transport_->RecvSync(chief_, "ctl;" + std::to_string(seq)));
  if (message.empty()) return errors::DataLoss("an empty control message from ", names_[chief_]);
  *type = static_cast<ControlType>(message[0]);
  body->assign(message, 1);
  return Status();
}

std::string EncodeDevices(const std::vector<RemoteDeviceInfo>& devices) {
  WireWriter w;
  w.U64(devices.size());
  for (const RemoteDeviceInfo& d : devices)
    w.Bytes(d.name)
        .Bytes(d.type)
        .Bytes(d.plugin)
        .Bytes(d.description)
        .U8(d.host_addressable ? 1 : 0)
        .U64(d.incarnation)
        .I64(d.memory_limit);
  return std::move(w.str());
}

StatusOr<std::vector<RemoteDeviceInfo>> DecodeDevices(std::string_view bytes,
                                                      const std::string& from) {
  WireReader r(bytes, "the device list of " + from);
  uint64_t n = 0;
  CFX_RETURN_IF_ERROR(r.U64(&n));
  if (n > bytes.size()) return errors::DataLoss("the device list of ", from, " is malformed");
  std::vector<RemoteDeviceInfo> out(n);
  for (RemoteDeviceInfo& d : out) {
    uint8_t host = 0;
    CFX_RETURN_IF_ERROR(r.Bytes(&d.name));
    CFX_RETURN_IF_ERROR(r.Bytes(&d.type));
    CFX_RETURN_IF_ERROR(r.Bytes(&d.plugin));
    CFX_RETURN_IF_ERROR(r.Bytes(&d.description));
    CFX_RETURN_IF_ERROR(r.U8(&host));
    CFX_RETURN_IF_ERROR(r.U64(&d.incarnation));
    CFX_RETURN_IF_ERROR(r.I64(&d.memory_limit));
    d.host_addressable = host != 0;
  }
  return out;
}

namespace {

// The memory of a device in another process: nothing can be allocated from here.
class RemoteMemory final : public Allocator {
 public:
  RemoteMemory(std::string device, bool host) : device_(std::move(device)), host_(host) {}
  std::string name() const override { return device_ + " (remote)"; }
  bool host_addressable() const override { return host_; }

 protected:
  void* RawAllocate(size_t, size_t) override { return nullptr; }
  void RawDeallocate(void*, size_t) override {}

 private:
  std::string device_;
  bool host_;
};

class RemoteDevice final : public Device {
 public:
  RemoteDevice(DeviceName name, const RemoteDeviceInfo& info)
      : Device(std::move(name), info.plugin, info.host_addressable,
               std::make_unique<RemoteMemory>(info.name, info.host_addressable), nullptr),
        description_(info.description) {
    set_incarnation(info.incarnation);
    allocator()->set_bytes_limit(info.memory_limit);
  }
  ~RemoteDevice() override { ReleaseResources(); }
  std::string description() const override { return description_; }

 private:
  std::string description_;
};

}  // namespace

std::unique_ptr<Device> MakeRemoteDevice(const RemoteDeviceInfo& info) {
  auto name = DeviceName::Parse(info.name);
  return std::make_unique<RemoteDevice>(name.ok() ? *name : DeviceName(), info);
}

StatusOr<std::unique_ptr<Cluster>> Cluster::Open(ProcessGroup* group,
                                                 const std::string& config_yaml) {
  std::unique_ptr<Cluster> c(new Cluster(group, group->NewRuntimeId()));
  WireWriter w;
  w.I64(c->runtime_id_).Bytes(config_yaml);
  for (int r = 0; r < group->size(); ++r)
    if (r != group->rank()) CFX_RETURN_IF_ERROR(group->SendControl(r, ControlType::kOpen, w.str()));
  Status first;
  for (int r = 0; r < group->size(); ++r) {
    if (r == group->rank()) continue;
    auto reply = c->Reply(r, OpenReplyKey(r, c->runtime_id_));
    Status s = reply.status();
    if (s.ok()) {
      WireReader rd(*reply, "the answer of " + group->task_name(r) + " to Open");
      Status remote;
      s = ReadStatus(rd, &remote);
      if (s.ok()) s = remote;
      std::string devices;
      if (s.ok()) s = rd.Bytes(&devices);
      if (s.ok()) {
        auto list = DecodeDevices(devices, group->task_name(r));
        s = list.status();
        if (s.ok())
          for (const RemoteDeviceInfo& d : *list) c->remote_devices_.push_back(MakeRemoteDevice(d));
      }
    }
    if (!s.ok() && first.ok()) first = s.WithPrefix("task " + group->task_name(r) + ": ");
  }
  CFX_RETURN_IF_ERROR(first);
  CFX_RETURN_IF_ERROR(c->MeasureLinks());
  return c;
}

Cluster::~Cluster() {
  WireWriter w;
  w.I64(runtime_id_);
  for (int r = 0; r < group_->size(); ++r) {
    if (r == group_->rank()) continue;
    Status s = group_->SendControl(r, ControlType::kClose, w.str());
    if (!s.ok()) LogMessage(LogLevel::kWarning, s.ToString());
  }
}

StatusOr<std::string> Cluster::Reply(int rank, const std::string& key) {
  return group_->transport()->RecvSync(rank, key);
}

Status Cluster::MeasureLinks() {
  // An echo of 8 bytes (latency) and of 1 MiB (bandwidth) with each worker, best of three.
  double latency_sum = 0, rate_sum = 0;
  int workers = 0;
  int64_t seq = 0;
  for (int r = 0; r < group_->size(); ++r) {
    if (r == group_->rank()) continue;
    double best[2] = {1e30, 1e30};
    const size_t sizes[2] = {8, 1 << 20};
    for (int rep = 0; rep < 3; ++rep) {
      for (int k = 0; k < 2; ++k) {
        WireWriter w;
        w.I64(runtime_id_).I64(++seq).Bytes(std::string(sizes[k], 'x'));
        auto start = std::chrono::steady_clock::now();
        CFX_RETURN_IF_ERROR(group_->SendControl(r, ControlType::kPing, w.str()));
        CFX_RETURN_IF_ERROR(Reply(r, PingReplyKey(r, runtime_id_, seq)).status());
        double us =
            std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
                .count();
        best[k] = std::min(best[k], us);
      }
    }
    const double latency = best[0] / 2;
    latency_sum += latency;
    rate_sum += static_cast<double>(sizes[1]) / std::max(best[1] / 2 - latency, 1.0);
    ++workers;
  }
  if (workers > 0) {
    latency_us_ = latency_sum / workers;
    bytes_per_us_ = rate_sum / workers;
  }
  return Status();
}

}  // namespace cfx::internal

namespace cfx::internal {

void SendLogged(Transport* transport, int peer, const std::string& key, std::string bytes) {
  transport->SendBytes(peer, key, std::move(bytes), [key](const Status& s) {
    if (!s.ok()) LogMessage(LogLevel::kWarning, "sending " + key + ": " + s.ToString());
  });
}

void EncodeStepStats(WireWriter& w, const std::vector<DeviceStepStats>& stats) {
  w.U64(stats.size());
  for (const DeviceStepStats& d : stats) {
    w.Bytes(d.device).U64(d.nodes.size());
    for (const NodeExecStats& n : d.nodes) {
      w.Bytes(n.node_name).Bytes(n.op).I64(n.start_us).I64(n.end_us).U64(n.thread_id);
      w.U64(n.output_bytes.size());
      for (int64_t b : n.output_bytes) w.I64(b);
    }
  }
}

Status DecodeStepStats(WireReader& r, std::vector<DeviceStepStats>* stats) {
  uint64_t devices = 0;
  CFX_RETURN_IF_ERROR(r.U64(&devices));
  for (uint64_t i = 0; i < devices; ++i) {
    DeviceStepStats d;
    uint64_t nodes = 0;
    CFX_RETURN_IF_ERROR(r.Bytes(&d.device));
    CFX_RETURN_IF_ERROR(r.U64(&nodes));
    for (uint64_t j = 0; j < nodes; ++j) {
      NodeExecStats n;
      uint64_t outputs = 0;
      CFX_RETURN_IF_ERROR(r.Bytes(&n.node_name));
      CFX_RETURN_IF_ERROR(r.Bytes(&n.op));
      CFX_RETURN_IF_ERROR(r.I64(&n.start_us));
      CFX_RETURN_IF_ERROR(r.I64(&n.end_us));
      CFX_RETURN_IF_ERROR(r.U64(&n.thread_id));
      CFX_RETURN_IF_ERROR(r.U64(&outputs));
      for (uint64_t k = 0; k < outputs; ++k) {
        int64_t b = 0;
        CFX_RETURN_IF_ERROR(r.I64(&b));
        n.output_bytes.push_back(b);
      }
      d.nodes.push_back(std::move(n));
    }
    stats->push_back(std::move(d));
  }
  return Status();
}

}  // namespace cfx::internal
