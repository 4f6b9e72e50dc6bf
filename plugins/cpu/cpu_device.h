// The CPU device type: host memory (64-byte aligned) and intra-op parallelism on OpenMP.
//
// One intra-op pool for every kernel library: Debian's oneDNN runs on OpenMP, so our own
// ParallelFor uses the same OpenMP runtime instead of a second pool (two pools that spin against
// each other cost up to 20% of GEMM speed on a 2-core machine). The thread count comes from the
// config (threads.intra_op). OpenMP keeps that number per calling thread, and kernels run on the
// executor's inter-op threads, so a kernel that calls into OpenMP code it does not control
// (oneDNN) first calls UseIntraOpThreads.
#ifndef CONFLUX_PLUGINS_CPU_CPU_DEVICE_H_
#define CONFLUX_PLUGINS_CPU_CPU_DEVICE_H_

#include <cstdint>

#include "conflux/plugin_api.h"

namespace cfx::cpu {

// The device type descriptor registered by the plugin (static storage).
const cfx_device_type_desc* CpuDeviceType();

// Makes OpenMP parallel regions started by the calling thread use the device's intra-op thread
// count (a thread-local setting; cheap when already set).
void UseIntraOpThreads(cfx_device* device);

// Products of fewer multiply-adds than this run on the calling thread: waking the OpenMP team
// costs more than it saves, and inter-op threads that each run a small product would each keep
// a team of their own spinning on the same cores.
inline constexpr int64_t kMinParallelGemm = int64_t{1} << 19;

// The calling thread's OpenMP team for one m x k by k x n matrix product (sgemm): a single
// thread below kMinParallelGemm multiply-adds, else the device's intra-op count
// (UseIntraOpThreads); the device's count again once the product is done, so that the next
// kernel on this thread (oneDNN, Eigen) gets its whole team.
class GemmThreads {
 public:
  GemmThreads(cfx_device* device, int64_t m, int64_t n, int64_t k);
  ~GemmThreads();
  GemmThreads(const GemmThreads&) = delete;
  GemmThreads& operator=(const GemmThreads&) = delete;

 private:
  cfx_device* device_;
  bool single_ = false;
};

}  // namespace cfx::cpu

#endif  // CONFLUX_PLUGINS_CPU_CPU_DEVICE_H_
