// PluginDevice: a Device whose memory, copies, streams and intra-op pool are a device plugin's
// C functions (cfx_device_type_desc / cfx_device_funcs). Every device of a Runtime is one.
// Thread-safe as Device (the plugin's device functions must be).
#ifndef CONFLUX_CORE_SRC_PLUGIN_PLUGIN_DEVICE_H_
#define CONFLUX_CORE_SRC_PLUGIN_PLUGIN_DEVICE_H_

#include <string>

#include "conflux/device.h"
#include "conflux/plugin_api.h"

namespace cfx::internal {

class PluginDevice final : public Device {
 public:
  // Takes ownership of `handle` (made by desc->create_device); destroys it with the device.
  PluginDevice(const cfx_device_type_desc* desc, cfx_device* handle, DeviceName name,
               std::string plugin, int64_t memory_limit);
  ~PluginDevice() override;

  std::string description() const override;
  Status Synchronize() const override;
  void ParallelFor(int64_t total, int64_t cost_per_unit,
                   const std::function<void(int64_t, int64_t)>& fn) const override;

  cfx_device* handle() const { return handle_; }
  const cfx_device_type_desc* desc() const { return desc_; }
  // The plugin device behind a Runtime's device.
  static const PluginDevice& Of(const Device& d) { return static_cast<const PluginDevice&>(d); }

 protected:
  Status CopyBytesToDevice(void* device_dst, const void* host_src, size_t bytes) const override;
  Status CopyBytesToHost(void* host_dst, const void* device_src, size_t bytes) const override;
  Status CopyBytesOnDevice(void* device_dst, const void* device_src, size_t bytes) const override;

 private:
  const cfx_device_type_desc* desc_;
  cfx_device* handle_;
};

}  // namespace cfx::internal

#endif  // CONFLUX_CORE_SRC_PLUGIN_PLUGIN_DEVICE_H_
