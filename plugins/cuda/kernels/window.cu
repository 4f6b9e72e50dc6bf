// Device code of the window ops (window_launch.h): one thread per output element for the pools,
// one per input element for their gradients (a gather over the windows that hold it, in output
// order, so that the sums are deterministic and equal the CPU's), and the image placement copy.
#include <cfloat>

#include "kernels/launch.h"
#include "kernels/window_launch.h"

namespace cfx::cuda {
namespace {

#define CFX_GRID_STRIDE(i, n)                                               \
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < (n); \
       i += int64_t{blockDim.x} * gridDim.x)

// The coordinates of element i of an NHWC batch [*, h, w, c].
struct Pixel {
  int64_t b, y, x, k;
};

__device__ Pixel PixelOf(int64_t i, int64_t h, int64_t w, int64_t c) {
  Pixel p;
  p.k = i % c;
  i /= c;
  p.x = i % w;
  i /= w;
  p.y = i % h;
  p.b = i / h;
  return p;
}

// The clipped window [h0, h1) x [w0, w1) of output (oh, ow).
struct Span {
  int64_t h0, h1, w0, w1;
};

__device__ Span WindowOf(const PoolWindow& w, int64_t oh, int64_t ow) {
  Span s;
  s.h0 = oh * w.stride_h - w.pad_h;
  s.w0 = ow * w.stride_w - w.pad_w;
  s.h1 = min(s.h0 + w.kernel_h, w.in_h);
  s.w1 = min(s.w0 + w.kernel_w, w.in_w);
  s.h0 = max(s.h0, int64_t{0});
  s.w0 = max(s.w0, int64_t{0});
  return s;
}

// The outputs whose (unclipped) windows hold input row `i` (or column): [first, last].
__device__ void OutputsHolding(int64_t i, int64_t kernel, int64_t stride, int64_t pad, int64_t out,
                               int64_t* first, int64_t* last) {
  // o * stride - pad <= i < o * stride - pad + kernel
  const int64_t hi = i + pad;          // o * stride <= hi
  const int64_t lo = hi - kernel + 1;  // o * stride >= lo
  *first = lo <= 0 ? 0 : (lo + stride - 1) / stride;
  *last = min(hi / stride, out - 1);
}

__global__ void PoolKernel(PoolFn fn, PoolWindow w, const float* x, float* y) {
  const int64_t total = w.n * w.out_h * w.out_w * w.c;
  CFX_GRID_STRIDE(i, total) {
    const Pixel o = PixelOf(i, w.out_h, w.out_w, w.c);
    const Span s = WindowOf(w, o.y, o.x);
    const float* img = x + o.b * w.in_h * w.in_w * w.c + o.k;
    float acc = fn == PoolFn::kMax ? -FLT_MAX : 0.0f;
    for (int64_t ih = s.h0; ih < s.h1; ++ih)
      for (int64_t iw = s.w0; iw < s.w1; ++iw) {
        const float p = img[(ih * w.in_w + iw) * w.c];
        acc = fn == PoolFn::kMax ? (p > acc ? p : acc) : acc + p;
      }
    if (fn == PoolFn::kAvg) acc *= 1.0f / static_cast<float>((s.h1 - s.h0) * (s.w1 - s.w0));
    y[i] = acc;
  }
}

__global__ void MaxPoolGradKernel(PoolWindow w, const float* x, const float* dy, float* dx) {
  const int64_t total = w.n * w.in_h * w.in_w * w.c;
  CFX_GRID_STRIDE(i, total) {
    const Pixel p = PixelOf(i, w.in_h, w.in_w, w.c);
    const float* img = x + p.b * w.in_h * w.in_w * w.c + p.k;
    const float* g = dy + p.b * w.out_h * w.out_w * w.c + p.k;
    const int64_t me = p.y * w.in_w + p.x;
    int64_t oh0, oh1, ow0, ow1;
    OutputsHolding(p.y, w.kernel_h, w.stride_h, w.pad_h, w.out_h, &oh0, &oh1);
    OutputsHolding(p.x, w.kernel_w, w.stride_w, w.pad_w, w.out_w, &ow0, &ow1);
    float sum = 0.0f;
    for (int64_t oh = oh0; oh <= oh1; ++oh)
      for (int64_t ow = ow0; ow <= ow1; ++ow) {
        const Span s = WindowOf(w, oh, ow);
        int64_t where = s.h0 * w.in_w + s.w0;
        float best = img[where * w.c];
        for (int64_t h = s.h0; h < s.h1; ++h)
          for (int64_t c = s.w0; c < s.w1; ++c) {
            const int64_t pos = h * w.in_w + c;
            const float v = img[pos * w.c];
            if (v > best) {
              best = v;
              where = pos;
            }
          }
        if (where == me) sum += g[(oh * w.out_w + ow) * w.c];
      }
    dx[i] = sum;
  }
}

__global__ void AvgPoolGradKernel(PoolWindow w, const float* dy, float* dx) {
  const int64_t total = w.n * w.in_h * w.in_w * w.c;
  CFX_GRID_STRIDE(i, total) {
    const Pixel p = PixelOf(i, w.in_h, w.in_w, w.c);
    const float* g = dy + p.b * w.out_h * w.out_w * w.c + p.k;
    int64_t oh0, oh1, ow0, ow1;
    OutputsHolding(p.y, w.kernel_h, w.stride_h, w.pad_h, w.out_h, &oh0, &oh1);
    OutputsHolding(p.x, w.kernel_w, w.stride_w, w.pad_w, w.out_w, &ow0, &ow1);
    float sum = 0.0f;
    for (int64_t oh = oh0; oh <= oh1; ++oh)
      for (int64_t ow = ow0; ow <= ow1; ++ow) {
        const Span s = WindowOf(w, oh, ow);
        const float scale = 1.0f / static_cast<float>((s.h1 - s.h0) * (s.w1 - s.w0));
        sum += g[(oh * w.out_w + ow) * w.c] * scale;
      }
    dx[i] = sum;
  }
}

// Per element of the big batch: its value from the small one, or zero outside the place.
__global__ void PadImagesKernel(ImagePlacement p, const float* small, float* big) {
  const int64_t total = p.n * p.big_h * p.big_w * p.c;
  CFX_GRID_STRIDE(i, total) {
    const Pixel q = PixelOf(i, p.big_h, p.big_w, p.c);
    const int64_t y = q.y - p.top, x = q.x - p.left;
    big[i] = (y >= 0 && y < p.h && x >= 0 && x < p.w)
                 ? small[((q.b * p.h + y) * p.w + x) * p.c + q.k]
                 : 0.0f;
  }
}

// Per element of the small batch: the big batch's element at its place.
__global__ void CropImagesKernel(ImagePlacement p, const float* big, float* small) {
  const int64_t total = p.n * p.h * p.w * p.c;
  CFX_GRID_STRIDE(i, total) {
    const Pixel q = PixelOf(i, p.h, p.w, p.c);
    small[i] = big[((q.b * p.big_h + q.y + p.top) * p.big_w + q.x + p.left) * p.c + q.k];
  }
}

}  // namespace

cudaError_t LaunchPool(PoolFn fn, const PoolWindow& w, const float* x, float* y,
                       cudaStream_t stream) {
  PoolKernel<<<GridBlocks(w.n * w.out_h * w.out_w * w.c), kThreadsPerBlock, 0, stream>>>(fn, w, x,
                                                                                         y);
  return cudaGetLastError();
}

cudaError_t LaunchMaxPoolGrad(const PoolWindow& w, const float* x, const float* dy, float* dx,
                              cudaStream_t stream) {
  MaxPoolGradKernel<<<GridBlocks(w.n * w.in_h * w.in_w * w.c), kThreadsPerBlock, 0, stream>>>(
      w, x, dy, dx);
  return cudaGetLastError();
}

cudaError_t LaunchAvgPoolGrad(const PoolWindow& w, const float* dy, float* dx,
                              cudaStream_t stream) {
  AvgPoolGradKernel<<<GridBlocks(w.n * w.in_h * w.in_w * w.c), kThreadsPerBlock, 0, stream>>>(w, dy,
                                                                                              dx);
  return cudaGetLastError();
}

cudaError_t LaunchPlaceImages(const ImagePlacement& p, bool to_big, const float* from, float* to,
                              cudaStream_t stream) {
  if (to_big) {
    PadImagesKernel<<<GridBlocks(p.n * p.big_h * p.big_w * p.c), kThreadsPerBlock, 0, stream>>>(
        p, from, to);
  } else {
    CropImagesKernel<<<GridBlocks(p.n * p.h * p.w * p.c), kThreadsPerBlock, 0, stream>>>(p, from,
                                                                                         to);
  }
  return cudaGetLastError();
}

}  // namespace cfx::cuda
