// _FusedConv2D and _FusedMatMul on CPU: each fused kernel against the unfused composition
// (Conv2D or MatMul, then BiasAdd, then an addend for the convolution, then the activation, each
// through its own kernel) for every epilogue, geometries with padding, strides and dilation, transposes, the empty contraction and
// bad input; whole graphs run with and without the remapper pass (config `remapping`), which
// must agree and differ in the nodes their partitions hold; and a graph TensorFlow fused.
//
// Tolerance: the fused primitive sums the same products as the unfused one but may be another
// oneDNN implementation (another summation order) and adds the bias before the sum is rounded
// to float; with these inputs (|x| <= 3, up to 45 products) partial sums stay below ~300, whose
// float ulp is 3e-5, so the two agree within a few of those ulps: 2e-4 absolute, 1e-5 relative.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "conflux/graph_def.h"
#include "conflux/runtime.h"
#include "conflux/session.h"
#include "conv_reference.h"
#include "graph_builder.h"
#include "nn_test_util.h"

namespace cfx {
namespace {

using namespace test;  // NOLINT

constexpr double kAtol = 2e-4, kRtol = 1e-5;

struct Epilogue {
  std::string activation;  // "" = BiasAdd only
  float alpha = 0.2f;      // LeakyRelu's
};

const std::vector<Epilogue> kEpilogues = {
    {""}, {"Relu"}, {"Relu6"}, {"Elu"}, {"LeakyRelu", 0.3f}, {"LeakyRelu", 0.2f}};

std::vector<std::string> FusedOpsOf(const Epilogue& e) {
  if (e.activation.empty()) return {"BiasAdd"};
  return {"BiasAdd", e.activation};
}

void SetEpilogueAttrs(const Epilogue& e, NodeDef* n) {
  n->attr["fused_ops"] = AttrValue::StringList(FusedOpsOf(e));
  n->attr["num_args"] = AttrValue::Int(1);
  n->attr["leakyrelu_alpha"] = AttrValue::Float(e.alpha);
}

// BiasAdd then the activation of `e`, each through its own kernel.
Tensor Unfused(const Epilogue& e, const Tensor& product, const Tensor& bias) {
  Tensor y = RunNodeOk(MakeNode("BiasAdd", 2, {{"T", AttrValue::Type(DT_FLOAT)}}), {product, bias});
  if (e.activation.empty()) return y;
  NodeDef act = MakeNode(e.activation, 1, {{"T", AttrValue::Type(DT_FLOAT)}});
  if (e.activation == "LeakyRelu") act.attr["alpha"] = AttrValue::Float(e.alpha);
  return RunNodeOk(act, {y});
}

NodeDef FusedConvNode(const Conv& c, const Epilogue& e) {
  NodeDef n = ConvolutionNode("_FusedConv2D", 3, c.stride, c.dilation, c.padding, c.explicit_pad);
  n.attr["TArgs"] = AttrValue::TypeList({DT_FLOAT});
  SetEpilogueAttrs(e, &n);
  return n;
}

// The input, filter and bias of `c` and their plain Conv2D.
struct ConvCase {
  Tensor x, w, bias, conv;
};

ConvCase ConvOperands(const Conv& c) {
  ConvCase k;
  k.x = MakeTensor<float>({c.n, c.h, c.w, c.c}, Ramp<float>(c.n * c.h * c.w * c.c));
  k.w = MakeTensor<float>({c.kh, c.kw, c.c, c.o}, Ramp<float>(c.kh * c.kw * c.c * c.o, 1.0));
  k.bias = MakeTensor<float>({c.o}, Ramp<float>(c.o, 4.0));
  k.conv = RunNodeOk(ConvolutionNode("Conv2D", 2, c.stride, c.dilation, c.padding, c.explicit_pad),
                     {k.x, k.w});
  return k;
}

TEST(FusedConv2D, MatchesConv2DThenBiasAddThenActivation) {
  const std::vector<Conv> configs = {
      {2, 7, 6, 3, 3, 3, 4, 1, 1, "SAME"},  {3, 9, 8, 2, 5, 5, 3, 2, 1, "SAME"},
      {2, 8, 9, 3, 2, 3, 2, 2, 1, "VALID"}, {1, 11, 10, 2, 3, 3, 2, 1, 2, "SAME"},
      {2, 6, 7, 8, 1, 1, 5, 1, 1, "VALID"}, {1, 6, 6, 2, 3, 3, 2, 1, 1, "EXPLICIT", {1, 2, 0, 3}},
  };
  for (const Conv& c : configs) {
    const auto [x, w, bias, conv] = ConvOperands(c);
    for (const Epilogue& e : kEpilogues) {
      SCOPED_TRACE(c.padding + " stride " + std::to_string(c.stride) + " " + e.activation);
      ExpectTensorNear(Unfused(e, conv, bias), RunNodeOk(FusedConvNode(c, e), {x, w, bias}), kAtol,
                       kRtol);
    }
  }
}

// _FusedConv2D with an addend (fused_ops [BiasAdd, Add(, activation)], num_args 2): the
// activation of conv + bias + addend, against Conv2D, BiasAdd, AddV2 and the activation through
// their own kernels; the addend of the output's shape (a residual shortcut) or broadcast along
// dims of 1.
NodeDef FusedConvAddNode(const Conv& c, const Epilogue& e) {
  NodeDef n = ConvolutionNode("_FusedConv2D", 4, c.stride, c.dilation, c.padding, c.explicit_pad);
  n.attr["TArgs"] = AttrValue::TypeList({DT_FLOAT, DT_FLOAT});
  std::vector<std::string> ops = {"BiasAdd", "Add"};
  if (!e.activation.empty()) ops.push_back(e.activation);
  n.attr["fused_ops"] = AttrValue::StringList(ops);
  n.attr["num_args"] = AttrValue::Int(2);
  n.attr["leakyrelu_alpha"] = AttrValue::Float(e.alpha);
  return n;
}

TEST(FusedConv2D, WithAnAddendMatchesTheUnfusedSum) {
  const std::vector<Conv> configs = {
      {2, 7, 6, 3, 3, 3, 4, 1, 1, "SAME"},
      {3, 9, 8, 2, 5, 5, 3, 2, 1, "SAME"},
      {1, 6, 6, 2, 3, 3, 2, 1, 1, "EXPLICIT", {1, 2, 0, 3}},
  };
  const AttrValue f = AttrValue::Type(DT_FLOAT);
  for (const Conv& c : configs) {
    const auto [x, w, bias, conv] = ConvOperands(c);
    const Tensor biased = RunNodeOk(MakeNode("BiasAdd", 2, {{"T", f}}), {conv, bias});
    const TensorShape out = conv.shape();
    const std::vector<TensorShape> addend_shapes = {
        out, TensorShape({1, out.dim(1), out.dim(2), out.dim(3)}),
        TensorShape({out.dim(0), 1, 1, out.dim(3)}), TensorShape({1, 1, 1, 1})};
    for (const TensorShape& shape : addend_shapes) {
      const Tensor addend = MakeTensor<float>(shape, Ramp<float>(shape.num_elements(), -3.0));
      const Tensor sum = RunNodeOk(MakeNode("AddV2", 2, {{"T", f}}), {biased, addend});
      for (const Epilogue& e : kEpilogues) {
        SCOPED_TRACE(c.padding + " stride " + std::to_string(c.stride) + " addend " +
                     shape.ToString() + " " + e.activation);
        Tensor expected = sum;
        if (!e.activation.empty()) {
          NodeDef act = MakeNode(e.activation, 1, {{"T", f}});
          if (e.activation == "LeakyRelu") act.attr["alpha"] = AttrValue::Float(e.alpha);
          expected = RunNodeOk(act, {sum});
        }
        ExpectTensorNear(expected, RunNodeOk(FusedConvAddNode(c, e), {x, w, bias, addend}), kAtol,
                         kRtol);
      }
    }
  }
  // Nothing to sum (no input channels): the activation of bias + addend.
  const Conv empty{1, 1, 2, 0, 1, 1, 3, 1, 1, "VALID"};
  const Tensor got = RunNodeOk(
      FusedConvAddNode(empty, {"Relu6"}),
      {Tensor(DT_FLOAT, TensorShape({1, 1, 2, 0})), Tensor(DT_FLOAT, TensorShape({1, 1, 0, 3})),
       MakeTensor<float>({3}, {-2.0f, 0.5f, 8.0f}),
       MakeTensor<float>({1, 1, 2, 1}, {1.0f, 3.0f})});
  ExpectTensorNear(MakeTensor<float>({1, 1, 2, 3}, {0.0f, 1.5f, 6.0f, 1.0f, 3.5f, 6.0f}), got, 0,
                   0);
}

NodeDef FusedMatMulNode(bool transpose_a, bool transpose_b, const Epilogue& e);

// An addend that would widen the output, or of another rank or dtype, is an error naming the
// shapes; "Add" is refused by the fused depthwise convolution and the fused MatMul, which take
// no addend.
TEST(FusedConv2D, BadAddendsAreErrors) {
  const Conv c{1, 4, 4, 2, 3, 3, 2, 1, 1, "SAME"};
  const Tensor x = MakeTensor<float>({1, 4, 4, 2}, Ramp<float>(32));
  const Tensor w = MakeTensor<float>({3, 3, 2, 2}, Ramp<float>(36));
  const Tensor bias = MakeTensor<float>({2}, {1, 2});
  for (const TensorShape& bad :
       {TensorShape({2, 4, 4, 2}), TensorShape({4, 4, 2}), TensorShape({1, 4, 4, 3})})
    ExpectError(RunKernelOnly(FusedConvAddNode(c, {"Relu"}),
                              {x, w, bias, MakeTensor<float>(bad, Ramp<float>(bad.num_elements()))}),
                Code::kInvalidArgument,
                "the addend (args[1]) must be a float tensor of the output's shape [1,4,4,2] (or "
                "broadcast to it by dims of 1), got shape " + bad.ToString());
  NodeDef one_type = FusedConvAddNode(c, {"Relu"});
  one_type.attr["TArgs"] = AttrValue::TypeList({DT_FLOAT});
  one_type.input.pop_back();
  ExpectError(RunKernelOnly(one_type, {x, w, bias}), Code::kInvalidArgument,
              "fused_ops with Add take two args (the bias, the addend), the node has 1 (TArgs)");
  NodeDef one_arg = FusedConvAddNode(c, {"Relu"});
  one_arg.attr["num_args"] = AttrValue::Int(1);
  ExpectError(RunNode(one_arg, {x, w, bias}), Code::kUnimplemented,
              "fuses [BiasAdd, Add, Relu] with num_args 1");
  NodeDef mm = MakeNode("_FusedMatMul", 4,
                        {{"T", AttrValue::Type(DT_FLOAT)},
                         {"fused_ops", AttrValue::StringList({"BiasAdd", "Add"})},
                         {"num_args", AttrValue::Int(2)}});
  const Tensor a = MakeTensor<float>({2, 2}, {1, 2, 3, 4});
  ExpectError(RunNode(mm, {a, a, bias, a}), Code::kUnimplemented, "fuses [BiasAdd, Add]");
}

NodeDef FusedMatMulNode(bool transpose_a, bool transpose_b, const Epilogue& e) {
  NodeDef n = MakeNode("_FusedMatMul", 3,
                       {{"T", AttrValue::Type(DT_FLOAT)},
                        {"transpose_a", AttrValue::Bool(transpose_a)},
                        {"transpose_b", AttrValue::Bool(transpose_b)}});
  SetEpilogueAttrs(e, &n);
  return n;
}

TEST(FusedMatMul, MatchesMatMulThenBiasAddThenActivation) {
  const int64_t m = 5, k = 7, n = 4;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      const Tensor a =
          MakeTensor<float>(ta ? TensorShape({k, m}) : TensorShape({m, k}), Ramp<float>(m * k));
      const Tensor b = MakeTensor<float>(tb ? TensorShape({n, k}) : TensorShape({k, n}),
                                         Ramp<float>(k * n, 1.5));
      const Tensor bias = MakeTensor<float>({n}, Ramp<float>(n, 4.0));
      const Tensor product = RunNodeOk(MakeNode("MatMul", 2,
                                                {{"T", AttrValue::Type(DT_FLOAT)},
                                                 {"transpose_a", AttrValue::Bool(ta)},
                                                 {"transpose_b", AttrValue::Bool(tb)}}),
                                       {a, b});
      for (const Epilogue& e : kEpilogues) {
        SCOPED_TRACE(std::string(ta ? "aT " : "a ") + (tb ? "bT " : "b ") + e.activation);
        ExpectTensorNear(Unfused(e, product, bias),
                         RunNodeOk(FusedMatMulNode(ta, tb, e), {a, b, bias}), kAtol, kRtol);
      }
    }
  }
}

// GELU as TensorFlow writes it, each op through its own kernel, y = the product plus the bias:
// exact, Mul(0.5, y) * Erfc(Mul(Neg(y), 1/sqrt(2))); approximate, Mul(0.5, y) *
// AddV2(1, Tanh(Mul(sqrt(2/pi), AddV2(y, Mul(0.044715, Pow(y, 3)))))).
Tensor UnfusedGelu(const Tensor& product, const Tensor& bias, bool approximate) {
  const AttrValue f = AttrValue::Type(DT_FLOAT);
  const Tensor y = RunNodeOk(MakeNode("BiasAdd", 2, {{"T", f}}), {product, bias});
  const NodeDef mul = MakeNode("Mul", 2, {{"T", f}});
  const NodeDef add = MakeNode("AddV2", 2, {{"T", f}});
  const Tensor half = RunNodeOk(mul, {MakeScalar<float>(0.5f), y});
  if (approximate) {
    const Tensor cube = RunNodeOk(MakeNode("Pow", 2, {{"T", f}}), {y, MakeScalar<float>(3.0f)});
    const Tensor sum = RunNodeOk(add, {y, RunNodeOk(mul, {MakeScalar<float>(0.044715f), cube})});
    const Tensor scaled = RunNodeOk(mul, {MakeScalar<float>(0.7978845608028654f), sum});
    const Tensor tanh = RunNodeOk(MakeNode("Tanh", 1, {{"T", f}}), {scaled});
    return RunNodeOk(mul, {half, RunNodeOk(add, {MakeScalar<float>(1.0f), tanh})});
  }
  const Tensor neg = RunNodeOk(MakeNode("Neg", 1, {{"T", f}}), {y});
  const Tensor scaled = RunNodeOk(mul, {neg, MakeScalar<float>(0.70710677f)});
  return RunNodeOk(mul, {half, RunNodeOk(MakeNode("Erfc", 1, {{"T", f}}), {scaled})});
}

// GeluExact and GeluApproximate give the unfused ops' values: the same operations in the same
// order and the same vectorized erfc and tanh, which may round a last bit otherwise where an
// element falls in a loop's scalar remainder in one run and in its vector body in the other
// (4 ulp); GeluApproximate's x * x * x may differ from Pow's powf by an ulp, which matters only
// where 1 + tanh cancels (x below -4, values below 1e-6). Values from -12 (the tail, where GELU
// is -0) to 12, over rows longer than the kernel's chunk and the vector width, with the
// empty-sum case.
TEST(FusedMatMul, GeluMatchesTheUnfusedOps) {
  for (const bool approximate : {false, true}) {
    const Epilogue gelu{approximate ? "GeluApproximate" : "GeluExact"};
    const double atol = approximate ? 1e-6 : 1e-30;
    for (const auto& [m, k, n] : std::vector<std::array<int64_t, 3>>{{3, 5, 7}, {2, 3, 1500}}) {
      SCOPED_TRACE(gelu.activation + " " + std::to_string(m) + "x" + std::to_string(k) + "x" +
                   std::to_string(n));
      const Tensor a = MakeTensor<float>({m, k}, Ramp<float>(m * k, 2.0));
      const Tensor b = MakeTensor<float>({k, n}, Ramp<float>(k * n, 2.0));
      const Tensor bias = MakeTensor<float>({n}, Ramp<float>(n, 4.0));
      const Tensor product =
          RunNodeOk(MakeNode("MatMul", 2, {{"T", AttrValue::Type(DT_FLOAT)}}), {a, b});
      const Tensor fused = RunNodeOk(FusedMatMulNode(false, false, gelu), {a, b, bias});
      ExpectTensorNear(UnfusedGelu(product, bias, approximate), fused, atol, 5e-7);
      // Negative and positive values both occur, and the tail gives -0.
      float lo = 0, hi = 0;
      for (int64_t i = 0; i < fused.num_elements(); ++i) {
        lo = std::min(lo, fused.at<float>(i));
        hi = std::max(hi, fused.at<float>(i));
      }
      EXPECT_LT(lo, -0.1f);
      EXPECT_GT(hi, 1.0f);
    }
    const Tensor bias = MakeTensor<float>({4}, {-12.0f, -1.0f, 0.5f, 12.0f});
    const Tensor empty_sum = RunNodeOk(FusedMatMulNode(false, false, gelu),
                                       {Tensor(DT_FLOAT, TensorShape({2, 0})),
                                        Tensor(DT_FLOAT, TensorShape({0, 4})), bias});
    const Tensor zeros = MakeTensor<float>({2, 4}, std::vector<float>(8, 0.0f));
    ExpectTensorNear(UnfusedGelu(zeros, bias, approximate), empty_sum, atol, 5e-7);
  }
}

// With nothing to sum (k = 0, or no input channels) the result is the activated bias.
TEST(FusedContraction, EmptySumsGiveTheActivatedBias) {
  const Tensor bias = MakeTensor<float>({3}, {-2.0f, 0.5f, 8.0f});
  const Epilogue relu6{"Relu6"};
  const Tensor expected = MakeTensor<float>({2, 3}, {0.0f, 0.5f, 6.0f, 0.0f, 0.5f, 6.0f});
  ExpectTensorNear(expected,
                   RunNodeOk(FusedMatMulNode(false, false, relu6),
                             {Tensor(DT_FLOAT, TensorShape({2, 0})),
                              Tensor(DT_FLOAT, TensorShape({0, 3})), bias}),
                   0, 0);
  const Conv c{1, 1, 2, 0, 1, 1, 3, 1, 1, "VALID"};
  const Tensor conv =
      RunNodeOk(FusedConvNode(c, relu6), {Tensor(DT_FLOAT, TensorShape({1, 1, 2, 0})),
                                          Tensor(DT_FLOAT, TensorShape({1, 1, 0, 3})), bias});
  ExpectTensorNear(MakeTensor<float>({1, 1, 2, 3}, {0.0f, 0.5f, 6.0f, 0.0f, 0.5f, 6.0f}), conv, 0,
                   0);
}

TEST(FusedContraction, BadBiasesAndUnsupportedEpiloguesAreErrors) {
  const Tensor a = MakeTensor<float>({2, 2}, {1, 2, 3, 4});
  const Tensor x = MakeTensor<float>({1, 2, 2, 2}, Ramp<float>(8));
  const Tensor w = MakeTensor<float>({1, 1, 2, 2}, {1, 0, 0, 1});
  const Tensor wrong_bias = MakeTensor<float>({3}, {1, 2, 3});
  const Conv c{1, 2, 2, 2, 1, 1, 2, 1, 1, "VALID"};
  ExpectError(RunKernelOnly(FusedMatMulNode(false, false, {"Relu"}), {a, a, wrong_bias}),
              Code::kInvalidArgument, "bias");
  ExpectError(RunKernelOnly(FusedConvNode(c, {"Relu"}), {x, w, wrong_bias}), Code::kInvalidArgument,
              "bias");
  const Tensor bias = MakeTensor<float>({2}, {1, 2});
  for (const std::vector<std::string>& ops : std::vector<std::vector<std::string>>{
           {"BiasAdd", "Tanh"}, {"FusedBatchNorm"}, {"Relu"}, {"BiasAdd", "Relu", "Relu"}}) {
    NodeDef mm = FusedMatMulNode(false, false, {""});
    mm.attr["fused_ops"] = AttrValue::StringList(ops);
    ExpectError(RunNode(mm, {a, a, bias}), Code::kUnimplemented, ops[0]);
    NodeDef conv = FusedConvNode(c, {""});
    conv.attr["fused_ops"] = AttrValue::StringList(ops);
    ExpectError(RunNode(conv, {x, w, bias}), Code::kUnimplemented, "fuses");
  }
  // GELU is a matrix product's epilogue only (TensorFlow's _FusedConv2D has none).
  ExpectError(RunNode(FusedConvNode(c, {"GeluExact"}), {x, w, bias}), Code::kUnimplemented,
              "fuses [BiasAdd, GeluExact]");
  NodeDef oihw = FusedConvNode(c, {"Relu"});
  oihw.attr["filter_format"] = AttrValue::String("OIHW");
  ExpectError(RunNode(oihw, {x, w, bias}), Code::kUnimplemented, "OIHW");
}

// Runs `graph` (feeding x) with remapping on (the test runtime) and off: each run's fetched
// values and its partition graphs' node count per op. Both runs' values must agree.
struct RemappedRuns {
  // The runtime without remapping, which allocated results[1]: declared first, so that it
  // outlives them.
  std::unique_ptr<Runtime> unfused_runtime;
  std::vector<Tensor> results[2];  // [0]: remapping on, [1]: off
  std::map<std::string, int> ops[2];
};

RemappedRuns RunWithAndWithoutRemapping(const GraphDef& graph, const Tensor& x,
                                        const std::vector<std::string>& fetches) {
  RemappedRuns runs;
  Config config = Config::Default();
  config.plugin_paths.insert(config.plugin_paths.begin(), BuildPluginDir());
  config.remapping = false;
  StatusOr<std::unique_ptr<Runtime>> unfused_runtime = Runtime::Create(config);
  EXPECT_TRUE(unfused_runtime.ok()) << unfused_runtime.status();
  if (!unfused_runtime.ok()) return runs;
  runs.unfused_runtime = std::move(unfused_runtime).value();
  Runtime* runtimes[2] = {&TestRuntime(), runs.unfused_runtime.get()};
  for (int r = 0; r < 2; ++r) {
    StatusOr<std::unique_ptr<Session>> session = Session::Create(runtimes[r], graph);
    EXPECT_TRUE(session.ok()) << session.status();
    if (!session.ok()) return runs;
    RunMetadata metadata;
    EXPECT_OK((*session)->Run(RunOptions(), {{"x", x}}, fetches, {}, &runs.results[r], &metadata));
    for (const auto& [device, part] : metadata.partition_graphs)
      for (const NodeDef& n : part.node) ++runs.ops[r][n.op];
  }
  EXPECT_EQ(runs.results[0].size(), runs.results[1].size());
  for (size_t i = 0; i < runs.results[0].size() && i < runs.results[1].size(); ++i) {
    SCOPED_TRACE(fetches[i]);
    ExpectTensorNear(runs.results[1][i], runs.results[0][i], kAtol, kRtol);
  }
  return runs;
}

// A small CNN + MLP head written as TensorFlow's Keras layers write them: the session fuses
// every conv and dense layer when remapping is on, none when it is off, and both give the same
// values.
TEST(Remapping, GraphsWithAndWithoutFusionAgree) {
  const AttrValue f = AttrValue::Type(DT_FLOAT);
  GraphBuilder b;
  b.Placeholder("x", DT_FLOAT);
  auto conv = [&](const std::string& name, const std::string& in, int64_t c, int64_t o,
                  const std::string& activation) {
    b.Const(name + "/w", MakeTensor<float>({3, 3, c, o}, Ramp<float>(9 * c * o, 0.5)));
    b.Const(name + "/b", MakeTensor<float>({o}, Ramp<float>(o, 1.0)));
    b.Op(name + "/conv", "Conv2D", {in, name + "/w"},
         {{"T", f},
          {"strides", AttrValue::IntList({1, 1, 1, 1})},
          {"padding", AttrValue::String("SAME")}});
    b.Op(name + "/bias", "BiasAdd", {name + "/conv", name + "/b"}, {{"T", f}});
    b.Op(name, activation, {name + "/bias"}, {{"T", f}});
  };
  conv("c1", "x", 2, 4, "Relu");
  conv("c2", "c1", 4, 3, "Relu6");
  b.Const("shape", MakeTensor<int32_t>({2}, {2, 75}));
  b.Op("flat", "Reshape", {"c2", "shape"}, {{"T", f}, {"Tshape", AttrValue::Type(DT_INT32)}});
  b.Const("d1/w", MakeTensor<float>({75, 6}, Ramp<float>(75 * 6, 0.2)));
  b.Const("d1/b", MakeTensor<float>({6}, Ramp<float>(6, 1.0)));
  b.Op("d1/mm", "MatMul", {"flat", "d1/w"}, {{"T", f}});
  b.Op("d1/bias", "BiasAdd", {"d1/mm", "d1/b"}, {{"T", f}});
  b.Op("d1", "Elu", {"d1/bias"}, {{"T", f}});
  b.Const("d2/w", MakeTensor<float>({6, 3}, Ramp<float>(18, 0.5)));
  b.Const("d2/b", MakeTensor<float>({3}, Ramp<float>(3, 1.0)));
  b.Op("d2/mm", "MatMul", {"d1", "d2/w"}, {{"T", f}});
  b.Op("logits", "BiasAdd", {"d2/mm", "d2/b"}, {{"T", f}});
  const Tensor x = MakeTensor<float>({2, 5, 5, 2}, Ramp<float>(100));
  RemappedRuns runs = RunWithAndWithoutRemapping(b.graph(), x, {"logits", "c2", "d1"});
  // Fetched nodes that end a pattern (c2, d1) keep their names: they are fused too.
  EXPECT_EQ(runs.ops[0]["_FusedConv2D"] + runs.ops[0]["_FusedMatMul"], 4);
  EXPECT_EQ(runs.ops[1]["_FusedConv2D"] + runs.ops[1]["_FusedMatMul"], 0);
}

// Keras' inference batch normalization (x * scale + offset after a convolution, with a bias as
// ResNet50's or without as EfficientNet's, or after a dense layer) with remapping on: every
// scale folds into its filter (and bias), the adds of channel vectors fuse as or into biases,
// and the values agree with the unfused graph's.
TEST(Remapping, FoldedScalesAndBiasAddsAgreeWithUnfusedGraphs) {
  const AttrValue f = AttrValue::Type(DT_FLOAT);
  GraphBuilder b;
  b.Placeholder("x", DT_FLOAT);
  b.Const("w", MakeTensor<float>({3, 3, 3, 4}, Ramp<float>(108, 0.5)));
  b.Const("scale", MakeTensor<float>({4}, {0.5f, -2.0f, 1.5f, 0.25f}));
  b.Const("offset", MakeTensor<float>({1, 1, 1, 4}, {0.1f, -0.2f, 0.3f, -0.4f}));
  b.Op("conv", "Conv2D", {"x", "w"},
       {{"T", f}, {"strides", AttrValue::IntList({1, 1, 1, 1})}, {"padding", AttrValue::String("SAME")}});
  b.Const("cb", MakeTensor<float>({4}, {1.0f, -1.0f, 0.5f, 2.0f}));
  b.Op("conv_bias", "BiasAdd", {"conv", "cb"}, {{"T", f}});
  b.Op("bn", "Mul", {"conv_bias", "scale"}, {{"T", f}});
  b.Op("bn_add", "AddV2", {"bn", "offset"}, {{"T", f}});
  b.Op("c1", "Relu", {"bn_add"}, {{"T", f}});
  b.Const("dw", MakeTensor<float>({3, 3, 4, 2}, Ramp<float>(72, 0.25)));
  b.Const("dscale", MakeTensor<float>({8}, Ramp<float>(8, 0.5)));
  b.Const("doffset", MakeTensor<float>({8}, Ramp<float>(8, -1.0)));
  b.Op("dconv", "DepthwiseConv2dNative", {"c1", "dw"},
       {{"T", f}, {"strides", AttrValue::IntList({1, 1, 1, 1})}, {"padding", AttrValue::String("SAME")}});
  b.Op("dbn", "Mul", {"dscale", "dconv"}, {{"T", f}});
  b.Op("d1", "AddV2", {"dbn", "doffset"}, {{"T", f}});
  b.Const("shape", MakeTensor<int32_t>({2}, {2, 200}));
  b.Op("flat", "Reshape", {"d1", "shape"}, {{"T", f}, {"Tshape", AttrValue::Type(DT_INT32)}});
  b.Const("wt", MakeTensor<float>({5, 200}, Ramp<float>(1000, 0.01)));
  b.Const("half", Tensor::Scalar<float>(DT_FLOAT, 0.5f));
  b.Const("bias", MakeTensor<float>({5}, Ramp<float>(5, 1.0)));
  b.Op("mm", "MatMul", {"flat", "wt"}, {{"T", f}, {"transpose_b", AttrValue::Bool(true)}});
  b.Op("scaled", "Mul", {"mm", "half"}, {{"T", f}});
  b.Op("logits", "Add", {"bias", "scaled"}, {{"T", f}});
  const Tensor x = MakeTensor<float>({2, 5, 5, 3}, Ramp<float>(150, 0.1));
  RemappedRuns runs = RunWithAndWithoutRemapping(b.graph(), x, {"logits", "c1", "d1"});
  EXPECT_EQ(runs.ops[0]["_FusedConv2D"], 1);
  EXPECT_EQ(runs.ops[0]["_FusedMatMul"], 1);
  EXPECT_EQ(runs.ops[0]["Mul"], 0) << "every scale folded";
  EXPECT_EQ(runs.ops[0]["_FusedDepthwiseConv2dNative"], 1);
  EXPECT_EQ(runs.ops[0]["AddV2"], 0);
  EXPECT_EQ(runs.ops[0]["BiasAdd"], 0);
  EXPECT_EQ(runs.ops[1]["Mul"], 3);
}

// ResNet's blocks: the last convolution's bias add, the residual add of the shortcut (the
// block's input, or a projection convolution) and Relu become one _FusedConv2D with the
// shortcut as its addend when the placeholder's shape proves that the shapes match; the values
// agree with the unfused graph's. With the input's shape unknown, nothing proves it: the adds
// stay.
TEST(Remapping, ResidualAddsFuseIntoTheLastConvolution) {
  const AttrValue f = AttrValue::Type(DT_FLOAT);
  auto block_graph = [&](PartialTensorShape x_shape) {
    GraphBuilder b;
    b.Placeholder("x", DT_FLOAT, x_shape);
    // Distinct weights per convolution (the session would merge equal ones).
    double range = 0.25;
    auto conv = [&](const std::string& name, const std::string& in, int64_t c, int64_t o) {
      b.Const(name + "/w", MakeTensor<float>({3, 3, c, o}, Ramp<float>(9 * c * o, range)));
      range += 0.5;
      b.Const(name + "/b", MakeTensor<float>({o}, Ramp<float>(o, -1.0)));
      b.Op(name + "/conv", "Conv2D", {in, name + "/w"},
           {{"T", f},
            {"strides", AttrValue::IntList({1, 1, 1, 1})},
            {"padding", AttrValue::String("SAME")}});
      b.Op(name, "BiasAdd", {name + "/conv", name + "/b"}, {{"T", f}});
    };
    // Identity block: relu(conv(x) + x).
    conv("a", "x", 3, 3);
    b.Op("a_add", "AddV2", {"a", "x"}, {{"T", f}});
    b.Op("a_out", "Relu", {"a_add"}, {{"T", f}});
    // Projection block: relu(conv(a_out) + conv'(a_out)), the shortcut's convolution first.
    conv("p", "a_out", 3, 4);
    conv("q", "a_out", 3, 4);
    b.Op("q_add", "AddV2", {"p", "q"}, {{"T", f}});
    b.Op("y", "Relu", {"q_add"}, {{"T", f}});
    // A residual add without an activation after it.
    conv("r", "y", 4, 4);
    b.Op("z", "Add", {"y", "r"}, {{"T", f}});
    return b.graph();
  };
  const Tensor x = MakeTensor<float>({2, 5, 5, 3}, Ramp<float>(150, 0.1));
  for (const PartialTensorShape& shape :
       {PartialTensorShape({-1, 5, 5, 3}), PartialTensorShape({2, 5, 5, 3})}) {
    SCOPED_TRACE(shape.ToString());
    RemappedRuns runs = RunWithAndWithoutRemapping(block_graph(shape), x, {"z", "a_out"});
    EXPECT_EQ(runs.ops[0]["_FusedConv2D"], 4) << "a, p or q, and r";
    EXPECT_EQ(runs.ops[0]["AddV2"] + runs.ops[0]["Add"], 0);
    EXPECT_EQ(runs.ops[0]["Relu"], 0);
    EXPECT_EQ(runs.ops[1]["AddV2"] + runs.ops[1]["Add"], 3);
  }
  RemappedRuns unknown = RunWithAndWithoutRemapping(block_graph(PartialTensorShape()), x, {"z"});
  EXPECT_EQ(unknown.ops[0]["AddV2"] + unknown.ops[0]["Add"], 3);
  EXPECT_EQ(unknown.ops[0]["_FusedConv2D"], 4) << "bias adds only";
}

// Keras' ZeroPadding2D before a strided VALID convolution (ResNet's stem, EfficientNet's and
// MobileNetV2's downsampling depthwise convolutions): with remapping the Pads are gone, folded
// into the convolutions' explicit padding, and the values agree.
TEST(Remapping, ZeroPaddingFoldedIntoConvolutionsAgrees) {
  const AttrValue f = AttrValue::Type(DT_FLOAT);
  GraphBuilder b;
  b.Placeholder("x", DT_FLOAT);
  b.Const("amounts", MakeTensor<int32_t>({4, 2}, {0, 0, 1, 2, 0, 1, 0, 0}));
  b.Op("pad", "Pad", {"x", "amounts"}, {{"T", f}, {"Tpaddings", AttrValue::Type(DT_INT32)}});
  b.Const("w", MakeTensor<float>({3, 3, 3, 4}, Ramp<float>(108, 0.5)));
  b.Op("conv", "Conv2D", {"pad", "w"},
       {{"T", f}, {"strides", AttrValue::IntList({1, 2, 2, 1})}, {"padding", AttrValue::String("VALID")}});
  b.Const("dw_amounts", MakeTensor<int64_t>({4, 2}, {0, 0, 1, 1, 1, 1, 0, 0}));
  b.Op("dw_pad", "Pad", {"conv", "dw_amounts"}, {{"T", f}, {"Tpaddings", AttrValue::Type(DT_INT64)}});
  b.Const("dw", MakeTensor<float>({3, 3, 4, 1}, Ramp<float>(36, 0.25)));
  b.Op("y", "DepthwiseConv2dNative", {"dw_pad", "dw"},
       {{"T", f}, {"strides", AttrValue::IntList({1, 2, 2, 1})}, {"padding", AttrValue::String("VALID")}});
  RemappedRuns runs = RunWithAndWithoutRemapping(
      b.graph(), MakeTensor<float>({2, 7, 6, 3}, Ramp<float>(252, 0.1)), {"y"});
  EXPECT_EQ(runs.ops[0]["Pad"], 0);
  EXPECT_EQ(runs.ops[1]["Pad"], 2);
}

// MobileNetV2's block: DepthwiseConv2dNative, its batch normalization and Relu6 become one
// _FusedDepthwiseConv2dNative; a depthwise convolution with EXPLICIT padding (which TensorFlow's
// fused op lacks) keeps its bias add and activation.
TEST(Remapping, DepthwiseConvolutionsFuseTheirBiasAndActivation) {
  const AttrValue f = AttrValue::Type(DT_FLOAT);
  GraphBuilder b;
  b.Placeholder("x", DT_FLOAT);
  b.Const("dw", MakeTensor<float>({3, 3, 3, 2}, Ramp<float>(54, 0.25)));
  b.Const("scale", MakeTensor<float>({6}, Ramp<float>(6, 0.5)));
  b.Const("offset", MakeTensor<float>({6}, Ramp<float>(6, -2.0)));
  b.Op("dconv", "DepthwiseConv2dNative", {"x", "dw"},
       {{"T", f}, {"strides", AttrValue::IntList({1, 1, 1, 1})}, {"padding", AttrValue::String("SAME")}});
  b.Op("bn", "Mul", {"dconv", "scale"}, {{"T", f}});
  b.Op("bn_add", "AddV2", {"bn", "offset"}, {{"T", f}});
  b.Op("y", "Relu6", {"bn_add"}, {{"T", f}});
  b.Const("dw2", MakeTensor<float>({3, 3, 6, 1}, Ramp<float>(54, 0.125)));
  b.Const("offset2", MakeTensor<float>({6}, Ramp<float>(6, 1.0)));
  NodeDef& explicit_conv = b.Op("dconv2", "DepthwiseConv2dNative", {"y", "dw2"},
       {{"T", f}, {"strides", AttrValue::IntList({1, 2, 2, 1})}, {"padding", AttrValue::String("EXPLICIT")}});
  explicit_conv.attr["explicit_paddings"] = AttrValue::IntList({0, 0, 1, 0, 0, 1, 0, 0});
  b.Op("add2", "AddV2", {"dconv2", "offset2"}, {{"T", f}});
  b.Op("z", "Relu", {"add2"}, {{"T", f}});
  RemappedRuns runs = RunWithAndWithoutRemapping(
      b.graph(), MakeTensor<float>({2, 5, 5, 3}, Ramp<float>(150, 0.1)), {"z", "y"});
  EXPECT_EQ(runs.ops[0]["_FusedDepthwiseConv2dNative"], 1);
  EXPECT_EQ(runs.ops[0]["DepthwiseConv2dNative"], 1);
  EXPECT_EQ(runs.ops[0]["Mul"], 0);
}

// Keras' swish after a convolution (EfficientNet's activation): with remapping, one _MklSwish
// node per activation, the same bits as Sigmoid then Mul.
TEST(Remapping, SwishAgreesBitForBit) {
  const AttrValue f = AttrValue::Type(DT_FLOAT);
  GraphBuilder b;
  b.Placeholder("x", DT_FLOAT);
  b.Const("w", MakeTensor<float>({3, 3, 3, 4}, Ramp<float>(108, 0.05)));
  b.Op("conv", "Conv2D", {"x", "w"},
       {{"T", f}, {"strides", AttrValue::IntList({1, 1, 1, 1})}, {"padding", AttrValue::String("SAME")}});
  b.Op("sig", "Sigmoid", {"conv"}, {{"T", f}});
  b.Op("y", "Mul", {"conv", "sig"}, {{"T", f}});
  RemappedRuns runs = RunWithAndWithoutRemapping(
      b.graph(), MakeTensor<float>({2, 6, 6, 3}, Ramp<float>(216, -0.3)), {"y", "conv"});
  EXPECT_EQ(runs.ops[0]["_MklSwish"], 1);
  EXPECT_EQ(runs.ops[0]["Sigmoid"] + runs.ops[0]["Mul"], 0);
  ASSERT_EQ(runs.results[0].size(), 2u);
  ExpectTensorEqual(runs.results[1][0], runs.results[0][0]);
}

// A transformer's feed-forward block as Keras writes it on a [batch, sequence, features] input:
// Dense layers as Tensordot (Reshape -> MatMul -> Reshape -> BiasAdd), the first with GELU
// (tf.nn.gelu, exact or approximate), the second with Relu. With remapping each dense layer is
// one _FusedMatMul and no GELU op is left; the values agree with the unfused graph's.
TEST(Remapping, DenseLayersOnSequencesFuseTheirBiasAndGelu) {
  const AttrValue f = AttrValue::Type(DT_FLOAT);
  const AttrValue i32 = AttrValue::Type(DT_INT32);
  for (const bool approximate : {false, true}) {
    SCOPED_TRACE(approximate ? "approximate" : "exact");
    GraphBuilder b;
    b.Placeholder("x", DT_FLOAT);
    auto dense = [&](const std::string& name, const std::string& in, int64_t c, int64_t o) {
      b.Const(name + "/flat_shape", MakeTensor<int32_t>({2}, {-1, static_cast<int32_t>(c)}));
      b.Const(name + "/out_shape", MakeTensor<int32_t>({3}, {2, 5, static_cast<int32_t>(o)}));
      b.Const(name + "/w", MakeTensor<float>({c, o}, Ramp<float>(c * o, 0.5)));
      b.Const(name + "/b", MakeTensor<float>({o}, Ramp<float>(o, 1.0)));
      b.Op(name + "/flat", "Reshape", {in, name + "/flat_shape"}, {{"T", f}, {"Tshape", i32}});
      b.Op(name + "/mm", "MatMul", {name + "/flat", name + "/w"}, {{"T", f}});
      b.Op(name + "/tensordot", "Reshape", {name + "/mm", name + "/out_shape"},
           {{"T", f}, {"Tshape", i32}});
      b.Op(name + "/bias", "BiasAdd", {name + "/tensordot", name + "/b"}, {{"T", f}});
      return name + "/bias";
    };
    const std::string h = dense("d1", "x", 4, 6);
    b.Const("half", MakeScalar<float>(0.5f));
    b.Op("gelu/mul", "Mul", {"half", h}, {{"T", f}});
    if (approximate) {
      b.Const("three", MakeScalar<float>(3.0f));
      b.Const("cubic", MakeScalar<float>(0.044715f));
      b.Const("scale", MakeScalar<float>(0.7978845608028654f));
      b.Const("one", MakeScalar<float>(1.0f));
      b.Op("gelu/pow", "Pow", {h, "three"}, {{"T", f}});
      b.Op("gelu/mul_1", "Mul", {"cubic", "gelu/pow"}, {{"T", f}});
      b.Op("gelu/add", "AddV2", {h, "gelu/mul_1"}, {{"T", f}});
      b.Op("gelu/mul_2", "Mul", {"scale", "gelu/add"}, {{"T", f}});
      b.Op("gelu/tanh", "Tanh", {"gelu/mul_2"}, {{"T", f}});
      b.Op("gelu/add_1", "AddV2", {"one", "gelu/tanh"}, {{"T", f}});
      b.Op("gelu", "Mul", {"gelu/mul", "gelu/add_1"}, {{"T", f}});
    } else {
      b.Const("scale", MakeScalar<float>(0.70710677f));
      b.Op("gelu/neg", "Neg", {h}, {{"T", f}});
      b.Op("gelu/mul_1", "Mul", {"gelu/neg", "scale"}, {{"T", f}});
      b.Op("gelu/erfc", "Erfc", {"gelu/mul_1"}, {{"T", f}});
      b.Op("gelu", "Mul", {"gelu/mul", "gelu/erfc"}, {{"T", f}});
    }
    b.Op("y", "Relu", {dense("d2", "gelu", 6, 3)}, {{"T", f}});
    const Tensor x = MakeTensor<float>({2, 5, 4}, Ramp<float>(40));
    RemappedRuns runs = RunWithAndWithoutRemapping(b.graph(), x, {"y", "gelu"});
    const char* gelu_op = approximate ? "Tanh" : "Erfc";
    EXPECT_EQ(runs.ops[0]["_FusedMatMul"], 2);
    EXPECT_EQ(runs.ops[0][gelu_op] + runs.ops[0]["BiasAdd"] + runs.ops[0]["Relu"] +
                  runs.ops[0]["Mul"],
              0);
    EXPECT_EQ(runs.ops[1][gelu_op], 1);
    EXPECT_EQ(runs.ops[1]["_FusedMatMul"], 0);
    ASSERT_EQ(runs.results[0].size(), 2u);
    EXPECT_EQ(runs.results[0][0].shape(), TensorShape({2, 5, 3}));
  }
}

// A graph that TensorFlow's grappler fused (tests/fixtures/tf/make_fused_graph.py): every
// activation after Conv2D and MatMul, as _FusedConv2D and _FusedMatMul nodes TensorFlow wrote,
// gives TensorFlow's results. TensorFlow computed them unfused with its own kernels, another
// summation order: the tolerance above holds (outputs here are below ~10).
TEST(Remapping, GraphsThatTensorFlowFusedRun) {
  StatusOr<GraphDef> graph =
      ReadGraphDefFile(std::string(CONFLUX_SOURCE_DIR) + "/tests/fixtures/tf/fused_graph.pbtxt");
  ASSERT_TRUE(graph.ok()) << graph.status();
  Tensor x;
  std::vector<std::string> outputs, expected;
  int fused = 0;
  for (const NodeDef& n : graph->node) {
    fused += n.op == "_FusedConv2D" || n.op == "_FusedMatMul";
    if (n.name == "x/value") x = n.attr.at("value").tensor;
    const size_t at = n.name.rfind("/expected");
    if (at == std::string::npos) continue;
    expected.push_back(n.name);
    outputs.push_back(n.name.substr(0, at) + "/output");
  }
  EXPECT_EQ(fused, 10);
  ASSERT_EQ(outputs.size(), 10u);
  StatusOr<std::unique_ptr<Session>> session = Session::Create(&TestRuntime(), *graph);
  ASSERT_TRUE(session.ok()) << session.status();
  std::vector<Tensor> got, want;
  ASSERT_OK((*session)->Run({{"x", x}}, outputs, {}, &got));
  ASSERT_OK((*session)->Run({}, expected, {}, &want));
  for (size_t i = 0; i < outputs.size(); ++i) {
    SCOPED_TRACE(outputs[i]);
    ExpectTensorNear(want[i], got[i], kAtol, kRtol);
  }
}

}  // namespace
}  // namespace cfx
