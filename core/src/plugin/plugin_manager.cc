// PluginManager.
#include "plugin/plugin_manager.h"

#include <algorithm>
#include <boost/dll/runtime_symbol_info.hpp>
#include <boost/dll/shared_library.hpp>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "plugin/abi_types.h"
#include "plugin/elf_check.h"
#include "plugin/plugin_struct.h"
#include "plugin/plugin_transport.h"
#include "util/log.h"

namespace cfx {

namespace fs = std::filesystem;

struct PluginManager::Loaded {
  LoadedPluginInfo info;
  boost::dll::shared_library library;
  const cfx_host_api* host = nullptr;  // the table for the negotiated minor version
  cfx_plugin_info plugin_info{};
};

std::string DefaultPluginDir() {
  boost::system::error_code ec;
  auto self = boost::dll::this_line_location(ec);
  if (ec) return "";
  return (fs::path(self.string()).parent_path() / CONFLUX_PLUGIN_RELATIVE_DIR).string();
}

PluginManager::PluginManager(OpRegistry* ops, KernelRegistry* kernels,
                             std::vector<std::string> search_paths)
    : ops_(ops), kernels_(kernels), search_paths_(std::move(search_paths)) {}

namespace {

// Libraries whose initialisation ran stay mapped until process exit: kernels' code and static
// descriptors may still be referenced by objects destroyed later, a plugin refused after its
// init may have left allocations, threads or exit handlers behind, and unloading OpenMP or CUDA
// runtimes is unsafe.
void KeepMapped(boost::dll::shared_library library) {
  static std::mutex mu;
  static auto* kept = new std::vector<boost::dll::shared_library>();
  std::lock_guard<std::mutex> lock(mu);
  kept->push_back(std::move(library));
}

}  // namespace

PluginManager::~PluginManager() {
  for (auto it = loaded_.rbegin(); it != loaded_.rend(); ++it) {
    Loaded& p = **it;
    if (p.plugin_info.shutdown) p.plugin_info.shutdown(p.plugin_info.plugin_state);
  }
  for (auto& p : loaded_) KeepMapped(std::move(p->library));
}

std::vector<std::string> PluginManager::SearchPath() const {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("CONFLUX_PLUGIN_PATH")) {
    std::string s = env;
    size_t start = 0;
    while (start <= s.size()) {
      size_t colon = s.find(':', start);
      std::string d =
          s.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
      if (!d.empty()) dirs.push_back(d);
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
  }
  dirs.insert(dirs.end(), search_paths_.begin(), search_paths_.end());
  std::string def = DefaultPluginDir();
  if (!def.empty()) dirs.push_back(def);
  return dirs;
}

StatusOr<std::string> PluginManager::Resolve(const std::string& name) const {
  std::string file = "libconflux_" + name + ".so";
  std::string searched;
  for (const std::string& dir : SearchPath()) {
    fs::path p = fs::path(dir) / file;
    std::error_code ec;
    if (fs::exists(p, ec)) return p.string();
    searched += "\n  " + dir;
  }
  return errors::NotFound("plugin '", name, "': ", file, " not found; searched:", searched,
                          "\n(set CONFLUX_PLUGIN_PATH or plugin_paths in the config, or give "
                          "the plugin's path)");
}

namespace {
std::string StemName(const std::string& path) {
  std::string stem = fs::path(path).stem().string();
  if (stem.rfind("libconflux_", 0) == 0) return stem.substr(11);
  if (stem.rfind("lib", 0) == 0) return stem.substr(3);
  return stem;
}
}  // namespace

Status PluginManager::Load(const PluginSpec& spec) {
  std::string label = spec.name.empty() ? StemName(spec.path) : spec.name;
  Status s;
  if (!spec.path.empty()) {
    s = LoadFile(label, spec.path, spec.options);
  } else {
    auto path = Resolve(spec.name);
    s = path.ok() ? LoadFile(label, *path, spec.options) : path.status();
  }
  if (!s.ok()) failures_.push_back({label, s});
  return s;
}

Status PluginManager::LoadFile(const std::string& label, const std::string& path,
                               const PluginOptions& spec_options) {
  const std::string who = "plugin '" + label + "' (" + path + ")";
  // Before the dynamic loader maps it: a truncated file would raise SIGBUS there. A missing
  // file is NotFound.
  if (Status elf = internal::CheckSharedObjectFile(path, who); !elf.ok()) return elf;

  auto p = std::make_unique<Loaded>();
  boost::system::error_code ec;
  p->library.load(path, boost::dll::load_mode::rtld_lazy | boost::dll::load_mode::rtld_local, ec);
  if (ec)
    return errors::InvalidArgument(who, ": cannot be loaded as a shared object: ", ec.message());
  for (const char* sym : {CFX_PLUGIN_ABI_VERSION_SYMBOL, CFX_PLUGIN_INIT_SYMBOL}) {
    if (!p->library.has(sym))
      return errors::InvalidArgument(who, ": entry symbol ", sym,
                                     " is missing (is this a Conflux plugin? build it with "
                                     "conflux_add_plugin and CFX_DEFINE_PLUGIN)");
  }
  auto abi = p->library.get<uint32_t()>(CFX_PLUGIN_ABI_VERSION_SYMBOL)();
  uint32_t major = abi >> 16, minor = abi & 0xffff;
  if (major != CFX_ABI_MAJOR)
    return errors::FailedPrecondition(who, ": built for plugin ABI ", major, ".", minor,
                                      "; this Conflux speaks ABI ", CFX_ABI_MAJOR, ".",
                                      CFX_ABI_MINOR,
                                      " and major versions must match: rebuild the plugin "
                                      "against this Conflux");
  p->host = internal::HostApiForMinor(std::min<uint32_t>(minor, CFX_ABI_MINOR));

  cfx_registrar reg;
  reg.plugin = StemName(path);
  reg.ops = ops_;
  reg.kernels = kernels_;
  std::map<std::string, std::string> types;
  for (const auto& [type, entry] : device_types_) types[type] = entry.plugin;
  reg.device_types = &types;
  reg.gradients = &gradients_;
  std::map<std::string, std::string> transports, collectives;
  for (const auto& [transport, entry] : transports_) transports[transport] = entry.plugin;
  for (const CollectivesEntry& c : collectives_)
    collectives[internal::CollectivesKey(c.desc)] = c.plugin;
  reg.transports = &transports;
  reg.collectives = &collectives;

  p->plugin_info.struct_size = sizeof(cfx_plugin_info);
  cfx_host_plugin_options options{};
  std::vector<const char*> keys, values;
  for (const auto& [k, v] : spec_options) {
    keys.push_back(k.c_str());
    values.push_back(v.c_str());
  }
  options.struct_size = sizeof(options);
  options.count = keys.size();
  options.keys = keys.data();
  options.values = values.data();
  cfx_status status;
  auto init =
      p->library.get<void(const cfx_host_api*, cfx_registrar*, const cfx_host_plugin_options*,
                          cfx_plugin_info*, cfx_status*)>(CFX_PLUGIN_INIT_SYMBOL);
  init(p->host, &reg, &options, &p->plugin_info, &status);
  Status result = status.status.ok() ? reg.first_error : status.status;
  // The plugin may have written struct_size; the fields below are read only if it is sane.
  if (Status size = internal::CheckStructSize(&p->plugin_info, who); !size.ok()) {
    KeepMapped(std::move(p->library));
    return size;
  }
  // A plugin refused from here on is shut down, and stays mapped (KeepMapped).
  auto refuse = [&p](Status why) {
    if (p->plugin_info.shutdown) p->plugin_info.shutdown(p->plugin_info.plugin_state);
    KeepMapped(std::move(p->library));
    return why;
  };
  if (!result.ok()) return refuse(result.WithPrefix(who + ": initialisation failed: "));
  std::string name = p->plugin_info.name ? p->plugin_info.name : reg.plugin;
  for (const auto& other : loaded_)
    if (other->info.name == name)
      return refuse(errors::AlreadyExists(who, ": a plugin named '", name,
                                          "' is already loaded from ", other->info.path));

  // Commit.
  LoadedPluginInfo& info = p->info;
  info.name = name;
  info.path = path;
  info.version = p->plugin_info.version ? p->plugin_info.version : "";
  info.abi_major = major;
  info.abi_minor = p->host->abi_minor;
  for (OpRegistration& op : reg.staged_ops) {
    op.registered_by = name;
    info.ops.push_back(op.def.name);
    CFX_CHECK(ops_->Register(std::move(op)).ok());
  }
  for (KernelDef& k : reg.staged_kernels) {
    k.registered_by = name;
    CFX_CHECK(kernels_->Register(std::move(k)).ok());
    ++info.num_kernels;
  }
  for (const cfx_device_type_desc* d : reg.staged_device_types) {
    device_types_[d->type] = {d, name};
    info.device_types.push_back(d->type);
  }
  for (auto& [op, g] : reg.staged_gradients) {
    g.plugin = name;
    gradients_[op] = g;
  }
  for (const cfx_transport_desc* t : reg.staged_transports) {
    transports_[t->name] = {t, name};
    info.transports.push_back(t->name);
  }
  for (const cfx_collectives_desc* c : reg.staged_collectives) {
    collectives_.push_back({c, name});
    info.collectives.push_back(std::string(c->name) + " (" + c->device_type + ")");
  }
  internal::LogMessage(internal::LogLevel::kInfo,
                       "loaded plugin " + name + " " + info.version + " from " + path);
  loaded_.push_back(std::move(p));
  return Status();
}

const internal::PluginGradient* PluginManager::FindGradient(const std::string& op) const {
  auto it = gradients_.find(op);
  return it == gradients_.end() ? nullptr : &it->second;
}

std::vector<LoadedPluginInfo> PluginManager::loaded() const {
  std::vector<LoadedPluginInfo> out;
  for (const auto& p : loaded_) out.push_back(p->info);
  return out;
}

}  // namespace cfx
