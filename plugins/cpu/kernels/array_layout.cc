// SpaceToDepth, DepthToSpace and MatrixBandPart on CPU, for every fixed-size dtype: they move
// (or zero) elements without computing with them.
//
// SpaceToDepth and DepthToSpace are strided gathers (CopyWalks, shared with Transpose) in NHWC,
// the layout TensorFlow's CPU kernels take; NCHW and NCHW_VECT_C are Unimplemented here, as
// there. MatrixBandPart copies each matrix row's band and zeroes the rest, rows in parallel.
#include <algorithm>
#include <cstring>
#include <string>

#include "conflux/sdk/layout_shape_rules.h"
#include "kernels/array_util.h"

namespace cfx::cpu {
namespace {

using shape_rules::Dims;

// SpaceToDepth (kToDepth) and DepthToSpace: the block_size and data_format attrs.
template <bool kToDepth>
class SpaceDepthKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) {
    CFX_SDK_RETURN_IF_ERROR(init.attrs().Get("block_size", &block_));
    CFX_SDK_RETURN_IF_ERROR(init.attrs().GetOr("data_format", &data_format_, std::string("NHWC")));
    if (data_format_ != "NHWC")
      return sdk::Unimplemented(kToDepth ? "SpaceToDepth" : "DepthToSpace",
                                " on CPU takes data_format NHWC only, got ", data_format_);
    return sdk::Status();
  }

  sdk::Status Compute(sdk::KernelContext& ctx) {
    sdk::Tensor in = ctx.input(0);
    const Dims dims = in.shape();
    Dims out_shape;
    CFX_SDK_RETURN_IF_ERROR(
        RuleStatus(shape_rules::SpaceDepthShape(dims, block_, data_format_, kToDepth, &out_shape)));
    CFX_SDK_ASSIGN_OR_RETURN(size_t elem_size, ElementSize(in));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, out_shape));
    if (out.num_elements() == 0) return sdk::Status();
    const int64_t b = block_, n = dims[0], h = dims[1], w = dims[2], c = dims[3];
    std::vector<Walk> walks;
    if (kToDepth) {
      // Output (n, h / b, w / b, [by, bx, c]) reads input (n, oh * b + by, ow * b + bx, c).
      walks = {{n, h * w * c}, {h / b, b * w * c}, {w / b, b * c}, {b, w * c}, {b, c}, {c, 1}};
    } else {
      // Output (n, [h, by], [w, bx], c') reads input (n, h, w, (by * b + bx) * c' + c'').
      const int64_t depth = c / (b * b);
      walks = {{n, h * w * c}, {h, w * c}, {b, b * depth}, {w, c}, {b, depth}, {depth, 1}};
    }
    CopyWalks(ctx, static_cast<const char*>(in.raw_data()), static_cast<char*>(out.raw_data()),
              elem_size, walks);
    return sdk::Status();
  }

 private:
  int64_t block_ = 2;
  std::string data_format_;
};

// MatrixBandPart(input, num_lower, num_upper).
class MatrixBandPartKernel {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    sdk::Tensor in = ctx.input(0);
    int64_t lower = 0, upper = 0;
    CFX_SDK_RETURN_IF_ERROR(ReadScalarInput(ctx, 1, "num_lower", &lower));
    CFX_SDK_RETURN_IF_ERROR(ReadScalarInput(ctx, 2, "num_upper", &upper));
    const Dims dims = in.shape();
    CFX_SDK_RETURN_IF_ERROR(RuleStatus(shape_rules::MatrixBandCheck(dims, lower, upper)));
    CFX_SDK_ASSIGN_OR_RETURN(size_t elem_size, ElementSize(in));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.ForwardOrAllocateOutput({0}, 0, dims));
    if (out.num_elements() == 0) return sdk::Status();
    const int64_t rows = dims[dims.size() - 2], columns = dims.back();
    const int64_t elem = static_cast<int64_t>(elem_size), row_bytes = columns * elem;
    const char* src = static_cast<const char*>(in.raw_data());
    char* dst = static_cast<char*>(out.raw_data());
    const bool in_place = src == dst;
    ctx.ParallelFor(
        out.num_elements() / columns, CopyCost(row_bytes), [&](int64_t first, int64_t last) {
          for (int64_t r = first; r < last; ++r) {
            // Row i keeps columns [i - lower, i + upper] (clipped to the matrix).
            const int64_t i = r % rows;
            const int64_t begin = lower < 0 ? 0 : std::max<int64_t>(0, i - lower);
            const int64_t end = upper < 0 ? columns : std::min(columns, i + upper + 1);
            char* row = dst + r * row_bytes;
            if (begin >= end) {
              std::memset(row, 0, static_cast<size_t>(row_bytes));
              continue;
            }
            std::memset(row, 0, static_cast<size_t>(begin * elem));
            if (!in_place)
              std::memcpy(row + begin * elem, src + r * row_bytes + begin * elem,
                          static_cast<size_t>((end - begin) * elem));
            std::memset(row + end * elem, 0, static_cast<size_t>((columns - end) * elem));
          }
        });
    return sdk::Status();
  }
};

}  // namespace

void RegisterLayoutKernels(sdk::Plugin& p) {
  RegisterTypeAgnostic<SpaceDepthKernel<true>>(p, "SpaceToDepth");
  RegisterTypeAgnostic<SpaceDepthKernel<false>>(p, "DepthToSpace");
  RegisterTypeAgnostic<MatrixBandPartKernel>(p, "MatrixBandPart", "T", {"num_lower", "num_upper"});
}

}  // namespace cfx::cpu
