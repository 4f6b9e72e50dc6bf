// MaxPool, MaxPoolGrad, AvgPool and AvgPoolGrad (NHWC), with TensorFlow's op definitions.
//
// Direct loops: for each output position, the window's rows are walked with the channels as the
// contiguous inner loop, which vectorizes in NHWC. Images are independent and spread over the
// intra-op pool. Rules as in TensorFlow: padding never wins a max (padded positions are skipped),
// AvgPool divides by the number of real (unpadded) elements in the window, and MaxPoolGrad gives
// each output's gradient to the first maximum of its window in row-major order (the forward
// maxima are recomputed from orig_input; orig_output is checked for shape only).
#include <limits>
#include <vector>

#include "nn_ops.h"
#include "partial_shapes.h"
#include "conflux/sdk/window_geometry.h"

namespace cfx::nn {
namespace {

using sdk::ComputeWindows;
using sdk::PoolAttrs;
using sdk::ReadPoolAttrs;
using sdk::WindowDim;

using shape_rules::ShapeStr;

struct PoolGeometry {
  int64_t n = 0, c = 0;
  WindowDim h, w;
  sdk::Shape input() const { return {n, h.in, w.in, c}; }
  sdk::Shape output() const { return {n, h.out, w.out, c}; }
};

sdk::Status MakeGeometry(const PoolAttrs& a, const sdk::Shape& input, PoolGeometry* g) {
  if (input.size() != 4)
    return sdk::InvalidArgument("input must have rank 4 (NHWC), got shape ", ShapeStr(input));
  g->n = input[0];
  g->c = input[3];
  return ComputeWindows(a.window, input[1], input[2], a.kernel_h, a.kernel_w, &g->h, &g->w);
}

// The window of output (oh, ow): rows [h0, h1) and columns [w0, w1) of the input, clipped.
struct Window {
  int64_t h0, h1, w0, w1;
};

Window WindowAt(const PoolGeometry& g, int64_t oh, int64_t ow) {
  Window win;
  win.h0 = oh * g.h.stride - g.h.pad_before;
  win.w0 = ow * g.w.stride - g.w.pad_before;
  win.h1 = std::min(win.h0 + g.h.kernel, g.h.in);
  win.w1 = std::min(win.w0 + g.w.kernel, g.w.in);
  win.h0 = std::max<int64_t>(win.h0, 0);
  win.w0 = std::max<int64_t>(win.w0, 0);
  return win;
}

// Runs fn(image) for every image of the batch on the intra-op pool, unless `out`, the tensor the
// pool writes, is empty: 2^31 images or rows of 2^40 pixels without elements would still take
// hours to walk.
template <typename Fn>
void ForEachImage(sdk::KernelContext& ctx, const PoolGeometry& g, const sdk::Tensor& out, Fn&& fn) {
  if (out.num_elements() == 0) return;
  // A hint: saturates rather than overflows for windows far larger than the input.
  const int64_t cost = sdk::NumElements({g.h.out, g.w.out, g.c, g.h.kernel, g.w.kernel});
  ctx.ParallelFor(g.n, cost, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) fn(i);
  });
}

template <typename T>
class PoolKernelBase {
 public:
  sdk::Status Init(const sdk::KernelInit& init) { return ReadPoolAttrs(init.attrs(), &attrs_); }

 protected:
  PoolAttrs attrs_;
};

// The forward pools: per output position and channel, `init`, then o = combine(o, p) over the
// window's elements p, then finish(o, window). Channels are the contiguous inner loop.
template <typename T, typename Combine, typename Finish>
sdk::Status PoolForward(sdk::KernelContext& ctx, const PoolAttrs& attrs, T init,
                        const Combine& combine, const Finish& finish) {
  sdk::Tensor input = ctx.input(0);
  PoolGeometry g;
  CFX_SDK_RETURN_IF_ERROR(MakeGeometry(attrs, input.shape(), &g));
  CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, g.output()));
  const T* x = input.data<T>();
  T* y = out.data<T>();
  const int64_t c = g.c;
  ForEachImage(ctx, g, out, [&](int64_t i) {
    const T* img = x + i * g.h.in * g.w.in * c;
    T* o = y + i * g.h.out * g.w.out * c;
    for (int64_t oh = 0; oh < g.h.out; ++oh)
      for (int64_t ow = 0; ow < g.w.out; ++ow, o += c) {
        const Window win = WindowAt(g, oh, ow);
        std::fill_n(o, c, init);
        for (int64_t ih = win.h0; ih < win.h1; ++ih)
          for (int64_t iw = win.w0; iw < win.w1; ++iw) {
            const T* p = img + (ih * g.w.in + iw) * c;
            for (int64_t k = 0; k < c; ++k) o[k] = combine(o[k], p[k]);
          }
        finish(o, c, win);
      }
  });
  return sdk::Status();
}

template <typename T>
class MaxPoolKernel : public PoolKernelBase<T> {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    return PoolForward<T>(
        ctx, this->attrs_, std::numeric_limits<T>::lowest(),
        [](T o, T p) { return p > o ? p : o; }, [](T*, int64_t, const Window&) {});
  }
};

template <typename T>
class MaxPoolGradKernel : public PoolKernelBase<T> {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    sdk::Tensor input = ctx.input(0), output = ctx.input(1), grad = ctx.input(2);
    PoolGeometry g;
    CFX_SDK_RETURN_IF_ERROR(MakeGeometry(this->attrs_, input.shape(), &g));
    if (output.shape() != g.output() || grad.shape() != g.output())
      return sdk::InvalidArgument("orig_output (", ShapeStr(output.shape()), ") and grad (",
                                  ShapeStr(grad.shape()), ") must have the pooled shape ",
                                  ShapeStr(g.output()), " of orig_input ",
                                  ShapeStr(input.shape()));
    if (g.h.in * g.w.in * g.c > std::numeric_limits<int32_t>::max())
      return sdk::InvalidArgument("MaxPoolGrad: an image of ", ShapeStr(input.shape()),
                                  " has more than 2^31 - 1 elements");
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, g.input()));
    const T* x = input.data<T>();
    const T* dy = grad.data<T>();
    T* dx = out.data<T>();
    const int64_t c = g.c;
    ForEachImage(ctx, g, out, [&](int64_t i) {
      const T* img = x + i * g.h.in * g.w.in * c;
      const T* gi = dy + i * g.h.out * g.w.out * c;
      T* di = dx + i * g.h.in * g.w.in * c;
      std::fill_n(di, g.h.in * g.w.in * c, T(0));
      // Per channel, the first maximum of the window (a NaN first element stays the choice).
      // Branch-free so that the channel loop vectorises; offsets fit in int32 (checked above).
      std::vector<T> best(c);
      std::vector<int32_t> where(c);
      for (int64_t oh = 0; oh < g.h.out; ++oh)
        for (int64_t ow = 0; ow < g.w.out; ++ow, gi += c) {
          const Window win = WindowAt(g, oh, ow);
          if (win.h0 >= win.h1 || win.w0 >= win.w1) continue;
          const int32_t first = static_cast<int32_t>((win.h0 * g.w.in + win.w0) * c);
          for (int64_t k = 0; k < c; ++k) {
            best[k] = img[first + k];
            where[k] = first + static_cast<int32_t>(k);
          }
          for (int64_t ih = win.h0; ih < win.h1; ++ih)
            for (int64_t iw = win.w0; iw < win.w1; ++iw) {
              const int32_t pos = static_cast<int32_t>((ih * g.w.in + iw) * c);
              const T* v = img + pos;
              T* b = best.data();
              int32_t* w = where.data();
              for (int32_t k = 0; k < static_cast<int32_t>(c); ++k) {
                // The index is chosen with a bit mask: GCC vectorises that, not a select.
                const T vk = v[k], bk = b[k];
                const int32_t greater = -static_cast<int32_t>(vk > bk);
                b[k] = vk > bk ? vk : bk;
                w[k] = ((pos + k) & greater) | (w[k] & ~greater);
              }
            }
          for (int64_t k = 0; k < c; ++k) di[where[k]] += gi[k];
        }
    });
    return sdk::Status();
  }
};

template <typename T>
class AvgPoolKernel : public PoolKernelBase<T> {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    // The mean over the window's real (unpadded) elements.
    return PoolForward<T>(
        ctx, this->attrs_, T(0), [](T o, T p) { return o + p; },
        [](T* o, int64_t c, const Window& win) {
          const T scale = T(1) / static_cast<T>((win.h1 - win.h0) * (win.w1 - win.w0));
          for (int64_t k = 0; k < c; ++k) o[k] *= scale;
        });
  }
};

template <typename T>
class AvgPoolGradKernel : public PoolKernelBase<T> {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    sdk::Tensor sizes = ctx.input(0), grad = ctx.input(1);
    if (sizes.rank() != 1 || sizes.num_elements() != 4)
      return sdk::InvalidArgument("orig_input_shape must be a vector of 4 elements, got shape ",
                                  ShapeStr(sizes.shape()));
    sdk::Shape input_shape(sizes.data<int32_t>(), sizes.data<int32_t>() + 4);
    for (int64_t d : input_shape)
      if (d < 0) return sdk::InvalidArgument("orig_input_shape has a negative dimension");
    PoolGeometry g;
    CFX_SDK_RETURN_IF_ERROR(MakeGeometry(this->attrs_, input_shape, &g));
    if (grad.shape() != g.output())
      return sdk::InvalidArgument("grad has shape ", ShapeStr(grad.shape()), " but pooling ",
                                  ShapeStr(input_shape), " gives ", ShapeStr(g.output()));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, input_shape));
    const T* dy = grad.data<T>();
    T* dx = out.data<T>();
    const int64_t c = g.c;
    ForEachImage(ctx, g, out, [&](int64_t i) {
      const T* gi = dy + i * g.h.out * g.w.out * c;
      T* di = dx + i * g.h.in * g.w.in * c;
      std::fill_n(di, g.h.in * g.w.in * c, T(0));
      for (int64_t oh = 0; oh < g.h.out; ++oh)
        for (int64_t ow = 0; ow < g.w.out; ++ow, gi += c) {
          const Window win = WindowAt(g, oh, ow);
          const T scale = T(1) / static_cast<T>((win.h1 - win.h0) * (win.w1 - win.w0));
          for (int64_t ih = win.h0; ih < win.h1; ++ih)
            for (int64_t iw = win.w0; iw < win.w1; ++iw) {
              T* p = di + (ih * g.w.in + iw) * c;
              for (int64_t k = 0; k < c; ++k) p[k] += gi[k] * scale;
            }
        }
    });
    return sdk::Status();
  }
};

// ---- Shape functions.

sdk::Status PoolOutputShape(sdk::ShapeContext& c, const sdk::PartialShape& input) {
  PoolAttrs a;
  CFX_SDK_RETURN_IF_ERROR(ReadPoolAttrs(c.attrs(), &a));
  sdk::PartialShape in;
  CFX_SDK_RETURN_IF_ERROR(WithRank(input, 4, "input", &in));
  WindowDim h, w;
  CFX_SDK_RETURN_IF_ERROR(ComputeWindows(a.window, in.dims[1], in.dims[2], a.kernel_h, a.kernel_w,
                                         &h, &w));
  c.set_output(0, KnownShape({in.dims[0], h.out, w.out, in.dims[3]}));
  return sdk::Status();
}

sdk::Status PoolShape(sdk::ShapeContext& c) { return PoolOutputShape(c, c.input(0)); }

sdk::Status MaxPoolGradShape(sdk::ShapeContext& c) {
  sdk::PartialShape in;
  CFX_SDK_RETURN_IF_ERROR(WithRank(c.input(0), 4, "orig_input", &in));
  c.set_output(0, in);
  return sdk::Status();
}

sdk::Status AvgPoolGradShape(sdk::ShapeContext& c) {
  sdk::Tensor t = c.input_tensor(0);
  if (t.valid() && t.num_elements() == 4) {
    c.set_output(0, KnownShape(sdk::Shape(t.data<int32_t>(), t.data<int32_t>() + 4)));
  } else {
    c.set_output(0, UnknownDims(4));
  }
  return sdk::Status();
}

// The window attrs of each op, TensorFlow's: max pooling also takes padding EXPLICIT.
void WindowAttrsSpec(sdk::OpBuilder& b, bool explicit_padding) {
  b.Attr("ksize: list(int) >= 4").Attr("strides: list(int) >= 4");
  if (explicit_padding) {
    b.Attr("padding: {'SAME', 'VALID', 'EXPLICIT'}").Attr("explicit_paddings: list(int) = []");
  } else {
    b.Attr("padding: {'SAME', 'VALID'}");
  }
}

template <template <typename> class K>
void RegisterPoolKernel(sdk::Plugin& p, const char* op, const char* host_arg = nullptr) {
  auto one = [&](auto tag) {
    using T = decltype(tag);
    // The builder registers when its full expression ends: configure it in one expression.
    if (host_arg != nullptr) {
      p.Kernel<K<T>>(op, "CPU").template TypeConstraint<T>("T").HostMemory(host_arg);
    } else {
      p.Kernel<K<T>>(op, "CPU").template TypeConstraint<T>("T");
    }
  };
  one(float());
  one(double());
}

}  // namespace

void RegisterPoolOps(sdk::Plugin& p) {
  {
    sdk::OpBuilder b = p.Op("MaxPool");
    b.Input("input: T")
        .Output("output: T")
        .Attr("T: {half, bfloat16, float, double, int32, int64, uint8, int16, int8, uint16, "
              "qint8} = DT_FLOAT");
    WindowAttrsSpec(b, true);
    b.Attr("data_format: {'NHWC', 'NCHW', 'NCHW_VECT_C'} = 'NHWC'").ShapeFn<&PoolShape>();
  }
  {
    sdk::OpBuilder b = p.Op("MaxPoolGrad");
    b.Input("orig_input: T").Input("orig_output: T").Input("grad: T").Output("output: T");
    WindowAttrsSpec(b, true);
    b.Attr("data_format: {'NHWC', 'NCHW'} = 'NHWC'")
        .Attr("T: realnumbertype = DT_FLOAT")
        .ShapeFn<&MaxPoolGradShape>();
  }
  {
    sdk::OpBuilder b = p.Op("AvgPool");
    b.Input("value: T").Output("output: T");
    WindowAttrsSpec(b, false);
    b.Attr("data_format: {'NHWC', 'NCHW'} = 'NHWC'")
        .Attr("T: {half, bfloat16, float, double}")
        .ShapeFn<&PoolShape>();
  }
  {
    sdk::OpBuilder b = p.Op("AvgPoolGrad");
    b.Input("orig_input_shape: int32").Input("grad: T").Output("output: T");
    WindowAttrsSpec(b, false);
    b.Attr("data_format: {'NHWC', 'NCHW'} = 'NHWC'")
        .Attr("T: {half, bfloat16, float, double}")
        .ShapeFn<&AvgPoolGradShape>();
  }
  RegisterPoolKernel<MaxPoolKernel>(p, "MaxPool");
  RegisterPoolKernel<MaxPoolGradKernel>(p, "MaxPoolGrad");
  RegisterPoolKernel<AvgPoolKernel>(p, "AvgPool");
  RegisterPoolKernel<AvgPoolGradKernel>(p, "AvgPoolGrad", "orig_input_shape");
}

}  // namespace cfx::nn
