// Session: prune, optimize, place and partition per signature; run the partitions' executors.
#include "conflux/session.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <set>

#include "distributed/master.h"
#include "distributed/remote_rendezvous.h"
#include "runtime/copy_tensor.h"
#include "passes/const_filter.h"
#include "passes/remapper.h"
#include "passes/lower_functions.h"
#include "runtime/executor.h"
#include "session/collectives.h"
#include "session/graph_rewrite.h"
#include "session/placement.h"
#include "state/resource_mgr.h"

namespace cfx {

namespace {

// Everything built once for one (feeds, fetches, targets) signature.
struct ExecutorsAndKeys {
  std::vector<std::unique_ptr<Executor>> executors;
  std::vector<DataType> feed_types;
  std::vector<PartialTensorShape> feed_shapes;
  std::vector<std::string> feed_names;
  size_t num_fetches = 0;
  std::vector<std::pair<std::string, GraphDef>> partition_graphs;
  // In a cluster: the partitions of the other tasks, registered with them.
  std::unique_ptr<internal::RemoteGraphs> remote;
};

}  // namespace

struct Session::Impl {
  Runtime* runtime = nullptr;
  std::unique_ptr<ThreadPool> pool;
  std::unique_ptr<PlacementCosts> costs;

  std::mutex mu;
  GraphDef graph;
  bool closed = false;
  std::map<std::string, std::shared_ptr<ExecutorsAndKeys>> cache;
  std::vector<CancellationManager*> active_steps;
  int running = 0;
  std::condition_variable idle;
  std::atomic<int64_t> next_step_id{1};
  // Which float32 tensors travel to other tasks narrowed (cluster.compression).
  internal::EdgeCompression compression;

  // Stateful nodes keep one device in every signature of the session (TensorFlow's rule): their
  // state (a variable's value, a queue) lives in that device's resource manager, so a variable
  // placed on the CPU by its initializer's signature and on a GPU by the training step's would be
  // two variables. The devices come from a placement of the whole graph (a variable goes where
  // its updates and readers run, not where its initializer alone would put it); a node that
  // placement could not cover keeps the device of the first signature that placed it. Guarded
  // by placement_mu, which also serializes the building of new signatures' executors.
  std::mutex placement_mu;
  std::map<std::string, std::string> stateful_devices;  // node name -> device full name
  size_t whole_graph_nodes_placed = 0;                   // graph.node.size() when last placed

  // Places `whole` (the session's graph) once per Extend and records its stateful nodes' devices.
  void PlaceStatefulNodes(const GraphDef& whole, const std::vector<Device*>& devices,
                          const DeviceName* chief);

  StatusOr<std::shared_ptr<ExecutorsAndKeys>> GetExecutors(
      const std::vector<std::pair<std::string, Tensor>>& feeds,
      const std::vector<std::string>& fetches, const std::vector<std::string>& targets);
};

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Session::~Session() {
  (void)Close();
  std::unique_lock<std::mutex> lock(impl_->mu);
  impl_->idle.wait(lock, [&] { return impl_->running == 0; });
}

StatusOr<std::unique_ptr<Session>> Session::Create(Runtime* runtime, const GraphDef& graph) {
  if (runtime == nullptr) return errors::InvalidArgument("Session::Create needs a runtime");
  if (runtime->devices().empty())
    return errors::FailedPrecondition("the runtime has no devices (check the config's plugins)");
  CFX_RETURN_IF_ERROR(CheckGraphLimits(graph, runtime->config().limits));
  // Function calls and functional control flow become plain nodes and v1 control flow.
  GraphDef lowered = graph;
  CFX_RETURN_IF_ERROR(
      LowerFunctions(runtime->ops(), runtime->config().limits.max_nodes, &lowered,
                     runtime->config().limits.max_constant_bytes));
  CFX_RETURN_IF_ERROR(Graph::FromGraphDef(lowered, &runtime->ops()).status());
  auto impl = std::make_unique<Impl>();
  impl->runtime = runtime;
  impl->compression = internal::EdgeCompression(runtime->config().cluster);
  impl->graph = std::move(lowered);
  impl->pool = std::make_unique<ThreadPool>(
      InterOpThreads(runtime->config().inter_op_threads, runtime->config().intra_op_threads));
  impl->costs =
      std::make_unique<PlacementCosts>(runtime->config().placement_cost_model == "measured");
  if (internal::Cluster* cluster = runtime->cluster(); cluster != nullptr)
    impl->costs->SetNetwork(cluster->latency_us(), cluster->bytes_per_us());
  return std::unique_ptr<Session>(new Session(std::move(impl)));
}

Status Session::Extend(const GraphDef& graph) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->closed) return errors::FailedPrecondition("Extend on a closed session");
  CFX_RETURN_IF_ERROR(CheckGraphLimits(graph, impl_->runtime->config().limits,
                                       static_cast<int64_t>(impl_->graph.node.size())));
  GraphDef combined = impl_->graph;
  // The added nodes may call functions of their own library or of the session's graph.
  GraphDef added = graph;
  if (added.library.empty()) added.library = combined.library;
  CFX_RETURN_IF_ERROR(
      LowerFunctions(impl_->runtime->ops(), impl_->runtime->config().limits.max_nodes, &added,
                     impl_->runtime->config().limits.max_constant_bytes));
  std::set<std::string> names;
  for (const NodeDef& n : combined.node) names.insert(n.name);
  for (const NodeDef& n : added.node) {
    if (names.count(n.name))
      return errors::InvalidArgument("Extend: node '", n.name, "' is already in the graph");
    combined.node.push_back(n);
  }
  CFX_RETURN_IF_ERROR(Graph::FromGraphDef(combined, &impl_->runtime->ops()).status());
  impl_->graph = std::move(combined);
  return Status();
}

StatusOr<std::shared_ptr<ExecutorsAndKeys>> Session::Impl::GetExecutors(
    const std::vector<std::pair<std::string, Tensor>>& feeds,
    const std::vector<std::string>& fetches, const std::vector<std::string>& targets) {
  // Names as given ("x" and "x:0" get separate, equivalent entries): no parsing per call.
  std::string key;
  for (const auto& f : feeds) (key += f.first) += ',';
  key += '|';
  for (const auto& f : fetches) (key += f) += ',';
  key += '|';
  for (const auto& t : targets) (key += t) += ',';
  GraphDef graph_copy;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
    graph_copy = graph;
  }
  auto ek = std::make_shared<ExecutorsAndKeys>();
  std::vector<std::string> feed_names;
  for (const auto& f : feeds) feed_names.push_back(f.first);
  CFX_ASSIGN_OR_RETURN(PrunedGraph pruned,
                       PruneGraph(graph_copy, runtime->ops(), feed_names, fetches, targets));
  ek->feed_types = pruned.feed_types;
  ek->feed_shapes = pruned.feed_shapes;
  ek->feed_names = feed_names;
  ek->num_fetches = fetches.size();
  internal::Cluster* cluster = runtime->cluster();
  std::optional<DeviceName> chief;
  if (cluster != nullptr || runtime->replica_group() != nullptr) {
    // Feeds and fetches live in the client's task; so does every node that names no task.
    chief = DeviceName::Parse(runtime->task_name()).value();
    std::set<std::string> frame_nodes(pruned.arg_nodes.begin(), pruned.arg_nodes.end());
    frame_nodes.insert(pruned.retval_nodes.begin(), pruned.retval_nodes.end());
    for (NodeDef& n : pruned.graph.node)
      if (frame_nodes.count(n.name)) n.device = runtime->task_name();
  }
  CFX_RETURN_IF_ERROR(OptimizeForRun(*runtime, pruned, targets, &pruned.graph));
  std::vector<Device*> devices = runtime->cluster_devices();
  if (runtime->config().remapping)
    FuseContractions(&pruned.graph, {targets.begin(), targets.end()},
                     CpuOnlyPredicate(devices, runtime->ops(), runtime->kernels()),
                     InferTensorShapes(pruned.graph, runtime->ops()));
  MarkConstantFilters(&pruned.graph);
  std::unique_lock<std::mutex> placing(placement_mu);
  PlaceStatefulNodes(graph_copy, devices, chief ? &*chief : nullptr);
  for (NodeDef& n : pruned.graph.node)
    if (auto it = stateful_devices.find(n.name); it != stateful_devices.end()) n.device = it->second;
  CFX_ASSIGN_OR_RETURN(std::unique_ptr<Graph> g,
                       Graph::FromGraphDef(pruned.graph, &runtime->ops()));
  CFX_ASSIGN_OR_RETURN(std::vector<Device*> device_of,
                       Place(*g, devices, runtime->kernels(), *costs, chief ? &*chief : nullptr));
  for (const auto& n : g->nodes())
    if (n != nullptr && n->op_registration().def.is_stateful)
      stateful_devices.emplace(n->name(), device_of[n->id()]->full_name());
  placing.unlock();
  internal::ProcessGroup* replicas = runtime->replica_group();
  CFX_RETURN_IF_ERROR(ResolveCollectives(
      g.get(), device_of,
      [cluster, replicas](const Device* d) {
        if (replicas != nullptr) return replicas->rank();
        return cluster != nullptr ? cluster->group()->RankOfDevice(d->full_name()) : 0;
      },
      replicas != nullptr ? replicas->size() : 0));
  CFX_ASSIGN_OR_RETURN(auto parts, PartitionGraph(*g, device_of));
  std::set<const Device*> local;
  for (const auto& d : runtime->devices()) local.insert(d.get());
  std::map<int, std::vector<std::pair<std::string, GraphDef>>> remote_parts;
  for (auto& [device, part] : parts) {
    ek->partition_graphs.emplace_back(device->full_name(), part);
    if (!local.count(device)) {
      const int rank = cluster->group()->RankOfDevice(device->full_name());
      remote_parts[rank].emplace_back(device->full_name(), std::move(part));
      continue;
    }
    CFX_ASSIGN_OR_RETURN(std::unique_ptr<Graph> pg, Graph::FromGraphDef(part, &runtime->ops()));
    CFX_ASSIGN_OR_RETURN(std::unique_ptr<Executor> ex,
                         Executor::Create(*runtime, device, pool.get(), std::move(pg)));
    ek->executors.push_back(std::move(ex));
  }
  if (!remote_parts.empty()) {
    CFX_ASSIGN_OR_RETURN(ek->remote, internal::RemoteGraphs::Register(cluster, remote_parts));
  }
  std::lock_guard<std::mutex> lock(mu);
  auto [it, inserted] = cache.emplace(key, ek);
  return it->second;
}

void Session::Impl::PlaceStatefulNodes(const GraphDef& whole, const std::vector<Device*>& devices,
                                       const DeviceName* chief) {
  if (whole_graph_nodes_placed == whole.node.size()) return;
  whole_graph_nodes_placed = whole.node.size();
  // A whole graph may hold nodes that no signature runs and no device can place (an op of a
  // plugin that is not loaded): then the signatures' own placements decide.
  auto g = Graph::FromGraphDef(whole, &runtime->ops());
  if (!g.ok()) return;
  auto placed = Place(**g, devices, runtime->kernels(), *costs, chief);
  if (!placed.ok()) return;
  for (const auto& n : (*g)->nodes())
    if (n != nullptr && n->op_registration().def.is_stateful)
      stateful_devices.emplace(n->name(), (*placed)[n->id()]->full_name());
}

Status Session::Run(const std::vector<std::pair<std::string, Tensor>>& feeds,
                    const std::vector<std::string>& fetches,
                    const std::vector<std::string>& targets, std::vector<Tensor>* outputs) {
  return Run(RunOptions(), feeds, fetches, targets, outputs, nullptr);
}

Status Session::Run(const RunOptions& options,
                    const std::vector<std::pair<std::string, Tensor>>& feeds,
                    const std::vector<std::string>& fetches,
                    const std::vector<std::string>& targets, std::vector<Tensor>* outputs,
                    RunMetadata* metadata) {
  Impl& impl = *impl_;
  CFX_ASSIGN_OR_RETURN(std::shared_ptr<ExecutorsAndKeys> ek,
                       impl.GetExecutors(feeds, fetches, targets));
  // The partitions, also when the step fails (what a failed or timed-out step ran).
  if (metadata != nullptr) metadata->partition_graphs = ek->partition_graphs;
  CallFrame frame;
  frame.args.reserve(feeds.size());
  for (size_t i = 0; i < feeds.size(); ++i) {
    const Tensor& t = feeds[i].second;
    if (t.dtype() != ek->feed_types[i])
      return errors::InvalidArgument("feed '", feeds[i].first, "' is ", DataTypeString(t.dtype()),
                                     "; the graph expects ", DataTypeString(ek->feed_types[i]));
    if (!ek->feed_shapes[i].IsCompatibleWith(t.shape()))
      return errors::InvalidArgument("feed '", feeds[i].first, "' has shape ", t.shape().ToString(),
                                     "; the placeholder's shape is ",
                                     ek->feed_shapes[i].ToString());
    frame.args.push_back(t);
  }
  frame.retvals.resize(ek->num_fetches);
  frame.retval_set.assign(ek->num_fetches, 0);

  CancellationManager cancellation;
  internal::Cluster* cluster = impl.runtime->cluster();
  // Between-graph replication: this task's partitions only, joined to the other ranks' steps by
  // collectives.
  internal::ProcessGroup* replicas = impl.runtime->replica_group();
  StepContext step;
  std::optional<LocalRendezvous> local_rendezvous;
  std::unique_ptr<Rendezvous> remote_rendezvous;
  Rendezvous* rendezvous = nullptr;
  if (cluster == nullptr) {
    step.step_id = impl.next_step_id.fetch_add(1, std::memory_order_relaxed);
    rendezvous = &local_rendezvous.emplace();
    if (replicas != nullptr) {
      step.collectives = replicas->host_collectives();
      step.device_collectives = &replicas->device_collectives();
    }
  } else {
    // Step ids are unique in the cluster: the transport's keys carry them.
    internal::ProcessGroup* group = cluster->group();
    step.step_id = group->NewStepId();
    remote_rendezvous = std::make_unique<internal::RemoteRendezvous>(
        group->transport(), step.step_id, group->rank(),
        [group](std::string_view d) { return group->RankOfDevice(d); },
        [group](int rank) { return group->task_name(rank); },
        [&cancellation](const Status& s) { cancellation.StartCancel(s); }, &impl.compression);
    rendezvous = remote_rendezvous.get();
    step.collectives = group->host_collectives();
    step.device_collectives = &group->device_collectives();
  }
  step.cancellation = &cancellation;
  step.env = impl.runtime->env();
  step.rendezvous = rendezvous;
  step.call_frame = &frame;
  step.collect_stats = options.trace && metadata != nullptr;
  ResourceMgr step_resources("step " + std::to_string(step.step_id));  // dies with the step
  step.step_resources = &step_resources;
  {
    std::lock_guard<std::mutex> lock(impl.mu);
    if (impl.closed) return errors::Cancelled("the session is closed");
    impl.active_steps.push_back(&cancellation);
    ++impl.running;
  }
  int64_t timeout_ms = options.timeout_ms;
  if (timeout_ms == 0 && (cluster != nullptr || replicas != nullptr))
    timeout_ms = impl.runtime->config().cluster.step_timeout_ms;
  if (replicas != nullptr) {
    // A task taken for dead cancels the step (and every later one): its collectives would wait
    // for it forever. So does the time limit, also while a collective blocks this thread.
    replicas->AddStep(&cancellation, timeout_ms);
    if (Status dead = replicas->AnyDead(); !dead.ok()) cancellation.StartCancel(dead);
  }
  internal::RemoteGraphs* remote = ek->remote.get();
  if (ek->executors.size() > 1 || remote != nullptr)
    cancellation.Register([rendezvous](const Status& s) { rendezvous->StartAbort(s); });
  if (remote != nullptr)
    cancellation.Register(
        [remote, id = step.step_id](const Status& s) { remote->Abort(id, s); });

  std::vector<DeviceStepStats> stats(step.collect_stats ? ek->executors.size() : 0);
  std::vector<DeviceStepStats> remote_stats;
  // What the partitions' callbacks reach, behind one pointer (a callback that captures only it
  // needs no allocation).
  struct Completion {
    std::mutex mu;
    Status status;  // the first error
    std::atomic<int> remaining;
    Notification all_done;
    void Fail(const Status& s) {
      std::lock_guard<std::mutex> lock(mu);
      if (status.ok()) status = s;
    }
    void Done() {
      if (remaining.fetch_sub(1) == 1) all_done.Notify();
    }
  } completion;
  completion.remaining = static_cast<int>(ek->executors.size()) + (remote ? 1 : 0);
  Notification& all_done = completion.all_done;
  // Nothing to run (no fetch, target or feed reaches a node): no callback will come.
  if (completion.remaining.load() == 0) all_done.Notify();
  if (remote != nullptr) {
    remote->RunAsync(step.step_id, step.collect_stats,
                     [&](const Status& s, std::vector<DeviceStepStats> task_stats) {
                       if (!s.ok()) {
                         completion.Fail(s);
                         cancellation.StartCancel(s);
                       }
                       remote_stats = std::move(task_stats);
                       completion.Done();
                     });
  }
  for (size_t i = 0; i < ek->executors.size(); ++i) {
    ek->executors[i]->RunAsync(step, step.collect_stats ? &stats[i] : nullptr,
                               [c = &completion](const Status& s) {
                                 if (!s.ok()) c->Fail(s);
                                 c->Done();
                               });
  }
  if (timeout_ms > 0 && !all_done.WaitFor(timeout_ms))
    cancellation.StartCancel(
        errors::DeadlineExceeded("the step timed out after ", timeout_ms, " ms"));
  all_done.Wait();
  if (replicas != nullptr) replicas->RemoveStep(&cancellation);
  if (cluster != nullptr)  // what is left of the step's messages is dropped from now on
    cluster->group()->transport()->AbortPrefix(
        internal::RemoteRendezvous::StepPrefix(step.step_id),
        errors::Cancelled("step ", step.step_id, " is over"));
  {
    std::lock_guard<std::mutex> lock(impl.mu);
    std::erase(impl.active_steps, &cancellation);
    if (--impl.running == 0) impl.idle.notify_all();
  }
  // The first cause, not the cancellations it caused elsewhere.
  if (cancellation.cancelled()) return cancellation.status();
  CFX_RETURN_IF_ERROR(completion.status);

  if (outputs != nullptr) {
    outputs->clear();
    for (size_t i = 0; i < frame.retvals.size(); ++i) {
      // The step succeeded, so the fetch's _Retval skipped a dead input: the user's graph
      // fetched a tensor of a branch that did not run.
      if (!frame.retval_set[i])
        return errors::InvalidArgument(
            "fetch '", fetches[i],
            "' has no value in this step: it is dead, on the side of a Switch that was not taken "
            "(fetch the cond's Merge instead)");
      auto host = CopyTensorSync(nullptr, nullptr, frame.retvals[i]);
      if (!host.ok()) return host.status().WithPrefix("fetch '" + fetches[i] + "': ");
      outputs->push_back(*std::move(host));
    }
  }
  if (metadata != nullptr) {
    metadata->step_stats.devices = std::move(stats);
    for (DeviceStepStats& d : remote_stats) metadata->step_stats.devices.push_back(std::move(d));
    if (step.collect_stats) impl.costs->Record(metadata->step_stats, *impl.runtime);
  }
  return Status();
}

Status Session::Close() {
  std::vector<CancellationManager*> steps;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->closed) return Status();
    impl_->closed = true;
    steps.assign(impl_->active_steps.begin(), impl_->active_steps.end());
    for (CancellationManager* cm : steps)
      cm->StartCancel(errors::Cancelled("the session was closed"));
  }
  return Status();
}

std::vector<DeviceAttributes> Session::ListDevices() const {
  std::vector<DeviceAttributes> out;
  for (const Device* d : impl_->runtime->cluster_devices())
    out.push_back(
        {d->full_name(), d->type(), d->description(), d->allocator()->stats().bytes_limit});
  return out;
}

Status Session::Reset(const std::vector<std::string>& containers) {
  for (const auto& d : impl_->runtime->devices())
    for (const std::string& c : containers)
      if (!c.empty()) d->resource_mgr()->Cleanup(c);
  return Status();
}

Runtime* Session::runtime() const { return impl_->runtime; }

}  // namespace cfx
