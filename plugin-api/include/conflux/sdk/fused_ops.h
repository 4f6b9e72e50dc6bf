// The epilogue of TensorFlow's fused contractions, _FusedConv2D and _FusedMatMul, as their CPU
// kernels read it from the attrs `fused_ops`, `num_args` and `leakyrelu_alpha`: a bias added per
// output channel, optionally an addend of the output's shape, then optionally an activation
// (GELU only after a matrix product, as TensorFlow's _FusedMatMul).
// TensorFlow's grappler writes these nodes for the CPU, and Conflux's own remapper pass
// (core/src/passes/remapper.h) writes the same ones.
// Pure: thread-safe.
#ifndef CONFLUX_SDK_FUSED_OPS_H_
#define CONFLUX_SDK_FUSED_OPS_H_

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "conflux/sdk/status.h"
#include "conflux/sdk/tensor.h"

namespace cfx::sdk {

enum class FusedActivation { kNone, kRelu, kRelu6, kElu, kLeakyRelu, kGeluExact, kGeluApproximate };

// GELU as TensorFlow computes it unfused (tf.nn.gelu with approximate=False, Keras' "gelu"):
// (0.5 * x) * erfc(-x * s), with s = 1/sqrt(2) rounded to float.
inline constexpr float kGeluErfcScale = 0.70710678118654752f;
// Its tanh approximation (tf.nn.gelu with approximate=True):
// (0.5 * x) * (1 + tanh(a * (x + b * x^3))), with a = sqrt(2/pi) and b = 0.044715 as floats.
inline constexpr float kGeluTanhScale = 0.7978845608028654f;
inline constexpr float kGeluTanhCubic = 0.044715f;

// One value of the tanh approximation, with x * x * x for TensorFlow's Pow(x, 3) (which glibc's
// powf may round differently, by an ulp of a term 0.044715 times smaller than x).
inline float GeluTanh(float v) {
  return 0.5f * v * (1.0f + std::tanh(kGeluTanhScale * (v + kGeluTanhCubic * (v * v * v))));
}

// The epilogues a kernel takes besides BiasAdd and Relu, Relu6, Elu, LeakyRelu.
struct FusedEpilogueKinds {
  bool add = false;   // "Add" with a second arg (_FusedConv2D)
  bool gelu = false;  // "GeluExact" and "GeluApproximate" (_FusedMatMul)
};

struct FusedEpilogue {
  // An addend after the bias (TensorFlow's "BiasAdd", "Add": args[1], a tensor of the output's
  // shape, such as a residual connection's shortcut), before the activation.
  bool add = false;
  FusedActivation activation = FusedActivation::kNone;
  float leakyrelu_alpha = 0.2f;  // the negative slope of kLeakyRelu
};

// fused_ops = ["BiasAdd"] or ["BiasAdd", one of Relu, Relu6, Elu, LeakyRelu], with num_args = 1
// (the bias); with `allowed.gelu` also ["BiasAdd", "GeluExact"] and ["BiasAdd", "GeluApproximate"];
// with `allowed.add` (a kernel that takes an addend) also ["BiasAdd", "Add"] and ["BiasAdd", "Add",
// activation] with num_args = 2 (the bias, the addend), as TensorFlow's oneDNN _FusedConv2D takes
// them. Other combinations that TensorFlow defines (FusedBatchNorm, Tanh, Sigmoid, ...) are
// Unimplemented naming the node and what it asks for.
inline Result<FusedEpilogue> ReadFusedEpilogue(const Attrs& attrs,
                                               FusedEpilogueKinds allowed = {}) {
  std::vector<std::string> ops;
  CFX_SDK_RETURN_IF_ERROR(attrs.Get("fused_ops", &ops));
  int64_t num_args = 0;
  CFX_SDK_RETURN_IF_ERROR(attrs.Get("num_args", &num_args));
  FusedEpilogue e;
  CFX_SDK_RETURN_IF_ERROR(attrs.GetOr("leakyrelu_alpha", &e.leakyrelu_alpha, 0.2f));
  const std::pair<const char*, FusedActivation> kActivations[] = {
      {"Relu", FusedActivation::kRelu},
      {"Relu6", FusedActivation::kRelu6},
      {"Elu", FusedActivation::kElu},
      {"LeakyRelu", FusedActivation::kLeakyRelu},
      {"GeluExact", FusedActivation::kGeluExact},
      {"GeluApproximate", FusedActivation::kGeluApproximate}};
  e.add = allowed.add && ops.size() >= 2 && ops[1] == "Add";
  const size_t first_activation = e.add ? 2 : 1;
  bool known = !ops.empty() && ops.size() <= first_activation + 1 && ops[0] == "BiasAdd" &&
               num_args == (e.add ? 2 : 1);
  if (known && ops.size() == first_activation + 1) {
    known = false;
    for (const auto& [name, activation] : kActivations) {
      if (ops[first_activation] != name) continue;
      const bool gelu = activation == FusedActivation::kGeluExact ||
                        activation == FusedActivation::kGeluApproximate;
      if (gelu && (!allowed.gelu || e.add)) break;
      e.activation = activation;
      known = true;
    }
  }
  if (known) return e;
  std::string asked;
  for (const std::string& op : ops) asked += (asked.empty() ? "" : ", ") + op;
  return Unimplemented(
      "node ", attrs.node_name(), " fuses [", asked, "] with num_args ", num_args,
      "; the CPU kernel fuses BiasAdd (one arg), ",
      allowed.add ? "optionally Add (a second arg), " : "",
      "optionally followed by Relu, Relu6, Elu or LeakyRelu",
      allowed.gelu ? " (or by GeluExact or GeluApproximate, after the bias alone)" : "");
}

// The activation of `e` on one value, as the unfused ops compute it (NaN stays NaN). For the
// rare outputs a kernel fills without its library (an empty contraction: the bias alone).
inline float ApplyFusedActivation(const FusedEpilogue& e, float v) {
  switch (e.activation) {
    case FusedActivation::kNone:
      return v;
    case FusedActivation::kRelu:
      return v < 0.0f ? 0.0f : v;
    case FusedActivation::kRelu6:
      return v < 0.0f ? 0.0f : (v > 6.0f ? 6.0f : v);
    case FusedActivation::kElu:
      return v < 0.0f ? std::expm1(v) : v;
    case FusedActivation::kLeakyRelu:
      return v > 0.0f || std::isnan(v) ? v : v * e.leakyrelu_alpha;
    case FusedActivation::kGeluExact:
      return 0.5f * v * std::erfc(-v * kGeluErfcScale);
    case FusedActivation::kGeluApproximate:
      return GeluTanh(v);
  }
  return v;
}

// Fills `out` (rows of `channels`) with the activation of the bias: the fused op's result when
// the contraction sums nothing (an empty input channel or inner dimension).
inline void FillWithActivatedBias(const FusedEpilogue& e, const float* bias, int64_t channels,
                                  int64_t rows, float* out) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < channels; ++c) out[r * channels + c] = ApplyFusedActivation(e, bias[c]);
}

}  // namespace cfx::sdk

#endif  // CONFLUX_SDK_FUSED_OPS_H_
