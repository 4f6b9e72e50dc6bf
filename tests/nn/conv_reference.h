// Reference-side helpers of the convolution tests (conv_pool_test.cc, depthwise_conv_test.cc):
// TensorFlow's window rule for one dimension written out independently of the kernels, the
// product terms of a plain or depthwise convolution as naive loops, a node of a window op with
// its attrs, and the comparison of float results with double references.
#ifndef CONFLUX_TESTS_NN_CONV_REFERENCE_H_
#define CONFLUX_TESTS_NN_CONV_REFERENCE_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "nn_test_util.h"

namespace cfx::test {

// TensorFlow's output size and leading padding for one dimension: kernel k, stride s, dilation
// d; `before` and `after` are the EXPLICIT paddings.
inline void Window(int64_t in, int64_t k, int64_t s, int64_t d, const std::string& padding,
                   int64_t before, int64_t after, int64_t* out, int64_t* pad) {
  const int64_t eff = (k - 1) * d + 1;
  if (padding == "VALID") {
    *out = (in - eff) / s + 1;
    *pad = 0;
  } else if (padding == "SAME") {
    *out = (in + s - 1) / s;
    *pad = std::max<int64_t>((*out - 1) * s + eff - in, 0) / 2;
  } else {
    *out = (in + before + after - eff) / s + 1;
    *pad = before;
  }
}

// A convolution: input [n, h, w, c], filter [kh, kw, c / groups, o] (o is the channel
// multiplier of a depthwise convolution), square strides and dilations.
struct Conv {
  int64_t n, h, w, c, kh, kw, o, stride, dilation;
  std::string padding;
  std::vector<int64_t> explicit_pad = {};  // top, bottom, left, right
  int64_t groups = 1;                      // plain convolutions only
  int64_t filter_in() const { return c / groups; }
};

struct Geometry {
  int64_t oh, ow, ph, pw;
};

inline Geometry Geo(const Conv& c) {
  Geometry g;
  const auto& e = c.explicit_pad;
  Window(c.h, c.kh, c.stride, c.dilation, c.padding, e.empty() ? 0 : e[0], e.empty() ? 0 : e[1],
         &g.oh, &g.ph);
  Window(c.w, c.kw, c.stride, c.dilation, c.padding, e.empty() ? 0 : e[2], e.empty() ? 0 : e[3],
         &g.ow, &g.pw);
  return g;
}

// Calls fn(x index, filter index, y index) for every product term of the convolution. A plain
// convolution sums over input channels into each of its o outputs (with groups, input channel ci
// of group k = ci / (c / groups) reaches outputs [k * o / groups, (k + 1) * o / groups) through
// filter [.., .., ci % (c / groups), ..]); a depthwise one (`depthwise`) sends input channel ci
// through filter [.., .., ci, m] to output channel ci * o + m alone.
template <typename Fn>
void ForEachTerm(const Conv& c, const Geometry& g, bool depthwise, Fn fn) {
  const int64_t out_channels = depthwise ? c.c * c.o : c.o;
  for (int64_t b = 0; b < c.n; ++b)
    for (int64_t oy = 0; oy < g.oh; ++oy)
      for (int64_t ox = 0; ox < g.ow; ++ox)
        for (int64_t ky = 0; ky < c.kh; ++ky)
          for (int64_t kx = 0; kx < c.kw; ++kx) {
            const int64_t iy = oy * c.stride + ky * c.dilation - g.ph;
            const int64_t ix = ox * c.stride + kx * c.dilation - g.pw;
            if (iy < 0 || iy >= c.h || ix < 0 || ix >= c.w) continue;
            const int64_t y_pixel = ((b * g.oh + oy) * g.ow + ox) * out_channels;
            const int64_t per_group_in = c.filter_in(), per_group_out = c.o / c.groups;
            for (int64_t ci = 0; ci < c.c; ++ci) {
              const int64_t k = ci / per_group_in, fi = depthwise ? ci : ci % per_group_in;
              const int64_t first = depthwise ? 0 : k * per_group_out;
              const int64_t last = depthwise ? c.o : first + per_group_out;
              for (int64_t co = first; co < last; ++co)
                fn(((b * c.h + iy) * c.w + ix) * c.c + ci,
                   ((ky * c.kw + kx) * (depthwise ? c.c : per_group_in) + fi) * c.o + co,
                   y_pixel + (depthwise ? ci * c.o : 0) + co);
            }
          }
}

// A float convolution node (Conv2D, DepthwiseConv2dNative or a backprop) with square strides and
// dilations; `explicit_pad` (top, bottom, left, right) with padding EXPLICIT.
inline NodeDef ConvolutionNode(const std::string& op, int num_inputs, int64_t stride,
                               int64_t dilation, const std::string& padding,
                               const std::vector<int64_t>& explicit_pad) {
  NodeDef n = MakeNode(op, num_inputs,
                       {{"T", AttrValue::Type(DT_FLOAT)},
                        {"strides", AttrValue::IntList({1, stride, stride, 1})},
                        {"dilations", AttrValue::IntList({1, dilation, dilation, 1})},
                        {"padding", AttrValue::String(padding)}});
  if (padding == "EXPLICIT") {
    const auto& e = explicit_pad;
    n.attr["explicit_paddings"] = AttrValue::IntList({0, 0, e[0], e[1], e[2], e[3], 0, 0});
  }
  return n;
}

// Each element of `got` (float) within tol * (1 + |want|).
inline void ExpectNear(const std::vector<double>& want, const Tensor& got, double tol) {
  ASSERT_EQ(static_cast<int64_t>(want.size()), got.num_elements());
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(want[i], got.at<float>(i), tol * (1 + std::abs(want[i]))) << "element " << i;
}

}  // namespace cfx::test

#endif  // CONFLUX_TESTS_NN_CONV_REFERENCE_H_
