// Transpose, Tile and ReverseV2 on CPU: all rearrange the input's elements into a new layout.
#include <algorithm>

#include "conflux/sdk/layout_shape_rules.h"
#include "kernels/array_util.h"

namespace cfx::cpu {
namespace {

using shape_rules::Dims;

// Transpose(x, perm): output dimension i is input dimension perm[i].
class TransposeKernel {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    sdk::Tensor in = ctx.input(0);
    const Dims dims = in.shape();
    Dims perm, out_shape;
    CFX_SDK_RETURN_IF_ERROR(ReadVectorInput(ctx, 1, "perm", &perm));
    CFX_SDK_RETURN_IF_ERROR(RuleStatus(shape_rules::TransposeShape(dims, perm, &out_shape)));
    bool identity = true;
    for (size_t i = 0; i < perm.size(); ++i)
      identity = identity && perm[i] == static_cast<int64_t>(i);
    if (identity) return ctx.SetOutput(0, in);
    CFX_SDK_ASSIGN_OR_RETURN(size_t elem_size, ElementSize(in));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, out_shape));
    // Output dimension i walks input dimension perm[i]. CopyWalks merges dimensions that stay
    // adjacent, drops size-1 ones and tiles what remains a transpose (the 2-D fast path).
    Dims in_stride(dims.size(), 1);
    for (size_t d = dims.size(); d-- > 1;) in_stride[d - 1] = in_stride[d] * dims[d];
    std::vector<Walk> walks(dims.size());
    for (size_t i = 0; i < perm.size(); ++i) walks[i] = {out_shape[i], in_stride[perm[i]]};
    CopyWalks(ctx, static_cast<const char*>(in.raw_data()), static_cast<char*>(out.raw_data()),
              elem_size, walks);
    return sdk::Status();
  }
};

// Tile(input, multiples): dimension i repeated multiples[i] times.
class TileKernel {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    sdk::Tensor in = ctx.input(0);
    const Dims dims = in.shape();
    Dims multiples, out_shape;
    CFX_SDK_RETURN_IF_ERROR(ReadVectorInput(ctx, 1, "multiples", &multiples));
    CFX_SDK_RETURN_IF_ERROR(RuleStatus(shape_rules::TileShape(dims, multiples, &out_shape)));
    if (out_shape == dims) return ctx.SetOutput(0, in);
    CFX_SDK_ASSIGN_OR_RETURN(size_t elem_size, ElementSize(in));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, out_shape));
    if (out.num_elements() == 0) return sdk::Status();
    // Output row r (the last dimension) is input row (r's index modulo the input dims) written
    // multiples[last] times: copied once, then doubled from itself.
    const size_t rank = dims.size();
    const int64_t in_row = dims[rank - 1] * static_cast<int64_t>(elem_size);
    const int64_t out_row = in_row * multiples[rank - 1];
    int64_t rows = 1;
    for (size_t d = 0; d + 1 < rank; ++d) rows *= out_shape[d];
    const char* src = static_cast<const char*>(in.raw_data());
    char* dst = static_cast<char*>(out.raw_data());
    ctx.ParallelFor(rows, CopyCost(out_row), [&](int64_t first, int64_t last) {
      for (int64_t r = first; r < last; ++r) {
        int64_t source_row = 0, in_rows = 1;
        for (size_t d = rank - 1, rest = static_cast<size_t>(r); d-- > 0;) {
          source_row += static_cast<int64_t>(rest % static_cast<size_t>(out_shape[d]) %
                                             static_cast<size_t>(dims[d])) *
                        in_rows;
          rest /= static_cast<size_t>(out_shape[d]);
          in_rows *= dims[d];
        }
        char* row = dst + r * out_row;
        std::memcpy(row, src + source_row * in_row, static_cast<size_t>(in_row));
        for (int64_t done = in_row; done < out_row; done *= 2)
          std::memcpy(row + done, row, static_cast<size_t>(std::min(done, out_row - done)));
      }
    });
    return sdk::Status();
  }
};

// ReverseV2(tensor, axis): the elements along each dimension in `axis` in reverse order.
class ReverseV2Kernel {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    sdk::Tensor in = ctx.input(0);
    const Dims dims = in.shape();
    Dims axes;
    CFX_SDK_RETURN_IF_ERROR(ReadVectorInput(ctx, 1, "axis", &axes));
    std::vector<bool> reversed;
    CFX_SDK_RETURN_IF_ERROR(
        RuleStatus(shape_rules::ReverseAxes(static_cast<int64_t>(dims.size()), axes, &reversed)));
    if (std::find(reversed.begin(), reversed.end(), true) == reversed.end())
      return ctx.SetOutput(0, in);
    CFX_SDK_ASSIGN_OR_RETURN(size_t elem_size, ElementSize(in));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, dims));
    if (out.num_elements() == 0) return sdk::Status();
    // A reversed dimension is walked from its last element backwards.
    std::vector<Walk> walks(dims.size());
    int64_t stride = 1, first = 0;
    for (size_t d = dims.size(); d-- > 0;) {
      walks[d] = {dims[d], reversed[d] ? -stride : stride};
      if (reversed[d]) first += (dims[d] - 1) * stride;
      stride *= dims[d];
    }
    CopyWalks(ctx,
              static_cast<const char*>(in.raw_data()) + first * static_cast<int64_t>(elem_size),
              static_cast<char*>(out.raw_data()), elem_size, walks);
    return sdk::Status();
  }
};

// ReverseV2's T: the fixed-size types TensorFlow allows (no quantized ones).
constexpr cfx_dtype kReverseTypes[] = {CFX_UINT8,  CFX_INT8,      CFX_UINT16,    CFX_INT16,
                                       CFX_INT32,  CFX_UINT32,    CFX_INT64,     CFX_UINT64,
                                       CFX_BOOL,   CFX_BFLOAT16,  CFX_HALF,      CFX_FLOAT,
                                       CFX_DOUBLE, CFX_COMPLEX64, CFX_COMPLEX128};

}  // namespace

void RegisterTransposeKernels(sdk::Plugin& p) {
  RegisterTypeAgnostic<TransposeKernel>(p, "Transpose", "T", {"perm"});
  RegisterTypeAgnostic<TileKernel>(p, "Tile", "T", {"multiples"});
  RegisterTypeAgnostic<ReverseV2Kernel>(p, "ReverseV2", "T", kReverseTypes, {"axis"});
}

}  // namespace cfx::cpu
