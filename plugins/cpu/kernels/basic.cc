// Const, Identity, NoOp, and StopGradient and PreventGradient (identities to the forward pass;
// they matter only to gradient construction) on CPU.
#include "kernels/kernels.h"

namespace cfx::cpu {
namespace {

// Holds the attr's tensor and hands out its buffer every step (no copy).
class ConstKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) {
    CFX_SDK_RETURN_IF_ERROR(init.attrs().Get("value", &value_));
    cfx_dtype dtype;
    CFX_SDK_RETURN_IF_ERROR(init.attrs().Get("dtype", &dtype));
    if (value_.view().dtype() != dtype)
      return sdk::InvalidArgument("attr 'value' is a ", sdk::DTypeName(value_.view().dtype()),
                                  " tensor but attr 'dtype' is ", sdk::DTypeName(dtype));
    return sdk::Status();
  }
  sdk::Status Compute(sdk::KernelContext& ctx) { return ctx.SetOutput(0, value_.view()); }

 private:
  sdk::TensorRef value_;
};

class IdentityKernel {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) { return ctx.SetOutput(0, ctx.input(0)); }
};

class NoOpKernel {
 public:
  sdk::Status Compute(sdk::KernelContext&) { return sdk::Status(); }
};

}  // namespace

void RegisterBasicKernels(sdk::Plugin& p) {
  p.Kernel<ConstKernel>("Const", "CPU").Inexpensive();
  p.Kernel<IdentityKernel>("Identity", "CPU").Inexpensive();
  p.Kernel<IdentityKernel>("StopGradient", "CPU").Inexpensive();
  p.Kernel<IdentityKernel>("PreventGradient", "CPU").Inexpensive();
  p.Kernel<NoOpKernel>("NoOp", "CPU").Inexpensive();
}

}  // namespace cfx::cpu
