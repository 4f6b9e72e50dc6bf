// The image-resizing kernels of the ops-nn plugin beyond TensorFlow's values (op_values.pbtxt):
// every dtype gives the float image's result, the gradient kernels are the adjoints of the
// forward ones, a resize to the same size is the identity, larger batches split over the pool
// match a reference loop, and bad shapes and attrs are errors that say what was expected.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "nn_test_util.h"

namespace cfx {
namespace {

using test::ExpectError;
using test::InferShapes;
using test::MakeNode;
using test::MakeTensor;
using test::Ramp;
using test::RunNode;
using test::RunNodeOk;

NodeDef ResizeNode(const std::string& op, DataType t, bool align = false, bool half = false) {
  NodeDef node =
      MakeNode(op, 2, {{"T", AttrValue::Type(t)}, {"align_corners", AttrValue::Bool(align)}});
  if (op != "ResizeArea") node.attr["half_pixel_centers"] = AttrValue::Bool(half);
  return node;
}

Tensor Size(int h, int w) { return MakeTensor<int32_t>(TensorShape({2}), {h, w}); }

template <typename T>
Tensor Image(TensorShape shape, double range) {
  return MakeTensor<T>(shape, Ramp<T>(shape.num_elements(), range));
}

Tensor CastTo(const Tensor& x, DataType to) {
  NodeDef cast =
      MakeNode("Cast", 1, {{"SrcT", AttrValue::Type(x.dtype())}, {"DstT", AttrValue::Type(to)}});
  return RunNodeOk(cast, {x});
}

double Dot(const Tensor& a, const Tensor& b) {
  double s = 0;
  for (int64_t i = 0; i < a.num_elements(); ++i) s += a.at<double>(i) * b.at<double>(i);
  return s;
}

const char* const kForward[] = {"ResizeBilinear", "ResizeBicubic", "ResizeNearestNeighbor",
                                "ResizeArea"};

// Integer images give what the same values as floats give (ResizeNearestNeighbor keeps the
// dtype: compare after a cast).
TEST(ImageResize, EveryDtypeGivesTheFloatImagesResult) {
  const TensorShape shape({2, 4, 5, 3});
  const std::vector<int32_t> ints = [&] {
    std::vector<int32_t> v(static_cast<size_t>(shape.num_elements()));
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int32_t>((i * 37 + 11) % 101);
    return v;
  }();
  const Tensor f = MakeTensor<float>(shape, {ints.begin(), ints.end()});
  const Tensor u8 = MakeTensor<uint8_t>(shape, {ints.begin(), ints.end()});
  const Tensor i64 = MakeTensor<int64_t>(shape, {ints.begin(), ints.end()});
  const Tensor d = MakeTensor<double>(shape, {ints.begin(), ints.end()});
  for (const char* op : kForward)
    for (bool half : {false, true}) {
      if (half && std::string(op) == "ResizeArea") continue;
      SCOPED_TRACE(std::string(op) + (half ? " half_pixel_centers" : ""));
      const Tensor expected = RunNodeOk(ResizeNode(op, DT_FLOAT, false, half), {f, Size(7, 3)});
      for (const Tensor& x : {u8, i64, d}) {
        Tensor y = RunNodeOk(ResizeNode(op, x.dtype(), false, half), {x, Size(7, 3)});
        if (y.dtype() != DT_FLOAT) {
          ASSERT_EQ(y.dtype(), x.dtype());
          y = CastTo(y, DT_FLOAT);
        }
        test::ExpectTensorEqual(expected, y);
      }
    }
}

// No scaling, no half-pixel shift: every output pixel samples its own input pixel exactly.
TEST(ImageResize, TheSameSizeIsTheIdentity) {
  const Tensor x = Image<float>(TensorShape({2, 5, 6, 3}), 4.0);
  for (const char* op : kForward)
    for (bool align : {false, true}) {
      SCOPED_TRACE(std::string(op) + (align ? " align_corners" : ""));
      test::ExpectTensorEqual(x, RunNodeOk(ResizeNode(op, DT_FLOAT, align), {x, Size(5, 6)}));
    }
}

// <resize(x), dy> = <x, grad(dy)> for every corner rule and for scaling up and down: the
// gradient kernels scatter exactly the weights the forward kernels gather with.
TEST(ImageResize, GradientsAreTheAdjointsOfTheResizes) {
  const Tensor x = Image<double>(TensorShape({2, 5, 4, 3}), 2.0);
  struct Method {
    const char* forward;
    const char* gradient;
    bool takes_size;
  };
  const Method methods[] = {{"ResizeBilinear", "ResizeBilinearGrad", false},
                            {"ResizeBicubic", "ResizeBicubicGrad", false},
                            {"ResizeNearestNeighbor", "ResizeNearestNeighborGrad", true}};
  for (const Method& m : methods)
    for (int rule = 0; rule < 3; ++rule)
      for (auto [h, w] : {std::pair{9, 7}, std::pair{3, 2}, std::pair{1, 6}}) {
        SCOPED_TRACE(std::string(m.forward) + " rule " + std::to_string(rule) + " to " +
                     std::to_string(h) + "x" + std::to_string(w));
        const bool align = rule == 1, half = rule == 2;
        Tensor y = RunNodeOk(ResizeNode(m.forward, DT_DOUBLE, align, half), {x, Size(h, w)});
        if (y.dtype() == DT_FLOAT) y = CastTo(y, DT_DOUBLE);
        const Tensor dy = Image<double>(y.shape(), 1.5);
        NodeDef g = MakeNode(m.gradient, 2,
                             {{"T", AttrValue::Type(DT_DOUBLE)},
                              {"align_corners", AttrValue::Bool(align)},
                              {"half_pixel_centers", AttrValue::Bool(half)}});
        // The float gradients of Bilinear and Bicubic take the incoming gradient as float.
        const Tensor dy_in = m.takes_size ? dy : CastTo(dy, DT_FLOAT);
        const Tensor dx = RunNodeOk(g, {dy_in, m.takes_size ? Size(5, 4) : x});
        ASSERT_EQ(dx.shape(), x.shape());
        const double lhs = Dot(y, dy), rhs = Dot(x, dx);
        // Float weights and float products on one side: relative 1e-5.
        EXPECT_NEAR(lhs, rhs, 1e-5 * (std::fabs(lhs) + 1));
      }
}

// A batch large enough to be split over the pool, against the formula in double.
TEST(ImageResize, LargeBatchesMatchTheReferenceBilinear) {
  const int64_t n = 6, ih = 17, iw = 23, c = 5, oh = 40, ow = 31;
  const Tensor x = Image<float>(TensorShape({n, ih, iw, c}), 10.0);
  const Tensor y =
      RunNodeOk(ResizeNode("ResizeBilinear", DT_FLOAT, false, true), {x, Size(oh, ow)});
  ASSERT_EQ(y.shape(), TensorShape({n, oh, ow, c}));
  const double sh = static_cast<double>(ih) / oh, sw = static_cast<double>(iw) / ow;
  auto at = [&](int64_t b, int64_t h, int64_t w, int64_t k) {
    return static_cast<double>(x.at<float>(((b * ih + h) * iw + w) * c + k));
  };
  for (int64_t b = 0; b < n; ++b)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        const double py = (i + 0.5) * sh - 0.5, px = (j + 0.5) * sw - 0.5;
        const int64_t y0 = std::max<int64_t>(static_cast<int64_t>(std::floor(py)), 0);
        const int64_t y1 = std::min<int64_t>(static_cast<int64_t>(std::ceil(py)), ih - 1);
        const int64_t x0 = std::max<int64_t>(static_cast<int64_t>(std::floor(px)), 0);
        const int64_t x1 = std::min<int64_t>(static_cast<int64_t>(std::ceil(px)), iw - 1);
        const double ly = py - std::floor(py), lx = px - std::floor(px);
        for (int64_t k = 0; k < c; ++k) {
          const double top = at(b, y0, x0, k) + (at(b, y0, x1, k) - at(b, y0, x0, k)) * lx;
          const double bottom = at(b, y1, x0, k) + (at(b, y1, x1, k) - at(b, y1, x0, k)) * lx;
          ASSERT_NEAR(y.at<float>(((b * oh + i) * ow + j) * c + k), top + (bottom - top) * ly,
                      1e-4)
              << "image " << b << " pixel (" << i << ", " << j << ") channel " << k;
        }
      }
}

TEST(ImageResize, ShapeInference) {
  NodeDef node = ResizeNode("ResizeBilinear", DT_FLOAT);
  auto shapes = InferShapes(node, {PartialTensorShape({-1, 7, 9, 3}), PartialTensorShape({2})});
  ASSERT_OK(shapes.status());
  EXPECT_EQ((*shapes)[0].ToString(), PartialTensorShape({-1, -1, -1, 3}).ToString());
  EXPECT_FALSE(InferShapes(node, {PartialTensorShape({7, 9, 3}), PartialTensorShape({2})}).ok());
  EXPECT_FALSE(InferShapes(node, {PartialTensorShape({1, 7, 9, 3}), PartialTensorShape({3})}).ok());
  NodeDef grad = MakeNode("ResizeBilinearGrad", 2, {{"T", AttrValue::Type(DT_DOUBLE)}});
  shapes = InferShapes(grad, {PartialTensorShape({2, 5, 5, 3}), PartialTensorShape({2, 3, -1, 3})});
  ASSERT_OK(shapes.status());
  EXPECT_EQ((*shapes)[0].ToString(), PartialTensorShape({2, 3, -1, 3}).ToString());
}

TEST(ImageResize, BadInputsAreErrors) {
  const Tensor x = Image<float>(TensorShape({1, 3, 4, 2}), 1.0);
  ExpectError(RunNode(ResizeNode("ResizeBilinear", DT_FLOAT), {Image<float>(TensorShape({3, 4, 2}), 1.0), Size(2, 2)}),
              Code::kInvalidArgument, "rank 4");
  ExpectError(RunNode(ResizeNode("ResizeBicubic", DT_FLOAT), {x, Size(0, 2)}),
              Code::kInvalidArgument, "two positive sides, got [0, 2]");
  ExpectError(RunNode(ResizeNode("ResizeArea", DT_FLOAT), {x, MakeTensor<int32_t>(TensorShape({3}), {2, 2, 2})}),
              Code::kInvalidArgument, "2 elements");
  ExpectError(RunNode(ResizeNode("ResizeNearestNeighbor", DT_FLOAT, true, true), {x, Size(2, 2)}),
              Code::kInvalidArgument, "half_pixel_centers requires align_corners = false");
  ExpectError(RunNode(ResizeNode("ResizeBilinear", DT_FLOAT), {Image<float>(TensorShape({1, 0, 4, 2}), 1.0), Size(2, 2)}),
              Code::kInvalidArgument, "height and width between 1 and 2^31 - 1");
  ExpectError(RunNode(ResizeNode("ResizeBilinear", DT_FLOAT), {Image<float>(TensorShape({1, 3, 4, 0}), 1.0), Size(2, 2)}),
              Code::kInvalidArgument, "at least one channel");
  NodeDef grad = MakeNode("ResizeBilinearGrad", 2, {{"T", AttrValue::Type(DT_FLOAT)}});
  ExpectError(RunNode(grad, {Image<float>(TensorShape({2, 5, 5, 2}), 1.0), x}),
              Code::kInvalidArgument, "same batch size and number of channels");
  NodeDef nn = MakeNode("ResizeNearestNeighborGrad", 2, {{"T", AttrValue::Type(DT_FLOAT)}});
  ExpectError(RunNode(nn, {x, Size(-1, 3)}), Code::kInvalidArgument, "two positive sides");
  // A batch of no images resizes to a batch of no images.
  const Tensor none = RunNodeOk(ResizeNode("ResizeBicubic", DT_FLOAT),
                                {Tensor(DT_FLOAT, TensorShape({0, 3, 4, 2})), Size(6, 8)});
  EXPECT_EQ(none.shape(), TensorShape({0, 6, 8, 2}));
}

}  // namespace
}  // namespace cfx
