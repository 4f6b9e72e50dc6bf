// Runtime: one process's plugins, op and kernel registries and devices, built from a Config.
//
// Registries belong to the Runtime (not to globals), so a process (or a test) may hold several.
// Thread-safe after Create.
#ifndef CONFLUX_RUNTIME_H_
#define CONFLUX_RUNTIME_H_

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "conflux/config.h"
#include "conflux/device.h"
#include "conflux/env.h"
#include "conflux/kernel_registry.h"
#include "conflux/op_def.h"
#include "conflux/status.h"

namespace cfx {

class PluginManager;
namespace internal {
struct PluginGradient;
class Cluster;
class ProcessGroup;
}

struct LoadedPluginInfo {
  std::string name;
  std::string path;
  std::string version;
  uint32_t abi_major = 0;
  uint32_t abi_minor = 0;  // negotiated
  std::vector<std::string> ops, device_types;
  // Transport names, and collectives as "name (device type)" (plugin ABI minor 4).
  std::vector<std::string> transports, collectives;
  int num_kernels = 0;
};

struct PluginFailure {
  std::string spec;  // the name or path asked for
  Status error;
};

class Runtime {
 public:
  // Registers the standard ops, loads the config's plugins and creates its devices. Fails when a
  // required plugin does not load or a required device type is missing.
  //
  // With a `cluster:` section (docs/distributed.md) the process must be one rank of an mpirun
  // job of as many ranks as the cluster has tasks. On the chief's rank, Create returns a Runtime
  // whose sessions span the cluster. On every other rank it does not return: the process serves
  // the chief as a worker and exits (status 0) when the chief's process exits. With
  // `cluster.replication: between-graph` it returns on every rank, with this task's devices.
  static StatusOr<std::unique_ptr<Runtime>> Create(const Config& config);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // Loads one more plugin by name or path after start-up (no devices are created for it unless
  // `create_devices`).
  Status LoadPlugin(const PluginSpec& spec, bool create_devices = true);

  const Config& config() const { return config_; }
  OpRegistry& ops() { return ops_; }
  const OpRegistry& ops() const { return ops_; }
  KernelRegistry& kernels() { return kernels_; }
  const KernelRegistry& kernels() const { return kernels_; }
  const std::vector<std::unique_ptr<Device>>& devices() const { return devices_; }
  // A device by full or short name ("CPU:0", "/device:CPU:1"); NotFound lists the devices.
  StatusOr<Device*> FindDevice(const std::string& spec) const;
  std::vector<LoadedPluginInfo> plugins() const;
  const std::vector<PluginFailure>& plugin_failures() const;
  // The gradient function a loaded plugin registered for `op` (plugin ABI minor 2); nullptr when
  // none did. For the client library's automatic differentiation.
  const internal::PluginGradient* FindPluginGradient(const std::string& op) const;
  // Device types registered by plugins, and for those with no device, why.
  std::vector<std::pair<std::string, std::string>> device_type_notes() const;

  // The file system that this runtime's sessions write checkpoints through (SaveV2 and the
  // Saver); Env::Default() unless set_env replaced it. `env` must outlive the runtime; steps
  // that start after set_env use it.
  Env* env() const { return env_.load(std::memory_order_acquire); }
  void set_env(Env* env) { env_.store(env, std::memory_order_release); }

  // In a cluster: this process's task ("/job:worker/replica:0/task:0"); "" for one process.
  std::string task_name() const;
  // The cluster's state on the chief (the other tasks' devices, the transport); null for one
  // process.
  internal::Cluster* cluster() const { return cluster_.get(); }
  // Between-graph replication (cluster.replication: between-graph): the process group whose
  // collectives join this rank's steps with the other ranks'; null otherwise. Sessions then run
  // on this task's devices only.
  internal::ProcessGroup* replica_group() const { return replica_group_; }
  // Every device of the cluster: this process's (devices()) and the other tasks'. Nothing runs on
  // the other tasks' devices in this process; placement and partitioning use them.
  std::vector<Device*> cluster_devices() const;
  // Tensors this process has sent to other tasks so far: their bytes, and the bytes that went on
  // the wire (fewer where cluster.compression narrowed float32 tensors to 16 bits). Collectives
  // are not counted.
  struct TransferStats {
    uint64_t tensor_bytes = 0;
    uint64_t wire_bytes = 0;
  };
  static TransferStats SentToOtherTasks();

 private:
  explicit Runtime(Config config);
  // Everything of Create but joining a cluster: devices named after `job` and `task`.
  static StatusOr<std::unique_ptr<Runtime>> CreateInTask(const Config& config,
                                                         const std::string& job, int task);
  // Creates the config's devices, named after `job` and `task`; fails when a required device
  // type has no plugin.
  Status CreateTaskDevices(const std::string& job, int task);
  Status CreateDevices(const std::string& only_plugin);
  Status LoadConfiguredPlugins();
  Config config_;
  OpRegistry ops_;
  KernelRegistry kernels_;
  std::unique_ptr<PluginManager> plugins_;
  std::vector<std::unique_ptr<Device>> devices_;
  std::vector<std::pair<std::string, std::string>> device_type_notes_;
  std::string job_ = "localhost";
  int task_ = 0;
  std::unique_ptr<internal::Cluster> cluster_;
  internal::ProcessGroup* replica_group_ = nullptr;  // the process's, outlives the runtime
  std::atomic<Env*> env_{Env::Default()};
};

}  // namespace cfx

#endif  // CONFLUX_RUNTIME_H_
