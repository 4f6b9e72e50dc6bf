// Device: one device instance (a CPU, a GPU, an OpenCL device), with its allocators, copy
// functions, default stream and intra-op parallelism; DeviceName parsing.
//
// Devices are created by a Runtime from the config and live as long as it. All methods are
// thread-safe (the plugin's device functions must be).
#ifndef CONFLUX_DEVICE_H_
#define CONFLUX_DEVICE_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "conflux/allocator.h"
#include "conflux/status.h"
#include "conflux/tensor.h"

namespace cfx {

class ResourceMgr;
class DeviceStream;  // a stream of a device with asynchronous execution; opaque to the runtime

using StatusCallback = std::function<void(const Status&)>;

// A full or partial device name: /job:worker/replica:0/task:1/device:GPU:0. Empty fields and
// -1 ids mean "any". Also accepts the short forms "CPU:0", "/cpu:0", "/device:GPU:*".
struct DeviceName {
  std::string job;
  int replica = -1;
  int task = -1;
  std::string type;  // upper case: "CPU", "GPU"
  int id = -1;

  static StatusOr<DeviceName> Parse(std::string_view spec);
  // Canonical form of the fields that are set.
  std::string ToString() const;
  // True when every field set in `this` equals the one in `full`.
  bool Matches(const DeviceName& full) const;
  bool operator==(const DeviceName& o) const = default;
};

// A device instance. The runtime's devices come from device plugins (plugin/ adapts a plugin's
// C device functions to this class); the copies and hooks below are what the runtime needs of a
// device, whoever implements it.
class Device {
 public:
  virtual ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const DeviceName& name() const { return name_; }
  std::string full_name() const { return name_.ToString(); }
  const std::string& type() const { return name_.type; }
  const std::string& plugin() const { return plugin_; }
  // A random nonzero number drawn when the device was created: rendezvous keys carry it, so
  // that a tensor sent by an earlier instance of a device (a restarted task) is never taken for
  // one of this instance.
  uint64_t incarnation() const { return incarnation_; }
  virtual std::string description() const { return name_.type; }
  // True when device memory is host memory (CPU): tensors need no copies to be read on the host.
  bool host_addressable() const { return host_addressable_; }

  // Device memory, and host memory pinned for fast copies: the device's own allocator where
  // device memory is host memory (so that a CPU kernel's host-memory outputs, such as a loop's
  // counters, come from its block cache and count against its memory limit), else the host
  // allocator where the device has no pinned memory.
  Allocator* allocator() const { return device_allocator_.get(); }
  Allocator* host_allocator() const;

  // Asynchronous execution. A device with streams (a GPU, OpenCL) runs every kernel and copy in
  // the order of its compute stream: a kernel is done for the executor once its work is
  // enqueued there (kernels get the stream in their context), and whatever reads results
  // elsewhere (the host, another device) first waits for a ready event recorded on that stream
  // (the copies below do). Null for a device that runs everything on the calling thread.
  DeviceStream* compute_stream() const { return compute_stream_; }

  // Byte copies between host memory and this device's memory, and within the device's memory,
  // ordered after everything enqueued on the compute stream so far (later kernels on the
  // compute stream see what a copy to the device wrote). done(status) runs exactly once, when
  // the destination holds the bytes and the source may be released: inline or on a device
  // thread. Only called for devices that are not host-addressable.
  virtual void CopyToHostAsync(void* host_dst, const void* device_src, size_t bytes,
                               StatusCallback done) const;
  virtual void CopyToDeviceAsync(void* device_dst, const void* host_src, size_t bytes,
                                 StatusCallback done) const;
  virtual void CopyOnDeviceAsync(void* device_dst, const void* device_src, size_t bytes,
                                 StatusCallback done) const;

  // Copies between host tensors and tensors of this device, and between two tensors of this
  // device; block the calling thread until complete, without needing any other thread (so a
  // device's completion thread may call them). Shapes and dtypes must match (InvalidArgument
  // otherwise).
  // (runtime/copy_tensor.h has the copy between any two devices.)
  Status CopyHostToDevice(const Tensor& host, Tensor* device) const;
  Status CopyDeviceToHost(const Tensor& device, Tensor* host) const;
  Status CopyDeviceToDevice(const Tensor& src, Tensor* dst) const;
  // A host tensor with the contents of `t` (t itself when already host-readable), and a tensor
  // of this device with the contents of `host` (itself when this device reads host memory):
  // CopyTensorSync from and to host memory.
  StatusOr<Tensor> ToHost(const Tensor& t) const;
  StatusOr<Tensor> FromHost(const Tensor& host) const;
  // Waits for everything enqueued on the device so far.
  virtual Status Synchronize() const { return Status(); }

  // Intra-op parallelism: fn(begin, end) over [0, total); blocks. The default runs fn inline.
  virtual void ParallelFor(int64_t total, int64_t cost_per_unit,
                           const std::function<void(int64_t, int64_t)>& fn) const;

  // The fraction of this device's memory limit in use beyond which loop stacks with swap_memory
  // move pushed tensors to host memory (devices.<TYPE>.swap_threshold; 0: always).
  double swap_threshold() const { return swap_threshold_; }
  void set_swap_threshold(double fraction) { swap_threshold_ = fraction; }

  // Variables, queues and other resources that live on this device.
  ResourceMgr* resource_mgr() const { return resource_mgr_.get(); }

 protected:
  // `device_allocator` is the device's memory; `pinned_allocator` may be null.
  Device(DeviceName name, std::string plugin, bool host_addressable,
         std::unique_ptr<Allocator> device_allocator, std::unique_ptr<Allocator> pinned_allocator);
  // Releases the device's resources (variable buffers) while its allocators still work:
  // an implementation calls it first thing in its destructor.
  void ReleaseResources();
  void set_compute_stream(DeviceStream* stream) { compute_stream_ = stream; }
  // For a stand-in of a device of another process (a cluster's remote device): its incarnation.
  void set_incarnation(uint64_t incarnation) { incarnation_ = incarnation; }
  // Blocking byte copies, in the same order as the asynchronous ones (the blocking copies above
  // and, by default, the asynchronous ones call them). Only called when the device is not
  // host-addressable.
  virtual Status CopyBytesToDevice(void* device_dst, const void* host_src, size_t bytes) const;
  virtual Status CopyBytesToHost(void* host_dst, const void* device_src, size_t bytes) const;
  // The default goes through host memory.
  virtual Status CopyBytesOnDevice(void* device_dst, const void* device_src, size_t bytes) const;

 private:
  DeviceName name_;
  std::string plugin_;
  uint64_t incarnation_;
  bool host_addressable_;
  std::unique_ptr<Allocator> device_allocator_;
  std::unique_ptr<Allocator> pinned_allocator_;
  std::unique_ptr<ResourceMgr> resource_mgr_;
  DeviceStream* compute_stream_ = nullptr;
  double swap_threshold_ = 0.7;
};

}  // namespace cfx

#endif  // CONFLUX_DEVICE_H_
