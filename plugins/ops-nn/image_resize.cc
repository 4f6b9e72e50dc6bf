// Image resizing (NHWC): ResizeBilinear, ResizeNearestNeighbor, ResizeBicubic, ResizeArea and
// ScaleAndTranslate for images of every real dtype, and the gradients ResizeBilinearGrad,
// ResizeNearestNeighborGrad, ResizeBicubicGrad and ScaleAndTranslateGrad, with TensorFlow's op
// definitions.
//
// The arithmetic is TensorFlow's, step for step, so that results match its CPU kernels bit for
// bit: sampling positions in float (`half_pixel_centers` samples at (i + 0.5) * scale - 0.5, the
// nearest-neighbour rule at (i + 0.5) * scale; `align_corners` scales by (in - 1) / (out - 1)),
// pixel values widened to float (also double ones), bilinear as two horizontal lerps and a
// vertical one, bicubic from TensorFlow's 1025-entry coefficient table (Keys' a = -0.5 with
// half-pixel centers and taps outside the image dropped and the rest renormalised; a = -0.75 and
// clamped taps otherwise), area as the box-weighted sum of the covered input cells,
// ScaleAndTranslate as TensorFlow's separable spans of its eight sampling kernels (rows first,
// then columns; a downscale with antialias widens the kernel by 1 / scale). The
// gradients scatter each incoming gradient onto the input pixels it came from, in TensorFlow's
// order (ResizeNearestNeighborGrad rounds half and bfloat16 after every addition, as TensorFlow's
// does; ResizeBilinearGrad sums them in float and rounds once).
//
// Work: forward ops split output rows over the intra-op pool; gradients split images (the order
// of additions into each input pixel stays TensorFlow's).
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "conflux/sdk/float16.h"
#include "conflux/sdk/wrapping_arithmetic.h"
#include "nn_ops.h"
#include "partial_shapes.h"

namespace cfx::nn {
namespace {

using shape_rules::ShapeStr;

template <typename T>
using Native = sdk::NativeElement<T>;

// ---- Attrs and geometry.

struct ResizeAttrs {
  bool align_corners = false;
  bool half_pixel_centers = false;
};

sdk::Status ReadResizeAttrs(const sdk::Attrs& attrs, bool has_half_pixel, ResizeAttrs* a) {
  CFX_SDK_RETURN_IF_ERROR(attrs.Get("align_corners", &a->align_corners));
  if (!has_half_pixel) return sdk::Status();
  CFX_SDK_RETURN_IF_ERROR(attrs.Get("half_pixel_centers", &a->half_pixel_centers));
  if (a->align_corners && a->half_pixel_centers)
    return sdk::InvalidArgument(
        "attrs align_corners and half_pixel_centers are both true; half_pixel_centers requires "
        "align_corners = false");
  return sdk::Status();
}

// TensorFlow's CalculateResizeScale: how many input pixels one output pixel spans.
float ResizeScale(int64_t in, int64_t out, bool align_corners) {
  return (align_corners && out > 1) ? static_cast<float>(in - 1) / static_cast<float>(out - 1)
                                    : static_cast<float>(in) / static_cast<float>(out);
}

// The position in the input that output pixel i samples.
float Sample(int64_t i, float scale, bool half_pixel_centers) {
  return half_pixel_centers ? (static_cast<float>(i) + 0.5f) * scale - 0.5f
                            : static_cast<float>(i) * scale;
}

// A resize between a large image [batch, in_h, in_w, channels] and a small one
// [batch, out_h, out_w, channels]: the input and output of a forward op, or the output and the
// incoming gradient of a gradient op. Scales map small-image pixels into the large image.
struct ResizeGeometry {
  int64_t batch = 0, in_h = 0, in_w = 0, channels = 0, out_h = 0, out_w = 0;
  float h_scale = 0, w_scale = 0;
  sdk::Shape in_shape() const { return {batch, in_h, in_w, channels}; }
  sdk::Shape out_shape() const { return {batch, out_h, out_w, channels}; }
};

constexpr int64_t kMaxSide = std::numeric_limits<int32_t>::max();

// The two positive sides that the int32 vector `size` holds.
sdk::Status ReadSize(const sdk::Tensor& size, const char* what, int64_t* h, int64_t* w) {
  if (size.dtype() != CFX_INT32 || size.shape() != sdk::Shape{2})
    return sdk::InvalidArgument(what,
                                " must be an int32 vector of 2 elements (height, width), got ",
                                sdk::DTypeName(size.dtype()), " ", ShapeStr(size.shape()));
  const int32_t* v = size.data<int32_t>();
  if (v[0] <= 0 || v[1] <= 0)
    return sdk::InvalidArgument(what, " must hold two positive sides, got [", v[0], ", ", v[1],
                                "]");
  *h = v[0];
  *w = v[1];
  return sdk::Status();
}

// `image` (named `what`) is 4-D NHWC with positive sides that fit int32 and at least one channel.
sdk::Status ReadImage(const sdk::Shape& image, const char* what, ResizeGeometry* g) {
  if (image.size() != 4)
    return sdk::InvalidArgument(what, " must have rank 4 (NHWC), got shape ", ShapeStr(image));
  if (image[1] <= 0 || image[2] <= 0 || image[1] > kMaxSide || image[2] > kMaxSide)
    return sdk::InvalidArgument(what, " must have a height and width between 1 and 2^31 - 1, got ",
                                "shape ", ShapeStr(image));
  if (image[3] <= 0)
    return sdk::InvalidArgument(what, " must have at least one channel, got shape ",
                                ShapeStr(image));
  g->batch = image[0];
  g->in_h = image[1];
  g->in_w = image[2];
  g->channels = image[3];
  return sdk::Status();
}

sdk::Status CheckOutputFits(const ResizeGeometry& g) {
  int64_t n = 0;
  if (__builtin_mul_overflow(g.batch, g.out_h, &n) || __builtin_mul_overflow(n, g.out_w, &n) ||
      __builtin_mul_overflow(n, g.channels, &n))
    return sdk::InvalidArgument("the resized images ", ShapeStr(g.out_shape()),
                                " have more than 2^63 - 1 elements");
  return sdk::Status();
}

// A forward op's geometry from images (input 0) and size (input 1).
sdk::Status ForwardGeometry(sdk::KernelContext& ctx, bool align_corners, ResizeGeometry* g) {
  CFX_SDK_RETURN_IF_ERROR(ReadImage(ctx.input(0).shape(), "images", g));
  CFX_SDK_RETURN_IF_ERROR(ReadSize(ctx.input(1), "size", &g->out_h, &g->out_w));
  g->h_scale = ResizeScale(g->in_h, g->out_h, align_corners);
  g->w_scale = ResizeScale(g->in_w, g->out_w, align_corners);
  return CheckOutputFits(*g);
}

// A gradient op's geometry from grads (the small image) and the original image's shape.
sdk::Status GradientGeometry(const sdk::Shape& grads, const sdk::Shape& original,
                             bool align_corners, ResizeGeometry* g) {
  CFX_SDK_RETURN_IF_ERROR(ReadImage(original, "original_image", g));
  ResizeGeometry small;
  CFX_SDK_RETURN_IF_ERROR(ReadImage(grads, "grads", &small));
  if (small.batch != g->batch || small.channels != g->channels)
    return sdk::InvalidArgument("grads ", ShapeStr(grads), " and original_image ",
                                ShapeStr(original),
                                " must have the same batch size and number of channels");
  g->out_h = small.in_h;
  g->out_w = small.in_w;
  g->h_scale = ResizeScale(g->in_h, g->out_h, align_corners);
  g->w_scale = ResizeScale(g->in_w, g->out_w, align_corners);
  return sdk::Status();
}

// Runs fn(b, y) for every output row of every image on the intra-op pool.
template <typename Fn>
void ForEachRow(sdk::KernelContext& ctx, const ResizeGeometry& g, int64_t cost_per_row, Fn&& fn) {
  ctx.ParallelFor(g.batch * g.out_h, cost_per_row, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) fn(r / g.out_h, r % g.out_h);
  });
}

// Runs fn(b) for every image on the intra-op pool.
template <typename Fn>
void ForEachImage(sdk::KernelContext& ctx, const ResizeGeometry& g, Fn&& fn) {
  ctx.ParallelFor(g.batch, g.out_h * g.out_w * g.channels * 16, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) fn(b);
  });
}

template <typename E>
float ToFloat(typename E::Storage v) {
  return static_cast<float>(E::Load(v));
}

// The attrs every resize kernel reads (half_pixel_centers where the op has it).
template <bool kHalfPixelAttr = true>
class ResizeKernelBase {
 public:
  sdk::Status Init(const sdk::KernelInit& init) {
    return ReadResizeAttrs(init.attrs(), kHalfPixelAttr, &attrs_);
  }

 protected:
  ResizeAttrs attrs_;
};

// A forward op's geometry and its output, allocated.
sdk::Result<sdk::Tensor> AllocateResized(sdk::KernelContext& ctx, const ResizeAttrs& a,
                                         ResizeGeometry* g) {
  CFX_SDK_RETURN_IF_ERROR(ForwardGeometry(ctx, a.align_corners, g));
  return ctx.AllocateOutput(0, g->out_shape());
}

// A gradient op's geometry and its output (the original image's shape), allocated.
sdk::Result<sdk::Tensor> AllocateGradient(sdk::KernelContext& ctx, const sdk::Shape& grads,
                                          const sdk::Shape& original, bool align_corners,
                                          ResizeGeometry* g) {
  CFX_SDK_RETURN_IF_ERROR(GradientGeometry(grads, original, align_corners, g));
  return ctx.AllocateOutput(0, g->in_shape());
}

// ---- Bilinear.

struct Lerp {
  int64_t lower, upper;
  float lerp;
};

// TensorFlow's compute_interpolation_weights: per output pixel, the two input pixels around its
// sample and the weight of the upper one.
std::vector<Lerp> LerpWeights(int64_t out, int64_t in, float scale, bool half_pixel_centers) {
  std::vector<Lerp> w(static_cast<size_t>(out));
  for (int64_t i = 0; i < out; ++i) {
    const float pos = Sample(i, scale, half_pixel_centers);
    const float floor = std::floor(pos);
    w[i].lower = std::max<int64_t>(static_cast<int64_t>(floor), 0);
    w[i].upper = std::min<int64_t>(static_cast<int64_t>(std::ceil(pos)), in - 1);
    w[i].lerp = pos - floor;
  }
  return w;
}

template <typename E>
class ResizeBilinearKernel : public ResizeKernelBase<true> {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    using S = typename E::Storage;
    ResizeGeometry g;
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, AllocateResized(ctx, attrs_, &g));
    if (out.num_elements() == 0) return sdk::Status();
    const std::vector<Lerp> ys = LerpWeights(g.out_h, g.in_h, g.h_scale, attrs_.half_pixel_centers);
    const std::vector<Lerp> xs = LerpWeights(g.out_w, g.in_w, g.w_scale, attrs_.half_pixel_centers);
    const S* x = ctx.input(0).data<S>();
    float* y = out.data<float>();
    const int64_t c = g.channels;
    ForEachRow(ctx, g, g.out_w * c * 8, [&](int64_t b, int64_t oy) {
      const Lerp& ly = ys[oy];
      const S* top = x + (b * g.in_h + ly.lower) * g.in_w * c;
      const S* bottom = x + (b * g.in_h + ly.upper) * g.in_w * c;
      float* o = y + (b * g.out_h + oy) * g.out_w * c;
      for (int64_t ox = 0; ox < g.out_w; ++ox, o += c) {
        const Lerp& lx = xs[ox];
        const S* tl = top + lx.lower * c;
        const S* tr = top + lx.upper * c;
        const S* bl = bottom + lx.lower * c;
        const S* br = bottom + lx.upper * c;
        for (int64_t k = 0; k < c; ++k) {
          const float t = ToFloat<E>(tl[k]) + (ToFloat<E>(tr[k]) - ToFloat<E>(tl[k])) * lx.lerp;
          const float d = ToFloat<E>(bl[k]) + (ToFloat<E>(br[k]) - ToFloat<E>(bl[k])) * lx.lerp;
          o[k] = t + (d - t) * ly.lerp;
        }
      }
    });
    return sdk::Status();
  }
};

template <typename E>
class ResizeBilinearGradKernel : public ResizeKernelBase<true> {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    using S = typename E::Storage;
    sdk::Tensor grads = ctx.input(0);
    ResizeGeometry g;
    CFX_SDK_ASSIGN_OR_RETURN(
        sdk::Tensor out,
        AllocateGradient(ctx, grads.shape(), ctx.input(1).shape(), attrs_.align_corners, &g));
    if (out.num_elements() == 0) return sdk::Status();
    const std::vector<Lerp> ys = LerpWeights(g.out_h, g.in_h, g.h_scale, attrs_.half_pixel_centers);
    const std::vector<Lerp> xs = LerpWeights(g.out_w, g.in_w, g.w_scale, attrs_.half_pixel_centers);
    const float* dy = grads.data<float>();
    S* dx = out.data<S>();
    const int64_t c = g.channels;
    const int64_t pixels = g.in_h * g.in_w * c;
    ForEachImage(ctx, g, [&](int64_t b) {
      // Sums in the compute type (float for half and bfloat16, rounded once at the end, as
      // TensorFlow's kernel does), each product converted to it.
      using A = typename E::Acc;
      std::vector<A> narrow;
      A* img;
      if constexpr (std::is_same_v<A, S>) {
        img = dx + b * pixels;
      } else {
        narrow.resize(static_cast<size_t>(pixels));
        img = narrow.data();
      }
      std::fill_n(img, pixels, A(0));
      const float* gi = dy + b * g.out_h * g.out_w * c;
      for (int64_t oy = 0; oy < g.out_h; ++oy) {
        const Lerp& ly = ys[oy];
        const float y1 = ly.lerp, y0 = 1.0f - ly.lerp;
        A* top = img + ly.lower * g.in_w * c;
        A* bottom = img + ly.upper * g.in_w * c;
        for (int64_t ox = 0; ox < g.out_w; ++ox, gi += c) {
          const Lerp& lx = xs[ox];
          const float x1 = lx.lerp, x0 = 1.0f - lx.lerp;
          for (int64_t k = 0; k < c; ++k) {
            const float v = gi[k];
            top[lx.lower * c + k] += static_cast<A>(v * y0 * x0);
            top[lx.upper * c + k] += static_cast<A>(v * y0 * x1);
            bottom[lx.lower * c + k] += static_cast<A>(v * y1 * x0);
            bottom[lx.upper * c + k] += static_cast<A>(v * y1 * x1);
          }
        }
      }
      if constexpr (!std::is_same_v<A, S>)
        for (int64_t i = 0; i < pixels; ++i) dx[b * pixels + i] = E::Store(img[i]);
    });
    return sdk::Status();
  }
};

// ---- Nearest neighbour.

// Per small-image pixel, the large-image pixel it maps to (TensorFlow's rule: round with
// align_corners, else floor; the half-pixel sample is (i + 0.5) * scale).
std::vector<int64_t> NearestIndices(int64_t small, int64_t large, float scale,
                                    const ResizeAttrs& a) {
  std::vector<int64_t> idx(static_cast<size_t>(small));
  for (int64_t i = 0; i < small; ++i) {
    const float pos = a.half_pixel_centers ? (static_cast<float>(i) + 0.5f) * scale
                                           : static_cast<float>(i) * scale;
    int64_t j = std::min<int64_t>(
        static_cast<int64_t>(a.align_corners ? std::round(pos) : std::floor(pos)), large - 1);
    if (a.half_pixel_centers) j = std::max<int64_t>(j, 0);
    idx[i] = j;
  }
  return idx;
}

template <typename E>
class ResizeNearestNeighborKernel : public ResizeKernelBase<true> {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    using S = typename E::Storage;
    ResizeGeometry g;
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, AllocateResized(ctx, attrs_, &g));
    if (out.num_elements() == 0) return sdk::Status();
    const std::vector<int64_t> ys = NearestIndices(g.out_h, g.in_h, g.h_scale, attrs_);
    const std::vector<int64_t> xs = NearestIndices(g.out_w, g.in_w, g.w_scale, attrs_);
    const S* x = ctx.input(0).data<S>();
    S* y = out.data<S>();
    const int64_t c = g.channels;
    ForEachRow(ctx, g, g.out_w * c, [&](int64_t b, int64_t oy) {
      const S* row = x + (b * g.in_h + ys[oy]) * g.in_w * c;
      S* o = y + (b * g.out_h + oy) * g.out_w * c;
      for (int64_t ox = 0; ox < g.out_w; ++ox, o += c) std::copy_n(row + xs[ox] * c, c, o);
    });
    return sdk::Status();
  }
};

// grads [batch, h, w, channels] and size (the original image's sides) -> the original image's
// gradient: each incoming gradient added to the pixel the forward op copied it from.
template <typename E>
class ResizeNearestNeighborGradKernel : public ResizeKernelBase<true> {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    using S = typename E::Storage;
    sdk::Tensor grads = ctx.input(0);
    int64_t h = 0, w = 0;
    CFX_SDK_RETURN_IF_ERROR(ReadSize(ctx.input(1), "size", &h, &w));
    const sdk::Shape& gs = grads.shape();
    if (gs.size() != 4)
      return sdk::InvalidArgument("grads must have rank 4 (NHWC), got shape ", ShapeStr(gs));
    ResizeGeometry g;
    CFX_SDK_ASSIGN_OR_RETURN(
        sdk::Tensor out, AllocateGradient(ctx, gs, {gs[0], h, w, gs[3]}, attrs_.align_corners, &g));
    if (out.num_elements() == 0) return sdk::Status();
    const std::vector<int64_t> ys = NearestIndices(g.out_h, g.in_h, g.h_scale, attrs_);
    const std::vector<int64_t> xs = NearestIndices(g.out_w, g.in_w, g.w_scale, attrs_);
    const S* dy = grads.data<S>();
    S* dx = out.data<S>();
    const int64_t c = g.channels;
    ForEachImage(ctx, g, [&](int64_t b) {
      S* img = dx + b * g.in_h * g.in_w * c;
      std::fill_n(img, g.in_h * g.in_w * c, E::Store(0));
      const S* gi = dy + b * g.out_h * g.out_w * c;
      for (int64_t oy = 0; oy < g.out_h; ++oy)
        for (int64_t ox = 0; ox < g.out_w; ++ox, gi += c) {
          S* o = img + (ys[oy] * g.in_w + xs[ox]) * c;
          for (int64_t k = 0; k < c; ++k)
            o[k] = E::Store(sdk::WrappingAdd(E::Load(o[k]), E::Load(gi[k])));
        }
    });
    return sdk::Status();
  }
};

// ---- Bicubic.

constexpr int64_t kTableSize = 1 << 10;

// TensorFlow's InitCoeffsTable: Keys' cubic kernel with parameter a, sampled at i / kTableSize
// (entry 2i, the inner taps) and 1 + i / kTableSize (entry 2i + 1, the outer taps).
std::vector<float> CubicTable(double a) {
  std::vector<float> t(static_cast<size_t>((kTableSize + 1) * 2));
  for (int64_t i = 0; i <= kTableSize; ++i) {
    float x = static_cast<float>(static_cast<double>(i) * 1.0 / kTableSize);
    t[i * 2] = static_cast<float>(((a + 2) * x - (a + 3)) * x * x + 1);
    x += 1.0f;
    t[i * 2 + 1] = static_cast<float>(((a * x - 5 * a) * x + 8 * a) * x - 4 * a);
  }
  return t;
}

const std::vector<float>& CubicCoefficients(bool keys_cubic) {
  static const std::vector<float> keys = CubicTable(-0.5), legacy = CubicTable(-0.75);
  return keys_cubic ? keys : legacy;
}

struct CubicTaps {
  int64_t index[4];
  float weight[4];
};

int64_t Bound(int64_t v, int64_t limit) { return std::min(limit - 1, std::max<int64_t>(0, v)); }

// TensorFlow's GetWeightsAndIndices for every small-image pixel.
std::vector<CubicTaps> CubicWeights(int64_t small, int64_t large, float scale,
                                    bool half_pixel_centers) {
  const std::vector<float>& table = CubicCoefficients(half_pixel_centers);
  std::vector<CubicTaps> taps(static_cast<size_t>(small));
  for (int64_t i = 0; i < small; ++i) {
    const float pos = Sample(i, scale, half_pixel_centers);
    const int64_t at = static_cast<int64_t>(std::floor(pos));
    const float delta = pos - static_cast<float>(at);
    const int64_t offset = std::lrint(delta * static_cast<float>(kTableSize));
    const float w[4] = {table[offset * 2 + 1], table[offset * 2], table[(kTableSize - offset) * 2],
                        table[(kTableSize - offset) * 2 + 1]};
    CubicTaps& t = taps[i];
    for (int k = 0; k < 4; ++k) {
      t.index[k] = Bound(at - 1 + k, large);
      // Keys' variant drops taps outside the image; the legacy one repeats the edge pixel.
      t.weight[k] = (!half_pixel_centers || t.index[k] == at - 1 + k) ? w[k] : 0.0f;
    }
    if (half_pixel_centers) {
      const float sum = t.weight[0] + t.weight[1] + t.weight[2] + t.weight[3];
      if (std::abs(sum) >= 1000.0f * std::numeric_limits<float>::min()) {
        const float inv = 1.0f / sum;
        for (float& wk : t.weight) wk *= inv;
      }
    }
  }
  return taps;
}

float Cubic(const float v[4], const float w[4]) {
  return v[0] * w[0] + v[1] * w[1] + v[2] * w[2] + v[3] * w[3];
}

template <typename E>
class ResizeBicubicKernel : public ResizeKernelBase<true> {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    using S = typename E::Storage;
    ResizeGeometry g;
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, AllocateResized(ctx, attrs_, &g));
    if (out.num_elements() == 0) return sdk::Status();
    const std::vector<CubicTaps> ys =
        CubicWeights(g.out_h, g.in_h, g.h_scale, attrs_.half_pixel_centers);
    const std::vector<CubicTaps> xs =
        CubicWeights(g.out_w, g.in_w, g.w_scale, attrs_.half_pixel_centers);
    const S* x = ctx.input(0).data<S>();
    float* y = out.data<float>();
    const int64_t c = g.channels;
    ForEachRow(ctx, g, (g.in_w + g.out_w) * c * 8, [&](int64_t b, int64_t oy) {
      const CubicTaps& ty = ys[oy];
      const S* rows[4];
      for (int k = 0; k < 4; ++k) rows[k] = x + (b * g.in_h + ty.index[k]) * g.in_w * c;
      // Vertically once per input column (TensorFlow's per-tap values, computed once instead of
      // for each output pixel that reads them), then across each output pixel's four columns.
      std::vector<float> columns(static_cast<size_t>(g.in_w * c));
      for (int64_t at = 0; at < g.in_w * c; ++at) {
        const float v[4] = {ToFloat<E>(rows[0][at]), ToFloat<E>(rows[1][at]),
                            ToFloat<E>(rows[2][at]), ToFloat<E>(rows[3][at])};
        columns[at] = Cubic(v, ty.weight);
      }
      float* o = y + (b * g.out_h + oy) * g.out_w * c;
      for (int64_t ox = 0; ox < g.out_w; ++ox, o += c) {
        const CubicTaps& tx = xs[ox];
        const float* col[4] = {&columns[tx.index[0] * c], &columns[tx.index[1] * c],
                               &columns[tx.index[2] * c], &columns[tx.index[3] * c]};
        for (int64_t k = 0; k < c; ++k) {
          const float v[4] = {col[0][k], col[1][k], col[2][k], col[3][k]};
          o[k] = Cubic(v, tx.weight);
        }
      }
    });
    return sdk::Status();
  }
};

// float or double: each incoming gradient times the 16 tap weights, in the image's dtype.
template <typename E>
class ResizeBicubicGradKernel : public ResizeKernelBase<true> {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    using T = typename E::Storage;
    sdk::Tensor grads = ctx.input(0);
    ResizeGeometry g;
    CFX_SDK_ASSIGN_OR_RETURN(
        sdk::Tensor out,
        AllocateGradient(ctx, grads.shape(), ctx.input(1).shape(), attrs_.align_corners, &g));
    if (out.num_elements() == 0) return sdk::Status();
    const std::vector<CubicTaps> ys =
        CubicWeights(g.out_h, g.in_h, g.h_scale, attrs_.half_pixel_centers);
    const std::vector<CubicTaps> xs =
        CubicWeights(g.out_w, g.in_w, g.w_scale, attrs_.half_pixel_centers);
    const float* dy = grads.data<float>();
    T* dx = out.data<T>();
    const int64_t c = g.channels;
    ForEachImage(ctx, g, [&](int64_t b) {
      T* img = dx + b * g.in_h * g.in_w * c;
      std::fill_n(img, g.in_h * g.in_w * c, T(0));
      const float* gi = dy + b * g.out_h * g.out_w * c;
      for (int64_t oy = 0; oy < g.out_h; ++oy) {
        const CubicTaps& ty = ys[oy];
        for (int64_t ox = 0; ox < g.out_w; ++ox, gi += c) {
          const CubicTaps& tx = xs[ox];
          for (int64_t k = 0; k < c; ++k) {
            const T v = static_cast<T>(gi[k]);
            for (int i = 0; i < 4; ++i)
              for (int j = 0; j < 4; ++j)
                img[(ty.index[i] * g.in_w + tx.index[j]) * c + k] +=
                    v * static_cast<T>(ty.weight[i]) * static_cast<T>(tx.weight[j]);
          }
        }
      }
    });
    return sdk::Status();
  }
};

// ---- Area.

// The input cells [start, end) that output pixel i covers, with the covered fractions of the
// first and the last.
struct AreaSpan {
  float lo, hi;  // [i * scale, (i + 1) * scale), in input cells
  int64_t start, end;
  float start_scale, end_scale;
};

// The covered fraction of cell v of the span [lo, hi) (TensorFlow's expression).
float Covered(int64_t v, float lo, float hi, float scale) {
  const float vf = static_cast<float>(v), next = static_cast<float>(v + 1);
  if (vf < lo) return next > hi ? scale : next - lo;
  return next > hi ? hi - vf : 1.0f;
}

AreaSpan Span(int64_t i, float scale) {
  AreaSpan s;
  s.lo = static_cast<float>(i) * scale;
  s.hi = static_cast<float>(i + 1) * scale;
  s.start = static_cast<int64_t>(std::floor(s.lo));
  s.end = static_cast<int64_t>(std::ceil(s.hi));
  s.start_scale = Covered(s.start, s.lo, s.hi, scale);
  s.end_scale = Covered(s.end - 1, s.lo, s.hi, scale);
  return s;
}

template <typename E>
class ResizeAreaKernel : public ResizeKernelBase<false> {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    using S = typename E::Storage;
    ResizeGeometry g;
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, AllocateResized(ctx, attrs_, &g));
    if (out.num_elements() == 0) return sdk::Status();
    std::vector<AreaSpan> xs(static_cast<size_t>(g.out_w));
    for (int64_t i = 0; i < g.out_w; ++i) xs[i] = Span(i, g.w_scale);
    const float scale = static_cast<float>(1.0 / (g.h_scale * g.w_scale));
    const S* x = ctx.input(0).data<S>();
    float* y = out.data<float>();
    const int64_t c = g.channels;
    const int64_t cells = static_cast<int64_t>(std::ceil(g.h_scale) + 1) *
                          static_cast<int64_t>(std::ceil(g.w_scale) + 1);
    ForEachRow(ctx, g, g.out_w * c * std::min<int64_t>(cells, 1 << 20), [&](int64_t b, int64_t oy) {
      const AreaSpan sy = Span(oy, g.h_scale);
      // Per channel in TensorFlow's order (each covered row across, then down), with the
      // channels as the inner loop.
      std::vector<float> sum(static_cast<size_t>(c)), across(static_cast<size_t>(c));
      float* o = y + (b * g.out_h + oy) * g.out_w * c;
      for (int64_t ox = 0; ox < g.out_w; ++ox, o += c) {
        const AreaSpan& sx = xs[ox];
        std::fill(sum.begin(), sum.end(), 0.0f);
        for (int64_t iy = sy.start; iy < sy.end; ++iy) {
          const S* row = x + (b * g.in_h + Bound(iy, g.in_h)) * g.in_w * c;
          const S* first = row + Bound(sx.start, g.in_w) * c;
          for (int64_t k = 0; k < c; ++k) across[k] = ToFloat<E>(first[k]) * sx.start_scale;
          if (sx.start + 1 != sx.end) {
            for (int64_t ix = sx.start + 1; ix < sx.end - 1; ++ix) {
              const S* p = row + Bound(ix, g.in_w) * c;
              for (int64_t k = 0; k < c; ++k) across[k] += ToFloat<E>(p[k]);
            }
            const S* last = row + Bound(sx.end - 1, g.in_w) * c;
            for (int64_t k = 0; k < c; ++k) across[k] += ToFloat<E>(last[k]) * sx.end_scale;
          }
          const float sy_scale = Covered(iy, sy.lo, sy.hi, g.h_scale);
          for (int64_t k = 0; k < c; ++k) sum[k] += across[k] * sy_scale;
        }
        for (int64_t k = 0; k < c; ++k) o[k] = sum[k] * scale;
      }
    });
    return sdk::Status();
  }
};

// ---- Scale and translate: separable sampling kernels (tf.image.resize with antialias or the
// lanczos, gaussian and mitchellcubic methods, tf.raw_ops.ScaleAndTranslate).

// TensorFlow's sampling kernels (sampling_kernels.h): the weight at distance x >= 0, and the
// radius beyond which it is 0.
struct SamplingKernel {
  enum Kind { kLanczos, kGaussian, kBox, kTriangle, kKeysCubic, kMitchellCubic } kind;
  float radius;

  float operator()(float x) const {
    x = std::abs(x);
    switch (kind) {
      case kLanczos: {
        constexpr float kPi = 3.14159265359f;
        if (x > radius) return 0.0f;
        if (x <= 1e-3f) return 1.0f;  // the limit of sin(x) / x at 0
        return radius * std::sin(kPi * x) * std::sin(kPi * x / radius) / (kPi * kPi * x * x);
      }
      case kGaussian: {
        const float sigma = radius / 3.0f;
        if (x >= radius) return 0.0f;
        return static_cast<float>(std::exp(-x * x / (2.0 * sigma * sigma)));
      }
      case kBox:
        return x < 0.5f ? 1.0f : (x == 0.5f ? 0.5f : 0.0f);
      case kTriangle:
        return x < 1.0f ? 1.0f - x : 0.0f;
      case kKeysCubic:
        if (x >= 2.0f) return 0.0f;
        if (x >= 1.0f) return ((-0.5f * x + 2.5f) * x - 4.0f) * x + 2.0f;
        return ((1.5f * x - 2.5f) * x) * x + 1.0f;
      case kMitchellCubic:
        if (x >= 2.0f) return 0.0f;
        if (x >= 1.0f) return (((-7.0f / 18.0f) * x + 2.0f) * x - 10.0f / 3.0f) * x + 16.0f / 9.0f;
        return (((7.0f / 6.0f) * x - 2.0f) * x) * x + 8.0f / 9.0f;
    }
    return 0.0f;
  }
};

sdk::Status ReadSamplingKernel(const sdk::Attrs& attrs, SamplingKernel* k, bool* antialias) {
  std::string type;
  CFX_SDK_RETURN_IF_ERROR(attrs.Get("kernel_type", &type));
  CFX_SDK_RETURN_IF_ERROR(attrs.Get("antialias", antialias));
  static const struct {
    const char* name;
    SamplingKernel kernel;
  } kKernels[] = {{"lanczos1", {SamplingKernel::kLanczos, 1.0f}},
                  {"lanczos3", {SamplingKernel::kLanczos, 3.0f}},
                  {"lanczos5", {SamplingKernel::kLanczos, 5.0f}},
                  {"gaussian", {SamplingKernel::kGaussian, 1.5f}},
                  {"box", {SamplingKernel::kBox, 1.0f}},
                  {"triangle", {SamplingKernel::kTriangle, 1.0f}},
                  {"keyscubic", {SamplingKernel::kKeysCubic, 2.0f}},
                  {"mitchellcubic", {SamplingKernel::kMitchellCubic, 2.0f}}};
  for (const auto& e : kKernels)
    if (type == e.name) {
      *k = e.kernel;
      return sdk::Status();
    }
  return sdk::InvalidArgument("attr kernel_type is '", type,
                              "'; expected lanczos1, lanczos3, lanczos5, gaussian, box, "
                              "triangle, keyscubic or mitchellcubic");
}

// Per output pixel, the run of `size` input pixels from `starts[i]` it is the weighted sum of
// (weights[i * size ...], zero past the input's end and for samples outside the input).
struct Spans {
  int64_t size = 0;
  std::vector<int64_t> starts;
  std::vector<float> weights;
};

// The integral float v clamped to [0, n - 1] (before the conversion, which would overflow).
int64_t ClampToIndex(float v, int64_t n) {
  if (!(v > 0)) return 0;
  if (static_cast<double>(v) >= static_cast<double>(n - 1)) return n - 1;
  return static_cast<int64_t>(v);
}

// TensorFlow's ComputeSpansCore: the kernel centred at each output pixel's sample, widened by
// 1 / scale when antialiasing a downscale, weights normalised to sum 1.
Spans ComputeSpans(const SamplingKernel& kernel, int64_t out, int64_t in, float scale,
                   float translate, bool antialias) {
  const float inv_scale = static_cast<float>(1.0 / scale);
  const float inv_translate = -inv_scale * translate;
  const float kernel_scale = antialias ? std::max(inv_scale, 1.0f) : 1.0f;
  const float reach = kernel.radius * kernel_scale;
  Spans s;
  // A tiny scale makes the reach larger than any image: compare before converting.
  s.size = static_cast<double>(reach) >= static_cast<double>(in)
               ? in
               : std::min<int64_t>(2 * static_cast<int64_t>(std::ceil(reach)) + 1, in);
  s.starts.assign(static_cast<size_t>(out), 0);
  s.weights.assign(static_cast<size_t>(out * s.size), 0.0f);
  const float one_over_kernel_scale = 1.0f / kernel_scale;
  std::vector<float> w;
  for (int64_t i = 0; i < out; ++i) {
    const float sample = (static_cast<float>(i) + 0.5f) * inv_scale + inv_translate;
    if (sample < 0 || sample > static_cast<float>(in)) continue;  // outside: an empty span
    const int64_t start = ClampToIndex(std::ceil(sample - reach - 0.5f), in);
    const int64_t end = ClampToIndex(std::floor(sample + reach - 0.5f), in) + 1;
    float sum = 0.0f;
    w.clear();
    for (int64_t src = start; src < end; ++src) {
      const float pos = static_cast<float>(src) + 0.5f - sample;
      w.push_back(kernel(std::abs(pos * one_over_kernel_scale)));
      sum += w.back();
    }
    if (std::abs(sum) >= 1000.0f * std::numeric_limits<float>::min()) {
      const float inv = 1.0f / sum;
      for (size_t j = 0; j < w.size(); ++j) s.weights[i * s.size + j] = w[j] * inv;
    }
    s.starts[i] = start;
  }
  return s;
}

// TensorFlow's ComputeGradSpansCore: the transposed spans, per input pixel the output pixels
// that sampled it.
Spans GradientSpans(const Spans& forward, int64_t out, int64_t in) {
  std::vector<std::vector<std::pair<int64_t, float>>> parts(static_cast<size_t>(in));
  for (int64_t o = 0; o < out; ++o)
    for (int64_t j = 0; j < forward.size; ++j) {
      const int64_t src = forward.starts[o] + j;
      const float w = forward.weights[o * forward.size + j];
      if (w != 0.0f && src < in) parts[src].push_back({o, w});
    }
  Spans g;
  for (const auto& p : parts)
    if (!p.empty()) g.size = std::max(g.size, p.back().first - p.front().first + 1);
  g.starts.assign(static_cast<size_t>(in), 0);
  g.weights.assign(static_cast<size_t>(in * g.size), 0.0f);
  for (int64_t i = 0; i < in; ++i) {
    if (parts[i].empty()) continue;
    g.starts[i] = parts[i].front().first;
    for (const auto& [o, w] : parts[i]) g.weights[i * g.size + o - g.starts[i]] += w;
  }
  return g;
}

// out[0, n) = sum over the span of weight * row, in TensorFlow's order (GatherRows and
// GatherColumns: AddScaledVector per tap).
template <typename E>
void AddScaled(const typename E::Storage* in, int64_t n, float weight, float* out) {
  for (int64_t k = 0; k < n; ++k) out[k] += weight * ToFloat<E>(in[k]);
}

// Samples [batch, in_h, in_w, channels] at `rows` then `cols` into [batch, rows, cols,
// channels] (TensorFlow's GatherSpans): rows first, one intermediate row per output row.
template <typename E>
void GatherSpans(sdk::KernelContext& ctx, const Spans& rows, const Spans& cols,
                 const typename E::Storage* x, int64_t batch, int64_t in_h, int64_t in_w,
                 int64_t channels, float* y) {
  const int64_t out_h = static_cast<int64_t>(rows.starts.size());
  const int64_t out_w = static_cast<int64_t>(cols.starts.size());
  const int64_t in_row = in_w * channels;
  ctx.ParallelFor(batch * out_h, (rows.size * in_w + cols.size * out_w) * channels * 2,
                  [&](int64_t begin, int64_t end) {
                    std::vector<float> mid(static_cast<size_t>(in_row));
                    for (int64_t r = begin; r < end; ++r) {
                      const int64_t b = r / out_h, oy = r % out_h;
                      std::fill(mid.begin(), mid.end(), 0.0f);
                      const int64_t start = rows.starts[oy];
                      const int64_t taps = std::min(start + rows.size, in_h) - start;
                      for (int64_t j = 0; j < taps; ++j)
                        AddScaled<E>(x + (b * in_h + start + j) * in_row, in_row,
                                     rows.weights[oy * rows.size + j], mid.data());
                      float* o = y + (b * out_h + oy) * out_w * channels;
                      for (int64_t ox = 0; ox < out_w; ++ox, o += channels) {
                        std::fill_n(o, channels, 0.0f);
                        const int64_t cs = cols.starts[ox];
                        const int64_t ctaps = std::min(cs + cols.size, in_w) - cs;
                        for (int64_t j = 0; j < ctaps; ++j)
                          AddScaled<Native<float>>(mid.data() + (cs + j) * channels, channels,
                                                   cols.weights[ox * cols.size + j], o);
                      }
                    }
                  });
}

// The two floats of `t` (input `what`: scale or translation).
sdk::Status ReadPair(const sdk::Tensor& t, const char* what, float* a, float* b) {
  if (t.dtype() != CFX_FLOAT || t.shape() != sdk::Shape{2})
    return sdk::InvalidArgument(what, " must be a float vector of 2 elements (rows, columns), got ",
                                sdk::DTypeName(t.dtype()), " ", ShapeStr(t.shape()));
  *a = t.data<float>()[0];
  *b = t.data<float>()[1];
  return sdk::Status();
}

sdk::Status ReadScaleAndTranslation(sdk::KernelContext& ctx, float scale[2], float shift[2]) {
  CFX_SDK_RETURN_IF_ERROR(ReadPair(ctx.input(2), "scale", &scale[0], &scale[1]));
  CFX_SDK_RETURN_IF_ERROR(ReadPair(ctx.input(3), "translation", &shift[0], &shift[1]));
  if (!(scale[0] > 0 && scale[1] > 0))
    return sdk::InvalidArgument("scale must be positive, got [", scale[0], ", ", scale[1], "]");
  return sdk::Status();
}

class ScaleAndTranslateBase {
 public:
  sdk::Status Init(const sdk::KernelInit& init) {
    return ReadSamplingKernel(init.attrs(), &kernel_, &antialias_);
  }

 protected:
  SamplingKernel kernel_{};
  bool antialias_ = true;
};

template <typename E>
class ScaleAndTranslateKernel : public ScaleAndTranslateBase {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    ResizeGeometry g;
    CFX_SDK_RETURN_IF_ERROR(ForwardGeometry(ctx, false, &g));
    float scale[2], shift[2];
    CFX_SDK_RETURN_IF_ERROR(ReadScaleAndTranslation(ctx, scale, shift));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, g.out_shape()));
    if (out.num_elements() == 0) return sdk::Status();
    const Spans rows = ComputeSpans(kernel_, g.out_h, g.in_h, scale[0], shift[0], antialias_);
    const Spans cols = ComputeSpans(kernel_, g.out_w, g.in_w, scale[1], shift[1], antialias_);
    GatherSpans<E>(ctx, rows, cols, ctx.input(0).data<typename E::Storage>(), g.batch, g.in_h,
                   g.in_w, g.channels, out.data<float>());
    return sdk::Status();
  }
};

// grads [batch, out_h, out_w, channels] -> the float image's gradient: the transposed spans.
template <typename>
class ScaleAndTranslateGradKernel : public ScaleAndTranslateBase {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    sdk::Tensor grads = ctx.input(0);
    ResizeGeometry g;
    CFX_SDK_RETURN_IF_ERROR(GradientGeometry(grads.shape(), ctx.input(1).shape(), false, &g));
    float scale[2], shift[2];
    CFX_SDK_RETURN_IF_ERROR(ReadScaleAndTranslation(ctx, scale, shift));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, g.in_shape()));
    if (out.num_elements() == 0) return sdk::Status();
    const Spans rows = GradientSpans(
        ComputeSpans(kernel_, g.out_h, g.in_h, scale[0], shift[0], antialias_), g.out_h, g.in_h);
    const Spans cols = GradientSpans(
        ComputeSpans(kernel_, g.out_w, g.in_w, scale[1], shift[1], antialias_), g.out_w, g.in_w);
    GatherSpans<Native<float>>(ctx, rows, cols, grads.data<float>(), g.batch, g.out_h, g.out_w,
                               g.channels, out.data<float>());
    return sdk::Status();
  }
};

// ---- Shape functions.

// [batch, size[0], size[1], channels]; the sides unknown unless `size` (input 1) is known.
sdk::Status ResizeShape(sdk::ShapeContext& c) {
  sdk::PartialShape in, size;
  CFX_SDK_RETURN_IF_ERROR(WithRank(c.input(0), 4, "images", &in));
  CFX_SDK_RETURN_IF_ERROR(WithRank(c.input(1), 1, "size", &size));
  if (size.dims[0] >= 0 && size.dims[0] != 2)
    return sdk::InvalidArgument("size must have 2 elements (height, width), got shape ",
                                ShapeStr(size.dims));
  int64_t h = sdk::kUnknown, w = sdk::kUnknown;
  sdk::Tensor t = c.input_tensor(1);
  if (t.valid() && t.dtype() == CFX_INT32 && t.num_elements() == 2) {
    const int32_t* v = t.data<int32_t>();
    if (v[0] < 0 || v[1] < 0)
      return sdk::InvalidArgument("size must hold two positive sides, got [", v[0], ", ", v[1],
                                  "]");
    h = v[0];
    w = v[1];
  }
  c.set_output(0, KnownShape({in.dims[0], h, w, in.dims[3]}));
  return sdk::Status();
}

// The gradient has original_image's shape (input 1).
sdk::Status OriginalImageShape(sdk::ShapeContext& c) {
  sdk::PartialShape grads, original;
  CFX_SDK_RETURN_IF_ERROR(WithRank(c.input(0), 4, "grads", &grads));
  CFX_SDK_RETURN_IF_ERROR(WithRank(c.input(1), 4, "original_image", &original));
  c.set_output(0, original);
  return sdk::Status();
}

// ---- Registration.

// The dtype whose elements E computes on.
template <typename E>
constexpr cfx_dtype kElementDType = sdk::kDType<typename E::Storage>;
template <>
constexpr cfx_dtype kElementDType<sdk::HalfElement> = CFX_HALF;
template <>
constexpr cfx_dtype kElementDType<sdk::Bfloat16Element> = CFX_BFLOAT16;

// Marks `args` host memory on `k`, a builder of the caller's full expression (it registers when
// that expression ends).
void HostMemory(sdk::KernelBuilder& k, std::initializer_list<const char*> args) {
  for (const char* arg : args) k.HostMemory(arg);
}

// Kernel K<E> of `op` on the CPU for each element type E, with `host_args` in host memory.
template <template <typename> class K, typename... E>
void AddKernels(sdk::Plugin& p, const char* op, std::initializer_list<const char*> host_args) {
  (HostMemory(p.Kernel<K<E>>(op, "CPU").TypeConstraint("T", kElementDType<E>), host_args), ...);
}

// The forward ops take every real dtype (half and bfloat16 included).
template <template <typename> class K>
void RegisterEveryRealType(sdk::Plugin& p, const char* op,
                           std::initializer_list<const char*> host_args) {
  AddKernels<K, Native<int8_t>, Native<uint8_t>, Native<int16_t>, Native<uint16_t>, Native<int32_t>,
             Native<int64_t>, sdk::HalfElement, sdk::Bfloat16Element, Native<float>,
             Native<double>>(p, op, host_args);
}

void ResizeOp(sdk::Plugin& p, const char* op, const char* types, const char* output_type,
              bool half_pixel_attr) {
  sdk::OpBuilder b = p.Op(op);
  b.Input("images: T")
      .Input("size: int32")
      .Output(output_type)
      .Attr(types)
      .Attr("align_corners: bool = false");
  if (half_pixel_attr) b.Attr("half_pixel_centers: bool = false");
  b.ShapeFn<&ResizeShape>();
}

}  // namespace

void RegisterImageResizeOps(sdk::Plugin& p) {
  constexpr const char* kAllTypes =
      "T: {int8, uint8, int16, uint16, int32, int64, half, float, double, bfloat16}";
  ResizeOp(p, "ResizeBilinear",
           "T: {int8, uint8, int16, uint16, int32, int64, bfloat16, half, float, double, "
           "bfloat16}",
           "resized_images: float", true);
  ResizeOp(p, "ResizeNearestNeighbor", kAllTypes, "resized_images: T", true);
  ResizeOp(p, "ResizeBicubic", kAllTypes, "resized_images: float", true);
  ResizeOp(p, "ResizeArea", kAllTypes, "resized_images: float", false);
  p.Op("ScaleAndTranslate")
      .Input("images: T")
      .Input("size: int32")
      .Input("scale: float")
      .Input("translation: float")
      .Output("resized_images: float")
      .Attr("T: {int8, uint8, int16, uint16, int32, int64, bfloat16, half, float, double}")
      .Attr("kernel_type: string = 'lanczos3'")
      .Attr("antialias: bool = true")
      .ShapeFn<&ResizeShape>();
  p.Op("ScaleAndTranslateGrad")
      .Input("grads: T")
      .Input("original_image: T")
      .Input("scale: float")
      .Input("translation: float")
      .Output("output: T")
      .Attr("T: {float}")
      .Attr("kernel_type: string = 'lanczos3'")
      .Attr("antialias: bool = true")
      .ShapeFn<&OriginalImageShape>();
  p.Op("ResizeBilinearGrad")
      .Input("grads: float")
      .Input("original_image: T")
      .Output("output: T")
      .Attr("T: {float, bfloat16, half, double}")
      .Attr("align_corners: bool = false")
      .Attr("half_pixel_centers: bool = false")
      .ShapeFn<&OriginalImageShape>();
  p.Op("ResizeNearestNeighborGrad")
      .Input("grads: T")
      .Input("size: int32")
      .Output("output: T")
      .Attr("T: {uint8, int8, int32, half, float, double, bfloat16}")
      .Attr("align_corners: bool = false")
      .Attr("half_pixel_centers: bool = false")
      .ShapeFn<&ResizeShape>();
  p.Op("ResizeBicubicGrad")
      .Input("grads: float")
      .Input("original_image: T")
      .Output("output: T")
      .Attr("T: {float, double}")
      .Attr("align_corners: bool = false")
      .Attr("half_pixel_centers: bool = false")
      .ShapeFn<&OriginalImageShape>();

  RegisterEveryRealType<ResizeBilinearKernel>(p, "ResizeBilinear", {"size"});
  RegisterEveryRealType<ResizeNearestNeighborKernel>(p, "ResizeNearestNeighbor", {"size"});
  RegisterEveryRealType<ResizeBicubicKernel>(p, "ResizeBicubic", {"size"});
  RegisterEveryRealType<ResizeAreaKernel>(p, "ResizeArea", {"size"});
  RegisterEveryRealType<ScaleAndTranslateKernel>(p, "ScaleAndTranslate",
                                                 {"size", "scale", "translation"});
  AddKernels<ScaleAndTranslateGradKernel, Native<float>>(p, "ScaleAndTranslateGrad",
                                                         {"scale", "translation"});
  AddKernels<ResizeBilinearGradKernel, Native<float>, Native<double>, sdk::HalfElement,
             sdk::Bfloat16Element>(p, "ResizeBilinearGrad", {});
  AddKernels<ResizeNearestNeighborGradKernel, Native<uint8_t>, Native<int8_t>, Native<int32_t>,
             sdk::HalfElement, sdk::Bfloat16Element, Native<float>, Native<double>>(
      p, "ResizeNearestNeighborGrad", {"size"});
  AddKernels<ResizeBicubicGradKernel, Native<float>, Native<double>>(p, "ResizeBicubicGrad", {});
}

}  // namespace cfx::nn
