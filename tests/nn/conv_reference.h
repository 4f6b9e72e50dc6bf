// Reference-side helpers of the convolution tests (conv_pool_test.cc, depthwise_conv_test.cc):
// TensorFlow's window rule for one dimension written out independently of the kernels, a node of
// a window op with its attrs, and the comparison of float results with double references.
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
