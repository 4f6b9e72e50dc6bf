// The ops-nn plugin's gradient functions, registered through the plugin ABI, against finite
// differences (ComputeGradientError). Kernels with double support are checked in double; the
// convolution, pooling and batch-norm kernels are float-only and get bounds for float rounding.
#include <functional>
#include <random>

#include <gtest/gtest.h>

#include "conflux/cc/gradient_checker.h"
#include "conflux/cc/op_builder.h"
#include "conflux/cc/ops/nn_ops.h"
#include "conflux/cc/ops/standard_ops.h"
#include "kernel_test_util.h"

namespace cfx {
namespace {

using test::TestRuntime;
using X = std::vector<Output>;

Tensor Random(DataType dtype, TensorShape shape, double lo, double hi, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  Tensor t(dtype, shape);
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    if (dtype == DT_DOUBLE) {
      t.at<double>(i) = dist(gen);
    } else {
      t.at<float>(i) = static_cast<float>(dist(gen));
    }
  }
  return t;
}

// images resized to `size` by `op` (built by name), squared so that the gradient depends on the
// image.
Output Resize(const Scope& s, const char* op, Output images, std::vector<int32_t> size,
              bool align_corners, bool half_pixel_centers) {
  Output y = OpBuilder(s, op)
                 .Input(images)
                 .Input(ops::Const(s, size))
                 .Attr("align_corners", align_corners)
                 .Attr("half_pixel_centers", half_pixel_centers)
                 .Finish()
                 .output(0);
  return ops::Square(s, y);
}

struct NnCase {
  const char* name;
  std::vector<Tensor> inputs;
  std::function<Output(const Scope&, const X&)> build;
  double delta, bound;
};

std::vector<NnCase> NnCases() {
  const Tensor d23 = Random(DT_DOUBLE, {2, 3}, -2, 2, 1), d3 = Random(DT_DOUBLE, {3}, -1, 1, 2);
  const double kD = 1e-5, kDBound = 1e-6, kF = 1e-2, kFBound = 2e-3;
  return {
      {"BiasAdd", {d23, d3}, [](const Scope& s, const X& x) { return ops::BiasAdd(s, x[0], x[1]); }, kD, kDBound},
      {"Softmax", {d23}, [](const Scope& s, const X& x) { return ops::Softmax(s, x[0]); }, kD, kDBound},
      {"LogSoftmax", {d23}, [](const Scope& s, const X& x) { return ops::LogSoftmax(s, x[0]); }, kD, kDBound},
      {"Relu6", {Random(DT_DOUBLE, {2, 3}, 0.1, 5.9, 3)}, [](const Scope& s, const X& x) { return ops::Relu6(s, x[0]); }, kD, kDBound},
      {"Elu", {d23}, [](const Scope& s, const X& x) { return ops::Elu(s, x[0]); }, kD, kDBound},
      {"Selu", {d23}, [](const Scope& s, const X& x) { return ops::Selu(s, x[0]); }, kD, kDBound},
      {"Softplus", {d23}, [](const Scope& s, const X& x) { return ops::Softplus(s, x[0]); }, kD, kDBound},
      {"Softsign", {d23}, [](const Scope& s, const X& x) { return ops::Softsign(s, x[0]); }, kD, kDBound},
      {"L2Loss", {d23}, [](const Scope& s, const X& x) { return ops::L2Loss(s, x[0]); }, kD, kDBound},
      // Labels are distributions (rows sum to 1): the op's backprop is softmax - labels.
      {"SoftmaxCrossEntropyWithLogits",
       {d23, [] {
          Tensor t(DT_DOUBLE, TensorShape({2, 3}));
          const double rows[] = {0.2, 0.5, 0.3, 0.7, 0.1, 0.2};
          for (int i = 0; i < 6; ++i) t.at<double>(i) = rows[i];
          return t;
        }()},
       [](const Scope& s, const X& x) {
         return ops::SoftmaxCrossEntropyWithLogits(s, x[0], x[1]).loss;
       }, kD, kDBound},
      {"SparseSoftmaxCrossEntropyWithLogits", {d23},
       [](const Scope& s, const X& x) {
         return ops::SparseSoftmaxCrossEntropyWithLogits(s, x[0], {2, 0}).loss;
       }, kD, kDBound},
      {"Conv2D", {Random(DT_FLOAT, {2, 5, 4, 2}, -1, 1, 5), Random(DT_FLOAT, {3, 3, 2, 3}, -1, 1, 6)},
       [](const Scope& s, const X& x) {
         return ops::Conv2D(s, x[0], x[1], {1, 2, 2, 1}, "SAME");
       }, kF, kFBound},
      {"Conv2DDilatedValid", {Random(DT_FLOAT, {1, 6, 6, 1}, -1, 1, 7), Random(DT_FLOAT, {2, 2, 1, 2}, -1, 1, 8)},
       [](const Scope& s, const X& x) {
         return ops::Conv2D(s, x[0], x[1], {1, 1, 1, 1}, "VALID",
                            ops::Conv2DAttrs().Dilations({1, 2, 2, 1}));
       }, kF, kFBound},
      // Depthwise convolutions (the ops-nn plugin; built by name): a channel multiplier of 2 with
      // stride 2 and SAME's asymmetric padding, and a dilated VALID window.
      {"DepthwiseConv2dNative", {Random(DT_FLOAT, {2, 5, 6, 3}, -1, 1, 21), Random(DT_FLOAT, {3, 3, 3, 2}, -1, 1, 22)},
       [](const Scope& s, const X& x) {
         return OpBuilder(s, "DepthwiseConv2dNative").Input(x[0]).Input(x[1])
             .Attr("strides", {1, 2, 2, 1}).Attr("padding", "SAME").Finish().output(0);
       }, kF, kFBound},
      {"DepthwiseConv2dNativeDilatedValid", {Random(DT_FLOAT, {1, 7, 6, 2}, -1, 1, 23), Random(DT_FLOAT, {2, 2, 2, 1}, -1, 1, 24)},
       [](const Scope& s, const X& x) {
         return OpBuilder(s, "DepthwiseConv2dNative").Input(x[0]).Input(x[1])
             .Attr("strides", {1, 1, 1, 1}).Attr("padding", "VALID")
             .Attr("dilations", {1, 2, 2, 1}).Finish().output(0);
       }, kF, kFBound},
      // Values at least 0.1 apart (a permutation scaled), so that no step moves a maximum.
      {"MaxPool", {[] {
         Tensor t(DT_FLOAT, TensorShape({1, 4, 4, 2}));
         for (int i = 0; i < 32; ++i) t.at<float>(i) = 0.1f * static_cast<float>((i * 13) % 32);
         return t;
       }()},
       [](const Scope& s, const X& x) {
         return ops::MaxPool(s, x[0], {1, 2, 2, 1}, {1, 2, 2, 1}, "VALID");
       }, kF / 10, kFBound},
      // Values away from the kink at 0, so that no step crosses it.
      {"LeakyRelu", {[] {
         Tensor t(DT_FLOAT, TensorShape({2, 3}));
         const float v[] = {-0.9f, 0.4f, -0.3f, 0.7f, 0.2f, -0.6f};
         for (int i = 0; i < 6; ++i) t.at<float>(i) = v[i];
         return t;
       }()},
       [](const Scope& s, const X& x) {
         return ops::LeakyRelu(s, x[0], ops::LeakyReluAttrs().Alpha(0.3f));
       }, kF, kFBound},
      // Windows that reach into uneven explicit padding on every side.
      {"MaxPoolExplicitPadding", {[] {
         Tensor t(DT_FLOAT, TensorShape({1, 4, 4, 2}));
         for (int i = 0; i < 32; ++i) t.at<float>(i) = 0.1f * static_cast<float>((i * 13) % 32);
         return t;
       }()},
       [](const Scope& s, const X& x) {
         return ops::MaxPool(s, x[0], {1, 3, 3, 1}, {1, 2, 2, 1}, "EXPLICIT",
                             ops::MaxPoolAttrs().ExplicitPaddings({0, 0, 1, 2, 2, 0, 0, 0}));
       }, kF / 10, kFBound},
      {"AvgPoolSame", {Random(DT_FLOAT, {1, 5, 5, 2}, -1, 1, 9)},
       [](const Scope& s, const X& x) {
         return ops::AvgPool(s, x[0], {1, 3, 3, 1}, {1, 2, 2, 1}, "SAME");
       }, kF, kFBound},
      // Resizes are linear in the image: up and down, under each corner rule. Bilinear and
      // bicubic results are float whatever the image's dtype: checked in float.
      {"ResizeBilinearHalfPixelUp", {Random(DT_FLOAT, {2, 3, 4, 2}, -1, 1, 40)},
       [](const Scope& s, const X& x) { return Resize(s, "ResizeBilinear", x[0], {5, 7}, false, true); }, kF, kFBound},
      {"ResizeBilinearAlignCornersDown", {Random(DT_FLOAT, {1, 5, 6, 2}, -1, 1, 41)},
       [](const Scope& s, const X& x) { return Resize(s, "ResizeBilinear", x[0], {3, 2}, true, false); }, kF, kFBound},
      {"ResizeBicubicHalfPixelUp", {Random(DT_FLOAT, {1, 4, 3, 2}, -1, 1, 42)},
       [](const Scope& s, const X& x) { return Resize(s, "ResizeBicubic", x[0], {7, 5}, false, true); }, kF, kFBound},
      {"ResizeBicubicLegacyDown", {Random(DT_FLOAT, {2, 6, 5, 1}, -1, 1, 43)},
       [](const Scope& s, const X& x) { return Resize(s, "ResizeBicubic", x[0], {4, 2}, false, false); }, kF, kFBound},
      {"ResizeNearestNeighborUp", {Random(DT_DOUBLE, {2, 3, 4, 2}, -1, 1, 44)},
       [](const Scope& s, const X& x) { return Resize(s, "ResizeNearestNeighbor", x[0], {5, 7}, false, false); }, kD, kDBound},
      {"ResizeNearestNeighborAlignCornersDown", {Random(DT_DOUBLE, {1, 5, 6, 3}, -1, 1, 45)},
       [](const Scope& s, const X& x) { return Resize(s, "ResizeNearestNeighbor", x[0], {3, 4}, true, false); }, kD, kDBound},
      {"ScaleAndTranslateLanczos3AntialiasedDown", {Random(DT_FLOAT, {1, 6, 5, 2}, -1, 1, 46)},
       [](const Scope& s, const X& x) {
         return ops::Square(s, OpBuilder(s, "ScaleAndTranslate").Input(x[0])
             .Input(ops::Const(s, std::vector<int32_t>{3, 4}))
             .Input(ops::Const(s, std::vector<float>{0.5f, 0.8f}))
             .Input(ops::Const(s, std::vector<float>{0.25f, -0.5f}))
             .Finish().output(0));
       }, kF, kFBound},
      {"ScaleAndTranslateKeysCubicUp", {Random(DT_FLOAT, {2, 3, 3, 1}, -1, 1, 47)},
       [](const Scope& s, const X& x) {
         return ops::Square(s, OpBuilder(s, "ScaleAndTranslate").Input(x[0])
             .Input(ops::Const(s, std::vector<int32_t>{5, 7}))
             .Input(ops::Const(s, std::vector<float>{5 / 3.0f, 7 / 3.0f}))
             .Input(ops::Const(s, std::vector<float>{0.0f, 0.0f}))
             .Attr("kernel_type", "keyscubic").Attr("antialias", false)
             .Finish().output(0));
       }, kF, kFBound},
      {"FusedBatchNormV3Training",
       {Random(DT_FLOAT, {4, 2, 2, 3}, -1, 1, 10), Random(DT_FLOAT, {3}, 0.5, 1.5, 11),
        Random(DT_FLOAT, {3}, -1, 1, 12)},
       [](const Scope& s, const X& x) {
         Output zeros = ops::Const(s, {0.f, 0.f, 0.f}), ones = ops::Const(s, {1.f, 1.f, 1.f});
         return ops::FusedBatchNormV3(s, x[0], x[1], x[2], zeros, ones).y;
       }, kF, 1e-2},
  };
}

class NnGradient : public ::testing::TestWithParam<size_t> {};

TEST_P(NnGradient, MatchesFiniteDifferences) {
  const NnCase c = NnCases()[GetParam()];
  Scope root = Scope::NewRootScope(&TestRuntime());
  X xs;
  for (const Tensor& t : c.inputs) xs.push_back(ops::Placeholder(root, t.dtype()));
  Output y = c.build(root, xs);
  ASSERT_TRUE(root.ok()) << root.status();
  auto err = ComputeGradientError(root, &TestRuntime(), xs, c.inputs, {y}, c.delta);
  ASSERT_OK(err.status());
  EXPECT_LT(*err, c.bound) << c.name;
}

INSTANTIATE_TEST_SUITE_P(OpsNn, NnGradient, ::testing::Range<size_t>(0, NnCases().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return std::string(NnCases()[info.param].name);
                         });

TEST(PluginGradients, ComeFromThePluginThatRegisteredThem) {
  const auto* g = TestRuntime().FindPluginGradient("Conv2D");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(TestRuntime().FindPluginGradient("MatMul"), nullptr);  // a standard gradient
}

}  // namespace
}  // namespace cfx
