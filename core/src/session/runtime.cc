// Runtime: start-up from a Config.
#include "conflux/runtime.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "distributed/cluster.h"
#include "distributed/compression.h"
#include "distributed/worker.h"
#include "kernels/builtin.h"
#include "plugin/abi_types.h"
#include "plugin/plugin_device.h"
#include "plugin/plugin_manager.h"
#include "plugin/plugin_transport.h"
#include "util/log.h"

namespace cfx {

Runtime::Runtime(Config config) : config_(std::move(config)) {}

Runtime::~Runtime() {
  cluster_.reset();  // closes the chief's session with the workers
  devices_.clear();  // before the plugins that own their code shut down
  plugins_.reset();
}

namespace {

// The process's group: joined by the first Runtime of a cluster config, left when the process
// exits (a transport such as MPI joins once per process).
struct ProcessGroupSlot {
  std::mutex mu;
  std::unique_ptr<internal::ProcessGroup> group;
};
ProcessGroupSlot& GroupSlot() {
  static ProcessGroupSlot slot;
  return slot;
}

std::string ClusterShape(const ClusterConfig& c) {
  std::string jobs;
  for (const ClusterJob& j : c.jobs)
    jobs += (jobs.empty() ? "" : ", ") + std::to_string(j.tasks) + " " + j.name;
  return std::to_string(c.num_tasks()) + " tasks (" + jobs + ")";
}

// How many devices of a type a task creates: the config's count (or, unconfigured, what the
// plugin reports, 1 when it cannot tell), at most what the plugin reports; `why` is the plugin's
// reason when it reports none.
struct DevicePlan {
  int count = 0;
  int32_t available = -1;  // -1: the plugin cannot tell
  std::string why;
};
DevicePlan PlanDevices(const cfx_device_type_desc* desc, const DeviceTypeConfig* configured) {
  char why[512] = {0};
  DevicePlan plan;
  plan.available = desc->count ? desc->count(desc->type_state, why, sizeof(why) - 1) : -1;
  const int want =
      configured != nullptr ? configured->count : (plan.available < 0 ? 1 : plan.available);
  plan.count = plan.available < 0 ? want : std::min(want, static_cast<int>(plan.available));
  plan.why = why;
  return plan;
}

// A collectives registration the process group may create, and its plugin.
struct Provider {
  const cfx_collectives_desc* desc;
  std::string plugin;
  std::string label() const {
    return "collectives '" + std::string(desc->name) + "' (" + desc->device_type + ") of plugin " +
           plugin;
  }
};

// The collectives of a group over `transport`: its own (host memory) and every one a plugin
// registered by itself (register_collectives), in load order; other transports' own are not
// used. FailedPrecondition when two of them are for the same device type: a step's collective on
// a device has one provider to run on.
StatusOr<std::vector<Provider>> GroupProviders(const PluginManager& plugins,
                                               const PluginManager::TransportEntry& transport,
                                               const std::string& where) {
  std::set<const cfx_collectives_desc*> transports_own;
  for (const auto& [name, t] : plugins.transports())
    if (t.desc->collectives != nullptr) transports_own.insert(t.desc->collectives);
  std::vector<Provider> out;
  std::map<std::string, size_t> by_type;
  for (const PluginManager::CollectivesEntry& c : plugins.collectives()) {
    if (transports_own.count(c.desc) != 0 && c.desc != transport.desc->collectives) continue;
    Provider p{c.desc, c.plugin};
    auto [it, fresh] = by_type.emplace(c.desc->device_type, out.size());
    if (!fresh)
      return errors::FailedPrecondition(
          where, ": two collectives providers for device type ", c.desc->device_type, ": ",
          out[it->second].label(), " and ", p.label(),
          "; a process uses one provider per device type: load only one of them");
    out.push_back(std::move(p));
  }
  return out;
}

// Why this task creates no devices of `type` ("" when it creates some).
std::string NoDevicesWhy(const PluginManager& plugins, const std::string& type,
                         const std::map<std::string, DeviceTypeConfig>& devices) {
  if (type == "CPU") return "";  // host memory
  auto entry = plugins.device_types().find(type);
  if (entry == plugins.device_types().end()) return "no loaded plugin provides device type " + type;
  auto cfg = devices.find(type);
  DevicePlan plan = PlanDevices(entry->second.desc, cfg == devices.end() ? nullptr : &cfg->second);
  if (plan.count > 0) return "";
  if (plan.available != 0) return "the config gives this task 0 " + type + " devices";
  return "plugin " + entry->second.plugin + " found no " + type + " device" +
         (plan.why.empty() ? std::string() : ": " + plan.why);
}

std::string OneLine(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  std::replace(text.begin(), text.end(), '\t', ' ');
  return text;
}

// Every rank's verdict on each provider ("name/device type"): "" when it can create it, else why
// not. Rank 0 gathers them and answers every rank with one verdict per provider that any rank
// has: "" (create it, on every rank) or the reason of the first rank that cannot, named. The
// ranks then create the same providers in the same order (creation may talk to the peers).
StatusOr<std::map<std::string, std::string>> AgreeOnProviders(
    const internal::ProcessGroup& group, const std::map<std::string, std::string>& mine) {
  Transport* t = group.transport();
  auto encode = [](const std::map<std::string, std::string>& verdicts) {
    std::string text;
    for (const auto& [key, why] : verdicts) text += key + "\t" + OneLine(why) + "\n";
    return text;
  };
  auto decode = [](const std::string& text) {
    std::map<std::string, std::string> verdicts;
    size_t at = 0;
    while (at < text.size()) {
      size_t tab = text.find('\t', at), end = text.find('\n', at);
      if (tab == std::string::npos || end == std::string::npos || tab > end) break;
      verdicts[text.substr(at, tab - at)] = text.substr(tab + 1, end - tab - 1);
      at = end + 1;
    }
    return verdicts;
  };
  const std::string key = "_group;collectives;";
  if (group.rank() != 0) {
    CFX_RETURN_IF_ERROR(
        t->SendSync(0, key + "offer;" + std::to_string(group.rank()), encode(mine)));
    CFX_ASSIGN_OR_RETURN(std::string answer, t->RecvSync(0, key + "verdict"));
    return decode(answer);
  }
  std::vector<std::map<std::string, std::string>> all(group.size());
  all[0] = mine;
  for (int r = 1; r < group.size(); ++r) {
    CFX_ASSIGN_OR_RETURN(std::string offer, t->RecvSync(r, key + "offer;" + std::to_string(r)));
    all[r] = decode(offer);
  }
  std::map<std::string, std::string> verdict;
  for (const auto& verdicts : all)
    for (const auto& [provider, why] : verdicts) verdict.emplace(provider, "");
  for (auto& [provider, why] : verdict) {
    for (int r = 0; r < group.size() && why.empty(); ++r) {
      auto it = all[r].find(provider);
      if (it == all[r].end())
        why = "task " + group.task_name(r) + " loaded no plugin that registers them";
      else if (!it->second.empty())
        why = "task " + group.task_name(r) + ": " + it->second;
    }
  }
  const std::string answer = encode(verdict);
  for (int r = 1; r < group.size(); ++r)
    CFX_RETURN_IF_ERROR(t->SendSync(r, key + "verdict", answer));
  return verdict;
}

// Creates the group's collectives: the host's (the transport's own, or a plugin's for "CPU") and
// one per device type whose devices every task has. A provider left out is logged with its
// reason, which a collective node on that device type reports too.
Status CreateGroupCollectives(internal::ProcessGroup* group, const std::vector<Provider>& providers,
                              const PluginManager& plugins,
                              const std::map<std::string, DeviceTypeConfig>& devices) {
  std::map<std::string, std::string> mine;
  std::map<std::string, const Provider*> by_key;
  for (const Provider& p : providers) {
    const std::string key = internal::CollectivesKey(p.desc);
    mine[key] = NoDevicesWhy(plugins, p.desc->device_type, devices);
    by_key[key] = &p;
  }
  std::map<std::string, std::string> verdict = mine;
  if (group->size() > 1) {
    CFX_ASSIGN_OR_RETURN(verdict, AgreeOnProviders(*group, mine));
  }
  for (const auto& [key, why] : verdict) {
    auto it = by_key.find(key);
    if (it == by_key.end()) continue;  // another task's; this one has a reason to skip it too
    const Provider& p = *it->second;
    const std::string type = p.desc->device_type;
    if (!why.empty()) {
      internal::LogMessage(internal::LogLevel::kInfo, p.label() + " not created: " + why);
      if (type != "CPU")
        group->device_collectives().Skip(type, p.label() + " were not created: " + why);
      continue;
    }
    CFX_ASSIGN_OR_RETURN(std::unique_ptr<Collectives> collectives,
                         internal::CreatePluginCollectives(p.desc, p.plugin, group->transport()));
    if (type == "CPU") {
      group->set_host_collectives(std::move(collectives));
    } else {
      internal::LogMessage(internal::LogLevel::kInfo,
                           p.label() + " created over " + std::to_string(group->size()) + " tasks");
      group->device_collectives().Add(std::move(collectives));
    }
  }
  return Status();
}

}  // namespace

// Joins (once per process) the process group of `config`'s cluster through its transport plugin,
// loaded by `plugins` (loading "transport-<name>" when no loaded plugin registered the
// transport).
static StatusOr<internal::ProcessGroup*> JoinProcessGroup(const Config& config,
                                                          PluginManager* plugins) {
  const ClusterConfig& cc = config.cluster;
  CFX_ASSIGN_OR_RETURN(std::vector<ClusterTask> tasks, cc.Resolve());
  CFX_ASSIGN_OR_RETURN(int chief, cc.ChiefRank());
  const std::string where = config.source + (cc.source.empty() ? "" : " (" + cc.source + ")");
  ProcessGroupSlot& slot = GroupSlot();
  std::lock_guard<std::mutex> lock(slot.mu);
  if (slot.group != nullptr) {
    if (slot.group->size() != cc.num_tasks() || slot.group->chief() != chief ||
        slot.group->transport()->name() != cc.transport ||
        slot.group->between_graph() != cc.between_graph())
      return errors::FailedPrecondition(
          where, ": this process already joined a cluster of ", slot.group->size(),
          " tasks over transport ", slot.group->transport()->name(), " (",
          slot.group->between_graph() ? "between" : "in", "-graph replication)",
          "; a process belongs to one cluster for its lifetime");
    return slot.group.get();
  }
  if (plugins->transports().count(cc.transport) == 0) {
    PluginSpec spec;
    spec.name = "transport-" + cc.transport;
    spec.source = where;
    Status s = plugins->Load(spec);
    if (!s.ok())
      return s.WithPrefix(where + ": cluster.transport is '" + cc.transport +
                          "', which no loaded plugin registers, and plugin " + spec.name +
                          " did not load: ");
    if (plugins->transports().count(cc.transport) == 0)
      return errors::NotFound(where, ": cluster.transport '", cc.transport, "': plugin ", spec.name,
                              " registers no transport of that name");
  }
  const PluginManager::TransportEntry& entry = plugins->transports().at(cc.transport);
  // Checked before the transport joins: a transport such as MPI joins once per process.
  CFX_ASSIGN_OR_RETURN(std::vector<Provider> providers, GroupProviders(*plugins, entry, where));
  // The transport's code stays loaded until the process exits, whatever the Runtime does.
  for (const LoadedPluginInfo& p : plugins->loaded())
    if (p.name == entry.plugin && !p.path.empty()) (void)dlopen(p.path.c_str(), RTLD_NOW);
  std::vector<std::pair<std::string, std::string>> options;
  for (const PluginSpec& p : config.plugins)
    if (p.name == entry.plugin) options = p.options;
  options.insert(options.end(), cc.transport_options.begin(), cc.transport_options.end());
  CFX_ASSIGN_OR_RETURN(
      std::unique_ptr<Transport> transport,
      // The size is checked below, with the config's words.
      internal::CreatePluginTransport(entry.desc, entry.plugin, options, 0,
                                      /*blocking_collectives=*/cc.between_graph()));
  if (transport->size() != cc.num_tasks()) {
    if (transport->size() == 1)
      return errors::FailedPrecondition(
          where, ": the config describes a cluster of ", ClusterShape(cc),
          " but this process was not started as one of ", cc.num_tasks(),
          " ranks: launch it with mpirun -n ", cc.num_tasks(), " (one rank per task)");
    return errors::FailedPrecondition(where, ": mpirun started ", transport->size(),
                                      " ranks but the config describes a cluster of ",
                                      ClusterShape(cc), ": use mpirun -n ", cc.num_tasks());
  }
  auto group = std::make_unique<internal::ProcessGroup>(
      std::shared_ptr<Transport>(std::move(transport)), std::move(tasks), chief);
  const ClusterTask& self = group->tasks()[group->rank()];
  CFX_RETURN_IF_ERROR(CreateGroupCollectives(group.get(), providers, *plugins,
                                             cc.DevicesOf(self.job, config.devices)));
  if (cc.between_graph())
    group->StartBetweenGraph(cc.heartbeat_interval_ms, cc.heartbeat_timeout_ms);
  slot.group = std::move(group);
  return slot.group.get();
}

Status Runtime::LoadConfiguredPlugins() {
  // OpenMP, which the CPU plugin shares with oneDNN and Eigen, gives a thread that never set its
  // own count OMP_NUM_THREADS threads (else one per core), read once when a plugin loads it. Ops
  // also run on threads the plugins never saw (the executor's pool, transport callbacks): set it
  // to threads.intra_op first, unless the process did, so that every op stays within it.
  if (config_.intra_op_threads > 0 && std::getenv("OMP_NUM_THREADS") == nullptr)
    setenv("OMP_NUM_THREADS", std::to_string(config_.intra_op_threads).c_str(), 0);
  RegisterStandardOps(&ops_);
  internal::RegisterRuntimeKernels(&kernels_);
  internal::RegisterStateKernels(&kernels_);
  internal::RegisterQueueKernels(&kernels_);
  internal::RegisterAccumulatorKernels(&kernels_);
  internal::RegisterTensorArrayKernels(&kernels_);
  internal::RegisterListKernels(&kernels_);
  internal::RegisterStackKernels(&kernels_);
  internal::RegisterLookupTableKernels(&kernels_);
  internal::RegisterStringKernels(&kernels_);
  internal::RegisterReaderKernels(&kernels_);
  internal::RegisterSummaryKernels(&kernels_);
  internal::RegisterCheckpointKernels(&kernels_);
  internal::RegisterControlFlowKernels(&kernels_);
  internal::RegisterCollectiveKernels(&kernels_, "CPU");
  plugins_ = std::make_unique<PluginManager>(&ops_, &kernels_, config_.plugin_paths);
  for (const PluginSpec& spec : config_.plugins) {
    Status s = plugins_->Load(spec);
    if (s.ok()) continue;
    std::string where = spec.source.empty() ? "" : " (" + spec.source + ")";
    if (spec.required) return s.WithPrefix("required plugin" + where + ": ");
    internal::LogMessage(internal::LogLevel::kWarning,
                         "optional plugin" + where + " not loaded: " + s.ToString());
  }
  // Collective kernels for each device type with collectives of its own (NCCL for GPU).
  std::set<std::string> collective_types = {"CPU"};
  for (const PluginManager::CollectivesEntry& c : plugins_->collectives())
    if (collective_types.insert(c.desc->device_type).second)
      internal::RegisterCollectiveKernels(&kernels_, c.desc->device_type);
  return Status();
}

Status Runtime::CreateTaskDevices(const std::string& job, int task) {
  job_ = job;
  task_ = task;
  CFX_RETURN_IF_ERROR(CreateDevices(""));
  for (const auto& [type, cfg] : config_.devices) {
    if (plugins_->device_types().count(type) == 0 && cfg.required && cfg.count > 0)
      return errors::FailedPrecondition("the config requires ", cfg.count, " ", type,
                                        " device(s) but no loaded plugin provides device type ",
                                        type);
  }
  return Status();
}

StatusOr<std::unique_ptr<Runtime>> Runtime::CreateInTask(const Config& config,
                                                         const std::string& job, int task) {
  std::unique_ptr<Runtime> rt(new Runtime(config));
  CFX_RETURN_IF_ERROR(rt->LoadConfiguredPlugins());
  CFX_RETURN_IF_ERROR(rt->CreateTaskDevices(job, task));
  return rt;
}

StatusOr<std::unique_ptr<Runtime>> Runtime::Create(const Config& config) {
  internal::LogLevel level;
  if (internal::ParseLogLevel(config.log_level, &level)) internal::SetLogLevel(level);
  if (!config.cluster.enabled) return CreateInTask(config, "localhost", 0);

  // A cluster: the plugins are loaded first (the transport's among them), the process group
  // joined through them, and then this task's devices created, named after the task.
  std::unique_ptr<Runtime> rt(new Runtime(config));
  CFX_RETURN_IF_ERROR(rt->LoadConfiguredPlugins());
  CFX_ASSIGN_OR_RETURN(internal::ProcessGroup * group,
                       JoinProcessGroup(config, rt->plugins_.get()));
  const ClusterTask& self = group->tasks()[group->rank()];
  if (config.cluster.between_graph()) {
    // Every rank runs the program: a runtime of its own task, no master.
    rt->config_.devices = config.cluster.DevicesOf(self.job, config.devices);
    CFX_RETURN_IF_ERROR(rt->CreateTaskDevices(self.job, self.task));
    rt->replica_group_ = group;
    return rt;
  }
  if (!group->is_chief()) {
    // A worker: serve the chief until its process exits, then exit. Each of the chief's
    // Runtimes gets a Runtime of this task under the chief's config.
    rt.reset();
    Status served = internal::ServeWorker(group, config, [](const Config& c) {
      internal::ProcessGroup* g = GroupSlot().group.get();
      const ClusterTask& t = g->tasks()[g->rank()];
      Config task_config = c;
      task_config.devices = c.cluster.DevicesOf(t.job, c.devices);
      return CreateInTask(task_config, t.job, t.task);
    });
    if (!served.ok())
      internal::LogMessage(internal::LogLevel::kError,
                           "worker " + group->task_name(group->rank()) + ": " + served.ToString());
    {
      std::lock_guard<std::mutex> lock(GroupSlot().mu);
      GroupSlot().group.reset();
    }
    std::exit(served.ok() ? 0 : 1);
  }
  rt->config_.devices = config.cluster.DevicesOf(self.job, config.devices);
  CFX_RETURN_IF_ERROR(rt->CreateTaskDevices(self.job, self.task));
  CFX_ASSIGN_OR_RETURN(rt->cluster_, internal::Cluster::Open(group, config.text));
  group->StartHeartbeats(config.cluster.heartbeat_interval_ms, config.cluster.heartbeat_timeout_ms);
  return rt;
}

Status Runtime::LoadPlugin(const PluginSpec& spec, bool create_devices) {
  CFX_RETURN_IF_ERROR(plugins_->Load(spec));
  if (!create_devices) return Status();
  return CreateDevices(plugins_->loaded().back().name);
}

Status Runtime::CreateDevices(const std::string& only_plugin) {
  for (const auto& [type, entry] : plugins_->device_types()) {
    if (!only_plugin.empty() && entry.plugin != only_plugin) continue;
    const cfx_device_type_desc* desc = entry.desc;
    DeviceTypeConfig cfg;
    auto it = config_.devices.find(type);
    bool configured = it != config_.devices.end();
    if (configured) cfg = it->second;
    const DevicePlan plan = PlanDevices(desc, configured ? &cfg : nullptr);
    const int n = plan.count;
    const char* why = plan.why.c_str();
    if (plan.available == 0) {
      std::string reason = why[0] ? why : "the plugin found no device";
      device_type_notes_.push_back({type, reason});
      internal::LogMessage(internal::LogLevel::kInfo,
                           "plugin " + entry.plugin + ": no " + type + " device: " + reason);
    }
    if (cfg.required && n < cfg.count)
      return errors::FailedPrecondition("the config requires ", cfg.count, " ", type,
                                        " device(s) but plugin ", entry.plugin, " provides ", n,
                                        why[0] ? std::string(": ") + why : std::string());
    std::vector<const char*> keys, values;
    for (const auto& [k, v] : cfg.options) {
      keys.push_back(k.c_str());
      values.push_back(v.c_str());
    }
    for (int i = 0; i < n; ++i) {
      cfx_host_device_config dc{};
      dc.struct_size = sizeof(dc);
      dc.index = i;
      dc.memory_limit = cfg.memory_limit;
      dc.intra_op_threads = config_.intra_op_threads > 0
                                ? config_.intra_op_threads
                                : static_cast<int32_t>(std::thread::hardware_concurrency());
      dc.num_options = keys.size();
      dc.option_keys = keys.data();
      dc.option_values = values.data();
      cfx_status s;
      cfx_device* handle = desc->create_device(desc->type_state, &dc, &s);
      if (!s.status.ok() || handle == nullptr) {
        Status err = s.status.ok() ? errors::Internal("create_device returned null") : s.status;
        return err.WithPrefix("plugin " + entry.plugin + ": cannot create device " + type + ":" +
                              std::to_string(i) + ": ");
      }
      DeviceName name;
      name.job = job_;
      name.replica = 0;
      name.task = task_;
      name.type = type;
      name.id = i;
      // Host memory is bounded by the machine even when the config says nothing.
      const int64_t limit = cfg.memory_limit > 0     ? cfg.memory_limit
                            : desc->host_addressable ? PhysicalMemoryBytes()
                                                     : 0;
      auto device = internal::PluginDevice::Create(desc, handle, name, entry.plugin, limit);
      if (!device.ok()) return device.status().WithPrefix("plugin " + entry.plugin + ": ");
      (*device)->set_swap_threshold(cfg.swap_threshold);
      devices_.push_back(std::move(*device));
    }
  }
  return Status();
}

StatusOr<Device*> Runtime::FindDevice(const std::string& spec) const {
  CFX_ASSIGN_OR_RETURN(DeviceName want, DeviceName::Parse(spec));
  std::string names;
  for (const auto& d : devices_) {
    if (want.Matches(d->name())) return d.get();
    names += " " + d->full_name();
  }
  return errors::NotFound("no device matches \"", spec,
                          "\"; devices:", names.empty() ? " (none)" : names);
}

std::string Runtime::task_name() const {
  return cluster_ == nullptr && replica_group_ == nullptr
             ? std::string()
             : "/job:" + job_ + "/replica:0/task:" + std::to_string(task_);
}

Runtime::TransferStats Runtime::SentToOtherTasks() {
  const internal::TransferCounters& sent = internal::SentBytes();
  return {sent.tensor_bytes.load(), sent.wire_bytes.load()};
}

std::vector<Device*> Runtime::cluster_devices() const {
  std::vector<Device*> all;
  for (const auto& d : devices_) all.push_back(d.get());
  if (cluster_ != nullptr)
    for (const auto& d : cluster_->remote_devices()) all.push_back(d.get());
  return all;
}

std::vector<LoadedPluginInfo> Runtime::plugins() const { return plugins_->loaded(); }
const internal::PluginGradient* Runtime::FindPluginGradient(const std::string& op) const {
  return plugins_->FindGradient(op);
}

const std::vector<PluginFailure>& Runtime::plugin_failures() const { return plugins_->failures(); }
std::vector<std::pair<std::string, std::string>> Runtime::device_type_notes() const {
  return device_type_notes_;
}

}  // namespace cfx
