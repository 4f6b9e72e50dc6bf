// DepthwiseConv2dNative and its two backprops from the ops-nn plugin against naive loops written
// here (NHWC, filter [kh, kw, channels, multiplier]): SAME/VALID/EXPLICIT padding, strides,
// dilations, multipliers 1 and 2; a constant filter's cached copy; shape inference; bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "conflux/session.h"
#include "conv_reference.h"
#include "graph_builder.h"
#include "nn_test_util.h"

namespace cfx {
namespace {

using namespace test;  // NOLINT

// A depthwise convolution: Conv with `o` the channel multiplier, c * o output channels.
using Depthwise = Conv;

int64_t OutChannels(const Depthwise& d) { return d.c * d.o; }

std::string Name(const Depthwise& d) {
  return d.padding + " " + std::to_string(d.kh) + "x" + std::to_string(d.kw) + " stride " +
         std::to_string(d.stride) + " dilation " + std::to_string(d.dilation) + " multiplier " +
         std::to_string(d.o);
}

NodeDef DepthwiseNode(const std::string& op, const Depthwise& d) {
  return ConvolutionNode(op, op == "DepthwiseConv2dNative" ? 2 : 3, d.stride, d.dilation, d.padding,
                         d.explicit_pad);
}

std::vector<Depthwise> DepthwiseConfigs() {
  return {
      {1, 5, 5, 1, 3, 3, 1, 1, 1, "VALID"},
      {2, 7, 6, 3, 3, 3, 2, 1, 1, "SAME"},
      {3, 9, 8, 4, 5, 5, 1, 2, 1, "SAME"},
      {2, 8, 9, 3, 2, 3, 2, 2, 1, "VALID"},
      {1, 11, 10, 2, 3, 3, 2, 1, 2, "SAME"},
      {2, 9, 9, 5, 3, 2, 1, 1, 2, "VALID"},
      {1, 6, 7, 3, 3, 3, 2, 2, 1, "EXPLICIT", {1, 2, 0, 3}},
      {2, 6, 6, 16, 1, 1, 2, 1, 1, "VALID"},
      {1, 14, 14, 32, 3, 3, 1, 2, 1, "SAME"},  // MobileNet's strided blocks
  };
}

Tensor InputOf(const Depthwise& d, const std::vector<float>& x) {
  return MakeTensor<float>(TensorShape({d.n, d.h, d.w, d.c}), x);
}
Tensor FilterOf(const Depthwise& d, const std::vector<float>& f) {
  return MakeTensor<float>(TensorShape({d.kh, d.kw, d.c, d.o}), f);
}

TEST(DepthwiseConv2dNative, MatchesTheNaiveConvolution) {
  for (const Depthwise& d : DepthwiseConfigs()) {
    SCOPED_TRACE(Name(d));
    const Geometry g = Geo(d);
    std::vector<float> x = Ramp<float>(d.n * d.h * d.w * d.c),
                       f = Ramp<float>(d.kh * d.kw * d.c * d.o, 1.0);
    std::vector<double> y(d.n * g.oh * g.ow * OutChannels(d), 0.0);
    ForEachTerm(d, g, /*depthwise=*/true,
                [&](int64_t xi, int64_t fi, int64_t yi) { y[yi] += double(x[xi]) * f[fi]; });
    Tensor out =
        RunNodeOk(DepthwiseNode("DepthwiseConv2dNative", d), {InputOf(d, x), FilterOf(d, f)});
    EXPECT_EQ(out.shape(), TensorShape({d.n, g.oh, g.ow, OutChannels(d)}));
    ExpectNear(y, out, 1e-4);
  }
}

// A frozen model's filter: a Const through an Identity, marked `_filter_const` by the session.
// Steps with new images match the naive convolution, with the reordered copy reused.
TEST(DepthwiseConv2dNative, ConstantFilterIsReorderedOnceAndStaysRight) {
  const Depthwise d{2, 9, 8, 8, 3, 3, 2, 1, 1, "SAME"};
  const Geometry g = Geo(d);
  const std::vector<float> f = Ramp<float>(d.kh * d.kw * d.c * d.o, 1.0);
  GraphBuilder b;
  b.Placeholder("x", DT_FLOAT);
  b.Const("f", FilterOf(d, f));
  b.Op("f_read", "Identity", {"f"}, {{"T", AttrValue::Type(DT_FLOAT)}});
  NodeDef conv = DepthwiseNode("DepthwiseConv2dNative", d);
  conv.name = "y";
  conv.input = {"x", "f_read"};
  GraphDef graph = b.graph();
  graph.node.push_back(conv);
  auto session = Session::Create(&TestRuntime(), graph);
  ASSERT_OK(session.status());
  RunMetadata meta;
  for (int step = 0; step < 3; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    std::vector<float> x = Ramp<float>(d.n * d.h * d.w * d.c, 1.0 + step);
    std::vector<double> y(d.n * g.oh * g.ow * OutChannels(d), 0.0);
    ForEachTerm(d, g, /*depthwise=*/true,
                [&](int64_t xi, int64_t fi, int64_t yi) { y[yi] += double(x[xi]) * f[fi]; });
    std::vector<Tensor> out;
    ASSERT_OK((*session)->Run(RunOptions(), {{"x", InputOf(d, x)}}, {"y"}, {}, &out, &meta));
    ExpectNear(y, out[0], 1e-4);
  }
  bool marked = false;
  for (const auto& [device, part] : meta.partition_graphs)
    for (const NodeDef& n : part.node)
      if (n.name == "y") marked = n.attr.count("_filter_const") > 0;
  EXPECT_TRUE(marked) << "the session marks a Const filter";
}

TEST(DepthwiseConv2dNative, ShapeInference) {
  Depthwise d{1, 0, 0, 0, 0, 0, 0, 2, 1, "SAME"};
  auto shapes =
      InferShapes(DepthwiseNode("DepthwiseConv2dNative", d),
                  {PartialTensorShape({-1, 28, 27, 3}), PartialTensorShape({5, 5, 3, 2})});
  ASSERT_OK(shapes.status());
  EXPECT_EQ((*shapes)[0].ToString(), PartialTensorShape({-1, 14, 14, 6}).ToString());
  d.padding = "VALID";
  shapes = InferShapes(DepthwiseNode("DepthwiseConv2dNative", d),
                       {PartialTensorShape({2, 28, 27, -1}), PartialTensorShape({5, 5, 4, 3})});
  ASSERT_OK(shapes.status());
  EXPECT_EQ((*shapes)[0].ToString(), PartialTensorShape({2, 12, 12, 12}).ToString());
  shapes = InferShapes(DepthwiseNode("DepthwiseConv2dNative", d),
                       {PartialTensorShape({2, 28, 27, -1}), PartialTensorShape({5, 5, -1, 3})});
  ASSERT_OK(shapes.status());
  EXPECT_EQ((*shapes)[0].ToString(), PartialTensorShape({2, 12, 12, -1}).ToString());
  ExpectError(InferShapes(DepthwiseNode("DepthwiseConv2dNative", d),
                          {PartialTensorShape({2, 28, 27, 4}), PartialTensorShape({5, 5, 3, 2})})
                  .status(),
              Code::kInvalidArgument, "node node (op DepthwiseConv2dNative): input has 4 channels");
  const int64_t huge = int64_t{1} << 62;
  ExpectError(InferShapes(DepthwiseNode("DepthwiseConv2dNative", d),
                          {PartialTensorShape({2, 28, 27, 4}), PartialTensorShape({5, 5, 4, huge})})
                  .status(),
              Code::kInvalidArgument,
              "in_channels 4 times channel_multiplier 4611686018427387904 does not fit int64");
}

TEST(DepthwiseConv2dNative, BadInputIsAnError) {
  const Depthwise d{1, 4, 4, 2, 3, 3, 1, 1, 1, "VALID"};
  const NodeDef node = DepthwiseNode("DepthwiseConv2dNative", d);
  Tensor x = MakeTensor<float>(TensorShape({1, 4, 4, 2}), Ramp<float>(32));
  for (auto run : {&RunNode, &RunKernelOnly}) {
    ExpectError(
        run(node, {x, MakeTensor<float>(TensorShape({3, 3, 3, 1}), Ramp<float>(27))}, "CPU:0")
            .status(),
        Code::kInvalidArgument, "input has 2 channels");
    ExpectError(
        run(node, {x, MakeTensor<float>(TensorShape({9, 2}), Ramp<float>(18))}, "CPU:0").status(),
        Code::kInvalidArgument, "filter must have rank 4");
    ExpectError(
        run(node, {x, MakeTensor<float>(TensorShape({5, 5, 2, 1}), Ramp<float>(50))}, "CPU:0")
            .status(),
        Code::kInvalidArgument, "larger than the input");
  }
  Tensor f = MakeTensor<float>(TensorShape({3, 3, 2, 1}), Ramp<float>(18));
  NodeDef strided = node;
  strided.attr["strides"] = AttrValue::IntList({2, 1, 1, 1});
  ExpectError(RunKernelOnly(strided, {x, f}, "CPU:0").status(), Code::kUnimplemented,
              "node node (op DepthwiseConv2dNative): strides over the batch or channel dimension");
  NodeDef nchw = node;
  nchw.attr["data_format"] = AttrValue::String("NCHW");
  ExpectError(RunKernelOnly(nchw, {x, f}, "CPU:0").status(), Code::kUnimplemented,
              "data_format NCHW is not supported on CPU");
  Depthwise padded = d;
  padded.padding = "EXPLICIT";
  padded.explicit_pad = {int64_t{1} << 62, int64_t{1} << 62, 0, 0};
  ExpectError(
      RunKernelOnly(DepthwiseNode("DepthwiseConv2dNative", padded), {x, f}, "CPU:0").status(),
      Code::kInvalidArgument, "does not fit int64 arithmetic");
}

TEST(DepthwiseConv2dNativeBackprop, InputAndFilterGradientsAreTheAdjoints) {
  for (const Depthwise& d : DepthwiseConfigs()) {
    SCOPED_TRACE(Name(d));
    const Geometry g = Geo(d);
    std::vector<float> x = Ramp<float>(d.n * d.h * d.w * d.c),
                       f = Ramp<float>(d.kh * d.kw * d.c * d.o, 1.0);
    std::vector<float> dy = Ramp<float>(d.n * g.oh * g.ow * OutChannels(d), 2.0);
    std::vector<double> dx(x.size(), 0.0), df(f.size(), 0.0);
    ForEachTerm(d, g, /*depthwise=*/true, [&](int64_t xi, int64_t fi, int64_t yi) {
      dx[xi] += double(dy[yi]) * f[fi];
      df[fi] += double(dy[yi]) * x[xi];
    });
    Tensor dy_t = MakeTensor<float>(TensorShape({d.n, g.oh, g.ow, OutChannels(d)}), dy);
    Tensor got_dx =
        RunNodeOk(DepthwiseNode("DepthwiseConv2dNativeBackpropInput", d),
                  {MakeVector<int32_t>({int32_t(d.n), int32_t(d.h), int32_t(d.w), int32_t(d.c)}),
                   FilterOf(d, f), dy_t});
    ExpectNear(dx, got_dx, 1e-4);
    Tensor got_df = RunNodeOk(
        DepthwiseNode("DepthwiseConv2dNativeBackpropFilter", d),
        {InputOf(d, x),
         MakeVector<int32_t>({int32_t(d.kh), int32_t(d.kw), int32_t(d.c), int32_t(d.o)}), dy_t});
    ExpectNear(df, got_df, 1e-4);
  }
}

TEST(DepthwiseConv2dNativeBackprop, ShapesAndBadInput) {
  const Depthwise d{1, 6, 6, 2, 3, 3, 2, 1, 1, "VALID"};
  const NodeDef input_grad = DepthwiseNode("DepthwiseConv2dNativeBackpropInput", d);
  const NodeDef filter_grad = DepthwiseNode("DepthwiseConv2dNativeBackpropFilter", d);
  Tensor x = InputOf(d, Ramp<float>(72)), f = FilterOf(d, Ramp<float>(36));
  Tensor dy = MakeTensor<float>(TensorShape({1, 4, 4, 4}), Ramp<float>(64));
  Tensor input_sizes = MakeVector<int32_t>({1, 6, 6, 2}),
         filter_sizes = MakeVector<int32_t>({3, 3, 2, 2});
  auto shapes = InferShapes(input_grad, {PartialTensorShape({4}), PartialTensorShape({3, 3, 2, 2}),
                                         PartialTensorShape({1, 4, 4, 4})});
  ASSERT_OK(shapes.status());
  EXPECT_EQ((*shapes)[0].ToString(), PartialTensorShape({-1, -1, -1, -1}).ToString());
  // out_backprop of the wrong shape: [1, 4, 4, 2] is the output of multiplier 1, not 2.
  Tensor wrong = MakeTensor<float>(TensorShape({1, 4, 4, 2}), Ramp<float>(32));
  ExpectError(RunKernelOnly(input_grad, {input_sizes, f, wrong}, "CPU:0").status(),
              Code::kInvalidArgument,
              "node node (op DepthwiseConv2dNativeBackpropInput): out_backprop has shape [1,4,4,2] "
              "but the depthwise convolution of [1,6,6,2] by [3,3,2,2] gives [1,4,4,4]");
  ExpectError(RunKernelOnly(filter_grad, {x, filter_sizes, wrong}, "CPU:0").status(),
              Code::kInvalidArgument, "out_backprop has shape [1,4,4,2]");
  ExpectError(RunKernelOnly(input_grad, {MakeVector<int32_t>({1, 6, 6}), f, dy}, "CPU:0").status(),
              Code::kInvalidArgument, "input_sizes must be a vector of 4 elements");
  ExpectError(
      RunKernelOnly(filter_grad, {x, MakeVector<int32_t>({3, 3, 2, -2}), dy}, "CPU:0").status(),
      Code::kInvalidArgument, "filter_sizes has a negative dimension");
  ExpectError(
      RunKernelOnly(filter_grad, {x, MakeVector<int32_t>({3, 3, 3, 2}), dy}, "CPU:0").status(),
      Code::kInvalidArgument, "input has 2 channels");
}

}  // namespace
}  // namespace cfx
