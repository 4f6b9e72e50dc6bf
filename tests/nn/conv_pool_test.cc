// Conv2D, Conv2DBackpropInput, Conv2DBackpropFilter, MaxPool(Grad) and AvgPool(Grad) from the
// ops-nn plugin against naive loops written here (NHWC, HWIO): SAME/VALID/EXPLICIT padding
// (EXPLICIT for convolutions and max pooling),
// strides, dilations, odd sizes, 1x1 and 5x5 kernels; shape inference; bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "conflux/session.h"
#include "conv_reference.h"
#include "graph_builder.h"
#include "nn_test_util.h"

namespace cfx {
namespace {

using namespace test;  // NOLINT

NodeDef ConvNode(const std::string& op, const Conv& c) {
  return ConvolutionNode(op, op == "Conv2D" ? 2 : 3, c.stride, c.dilation, c.padding,
                         c.explicit_pad);
}

std::vector<Conv> Configs() {
  return {
      {1, 5, 5, 1, 3, 3, 1, 1, 1, "VALID"},
      {2, 7, 6, 3, 3, 3, 4, 1, 1, "SAME"},
      {3, 9, 8, 2, 5, 5, 3, 2, 1, "SAME"},
      {2, 8, 9, 3, 2, 3, 2, 2, 1, "VALID"},
      {1, 11, 10, 2, 3, 3, 2, 1, 2, "SAME"},
      {2, 6, 7, 8, 1, 1, 5, 1, 1, "VALID"},
      {1, 6, 6, 2, 3, 3, 2, 1, 1, "EXPLICIT", {1, 2, 0, 3}},
      {2, 28, 28, 1, 5, 5, 4, 1, 1, "SAME"},
      // Grouped (TensorFlow's Conv2D with input channels a multiple of the filter's).
      {2, 7, 6, 6, 3, 3, 9, 1, 1, "SAME", {}, 3},
      {2, 9, 9, 8, 5, 5, 4, 2, 2, "EXPLICIT", {1, 2, 0, 3}, 2},
      {1, 10, 10, 16, 7, 7, 16, 1, 1, "SAME", {}, 16},  // ConvNeXt's: one channel per group
  };
}

std::string Describe(const Conv& c) {
  return c.padding + " stride " + std::to_string(c.stride) + " k" + std::to_string(c.kh) +
         " groups " + std::to_string(c.groups);
}

TEST(Conv2D, MatchesTheNaiveConvolution) {
  for (const Conv& c : Configs()) {
    SCOPED_TRACE(Describe(c));
    const Geometry g = Geo(c);
    std::vector<float> x = Ramp<float>(c.n * c.h * c.w * c.c), w = Ramp<float>(c.kh * c.kw * c.filter_in() * c.o, 1.0);
    std::vector<double> y(c.n * g.oh * g.ow * c.o, 0.0);
    ForEachTerm(c, g, /*depthwise=*/false, [&](int64_t xi, int64_t wi, int64_t yi) { y[yi] += double(x[xi]) * w[wi]; });
    Tensor out = RunNodeOk(ConvNode("Conv2D", c),
                           {MakeTensor<float>(TensorShape({c.n, c.h, c.w, c.c}), x),
                            MakeTensor<float>(TensorShape({c.kh, c.kw, c.filter_in(), c.o}), w)});
    EXPECT_EQ(out.shape(), TensorShape({c.n, g.oh, g.ow, c.o}));
    ExpectNear(y, out, 1e-4);
  }
}

// A frozen model's filter: a Const through an Identity, marked `_filter_const` by the session, so
// that the kernel keeps its reordered copy. Every step with new images matches the naive
// convolution, with the copy made once and reused.
TEST(Conv2D, ConstantFilterIsReorderedOnceAndStaysRight) {
  const Conv c{2, 9, 8, 3, 3, 3, 16, 1, 1, "SAME"};
  const Geometry g = Geo(c);
  const std::vector<float> w = Ramp<float>(c.kh * c.kw * c.c * c.o, 1.0);
  GraphBuilder b;
  b.Placeholder("x", DT_FLOAT);
  b.Const("w", MakeTensor<float>(TensorShape({c.kh, c.kw, c.c, c.o}), w));
  b.Op("w_read", "Identity", {"w"}, {{"T", AttrValue::Type(DT_FLOAT)}});
  NodeDef conv = ConvNode("Conv2D", c);
  conv.name = "y";
  conv.input = {"x", "w_read"};
  GraphDef graph = b.graph();
  graph.node.push_back(conv);
  auto session = Session::Create(&TestRuntime(), graph);
  ASSERT_TRUE(session.ok()) << session.status();
  RunMetadata meta;
  for (int step = 0; step < 3; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    std::vector<float> x = Ramp<float>(c.n * c.h * c.w * c.c, 1.0 + step);
    std::vector<double> y(c.n * g.oh * g.ow * c.o, 0.0);
    ForEachTerm(c, g, /*depthwise=*/false, [&](int64_t xi, int64_t wi, int64_t yi) { y[yi] += double(x[xi]) * w[wi]; });
    std::vector<Tensor> out;
    ASSERT_OK((*session)->Run(RunOptions(),
                              {{"x", MakeTensor<float>(TensorShape({c.n, c.h, c.w, c.c}), x)}},
                              {"y"}, {}, &out, &meta));
    ExpectNear(y, out[0], 1e-4);
  }
  bool marked = false;
  for (const auto& [device, part] : meta.partition_graphs)
    for (const NodeDef& n : part.node)
      if (n.name == "y") marked = n.attr.count("_filter_const") > 0;
  EXPECT_TRUE(marked) << "the session marks a Const filter";
}

TEST(Conv2DBackprop, InputAndFilterGradientsAreTheAdjoints) {
  for (const Conv& c : Configs()) {
    SCOPED_TRACE(Describe(c));
    const Geometry g = Geo(c);
    std::vector<float> x = Ramp<float>(c.n * c.h * c.w * c.c), w = Ramp<float>(c.kh * c.kw * c.filter_in() * c.o, 1.0);
    std::vector<float> dy = Ramp<float>(c.n * g.oh * g.ow * c.o, 2.0);
    std::vector<double> dx(x.size(), 0.0), dw(w.size(), 0.0);
    ForEachTerm(c, g, /*depthwise=*/false, [&](int64_t xi, int64_t wi, int64_t yi) {
      dx[xi] += double(dy[yi]) * w[wi];
      dw[wi] += double(dy[yi]) * x[xi];
    });
    Tensor dy_t = MakeTensor<float>(TensorShape({c.n, g.oh, g.ow, c.o}), dy);
    Tensor got_dx = RunNodeOk(ConvNode("Conv2DBackpropInput", c),
                              {MakeVector<int32_t>({int32_t(c.n), int32_t(c.h), int32_t(c.w), int32_t(c.c)}),
                               MakeTensor<float>(TensorShape({c.kh, c.kw, c.filter_in(), c.o}), w), dy_t});
    ExpectNear(dx, got_dx, 1e-4);
    Tensor got_dw = RunNodeOk(ConvNode("Conv2DBackpropFilter", c),
                              {MakeTensor<float>(TensorShape({c.n, c.h, c.w, c.c}), x),
                               MakeVector<int32_t>({int32_t(c.kh), int32_t(c.kw), int32_t(c.filter_in()), int32_t(c.o)}),
                               dy_t});
    ExpectNear(dw, got_dw, 1e-4);
  }
}

TEST(Conv2D, ShapeInference) {
  Conv c{1, 0, 0, 0, 0, 0, 0, 2, 1, "SAME"};
  auto shapes = InferShapes(ConvNode("Conv2D", c), {PartialTensorShape({-1, 28, 27, 3}),
                                                    PartialTensorShape({5, 5, 3, 8})});
  ASSERT_OK(shapes.status());
  EXPECT_EQ((*shapes)[0].ToString(), PartialTensorShape({-1, 14, 14, 8}).ToString());
  c.padding = "VALID";
  shapes = InferShapes(ConvNode("Conv2D", c), {PartialTensorShape({2, 28, 27, 3}),
                                               PartialTensorShape({5, 5, 3, 8})});
  ASSERT_OK(shapes.status());
  EXPECT_EQ((*shapes)[0].ToString(), PartialTensorShape({2, 12, 12, 8}).ToString());
  auto bad = InferShapes(ConvNode("Conv2D", c), {PartialTensorShape({2, 28, 27, 4}),
                                                 PartialTensorShape({5, 5, 3, 8})});
  ExpectError(bad.status(), Code::kInvalidArgument, "input has 4 channels");
  // Grouped: 12 input channels over a filter of 3 are 4 groups of 2 outputs each.
  shapes = InferShapes(ConvNode("Conv2D", c), {PartialTensorShape({2, 28, 27, 12}),
                                               PartialTensorShape({5, 5, 3, 8})});
  ASSERT_OK(shapes.status());
  EXPECT_EQ((*shapes)[0].ToString(), PartialTensorShape({2, 12, 12, 8}).ToString());
  bad = InferShapes(ConvNode("Conv2D", c), {PartialTensorShape({2, 28, 27, 12}),
                                            PartialTensorShape({5, 5, 3, 6})});
  ExpectError(bad.status(), Code::kInvalidArgument,
              "the filter's 6 output channels (shape [5,5,3,6]) are not a multiple of the 4 "
              "groups of the input's 12 channels");
  bad = InferShapes(ConvNode("Conv2D", c), {PartialTensorShape({2, 28, 27, 12}),
                                            PartialTensorShape({5, 5, 0, 6})});
  ExpectError(bad.status(), Code::kInvalidArgument,
              "input has 12 channels (shape [2,28,27,12]), not a positive multiple of the "
              "filter's 0 input channels");
  // No input channels against a filter that wants some: zero groups, an error rather than a
  // division of the output channels by zero.
  bad = InferShapes(ConvNode("Conv2D", c), {PartialTensorShape({2, 28, 27, 0}),
                                            PartialTensorShape({5, 5, 3, 6})});
  ExpectError(bad.status(), Code::kInvalidArgument,
              "input has 0 channels (shape [2,28,27,0]), not a positive multiple of the "
              "filter's 3 input channels (shape [5,5,3,6])");
}

// Dilations, strides and paddings are attrs of any size: window arithmetic that does not fit
// int64 is an error naming the node and the values, in inference and in the kernel.
TEST(Conv2D, WindowArithmeticBeyondInt64IsAnError) {
  const int64_t huge = int64_t{1} << 62;
  Conv dilated{1, 8, 8, 2, 3, 3, 1, 1, huge, "SAME"};
  const std::string dilation_error =
      "node node (op Conv2D): the row window of 3 with dilation 4611686018427387904 spans more "
      "than 2^63-1 elements";
  ExpectError(InferShapes(ConvNode("Conv2D", dilated),
                          {PartialTensorShape({1, 8, 8, 2}), PartialTensorShape({3, 3, 2, 1})})
                  .status(),
              Code::kInvalidArgument, dilation_error);
  Tensor x = MakeTensor<float>(TensorShape({1, 8, 8, 2}), Ramp<float>(128));
  Tensor f = MakeTensor<float>(TensorShape({3, 3, 2, 1}), Ramp<float>(18));
  ExpectError(RunKernelOnly(ConvNode("Conv2D", dilated), {x, f}, "CPU:0").status(),
              Code::kInvalidArgument, dilation_error);
  Conv padded{1, 8, 8, 2, 3, 3, 1, 1, 1, "EXPLICIT", {huge, huge, 0, 0}};
  ExpectError(RunKernelOnly(ConvNode("Conv2D", padded), {x, f}, "CPU:0").status(),
              Code::kInvalidArgument,
              "node node (op Conv2D): the row window (3, stride 1) over an input of 8 with padding "
              "4611686018427387904 + 4611686018427387904 does not fit int64 arithmetic");
}

// A window that fits int64 but not the 32-bit geometry of the convolution libraries is refused
// before oneDNN sees it (it used to fail there, as an internal error).
TEST(Conv2D, WindowBeyond32BitsIsAnError) {
  Tensor x = MakeTensor<float>(TensorShape({1, 7, 7, 2}), Ramp<float>(98));
  Tensor f = MakeTensor<float>(TensorShape({3, 3, 2, 1}), Ramp<float>(18));
  Conv dilated{1, 7, 7, 2, 3, 3, 1, 1, int64_t{1} << 31, "SAME"};
  for (auto run : {&RunNode, &RunKernelOnly})
    ExpectError(run(ConvNode("Conv2D", dilated), {x, f}, "CPU:0").status(),
                Code::kInvalidArgument,
                "node node (op Conv2D): the row window (4294967297 with dilation 2147483648, "
                "stride 1, padding 2147483648 + 2147483648) exceeds 2^31-1");
}

TEST(Conv2D, BadInputIsAnError) {
  Conv c{1, 4, 4, 2, 3, 3, 1, 1, 1, "VALID"};
  Tensor x = MakeTensor<float>(TensorShape({1, 4, 4, 2}), Ramp<float>(32));
  for (auto run : {&RunNode, &RunKernelOnly}) {
    ExpectError(run(ConvNode("Conv2D", c), {x, MakeTensor<float>(TensorShape({3, 3, 3, 1}), Ramp<float>(27))}, "CPU:0").status(),
                Code::kInvalidArgument, "channels");
    ExpectError(run(ConvNode("Conv2D", c), {x, MakeTensor<float>(TensorShape({9, 2}), Ramp<float>(18))}, "CPU:0").status(),
                Code::kInvalidArgument, "filter must have rank 4");
    ExpectError(run(ConvNode("Conv2D", c), {x, MakeTensor<float>(TensorShape({5, 5, 2, 1}), Ramp<float>(50))}, "CPU:0").status(),
                Code::kInvalidArgument, "larger than the input");
    ExpectError(run(ConvNode("Conv2D", c), {MakeTensor<float>(TensorShape({1, 4, 4, 0}), {}), MakeTensor<float>(TensorShape({3, 3, 2, 1}), Ramp<float>(18))}, "CPU:0").status(),
                Code::kInvalidArgument, "input has 0 channels");
  }
  NodeDef strided = ConvNode("Conv2D", c);
  strided.attr["strides"] = AttrValue::IntList({2, 1, 1, 1});
  ExpectError(RunKernelOnly(strided, {x, MakeTensor<float>(TensorShape({3, 3, 2, 1}), Ramp<float>(18))}, "CPU:0").status(),
              Code::kUnimplemented, "batch or channel");
}

struct Pool {
  int64_t n, h, w, c, k, stride;
  std::string padding;
  std::vector<int64_t> explicit_pad = {0, 0, 0, 0};  // top, bottom, left, right (EXPLICIT)
};

NodeDef PoolNode(const std::string& op, const Pool& p, int inputs) {
  NodeDef node = MakeNode(op, inputs, {{"T", AttrValue::Type(DT_FLOAT)},
                                       {"ksize", AttrValue::IntList({1, p.k, p.k, 1})},
                                       {"strides", AttrValue::IntList({1, p.stride, p.stride, 1})},
                                       {"padding", AttrValue::String(p.padding)}});
  if (p.padding == "EXPLICIT") {
    const std::vector<int64_t>& e = p.explicit_pad;
    node.attr["explicit_paddings"] = AttrValue::IntList({0, 0, e[0], e[1], e[2], e[3], 0, 0});
  }
  return node;
}

// Calls fn(output index, list of input indices of the window in row-major order).
template <typename Fn>
void ForEachWindow(const Pool& p, int64_t* oh, int64_t* ow, Fn fn) {
  int64_t ph, pw;
  const std::vector<int64_t>& e = p.explicit_pad;
  Window(p.h, p.k, p.stride, 1, p.padding, e[0], e[1], oh, &ph);
  Window(p.w, p.k, p.stride, 1, p.padding, e[2], e[3], ow, &pw);
  for (int64_t b = 0; b < p.n; ++b)
    for (int64_t y = 0; y < *oh; ++y)
      for (int64_t x = 0; x < *ow; ++x)
        for (int64_t ch = 0; ch < p.c; ++ch) {
          std::vector<int64_t> idx;
          for (int64_t ky = 0; ky < p.k; ++ky)
            for (int64_t kx = 0; kx < p.k; ++kx) {
              const int64_t iy = y * p.stride + ky - ph, ix = x * p.stride + kx - pw;
              if (iy >= 0 && iy < p.h && ix >= 0 && ix < p.w)
                idx.push_back(((b * p.h + iy) * p.w + ix) * p.c + ch);
            }
          fn(((b * *oh + y) * *ow + x) * p.c + ch, idx);
        }
}

std::vector<Pool> Pools() {
  // EXPLICIT (max pooling only): paddings up to one less than the window, uneven on each side.
  return {{2, 28, 28, 4, 2, 2, "VALID"},          {1, 7, 5, 3, 3, 2, "SAME"},
          {2, 6, 6, 2, 3, 1, "SAME"},             {1, 9, 8, 5, 2, 3, "VALID"},
          {1, 7, 6, 3, 3, 2, "EXPLICIT", {2, 0, 1, 2}}, {2, 5, 5, 2, 2, 1, "EXPLICIT", {1, 1, 0, 1}}};
}

TEST(Pooling, MaxAndAvgAndTheirGradientsMatchTheNaiveLoops) {
  for (const Pool& p : Pools()) {
    SCOPED_TRACE(p.padding + " k" + std::to_string(p.k) + " s" + std::to_string(p.stride));
    std::vector<float> x = Ramp<float>(p.n * p.h * p.w * p.c);
    // Repeated values make ties: the first maximum of a window must take the gradient.
    for (size_t i = 0; i < x.size(); i += 7) x[i] = 2.5f;
    int64_t oh = 0, ow = 0;
    std::vector<double> mx, avg;
    ForEachWindow(p, &oh, &ow, [&](int64_t, const std::vector<int64_t>&) {});
    mx.assign(p.n * oh * ow * p.c, 0);
    avg.assign(mx.size(), 0);
    std::vector<float> dy = Ramp<float>(mx.size(), 1.0);
    std::vector<double> dmax(x.size(), 0), davg(x.size(), 0);
    ForEachWindow(p, &oh, &ow, [&](int64_t o, const std::vector<int64_t>& idx) {
      int64_t best = idx[0];
      double sum = 0;
      for (int64_t i : idx) {
        if (x[i] > x[best]) best = i;
        sum += x[i];
      }
      mx[o] = x[best];
      avg[o] = sum / idx.size();
      dmax[best] += dy[o];
      for (int64_t i : idx) davg[i] += dy[o] / double(idx.size());
    });
    const TensorShape in_shape({p.n, p.h, p.w, p.c}), out_shape({p.n, oh, ow, p.c});
    Tensor xt = MakeTensor<float>(in_shape, x), dyt = MakeTensor<float>(out_shape, dy);
    Tensor got_max = RunNodeOk(PoolNode("MaxPool", p, 1), {xt});
    ExpectNear(mx, got_max, 1e-6);
    ExpectNear(dmax, RunNodeOk(PoolNode("MaxPoolGrad", p, 3), {xt, got_max, dyt}), 1e-6);
    if (p.padding == "EXPLICIT") continue;  // not in AvgPool's OpDef
    ExpectNear(avg, RunNodeOk(PoolNode("AvgPool", p, 1), {xt}), 1e-5);
    ExpectNear(davg, RunNodeOk(PoolNode("AvgPoolGrad", p, 2),
                               {MakeVector<int32_t>({int32_t(p.n), int32_t(p.h), int32_t(p.w), int32_t(p.c)}), dyt}),
               1e-5);
  }
}

TEST(Pooling, ShapesAndErrors) {
  Pool p{1, 0, 0, 0, 2, 2, "SAME"};
  auto shapes = InferShapes(PoolNode("MaxPool", p, 1), {PartialTensorShape({-1, 7, 28, 32})});
  ASSERT_OK(shapes.status());
  EXPECT_EQ((*shapes)[0].ToString(), PartialTensorShape({-1, 4, 14, 32}).ToString());
  NodeDef bad = PoolNode("MaxPool", p, 1);
  bad.attr["ksize"] = AttrValue::IntList({2, 2, 2, 1});
  ExpectError(RunKernelOnly(bad, {MakeTensor<float>(TensorShape({1, 2, 2, 1}), {1, 2, 3, 4})}, "CPU:0").status(),
              Code::kUnimplemented, "ksize");
  ExpectError(RunNode(PoolNode("AvgPool", p, 1), {MakeTensor<float>(TensorShape({4}), {1, 2, 3, 4})}, "CPU:0").status(),
              Code::kInvalidArgument, "rank 4");
  // A padding as large as the window would make windows of padding alone.
  Pool wide{1, 4, 4, 1, 2, 1, "EXPLICIT", {0, 2, 0, 0}};
  ExpectError(RunKernelOnly(PoolNode("MaxPool", wide, 1), {MakeTensor<float>(TensorShape({1, 4, 4, 1}), Ramp<float>(16))}, "CPU:0").status(),
              Code::kInvalidArgument, "must be smaller than the window (2 x 2)");
}

// Rows of 2^40 pixels without channels, or 2^31 images without columns: no element to read or
// write, so the pools return at once instead of walking every window.
TEST(Pooling, EmptyTensorsWithHugeDimensionsFinishAtOnce) {
  const int64_t huge = int64_t{1} << 40;
  Pool p{1, huge, 2, 0, 2, 2, "SAME"};
  const Tensor x(DT_FLOAT, TensorShape({1, huge, 2, 0}));
  const TensorShape pooled({1, huge / 2, 1, 0});
  for (const char* op : {"MaxPool", "AvgPool"})
    EXPECT_EQ(RunNodeOk(PoolNode(op, p, 1), {x}).shape(), pooled) << op;
  const Tensor dy(DT_FLOAT, pooled);
  EXPECT_EQ(RunNodeOk(PoolNode("MaxPoolGrad", p, 3), {x, Tensor(DT_FLOAT, pooled), dy}).shape(),
            x.shape());
  const Tensor sizes = MakeTensor<int32_t>(TensorShape({4}), {1, 1 << 30, 2, 0});
  const TensorShape half({1, 1 << 29, 1, 0});
  EXPECT_EQ(RunNodeOk(PoolNode("AvgPoolGrad", p, 2), {sizes, Tensor(DT_FLOAT, half)}).shape(),
            TensorShape({1, 1 << 30, 2, 0}));
  const Tensor images(DT_FLOAT, TensorShape({int64_t{1} << 31, 6, 0, 2}));
  for (const char* op : {"MaxPool", "AvgPool"})
    EXPECT_EQ(RunNodeOk(PoolNode(op, p, 1), {images}).shape(),
              TensorShape({int64_t{1} << 31, 3, 0, 2}))
        << op;
}

}  // namespace
}  // namespace cfx
