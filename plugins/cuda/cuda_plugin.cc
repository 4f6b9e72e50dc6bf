// The CUDA plugin's entry point: registers the GPU device type and its kernels.
#include <string>

#include "conflux/sdk.h"
#include "cuda_device.h"
#include "cudnn_api.h"
#include "kernels/kernels.h"
#include "nccl_collectives.h"

namespace {

cfx::sdk::Status Init(cfx::sdk::Plugin& p) {
  p.SetInfo("cuda", "0.1.0");
  CFX_SDK_ASSIGN_OR_RETURN(cfx::cuda::nccl::PluginOptions options,
                           cfx::cuda::nccl::ParsePluginOptions(p.options()));
  const std::string& cudnn_library = options.cudnn_library;
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
  cfx::cuda::RegisterRandomKernels(p);
  cfx::cuda::RegisterHostOpKernels(p);
  // Convolutions need cuDNN, loaded now; without it they run on the CPU.
  std::string why;
  if (cfx::cuda::LoadCudnn(cudnn_library, &why) != nullptr) {
    cfx::cuda::RegisterConvKernels(p);
  } else {
    const std::string line = "cuda: " + why + "; Conv2D and its gradients run on the CPU";
    if (cfx::sdk::Host().core->log != nullptr)
      cfx::sdk::Host().core->log(CFX_LOG_WARNING, line.c_str());
  }
  cfx::cuda::nccl::RegisterNcclCollectives(p, options.nccl_library);  // GPU collectives
  return p.status();
}

}  // namespace

CFX_DEFINE_PLUGIN(Init)
