// GatherV2 on CPU: slices of params picked along `axis` by indices, with batch_dims.
#include "kernels/array_util.h"

namespace cfx::cpu {
namespace {

using shape_rules::Dims;

// "[1,2]": the position of flat element `flat` in a tensor of shape `dims`.
std::string PositionString(const Dims& dims, int64_t flat) {
  Dims index(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    index[d] = flat % dims[d];
    flat /= dims[d];
  }
  return shape_rules::ListStr(index);
}

// Checks every index, then copies: out[b, o, k, :] = params[b, o, indices[b, k], :] with the
// sizes of shape_rules::GatherSizes.
template <typename Index>
sdk::Status Gather(sdk::KernelContext& ctx, const sdk::Tensor& params, const sdk::Tensor& indices,
                   const shape_rules::GatherSizes& s, size_t elem_size, const sdk::Tensor& out) {
  const Index* idx = indices.data<Index>();
  const int64_t count = indices.num_elements();
  for (int64_t i = 0; i < count; ++i) {
    if (idx[i] < 0 || idx[i] >= s.axis_size)
      return sdk::InvalidArgument("indices", PositionString(indices.shape(), i), " = ",
                                  static_cast<int64_t>(idx[i]), " is not in [0, ", s.axis_size,
                                  ")");
  }
  const int64_t row_bytes = s.inner * static_cast<int64_t>(elem_size);
  const int64_t rows_per_batch = s.outer * s.per_batch;
  const char* src = static_cast<const char*>(params.raw_data());
  char* dst = static_cast<char*>(out.raw_data());
  ctx.ParallelFor(s.batch * rows_per_batch, CopyCost(row_bytes), [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      const int64_t b = r / rows_per_batch, o = r / s.per_batch % s.outer, k = r % s.per_batch;
      const int64_t source_row = (b * s.outer + o) * s.axis_size + idx[b * s.per_batch + k];
      std::memcpy(dst + r * row_bytes, src + source_row * row_bytes,
                  static_cast<size_t>(row_bytes));
    }
  });
  return sdk::Status();
}

// GatherV2(params, indices, axis).
class GatherV2Kernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) {
    return init.attrs().GetOr("batch_dims", &batch_dims_, int64_t{0});
  }
  sdk::Status Compute(sdk::KernelContext& ctx) {
    sdk::Tensor params = ctx.input(0), indices = ctx.input(1);
    int64_t axis = 0, batch_dims = batch_dims_;
    CFX_SDK_RETURN_IF_ERROR(ReadScalarInput(ctx, 2, "axis", &axis));
    Dims out_shape;
    shape_rules::GatherSizes sizes;
    CFX_SDK_RETURN_IF_ERROR(RuleStatus(shape_rules::GatherShape(
        params.shape(), indices.shape(), &axis, &batch_dims, &out_shape, &sizes)));
    CFX_SDK_ASSIGN_OR_RETURN(size_t elem_size, ElementSize(params));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, out_shape));
    // Nothing to gather (as TensorFlow's, the indices are then not read): the loops over the
    // other dimensions could be as long as their product.
    if (out.num_elements() == 0) return sdk::Status();
    switch (indices.dtype()) {
      case CFX_INT16:
        return Gather<int16_t>(ctx, params, indices, sizes, elem_size, out);
      case CFX_INT32:
        return Gather<int32_t>(ctx, params, indices, sizes, elem_size, out);
      case CFX_INT64:
        return Gather<int64_t>(ctx, params, indices, sizes, elem_size, out);
      default:
        return sdk::InvalidArgument("indices must be int16, int32 or int64, got ",
                                    sdk::DTypeName(indices.dtype()));
    }
  }

 private:
  int64_t batch_dims_ = 0;
};

}  // namespace

void RegisterGatherKernels(sdk::Plugin& p) {
  RegisterTypeAgnostic<GatherV2Kernel>(p, "GatherV2", "Tparams", {"axis"});
}

}  // namespace cfx::cpu
