// TOYDEV: a device type with memory of its own and asynchronous streams, built from host threads
// so that it runs anywhere. It stands in for a GPU or an accelerator behind a driver:
//  - device memory is an Arena the host must not read (host_addressable = 0), so every tensor
//    crosses with the copy functions; pinned host memory is ordinary aligned host memory;
//  - each stream is a WorkQueue (an in-order queue on a thread of its own); copies and kernels
//    enqueue on a stream and return; events and stream_then tell when work has run.
// See docs/plugins.md, "Writing a device plugin".
//
// Thread-safety: the host calls the device functions from any thread; the device's state is
// either immutable after creation or guarded inside Arena, WorkQueue and Event.
#ifndef TOYDEV_TOY_DEVICE_H_
#define TOYDEV_TOY_DEVICE_H_

#include <cstddef>
#include <map>
#include <memory>
#include <string>

#include "conflux/sdk.h"
#include "stream.h"

// The ABI's opaque handles, defined by the plugin: the host only passes them back.
struct cfx_stream {
  toydev::WorkQueue work;
};
struct cfx_event {
  // Shared with the queued work that completes or waits for it (see Event).
  std::shared_ptr<toydev::Event> event = std::make_shared<toydev::Event>();
};

namespace toydev {

inline constexpr char kDeviceType[] = "TOYDEV";

// The plugin's options (`options:` of its entry under `plugins:` in the config).
struct Options {
  // `devices`: how many TOYDEV devices this machine has; 0 takes the "no device here" path.
  int devices = 1;
  // `arena_mb`: device memory per device, in MiB, unless devices.TOYDEV.memory_limit is set.
  size_t arena_bytes = size_t{64} << 20;
};

// The options from the plugin's option map, or InvalidArgument naming the key that is unknown or
// whose value is not a non-negative integer.
cfx::sdk::Result<Options> ParseOptions(const std::map<std::string, std::string>& options);

// The device type registered with the host: its descriptor points back at this object
// (type_state), so that two runtimes loading the plugin with different options each get their
// own. The plugin keeps it until its shutdown function runs, after the host destroyed the
// devices.
class DeviceType {
 public:
  explicit DeviceType(const Options& options);
  DeviceType(const DeviceType&) = delete;
  DeviceType& operator=(const DeviceType&) = delete;

  const cfx_device_type_desc* desc() const { return &desc_; }
  const Options& options() const { return options_; }

 private:
  const Options options_;
  cfx_device_type_desc desc_;
};

// Registers the TOYDEV kernels (toy_kernels.cc).
void RegisterKernels(cfx::sdk::Plugin& p);

}  // namespace toydev

#endif  // TOYDEV_TOY_DEVICE_H_
