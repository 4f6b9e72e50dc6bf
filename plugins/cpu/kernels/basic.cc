// Const, Identity, NoOp, and StopGradient and PreventGradient (identities to the forward pass;
// they matter only to gradient construction) on CPU.
#include "conflux/sdk/basic_kernels.h"
#include "kernels/kernels.h"

namespace cfx::cpu {
namespace {

// Holds the attr's tensor and hands out its buffer every step (no copy).
class ConstKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) {
    return sdk::ReadConstValue(init.attrs(), &value_);
  }
  sdk::Status Compute(sdk::KernelContext& ctx) { return ctx.SetOutput(0, value_.view()); }

 private:
  sdk::TensorRef value_;
};

class NoOpKernel {
 public:
  sdk::Status Compute(sdk::KernelContext&) { return sdk::Status(); }
};

}  // namespace

void RegisterBasicKernels(sdk::Plugin& p) {
  p.Kernel<ConstKernel>("Const", "CPU").Inexpensive();
  p.Kernel<sdk::IdentityKernel>("Identity", "CPU").Inexpensive();
  p.Kernel<sdk::IdentityKernel>("StopGradient", "CPU").Inexpensive();
  p.Kernel<sdk::IdentityKernel>("PreventGradient", "CPU").Inexpensive();
  p.Kernel<NoOpKernel>("NoOp", "CPU").Inexpensive();
}

}  // namespace cfx::cpu
