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

// Writes `values` to a new vector output `i` of the output's dtype (int32 or int64);
// InvalidArgument when a value does not fit int32.
inline Status WriteIndexVector(KernelContext& ctx, int i, const std::vector<int64_t>& values) {
  CFX_SDK_ASSIGN_OR_RETURN(Tensor out, ctx.AllocateOutput(i, {static_cast<int64_t>(values.size())}));
  if (out.dtype() == CFX_INT64) {
    for (size_t k = 0; k < values.size(); ++k) out.data<int64_t>()[k] = values[k];
    return Status();
  }
  if (out.dtype() != CFX_INT32)
    return InvalidArgument("output ", i, " must be int32 or int64, got ", DTypeName(out.dtype()));
  for (size_t k = 0; k < values.size(); ++k) {
    if (values[k] > INT32_MAX || values[k] < INT32_MIN)
      return InvalidArgument("value ", values[k], " of output ", i,
                             " does not fit int32; use int64");
    out.data<int32_t>()[k] = static_cast<int32_t>(values[k]);
  }
  return Status();
}

// ShapeN(input_0 .. input_N-1): the shape of each input, a vector of out_type each.
class ShapeNKernel {
 public:
  Status Compute(KernelContext& ctx) {
    for (int i = 0; i < ctx.num_inputs(); ++i)
      CFX_SDK_RETURN_IF_ERROR(WriteIndexVector(ctx, i, ctx.input(i).shape()));
    return Status();
  }
};

// ConcatOffset(concat_dim, shape_0 .. shape_N-1) of shape_type T: where each input of a
// ConcatV2 along concat_dim starts (shape_rules::ConcatOffsets). InvalidArgument when
// concat_dim is not a scalar or out of range, a shape is not a vector, or the shapes disagree
// off the axis.
template <typename T>
class ConcatOffsetKernel {
 public:
  Status Compute(KernelContext& ctx) {
    Tensor dim = ctx.input(0);
    if (dim.rank() != 0)
      return InvalidArgument("concat_dim must be a scalar, got shape ", ShapeString(dim.shape()));
    int64_t axis = dim.data<int32_t>()[0];
    std::vector<std::vector<int64_t>> shapes(static_cast<size_t>(ctx.num_inputs() - 1));
    for (int i = 1; i < ctx.num_inputs(); ++i)
      CFX_SDK_RETURN_IF_ERROR(
          ReadIndexInput(ctx, i, "shape", /*allow_scalar=*/false, &shapes[static_cast<size_t>(i - 1)]));
    std::vector<std::vector<int64_t>> offsets;
    CFX_SDK_RETURN_IF_ERROR(RuleStatus(shape_rules::ConcatOffsets(shapes, &axis, &offsets)));
    for (size_t k = 0; k < offsets.size(); ++k)
      CFX_SDK_RETURN_IF_ERROR(WriteIndexVector(ctx, static_cast<int>(k), offsets[k]));
    return Status();
  }
};

// BroadcastArgs(s0, s1) of dtype T: the broadcast shape of operands of shapes s0 and s1.
template <typename T>
class BroadcastArgsKernel {
 public:
  Status Compute(KernelContext& ctx) {
    std::vector<int64_t> s0, s1, r0;
    CFX_SDK_RETURN_IF_ERROR(ReadIndexInput(ctx, 0, "s0", /*allow_scalar=*/false, &s0));
    CFX_SDK_RETURN_IF_ERROR(ReadIndexInput(ctx, 1, "s1", /*allow_scalar=*/false, &s1));
    CFX_SDK_RETURN_IF_ERROR(RuleStatus(shape_rules::BroadcastArgsShape(s0, s1, &r0)));
    return WriteIndexVector(ctx, 0, r0);
  }
};

}  // namespace cfx::sdk

#endif  // CONFLUX_SDK_HOST_KERNELS_H_
