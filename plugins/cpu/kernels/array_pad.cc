// Pad, PadV2, MirrorPad and MirrorPadGrad on CPU.
//
// Pad, PadV2 and MirrorPad move bytes, so one kernel class serves every fixed-size dtype; they
// write the output row by row (a row is the innermost dimension), in parallel over rows.
// MirrorPadGrad adds, so it is a template over the element type; it scatters each gradient
// element onto the element it was mirrored from, serially (two rows of the gradient may add
// into one row of the output).
#include <cstring>

#include "conflux/sdk/wrapping_arithmetic.h"
#include "kernels/array_util.h"

namespace cfx::cpu {
namespace {

using shape_rules::Dims;
using shape_rules::PadDirection;
using shape_rules::PadMode;

// Reads input 1, the paddings matrix [rank, 2], and checks it against input 0 under `mode`;
// *out is the output shape.
sdk::Status ReadPaddings(const sdk::KernelContext& ctx, PadMode mode, PadDirection direction,
                         Dims* paddings, Dims* out) {
  sdk::Tensor p = ctx.input(1);
  if (p.rank() != 2 || p.dim(1) != 2)
    return sdk::InvalidArgument("paddings must be a matrix of shape [rank,2], got shape ",
                                sdk::ShapeString(p.shape()));
  CFX_SDK_RETURN_IF_ERROR(ReadIndexValues(p, "paddings", paddings));
  return RuleStatus(
      shape_rules::PadShape(ctx.input(0).shape(), *paddings, p.dim(0), mode, direction, out));
}

// Strides in elements of a row-major `dims` (strides[i] = product of dims after i).
Dims Strides(const Dims& dims) {
  Dims strides(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) strides[d - 1] = strides[d] * dims[d];
  return strides;
}

// The index of the input element that position `j` (relative to the start of the input, so
// negative in the before padding) of a dimension of `n` elements copies.
int64_t Mirror(int64_t j, int64_t n, PadMode mode) {
  const int64_t edge = mode == PadMode::kReflect ? 0 : 1;
  if (j < 0) return -j - edge;
  if (j >= n) return 2 * n - 2 + edge - j;
  return j;
}

// The offset in elements of the row of `small` that row `r` of `large` (`small` with
// `paddings` added) copies in `mode`; a row is all dimensions but the last.
int64_t MirroredRow(int64_t r, const Dims& large, const Dims& small, const Dims& small_strides,
                    const Dims& paddings, PadMode mode) {
  int64_t offset = 0;
  for (size_t d = large.size() - 1; d-- > 0;) {
    offset += Mirror(r % large[d] - paddings[2 * d], small[d], mode) * small_strides[d];
    r /= large[d];
  }
  return offset;
}

// MirrorPad and MirrorPadGrad: the `mode` attr.
class MirrorKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) {
    std::string mode;
    CFX_SDK_RETURN_IF_ERROR(init.attrs().Get("mode", &mode));
    mode_ = mode == "REFLECT" ? PadMode::kReflect : PadMode::kSymmetric;
    return sdk::Status();
  }

 protected:
  PadMode mode_ = PadMode::kReflect;
};

// Pad(input, paddings) and PadV2(input, paddings, constant_values): the input surrounded by
// zeros or by the constant.
class PadKernel {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    sdk::Tensor in = ctx.input(0);
    Dims paddings, out_shape;
    CFX_SDK_RETURN_IF_ERROR(
        ReadPaddings(ctx, PadMode::kConstant, PadDirection::kGrow, &paddings, &out_shape));
    const bool has_constant = ctx.num_inputs() == 3;
    if (has_constant && ctx.input(2).rank() != 0)
      return sdk::InvalidArgument("constant_values must be a scalar, got shape ",
                                  sdk::ShapeString(ctx.input(2).shape()));
    if (out_shape == in.shape()) return ctx.SetOutput(0, in);
    CFX_SDK_ASSIGN_OR_RETURN(size_t elem_size, ElementSize(in));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, out_shape));
    char* dst = static_cast<char*>(out.raw_data());
    const int64_t elem = static_cast<int64_t>(elem_size);
    const int64_t n = out.num_elements();
    if (!has_constant) {
      ctx.ParallelFor(n, CopyCost(elem), [&](int64_t first, int64_t last) {
        std::memset(dst + first * elem, 0, static_cast<size_t>((last - first) * elem));
      });
    } else {
      const char* value = static_cast<const char*>(ctx.input(2).raw_data());
      ctx.ParallelFor(n, CopyCost(elem), [&](int64_t first, int64_t last) {
        for (int64_t k = first; k < last; ++k) std::memcpy(dst + k * elem, value, elem_size);
      });
    }
    const Dims dims = in.shape();
    if (in.num_elements() == 0) return sdk::Status();
    if (dims.empty()) {
      std::memcpy(dst, in.raw_data(), elem_size);
      return sdk::Status();
    }
    // Row r of the input (all dims but the last) goes to its place in the output.
    const size_t rank = dims.size();
    const Dims out_strides = Strides(out_shape);
    const int64_t row = dims[rank - 1];
    const int64_t rows = in.num_elements() / row;
    const char* src = static_cast<const char*>(in.raw_data());
    ctx.ParallelFor(rows, CopyCost(row * elem), [&](int64_t first, int64_t last) {
      for (int64_t r = first; r < last; ++r) {
        int64_t offset = paddings[2 * (rank - 1)], rest = r;
        for (size_t d = rank - 1; d-- > 0;) {
          offset += (rest % dims[d] + paddings[2 * d]) * out_strides[d];
          rest /= dims[d];
        }
        std::memcpy(dst + offset * elem, src + r * row * elem, static_cast<size_t>(row * elem));
      }
    });
    return sdk::Status();
  }
};

// MirrorPad(input, paddings): the input surrounded by its mirror images.
class MirrorPadKernel : public MirrorKernel {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    sdk::Tensor in = ctx.input(0);
    Dims paddings, out_shape;
    CFX_SDK_RETURN_IF_ERROR(ReadPaddings(ctx, mode_, PadDirection::kGrow, &paddings, &out_shape));
    if (out_shape == in.shape()) return ctx.SetOutput(0, in);
    CFX_SDK_ASSIGN_OR_RETURN(size_t elem_size, ElementSize(in));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, out_shape));
    // A dimension of 0 elements cannot be padded in either mirror mode, so an output with
    // elements has an input with elements.
    if (out.num_elements() == 0) return sdk::Status();
    const Dims dims = in.shape();
    const size_t rank = dims.size();
    const Dims in_strides = Strides(dims);
    const int64_t elem = static_cast<int64_t>(elem_size);
    const int64_t width = out_shape[rank - 1], row = dims[rank - 1];
    const int64_t before = paddings[2 * (rank - 1)];
    const int64_t rows = out.num_elements() / width;
    const char* src = static_cast<const char*>(in.raw_data());
    char* dst = static_cast<char*>(out.raw_data());
    ctx.ParallelFor(rows, CopyCost(width * elem), [&](int64_t first, int64_t last) {
      for (int64_t r = first; r < last; ++r) {
        const char* from =
            src + MirroredRow(r, out_shape, dims, in_strides, paddings, mode_) * elem;
        char* to = dst + r * width * elem;
        for (int64_t k = 0; k < before; ++k)
          std::memcpy(to + k * elem, from + Mirror(k - before, row, mode_) * elem, elem_size);
        std::memcpy(to + before * elem, from, static_cast<size_t>(row * elem));
        for (int64_t k = before + row; k < width; ++k)
          std::memcpy(to + k * elem, from + Mirror(k - before, row, mode_) * elem, elem_size);
      }
    });
    return sdk::Status();
  }
};

// MirrorPadGrad(input, paddings): input is the gradient of a MirrorPad output; each of its
// elements is added to the element of the (smaller) output it was copied from.
template <typename T>
class MirrorPadGradKernel : public MirrorKernel {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    sdk::Tensor in = ctx.input(0);
    Dims paddings, out_shape;
    CFX_SDK_RETURN_IF_ERROR(ReadPaddings(ctx, mode_, PadDirection::kShrink, &paddings, &out_shape));
    if (out_shape == in.shape()) return ctx.SetOutput(0, in);
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, out_shape));
    T* dst = out.data<T>();
    const int64_t n = out.num_elements();
    for (int64_t k = 0; k < n; ++k) dst[k] = T(0);
    const Dims dims = in.shape();
    if (n == 0 || in.num_elements() == 0) return sdk::Status();
    const size_t rank = dims.size();
    const Dims out_strides = Strides(out_shape);
    const int64_t width = dims[rank - 1], row = out_shape[rank - 1];
    const int64_t before = paddings[2 * (rank - 1)];
    const int64_t rows = in.num_elements() / width;
    const T* src = in.data<T>();
    for (int64_t r = 0; r < rows; ++r) {
      const T* from = src + r * width;
      T* to = dst + MirroredRow(r, dims, out_shape, out_strides, paddings, mode_);
      for (int64_t k = 0; k < width; ++k) {
        T& sum = to[Mirror(k - before, row, mode_)];
        sum = sdk::WrappingAdd(sum, from[k]);  // integer gradients wrap, as in TensorFlow
      }
    }
    return sdk::Status();
  }
};

template <typename T>
void RegisterMirrorPadGrad(sdk::Plugin& p) {
  p.Kernel<MirrorPadGradKernel<T>>("MirrorPadGrad", "CPU")
      .template TypeConstraint<T>("T")
      .HostMemory("paddings");
}

}  // namespace

void RegisterPadKernels(sdk::Plugin& p) {
  RegisterTypeAgnostic<PadKernel>(p, "Pad", "T", {"paddings"});
  RegisterTypeAgnostic<PadKernel>(p, "PadV2", "T", {"paddings"});
  RegisterTypeAgnostic<MirrorPadKernel>(p, "MirrorPad", "T", {"paddings"});
  RegisterMirrorPadGrad<float>(p);
  RegisterMirrorPadGrad<double>(p);
  RegisterMirrorPadGrad<int32_t>(p);
  RegisterMirrorPadGrad<int64_t>(p);
}

}  // namespace cfx::cpu
