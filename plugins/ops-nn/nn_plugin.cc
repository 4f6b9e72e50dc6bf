// The ops-nn plugin's entry point: neural-network ops and their CPU kernels. It adds no device
// type; its kernels run on the CPU device that the cpu plugin provides.
#include "conflux/sdk.h"
#include "nn_ops.h"

namespace {

cfx::sdk::Status Init(cfx::sdk::Plugin& p) {
  p.SetInfo("ops-nn", "0.1.0");
  cfx::nn::RegisterBiasAddOps(p);
  cfx::nn::RegisterSoftmaxOps(p);
  cfx::nn::RegisterActivationOps(p);
  cfx::nn::RegisterLossOps(p);
  cfx::nn::RegisterBatchNormOps(p);
  cfx::nn::RegisterInTopKOps(p);
  cfx::nn::RegisterConvOps(p);
  cfx::nn::RegisterDepthwiseConvOps(p);
  cfx::nn::RegisterPoolOps(p);
  cfx::nn::RegisterImageResizeOps(p);
  cfx::nn::RegisterNnGradients(p);
  return p.status();
}

}  // namespace

CFX_DEFINE_PLUGIN(Init)
