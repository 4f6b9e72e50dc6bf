// The CUDA plugin's entry point: registers the GPU device type and its kernels.
#include <string>

#include "conflux/sdk.h"
#include "cuda_device.h"
#include "cudnn_api.h"
#include "kernels/kernels.h"

namespace {

cfx::sdk::Status Init(cfx::sdk::Plugin& p) {
  p.SetInfo("cuda", "0.1.0");
  std::string cudnn_library;  // the plugin option: a path to libcudnn.so.9
  for (const auto& [key, value] : p.options()) {
    if (key != "cudnn_library")
      return cfx::sdk::InvalidArgument("plugins.cuda.options: unknown key '", key,
                                       "' (expected cudnn_library)");
    cudnn_library = value;
  }
  p.DeviceType(cfx::cuda::GpuDeviceType());
  cfx::cuda::RegisterBasicKernels(p);
  cfx::cuda::RegisterElementwiseKernels(p);
  cfx::cuda::RegisterMatMulKernels(p);
  cfx::cuda::RegisterReductionKernels(p);
  cfx::cuda::RegisterNnKernels(p);
  cfx::cuda::RegisterTrainingKernels(p);
  cfx::cuda::RegisterArrayKernels(p);
  cfx::cuda::RegisterPoolKernels(p);
  cfx::cuda::RegisterBatchNormKernels(p);
  // Convolutions need cuDNN, loaded now; without it they run on the CPU.
  std::string why;
  if (cfx::cuda::LoadCudnn(cudnn_library, &why) != nullptr) {
    cfx::cuda::RegisterConvKernels(p);
  } else {
    const std::string line = "cuda: " + why + "; Conv2D and its gradients run on the CPU";
    if (cfx::sdk::Host().core->log != nullptr)
      cfx::sdk::Host().core->log(CFX_LOG_WARNING, line.c_str());
  }
  return p.status();
}

}  // namespace

CFX_DEFINE_PLUGIN(Init)
