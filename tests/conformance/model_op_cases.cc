// Conformance cases of the ops that exported models use beyond the core set (see
// conformance_cases.h): TopKV2, OneHot, ReverseV2, SplitV, GatherNd, TensorScatterUpdate,
// SpaceToDepth, DepthToSpace and MatrixBandPart move or pick values without arithmetic and are
// compared bit for bit; Cumsum, Cumprod and
// ScatterNd (repeated tuples add up) add or multiply in an order a device may change:
// kReduction's tolerance, on values that neither cancel nor overflow; Einsum, a matrix product,
// kMatMul's.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "conformance_cases.h"

namespace cfx::conformance {
namespace {

using Shape = TensorShape;

constexpr double kScalarValue = std::numeric_limits<double>::quiet_NaN();

// Input 0 random in `data` of `shape`; inputs 1, 2, ... from `host`, each a vector of values or,
// when it starts with kScalarValue, the scalar after it; `attrs` besides the type attrs.
struct Spec {
  Shape shape;
  std::vector<std::vector<double>> host;
  AttrMap attrs;
};

OpEntry WithHostInputs(std::vector<Spec> specs, Range data, Tolerance tol = kExact) {
  return {[specs, data](Gen& g) {
            std::vector<Case> cases;
            for (const Spec& s : specs) {
              Case c{"input=" + s.shape.ToString(), {g.Random(g.Input(0), s.shape, data)}, s.attrs};
              for (size_t i = 0; i < s.host.size(); ++i) {
                const DataType d = g.Input(static_cast<int>(i) + 1);
                const std::vector<double>& v = s.host[i];
                Tensor t =
                    !v.empty() && std::isnan(v[0]) ? Gen::Scalar(d, v[1]) : Gen::Vector(d, v);
                c.name += " " + t.DebugString();
                c.inputs.push_back(t);
              }
              for (const auto& [name, value] : s.attrs) c.name += " " + name;
              cases.push_back(std::move(c));
            }
            return cases;
          },
          tol, ""};
}

// OneHot: indices in [-2, depth + 1] (some outside: off everywhere), random on and off values.
OpEntry OneHot() {
  return {[](Gen& g) {
            struct S {
              Shape indices;
              int64_t depth, axis;
            };
            static const std::vector<S> specs = {{{}, 4, -1},       {{7}, 5, -1},      {{7}, 5, 0},
                                                 {{3, 4}, 6, 1},    {{0, 3}, 2, -1},   {{4}, 0, -1},
                                                 {{257, 33}, 9, 0}, {{1024}, 1024, -1}};
            std::vector<Case> cases;
            for (const S& s : specs) {
              const double hi = static_cast<double>(s.depth + 1);
              Case c{"indices=" + s.indices.ToString() + " depth=" + std::to_string(s.depth) +
                         " axis=" + std::to_string(s.axis),
                     {g.Random(g.Input(0), s.indices, {-2, hi, -2, s.depth + 1}),
                      Gen::Scalar(DT_INT32, static_cast<double>(s.depth)),
                      g.Random(g.Input(2), Shape(), {}), g.Random(g.Input(3), Shape(), {})},
                     {{"axis", AttrValue::Int(s.axis)}}};
              cases.push_back(std::move(c));
            }
            return cases;
          },
          kExact, ""};
}

// `prefix` + [depth] index tuples into a tensor of shape `data`, each entry within its dimension;
// all different when `distinct` (then `data` holds at least as many slices as tuples).
Tensor Tuples(Gen& g, DataType dtype, const Shape& prefix, const Shape& data, int depth,
              bool distinct) {
  int64_t slices = 1;
  for (int d = 0; d < depth; ++d) slices *= data.dim(d);
  std::vector<int64_t> picks(static_cast<size_t>(prefix.num_elements()));
  if (distinct) {
    std::vector<int64_t> all(static_cast<size_t>(slices));
    std::iota(all.begin(), all.end(), int64_t{0});
    std::shuffle(all.begin(), all.end(), g.rng());
    std::copy_n(all.begin(), picks.size(), picks.begin());
  } else {
    std::uniform_int_distribution<int64_t> pick(0, std::max<int64_t>(slices - 1, 0));
    for (int64_t& p : picks) p = pick(g.rng());
  }
  std::vector<double> entries;
  for (int64_t p : picks) {
    std::vector<double> tuple(static_cast<size_t>(depth));
    for (int d = depth - 1; d >= 0; --d) {
      tuple[d] = static_cast<double>(p % data.dim(d));
      p /= data.dim(d);
    }
    entries.insert(entries.end(), tuple.begin(), tuple.end());
  }
  std::vector<int64_t> dims = prefix.dims();
  dims.push_back(depth);
  return Gen::Values(dtype, Shape(dims), entries);
}

// Shapes of GatherNd, ScatterNd and TensorScatterUpdate cases: the data, the tuples (indices
// without their last dimension) and the depth.
struct NdSpec {
  Shape data, tuples;
  int depth;
};
const std::vector<NdSpec>& NdSpecs() {
  static const std::vector<NdSpec> specs = {
      {{7}, {3}, 1},    {{4, 5}, {2, 3}, 2},   {{4, 5, 3}, {4}, 1},     {{6, 2}, {0}, 1},
      {{3, 2}, {2}, 0}, {{257, 33}, {100}, 1}, {{1024, 1024}, {512}, 1}};
  return specs;
}

std::string NdName(const NdSpec& s) {
  return "data=" + s.data.ToString() + " tuples=" + s.tuples.ToString() +
         " depth=" + std::to_string(s.depth);
}

// The shape of the updates of a scatter: the tuples' shape + data.shape[depth:].
Shape UpdatesShape(const NdSpec& s) {
  std::vector<int64_t> dims = s.tuples.dims();
  for (int d = s.depth; d < s.data.rank(); ++d) dims.push_back(s.data.dim(d));
  return Shape(dims);
}

OpEntry GatherNd() {
  return {[](Gen& g) {
            std::vector<Case> cases;
            for (const NdSpec& s : NdSpecs())
              cases.push_back({NdName(s),
                               {g.Random(g.Input(0), s.data, {}),
                                Tuples(g, g.Input(1), s.tuples, s.data, s.depth, false)},
                               {}});
            return cases;
          },
          kExact, ""};
}

OpEntry ScatterNd() {
  return {[](Gen& g) {
            std::vector<Case> cases;
            for (const NdSpec& s : NdSpecs()) {
              std::vector<double> shape;
              for (int64_t d : s.data.dims()) shape.push_back(static_cast<double>(d));
              cases.push_back({NdName(s),
                               {Tuples(g, g.Input(0), s.tuples, s.data, s.depth, false),
                                g.Random(g.Input(1), UpdatesShape(s), {0, 1, 0, 3}),
                                Gen::Vector(g.Input(2), shape)},
                               {}});
            }
            return cases;
          },
          kReduction, ""};
}

// Distinct tuples: with repeated ones the last write wins, which a parallel device need not keep.
OpEntry TensorScatterUpdate() {
  return {[](Gen& g) {
            std::vector<Case> cases;
            for (const NdSpec& s : NdSpecs()) {
              if (s.depth == 0 && s.tuples.num_elements() > 1) continue;  // one slice only
              cases.push_back({NdName(s),
                               {g.Random(g.Input(0), s.data, {}),
                                Tuples(g, g.Input(1), s.tuples, s.data, s.depth, true),
                                g.Random(g.Input(2), UpdatesShape(s), {})},
                               {}});
            }
            return cases;
          },
          kExact, ""};
}

// Einsum: one or two inputs of the given shapes in [-1, 1].
OpEntry Einsum() {
  return {[](Gen& g) {
            struct S {
              std::string equation;
              std::vector<Shape> shapes;
            };
            static const std::vector<S> specs = {
                {"ij,jk->ik", {{7, 33}, {33, 5}}},
                {"bqhd,bkhd->bhqk", {{2, 16, 4, 32}, {2, 24, 4, 32}}},
                {"bhqk,bkhd->bqhd", {{2, 4, 16, 24}, {2, 24, 4, 32}}},
                {"abc,cd->abd", {{4, 64, 257}, {257, 33}}},
                {"...ij,...jk->...ik", {{2, 1, 5, 7}, {3, 7, 4}}},
                {"i,j->ij", {{33}, {7}}},
                {"ij,jk->ik", {{3, 0}, {0, 4}}},
                {"ijk->kij", {{4, 5, 6}}},
                {"ij->j", {{257, 33}}},
                {"ii->i", {{9, 9}}},
                {"ij,jk->ik", {{512, 512}, {512, 512}}}};
            std::vector<Case> cases;
            for (const S& s : specs) {
              Case c{s.equation,
                     {},
                     {{"equation", AttrValue::String(s.equation)},
                      {"N", AttrValue::Int(static_cast<int64_t>(s.shapes.size()))}}};
              for (const Shape& shape : s.shapes) {
                c.name += " " + shape.ToString();
                c.inputs.push_back(g.Random(g.Type("inputs"), shape, {-1, 1, -3, 3}));
              }
              cases.push_back(std::move(c));
            }
            return cases;
          },
          kMatMul, ""};
}

AttrMap Block(int64_t block) { return {{"block_size", AttrValue::Int(block)}}; }

AttrMap Sorted(bool sorted) { return {{"sorted", AttrValue::Bool(sorted)}}; }
AttrMap NumSplit(int64_t n) { return {{"num_split", AttrValue::Int(n)}}; }
AttrMap ScanModes(bool exclusive, bool reverse) {
  return {{"exclusive", AttrValue::Bool(exclusive)}, {"reverse", AttrValue::Bool(reverse)}};
}

// Cumsum and Cumprod along each axis of a few shapes, in every mode.
std::vector<Spec> ScanSpecs() {
  return {{{7}, {{kScalarValue, 0}}, ScanModes(false, false)},
          {{4, 33}, {{kScalarValue, 1}}, ScanModes(true, false)},
          {{4, 33}, {{kScalarValue, -2}}, ScanModes(false, true)},
          {{3, 5, 257}, {{kScalarValue, 1}}, ScanModes(true, true)},
          {{0, 3}, {{kScalarValue, 1}}, ScanModes(false, false)},
          {{1024, 1024}, {{kScalarValue, 0}}, ScanModes(false, false)}};
}

}  // namespace

// Where, Unique, Roll and Bucketize: small integers (so that zeros and repeats occur) in vectors
// and matrices, a large vector, an empty one.
OpEntry SearchOp(const std::string& op) {
  return {[op](Gen& g) {
            static const std::vector<Shape> shapes = {{7}, {3, 5}, {4096}, {0}, {2, 3, 4}};
            const Range small{-3, 3, -3, 3, false, 1.0};
            std::vector<Case> cases;
            for (const Shape& shape : shapes) {
              if (op == "Unique" && shape.rank() != 1) continue;  // vectors only
              Case c{"x=" + shape.ToString(), {g.Random(g.Input(0), shape, small)}, {}};
              if (op == "Roll") {
                const int64_t rank = shape.rank();
                std::vector<double> shift, axis;
                for (int64_t d = 0; d < rank; ++d) {
                  shift.push_back(static_cast<double>(3 * d - 2));
                  axis.push_back(static_cast<double>(d));
                }
                c.inputs.push_back(Gen::Vector(g.Input(1), shift));
                c.inputs.push_back(Gen::Vector(g.Input(2), axis));
              }
              if (op == "Bucketize")
                c.attrs["boundaries"] = AttrValue::FloatList({-2.5f, -1.0f, 0.0f, 0.5f, 2.0f});
              cases.push_back(std::move(c));
            }
            return cases;
          },
          kExact, ""};
}

AttrMap Corners(bool align, bool half) {
  return {{"align_corners", AttrValue::Bool(align)}, {"half_pixel_centers", AttrValue::Bool(half)}};
}

// The resizes (images, size[, scale, translation]): up, down, to one pixel, no images, and a
// batch of camera-sized images.
std::vector<Spec> ResizeSpecs(bool half_pixel_attr, bool scale_and_translate) {
  auto attrs = [&](bool align, bool half) {
    if (!half_pixel_attr) return align ? AttrMap{{"align_corners", AttrValue::Bool(true)}} : AttrMap{};
    return Corners(align, half);
  };
  std::vector<Spec> specs = {{{1, 3, 4, 2}, {{5, 7}}, attrs(false, false)},
                             {{2, 5, 6, 3}, {{2, 3}}, attrs(false, true)},
                             {{1, 4, 4, 1}, {{7, 2}}, attrs(true, false)},
                             {{3, 2, 2, 4}, {{1, 1}}, attrs(false, false)},
                             {{0, 3, 4, 2}, {{6, 8}}, attrs(false, false)},
                             {{4, 64, 64, 3}, {{100, 90}}, attrs(false, true)}};
  if (scale_and_translate)
    for (Spec& s : specs) {
      const double h = s.host[0][0] / static_cast<double>(s.shape.dim(1));
      const double w = s.host[0][1] / static_cast<double>(s.shape.dim(2));
      s.host.push_back({h, w});
      s.host.push_back({0.25, -0.5});
      s.attrs.clear();
    }
  return specs;
}

// A resize gradient: grads [n, h, w, c] random in [-1, 1] and the original image (or its size).
OpEntry ResizeGradient(bool takes_size) {
  return {[takes_size](Gen& g) {
            struct S {
              Shape grads, original;
              AttrMap attrs;
            };
            const std::vector<S> specs = {{{1, 5, 7, 2}, {1, 3, 4, 2}, Corners(false, false)},
                                          {{2, 2, 3, 3}, {2, 5, 6, 3}, Corners(false, true)},
                                          {{1, 7, 2, 1}, {1, 4, 4, 1}, Corners(true, false)},
                                          {{0, 6, 8, 2}, {0, 3, 4, 2}, Corners(false, false)},
                                          {{4, 100, 90, 3}, {4, 64, 64, 3}, Corners(false, true)}};
            std::vector<Case> cases;
            for (const S& s : specs) {
              Case c{"grads=" + s.grads.ToString() + " original=" + s.original.ToString(),
                     {g.Random(g.Input(0), s.grads, {-1, 1, -8, 8})},
                     s.attrs};
              c.inputs.push_back(
                  takes_size ? Gen::Vector(DT_INT32, {static_cast<double>(s.original.dim(1)),
                                                      static_cast<double>(s.original.dim(2))})
                             : g.Random(g.Input(1), s.original, {-1, 1, 0, 9}));
              cases.push_back(std::move(c));
            }
            return cases;
          },
          takes_size ? kExact : kArithmetic, ""};
}

void AddModelOpCases(std::map<std::string, OpEntry>& t) {
  t["ResizeBilinear"] = WithHostInputs(ResizeSpecs(true, false), {-10, 10, 0, 255}, kArithmetic);
  t["ResizeBicubic"] = WithHostInputs(ResizeSpecs(true, false), {-10, 10, 0, 255}, kArithmetic);
  t["ResizeNearestNeighbor"] = WithHostInputs(ResizeSpecs(true, false), {-10, 10, 0, 255});
  t["ResizeArea"] = WithHostInputs(ResizeSpecs(false, false), {-10, 10, 0, 255}, kArithmetic);
  t["ScaleAndTranslate"] =
      WithHostInputs(ResizeSpecs(false, true), {-10, 10, 0, 255}, kArithmetic);
  t["ResizeBilinearGrad"] = ResizeGradient(false);
  t["ResizeBicubicGrad"] = ResizeGradient(false);
  t["ResizeNearestNeighborGrad"] = ResizeGradient(true);
  t["ScaleAndTranslateGrad"] = {[](Gen& g) {
                                  std::vector<Case> cases;
                                  for (auto [gs, os] : {std::pair{Shape({1, 5, 7, 2}), Shape({1, 3, 4, 2})},
                                                        std::pair{Shape({2, 2, 3, 3}), Shape({2, 5, 6, 3})}}) {
                                    Case c{"grads=" + gs.ToString(),
                                           {g.Random(DT_FLOAT, gs, {-1, 1}), g.Random(DT_FLOAT, os, {-1, 1}),
                                            Gen::Vector(DT_FLOAT, {gs.dim(1) / static_cast<double>(os.dim(1)),
                                                                   gs.dim(2) / static_cast<double>(os.dim(2))}),
                                            Gen::Vector(DT_FLOAT, {0.5, -0.25})},
                                           {}};
                                    cases.push_back(std::move(c));
                                  }
                                  return cases;
                                },
                                kArithmetic, ""};
  for (const char* op : {"Where", "Unique", "Roll", "Bucketize"}) t[op] = SearchOp(op);
  // Values on a grid of 0.5 (integers in [-3, 3]) so that rows hold ties.
  t["TopKV2"] = WithHostInputs({{{7}, {{kScalarValue, 3}}, {}},
                                {{4, 5}, {{kScalarValue, 5}}, {}},
                                {{4, 5}, {{kScalarValue, 5}}, Sorted(false)},
                                {{2, 3, 8}, {{kScalarValue, 1}}, {}},
                                {{33, 257}, {{kScalarValue, 17}}, {}},
                                {{0, 3}, {{kScalarValue, 2}}, {}},
                                {{3, 0}, {{kScalarValue, 0}}, {}},
                                {{1024, 1024}, {{kScalarValue, 4}}, {}}},
                               {-3, 3, -3, 3, false, 0.5});
  t["OneHot"] = OneHot();
  t["ReverseV2"] = WithHostInputs({{{}, {{}}, {}},
                                   {{7}, {{0}}, {}},
                                   {{3, 5}, {{-1}}, {}},
                                   {{2, 3, 4}, {{0, 2}}, {}},
                                   {{2, 3, 4}, {{1}}, {}},
                                   {{0, 3}, {{0, 1}}, {}},
                                   {{33, 257}, {{}}, {}},
                                   {{1024, 1024}, {{0, 1}}, {}}},
                                  {});
  t["SplitV"] = WithHostInputs({{{7}, {{2, -1, 1}, {kScalarValue, 0}}, NumSplit(3)},
                                {{3, 6}, {{1, 0, 5}, {kScalarValue, -1}}, NumSplit(3)},
                                {{2, 5, 3}, {{-1, 3}, {kScalarValue, 1}}, NumSplit(2)},
                                {{2, 2}, {{-1}, {kScalarValue, 1}}, NumSplit(1)},
                                {{0, 4}, {{1, -1}, {kScalarValue, 1}}, NumSplit(2)},
                                {{1024, 1024}, {{1000, -1}, {kScalarValue, 0}}, NumSplit(2)}},
                               {});
  // Sums of at most 1024 values in [0, 1]; products of values in [0.99, 1.01].
  t["Cumsum"] = WithHostInputs(ScanSpecs(), {0, 1, 0, 3}, kReduction);
  t["Cumprod"] = WithHostInputs(ScanSpecs(), {0.99, 1.01, 1, 1}, kReduction);
  t["SpaceToDepth"] = WithHostInputs({{{1, 4, 4, 1}, {}, Block(2)},
                                      {{2, 6, 9, 3}, {}, Block(3)},
                                      {{0, 2, 2, 5}, {}, Block(2)},
                                      {{8, 64, 64, 32}, {}, Block(2)}},
                                     {});
  t["DepthToSpace"] = WithHostInputs({{{1, 2, 2, 4}, {}, Block(2)},
                                      {{2, 3, 5, 18}, {}, Block(3)},
                                      {{0, 2, 2, 4}, {}, Block(2)},
                                      {{8, 32, 32, 128}, {}, Block(2)}},
                                     {});
  t["MatrixBandPart"] = WithHostInputs({{{3, 4}, {{kScalarValue, 1}, {kScalarValue, 0}}, {}},
                                        {{2, 5, 3}, {{kScalarValue, -1}, {kScalarValue, 1}}, {}},
                                        {{7, 7}, {{kScalarValue, 0}, {kScalarValue, -1}}, {}},
                                        {{0, 3, 3}, {{kScalarValue, 1}, {kScalarValue, 1}}, {}},
                                        {{1024, 1024}, {{kScalarValue, 3}, {kScalarValue, 3}}, {}}},
                                       {});
  t["Einsum"] = Einsum();
  t["GatherNd"] = GatherNd();
  t["ScatterNd"] = ScatterNd();
  t["TensorScatterUpdate"] = TensorScatterUpdate();
  // Repeated tuples combine in order: the same on every device for these (exactly for Max and
  // Min; sums may round in another order).
  for (const char* op : {"TensorScatterMax", "TensorScatterMin"}) t[op] = TensorScatterUpdate();
  for (const char* op : {"TensorScatterAdd", "TensorScatterSub"}) {
    t[op] = TensorScatterUpdate();
    t[op].tol = kArithmetic;
  }
}

}  // namespace cfx::conformance
