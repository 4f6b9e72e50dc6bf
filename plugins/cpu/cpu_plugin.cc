// The CPU plugin's entry point: registers the CPU device type and every CPU kernel.
#include "conflux/sdk.h"
#include "cpu_device.h"
#include "kernels/kernels.h"

namespace {

cfx::sdk::Status Init(cfx::sdk::Plugin& p) {
  p.SetInfo("cpu", "0.1.0");
  p.DeviceType(cfx::cpu::CpuDeviceType());
  cfx::cpu::RegisterBasicKernels(p);
  cfx::cpu::RegisterElementwiseKernels(p);
  cfx::cpu::RegisterArrayKernels(p);
  cfx::cpu::RegisterReductionKernels(p);
  cfx::cpu::RegisterMatMulKernels(p);
  cfx::cpu::RegisterStateKernels(p);
  cfx::cpu::RegisterRandomKernels(p);
  cfx::cpu::RegisterLinalgKernels(p);
  cfx::cpu::RegisterAssertPrintKernels(p);
  cfx::cpu::RegisterCheckNumericsKernels(p);
  cfx::cpu::RegisterTrainingKernels(p);
  cfx::cpu::RegisterSegmentKernels(p);
  cfx::cpu::RegisterSearchKernels(p);
  return p.status();
}

}  // namespace

CFX_DEFINE_PLUGIN(Init)
