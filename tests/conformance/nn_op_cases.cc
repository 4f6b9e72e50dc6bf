// Conformance cases of the ops-nn plugin's BiasAddGrad, activations, losses, batch normalization
// and InTopKV2 (see conformance_cases.h). Tolerances follow the classes of conformance_cases.cc;
// batch normalization gets its own (rtol = atol = 1e-4): its per-channel sums are taken in a
// different order on each device and then divide every element.
#include <string>
#include <vector>

#include "conformance_cases.h"

namespace cfx::conformance {
namespace {

using Shape = TensorShape;

constexpr Tolerance kNormalization{false, 1e-4, 1e-4};

OpEntry Activation(Range x, Tolerance tol) {
  return {[x](Gen& g) {
            std::vector<Case> cases;
            for (const Shape& s : UnaryShapes())
              cases.push_back({"features=" + s.ToString(), {g.Random(g.Input(0), s, x)}, {}});
            return cases;
          },
          tol, ""};
}

// Gradient ops: (gradients, features or outputs) of one shape.
OpEntry ActivationGrad(Range second, Tolerance tol) {
  return {[second](Gen& g) {
            std::vector<Case> cases;
            for (const Shape& s : UnaryShapes())
              cases.push_back(
                  {"gradients=" + s.ToString(),
                   {g.Random(g.Input(0), s, {-3, 3, -3, 3}), g.Random(g.Input(1), s, second)},
                   {}});
            return cases;
          },
          tol, ""};
}

OpEntry CrossEntropy() {
  return {
      [](Gen& g) {
        static const std::vector<std::pair<Shape, Shape>> shapes = {
            {{1, 1}, {1, 1}}, {{7, 33}, {7, 33}}, {{4, 257}, {4, 257}},
            {{0, 5}, {0, 5}}, {{3, 0}, {3, 0}},   {{3, 5}, {5}},
            {{3, 5}, {3, 1}}, {{1, 5}, {3, 5}},   {{1024, 1024}, {1024, 1024}}};
        std::vector<Case> cases;
        for (const auto& [f, l] : shapes)
          cases.push_back({"features=" + f.ToString() + " labels=" + l.ToString(),
                           {g.Random(g.Input(0), f, {-10, 10}), g.Random(g.Input(1), l, {0, 1})},
                           {}});
        return cases;
      },
      kTranscendental, ""};
}

OpEntry SparseCrossEntropy() {
  return {
      [](Gen& g) {
        static const std::vector<Shape> shapes = {{1, 1}, {7, 33}, {4, 257}, {0, 5}, {1024, 1024}};
        std::vector<Case> cases;
        for (const Shape& s : shapes)
          cases.push_back({"features=" + s.ToString(),
                           {g.Random(g.Input(0), s, {-10, 10}),
                            g.Random(g.Input(1), {s.dim(0)}, {0, 0, 0, s.dim(1) - 1})},
                           {}});
        return cases;
      },
      kTranscendental, ""};
}

OpEntry InTopK() {
  return {
      [](Gen& g) {
        static const std::vector<Shape> shapes = {{1, 1}, {7, 33}, {0, 5}, {257, 10}, {64, 1000}};
        std::vector<Case> cases;
        for (const Shape& s : shapes)
          for (int k : {1, 5}) {
            // Values on a grid of 0.5 so that ties occur; one target out of range.
            Tensor targets = g.Random(g.Input(1), {s.dim(0)}, {0, 0, 0, s.dim(1)});
            cases.push_back({"predictions=" + s.ToString() + " k=" + std::to_string(k),
                             {g.Random(DT_FLOAT, s, {-3, 3, 0, 0, false, 0.5}), targets,
                              Gen::Scalar(g.Input(2), k)},
                             {}});
          }
        return cases;
      },
      kExact, ""};
}

OpEntry BiasAddGrad() {
  return {[](Gen& g) {
            static const std::vector<std::pair<Shape, const char*>> specs = {
                {{7, 3}, "NHWC"},       {{2, 4, 5, 33}, "NHWC"}, {{0, 3}, "NHWC"},
                {{2, 3, 4, 5}, "NCHW"}, {{2, 3}, "NCHW"},        {{1024, 1024}, "NHWC"}};
            std::vector<Case> cases;
            for (const auto& [s, format] : specs)
              cases.push_back({"out_backprop=" + s.ToString() + " " + format,
                               {g.Random(g.Input(0), s, {0, 1, 0, 10})},
                               {{"data_format", AttrValue::String(format)}}});
            return cases;
          },
          kReduction, ""};
}

struct BatchNormSpec {
  Shape x;
  const char* format;
  bool training;
  float factor;
};

// Both layouts, training with and without averaging, inference, the 3-D formats, empty batches,
// one channel, odd sizes, planes longer than a GPU block takes at once (inner > 4096), thousands
// of channels, and one channel of 2^20 elements.
const std::vector<BatchNormSpec>& BatchNormSpecs() {
  static const std::vector<BatchNormSpec> specs = {
      {{2, 4, 4, 3}, "NHWC", true, 1.0f},     {{2, 3, 4, 4}, "NCHW", true, 1.0f},
      {{2, 4, 4, 3}, "NHWC", true, 0.1f},     {{2, 4, 4, 3}, "NHWC", false, 1.0f},
      {{2, 3, 4, 4}, "NCHW", false, 1.0f},    {{2, 2, 3, 3, 5}, "NDHWC", true, 1.0f},
      {{0, 4, 4, 3}, "NHWC", true, 1.0f},     {{32, 14, 14, 64}, "NHWC", true, 1.0f},
      {{8, 64, 14, 14}, "NCHW", true, 1.0f},  {{5, 3, 7, 1}, "NHWC", true, 0.3f},
      {{5, 3, 7, 1}, "NHWC", false, 1.0f},    {{5, 1, 3, 7}, "NCHW", true, 1.0f},
      {{3, 33, 5, 7}, "NCHW", true, 0.3f},    {{3, 5, 7, 33}, "NHWC", false, 1.0f},
      {{2, 5, 2, 3, 3}, "NCDHW", true, 1.0f}, {{0, 3, 4, 4}, "NCHW", false, 1.0f},
      {{2, 3, 70, 70}, "NCHW", true, 1.0f},   {{4, 3, 3, 2000}, "NHWC", true, 1.0f},
      {{1024, 32, 32, 1}, "NHWC", true, 1.0f}};
  return specs;
}

int64_t Channels(const BatchNormSpec& s) {
  return std::string(s.format).back() == 'C' ? s.x.dim(s.x.rank() - 1) : s.x.dim(1);
}

AttrMap BatchNormAttrs(const BatchNormSpec& s, bool forward) {
  AttrMap a = {{"epsilon", AttrValue::Float(1e-3f)},
               {"data_format", AttrValue::String(s.format)},
               {"is_training", AttrValue::Bool(s.training)}};
  if (forward) a["exponential_avg_factor"] = AttrValue::Float(s.factor);
  return a;
}

std::string BatchNormName(const BatchNormSpec& s) {
  return "x=" + s.x.ToString() + " " + s.format + (s.training ? " training" : " inference") +
         " factor=" + std::to_string(s.factor);
}

OpEntry BatchNorm() {
  return {[](Gen& g) {
            std::vector<Case> cases;
            for (const BatchNormSpec& s : BatchNormSpecs()) {
              const Shape c{Channels(s)};
              const DataType u = g.Input(1);
              cases.push_back(
                  {BatchNormName(s),
                   {g.Random(g.Input(0), s.x, {-3, 3}), g.Random(u, c, {0.5, 2}),
                    g.Random(u, c, {-1, 1}), g.Random(u, c, {-1, 1}), g.Random(u, c, {0.5, 2})},
                   BatchNormAttrs(s, true)});
            }
            return cases;
          },
          kNormalization, ""};
}

OpEntry BatchNormGrad() {
  return {
      [](Gen& g) {
        std::vector<Case> cases;
        for (const BatchNormSpec& s : BatchNormSpecs()) {
          if (s.factor != 1.0f) continue;  // a forward-only attr
          const Shape c{Channels(s)};
          const DataType u = g.Input(3);
          cases.push_back({BatchNormName(s),
                           {g.Random(g.Input(0), s.x, {-1, 1}), g.Random(g.Input(1), s.x, {-3, 3}),
                            g.Random(g.Input(2), c, {0.5, 2}), g.Random(u, c, {-1, 1}),
                            g.Random(u, c, {0.5, 2}), Gen::Scalar(u, 0)},
                           BatchNormAttrs(s, false)});
        }
        return cases;
      },
      kNormalization, ""};
}

}  // namespace

void AddNnOpCases(std::map<std::string, OpEntry>& t) {
  const Range any{-10, 10, -10, 10};
  t["Relu6"] = Activation({-3, 9, -3, 9}, kExact);
  t["Relu6Grad"] = ActivationGrad({-3, 9, -3, 9}, kExact);
  t["LeakyRelu"] = Activation(any, kExact);
  t["LeakyReluGrad"] = ActivationGrad(any, kExact);
  for (const char* op : {"Elu", "Selu", "Softplus"}) t[op] = Activation(any, kTranscendental);
  t["Softsign"] = Activation(any, kArithmetic);
  t["SoftsignGrad"] = ActivationGrad(any, kArithmetic);
  // EluGrad and SeluGrad take the forward outputs, which are > -1.76 (Selu) and > -1 (Elu).
  t["EluGrad"] = ActivationGrad({-0.99, 5}, kArithmetic);
  t["SeluGrad"] = ActivationGrad({-1.75, 5}, kArithmetic);
  t["SoftplusGrad"] = ActivationGrad(any, kTranscendental);
  t["SoftmaxCrossEntropyWithLogits"] = CrossEntropy();
  t["SparseSoftmaxCrossEntropyWithLogits"] = SparseCrossEntropy();
  t["L2Loss"] = Activation({0, 1}, kReduction);
  t["InTopKV2"] = InTopK();
  t["FusedBatchNormV3"] = BatchNorm();
  t["FusedBatchNormGradV3"] = BatchNormGrad();
  t["BiasAddGrad"] = BiasAddGrad();
}

}  // namespace cfx::conformance
