// Const, Identity, IdentityN, EnsureShape, NoOp, and StopGradient and PreventGradient
// (identities to the forward pass; they matter only to gradient construction) on CPU.
#include "conflux/sdk/basic_kernels.h"
#include "conflux/sdk/host_kernels.h"
#include "conflux/sdk/shape_rules.h"
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

class IdentityNKernel {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    for (int i = 0; i < ctx.num_inputs(); ++i)
      CFX_SDK_RETURN_IF_ERROR(ctx.SetOutput(i, ctx.input(i)));
    return sdk::Status();
  }
};

// The input, once its shape fits the `shape` attr (unknown dims and an unknown rank fit anything).
class EnsureShapeKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) { return init.attrs().Get("shape", &shape_); }
  sdk::Status Compute(sdk::KernelContext& ctx) {
    sdk::Tensor in = ctx.input(0);
    const sdk::Shape dims = in.shape();
    bool fits = shape_.unknown_rank || shape_.dims.size() == dims.size();
    for (size_t i = 0; fits && !shape_.unknown_rank && i < dims.size(); ++i)
      fits = shape_.dims[i] < 0 || shape_.dims[i] == dims[i];
    if (!fits)
      return sdk::InvalidArgument("input shape ", shape_rules::ShapeStr(dims),
                                  " is not compatible with the expected shape ",
                                  shape_rules::ShapeStr(shape_.dims));
    return ctx.SetOutput(0, in);
  }

 private:
  sdk::PartialShape shape_;
};

}  // namespace

void RegisterBasicKernels(sdk::Plugin& p) {
  p.Kernel<ConstKernel>("Const", "CPU").Inexpensive();
  p.Kernel<sdk::IdentityKernel>("Identity", "CPU").Inexpensive();
  p.Kernel<sdk::IdentityKernel>("StopGradient", "CPU").Inexpensive();
  p.Kernel<sdk::IdentityKernel>("PreventGradient", "CPU").Inexpensive();
  p.Kernel<IdentityNKernel>("IdentityN", "CPU").Inexpensive();
  p.Kernel<EnsureShapeKernel>("EnsureShape", "CPU").Inexpensive();
  p.Kernel<sdk::NoOpKernel>("NoOp", "CPU").Inexpensive();
}

}  // namespace cfx::cpu
