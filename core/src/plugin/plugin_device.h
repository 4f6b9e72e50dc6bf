// PluginDevice: a Device whose memory, copies, streams and intra-op pool are a device plugin's
// C functions (cfx_device_type_desc / cfx_device_funcs). Every device of a Runtime is one.
//
// A plugin that has streams and events (stream_create, stream_then, event_create/record and
// stream_wait_event) gets three streams from the host: the compute stream, on which every
// kernel of the device runs, and one stream for each copy direction. A copy to the host waits
// for an event recorded on the compute stream (not for the whole device); a copy to the device
// records an event that the compute stream waits for. Device memory is freed in stream order:
// a buffer released while kernels that read it are still queued goes back to the plugin only
// once the compute stream has passed them.
//
// Thread-safe as Device (the plugin's device functions must be).
#ifndef CONFLUX_CORE_SRC_PLUGIN_PLUGIN_DEVICE_H_
#define CONFLUX_CORE_SRC_PLUGIN_PLUGIN_DEVICE_H_

#include <memory>
#include <string>

#include "conflux/device.h"
#include "conflux/plugin_api.h"

namespace cfx::internal {

class StreamOrderedFrees;

class PluginDevice final : public Device {
 public:
  // Takes ownership of `handle` (made by desc->create_device) and destroys it with the device.
  // Creates the device's streams when the plugin has them; an error names the device.
  static StatusOr<std::unique_ptr<PluginDevice>> Create(const cfx_device_type_desc* desc,
                                                        cfx_device* handle, DeviceName name,
                                                        std::string plugin, int64_t memory_limit);
  ~PluginDevice() override;

  std::string description() const override;
  Status Synchronize() const override;
  void ParallelFor(int64_t total, int64_t cost_per_unit,
                   const std::function<void(int64_t, int64_t)>& fn) const override;
  void CopyToHostAsync(void* host_dst, const void* device_src, size_t bytes,
                       StatusCallback done) const override;
  void CopyToDeviceAsync(void* device_dst, const void* host_src, size_t bytes,
                         StatusCallback done) const override;
  void CopyOnDeviceAsync(void* device_dst, const void* device_src, size_t bytes,
                         StatusCallback done) const override;

  cfx_device* handle() const { return handle_; }
  const cfx_device_type_desc* desc() const { return desc_; }
  // The plugin device behind a Runtime's device.
  static const PluginDevice& Of(const Device& d) { return static_cast<const PluginDevice&>(d); }
  // A stream handle as the plugin knows it.
  static cfx_stream* ToCStream(DeviceStream* s) { return reinterpret_cast<cfx_stream*>(s); }

 protected:
  Status CopyBytesToDevice(void* device_dst, const void* host_src, size_t bytes) const override;
  Status CopyBytesToHost(void* host_dst, const void* device_src, size_t bytes) const override;
  Status CopyBytesOnDevice(void* device_dst, const void* device_src, size_t bytes) const override;

 private:
  PluginDevice(const cfx_device_type_desc* desc, cfx_device* handle, DeviceName name,
               std::string plugin, int64_t memory_limit, std::shared_ptr<StreamOrderedFrees> frees);
  Status CreateStreams();
  // Runs done(status) once `stream` has completed what was enqueued so far (on the plugin's
  // completion thread, or inline).
  void Then(cfx_stream* stream, StatusCallback done) const;
  // Enqueue one copy in stream order (copy streams, or the default stream without streams).
  Status EnqueueToDevice(void* device_dst, const void* host_src, size_t bytes) const;
  Status EnqueueToHost(void* host_dst, const void* device_src, size_t bytes) const;
  Status EnqueueOnDevice(void* device_dst, const void* device_src, size_t bytes) const;
  // Blocks the calling thread until `stream` has completed what was enqueued so far.
  Status Wait(cfx_stream* stream) const;
  // Work enqueued on `waiter` from now on starts after what `producer` has enqueued so far
  // (an event recorded on the producer).
  Status StreamWaitsFor(cfx_stream* waiter, cfx_stream* producer) const;
  Status StreamWaitsForCompute(cfx_stream* stream) const;
  Status ComputeWaitsFor(cfx_stream* stream) const;

  const cfx_device_type_desc* desc_;
  cfx_device* handle_;
  std::shared_ptr<StreamOrderedFrees> frees_;
  cfx_stream* compute_ = nullptr;
  cfx_stream* host_to_device_ = nullptr;
  cfx_stream* device_to_host_ = nullptr;
};

}  // namespace cfx::internal

#endif  // CONFLUX_CORE_SRC_PLUGIN_PLUGIN_DEVICE_H_
