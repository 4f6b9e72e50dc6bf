// Enqueueing planned reductions (kernels/reduction_plan_cuda.h) on a kernel's stream, shared by
// the reduction kernels (reduction.cc) and the nn kernels that fold (nn.cc: BiasAddGrad, L2Loss).
// Host code over the SDK; the device code is in reduction.cu.
#ifndef CONFLUX_PLUGINS_CUDA_KERNELS_REDUCTION_RUN_H_
#define CONFLUX_PLUGINS_CUDA_KERNELS_REDUCTION_RUN_H_

#include <atomic>
#include <string>
#include <vector>

#include "cuda_common.h"
#include "kernels/reduction_launch.h"
#include "kernels/reduction_plan_cuda.h"

namespace cfx::cuda {

// The device's multiprocessor count (queried once per ordinal), which sizes the split of long
// reductions; 1 when CUDA cannot tell (the plans stay correct, only less parallel).
inline int MultiprocessorCount(const cfx_device* dev) {
  constexpr int kCached = 64;
  static std::atomic<int> cache[kCached] = {};
  const bool cacheable = dev->ordinal >= 0 && dev->ordinal < kCached;
  if (cacheable) {
    const int known = cache[dev->ordinal].load(std::memory_order_relaxed);
    if (known > 0) return known;
  }
  int count = 0;
  if (cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, dev->ordinal) != cudaSuccess ||
      count < 1) {
    (void)cudaGetLastError();  // not a launch error of the kernel that asked
    return 1;
  }
  if (cacheable) cache[dev->ordinal].store(count, std::memory_order_relaxed);
  return count;
}

// Enqueues `schedule` on the kernel's stream: `in` (dtype) folded with `fn` into `out`. Temporary
// buffers come from the context; the host frees them in stream order, after the launches that
// use them. square_input and divisor as LaunchReduce's (on the first and last launch). `what`
// names the op in errors.
inline sdk::Status EnqueueReduceSchedule(sdk::KernelContext& ctx, const ReduceSchedule& schedule,
                                         ReduceFn fn, cfx_dtype dtype, const void* in, void* out,
                                         bool square_input, int64_t divisor,
                                         const std::string& what) {
  std::vector<sdk::TensorRef> temps;
  for (int64_t elements : schedule.temps) {
    CFX_SDK_ASSIGN_OR_RETURN(sdk::TensorRef t, ctx.AllocateTemp(dtype, sdk::Shape{elements}));
    temps.push_back(std::move(t));
  }
  auto at = [&](int id) -> void* {
    if (id == kReduceInput) return const_cast<void*>(in);
    if (id == kReduceOutput) return out;
    return temps[static_cast<size_t>(id)].view().raw_data();
  };
  const cudaStream_t stream = Stream(ctx);
  for (const ReduceStep& step : schedule.steps)
    CFX_SDK_RETURN_IF_ERROR(CudaCheck(
        LaunchReduce(fn, static_cast<int32_t>(dtype), at(step.src), at(step.dst), step.shape,
                     square_input && step.first, step.last ? divisor : 0, stream),
        ctx.device()->name,
        sdk::StrCat("launch of the reduction of ", what, " ([", step.shape.outer, ", ",
                    step.shape.n, ", ", step.shape.inner, "] in ", step.shape.segments,
                    " segment(s))")));
  return sdk::Status();
}

}  // namespace cfx::cuda

#endif  // CONFLUX_PLUGINS_CUDA_KERNELS_REDUCTION_RUN_H_
