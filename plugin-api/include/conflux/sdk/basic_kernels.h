// Conflux plugin SDK: what every device's Const and Identity kernels share, so that all accept
// the same attrs and word a refusal the same way.
#ifndef CONFLUX_SDK_BASIC_KERNELS_H_
#define CONFLUX_SDK_BASIC_KERNELS_H_

#include "conflux/sdk/kernel.h"

namespace cfx::sdk {

// Attr `value` (a host tensor) of a Const node, which must have attr `dtype`'s dtype;
// InvalidArgument naming both when it does not.
inline Status ReadConstValue(const Attrs& attrs, TensorRef* value) {
  CFX_SDK_RETURN_IF_ERROR(attrs.Get("value", value));
  cfx_dtype dtype;
  CFX_SDK_RETURN_IF_ERROR(attrs.Get("dtype", &dtype));
  if (value->view().dtype() != dtype)
    return InvalidArgument("attr 'value' is a ", DTypeName(value->view().dtype()),
                           " tensor but attr 'dtype' is ", DTypeName(dtype));
  return Status();
}

// Identity (and StopGradient, PreventGradient): output 0 shares input 0's buffer, on any device.
class IdentityKernel {
 public:
  Status Compute(KernelContext& ctx) { return ctx.SetOutput(0, ctx.input(0)); }
};

}  // namespace cfx::sdk

#endif  // CONFLUX_SDK_BASIC_KERNELS_H_
