// Conflux plugin SDK: kernels that run on the host whatever their device, shared by every device
// plugin so that all give the same values and word a refusal the same way. Their inputs and
// outputs live in host memory (register them with HostMemory on each), as TensorFlow keeps them
// on a GPU: they compute small index vectors that the host needs anyway (the size of a Range,
// the reduction axes of a gradient). NoOp, which touches nothing, is here too.
//
// Like every kernel, an instance may be called from several threads at once; these hold no
// state.
#ifndef CONFLUX_SDK_HOST_KERNELS_H_
#define CONFLUX_SDK_HOST_KERNELS_H_

#include <cstdint>
#include <vector>

#include "conflux/sdk/basic_kernels.h"
#include "conflux/sdk/gradient_shape_rules.h"
#include "conflux/sdk/kernel.h"
#include "conflux/sdk/shape_rules.h"

namespace cfx::sdk {

// NoOp: nothing to compute (a node that only orders its control inputs).
class NoOpKernel {
 public:
  Status Compute(KernelContext&) { return Status(); }
};

// Range(start, limit, delta) of dtype T: start, start + delta, ... up to but excluding limit.
// InvalidArgument when an input is not a scalar, delta is 0 or points away from limit, or the
// range has too many elements (shape_rules::RangeSize's words).
template <typename T>
class RangeKernel {
 public:
  Status Compute(KernelContext& ctx) {
    T args[3];
    const char* names[3] = {"start", "limit", "delta"};
    for (int i = 0; i < 3; ++i) {
      Tensor t = ctx.input(i);
      if (t.rank() != 0)
        return InvalidArgument(names[i], " must be a scalar, got shape ", ShapeString(t.shape()));
      args[i] = t.data<T>()[0];
    }
    int64_t size = 0;
    CFX_SDK_RETURN_IF_ERROR(RuleStatus(shape_rules::RangeSize(args[0], args[1], args[2], &size)));
    CFX_SDK_ASSIGN_OR_RETURN(Tensor out, ctx.AllocateOutput(0, {size}));
    // Accumulating (not start + i * delta) gives TensorFlow's values, rounding included, and
    // never leaves [start, limit] for integers.
    T* dst = out.data<T>();
    T value = args[0];
    for (int64_t i = 0; i < size; ++i) {
      dst[i] = value;
      if (i + 1 < size) value = static_cast<T>(value + args[2]);
    }
    return Status();
  }
};

// BroadcastGradientArgs(s0, s1) -> (r0, r1), in the dtype T (int32 or int64) of all four: the
// axes to sum the gradient of z = x op y over for x (shape s0) and y (shape s1).
// InvalidArgument when an input is not a vector or the shapes do not broadcast.
template <typename T>
class BroadcastGradientArgsKernel {
 public:
  Status Compute(KernelContext& ctx) {
    std::vector<int64_t> s0, s1, r0, r1;
    CFX_SDK_RETURN_IF_ERROR(ReadIndexInput(ctx, 0, "s0", /*allow_scalar=*/false, &s0));
    CFX_SDK_RETURN_IF_ERROR(ReadIndexInput(ctx, 1, "s1", /*allow_scalar=*/false, &s1));
    CFX_SDK_RETURN_IF_ERROR(RuleStatus(shape_rules::BroadcastGradientArgs(s0, s1, &r0, &r1)));
    CFX_SDK_RETURN_IF_ERROR(WriteVector(ctx, 0, r0));
    return WriteVector(ctx, 1, r1);
  }

 private:
  // Writes `values` to a new vector output `i` of dtype T.
  static Status WriteVector(KernelContext& ctx, int i, const std::vector<int64_t>& values) {
    CFX_SDK_ASSIGN_OR_RETURN(Tensor out,
                             ctx.AllocateOutput(i, {static_cast<int64_t>(values.size())}));
    for (size_t k = 0; k < values.size(); ++k) out.data<T>()[k] = static_cast<T>(values[k]);
    return Status();
  }
};

}  // namespace cfx::sdk

#endif  // CONFLUX_SDK_HOST_KERNELS_H_
