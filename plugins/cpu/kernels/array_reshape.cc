// Ops that change a tensor's shape but not its elements (Reshape, ExpandDims, Squeeze) and ops
// that describe a shape (Shape, Rank, Size), on CPU.
#include "conflux/sdk/basic_kernels.h"
#include "conflux/sdk/host_kernels.h"
#include "kernels/array_util.h"

namespace cfx::cpu {
namespace {

using shape_rules::Dims;

// Reshape(tensor, shape): `shape` may hold one -1, inferred from the element count.
class ReshapeKernel {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    Dims requested, out;
    CFX_SDK_RETURN_IF_ERROR(ReadVectorInput(ctx, 1, "shape", &requested));
    CFX_SDK_RETURN_IF_ERROR(
        RuleStatus(shape_rules::ReshapeShape(ctx.input(0).shape(), requested, &out)));
    return ReshapedOutput(ctx, 0, out);
  }
};

// ExpandDims(input, dim): a dimension of size 1 inserted at `dim` (negative counts from the end).
class ExpandDimsKernel {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    int64_t axis = 0;
    CFX_SDK_RETURN_IF_ERROR(ReadScalarInput(ctx, 1, "dim", &axis, /*allow_vector=*/true));
    Dims out;
    CFX_SDK_RETURN_IF_ERROR(
        RuleStatus(shape_rules::ExpandDimsShape(ctx.input(0).shape(), axis, &out)));
    return ReshapedOutput(ctx, 0, out);
  }
};

// Squeeze(input): removes the dimensions listed in squeeze_dims, or every size-1 dimension.
class SqueezeKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) {
    return init.attrs().GetOr("squeeze_dims", &squeeze_dims_, Dims{});
  }
  sdk::Status Compute(sdk::KernelContext& ctx) {
    Dims out;
    bool rank_unknown = false;
    CFX_SDK_RETURN_IF_ERROR(RuleStatus(
        shape_rules::SqueezeShape(ctx.input(0).shape(), squeeze_dims_, &out, &rank_unknown)));
    return ReshapedOutput(ctx, 0, out);
  }

 private:
  Dims squeeze_dims_;
};

// Shape, Rank and Size read only the shape, so they also take strings, resources and variants.
constexpr cfx_dtype kNonFixedSizeTypes[] = {CFX_STRING, CFX_RESOURCE, CFX_VARIANT};

template <typename K>
void RegisterShapeQuery(sdk::Plugin& p, const char* op) {
  RegisterTypeAgnostic<K>(p, op, "T", kFixedSizeTypes, {}, /*inexpensive=*/true);
  RegisterTypeAgnostic<K>(p, op, "T", kNonFixedSizeTypes, {}, /*inexpensive=*/true);
}

}  // namespace

void RegisterReshapeKernels(sdk::Plugin& p) {
  RegisterTypeAgnostic<ReshapeKernel>(p, "Reshape", "T", {"shape"}, /*inexpensive=*/true);
  RegisterTypeAgnostic<ExpandDimsKernel>(p, "ExpandDims", "T", {"dim"}, /*inexpensive=*/true);
  RegisterTypeAgnostic<SqueezeKernel>(p, "Squeeze", "T", {}, /*inexpensive=*/true);
  RegisterShapeQuery<sdk::ShapeKernel>(p, "Shape");
  RegisterShapeQuery<sdk::ShapeNKernel>(p, "ShapeN");
  RegisterShapeQuery<sdk::RankKernel>(p, "Rank");
  RegisterShapeQuery<sdk::SizeKernel>(p, "Size");
}

}  // namespace cfx::cpu
