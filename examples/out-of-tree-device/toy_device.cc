// The TOYDEV device functions and descriptor (see toy_device.h). Each function is one entry of
// cfx_device_funcs (conflux/plugin_api.h); the host calls them from any thread.
#include "toy_device.h"

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

#include "arena.h"

// One TOYDEV device. Members are destroyed bottom-up: the default stream first (its work hands
// callbacks to `callbacks` and writes to the arena), then the callback thread (callbacks free
// buffers into the arena), then the arena.
struct cfx_device {
  cfx_device(std::string device_name, size_t arena_bytes)
      : name(std::move(device_name)), arena(arena_bytes) {}

  const std::string name;  // "TOYDEV:0", for messages
  toydev::Arena arena;     // device memory
  // Runs the host's stream_then callbacks in the order their streams reach them. Not on the
  // streams' own threads: the host continues its work in a callback and may block there on
  // stream_synchronize, which a stream's thread cannot do on its own queue.
  toydev::WorkQueue callbacks;
  cfx_stream default_stream;  // the stream a NULL stream argument means
};

namespace toydev {
namespace {

using cfx::sdk::Status;

cfx_stream* On(cfx_device* dev, cfx_stream* stream) {
  return stream != nullptr ? stream : &dev->default_stream;
}

// The error for an exception caught at the C boundary (a thread that cannot start, no memory):
// no exception may reach the host. Functions without a status are noexcept instead.
Status FromException(const char* what) {
  try {
    throw;
  } catch (const std::exception& e) {
    return cfx::sdk::Internal(what, ": ", e.what());
  } catch (...) {
    return cfx::sdk::Internal(what, ": unknown exception");
  }
}

// ---- Memory --------------------------------------------------------------------------------

// DEVICE memory comes from the arena; HOST_PINNED memory is the host's staging memory for copies
// (a GPU plugin would page-lock it, e.g. cudaHostAlloc, so that its DMA engine can read it).
void* Allocate(cfx_device* dev, cfx_memory_kind kind, size_t bytes, size_t alignment,
               cfx_status* status) noexcept {
  if (kind == CFX_MEMORY_HOST_PINNED) {
    alignment = std::max(alignment, alignof(std::max_align_t));
    void* p = std::aligned_alloc(
        alignment, (std::max<size_t>(bytes, 1) + alignment - 1) / alignment * alignment);
    if (p == nullptr)
      cfx::sdk::ResourceExhausted(dev->name, ": no pinned host memory for ", bytes, " bytes")
          .ExportTo(status);
    return p;
  }
  if (alignment > Arena::kAlignment) {
    cfx::sdk::InvalidArgument(dev->name, ": alignment ", alignment, " exceeds ", Arena::kAlignment)
        .ExportTo(status);
    return nullptr;
  }
  void* p = dev->arena.Allocate(bytes);
  if (p == nullptr) {
    Status error = cfx::sdk::ResourceExhausted(
        dev->name, ": out of device memory: ", bytes, " bytes requested, ",
        dev->arena.bytes_in_use(), " of ", dev->arena.capacity(), " in use, largest free block ",
        dev->arena.largest_free_block(),
        " (raise devices.TOYDEV.memory_limit or the plugin option arena_mb)");
    // The host reports a failed allocation as its own ResourceExhausted error, naming the
    // tensor; this line says why the device had no room.
    cfx::sdk::Host().core->log(CFX_LOG_WARNING, error.message().c_str());
    error.ExportTo(status);
  }
  return p;
}

// The host frees device buffers in stream order: a buffer comes back only once the compute
// stream has run every kernel enqueued before the host released it, so it may be reused at once.
void Deallocate(cfx_device* dev, cfx_memory_kind kind, void* ptr, size_t bytes) noexcept {
  if (kind == CFX_MEMORY_HOST_PINNED) return std::free(ptr);
  dev->arena.Free(ptr, bytes);
}

// ---- Copies: enqueued on `stream`; the host keeps both buffers alive until they have run -------

Status CheckDeviceRange(cfx_device* dev, const char* what, const void* ptr, size_t offset,
                        size_t bytes) {
  if (dev->arena.Contains(ptr, offset, bytes)) return Status();
  return cfx::sdk::InvalidArgument(dev->name, ": ", what, ": ", bytes, " bytes at offset ", offset,
                                   " are not in this device's memory");
}

void CopyHostToDevice(cfx_device* dev, cfx_stream* stream, void* dst, size_t dst_offset,
                      const void* src, size_t bytes, cfx_status* status) noexcept try {
  Status s = CheckDeviceRange(dev, "copy_host_to_device", dst, dst_offset, bytes);
  if (!s.ok()) return s.ExportTo(status);
  On(dev, stream)->work.Enqueue([=] {
    std::memcpy(static_cast<std::byte*>(dst) + dst_offset, src, bytes);
  });
} catch (...) {
  FromException("copy_host_to_device").ExportTo(status);
}

void CopyDeviceToHost(cfx_device* dev, cfx_stream* stream, void* dst, const void* src,
                      size_t src_offset, size_t bytes, cfx_status* status) noexcept try {
  Status s = CheckDeviceRange(dev, "copy_device_to_host", src, src_offset, bytes);
  if (!s.ok()) return s.ExportTo(status);
  On(dev, stream)->work.Enqueue([=] {
    std::memcpy(dst, static_cast<const std::byte*>(src) + src_offset, bytes);
  });
} catch (...) {
  FromException("copy_device_to_host").ExportTo(status);
}

void CopyDeviceToDevice(cfx_device* dev, cfx_stream* stream, void* dst, size_t dst_offset,
                        const void* src, size_t src_offset, size_t bytes,
                        cfx_status* status) noexcept try {
  Status s = CheckDeviceRange(dev, "copy_device_to_device", dst, dst_offset, bytes);
  if (s.ok()) s = CheckDeviceRange(dev, "copy_device_to_device", src, src_offset, bytes);
  if (!s.ok()) return s.ExportTo(status);
  On(dev, stream)->work.Enqueue([=] {
    std::memmove(static_cast<std::byte*>(dst) + dst_offset,
                 static_cast<const std::byte*>(src) + src_offset, bytes);
  });
} catch (...) {
  FromException("copy_device_to_device").ExportTo(status);
}

// ---- Streams --------------------------------------------------------------------------------

// A new T, or NULL with the error in `status`.
template <typename T>
T* New(const char* what, cfx_status* status) noexcept try {
  return new T;
} catch (...) {
  FromException(what).ExportTo(status);
  return nullptr;
}

cfx_stream* StreamCreate(cfx_device*, cfx_status* status) noexcept {
  return New<cfx_stream>("stream_create", status);
}

// Runs what is still queued, then stops the stream's thread.
void StreamDestroy(cfx_device*, cfx_stream* stream) noexcept { delete stream; }

// Waits for the stream's work, not for the callbacks it handed on: the host calls this from the
// callback thread too.
void StreamSynchronize(cfx_device* dev, cfx_stream* stream, cfx_status* status) noexcept try {
  On(dev, stream)->work.Drain();
} catch (...) {
  FromException("stream_synchronize").ExportTo(status);
}

// When the stream reaches this point, `callback` goes to the device's callback thread. Work on
// this device cannot fail once enqueued, so the status is always NULL (success).
void StreamThen(cfx_device* dev, cfx_stream* stream, cfx_stream_callback_fn callback,
                void* arg) noexcept {
  On(dev, stream)->work.Enqueue([dev, callback, arg] {
    dev->callbacks.Enqueue([callback, arg] { callback(arg, nullptr); });
  });
}

// ---- Events ---------------------------------------------------------------------------------

cfx_event* EventCreate(cfx_device*, cfx_status* status) noexcept {
  return New<cfx_event>("event_create", status);
}

// Queued work that completes or waits for the event holds its own reference (see Event).
void EventDestroy(cfx_device*, cfx_event* event) noexcept { delete event; }

void EventRecord(cfx_device* dev, cfx_event* event, cfx_stream* stream, cfx_status* status) noexcept
    try {
  std::shared_ptr<Event> e = event->event;
  const uint64_t record = e->Record();
  On(dev, stream)->work.Enqueue([e, record] { e->Complete(record); });
} catch (...) {
  FromException("event_record").ExportTo(status);
}

int EventQuery(cfx_device*, cfx_event* event) noexcept { return event->event->IsComplete(); }

void EventSynchronize(cfx_device*, cfx_event* event, cfx_status*) noexcept {
  event->event->Wait(event->event->latest());
}

// Work enqueued on `stream` after this call runs once the event's latest record (made before
// this call) has been reached; the stream's thread blocks until then, the caller does not.
void StreamWaitEvent(cfx_device* dev, cfx_stream* stream, cfx_event* event,
                     cfx_status* status) noexcept try {
  std::shared_ptr<Event> e = event->event;
  const uint64_t record = e->latest();
  On(dev, stream)->work.Enqueue([e, record] { e->Wait(record); });
} catch (...) {
  FromException("stream_wait_event").ExportTo(status);
}

void Describe(cfx_device* dev, char* buffer, size_t size) noexcept {
  std::snprintf(buffer, size, "toy device, %zu MiB of device memory", dev->arena.capacity() >> 20);
}

// ---- The device type ------------------------------------------------------------------------

// How many TOYDEV devices there are. A real plugin asks its driver here; when it finds none it
// returns 0 and says why, and the host logs that line and goes on without the device type
// (unless the config marks it `required`).
int32_t Count(void* type_state, char* why, size_t why_size) noexcept {
  const Options& options = static_cast<const DeviceType*>(type_state)->options();
  if (options.devices == 0) std::snprintf(why, why_size, "the plugin option devices is 0");
  return options.devices;
}

cfx_device* CreateDevice(void* type_state, const cfx_host_device_config* config,
                         cfx_status* status) noexcept try {
  const Options& options = static_cast<const DeviceType*>(type_state)->options();
  const std::string name = std::string(kDeviceType) + ":" + std::to_string(config->index);
  if (config->num_options > 0) {
    cfx::sdk::InvalidArgument("devices.", kDeviceType, ".options: unknown key '",
                              config->option_keys[0], "' (", kDeviceType,
                              " devices take none; see the plugin's options)")
        .ExportTo(status);
    return nullptr;
  }
  // devices.TOYDEV.memory_limit, when set, is the size of the arena. The host counts what it
  // asks for against the same limit; the arena rounds blocks up, so it may refuse a little sooner.
  const size_t bytes =
      config->memory_limit > 0 ? static_cast<size_t>(config->memory_limit) : options.arena_bytes;
  auto dev = std::make_unique<cfx_device>(name, bytes);
  if (!dev->arena.ok()) {
    cfx::sdk::ResourceExhausted(name, ": cannot reserve ", bytes, " bytes for device memory")
        .ExportTo(status);
    return nullptr;
  }
  return dev.release();
} catch (...) {
  FromException("create_device").ExportTo(status);
  return nullptr;
}

// The host destroys a device after its streams and after every buffer went back.
void DestroyDevice(void*, cfx_device* dev) noexcept { delete dev; }

// Static: the functions hold no state of their own (the device and stream handles do).
constexpr cfx_device_funcs kFuncs = [] {
  cfx_device_funcs f{};
  f.struct_size = sizeof(f);  // tells the host which fields this plugin knows
  f.allocate = Allocate;
  f.deallocate = Deallocate;
  f.copy_host_to_device = CopyHostToDevice;
  f.copy_device_to_host = CopyDeviceToHost;
  f.copy_device_to_device = CopyDeviceToDevice;
  f.stream_create = StreamCreate;
  f.stream_destroy = StreamDestroy;
  f.stream_synchronize = StreamSynchronize;
  f.stream_then = StreamThen;
  f.event_create = EventCreate;
  f.event_destroy = EventDestroy;
  f.event_record = EventRecord;
  f.event_query = EventQuery;
  f.event_synchronize = EventSynchronize;
  f.stream_wait_event = StreamWaitEvent;
  f.parallel_for = nullptr;  // not provided: the host's default runs ranges on the caller
  f.describe = Describe;
  return f;
}();

// A non-negative decimal integer, or InvalidArgument naming the option.
cfx::sdk::Result<int64_t> ParseCount(const std::string& key, const std::string& value) {
  int64_t n = -1;
  auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (error != std::errc() || end != value.data() + value.size() || n < 0)
    return cfx::sdk::InvalidArgument("option ", key, ": expected a non-negative integer, got '",
                                     value, "'");
  return n;
}

}  // namespace

cfx::sdk::Result<Options> ParseOptions(const std::map<std::string, std::string>& options) {
  Options parsed;
  for (const auto& [key, value] : options) {
    if (key == "devices") {
      CFX_SDK_ASSIGN_OR_RETURN(int64_t n, ParseCount(key, value));
      if (n > 16) return cfx::sdk::InvalidArgument("option devices: at most 16, got ", n);
      parsed.devices = static_cast<int>(n);
    } else if (key == "arena_mb") {
      CFX_SDK_ASSIGN_OR_RETURN(int64_t mb, ParseCount(key, value));
      if (mb < 1 || mb > (int64_t{1} << 20))
        return cfx::sdk::InvalidArgument("option arena_mb: expected 1 to 1048576, got ", mb);
      parsed.arena_bytes = static_cast<size_t>(mb) << 20;
    } else {
      return cfx::sdk::InvalidArgument("unknown option '", key, "' (expected devices or arena_mb)");
    }
  }
  return parsed;
}

DeviceType::DeviceType(const Options& options) : options_(options), desc_{} {
  desc_.struct_size = sizeof(desc_);
  desc_.type = kDeviceType;
  desc_.type_state = this;     // handed back to Count, CreateDevice and DestroyDevice
  desc_.host_addressable = 0;  // the host must copy device memory, never read it
  desc_.count = Count;
  desc_.create_device = CreateDevice;
  desc_.destroy_device = DestroyDevice;
  desc_.funcs = &kFuncs;
}

}  // namespace toydev
