// BiasAdd (value + bias broadcast along the channel dimension) and BiasAddGrad (the sum of a
// gradient over every dimension but the channel one), with TensorFlow's op definitions.
//
// Both kernels see the operand as [outer, channels, inner]: NHWC has inner = 1 and NCHW has
// outer = the batch and inner = the product of the spatial dimensions.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "conflux/sdk/data_format.h"
#include "conflux/sdk/shape_rules.h"
#include "conflux/sdk/wrapping_arithmetic.h"
#include "nn_ops.h"

namespace cfx::nn {

using sdk::ChannelDim;
using sdk::CheckChanneledRank;
using sdk::DataFormat;
using sdk::FormatName;
using sdk::ReadDataFormat;
namespace {

using shape_rules::ShapeStr;

struct ChannelView {
  int64_t outer = 1, channels = 1, inner = 1;
};

ChannelView ViewOf(const sdk::Shape& shape, DataFormat format) {
  const int rank = static_cast<int>(shape.size());
  const int c = ChannelDim(format, rank);
  ChannelView v;
  for (int d = 0; d < c; ++d) v.outer *= shape[d];
  v.channels = shape[c];
  for (int d = c + 1; d < rank; ++d) v.inner *= shape[d];
  return v;
}

// ---- Shape functions.

sdk::Status BiasAddShape(sdk::ShapeContext& c) {
  DataFormat format;
  CFX_SDK_RETURN_IF_ERROR(ReadDataFormat(c.attrs(), &format));
  sdk::PartialShape value = c.input(0), bias = c.input(1);
  if (!bias.unknown_rank && bias.dims.size() != 1)
    return sdk::InvalidArgument("bias must be 1-D, got shape ", ShapeStr(bias.dims));
  if (value.unknown_rank) {
    c.set_output(0, value);
    return sdk::Status();
  }
  const int rank = static_cast<int>(value.dims.size());
  CFX_SDK_RETURN_IF_ERROR(CheckChanneledRank(rank, ShapeStr(value.dims), "value"));
  int64_t& channels = value.dims[ChannelDim(format, rank)];
  const int64_t bias_size = bias.unknown_rank ? sdk::kUnknown : bias.dims[0];
  if (channels >= 0 && bias_size >= 0 && channels != bias_size)
    return sdk::InvalidArgument("bias has ", bias_size, " elements (shape ", ShapeStr(bias.dims),
                                ") but the channel dimension of value (shape ",
                                ShapeStr(value.dims), ", data_format ", FormatName(format),
                                ") has size ", channels, "; they must be equal");
  if (channels < 0) channels = bias_size;
  c.set_output(0, value);
  return sdk::Status();
}

sdk::Status BiasAddGradShape(sdk::ShapeContext& c) {
  DataFormat format;
  CFX_SDK_RETURN_IF_ERROR(ReadDataFormat(c.attrs(), &format));
  sdk::PartialShape grad = c.input(0);
  sdk::PartialShape out;
  out.unknown_rank = false;
  if (grad.unknown_rank) {
    out.dims = {sdk::kUnknown};
  } else {
    const int rank = static_cast<int>(grad.dims.size());
    CFX_SDK_RETURN_IF_ERROR(CheckChanneledRank(rank, ShapeStr(grad.dims), "out_backprop"));
    out.dims = {grad.dims[ChannelDim(format, rank)]};
  }
  c.set_output(0, out);
  return sdk::Status();
}

// ---- Kernels.

template <typename T>
class BiasAddKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) { return ReadDataFormat(init.attrs(), &format_); }

  sdk::Status Compute(sdk::KernelContext& ctx) {
    sdk::Tensor value = ctx.input(0), bias = ctx.input(1);
    const sdk::Shape shape = value.shape();
    CFX_SDK_RETURN_IF_ERROR(CheckChanneledRank(value.rank(), ShapeStr(shape), "value"));
    if (bias.rank() != 1)
      return sdk::InvalidArgument("bias must be 1-D, got shape ", ShapeStr(bias.shape()));
    const ChannelView v = ViewOf(shape, format_);
    if (bias.dim(0) != v.channels)
      return sdk::InvalidArgument("bias has ", bias.dim(0), " elements but the channel dimension ",
                                  "of value (shape ", ShapeStr(shape), ", data_format ",
                                  FormatName(format_), ") has size ", v.channels,
                                  "; they must be equal");
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.ForwardOrAllocateOutput({0}, 0, shape));
    // Nothing to add, however large the other dimensions (their products may not even fit).
    if (value.num_elements() == 0) return sdk::Status();
    const T* in = value.data<T>();
    const T* b = bias.data<T>();
    T* o = out.data<T>();
    if (v.inner == 1) {
      // Rows of `channels` elements, each plus the whole bias vector.
      const int64_t c = v.channels;
      ctx.ParallelFor(v.outer, c, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r)
          for (int64_t j = 0; j < c; ++j) o[r * c + j] = sdk::WrappingAdd(in[r * c + j], b[j]);
      });
    } else {
      // Rows of `inner` elements, each plus one bias entry.
      const int64_t c = v.channels, n = v.inner;
      ctx.ParallelFor(v.outer * c, n, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          const T add = b[r % c];
          for (int64_t k = 0; k < n; ++k) o[r * n + k] = sdk::WrappingAdd(in[r * n + k], add);
        }
      });
    }
    return sdk::Status();
  }

 private:
  DataFormat format_ = DataFormat::kNHWC;
};

// Sums in double for float so that long reductions keep float's precision.
template <typename T>
using SumType = std::conditional_t<std::is_same_v<T, float>, double, T>;

template <typename T>
class BiasAddGradKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) { return ReadDataFormat(init.attrs(), &format_); }

  sdk::Status Compute(sdk::KernelContext& ctx) {
    sdk::Tensor grad = ctx.input(0);
    const sdk::Shape shape = grad.shape();
    CFX_SDK_RETURN_IF_ERROR(CheckChanneledRank(grad.rank(), ShapeStr(shape), "out_backprop"));
    const ChannelView v = ViewOf(shape, format_);
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, {v.channels}));
    const T* g = grad.data<T>();
    T* o = out.data<T>();
    if (grad.num_elements() == 0) {  // empty sums, however large the other dimensions
      std::fill(o, o + v.channels, T(0));
      return sdk::Status();
    }
    const int64_t c = v.channels, n = v.inner, outer = v.outer;
    // Each task owns a range of channels and writes only their sums.
    ctx.ParallelFor(c, outer * n, [&](int64_t begin, int64_t end) {
      if (n == 1) {
        std::vector<SumType<T>> sums(static_cast<size_t>(end - begin), SumType<T>(0));
        for (int64_t r = 0; r < outer; ++r) {
          const T* row = g + r * c;
          for (int64_t j = begin; j < end; ++j)
            sums[j - begin] = sdk::WrappingAdd<SumType<T>>(sums[j - begin], row[j]);
        }
        for (int64_t j = begin; j < end; ++j) o[j] = static_cast<T>(sums[j - begin]);
        return;
      }
      for (int64_t j = begin; j < end; ++j) {
        SumType<T> sum(0);
        for (int64_t r = 0; r < outer; ++r) {
          const T* block = g + (r * c + j) * n;
          for (int64_t k = 0; k < n; ++k) sum = sdk::WrappingAdd<SumType<T>>(sum, block[k]);
        }
        o[j] = static_cast<T>(sum);
      }
    });
    return sdk::Status();
  }

 private:
  DataFormat format_ = DataFormat::kNHWC;
};

template <template <typename> class K, typename... Ts>
void RegisterCpu(sdk::Plugin& p, const char* op) {
  // One full expression per type: each builder registers when its statement ends.
  ([&] { p.Kernel<K<Ts>>(op, "CPU").template TypeConstraint<Ts>("T"); }(), ...);
}

}  // namespace

void RegisterBiasAddOps(sdk::Plugin& p) {
  p.Op("BiasAdd")
      .Input("value: T")
      .Input("bias: T")
      .Output("output: T")
      .Attr("T: numbertype")
      .Attr("data_format: {'NHWC', 'NCHW'} = 'NHWC'")
      .ShapeFn<&BiasAddShape>();
  p.Op("BiasAddGrad")
      .Input("out_backprop: T")
      .Output("output: T")
      .Attr("T: numbertype")
      .Attr("data_format: {'NHWC', 'NCHW'} = 'NHWC'")
      .ShapeFn<&BiasAddGradShape>();
  RegisterCpu<BiasAddKernel, float, double, int32_t, int64_t>(p, "BiasAdd");
  RegisterCpu<BiasAddGradKernel, float, double, int32_t, int64_t>(p, "BiasAddGrad");
}

}  // namespace cfx::nn
