// PluginManager: finds, loads (Boost.DLL), checks and initialises plugin shared objects, and
// commits their registrations into a Runtime's registries. Not thread-safe: the Runtime calls
// it during start-up (or under its own lock).
#ifndef CONFLUX_CORE_SRC_PLUGIN_PLUGIN_MANAGER_H_
#define CONFLUX_CORE_SRC_PLUGIN_PLUGIN_MANAGER_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "conflux/config.h"
#include "conflux/kernel_registry.h"
#include "conflux/op_def.h"
#include "conflux/plugin_api.h"
#include "conflux/runtime.h"
#include "plugin/gradient_backend.h"

namespace cfx {

class PluginManager {
 public:
  struct DeviceTypeEntry {
    const cfx_device_type_desc* desc;
    std::string plugin;
  };
  struct TransportEntry {
    const cfx_transport_desc* desc;
    std::string plugin;
  };
  struct CollectivesEntry {
    const cfx_collectives_desc* desc;
    std::string plugin;
  };

  PluginManager(OpRegistry* ops, KernelRegistry* kernels, std::vector<std::string> search_paths);
  ~PluginManager();  // shuts plugins down, then unloads them

  // Loads one plugin. On failure nothing it registered remains, the failure is recorded, and the
  // error names the plugin and the cause (file missing; not a shared object, or one for another
  // machine, or truncated: elf_check.h; entry symbol missing, ABI major mismatch, init error,
  // duplicate registration).
  Status Load(const PluginSpec& spec);

  // Where `name` resolves: libconflux_<name>.so in $CONFLUX_PLUGIN_PATH, the config's paths, then
  // the plugin folder next to libconflux. NotFound lists the folders searched.
  StatusOr<std::string> Resolve(const std::string& name) const;
  std::vector<std::string> SearchPath() const;

  std::vector<LoadedPluginInfo> loaded() const;
  const std::vector<PluginFailure>& failures() const { return failures_; }
  const std::map<std::string, DeviceTypeEntry>& device_types() const { return device_types_; }
  // Transports by name (a cluster config's `transport:`), and every collectives registration
  // (a transport's own collectives included), in load order. The descriptors are the plugins'
  // static data: valid for the process.
  const std::map<std::string, TransportEntry>& transports() const { return transports_; }
  const std::vector<CollectivesEntry>& collectives() const { return collectives_; }
  // The gradient function a plugin registered for `op`; nullptr when none did.
  const internal::PluginGradient* FindGradient(const std::string& op) const;

 private:
  struct Loaded;
  using PluginOptions = std::vector<std::pair<std::string, std::string>>;
  Status LoadFile(const std::string& label, const std::string& path, const PluginOptions& options);
  OpRegistry* ops_;
  KernelRegistry* kernels_;
  std::vector<std::string> search_paths_;
  std::vector<std::unique_ptr<Loaded>> loaded_;
  std::vector<PluginFailure> failures_;
  std::map<std::string, DeviceTypeEntry> device_types_;
  std::map<std::string, TransportEntry> transports_;
  std::vector<CollectivesEntry> collectives_;
  std::map<std::string, internal::PluginGradient> gradients_;
};

// The folder of installed plugins next to libconflux (lib/conflux/plugins).
std::string DefaultPluginDir();

}  // namespace cfx

#endif  // CONFLUX_CORE_SRC_PLUGIN_PLUGIN_MANAGER_H_
