// CPU device functions.
#include "cpu_device.h"

#include <omp.h>
#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

#include "block_cache.h"
#include "conflux/sdk.h"

struct cfx_device {
  int index;
  int threads;
};

namespace cfx::cpu {
namespace {

// Work below this many (elements x cost) cycles runs on the calling thread: waking the OpenMP
// team costs a few microseconds.
constexpr int64_t kMinParallelCost = 1 << 15;

void* Allocate(cfx_device*, cfx_memory_kind, size_t bytes, size_t alignment, cfx_status* s) {
  void* p = BlockCache::ForDevice().Allocate(bytes, alignment);
  if (p == nullptr)
    sdk::ResourceExhausted("CPU: out of memory allocating ", bytes, " bytes").ExportTo(s);
  return p;
}

void Deallocate(cfx_device*, cfx_memory_kind, void* p, size_t bytes) {
  BlockCache::ForDevice().Deallocate(p, bytes);
}

void CopyHostToDevice(cfx_device*, cfx_stream*, void* dst, size_t dst_offset, const void* src,
                      size_t bytes, cfx_status*) {
  std::memcpy(static_cast<char*>(dst) + dst_offset, src, bytes);
}
void CopyDeviceToHost(cfx_device*, cfx_stream*, void* dst, const void* src, size_t src_offset,
                      size_t bytes, cfx_status*) {
  std::memcpy(dst, static_cast<const char*>(src) + src_offset, bytes);
}
void CopyDeviceToDevice(cfx_device*, cfx_stream*, void* dst, size_t dst_offset, const void* src,
                        size_t src_offset, size_t bytes, cfx_status*) {
  std::memcpy(static_cast<char*>(dst) + dst_offset, static_cast<const char*>(src) + src_offset,
              bytes);
}

// Work on the CPU completes when the call returns: streams and events are trivially done.
void StreamSynchronize(cfx_device*, cfx_stream*, cfx_status*) {}
void StreamThen(cfx_device*, cfx_stream*, cfx_stream_callback_fn cb, void* arg) {
  cb(arg, nullptr);
}

void ParallelFor(cfx_device* dev, int64_t total, int64_t cost, cfx_range_fn fn, void* arg) {
  if (total <= 0) return;
  int threads = dev->threads;
  // total * cost, saturated (both may be as large as a count of elements).
  const int64_t each = std::max<int64_t>(cost, 1);
  const int64_t work = total > std::numeric_limits<int64_t>::max() / each
                           ? std::numeric_limits<int64_t>::max()
                           : total * each;
  if (threads <= 1 || total == 1 || work < kMinParallelCost || omp_in_parallel()) {
    fn(arg, 0, total);
    return;
  }
  const int64_t chunks = std::min<int64_t>(total, threads);
  // Chunk c is [c * step + min(c, extra), ...): total * c would overflow for total near 2^63.
  const int64_t step = total / chunks, extra = total % chunks;
#if defined(__x86_64__)
  // The OpenMP threads compute in the caller's floating-point mode: the executor's flushing of
  // denormals (FTZ, DAZ) included.
  const unsigned mode = _mm_getcsr();
#endif
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t begin = c * step + std::min(c, extra);
    const int64_t end = begin + step + (c < extra ? 1 : 0);
    if (begin >= end) continue;
#if defined(__x86_64__)
    const unsigned own = _mm_getcsr();
    if (own != mode) _mm_setcsr(mode);
    fn(arg, begin, end);
    if (own != mode) _mm_setcsr(own);
#else
    fn(arg, begin, end);
#endif
  }
}

void Describe(cfx_device* dev, char* buf, size_t size) {
  std::snprintf(buf, size, "host CPU, %d intra-op threads (OpenMP)", dev->threads);
}

int32_t Count(void*, char*, size_t) { return -1; }  // as many as configured

cfx_device* CreateDevice(void*, const cfx_host_device_config* config, cfx_status*) {
  int threads = config->intra_op_threads > 0 ? config->intra_op_threads : omp_get_num_procs();
  // One process-wide OpenMP pool, shared with oneDNN and Eigen.
  omp_set_num_threads(threads);
  return new cfx_device{config->index, threads};
}

void DestroyDevice(void*, cfx_device* dev) { delete dev; }

}  // namespace

void UseIntraOpThreads(cfx_device* device) {
  if (device != nullptr && omp_get_max_threads() != device->threads)
    omp_set_num_threads(device->threads);
}

GemmThreads::GemmThreads(cfx_device* device, int64_t m, int64_t n, int64_t k) : device_(device) {
  int64_t work = 0;
  single_ = !__builtin_mul_overflow(m, n, &work) && !__builtin_mul_overflow(work, k, &work) &&
            work < kMinParallelGemm;
  if (!single_) {
    UseIntraOpThreads(device);
  } else if (omp_get_max_threads() != 1) {
    omp_set_num_threads(1);
  }
}

GemmThreads::~GemmThreads() {
  if (single_) UseIntraOpThreads(device_);
}

namespace {

const cfx_device_funcs kFuncs = [] {
  cfx_device_funcs f{};
  f.struct_size = sizeof(f);
  f.allocate = Allocate;
  f.deallocate = Deallocate;
  f.copy_host_to_device = CopyHostToDevice;
  f.copy_device_to_host = CopyDeviceToHost;
  f.copy_device_to_device = CopyDeviceToDevice;
  f.stream_synchronize = StreamSynchronize;
  f.stream_then = StreamThen;
  f.parallel_for = ParallelFor;
  f.describe = Describe;
  return f;
}();

const cfx_device_type_desc kDesc = [] {
  cfx_device_type_desc d{};
  d.struct_size = sizeof(d);
  d.type = "CPU";
  d.host_addressable = 1;
  d.count = Count;
  d.create_device = CreateDevice;
  d.destroy_device = DestroyDevice;
  d.funcs = &kFuncs;
  return d;
}();

}  // namespace

const cfx_device_type_desc* CpuDeviceType() { return &kDesc; }

}  // namespace cfx::cpu
