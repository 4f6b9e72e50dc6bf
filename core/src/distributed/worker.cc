// ServeWorker.
#include "distributed/worker.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>

#include "distributed/remote_rendezvous.h"
#include "runtime/executor.h"
#include "runtime/thread_pool.h"
#include "state/resource_mgr.h"
#include "util/log.h"

namespace cfx::internal {

namespace {

// One registered signature's partitions in this task.
struct Partitions {
  std::vector<std::unique_ptr<Executor>> executors;
};

// Everything of one step in this task; freed once the step's answer is sent.
struct WorkerStep {
  explicit WorkerStep(int64_t id) : step_resources("step " + std::to_string(id)) {}
  std::shared_ptr<Partitions> partitions;
  CancellationManager cancellation;
  std::unique_ptr<RemoteRendezvous> rendezvous;
  ResourceMgr step_resources;
  CallFrame frame;
  StepContext context;
  std::vector<DeviceStepStats> stats;
  std::mutex mu;
  Status status;
  int remaining = 0;
};

// The state of one chief Runtime's session on this worker.
class TaskSession {
 public:
  TaskSession(ProcessGroup* group, int64_t runtime_id, std::unique_ptr<Runtime> runtime)
      : group_(group),
        runtime_id_(runtime_id),
        runtime_(std::move(runtime)),
        compression_(runtime_->config().cluster) {
    pool_ = std::make_unique<ThreadPool>(
        InterOpThreads(runtime_->config().inter_op_threads, runtime_->config().intra_op_threads));
  }
  ~TaskSession() {
    // The chief closes a session only once its steps are over; wait for stragglers anyway.
    std::unique_lock<std::mutex> lock(mu_);
    idle_.wait(lock, [&] { return steps_.empty(); });
  }

  Status Register(WireReader& r) {
    int64_t handle = 0;
    uint64_t n = 0;
    CFX_RETURN_IF_ERROR(r.I64(&handle));
    CFX_RETURN_IF_ERROR(r.U64(&n));
    auto parts = std::make_shared<Partitions>();
    Status status;
    for (uint64_t i = 0; i < n && status.ok(); ++i) {
      std::string device, graph;
      CFX_RETURN_IF_ERROR(r.Bytes(&device));
      CFX_RETURN_IF_ERROR(r.Bytes(&graph));
      status = BuildExecutor(device, graph, parts.get());
    }
    if (status.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      graphs_[handle] = parts;
    }
    WireWriter w;
    WriteStatus(w, status.ok()
                       ? status
                       : status.WithPrefix("task " + group_->task_name(group_->rank()) + ": "));
    SendLogged(group_->transport(), group_->chief(),
               RegisterReplyKey(group_->rank(), runtime_id_, handle), std::move(w.str()));
    return Status();
  }

  Status Deregister(WireReader& r) {
    int64_t handle = 0;
    CFX_RETURN_IF_ERROR(r.I64(&handle));
    std::lock_guard<std::mutex> lock(mu_);
    graphs_.erase(handle);
    return Status();
  }

  Status Run(WireReader& r) {
    int64_t handle = 0, step_id = 0;
    uint8_t collect = 0;
    CFX_RETURN_IF_ERROR(r.I64(&handle));
    CFX_RETURN_IF_ERROR(r.I64(&step_id));
    CFX_RETURN_IF_ERROR(r.U8(&collect));
    auto step = std::make_shared<WorkerStep>(step_id);
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = graphs_.find(handle);
      if (it != graphs_.end()) step->partitions = it->second;
      steps_[step_id] = step;
    }
    if (step->partitions == nullptr) {
      Finish(step_id, errors::Internal("task ", group_->task_name(group_->rank()), " has no graph ",
                                       handle, " for step ", step_id));
      return Status();
    }
    WorkerStep* s = step.get();
    Transport* transport = group_->transport();
    ProcessGroup* group = group_;
    s->rendezvous = std::make_unique<RemoteRendezvous>(
        transport, step_id, group->rank(),
        [group](std::string_view d) { return group->RankOfDevice(d); },
        [group](int rank) { return group->task_name(rank); },
        [s](const Status& e) { s->cancellation.StartCancel(e); }, &compression_);
    s->context.step_id = step_id;
    s->context.cancellation = &s->cancellation;
    s->context.rendezvous = s->rendezvous.get();
    s->context.call_frame = &s->frame;
    s->context.step_resources = &s->step_resources;
    s->context.collect_stats = collect != 0;
    s->context.collectives = group->host_collectives();
    s->context.device_collectives = &group->device_collectives();
    s->cancellation.Register([s](const Status& e) { s->rendezvous->StartAbort(e); });
    const auto& executors = s->partitions->executors;
    s->remaining = static_cast<int>(executors.size());
    if (s->context.collect_stats) s->stats.resize(executors.size());
    if (executors.empty()) {
      Finish(step_id, Status());
      return Status();
    }
    for (size_t i = 0; i < executors.size(); ++i) {
      executors[i]->RunAsync(s->context, s->context.collect_stats ? &s->stats[i] : nullptr,
                             [this, s, step_id](const Status& e) {
                               bool last;
                               {
                                 std::lock_guard<std::mutex> lock(s->mu);
                                 if (!e.ok() && s->status.ok()) s->status = e;
                                 last = --s->remaining == 0;
                               }
                               if (last) Finish(step_id, s->status);
                             });
    }
    return Status();
  }

  Status Abort(WireReader& r) {
    int64_t step_id = 0;
    Status why;
    CFX_RETURN_IF_ERROR(r.I64(&step_id));
    CFX_RETURN_IF_ERROR(ReadStatus(r, &why));
    std::shared_ptr<WorkerStep> step;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = steps_.find(step_id);
      if (it != steps_.end()) step = it->second;
    }
    if (step != nullptr) step->cancellation.StartCancel(why);
    return Status();
  }

 private:
  Status BuildExecutor(const std::string& device_name, const std::string& graph_bytes,
                       Partitions* parts) {
    CFX_ASSIGN_OR_RETURN(Device * device, runtime_->FindDevice(device_name));
    CFX_ASSIGN_OR_RETURN(GraphDef def, ParseGraphDef(graph_bytes, GraphFormat::kBinary));
    CFX_ASSIGN_OR_RETURN(std::unique_ptr<Graph> g, Graph::FromGraphDef(def, &runtime_->ops()));
    CFX_ASSIGN_OR_RETURN(std::unique_ptr<Executor> ex,
                         Executor::Create(*runtime_, device, pool_.get(), std::move(g)));
    parts->executors.push_back(std::move(ex));
    return Status();
  }

  // Answers the chief and frees the step. Its aborted keys stay discarded by the transport.
  void Finish(int64_t step_id, Status status) {
    std::shared_ptr<WorkerStep> step;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = steps_.find(step_id);
      if (it == steps_.end()) return;
      step = it->second;
    }
    // The step's cancellation first (the first cause), then the executors' errors.
    if (step->cancellation.cancelled()) status = step->cancellation.status();
    WireWriter w;
    WriteStatus(w, status);
    EncodeStepStats(w, step->stats);
    SendLogged(group_->transport(), group_->chief(), RunReplyKey(group_->rank(), step_id),
               std::move(w.str()));
    // Leftover messages of the step (none after a clean step) are dropped from now on.
    group_->transport()->AbortPrefix(RemoteRendezvous::StepPrefix(step_id),
                                     errors::Cancelled("step ", step_id, " is over"));
    std::lock_guard<std::mutex> lock(mu_);
    steps_.erase(step_id);
    if (steps_.empty()) idle_.notify_all();
  }

  ProcessGroup* group_;
  int64_t runtime_id_;
  std::unique_ptr<Runtime> runtime_;
  EdgeCompression compression_;  // cluster.compression of the chief's config
  std::unique_ptr<ThreadPool> pool_;
  std::mutex mu_;
  std::condition_variable idle_;
  std::map<int64_t, std::shared_ptr<Partitions>> graphs_;
  std::map<int64_t, std::shared_ptr<WorkerStep>> steps_;
};

// Watches the chief from a worker (ChiefSilence): a chief taken for dead makes the worker
// process exit with status 1 after saying so (nothing else would end it: it serves the chief).
class ChiefWatch {
 public:
  ChiefWatch(ProcessGroup* group, int64_t timeout_ms) : group_(group), silence_(timeout_ms) {
    if (timeout_ms > 0) thread_ = std::thread([this] { Loop(); });
  }
  ~ChiefWatch() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  // A control message came from the chief; `ping` when it was a heartbeat.
  void Heard(bool ping) { silence_.Heard(ping); }

 private:
  void Loop() {
    const auto period = std::chrono::milliseconds(std::max<int64_t>(silence_.timeout_ms() / 4, 10));
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      cv_.wait_for(lock, period);
      const int64_t silent = silence_.Overdue(period);
      if (stop_ || silent == 0) continue;
      const int chief = group_->chief();
      LogMessage(LogLevel::kError,
                 "task " + group_->task_name(group_->rank()) + ": the chief " +
                     group_->task_name(chief) + " (" + group_->transport()->DescribePeer(chief) +
                     ") sent no heartbeat for " + std::to_string(silent) +
                     " ms (cluster.heartbeat.timeout is " + std::to_string(silence_.timeout_ms()) +
                     " ms): it is taken for dead; this worker exits");
      std::_Exit(1);
    }
  }

  ProcessGroup* group_;
  ChiefSilence silence_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace

Status ServeWorker(ProcessGroup* group, const Config& own_config,
                   const TaskRuntimeFactory& make_runtime) {
  const std::string self = group->task_name(group->rank());
  // The chief's open Runtimes, by id (a process may hold several).
  std::map<int64_t, std::unique_ptr<TaskSession>> sessions;
  ChiefWatch watch(group, own_config.cluster.heartbeat_interval_ms > 0
                              ? own_config.cluster.heartbeat_timeout_ms
                              : 0);
  if (own_config.cluster.heartbeat_interval_ms > 0) {
    group->WatchChief([group, self] {
      const int chief = group->chief();
      LogMessage(LogLevel::kError, "task " + self + ": the chief " + group->task_name(chief) +
                                       " (" + group->transport()->DescribePeer(chief) +
                                       ") ended: its liveness link closed without a goodbye; "
                                       "this worker exits");
      std::_Exit(1);
    });
  }
  for (;;) {
    ControlType type;
    std::string body;
    CFX_RETURN_IF_ERROR(group->NextControl(&type, &body));
    watch.Heard(!body.empty() && type == ControlType::kPing);
    WireReader r(body, "a control message to " + self);
    Status s;
    int64_t id = 0;
    if (type != ControlType::kExit) CFX_RETURN_IF_ERROR(r.I64(&id));
    auto session = sessions.find(id);
    switch (type) {
      case ControlType::kOpen: {
        std::string yaml;
        CFX_RETURN_IF_ERROR(r.Bytes(&yaml));
        StatusOr<Config> config = yaml.empty() ? StatusOr<Config>(own_config)
                                               : Config::FromString(yaml, "the chief's config");
        StatusOr<std::unique_ptr<Runtime>> runtime =
            config.ok() ? make_runtime(*config)
                        : StatusOr<std::unique_ptr<Runtime>>(config.status());
        WireWriter w;
        std::vector<RemoteDeviceInfo> devices;
        if (runtime.ok()) {
          for (const auto& d : (*runtime)->devices())
            devices.push_back({d->full_name(), d->type(), d->plugin(), d->description(),
                               d->host_addressable(), d->incarnation(),
                               d->allocator()->stats().bytes_limit});
          sessions[id] = std::make_unique<TaskSession>(group, id, std::move(*runtime));
        }
        WriteStatus(w, runtime.ok() ? Status() : runtime.status().WithPrefix(self + ": "));
        w.Bytes(EncodeDevices(devices));
        SendLogged(group->transport(), group->chief(), OpenReplyKey(group->rank(), id),
                   std::move(w.str()));
        break;
      }
      case ControlType::kClose:
        if (session != sessions.end()) sessions.erase(session);
        break;
      case ControlType::kRegister:
      case ControlType::kDeregister:
      case ControlType::kRun:
      case ControlType::kAbort: {
        if (session == sessions.end()) {
          s = errors::FailedPrecondition(self, " got a control message for runtime ", id,
                                         ", which is not open here");
          break;
        }
        TaskSession& t = *session->second;
        if (type == ControlType::kRegister) s = t.Register(r);
        if (type == ControlType::kDeregister) s = t.Deregister(r);
        if (type == ControlType::kRun) s = t.Run(r);
        if (type == ControlType::kAbort) s = t.Abort(r);
        break;
      }
      case ControlType::kPing: {
        int64_t seq = 0;
        std::string payload;
        CFX_RETURN_IF_ERROR(r.I64(&seq));
        CFX_RETURN_IF_ERROR(r.Bytes(&payload));
        SendLogged(group->transport(), group->chief(), PingReplyKey(group->rank(), id, seq),
                   std::move(payload));
        break;
      }
      case ControlType::kExit:
        sessions.clear();
        return Status();
      default:
        s = errors::DataLoss(self, " got control message type ", static_cast<int>(type));
    }
    if (!s.ok()) LogMessage(LogLevel::kError, s.ToString());
  }
}

}  // namespace cfx::internal
