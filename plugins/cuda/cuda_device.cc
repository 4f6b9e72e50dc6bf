// The GPU device type: enumeration, memory pools, copies, streams and events.
#include "cuda_device.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cuda_common.h"
#include "gpu_options.h"

struct cfx_event {
  cudaEvent_t event = nullptr;
};

namespace cfx::cuda {
namespace {

// Pinned host memory: staging for host-to-device copies and HOST_PINNED buffers.
constexpr size_t kPinnedLimit = size_t{2} << 30;
// Host-to-device copies up to this size go through a pinned staging buffer (the caller's buffer
// is free again once the copy is enqueued); larger ones are copied by the driver directly.
constexpr size_t kMaxStagedCopy = size_t{16} << 20;

class DeviceRegions final : public RegionAllocator {
 public:
  void* Allocate(size_t bytes) override {
    void* p = nullptr;
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
      cudaGetLastError();  // an allocation failure is not sticky: clear it
      return nullptr;
    }
    return p;
  }
  void Free(void* ptr, size_t) override { cudaFree(ptr); }
};

class PinnedRegions final : public RegionAllocator {
 public:
  void* Allocate(size_t bytes) override {
    void* p = nullptr;
    if (cudaHostAlloc(&p, bytes, cudaHostAllocPortable) != cudaSuccess) {
      cudaGetLastError();
      return nullptr;
    }
    return p;
  }
  void Free(void* ptr, size_t) override { cudaFreeHost(ptr); }
};

// How many CUDA devices there are, or why there are none.
int CudaDeviceCount(std::string* why) {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err == cudaSuccess && n > 0) return n;
  if (err == cudaErrorInsufficientDriver) {
    *why = "no usable CUDA driver (cudaGetDeviceCount: " + CudaErrorName(err) +
           "; libcuda.so.1 is missing or older than the CUDA " +
           std::to_string(CUDART_VERSION / 1000) + "." +
           std::to_string(CUDART_VERSION % 1000 / 10) + " runtime)";
  } else if (err == cudaErrorNoDevice || (err == cudaSuccess && n == 0)) {
    *why = "the CUDA driver reports no GPU (CUDA_VISIBLE_DEVICES may hide them)";
  } else {
    *why = "cudaGetDeviceCount failed: " + CudaErrorName(err);
  }
  cudaGetLastError();
  return 0;
}

std::string GiB(size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f GiB", static_cast<double>(bytes) / (1 << 30));
  return buf;
}

// ---- Device type functions ---------------------------------------------------------------------

int32_t Count(void*, char* why, size_t why_size) {
  std::string reason;
  const int n = CudaDeviceCount(&reason);
  if (n == 0 && why != nullptr && why_size > 0) std::snprintf(why, why_size, "%s", reason.c_str());
  return n;
}

sdk::Result<cfx_device*> MakeDevice(const cfx_host_device_config* config) {
  const std::string name = std::string(kDeviceType) + ":" + std::to_string(config->index);
  CFX_SDK_ASSIGN_OR_RETURN(
      GpuOptions options,
      ParseGpuOptions(config->num_options, config->option_keys, config->option_values));
  std::string why;
  const int count = CudaDeviceCount(&why);
  if (count == 0) return sdk::Status(CFX_UNAVAILABLE, name + ": " + why);
  CFX_SDK_ASSIGN_OR_RETURN(int ordinal, CudaOrdinal(options, config->index, count));
  auto dev = std::make_unique<cfx_device>();
  dev->index = config->index;
  dev->ordinal = ordinal;
  dev->name = name;
  dev->allow_tf32 = options.allow_tf32;
  dev->cudnn_autotune = options.cudnn_autotune;
  CFX_SDK_RETURN_IF_ERROR(DeviceScope(dev.get()));
  cudaDeviceProp prop{};
  CFX_SDK_RETURN_IF_ERROR(
      CudaCheck(cudaGetDeviceProperties(&prop, ordinal), name, "cudaGetDeviceProperties"));
  size_t free_bytes = 0, total_bytes = 0;
  CFX_SDK_RETURN_IF_ERROR(
      CudaCheck(cudaMemGetInfo(&free_bytes, &total_bytes), name, "cudaMemGetInfo"));
  const size_t limit = PoolLimit(options, total_bytes, free_bytes, config->memory_limit);
  dev->description = std::string(prop.name) + ", compute capability " + std::to_string(prop.major) +
                     "." + std::to_string(prop.minor) + ", " + GiB(total_bytes) +
                     " memory (pool limit " + GiB(limit) + "), " +
                     std::to_string(prop.multiProcessorCount) + " SMs, CUDA device " +
                     std::to_string(ordinal) + (options.allow_tf32 ? ", TF32 matmuls" : "");
  CFX_SDK_RETURN_IF_ERROR(
      CudaCheck(cudaStreamCreateWithFlags(&dev->default_stream, cudaStreamNonBlocking), name,
                "cudaStreamCreateWithFlags"));
  dev->memory = std::make_unique<BfcAllocator>(std::make_unique<DeviceRegions>(),
                                               name + " device memory", limit);
  dev->pinned = std::make_unique<BfcAllocator>(std::make_unique<PinnedRegions>(),
                                               name + " pinned host memory", kPinnedLimit);
  // Callbacks enqueue work for this device: the thread makes it current once.
  dev->callbacks = std::make_unique<sdk::CallbackThread>([ordinal] { cudaSetDevice(ordinal); });
  return dev.release();
}

cfx_device* CreateDevice(void*, const cfx_host_device_config* config, cfx_status* status) {
  try {
    auto dev = MakeDevice(config);
    if (dev.ok()) return *dev;
    dev.status().ExportTo(status);
  } catch (...) {  // std::bad_alloc, or std::system_error from starting the callback thread
    sdk::internal::FromException().ExportTo(status);
  }
  return nullptr;
}

void DestroyDevice(void*, cfx_device* dev) {
  if (dev == nullptr) return;
  (void)DeviceScope(dev);
  cudaDeviceSynchronize();
  dev->callbacks.reset();  // runs the callbacks still queued
  for (auto& [stream, h] : dev->blas) {
    cublasDestroy(h->handle);
    dev->memory->Free(h->workspace);
  }
  dev->blas.clear();
  dev->dnn.clear();
  if (dev->default_stream != nullptr) cudaStreamDestroy(dev->default_stream);
  dev->memory.reset();
  dev->pinned.reset();
  delete dev;
}

void* Allocate(cfx_device* dev, cfx_memory_kind kind, size_t bytes, size_t alignment,
               cfx_status* status) {
  if (!DeviceScope(dev).ok()) {
    sdk::Internal(dev->name, ": cannot make the device current").ExportTo(status);
    return nullptr;
  }
  BfcAllocator& pool = kind == CFX_MEMORY_HOST_PINNED ? *dev->pinned : *dev->memory;
  auto p = pool.Allocate(bytes, alignment);
  if (p.ok()) return *p;
  if (kind == CFX_MEMORY_HOST_PINNED) {
    // Pinned memory is a speed-up, not a necessity: fall back to pageable memory.
    void* host = std::aligned_alloc(BfcAllocator::kAlignment,
                                    (std::max<size_t>(bytes, 1) + 255) / 256 * 256);
    if (host != nullptr) return host;
  }
  // The host reports its own error naming the tensor; the pool's state goes to the log.
  if (sdk::Host().core->log != nullptr)
    sdk::Host().core->log(CFX_LOG_WARNING, p.status().message().c_str());
  p.status().ExportTo(status);
  return nullptr;
}

void Deallocate(cfx_device* dev, cfx_memory_kind kind, void* ptr, size_t) {
  if (ptr == nullptr) return;
  if (kind == CFX_MEMORY_HOST_PINNED) {
    if (!dev->pinned->Free(ptr)) std::free(ptr);  // the pageable fallback
    return;
  }
  // The host frees device memory in stream order (after the compute stream has passed every
  // kernel that reads it), so the block may be reused at once.
  dev->memory->Free(ptr);
}

char* At(void* base, size_t offset) { return static_cast<char*>(base) + offset; }
const char* At(const void* base, size_t offset) { return static_cast<const char*>(base) + offset; }

sdk::Status CopyToDevice(cfx_device* dev, cudaStream_t stream, void* dst, const void* src,
                         size_t bytes) {
  CFX_SDK_RETURN_IF_ERROR(DeviceScope(dev));
  const std::string what = "cudaMemcpyAsync of " + std::to_string(bytes) + " bytes to the device";
  if (bytes <= kMaxStagedCopy && !dev->pinned->Owns(src)) {
    auto staging = dev->pinned->Allocate(bytes);
    if (staging.ok()) {
      std::memcpy(*staging, src, bytes);
      sdk::Status s = CudaCheck(
          cudaMemcpyAsync(dst, *staging, bytes, cudaMemcpyHostToDevice, stream), dev->name, what);
      // The staging buffer goes back once the copy has run, on the callback thread: a stream
      // callback must not wait for the pool's lock, which a thread in cudaFreeHost may hold.
      BfcAllocator* pool = dev->pinned.get();
      void* buffer = *staging;
      if (s.ok())
        s = WhenComplete(dev, stream, [pool, buffer](const sdk::Status&) { pool->Free(buffer); });
      if (!s.ok()) {
        cudaStreamSynchronize(stream);
        pool->Free(buffer);
      }
      return s;
    }
  }
  // Pinned sources copy asynchronously; pageable ones are staged by the driver, which returns
  // once the source has been read.
  return CudaCheck(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream), dev->name,
                   what);
}

void CopyHostToDevice(cfx_device* dev, cfx_stream* stream, void* dst, size_t dst_offset,
                      const void* src, size_t bytes, cfx_status* status) {
  if (bytes == 0) return;
  CopyToDevice(dev, StreamOf(dev, stream), At(dst, dst_offset), src, bytes).ExportTo(status);
}

void CopyDeviceToHost(cfx_device* dev, cfx_stream* stream, void* dst, const void* src,
                      size_t src_offset, size_t bytes, cfx_status* status) {
  if (bytes == 0) return;
  sdk::Status s = DeviceScope(dev);
  // To pinned memory the copy runs asynchronously (the host waits on the stream before reading);
  // to pageable memory the driver returns once it is done.
  if (s.ok())
    s = CudaCheck(cudaMemcpyAsync(dst, At(src, src_offset), bytes, cudaMemcpyDeviceToHost,
                                  StreamOf(dev, stream)),
                  dev->name, "cudaMemcpyAsync of " + std::to_string(bytes) + " bytes to the host");
  s.ExportTo(status);
}

void CopyDeviceToDevice(cfx_device* dev, cfx_stream* stream, void* dst, size_t dst_offset,
                        const void* src, size_t src_offset, size_t bytes, cfx_status* status) {
  if (bytes == 0) return;
  sdk::Status s = DeviceScope(dev);
  if (s.ok())
    s = CudaCheck(cudaMemcpyAsync(At(dst, dst_offset), At(src, src_offset), bytes,
                                  cudaMemcpyDeviceToDevice, StreamOf(dev, stream)),
                  dev->name,
                  "cudaMemcpyAsync of " + std::to_string(bytes) + " bytes on the device");
  s.ExportTo(status);
}

cfx_stream* StreamCreate(cfx_device* dev, cfx_status* status) {
  cudaStream_t s = nullptr;
  sdk::Status st = DeviceScope(dev);
  if (st.ok())
    st = CudaCheck(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), dev->name,
                   "cudaStreamCreateWithFlags");
  if (!st.ok()) {
    st.ExportTo(status);
    return nullptr;
  }
  return new cfx_stream{s};
}

void StreamDestroy(cfx_device* dev, cfx_stream* stream) {
  if (stream == nullptr) return;
  (void)DeviceScope(dev);
  cudaStreamSynchronize(stream->stream);
  {
    // A cuBLAS handle bound to this stream goes with it.
    std::lock_guard<std::mutex> lock(dev->blas_mu);
    auto it = dev->blas.find(stream->stream);
    if (it != dev->blas.end()) {
      cublasDestroy(it->second->handle);
      dev->memory->Free(it->second->workspace);
      dev->blas.erase(it);
    }
  }
  cudaStreamDestroy(stream->stream);
  delete stream;
}

void StreamSynchronize(cfx_device* dev, cfx_stream* stream, cfx_status* status) {
  sdk::Status s = DeviceScope(dev);
  if (s.ok())
    s = CudaCheck(cudaStreamSynchronize(StreamOf(dev, stream)), dev->name, "cudaStreamSynchronize");
  s.ExportTo(status);
}

void StreamThen(cfx_device* dev, cfx_stream* stream, cfx_stream_callback_fn cb, void* arg) {
  auto report = [cb, arg](const sdk::Status& st) {
    if (st.ok()) return cb(arg, nullptr);
    sdk::HostStatus hs;
    st.ExportTo(hs.get());
    cb(arg, hs.get());
  };
  sdk::Status s = WhenComplete(dev, StreamOf(dev, stream), report);
  if (!s.ok()) report(s);
}

cfx_event* EventCreate(cfx_device* dev, cfx_status* status) {
  cudaEvent_t e = nullptr;
  sdk::Status s = DeviceScope(dev);
  if (s.ok())
    s = CudaCheck(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), dev->name,
                  "cudaEventCreateWithFlags");
  if (!s.ok()) {
    s.ExportTo(status);
    return nullptr;
  }
  return new cfx_event{e};
}

void EventDestroy(cfx_device* dev, cfx_event* e) {
  if (e == nullptr) return;
  // CUDA keeps what a pending cudaStreamWaitEvent needs after the event is destroyed.
  (void)DeviceScope(dev);
  cudaEventDestroy(e->event);
  delete e;
}

void EventRecord(cfx_device* dev, cfx_event* e, cfx_stream* stream, cfx_status* status) {
  sdk::Status s = DeviceScope(dev);
  if (s.ok())
    s = CudaCheck(cudaEventRecord(e->event, StreamOf(dev, stream)), dev->name, "cudaEventRecord");
  s.ExportTo(status);
}

int EventQuery(cfx_device* dev, cfx_event* e) {
  (void)DeviceScope(dev);
  const cudaError_t err = cudaEventQuery(e->event);
  // An error counts as complete: the wait that follows reports it.
  return err == cudaErrorNotReady ? 0 : 1;
}

void EventSynchronize(cfx_device* dev, cfx_event* e, cfx_status* status) {
  sdk::Status s = DeviceScope(dev);
  if (s.ok()) s = CudaCheck(cudaEventSynchronize(e->event), dev->name, "cudaEventSynchronize");
  s.ExportTo(status);
}

void StreamWaitEvent(cfx_device* dev, cfx_stream* stream, cfx_event* e, cfx_status* status) {
  sdk::Status s = DeviceScope(dev);
  if (s.ok())
    s = CudaCheck(cudaStreamWaitEvent(StreamOf(dev, stream), e->event, 0), dev->name,
                  "cudaStreamWaitEvent");
  s.ExportTo(status);
}

void Describe(cfx_device* dev, char* buf, size_t size) {
  std::snprintf(buf, size, "%s", dev->description.c_str());
}

int64_t MemoryLimit(cfx_device* dev) { return dev->memory->Stats().bytes_limit; }

const cfx_device_funcs kFuncs = [] {
  cfx_device_funcs f{};
  f.struct_size = sizeof(f);
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
  f.describe = Describe;
  f.memory_limit = MemoryLimit;
  return f;
}();

const cfx_device_type_desc kDesc = [] {
  cfx_device_type_desc d{};
  d.struct_size = sizeof(d);
  d.type = kDeviceType;
  d.host_addressable = 0;
  d.count = Count;
  d.create_device = CreateDevice;
  d.destroy_device = DestroyDevice;
  d.funcs = &kFuncs;
  return d;
}();

}  // namespace

const cfx_device_type_desc* GpuDeviceType() { return &kDesc; }

}  // namespace cfx::cuda
