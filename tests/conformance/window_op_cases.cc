// Conformance cases of the window ops of the ops-nn plugin: Conv2D, DepthwiseConv2dNative and
// their backprops, MaxPool, AvgPool and their gradients (see conformance_cases.h). The geometries
// cover symmetric and asymmetric SAME padding (an even window, or a stride that does not divide
// the input), VALID, EXPLICIT, dilation, channel multipliers 1 to 3, an empty batch, and one
// layer of the Fashion-MNIST CNN's (and a MobileNet block's) size. Shapes of
// the outputs are written out by hand per geometry (an oracle independent of the kernels' own
// window arithmetic).
#include <string>
#include <vector>

#include "conformance_cases.h"

namespace cfx::conformance {
namespace {

using Shape = TensorShape;

struct ConvSpec {
  Shape input, filter, output;
  int64_t stride, dilation;
  std::string padding;
  std::vector<int64_t> explicit_pad;  // top, bottom, left, right
};

const std::vector<ConvSpec>& ConvSpecs() {
  static const std::vector<ConvSpec> specs = {
      {{2, 7, 7, 3}, {3, 3, 3, 4}, {2, 7, 7, 4}, 1, 1, "SAME", {}},
      {{2, 8, 8, 3}, {2, 2, 3, 5}, {2, 8, 8, 5}, 1, 1, "SAME", {}},  // pads 0 and 1
      {{1, 9, 9, 2}, {3, 3, 2, 3}, {1, 4, 4, 3}, 2, 1, "VALID", {}},
      {{2, 10, 10, 4}, {3, 3, 4, 2}, {2, 5, 5, 2}, 2, 1, "SAME", {}},  // pads 0 and 1
      {{1, 7, 7, 2}, {3, 3, 2, 2}, {1, 7, 7, 2}, 1, 2, "SAME", {}},    // dilation 2
      {{1, 6, 6, 2}, {3, 3, 2, 3}, {1, 6, 8, 3}, 1, 1, "EXPLICIT", {2, 0, 1, 3}},
      {{0, 5, 5, 3}, {3, 3, 3, 2}, {0, 5, 5, 2}, 1, 1, "SAME", {}},
      {{16, 14, 14, 32}, {5, 5, 32, 64}, {16, 14, 14, 64}, 1, 1, "SAME", {}},
  };
  return specs;
}

// Filters [kh, kw, channels, multiplier]: outputs have channels * multiplier channels.
const std::vector<ConvSpec>& DepthwiseSpecs() {
  static const std::vector<ConvSpec> specs = {
      {{2, 7, 7, 3}, {3, 3, 3, 1}, {2, 7, 7, 3}, 1, 1, "SAME", {}},
      {{2, 8, 8, 3}, {2, 2, 3, 2}, {2, 8, 8, 6}, 1, 1, "SAME", {}},  // pads 0 and 1
      {{1, 9, 9, 2}, {3, 3, 2, 2}, {1, 4, 4, 4}, 2, 1, "VALID", {}},
      {{2, 10, 10, 4}, {3, 3, 4, 1}, {2, 5, 5, 4}, 2, 1, "SAME", {}},  // pads 0 and 1
      {{1, 7, 7, 2}, {3, 3, 2, 2}, {1, 7, 7, 4}, 1, 2, "SAME", {}},    // dilation 2
      {{1, 6, 6, 2}, {3, 3, 2, 3}, {1, 6, 8, 6}, 1, 1, "EXPLICIT", {2, 0, 1, 3}},
      {{0, 5, 5, 3}, {3, 3, 3, 2}, {0, 5, 5, 6}, 1, 1, "SAME", {}},
      {{4, 14, 14, 96}, {3, 3, 96, 1}, {4, 7, 7, 96}, 2, 1, "SAME", {}},  // a MobileNet block
  };
  return specs;
}

AttrMap ConvAttrs(const ConvSpec& s) {
  AttrMap a = {{"strides", AttrValue::IntList({1, s.stride, s.stride, 1})},
               {"dilations", AttrValue::IntList({1, s.dilation, s.dilation, 1})},
               {"padding", AttrValue::String(s.padding)}};
  if (!s.explicit_pad.empty())
    a["explicit_paddings"] = AttrValue::IntList(
        {0, 0, s.explicit_pad[0], s.explicit_pad[1], s.explicit_pad[2], s.explicit_pad[3], 0, 0});
  return a;
}

std::string ConvName(const ConvSpec& s) {
  return "input=" + s.input.ToString() + " filter=" + s.filter.ToString() + " " + s.padding +
         " stride=" + std::to_string(s.stride) + " dilation=" + std::to_string(s.dilation);
}

Tensor SizesOf(const Shape& s) {
  std::vector<double> dims;
  for (int i = 0; i < s.rank(); ++i) dims.push_back(static_cast<double>(s.dim(i)));
  return Gen::Vector(DT_INT32, dims);
}

// `which`: 0 the convolution (input, filter), 1 its BackpropInput (input_sizes, filter,
// out_backprop), 2 its BackpropFilter (input, filter_sizes, out_backprop); `specs` Conv2D's or
// DepthwiseConv2dNative's geometries.
OpEntry Conv(int which, const std::vector<ConvSpec>& (*specs)()) {
  return {[which, specs](Gen& g) {
            const Range unit{-1, 1};
            std::vector<Case> cases;
            for (const ConvSpec& s : specs()) {
              const DataType t = g.Attr("T");
              std::vector<Tensor> in;
              if (which == 0) in = {g.Random(t, s.input, unit), g.Random(t, s.filter, unit)};
              if (which == 1)
                in = {SizesOf(s.input), g.Random(t, s.filter, unit), g.Random(t, s.output, unit)};
              if (which == 2)
                in = {g.Random(t, s.input, unit), SizesOf(s.filter), g.Random(t, s.output, unit)};
              cases.push_back({ConvName(s), std::move(in), ConvAttrs(s)});
            }
            return cases;
          },
          kMatMul, ""};
}

struct PoolSpec {
  Shape input, output;
  int64_t ksize, stride;
  std::string padding;
  std::vector<int64_t> explicit_pad;  // top, bottom, left, right (MaxPool and MaxPoolGrad)
};

const std::vector<PoolSpec>& PoolSpecs() {
  static const std::vector<PoolSpec> specs = {
      {{2, 7, 7, 3}, {2, 4, 4, 3}, 3, 2, "SAME", {}},
      {{2, 8, 8, 4}, {2, 4, 4, 4}, 2, 2, "VALID", {}},
      {{1, 6, 6, 2}, {1, 6, 6, 2}, 3, 1, "SAME", {}},  // overlapping windows
      {{1, 5, 5, 2}, {1, 3, 3, 2}, 2, 2, "SAME", {}},  // pads 0 and 1
      {{1, 6, 6, 2}, {1, 3, 3, 2}, 3, 2, "EXPLICIT", {0, 2, 1, 1}},
      {{0, 4, 4, 3}, {0, 2, 2, 3}, 2, 2, "VALID", {}},
      {{64, 28, 28, 32}, {64, 14, 14, 32}, 2, 2, "SAME", {}},
  };
  return specs;
}

AttrMap PoolAttrs(const PoolSpec& s) {
  AttrMap a = {{"ksize", AttrValue::IntList({1, s.ksize, s.ksize, 1})},
               {"strides", AttrValue::IntList({1, s.stride, s.stride, 1})},
               {"padding", AttrValue::String(s.padding)}};
  if (!s.explicit_pad.empty())
    a["explicit_paddings"] = AttrValue::IntList(
        {0, 0, s.explicit_pad[0], s.explicit_pad[1], s.explicit_pad[2], s.explicit_pad[3], 0, 0});
  return a;
}

// `op`: MaxPool, MaxPoolGrad, AvgPool or AvgPoolGrad. Values on a grid of 0.5, so that windows
// hold ties (the gradient goes to the first maximum). AvgPool takes no EXPLICIT padding.
OpEntry Pool(const std::string& op, Tolerance tol) {
  return {[op](Gen& g) {
            const Range grid{-3, 3, 0, 0, false, 0.5};
            std::vector<Case> cases;
            for (const PoolSpec& s : PoolSpecs()) {
              if (s.padding == "EXPLICIT" && op.rfind("Avg", 0) == 0) continue;
              const DataType t = g.Attr("T");
              std::vector<Tensor> in;
              if (op == "MaxPool" || op == "AvgPool") in = {g.Random(t, s.input, grid)};
              if (op == "MaxPoolGrad")
                in = {g.Random(t, s.input, grid), g.Random(t, s.output, grid),
                      g.Random(t, s.output, grid)};
              if (op == "AvgPoolGrad") in = {SizesOf(s.input), g.Random(t, s.output, grid)};
              cases.push_back({"input=" + s.input.ToString() + " ksize=" + std::to_string(s.ksize) +
                                   " stride=" + std::to_string(s.stride) + " " + s.padding,
                               std::move(in), PoolAttrs(s)});
            }
            return cases;
          },
          tol, ""};
}

}  // namespace

void AddWindowOpCases(std::map<std::string, OpEntry>& t) {
  t["Conv2D"] = Conv(0, &ConvSpecs);
  t["Conv2DBackpropInput"] = Conv(1, &ConvSpecs);
  t["Conv2DBackpropFilter"] = Conv(2, &ConvSpecs);
  t["DepthwiseConv2dNative"] = Conv(0, &DepthwiseSpecs);
  t["DepthwiseConv2dNativeBackpropInput"] = Conv(1, &DepthwiseSpecs);
  t["DepthwiseConv2dNativeBackpropFilter"] = Conv(2, &DepthwiseSpecs);
  // Maxima and sums of gradients in the CPU's order: bit for bit. Means multiply by a reciprocal,
  // which a device may fuse with the sum.
  t["MaxPool"] = Pool("MaxPool", kExact);
  t["MaxPoolGrad"] = Pool("MaxPoolGrad", kExact);
  t["AvgPool"] = Pool("AvgPool", kArithmetic);
  t["AvgPoolGrad"] = Pool("AvgPoolGrad", kArithmetic);
}

}  // namespace cfx::conformance
