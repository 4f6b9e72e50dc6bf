// PluginDevice: adapts a plugin's device functions to Device.
#include "plugin/plugin_device.h"

#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "plugin/abi_types.h"

namespace cfx::internal {

// Device buffers released while kernels that read them may still be queued: they go back to the
// plugin once the compute stream has passed everything enqueued before the release. At most one
// stream_then is outstanding; buffers released meanwhile wait for the next one.
class StreamOrderedFrees {
 public:
  StreamOrderedFrees(const cfx_device_type_desc* desc, cfx_device* dev) : desc_(desc), dev_(dev) {}
  // Set once, before the device's memory is used.
  void set_stream(cfx_stream* stream) { stream_ = stream; }

  void Free(void* ptr, size_t bytes) {
    std::unique_lock<std::mutex> lock(mu_);
    pending_.push_back({ptr, bytes});
    if (outstanding_ || stream_ == nullptr) {
      if (stream_ == nullptr) FreeNow(&lock);
      return;
    }
    StartBatch(&lock);
  }

  // Waits for the outstanding batch and frees what is left (the device is going away and its
  // streams are idle); buffers released later are freed at once.
  void Drain() {
    std::unique_lock<std::mutex> lock(mu_);
    idle_.wait(lock, [&] { return !outstanding_; });
    stream_ = nullptr;
    FreeNow(&lock);
  }

 private:
  struct Buffer {
    void* ptr;
    size_t bytes;
  };

  // With mu_ held and no batch outstanding: the pending buffers become the batch freed when
  // the stream reaches this point.
  void StartBatch(std::unique_lock<std::mutex>* lock) {
    outstanding_ = true;
    in_flight_.swap(pending_);
    lock->unlock();
    desc_->funcs->stream_then(dev_, stream_, &StreamOrderedFrees::Reached, this);
  }

  static void Reached(void* arg, const cfx_status*) {
    auto* self = static_cast<StreamOrderedFrees*>(arg);
    std::unique_lock<std::mutex> lock(self->mu_);
    std::vector<Buffer> batch;
    batch.swap(self->in_flight_);
    lock.unlock();
    for (const Buffer& b : batch) self->Deallocate(b);
    lock.lock();
    if (!self->pending_.empty()) return self->StartBatch(&lock);
    self->outstanding_ = false;
    self->idle_.notify_all();
  }

  void FreeNow(std::unique_lock<std::mutex>* lock) {
    std::vector<Buffer> batch;
    batch.swap(pending_);
    lock->unlock();
    for (const Buffer& b : batch) Deallocate(b);
  }

  void Deallocate(const Buffer& b) {
    desc_->funcs->deallocate(dev_, CFX_MEMORY_DEVICE, b.ptr, b.bytes);
  }

  const cfx_device_type_desc* desc_;
  cfx_device* dev_;
  cfx_stream* stream_ = nullptr;
  std::mutex mu_;
  std::condition_variable idle_;
  bool outstanding_ = false;
  std::vector<Buffer> pending_, in_flight_;
};

namespace {

// Memory of one kind on a plugin device; device memory goes back in stream order.
class PluginAllocator final : public Allocator {
 public:
  PluginAllocator(const cfx_device_type_desc* desc, cfx_device* dev, cfx_memory_kind kind,
                  std::string name, bool host_addressable,
                  std::shared_ptr<StreamOrderedFrees> frees)
      : desc_(desc),
        dev_(dev),
        kind_(kind),
        name_(std::move(name)),
        host_(host_addressable),
        frees_(std::move(frees)) {}
  std::string name() const override { return name_; }
  bool host_addressable() const override { return host_; }

 protected:
  void* RawAllocate(size_t bytes, size_t alignment) override {
    cfx_status s;
    void* p = desc_->funcs->allocate(dev_, kind_, bytes, alignment, &s);
    return s.status.ok() ? p : nullptr;
  }
  void RawDeallocate(void* ptr, size_t bytes) override {
    if (frees_ != nullptr) return frees_->Free(ptr, bytes);
    desc_->funcs->deallocate(dev_, kind_, ptr, bytes);
  }

 private:
  const cfx_device_type_desc* desc_;
  cfx_device* dev_;
  cfx_memory_kind kind_;
  std::string name_;
  bool host_;
  std::shared_ptr<StreamOrderedFrees> frees_;  // null: free at once
};

std::unique_ptr<Allocator> MakeAllocator(const cfx_device_type_desc* desc, cfx_device* handle,
                                         cfx_memory_kind kind, std::string name, bool host,
                                         int64_t limit,
                                         std::shared_ptr<StreamOrderedFrees> frees = nullptr) {
  auto a = std::make_unique<PluginAllocator>(desc, handle, kind, std::move(name), host,
                                             std::move(frees));
  if (limit > 0) a->set_bytes_limit(limit);
  return a;
}

bool HasStreams(const cfx_device_funcs* f) {
  return f->stream_create != nullptr && f->stream_destroy != nullptr && f->stream_then != nullptr &&
         f->event_create != nullptr && f->event_destroy != nullptr && f->event_record != nullptr &&
         f->stream_wait_event != nullptr && f->stream_synchronize != nullptr;
}

std::string ShortName(const DeviceName& name) { return name.type + ":" + std::to_string(name.id); }

}  // namespace

StatusOr<std::unique_ptr<PluginDevice>> PluginDevice::Create(const cfx_device_type_desc* desc,
                                                             cfx_device* handle, DeviceName name,
                                                             std::string plugin,
                                                             int64_t memory_limit) {
  // A device without a configured limit may have one of its own (a GPU's pool).
  const cfx_device_funcs* f = desc->funcs;
  if (memory_limit <= 0 &&
      f->struct_size >= offsetof(cfx_device_funcs, memory_limit) + sizeof(f->memory_limit) &&
      f->memory_limit != nullptr)
    memory_limit = f->memory_limit(handle);
  auto frees = desc->host_addressable == 0 && HasStreams(desc->funcs)
                   ? std::make_shared<StreamOrderedFrees>(desc, handle)
                   : nullptr;
  std::unique_ptr<PluginDevice> d(
      new PluginDevice(desc, handle, std::move(name), std::move(plugin), memory_limit, frees));
  if (frees != nullptr) {
    Status s = d->CreateStreams();
    if (!s.ok()) return s.WithPrefix("device " + d->full_name() + ": creating its streams: ");
    frees->set_stream(d->compute_);
  }
  return d;
}

PluginDevice::PluginDevice(const cfx_device_type_desc* desc, cfx_device* handle, DeviceName name,
                           std::string plugin, int64_t memory_limit,
                           std::shared_ptr<StreamOrderedFrees> frees)
    : Device(name, std::move(plugin), desc->host_addressable != 0,
             MakeAllocator(desc, handle, CFX_MEMORY_DEVICE, ShortName(name),
                           desc->host_addressable != 0, memory_limit, frees),
             desc->host_addressable ? nullptr
                                    : MakeAllocator(desc, handle, CFX_MEMORY_HOST_PINNED,
                                                    ShortName(name) + " pinned host", true, 0)),
      desc_(desc),
      handle_(handle),
      frees_(std::move(frees)) {}

Status PluginDevice::CreateStreams() {
  for (cfx_stream** stream : {&compute_, &host_to_device_, &device_to_host_}) {
    cfx_status s;
    *stream = desc_->funcs->stream_create(handle_, &s);
    CFX_RETURN_IF_ERROR(s.status);
    if (*stream == nullptr) return errors::Internal("stream_create returned null");
  }
  set_compute_stream(reinterpret_cast<DeviceStream*>(compute_));
  return Status();
}

PluginDevice::~PluginDevice() {
  // Resources (variable buffers) go back to the allocators before the device goes away, and
  // every buffer freed in stream order is back with the plugin before its streams go.
  ReleaseResources();
  if (frees_ != nullptr) {
    (void)Synchronize();
    frees_->Drain();
  }
  for (cfx_stream* stream : {compute_, host_to_device_, device_to_host_})
    if (stream != nullptr) desc_->funcs->stream_destroy(handle_, stream);
  if (desc_->destroy_device) desc_->destroy_device(desc_->type_state, handle_);
}

std::string PluginDevice::description() const {
  if (desc_->funcs->describe == nullptr) return type();
  char buf[256] = {0};
  desc_->funcs->describe(handle_, buf, sizeof(buf) - 1);
  return buf;
}

// The blocking copies wait with stream_synchronize on the calling thread, never through a
// stream_then callback: the thread may be the one that runs those callbacks.
// A copy is enqueued in stream order (below), then waited for: the blocking copies with
// stream_synchronize on the calling thread, never through a stream_then callback (the thread
// may be the one that runs those callbacks); the asynchronous ones with Then.
Status PluginDevice::EnqueueToDevice(void* device_dst, const void* host_src, size_t bytes) const {
  cfx_status s;
  desc_->funcs->copy_host_to_device(handle_, host_to_device_, device_dst, 0, host_src, bytes, &s);
  CFX_RETURN_IF_ERROR(s.status);
  // Later kernels on the compute stream wait for the copy's event, not for the copy stream.
  return compute_ != nullptr ? ComputeWaitsFor(host_to_device_) : Status();
}

Status PluginDevice::EnqueueToHost(void* host_dst, const void* device_src, size_t bytes) const {
  // The bytes are ready where the compute stream is now: the copy stream waits for that point.
  if (compute_ != nullptr) CFX_RETURN_IF_ERROR(StreamWaitsForCompute(device_to_host_));
  cfx_status s;
  desc_->funcs->copy_device_to_host(handle_, device_to_host_, host_dst, device_src, 0, bytes, &s);
  return s.status;
}

Status PluginDevice::EnqueueOnDevice(void* device_dst, const void* device_src, size_t bytes) const {
  cfx_status s;
  desc_->funcs->copy_device_to_device(handle_, compute_, device_dst, 0, device_src, 0, bytes, &s);
  return s.status;
}

Status PluginDevice::Wait(cfx_stream* stream) const {
  cfx_status s;
  if (desc_->funcs->stream_synchronize != nullptr)
    desc_->funcs->stream_synchronize(handle_, stream, &s);
  return s.status;
}

Status PluginDevice::CopyBytesToDevice(void* device_dst, const void* host_src, size_t bytes) const {
  if (desc_->funcs->copy_host_to_device == nullptr)
    return Device::CopyBytesToDevice(device_dst, host_src, bytes);
  CFX_RETURN_IF_ERROR(EnqueueToDevice(device_dst, host_src, bytes));
  return Wait(host_to_device_);
}

Status PluginDevice::CopyBytesToHost(void* host_dst, const void* device_src, size_t bytes) const {
  if (desc_->funcs->copy_device_to_host == nullptr)
    return Device::CopyBytesToHost(host_dst, device_src, bytes);
  CFX_RETURN_IF_ERROR(EnqueueToHost(host_dst, device_src, bytes));
  return Wait(device_to_host_);
}

Status PluginDevice::CopyBytesOnDevice(void* device_dst, const void* device_src,
                                       size_t bytes) const {
  if (desc_->funcs->copy_device_to_device == nullptr)
    return Device::CopyBytesOnDevice(device_dst, device_src, bytes);
  CFX_RETURN_IF_ERROR(EnqueueOnDevice(device_dst, device_src, bytes));
  return Wait(compute_);
}

Status PluginDevice::StreamWaitsForCompute(cfx_stream* stream) const {
  return StreamWaitsFor(stream, compute_);
}

Status PluginDevice::ComputeWaitsFor(cfx_stream* stream) const {
  return StreamWaitsFor(compute_, stream);
}

Status PluginDevice::StreamWaitsFor(cfx_stream* waiter, cfx_stream* producer) const {
  const cfx_device_funcs* f = desc_->funcs;
  cfx_status s;
  cfx_event* ready = f->event_create(handle_, &s);
  if (s.status.ok()) f->event_record(handle_, ready, producer, &s);
  if (s.status.ok()) f->stream_wait_event(handle_, waiter, ready, &s);
  // The plugin keeps what a wait needs of the event (as CUDA and OpenCL do).
  if (ready != nullptr) f->event_destroy(handle_, ready);
  return s.status;
}

Status PluginDevice::Synchronize() const {
  if (desc_->funcs->stream_synchronize == nullptr) return Status();
  for (cfx_stream* stream : {compute_, host_to_device_, device_to_host_}) {
    if (stream == nullptr && compute_ != nullptr) continue;
    cfx_status s;
    desc_->funcs->stream_synchronize(handle_, stream, &s);
    CFX_RETURN_IF_ERROR(s.status);
    if (compute_ == nullptr) break;  // no streams of its own: the default stream only
  }
  return Status();
}

void PluginDevice::Then(cfx_stream* stream, StatusCallback done) const {
  auto* pending = new StatusCallback(std::move(done));
  desc_->funcs->stream_then(
      handle_, stream,
      [](void* arg, const cfx_status* status) {
        std::unique_ptr<StatusCallback> done(static_cast<StatusCallback*>(arg));
        (*done)(status != nullptr ? status->status : Status());
      },
      pending);
}

void PluginDevice::CopyToHostAsync(void* host_dst, const void* device_src, size_t bytes,
                                   StatusCallback done) const {
  if (compute_ == nullptr) return Device::CopyToHostAsync(host_dst, device_src, bytes, done);
  Status s = EnqueueToHost(host_dst, device_src, bytes);
  if (!s.ok()) return done(s);
  Then(device_to_host_, std::move(done));
}

void PluginDevice::CopyToDeviceAsync(void* device_dst, const void* host_src, size_t bytes,
                                     StatusCallback done) const {
  if (compute_ == nullptr) return Device::CopyToDeviceAsync(device_dst, host_src, bytes, done);
  Status s = EnqueueToDevice(device_dst, host_src, bytes);
  if (!s.ok()) return done(s);
  Then(host_to_device_, std::move(done));
}

void PluginDevice::CopyOnDeviceAsync(void* device_dst, const void* device_src, size_t bytes,
                                     StatusCallback done) const {
  // Without streams, or without a device-to-device copy (staged through host memory, rare):
  // the blocking copy, which needs no other thread.
  if (compute_ == nullptr || desc_->funcs->copy_device_to_device == nullptr)
    return Device::CopyOnDeviceAsync(device_dst, device_src, bytes, done);
  Status s = EnqueueOnDevice(device_dst, device_src, bytes);
  if (!s.ok()) return done(s);
  Then(compute_, std::move(done));
}

void PluginDevice::ParallelFor(int64_t total, int64_t cost_per_unit,
                               const std::function<void(int64_t, int64_t)>& fn) const {
  if (total <= 0) return;
  if (desc_->funcs->parallel_for == nullptr) return Device::ParallelFor(total, cost_per_unit, fn);
  desc_->funcs->parallel_for(
      handle_, total, cost_per_unit,
      [](void* arg, int64_t b, int64_t e) {
        (*static_cast<const std::function<void(int64_t, int64_t)>*>(arg))(b, e);
      },
      const_cast<void*>(static_cast<const void*>(&fn)));
}

}  // namespace cfx::internal
