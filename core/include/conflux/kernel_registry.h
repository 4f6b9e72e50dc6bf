// KernelRegistry: which kernels exist for which (op, device type, dtypes), as registered by
// plugins. Thread-safe.
#ifndef CONFLUX_KERNEL_REGISTRY_H_
#define CONFLUX_KERNEL_REGISTRY_H_

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "conflux/graph_def.h"
#include "conflux/op_def.h"
#include "conflux/status.h"

namespace cfx {

class Device;
class OpKernel;  // the runtime's kernel interface (not part of the public API)

// KernelDef::flags.
enum KernelFlags : uint32_t {
  // Cheap enough to run inline on the thread that made the node ready (no hand-off to the
  // inter-op pool). The plugin ABI's CFX_KERNEL_INEXPENSIVE has the same value.
  kKernelInexpensive = 1u << 0,
};

// The device type of kernels that run on every device (the runtime's own: _Arg, _Send, ...).
inline constexpr const char* kAnyDeviceType = "*";

struct KernelDef {
  std::string op;
  std::string device_type;
  // attr name -> allowed dtypes (a kernel registered once per dtype has one entry each).
  std::map<std::string, std::vector<DataType>> type_constraints;
  std::set<std::string> host_memory_args;
  uint32_t flags = 0;  // KernelFlags
  // Builds the kernel for one node on one device. An error says what is wrong with the node's
  // attrs; the caller prefixes the node's name.
  std::function<StatusOr<std::unique_ptr<OpKernel>>(const NodeDef& node, const OpDef& op,
                                                    Device* device)>
      create;
  std::string registered_by;
  // "CPU: T=float"
  std::string DebugString() const;
};

class KernelRegistry {
 public:
  // AlreadyExists when a kernel for the same op, device type and constraints exists.
  Status Register(KernelDef def);
  // The kernel for `node` on `device_type`; NotFound naming the op, the device type, the node's
  // dtypes and the kernels that do exist.
  StatusOr<const KernelDef*> Find(const NodeDef& node, const OpDef& op,
                                  const std::string& device_type) const;
  bool HasKernel(const NodeDef& node, const OpDef& op, const std::string& device_type) const;
  std::vector<const KernelDef*> All() const;
  void RemoveOwnedBy(const std::string& owner);

 private:
  mutable std::mutex mu_;
  std::multimap<std::string, std::unique_ptr<KernelDef>> kernels_;  // by op
};

}  // namespace cfx

#endif  // CONFLUX_KERNEL_REGISTRY_H_
