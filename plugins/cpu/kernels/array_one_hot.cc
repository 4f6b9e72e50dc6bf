// OneHot on CPU for every fixed-size dtype (the values are copied, never computed) and uint8,
// int8, int32 or int64 indices.
//
// Seen around `axis`, the indices are [outer, inner] and the output [outer, depth, inner]:
// output[o, d, i] = indices[o, i] == d ? on_value : off_value. The output is filled with
// off_value, then each index in [0, depth) writes its one on_value; an index outside (negative
// ones included) leaves its column off, as in TensorFlow.
#include <cstring>

#include "conflux/sdk/index_shape_rules.h"
#include "kernels/array_util.h"

namespace cfx::cpu {
namespace {

using shape_rules::Dims;

template <typename Index>
void PlaceOnValues(const sdk::Tensor& indices, int64_t depth, int64_t inner, const char* on,
                   size_t elem_size, char* out) {
  const Index* idx = indices.data<Index>();
  for (int64_t k = 0; k < indices.num_elements(); ++k) {
    const int64_t d = static_cast<int64_t>(idx[k]);
    if (d < 0 || d >= depth) continue;
    const int64_t o = k / inner, i = k % inner;
    std::memcpy(out + ((o * depth + d) * inner + i) * static_cast<int64_t>(elem_size), on,
                elem_size);
  }
}

// OneHot(indices, depth, on_value, off_value).
class OneHotKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) { return init.attrs().Get("axis", &axis_); }

  sdk::Status Compute(sdk::KernelContext& ctx) {
    sdk::Tensor indices = ctx.input(0), on = ctx.input(2), off = ctx.input(3);
    int64_t depth = 0;
    CFX_SDK_RETURN_IF_ERROR(ReadScalarInput(ctx, 1, "depth", &depth));
    for (const auto& [value, name] : {std::pair{on, "on_value"}, std::pair{off, "off_value"}})
      if (value.rank() != 0)
        return sdk::InvalidArgument(name, " must be a scalar, got shape ",
                                    sdk::ShapeString(value.shape()));
    const Dims index_shape = indices.shape();
    Dims out_shape;
    CFX_SDK_RETURN_IF_ERROR(
        RuleStatus(shape_rules::OneHotShape(index_shape, depth, axis_, &out_shape)));
    CFX_SDK_ASSIGN_OR_RETURN(size_t elem_size, ElementSize(on));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, out_shape));
    const int64_t n = out.num_elements();
    if (n == 0) return sdk::Status();
    char* dst = static_cast<char*>(out.raw_data());
    const char* off_bytes = static_cast<const char*>(off.raw_data());
    ctx.ParallelFor(n, CopyCost(static_cast<int64_t>(elem_size)), [&](int64_t first, int64_t last) {
      for (int64_t k = first; k < last; ++k)
        std::memcpy(dst + k * static_cast<int64_t>(elem_size), off_bytes, elem_size);
    });
    const size_t axis = axis_ < 0 ? index_shape.size() : static_cast<size_t>(axis_);
    int64_t inner = 1;
    for (size_t d = axis; d < index_shape.size(); ++d) inner *= index_shape[d];
    const char* on_bytes = static_cast<const char*>(on.raw_data());
    switch (indices.dtype()) {
      case CFX_UINT8:
        PlaceOnValues<uint8_t>(indices, depth, inner, on_bytes, elem_size, dst);
        break;
      case CFX_INT8:
        PlaceOnValues<int8_t>(indices, depth, inner, on_bytes, elem_size, dst);
        break;
      case CFX_INT32:
        PlaceOnValues<int32_t>(indices, depth, inner, on_bytes, elem_size, dst);
        break;
      case CFX_INT64:
        PlaceOnValues<int64_t>(indices, depth, inner, on_bytes, elem_size, dst);
        break;
      default:
        return sdk::InvalidArgument("indices must be uint8, int8, int32 or int64, got ",
                                    sdk::DTypeName(indices.dtype()));
    }
    return sdk::Status();
  }

 private:
  int64_t axis_ = -1;
};

}  // namespace

void RegisterOneHotKernels(sdk::Plugin& p) {
  RegisterTypeAgnostic<OneHotKernel>(p, "OneHot", "T", {"depth"});
}

}  // namespace cfx::cpu
