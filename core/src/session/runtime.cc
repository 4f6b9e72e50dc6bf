// Runtime: start-up from a Config.
#include "conflux/runtime.h"

#include <thread>

#include "kernels/builtin.h"
#include "plugin/abi_types.h"
#include "plugin/log.h"
#include "plugin/plugin_device.h"
#include "plugin/plugin_manager.h"

namespace cfx {

Runtime::Runtime(Config config) : config_(std::move(config)) {}

Runtime::~Runtime() {
  devices_.clear();  // before the plugins that own their code shut down
  plugins_.reset();
}

StatusOr<std::unique_ptr<Runtime>> Runtime::Create(const Config& config) {
  std::unique_ptr<Runtime> rt(new Runtime(config));
  internal::LogLevel level;
  if (internal::ParseLogLevel(config.log_level, &level)) internal::SetLogLevel(level);
  RegisterStandardOps(&rt->ops_);
  internal::RegisterRuntimeKernels(&rt->kernels_);
  internal::RegisterStateKernels(&rt->kernels_);
  internal::RegisterQueueKernels(&rt->kernels_);
  internal::RegisterTensorArrayKernels(&rt->kernels_);
  internal::RegisterStackKernels(&rt->kernels_);
  internal::RegisterReaderKernels(&rt->kernels_);
  internal::RegisterSummaryKernels(&rt->kernels_);
  internal::RegisterControlFlowKernels(&rt->kernels_);
  rt->plugins_ = std::make_unique<PluginManager>(&rt->ops_, &rt->kernels_, config.plugin_paths);
  for (const PluginSpec& spec : config.plugins) {
    Status s = rt->plugins_->Load(spec);
    if (s.ok()) continue;
    std::string where = spec.source.empty() ? "" : " (" + spec.source + ")";
    if (spec.required) return s.WithPrefix("required plugin" + where + ": ");
    internal::LogMessage(internal::LogLevel::kWarning,
                         "optional plugin" + where + " not loaded: " + s.ToString());
  }
  CFX_RETURN_IF_ERROR(rt->CreateDevices(""));
  for (const auto& [type, cfg] : config.devices) {
    if (rt->plugins_->device_types().count(type) == 0 && cfg.required && cfg.count > 0)
      return errors::FailedPrecondition("the config requires ", cfg.count, " ", type,
                                        " device(s) but no loaded plugin provides device type ",
                                        type);
  }
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
    char why[512] = {0};
    int32_t available = desc->count ? desc->count(desc->type_state, why, sizeof(why) - 1) : -1;
    int want = configured ? cfg.count : (available < 0 ? 1 : available);
    int n = available < 0 ? want : std::min(want, static_cast<int>(available));
    if (available == 0) {
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
      name.job = "localhost";
      name.replica = 0;
      name.task = 0;
      name.type = type;
      name.id = i;
      auto device =
          internal::PluginDevice::Create(desc, handle, name, entry.plugin, cfg.memory_limit);
      if (!device.ok()) return device.status().WithPrefix("plugin " + entry.plugin + ": ");
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

std::vector<LoadedPluginInfo> Runtime::plugins() const { return plugins_->loaded(); }
const internal::PluginGradient* Runtime::FindPluginGradient(const std::string& op) const {
  return plugins_->FindGradient(op);
}

const std::vector<PluginFailure>& Runtime::plugin_failures() const { return plugins_->failures(); }
std::vector<std::pair<std::string, std::string>> Runtime::device_type_notes() const {
  return device_type_notes_;
}

}  // namespace cfx
