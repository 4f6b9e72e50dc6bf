// The conformance case table (see conformance_cases.h).
//
// Tolerances (floating outputs; integer and bool outputs are always exact). Half and bfloat16
// outputs get at least rtol = atol = 1e-3 and 1e-2 (the harness widens them).
//   kExact          bit for bit   data movement (Const, Identity, Reshape, Fill, Cast, Select,
//                                 Transpose, Concat, Gather, ...), Neg, Abs, Relu, Maximum,
//                                 Minimum, Max, Min, All, Any, ArgMax, comparisons, Floor, Ceil
//   kArithmetic     rtol 1e-5, atol 1e-6   Add, AddN, Sub, Mul, Div, TruncateDiv, Xdivy, Square,
//                                          Reciprocal, BiasAdd, Range
//   kTranscendental rtol 1e-4, atol 1e-6   Exp, Log, Sqrt, Rsqrt, Sin, Cos, Tanh, Sigmoid, Pow,
//                                          Atan2, Xlogy, Softmax, Log1p, Expm1, Tan, the inverse
//                                          and hyperbolic functions, Lgamma, Digamma, Erfinv,
//                                          Ndtri (OpenCL allows 3-16 ulp;
//                                          fast-math builds more)
//   kReduction      rtol 1e-4, atol 1e-5   Sum, Mean, Prod, BiasAddGrad, UnsortedSegmentSum:
//                                          the order of the additions differs (inputs are in
//                                          [0, 1] so there is no cancellation)
//   kMatMul         rtol 1e-4, atol 2e-3   MatMul, BatchMatMulV2 (inputs in [-1, 1], depth up to
//                                          512: a different order of the products' sums)
//   kLinalg         rtol 1e-3, atol 1e-4   MatrixInverse, MatrixDeterminant (well-conditioned
//                                          I + R/n inputs; pivoting may differ)
#include "conformance_cases.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "conflux/sdk/float16.h"
#include "conflux/types.h"

namespace cfx::conformance {

namespace {

using Shape = TensorShape;

using sdk::Bfloat16ToFloat;
using sdk::FloatToBfloat16;
using sdk::FloatToHalf;
using sdk::HalfToFloat;

// False when `t` has no numeric representation here (complex, quantized types).
bool SetElement(Tensor& t, int64_t i, double v) {
  switch (t.dtype()) {
    case DT_FLOAT:
      t.data<float>()[i] = static_cast<float>(v);
      return true;
    case DT_DOUBLE:
      t.data<double>()[i] = v;
      return true;
    case DT_HALF:
      t.data<uint16_t>()[i] = FloatToHalf(static_cast<float>(v));
      return true;
    case DT_BFLOAT16:
      t.data<uint16_t>()[i] = FloatToBfloat16(static_cast<float>(v));
      return true;
    case DT_INT8:
      t.data<int8_t>()[i] = static_cast<int8_t>(v);
      return true;
    case DT_INT16:
      t.data<int16_t>()[i] = static_cast<int16_t>(v);
      return true;
    case DT_INT32:
      t.data<int32_t>()[i] = static_cast<int32_t>(v);
      return true;
    case DT_INT64:
      t.data<int64_t>()[i] = static_cast<int64_t>(v);
      return true;
    case DT_UINT8:
      t.data<uint8_t>()[i] = static_cast<uint8_t>(v);
      return true;
    case DT_UINT16:
      t.data<uint16_t>()[i] = static_cast<uint16_t>(v);
      return true;
    case DT_UINT32:
      t.data<uint32_t>()[i] = static_cast<uint32_t>(v);
      return true;
    case DT_UINT64:
      t.data<uint64_t>()[i] = static_cast<uint64_t>(v);
      return true;
    case DT_BOOL:
      t.data<bool>()[i] = v != 0;
      return true;
    default:
      return false;
  }
}

std::pair<int64_t, int64_t> IntegerLimits(DataType d) {
  switch (d) {
    case DT_INT8:
      return {-128, 127};
    case DT_INT16:
      return {-32768, 32767};
    case DT_INT32:
      return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
    case DT_UINT8:
      return {0, 255};
    case DT_UINT16:
      return {0, 65535};
    case DT_UINT32:
      return {0, std::numeric_limits<uint32_t>::max()};
    case DT_UINT64:
      return {0, std::numeric_limits<int64_t>::max()};
    default:
      return {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
  }
}

bool IsUnsigned(DataType d) {
  return d == DT_UINT8 || d == DT_UINT16 || d == DT_UINT32 || d == DT_UINT64 || d == DT_BOOL;
}

std::vector<double> Dims(const Shape& s) {
  std::vector<double> v;
  for (int64_t d : s.dims()) v.push_back(static_cast<double>(d));
  return v;
}

// ---- Case builders -------------------------------------------------------------------------

OpEntry Unary(Range r, Tolerance tol, AttrMap attrs = {}) {
  return {[r, attrs](Gen& g) {
            std::vector<Case> cases;
            for (const Shape& s : UnaryShapes())
              cases.push_back({"x=" + s.ToString(), {g.Random(g.Input(0), s, r)}, attrs});
            return cases;
          },
          tol, ""};
}

OpEntry Binary(Range rx, Range ry, Tolerance tol) {
  return {[rx, ry](Gen& g) {
            static const std::vector<std::pair<Shape, Shape>> shapes = {
                {{}, {}},         {{0}, {0}},  {{1}, {1}},           {{7}, {7}},
                {{33}, {}},       {{}, {257}}, {{4, 1, 3}, {5, 1}},  {{2, 3, 4}, {4}},
                {{0, 3}, {1, 3}}, {{1}, {0}},  {{kLarge}, {kLarge}}, {{512, 2048}, {2048}}};
            std::vector<Case> cases;
            for (const auto& [x, y] : shapes)
              cases.push_back({"x=" + x.ToString() + " y=" + y.ToString(),
                               {g.Random(g.Input(0), x, rx), g.Random(g.Input(1), y, ry)},
                               {}});
            return cases;
          },
          tol, ""};
}

OpEntry Select(bool v2) {
  return {[v2](Gen& g) {
            using Triple = std::vector<Shape>;
            static const std::vector<Triple> v1_shapes = {{{}, {}, {}},
                                                          {{7}, {7}, {7}},
                                                          {{0}, {0}, {0}},
                                                          {{4}, {4, 3}, {4, 3}},
                                                          {{2, 3}, {2, 3}, {2, 3}},
                                                          {{257}, {257}, {257}},
                                                          {{kLarge}, {kLarge}, {kLarge}}};
            static const std::vector<Triple> v2_shapes = {{{}, {}, {}},
                                                          {{4, 1}, {1, 3}, {4, 3}},
                                                          {{}, {5}, {5}},
                                                          {{2, 3}, {}, {}},
                                                          {{0, 3}, {3}, {1, 3}},
                                                          {{33}, {33}, {1}},
                                                          {{kLarge}, {kLarge}, {}}};
            std::vector<Case> cases;
            for (const Triple& s : v2 ? v2_shapes : v1_shapes)
              cases.push_back({"condition=" + s[0].ToString() + " t=" + s[1].ToString() +
                                   " e=" + s[2].ToString(),
                               {g.Random(DT_BOOL, s[0], {}), g.Random(g.Input(1), s[1], {}),
                                g.Random(g.Input(2), s[2], {})},
                               {}});
            return cases;
          },
          kExact, ""};
}

OpEntry Cast() {
  return {[](Gen& g) {
            DataType src = g.Attr("SrcT"), dst = g.Attr("DstT");
            // Values every integer type holds (and that survive a round trip through half).
            Range r = IsUnsigned(src) || IsUnsigned(dst) ? Range{0, 120, 0, 120}
                                                         : Range{-120, 120, -120, 120};
            std::vector<Case> cases;
            for (const Shape& s : UnaryShapes())
              cases.push_back({"x=" + s.ToString(), {g.Random(src, s, r)}, {}});
            return cases;
          },
          kExact, ""};
}

// Reductions over `reduction_indices` (Sum, Mean, Max, Min, Prod).
OpEntry Reduce(Range r, Tolerance tol, bool full_large = true) {
  return {[r, full_large](Gen& g) {
            struct R {
              Shape shape;
              std::vector<double> axes;
              bool keep_dims;
            };
            std::vector<R> specs = {{{}, {}, false},           {{7}, {0}, false},
                                    {{4, 5, 3}, {1}, true},    {{4, 5, 3}, {0, 2}, false},
                                    {{4, 5, 3}, {-1}, true},   {{4, 5, 3}, {}, false},
                                    {{0, 3}, {0}, false},      {{3, 0}, {1}, true},
                                    {{257, 33}, {0}, false},   {{33, 257}, {0, 1}, false},
                                    {{1024, 1024}, {1}, false}};
            if (full_large) specs.push_back({{kLarge}, {0}, false});
            DataType t = g.Input(0), tidx = g.Input(1);
            std::vector<Case> cases;
            for (const R& s : specs) {
              Tensor axes = Gen::Vector(tidx, s.axes);
              cases.push_back({"input=" + s.shape.ToString() + " axes=" + axes.DebugString() +
                                   (s.keep_dims ? " keep_dims" : ""),
                               {g.Random(t, s.shape, r), axes},
                               {{"keep_dims", AttrValue::Bool(s.keep_dims)}}});
            }
            // A scalar axis.
            cases.push_back({"input=[4,5,3] axis=1 (scalar)",
                             {g.Random(t, {4, 5, 3}, r), Gen::Scalar(tidx, 1)},
                             {{"keep_dims", AttrValue::Bool(false)}}});
            return cases;
          },
          tol, ""};
}

OpEntry ArgReduce() {
  return {[](Gen& g) {
            static const std::vector<std::pair<Shape, double>> specs = {
                {{7}, 0}, {{4, 5, 3}, 1}, {{257, 33}, -1}, {{0, 3}, 1}, {{kLarge}, 0}};
            std::vector<Case> cases;
            for (const auto& [s, dim] : specs)
              cases.push_back({"input=" + s.ToString() + " dimension=" + std::to_string(dim),
                               {g.Random(g.Input(0), s, {}), Gen::Scalar(g.Input(1), dim)},
                               {}});
            return cases;
          },
          kExact, ""};
}

struct MatMulSpec {
  int64_t m, k, n;
  bool ta, tb;
};

OpEntry MatMul() {
  return {
      [](Gen& g) {
        std::vector<MatMulSpec> specs = {{0, 5, 3, false, false},
                                         {5, 0, 3, false, false},
                                         {3, 257, 2, false, false},
                                         {512, 512, 512, false, false},
                                         {64, 33, 17, true, true}};
        for (bool ta : {false, true})
          for (bool tb : {false, true}) {
            specs.push_back({7, 33, 5, ta, tb});
            specs.push_back({1, 1, 1, ta, tb});
          }
        DataType t = g.Input(0);
        Range r{-1, 1, -10, 10};
        std::vector<Case> cases;
        for (const MatMulSpec& s : specs) {
          Shape a = s.ta ? Shape{s.k, s.m} : Shape{s.m, s.k};
          Shape b = s.tb ? Shape{s.n, s.k} : Shape{s.k, s.n};
          cases.push_back(
              {"a=" + a.ToString() + (s.ta ? "^T" : "") + " b=" + b.ToString() + (s.tb ? "^T" : ""),
               {g.Random(t, a, r), g.Random(t, b, r)},
               {{"transpose_a", AttrValue::Bool(s.ta)}, {"transpose_b", AttrValue::Bool(s.tb)}}});
        }
        return cases;
      },
      kMatMul, ""};
}

OpEntry BatchMatMul() {
  return {[](Gen& g) {
            struct B {
              Shape x, y;
              bool adj_x, adj_y;
            };
            static const std::vector<B> specs = {
                {{2, 3, 4}, {2, 4, 5}, false, false},  {{2, 1, 3, 4}, {5, 4, 6}, false, false},
                {{2, 4, 3}, {2, 4, 5}, true, false},   {{2, 3, 4}, {2, 5, 4}, false, true},
                {{0, 3, 4}, {4, 5}, false, false},     {{3, 4}, {4, 5}, false, false},
                {{4, 64, 64}, {4, 64, 64}, true, true}};
            Range r{-1, 1, -10, 10};
            std::vector<Case> cases;
            for (const B& s : specs)
              cases.push_back(
                  {"x=" + s.x.ToString() + (s.adj_x ? "^H" : "") + " y=" + s.y.ToString() +
                       (s.adj_y ? "^H" : ""),
                   {g.Random(g.Input(0), s.x, r), g.Random(g.Input(1), s.y, r)},
                   {{"adj_x", AttrValue::Bool(s.adj_x)}, {"adj_y", AttrValue::Bool(s.adj_y)}}});
            return cases;
          },
          kMatMul, ""};
}

// Square matrices I + R/n (R uniform in [-1, 1]): invertible, determinant near 1.
Tensor WellConditioned(Gen& g, DataType t, const Shape& s) {
  Tensor m = g.Random(t, s, {-1, 1});
  int64_t n = s.dim(s.rank() - 1);
  for (int64_t i = 0; i < m.num_elements(); ++i) {
    double v = ElementAsDouble(m, i) / static_cast<double>(n);
    int64_t row = (i / n) % n, col = i % n;
    SetElement(m, i, v + (row == col ? 1.0 : 0.0));
  }
  return m;
}

OpEntry Linalg(bool inverse) {
  return {
      [inverse](Gen& g) {
        static const std::vector<Shape> shapes = {{1, 1}, {3, 3}, {2, 7, 7}, {0, 3, 3}, {33, 33}};
        std::vector<Case> cases;
        for (const Shape& s : shapes)
          for (bool adjoint : {false, true}) {
            if (!inverse && adjoint) continue;
            AttrMap attrs;
            if (inverse) attrs["adjoint"] = AttrValue::Bool(adjoint);
            cases.push_back({"input=" + s.ToString() + (adjoint ? " adjoint" : ""),
                             {WellConditioned(g, g.Input(0), s)},
                             attrs});
          }
        return cases;
      },
      kLinalg, ""};
}

// Cases of one data input plus integer host inputs given as value lists.
struct Shaped {
  Shape shape;
  std::vector<std::vector<double>> host;  // each a vector; a leading NaN marks a scalar
  AttrMap attrs = {};
};

OpEntry DataWithHostInputs(std::vector<Shaped> specs) {
  return {[specs](Gen& g) {
            std::vector<Case> cases;
            for (const Shaped& s : specs) {
              Case c{"input=" + s.shape.ToString(), {g.Random(g.Input(0), s.shape, {})}, s.attrs};
              for (size_t i = 0; i < s.host.size(); ++i) {
                DataType d = g.Input(static_cast<int>(i) + 1);
                const auto& v = s.host[i];
                Tensor t =
                    !v.empty() && std::isnan(v[0]) ? Gen::Scalar(d, v[1]) : Gen::Vector(d, v);
                c.name += " " + t.DebugString();
                c.inputs.push_back(t);
              }
              cases.push_back(std::move(c));
            }
            return cases;
          },
          kExact, ""};
}

// Pad, PadV2, MirrorPad and MirrorPadGrad: an input of `shape` and the paddings matrix [rank, 2]
// of `pairs` (before, after of each dimension), with `mode` for the mirror ops; PadV2 also gets a
// random scalar constant.
struct PadSpec {
  TensorShape shape;
  std::vector<double> pairs;
  std::string mode;
};

OpEntry Pads(std::vector<PadSpec> specs, bool constant) {
  return {[specs, constant](Gen& g) {
            std::vector<Case> cases;
            for (const PadSpec& s : specs) {
              const int64_t rows = static_cast<int64_t>(s.pairs.size() / 2);
              Tensor p = Gen::Vector(g.Input(1), s.pairs).Reshaped(TensorShape({rows, 2})).value();
              Case c{"input=" + s.shape.ToString() + " paddings=" + p.DebugString() + " " + s.mode,
                     {g.Random(g.Input(0), s.shape, {}), p},
                     {}};
              if (!s.mode.empty()) c.attrs["mode"] = AttrValue::String(s.mode);
              if (constant) c.inputs.push_back(g.Random(g.Input(0), TensorShape(), {}));
              cases.push_back(std::move(c));
            }
            return cases;
          },
          kExact, ""};
}

constexpr double kScalar = std::numeric_limits<double>::quiet_NaN();

OpEntry Skip(std::string why) { return {nullptr, kExact, std::move(why)}; }

// The random ops (but RandomShuffle): every device draws the CPU's numbers for the same node
// (conflux/sdk/philox.h). All cases of an op share one node (fixed seed, seed2), and so one
// kernel per device, run case after case on both: the later cases check that successive runs
// continue the stream alike. Normals may differ in the last bit (the math library's logf, sinf,
// cosf), hence `tol`. RandomUniformInt draws in [-1000, 12345).
OpEntry RandomOp(bool uniform_int, Tolerance tol) {
  return {
      [uniform_int](Gen& g) {
        const AttrMap seeds = {{"seed", AttrValue::Int(87654321)}, {"seed2", AttrValue::Int(5)}};
        std::vector<Case> cases;
        for (Shape s : {Shape{7}, Shape{0}, Shape{1}, Shape{3, 5}, Shape{257}, Shape{2, 0, 3},
                        Shape{33, 31}, Shape{kLarge}}) {
          Case c{"shape=" + s.ToString(), {Gen::Vector(g.Input(0), Dims(s))}, seeds};
          if (uniform_int) {
            c.inputs.push_back(Gen::Scalar(g.Input(1), -1000));
            c.inputs.push_back(Gen::Scalar(g.Input(2), 12345));
          }
          cases.push_back(std::move(c));
        }
        return cases;
      },
      tol, ""};
}

std::map<std::string, OpEntry> BuildTable() {
  std::map<std::string, OpEntry> t;
  const Range any{-10, 10, -10, 10};
  const Range positive{0.01, 100, 1, 100};
  const Range nonzero{0.5, 4, 1, 9, true};
  const Range ties{-3, 3, -3, 3, false, 0.5};  // comparisons see equal elements too
  static const Range unit{0, 1, -10, 10};          // sums without cancellation

  // Data movement and creation.
  t["Const"] = {
      [](Gen& g) {
        std::vector<Case> cases;
        for (Shape s : {Shape{}, Shape{0}, Shape{7}, Shape{257}, Shape{4, 5, 3}, Shape{kLarge}})
          cases.push_back({"value=" + s.ToString(),
                           {},
                           {{"value", AttrValue::TensorValue(g.Random(g.Attr("dtype"), s, {}))}}});
        return cases;
      },
      kExact, ""};
  t["Identity"] = Unary(any, kExact);
  t["EnsureShape"] =
      Unary(any, kExact, {{"shape", AttrValue::Shape(PartialTensorShape::UnknownRank())}});
  t["IdentityN"] = Skip("a list of inputs of any types, forwarded (tests/kernels/basic_test.cc)");
  for (const char* op : {"IsFinite", "IsNan", "IsInf"}) t[op] = Unary(any, kExact);
  t["ZerosLike"] = Unary(any, kExact);
  t["OnesLike"] = Unary(any, kExact);
  t["Shape"] = Unary(any, kExact);
  t["Rank"] = Unary(any, kExact);
  t["Size"] = Unary(any, kExact);
  t["CheckNumerics"] = Unary(any, kExact, {{"message", AttrValue::String("conformance")}});
  t["NoOp"] = {[](Gen&) { return std::vector<Case>{{"no inputs", {}, {}}}; }, kExact, ""};
  t["Cast"] = Cast();
  t["Fill"] = {
      [](Gen& g) {
        std::vector<Case> cases;
        for (Shape s :
             {Shape{}, Shape{0}, Shape{7}, Shape{3, 0}, Shape{33, 257}, Shape{1024, 1024}})
          cases.push_back({"dims=" + s.ToString(),
                           {Gen::Vector(g.Input(0), Dims(s)), g.Random(g.Input(1), Shape{}, {})},
                           {}});
        return cases;
      },
      kExact, ""};
  t["Reshape"] = DataWithHostInputs({{{7}, {{7}}},
                                     {{2, 3, 4}, {{4, -1}}},
                                     {{}, {{1, 1}}},
                                     {{1}, {{}}},
                                     {{0, 3}, {{3, 0}}},
                                     {{257}, {{-1}}},
                                     {{kLarge}, {{1024, 1024}}}});
  t["ExpandDims"] = DataWithHostInputs({{{}, {{kScalar, 0}}},
                                        {{7}, {{kScalar, -1}}},
                                        {{2, 3}, {{kScalar, 1}}},
                                        {{0, 4}, {{kScalar, 2}}},
                                        {{2, 3}, {{-3}}},
                                        {{kLarge}, {{kScalar, 0}}}});
  auto squeeze = [](std::vector<int64_t> dims) {
    return AttrMap{{"squeeze_dims", AttrValue::IntList(std::move(dims))}};
  };
  t["Squeeze"] = DataWithHostInputs({{{1, 7, 1}, {}, squeeze({})},
                                     {{1, 7, 1}, {}, squeeze({0})},
                                     {{1, 7, 1}, {}, squeeze({-1})},
                                     {{1}, {}, squeeze({})},
                                     {{0, 1}, {}, squeeze({1})},
                                     {{1, kLarge}, {}, squeeze({0})}});
  t["Transpose"] = DataWithHostInputs({{{}, {{}}},
                                       {{7}, {{0}}},
                                       {{3, 5}, {{1, 0}}},
                                       {{2, 3, 4}, {{2, 0, 1}}},
                                       {{0, 3}, {{1, 0}}},
                                       {{33, 7, 257}, {{1, 2, 0}}},
                                       {{1024, 1024}, {{1, 0}}}});
  t["Tile"] = DataWithHostInputs({{{}, {{}}},
                                  {{3}, {{4}}},
                                  {{2, 3}, {{3, 2}}},
                                  {{0, 3}, {{2, 2}}},
                                  {{1, 257}, {{33, 1}}},
                                  {{1024}, {{1024}}}});
  const std::vector<PadSpec> pads = {{{}, {}, ""},
                                     {{7}, {2, 3}, ""},
                                     {{2, 3, 4}, {1, 0, 0, 2, 3, 1}, ""},
                                     {{0, 3}, {1, 1, 0, 2}, ""},
                                     {{33, 257}, {1, 2, 3, 4}, ""},
                                     {{1024, 1024}, {0, 1, 1, 0}, ""}};
  t["Pad"] = Pads(pads, false);
  t["PadV2"] = Pads(pads, true);
  t["MirrorPad"] = Pads({{{}, {}, "REFLECT"},
                         {{7}, {3, 6}, "REFLECT"},
                         {{4, 5, 3}, {3, 0, 1, 4, 2, 2}, "REFLECT"},
                         {{33, 257}, {32, 1, 0, 256}, "REFLECT"},
                         {{7}, {7, 7}, "SYMMETRIC"},
                         {{4, 5, 3}, {4, 0, 5, 1, 3, 3}, "SYMMETRIC"},
                         {{0, 3}, {0, 0, 3, 1}, "SYMMETRIC"},
                         {{1024, 1024}, {2, 2, 2, 2}, "SYMMETRIC"}},
                        false);
  t["MirrorPadGrad"] = Pads({{{}, {}, "REFLECT"},
                             {{13}, {3, 3}, "REFLECT"},
                             {{9, 10, 7}, {3, 2, 1, 4, 2, 2}, "REFLECT"},
                             {{21}, {7, 7}, "SYMMETRIC"},
                             {{6, 8, 3}, {1, 1, 2, 1, 0, 0}, "SYMMETRIC"},
                             {{1028, 1024}, {2, 2, 0, 0}, "SYMMETRIC"}},
                            false);
  t["Slice"] = DataWithHostInputs({{{}, {{}, {}}},
                                   {{7}, {{2}, {3}}},
                                   {{4, 5, 3}, {{1, 0, 1}, {2, -1, 2}}},
                                   {{33, 257}, {{0, 7}, {33, 100}}},
                                   {{0, 3}, {{0, 0}, {0, 3}}},
                                   {{kLarge}, {{1}, {kLarge - 2}}}});
  auto masks = [](int64_t begin, int64_t end, int64_t ellipsis, int64_t new_axis, int64_t shrink) {
    return AttrMap{{"begin_mask", AttrValue::Int(begin)},
                   {"end_mask", AttrValue::Int(end)},
                   {"ellipsis_mask", AttrValue::Int(ellipsis)},
                   {"new_axis_mask", AttrValue::Int(new_axis)},
                   {"shrink_axis_mask", AttrValue::Int(shrink)}};
  };
  t["StridedSlice"] =
      DataWithHostInputs({{{7}, {{1}, {6}, {2}}, masks(0, 0, 0, 0, 0)},
                          {{7}, {{-1}, {0}, {-1}}, masks(0, 1, 0, 0, 0)},
                          {{4, 5, 3}, {{1, 0, 0}, {3, 5, 3}, {1, 2, 1}}, masks(0, 0, 0, 0, 0)},
                          {{4, 5}, {{2, 0}, {3, 5}, {1, 1}}, masks(0, 0, 0, 0, 1)},
                          {{4, 5, 3}, {{0, 1}, {0, 2}, {1, 1}}, masks(0, 0, 1, 0, 0)},
                          {{4, 5}, {{0, 0}, {0, 5}, {1, 1}}, masks(1, 0, 0, 1, 0)},
                          {{0, 3}, {{0, 0}, {0, 3}, {1, 1}}, masks(0, 0, 0, 0, 0)},
                          {{kLarge}, {{1}, {kLarge}, {3}}, masks(0, 0, 0, 0, 0)}});
  t["Split"] = {
      [](Gen& g) {
        struct S {
          Shape shape;
          int dim, num;
        };
        static const std::vector<S> specs = {
            {{6}, 0, 3}, {{4, 6, 2}, 1, 2}, {{4, 6}, -1, 6}, {{0, 4}, 1, 2}, {{kLarge}, 0, 4}};
        std::vector<Case> cases;
        for (const S& s : specs)
          cases.push_back({"value=" + s.shape.ToString() + " split_dim=" + std::to_string(s.dim) +
                               " num_split=" + std::to_string(s.num),
                           {Gen::Scalar(DT_INT32, s.dim), g.Random(g.Type("value"), s.shape, {})},
                           {{"num_split", AttrValue::Int(s.num)}}});
        return cases;
      },
      kExact, ""};
  t["ConcatV2"] = {[](Gen& g) {
                     struct C {
                       std::vector<Shape> values;
                       int axis;
                     };
                     static const std::vector<C> specs = {{{{3, 4}, {3, 5}}, 1},
                                                          {{{2, 3}, {0, 3}, {4, 3}}, 0},
                                                          {{{2, 3}, {2, 3}}, -1},
                                                          {{{0}, {0}}, 0},
                                                          {{{kLarge / 2}, {kLarge / 2}}, 0}};
                     std::vector<Case> cases;
                     for (const C& s : specs) {
                       Case c{"axis=" + std::to_string(s.axis) + " values=",
                              {},
                              {{"N", AttrValue::Int(static_cast<int64_t>(s.values.size()))}}};
                       for (const Shape& v : s.values) {
                         c.name += v.ToString();
                         c.inputs.push_back(g.Random(g.Type("values"), v, {}));
                       }
                       c.inputs.push_back(Gen::Scalar(g.Type("axis"), s.axis));
                       cases.push_back(std::move(c));
                     }
                     return cases;
                   },
                   kExact, ""};
  t["Pack"] = {
      [](Gen& g) {
        struct P {
          Shape shape;
          int n, axis;
        };
        static const std::vector<P> specs = {
            {{}, 3, 0}, {{3, 4}, 2, 1}, {{3, 4}, 2, -1}, {{0}, 1, 0}, {{kLarge / 4}, 4, 1}};
        std::vector<Case> cases;
        for (const P& s : specs) {
          Case c{"values=" + std::to_string(s.n) + "x" + s.shape.ToString() +
                     " axis=" + std::to_string(s.axis),
                 {},
                 {{"N", AttrValue::Int(s.n)}, {"axis", AttrValue::Int(s.axis)}}};
          for (int i = 0; i < s.n; ++i) c.inputs.push_back(g.Random(g.Type("values"), s.shape, {}));
          cases.push_back(std::move(c));
        }
        return cases;
      },
      kExact, ""};
  t["Unpack"] = {
      [](Gen& g) {
        struct U {
          Shape shape;
          int num, axis;
        };
        static const std::vector<U> specs = {{{3, 4}, 3, 0},
                                             {{3, 4}, 4, 1},
                                             {{2, 3, 5}, 5, -1},
                                             {{0, 2}, 2, 1},
                                             {{4, kLarge / 4}, 4, 0}};
        std::vector<Case> cases;
        for (const U& s : specs)
          cases.push_back({"value=" + s.shape.ToString() + " axis=" + std::to_string(s.axis),
                           {g.Random(g.Input(0), s.shape, {})},
                           {{"num", AttrValue::Int(s.num)}, {"axis", AttrValue::Int(s.axis)}}});
        return cases;
      },
      kExact, ""};
  t["GatherV2"] = {
      [](Gen& g) {
        struct G {
          Shape params, indices;
          int axis, batch_dims;
        };
        static const std::vector<G> specs = {{{7}, {4}, 0, 0},    {{5, 4}, {2, 3}, 1, 0},
                                             {{5, 4}, {0}, 0, 0}, {{3, 5}, {3, 2}, 1, 1},
                                             {{257}, {}, 0, 0},   {{1024, 1024}, {512}, 0, 0}};
        std::vector<Case> cases;
        for (const G& s : specs) {
          int64_t limit = s.params.dim(s.axis) - 1;
          cases.push_back({"params=" + s.params.ToString() + " indices=" + s.indices.ToString() +
                               " axis=" + std::to_string(s.axis) +
                               " batch_dims=" + std::to_string(s.batch_dims),
                           {g.Random(g.Type("params"), s.params, {}),
                            g.Random(g.Type("indices"), s.indices, {0, 0, 0, limit}),
                            Gen::Scalar(g.Type("axis"), s.axis)},
                           {{"batch_dims", AttrValue::Int(s.batch_dims)}}});
        }
        return cases;
      },
      kExact, ""};
  t["Range"] = {
      [](Gen& g) {
        DataType d = g.Attr("Tidx");
        int64_t top = IntegerLimits(d).second;
        std::vector<std::vector<double>> specs = {{0, 7, 1}, {2, 100, 3}, {5, 5, 1}};
        if (!IsUnsigned(d)) specs.push_back({3, -5, -2});
        if (IsFloatingType(d)) specs.push_back({0, 3.5, 0.25});
        if (top >= kLarge) specs.push_back({0, static_cast<double>(kLarge), 1});
        std::vector<Case> cases;
        for (const auto& s : specs)
          cases.push_back({"start=" + std::to_string(s[0]) + " limit=" + std::to_string(s[1]) +
                               " delta=" + std::to_string(s[2]),
                           {Gen::Scalar(d, s[0]), Gen::Scalar(d, s[1]), Gen::Scalar(d, s[2])},
                           {}});
        return cases;
      },
      kArithmetic, ""};

  // Element-wise arithmetic.
  for (const char* op : {"Add", "AddV2", "Sub", "Mul"}) t[op] = Binary(any, any, kArithmetic);
  for (const char* op : {"Div", "RealDiv", "FloorDiv", "FloorMod", "TruncateDiv", "Xdivy"})
    t[op] = Binary(any, nonzero, kArithmetic);
  t["Atan2"] = Binary(any, any, kTranscendental);
  t["Xlogy"] = Binary(any, positive, kTranscendental);
  for (const char* op : {"Maximum", "Minimum"}) t[op] = Binary(ties, ties, kExact);
  t["SquaredDifference"] = Binary(any, any, kArithmetic);
  t["AddN"] = {[](Gen& g) {
                 static const std::vector<std::pair<Shape, int>> specs = {
                     {{}, 1}, {{7}, 2}, {{4, 5, 3}, 3}, {{0, 3}, 4}, {{257}, 5}, {{kLarge}, 4}};
                 std::vector<Case> cases;
                 for (const auto& [shape, n] : specs) {
                   Case c{"inputs=" + std::to_string(n) + "x" + shape.ToString(),
                          {},
                          {{"N", AttrValue::Int(n)}}};
                   for (int i = 0; i < n; ++i)
                     c.inputs.push_back(g.Random(g.Type("inputs"), shape, {}));
                   cases.push_back(std::move(c));
                 }
                 return cases;
               },
               kArithmetic, ""};
  t["Pow"] = Binary({0.1, 3, -3, 3}, {-3, 3, 0, 4}, kTranscendental);
  for (const char* op : {"Neg", "Abs", "Relu", "Sign", "Round", "Rint"}) t[op] = Unary(any, kExact);
  t["Square"] = Unary(any, kArithmetic);
  t["Reciprocal"] = Unary({0.1, 10, 1, 9, true}, kArithmetic);
  for (const char* op : {"Exp", "Sin", "Cos", "Tanh", "Sigmoid", "Erf", "Erfc", "_MklSwish"})
    t[op] = Unary(any, kTranscendental);
  for (const char* op : {"Log", "Sqrt", "Rsqrt"}) t[op] = Unary(positive, kTranscendental);
  // Rounded to quarters, so that whole numbers occur.
  for (const char* op : {"Floor", "Ceil"}) t[op] = Unary({-10, 10, -10, 10, false, 0.25}, kExact);
  for (const char* op : {"Expm1", "Atan", "Sinh", "Cosh", "Asinh"})
    t[op] = Unary(any, kTranscendental);
  t["Log1p"] = Unary({-0.9, 10, 0, 10}, kTranscendental);
  t["Tan"] = Unary({-1.5, 1.5, -1, 1}, kTranscendental);  // away from the poles at +-pi/2
  for (const char* op : {"Asin", "Acos", "Atanh", "Erfinv"})
    t[op] = Unary({-0.99, 0.99, 0, 0}, kTranscendental);
  t["Acosh"] = Unary({1.01, 10, 1, 10}, kTranscendental);
  // Lgamma and Digamma away from their poles at 0, -1, -2, ...
  for (const char* op : {"Lgamma", "Digamma"}) t[op] = Unary({0.1, 10, 1, 10}, kTranscendental);
  t["Ndtri"] = Unary({0.01, 0.99, 0, 0}, kTranscendental);
  t["Xlog1py"] = Binary(any, {-0.9, 10, 0, 10}, kTranscendental);
  // Some y exactly 0.
  for (const char* op : {"DivNoNan", "MulNoNan"})
    t[op] = Binary(any, {-3, 3, -3, 3, false, 0.5}, kArithmetic);
  for (const char* op : {"BitwiseAnd", "BitwiseOr", "BitwiseXor"})
    t[op] = Binary({0, 0, -100, 100}, {0, 0, -100, 100}, kExact);
  // Shift counts below 0 and past the width (clamped).
  for (const char* op : {"LeftShift", "RightShift"})
    t[op] = Binary({0, 0, -100, 100}, {0, 0, -3, 70}, kExact);
  t["Invert"] = Unary({0, 0, -100, 100}, kExact);
  for (const char* op : {"Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual"})
    t[op] = Binary(ties, ties, kExact);
  for (const char* op : {"LogicalAnd", "LogicalOr"}) t[op] = Binary(any, any, kExact);
  t["LogicalNot"] = Unary(any, kExact);
  t["Select"] = Select(false);
  t["SelectV2"] = Select(true);
  // BiasAdd and its gradient (which sums over every dimension but the channel one: inputs in
  // [0, 1], so no cancellation) on NHWC and NCHW values.
  static const std::vector<std::pair<Shape, const char*>> bias_specs = {
      {{7, 3}, "NHWC"},       {{2, 4, 5, 33}, "NHWC"}, {{0, 3}, "NHWC"},
      {{2, 3, 4, 5}, "NCHW"}, {{2, 3}, "NCHW"},        {{1024, 1024}, "NHWC"}};
  t["BiasAdd"] = {
      [](Gen& g) {
        std::vector<Case> cases;
        for (const auto& [value, format] : bias_specs) {
          int64_t c = std::string(format) == "NHWC" ? value.dim(value.rank() - 1) : value.dim(1);
          cases.push_back({"value=" + value.ToString() + " " + format,
                           {g.Random(g.Input(0), value, {}), g.Random(g.Input(1), Shape{c}, {})},
                           {{"data_format", AttrValue::String(format)}}});
        }
        return cases;
      },
      kArithmetic, ""};
  t["BiasAddGrad"] = {[](Gen& g) {
                        std::vector<Case> cases;
                        for (const auto& [value, format] : bias_specs)
                          cases.push_back({"out_backprop=" + value.ToString() + " " + format,
                                           {g.Random(g.Input(0), value, unit)},
                                           {{"data_format", AttrValue::String(format)}}});
                        return cases;
                      },
                      kReduction, ""};
  for (const char* op : {"Softmax", "LogSoftmax"})
    t[op] = {[](Gen& g) {
               std::vector<Case> cases;
               for (Shape s : {Shape{1}, Shape{7}, Shape{7, 33}, Shape{4, 257}, Shape{0, 5},
                               Shape{3, 0}, Shape{1024, 1024}})
                 cases.push_back(
                     {"logits=" + s.ToString(), {g.Random(g.Input(0), s, {-10, 10})}, {}});
               return cases;
             },
             kTranscendental, ""};

  // Reductions and linear algebra.
  t["Sum"] = Reduce(unit, kReduction);
  t["Mean"] = Reduce(unit, kReduction);
  t["Max"] = Reduce(any, kExact);
  t["Min"] = Reduce(any, kExact);
  t["Prod"] = Reduce({0.9, 1.1, -1, 1}, kReduction, /*full_large=*/false);
  for (const char* op : {"All", "Any"}) t[op] = Reduce(any, kExact);
  t["ArgMax"] = ArgReduce();
  t["ArgMin"] = ArgReduce();
  t["MatMul"] = MatMul();
  t["BatchMatMulV2"] = BatchMatMul();
  t["MatrixInverse"] = Linalg(true);
  t["MatrixDeterminant"] = Linalg(false);
  AddGradientOpCases(&t);

  t["RandomUniform"] = RandomOp(false, kExact);
  t["RandomStandardNormal"] = RandomOp(false, kTranscendental);
  t["TruncatedNormal"] = RandomOp(false, kTranscendental);
  t["RandomUniformInt"] = RandomOp(true, kExact);

  // Not compared, and why.
  t["RandomShuffle"] =
      Skip("random: the permutation drawn is not specified to match across devices");
  for (const char* op : {"CollectiveReduceV2", "CollectiveGatherV2", "CollectiveBcastSendV2",
                         "CollectiveBcastRecvV2"})
    t[op] = Skip("collectives move values between the tasks of a cluster (tests/distributed)");
  t["Assert"] = Skip("a check with no output values to compare");
  t["Print"] = Skip("logs its inputs to standard error as a side effect");
  for (const char* op : {"SaveV2", "RestoreV2"}) t[op] = Skip("reads or writes files on the host");
  AddNnOpCases(t);
  AddWindowOpCases(t);
  AddModelOpCases(t);
  return t;
}

}  // namespace

const std::vector<TensorShape>& UnaryShapes() {
  static const std::vector<TensorShape> shapes = {{},    {0},       {1},       {7},     {33},
                                                  {257}, {4, 5, 3}, {3, 0, 2}, {kLarge}};
  return shapes;
}

DataType Gen::Type(const std::string& arg) const {
  for (const ArgDef& a : op_->input_arg)
    if (a.name == arg) return a.type != DT_INVALID ? a.type : types_.at(a.type_attr);
  ADD_FAILURE() << op_->name << " has no input " << arg;
  return DT_INVALID;
}

DataType Gen::Input(int index) const {
  if (index >= static_cast<int>(op_->input_arg.size())) {
    ADD_FAILURE() << op_->name << " has no input " << index;
    return DT_INVALID;
  }
  return Type(op_->input_arg[index].name);
}

Tensor Gen::Random(DataType dtype, const TensorShape& shape, const Range& range) {
  Tensor t(dtype, shape);
  const int64_t n = t.num_elements();
  std::bernoulli_distribution coin(0.5);
  if (n > max_drawn_elements_) {
    std::memset(t.raw_data(), 0, t.TotalBytes());
    return t;
  }
  if (dtype == DT_BOOL) {
    for (int64_t i = 0; i < n; ++i) t.data<bool>()[i] = coin(rng_);
  } else if (IsFloatingType(dtype)) {
    std::uniform_real_distribution<double> u(range.lo, range.hi);
    for (int64_t i = 0; i < n; ++i) {
      double v = u(rng_);
      if (range.step > 0) v = std::round(v / range.step) * range.step;
      if (range.random_sign && coin(rng_)) v = -v;
      SetElement(t, i, v);
    }
  } else if (IsIntegerType(dtype)) {
    auto [min, max] = IntegerLimits(dtype);
    int64_t lo = std::max(range.ilo, min), hi = std::min(range.ihi, max);
    if (IsUnsigned(dtype)) lo = std::max<int64_t>(lo, 0);
    std::uniform_int_distribution<int64_t> u(lo, std::max(lo, hi));
    for (int64_t i = 0; i < n; ++i) {
      int64_t v = u(rng_);
      if (range.random_sign && !IsUnsigned(dtype) && coin(rng_)) v = -v;
      SetElement(t, i, static_cast<double>(v));
    }
  } else {
    auto* bytes = static_cast<uint8_t*>(t.raw_data());
    for (size_t i = 0; i < t.TotalBytes(); ++i) bytes[i] = static_cast<uint8_t>(rng_());
  }
  return t;
}

Tensor Gen::Values(DataType dtype, const TensorShape& shape, const std::vector<double>& values) {
  Tensor t(dtype, shape);
  EXPECT_EQ(t.num_elements(), static_cast<int64_t>(values.size()));
  for (int64_t i = 0; i < t.num_elements() && i < static_cast<int64_t>(values.size()); ++i)
    EXPECT_TRUE(SetElement(t, i, values[i])) << "no values of " << DataTypeString(dtype);
  return t;
}

double ElementAsDouble(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DT_FLOAT:
      return t.data<float>()[i];
    case DT_DOUBLE:
      return t.data<double>()[i];
    case DT_HALF:
      return HalfToFloat(t.data<uint16_t>()[i]);
    case DT_BFLOAT16:
      return Bfloat16ToFloat(t.data<uint16_t>()[i]);
    case DT_INT8:
      return t.data<int8_t>()[i];
    case DT_INT16:
      return t.data<int16_t>()[i];
    case DT_INT32:
      return t.data<int32_t>()[i];
    case DT_INT64:
      return static_cast<double>(t.data<int64_t>()[i]);
    case DT_UINT8:
      return t.data<uint8_t>()[i];
    case DT_UINT16:
      return t.data<uint16_t>()[i];
    case DT_UINT32:
      return t.data<uint32_t>()[i];
    case DT_UINT64:
      return static_cast<double>(t.data<uint64_t>()[i]);
    case DT_BOOL:
      return t.data<bool>()[i];
    default:
      return std::numeric_limits<double>::quiet_NaN();
  }
}

const std::map<std::string, OpEntry>& ConformanceTable() {
  static const std::map<std::string, OpEntry> table = BuildTable();
  return table;
}

// Why the kernel-level harness cannot run `op` at all ("" when it can).
std::string Unfeedable(const OpDef& op) {
  for (const ArgDef& a : op.input_arg) {
    if (a.is_ref)
      return "takes reference input '" + a.name +
             "', which KernelRunner cannot feed (there is no variable outside a graph)";
    if (a.type == DT_RESOURCE) return "takes resource input '" + a.name + "' (a stateful handle)";
  }
  for (const ArgDef& a : op.output_arg)
    if (a.is_ref || a.type == DT_RESOURCE)
      return "produces " + std::string(a.is_ref ? "reference" : "resource") + " output '" + a.name +
             "' (a stateful handle)";
  return "";
}

// The dtype assignments of the op's type attrs to test the kernel with: the kernel's constraint
// lists, an unconstrained attr's default, or else float and int32 where the op allows them.
std::vector<std::map<std::string, DataType>> TypeAssignments(const KernelDef& k, const OpDef& op) {
  std::vector<std::map<std::string, DataType>> out = {{}};
  for (const AttrDef& a : op.attr) {
    if (a.type != "type") continue;
    std::vector<DataType> choices;
    if (auto it = k.type_constraints.find(a.name); it != k.type_constraints.end()) {
      choices = it->second;
    } else if (a.default_value) {
      choices = {a.default_value->type};
    } else {
      std::vector<DataType> allowed;
      if (a.allowed_values) allowed = a.allowed_values->list.type;
      for (DataType d : {DT_FLOAT, DT_INT32})
        if (allowed.empty() || std::find(allowed.begin(), allowed.end(), d) != allowed.end())
          choices.push_back(d);
      if (choices.empty() && !allowed.empty()) choices.push_back(allowed[0]);
    }
    // Strings, resources and variants have no fixed-size values to generate.
    std::erase_if(choices, [](DataType d) { return DataTypeSize(d) == 0; });
    std::vector<std::map<std::string, DataType>> next;
    for (const auto& partial : out)
      for (DataType d : choices) {
        next.push_back(partial);
        next.back()[a.name] = d;
      }
    out = std::move(next);
  }
  return out;
}

std::string TypesString(const std::map<std::string, DataType>& types) {
  std::string s;
  for (const auto& [attr, d] : types) s += (s.empty() ? "" : ", ") + attr + "=" + DataTypeString(d);
  return s;
}

uint32_t Fnv1a(const std::string& s) {
  uint32_t h = 2166136261u;
  for (unsigned char c : s) h = (h ^ c) * 16777619u;
  return h;
}

}  // namespace cfx::conformance
