// Ops that run on the host on the GPU device type, as TensorFlow places them: Range,
// BroadcastGradientArgs, BroadcastArgs and ConcatOffset (int32, int64) with inputs and outputs in
// host memory, and NoOp. The
// kernels are the SDK's (conflux/sdk/host_kernels.h), shared with the CPU plugin.
#include "conflux/sdk/host_kernels.h"
#include "cuda_common.h"
#include "kernels/kernels.h"

namespace cfx::cuda {
namespace {

template <typename T>
void RegisterHostIndexOps(sdk::Plugin& p) {
  p.Kernel<sdk::RangeKernel<T>>("Range", kDeviceType)
      .template TypeConstraint<T>("Tidx")
      .HostMemory("start")
      .HostMemory("limit")
      .HostMemory("delta")
      .HostMemory("output")
      .Inexpensive();
  p.Kernel<sdk::BroadcastGradientArgsKernel<T>>("BroadcastGradientArgs", kDeviceType)
      .template TypeConstraint<T>("T")
      .HostMemory("s0")
      .HostMemory("s1")
      .HostMemory("r0")
      .HostMemory("r1")
      .Inexpensive();
  p.Kernel<sdk::BroadcastArgsKernel<T>>("BroadcastArgs", kDeviceType)
      .template TypeConstraint<T>("T")
      .HostMemory("s0")
      .HostMemory("s1")
      .HostMemory("r0")
      .Inexpensive();
  p.Kernel<sdk::ConcatOffsetKernel<T>>("ConcatOffset", kDeviceType)
      .template TypeConstraint<T>("shape_type")
      .HostMemory("concat_dim")
      .HostMemory("shape")
      .HostMemory("offset")
      .Inexpensive();
}

}  // namespace

void RegisterHostOpKernels(sdk::Plugin& p) {
  p.Kernel<sdk::NoOpKernel>("NoOp", kDeviceType).Inexpensive();
  RegisterHostIndexOps<int32_t>(p);
  RegisterHostIndexOps<int64_t>(p);
}

}  // namespace cfx::cuda
