// Conflux plugin SDK: what every device's Const kernel shares, so that all accept the same attrs
// and word a refusal the same way, and the kernels that only relabel a buffer (Identity, Reshape,
// ExpandDims, Squeeze), which work on any device: they never read the data.
#ifndef CONFLUX_SDK_BASIC_KERNELS_H_
#define CONFLUX_SDK_BASIC_KERNELS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "conflux/sdk/kernel.h"
#include "conflux/sdk/shape_rules.h"

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

// Input `i`, an int32 or int64 vector (or scalar when allow_scalar) in host memory, as int64
// values; InvalidArgument naming it (`what`) otherwise.
inline Status ReadIndexInput(const KernelContext& ctx, int i, const char* what, bool allow_scalar,
                             std::vector<int64_t>* out) {
  Tensor t = ctx.input(i);
  if (t.rank() > 1 || (t.rank() == 0 && !allow_scalar))
    return InvalidArgument(what, " must be a ", allow_scalar ? "scalar or " : "",
                           "vector, got shape ", ShapeString(t.shape()));
  const int64_t n = t.num_elements();
  out->resize(static_cast<size_t>(n));
  if (t.dtype() == CFX_INT32) {
    for (int64_t k = 0; k < n; ++k) (*out)[k] = t.data<int32_t>()[k];
  } else if (t.dtype() == CFX_INT64) {
    for (int64_t k = 0; k < n; ++k) (*out)[k] = t.data<int64_t>()[k];
  } else {
    return InvalidArgument(what, " must be int32 or int64, got ", DTypeName(t.dtype()));
  }
  return Status();
}

// A shape rule's verdict (conflux/sdk/shape_rules.h: "" when fine) as a Status.
inline Status RuleStatus(const std::string& error) {
  return error.empty() ? Status() : InvalidArgument(error);
}

// Fill's inputs (dims and value, both in host memory): the output shape, and the value, which
// must be a scalar; InvalidArgument naming the input otherwise.
inline Status ReadFillInputs(const KernelContext& ctx, std::vector<int64_t>* dims, Tensor* value) {
  CFX_SDK_RETURN_IF_ERROR(ReadIndexInput(ctx, 0, "dims", false, dims));
  CFX_SDK_RETURN_IF_ERROR(RuleStatus(shape_rules::CheckNonNegative(*dims, "dims")));
  *value = ctx.input(1);
  if (value->rank() != 0)
    return InvalidArgument("value must be a scalar, got shape ", ShapeString(value->shape()));
  return Status();
}

class ReshapeKernel {
 public:
  Status Compute(KernelContext& ctx) {
    std::vector<int64_t> requested, out;
    CFX_SDK_RETURN_IF_ERROR(ReadIndexInput(ctx, 1, "shape", false, &requested));
    CFX_SDK_RETURN_IF_ERROR(
        RuleStatus(shape_rules::ReshapeShape(ctx.input(0).shape(), requested, &out)));
    return ctx.SetOutputReshaped(0, ctx.input(0), out);
  }
};

class ExpandDimsKernel {
 public:
  Status Compute(KernelContext& ctx) {
    std::vector<int64_t> axis, out;
    CFX_SDK_RETURN_IF_ERROR(ReadIndexInput(ctx, 1, "dim", true, &axis));
    if (axis.size() != 1)
      return InvalidArgument("dim must hold exactly one value, got ", axis.size());
    CFX_SDK_RETURN_IF_ERROR(
        RuleStatus(shape_rules::ExpandDimsShape(ctx.input(0).shape(), axis[0], &out)));
    return ctx.SetOutputReshaped(0, ctx.input(0), out);
  }
};

class SqueezeKernel {
 public:
  Status Init(const KernelInit& init) {
    return init.attrs().GetOr("squeeze_dims", &squeeze_dims_, std::vector<int64_t>{});
  }
  Status Compute(KernelContext& ctx) {
    std::vector<int64_t> out;
    bool rank_unknown = false;
    CFX_SDK_RETURN_IF_ERROR(RuleStatus(
        shape_rules::SqueezeShape(ctx.input(0).shape(), squeeze_dims_, &out, &rank_unknown)));
    return ctx.SetOutputReshaped(0, ctx.input(0), out);
  }

 private:
  std::vector<int64_t> squeeze_dims_;
};

// Writes `values` into output 0: a vector, or a scalar when `scalar`, of the output dtype (int32
// or int64). InvalidArgument when a value does not fit int32. The shape queries' output lives in
// host memory on every device.
inline Status WriteIndexOutput(KernelContext& ctx, const std::vector<int64_t>& values,
                               bool scalar) {
  Shape shape;
  if (!scalar) shape.push_back(static_cast<int64_t>(values.size()));
  CFX_SDK_ASSIGN_OR_RETURN(Tensor out, ctx.AllocateOutput(0, shape));
  if (out.dtype() == CFX_INT64) {
    for (size_t i = 0; i < values.size(); ++i) out.data<int64_t>()[i] = values[i];
    return Status();
  }
  if (out.dtype() != CFX_INT32)
    return InvalidArgument("out_type must be int32 or int64, got ", DTypeName(out.dtype()));
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] > INT32_MAX)
      return InvalidArgument("value ", values[i], " does not fit out_type int32; use int64");
    out.data<int32_t>()[i] = static_cast<int32_t>(values[i]);
  }
  return Status();
}

// Shape(input): the dimensions of the input as a vector of out_type.
class ShapeKernel {
 public:
  Status Compute(KernelContext& ctx) {
    return WriteIndexOutput(ctx, ctx.input(0).shape(), /*scalar=*/false);
  }
};

// Rank(input): the number of dimensions, an int32 scalar.
class RankKernel {
 public:
  Status Compute(KernelContext& ctx) {
    return WriteIndexOutput(ctx, {ctx.input(0).rank()}, /*scalar=*/true);
  }
};

// Size(input): the number of elements, a scalar of out_type.
class SizeKernel {
 public:
  Status Compute(KernelContext& ctx) {
    return WriteIndexOutput(ctx, {ctx.input(0).num_elements()}, /*scalar=*/true);
  }
};

}  // namespace cfx::sdk

#endif  // CONFLUX_SDK_BASIC_KERNELS_H_
