// The CUDA plugin's entry point: registers the GPU device type and its kernels.
#include "conflux/sdk.h"
#include "cuda_device.h"
#include "kernels/kernels.h"

namespace {

cfx::sdk::Status Init(cfx::sdk::Plugin& p) {
  p.SetInfo("cuda", "0.1.0");
  p.DeviceType(cfx::cuda::GpuDeviceType());
  cfx::cuda::RegisterBasicKernels(p);
  cfx::cuda::RegisterElementwiseKernels(p);
  cfx::cuda::RegisterMatMulKernels(p);
  return p.status();
}

}  // namespace

CFX_DEFINE_PLUGIN(Init)
