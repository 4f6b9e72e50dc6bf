// Conformance cases of the ops that gradient functions build on (ReluGrad, SigmoidGrad, TanhGrad,
// SqrtGrad, RsqrtGrad, ReciprocalGrad, BroadcastGradientArgs, BroadcastTo, InvertPermutation,
// StopGradient, PreventGradient, UnsortedSegmentSum); BuildTable in conformance_cases.cc adds
// them. Tolerances follow the classes listed there.
#include <algorithm>
#include <numeric>
#include <random>

#include "conformance_cases.h"

namespace cfx::conformance {
namespace {

using Shape = TensorShape;
// The shared unary shapes (conformance_cases.h), with kLarge and the tolerance classes.
const std::vector<Shape>& Shapes() { return UnaryShapes(); }

// Two inputs of one shape (no broadcasting), drawn from ranges r0 and r1.
OpEntry SameShapeBinary(Range r0, Range r1, Tolerance tol) {
  return {[r0, r1](Gen& g) {
            std::vector<Case> cases;
            for (const Shape& s : Shapes())
              cases.push_back({"inputs=" + s.ToString(),
                               {g.Random(g.Input(0), s, r0), g.Random(g.Input(1), s, r1)},
                               {}});
            return cases;
          },
          tol, ""};
}

OpEntry Identity(AttrMap attrs) {
  return {[attrs](Gen& g) {
            std::vector<Case> cases;
            for (const Shape& s : Shapes())
              cases.push_back({"input=" + s.ToString(), {g.Random(g.Input(0), s, {})}, attrs});
            return cases;
          },
          kExact, ""};
}

OpEntry BroadcastGradientArgs() {
  return {[](Gen& g) {
            static const std::vector<std::pair<std::vector<double>, std::vector<double>>> pairs = {
                {{}, {}},
                {{2, 3}, {2, 3}},
                {{11, 7, 5, 3, 2}, {3, 1}},
                {{1}, {4, 1, 6}},
                {{11, 1, 5, 1, 2}, {7, 1, 3, 1}},
                {{2, 0, 5}, {5}},
                {{1, 1}, {1}}};
            std::vector<Case> cases;
            for (const auto& [s0, s1] : pairs) {
              Tensor a = Gen::Vector(g.Input(0), s0), b = Gen::Vector(g.Input(1), s1);
              cases.push_back({"s0=" + a.DebugString() + " s1=" + b.DebugString(), {a, b}, {}});
            }
            return cases;
          },
          kExact, ""};
}

// ConcatOffset(concat_dim, shape_0 .. shape_N-1): shapes that agree off the axis.
OpEntry ConcatOffset() {
  return {[](Gen& g) {
            struct S {
              int axis;
              std::vector<std::vector<double>> shapes;
            };
            static const std::vector<S> specs = {
                {0, {{2, 3}, {5, 3}}},
                {1, {{2, 3, 4}, {2, 0, 4}, {2, 7, 4}}},
                {-1, {{4, 1}, {4, 6}, {4, 2}, {4, 9}}},
                {0, {{1}, {1}}}};
            std::vector<Case> cases;
            for (const S& spec : specs) {
              Case c{"concat_dim=" + std::to_string(spec.axis) + " N=" +
                         std::to_string(spec.shapes.size()),
                     {Gen::Scalar(DT_INT32, spec.axis)},
                     {{"N", AttrValue::Int(static_cast<int64_t>(spec.shapes.size()))}}};
              for (const auto& shape : spec.shapes)
                c.inputs.push_back(Gen::Vector(g.Type("shape"), shape));
              cases.push_back(std::move(c));
            }
            return cases;
          },
          kExact, ""};
}
// ShapeN(input_0 .. input_N-1): tensors of different ranks, empty ones included.
OpEntry ShapeN() {
  return {[](Gen& g) {
            static const std::vector<std::vector<Shape>> specs = {
                {{}}, {{2, 3}, {0}, {4, 1, 5}}, {{7}, {7}}};
            std::vector<Case> cases;
            for (const auto& shapes : specs) {
              Case c{"N=" + std::to_string(shapes.size()),
                     {},
                     {{"N", AttrValue::Int(static_cast<int64_t>(shapes.size()))}}};
              for (const Shape& shape : shapes) c.inputs.push_back(g.Random(g.Type("input"), shape, {}));
              cases.push_back(std::move(c));
            }
            return cases;
          },
          kExact, ""};
}
OpEntry BroadcastTo() {
  return {[](Gen& g) {
            static const std::vector<std::pair<Shape, std::vector<double>>> specs = {
                {{}, {}},         {{}, {4, 5}},           {{3}, {2, 3}},
                {{4, 1}, {4, 6}}, {{1, 3, 1}, {2, 3, 5}}, {{0, 1}, {2, 0, 7}},
                {{2, 3}, {2, 3}}, {{1024}, {1024, 1024}}};
            std::vector<Case> cases;
            for (const auto& [input, shape] : specs) {
              Tensor s = Gen::Vector(g.Input(1), shape);
              cases.push_back({"input=" + input.ToString() + " shape=" + s.DebugString(),
                               {g.Random(g.Input(0), input, {}), s},
                               {}});
            }
            return cases;
          },
          kExact, ""};
}

OpEntry InvertPermutation() {
  return {
      [](Gen& g) {
        std::vector<Case> cases;
        for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{257}, kLarge}) {
          std::vector<double> perm(static_cast<size_t>(n));
          std::iota(perm.begin(), perm.end(), 0.0);
          std::shuffle(perm.begin(), perm.end(), g.rng());
          cases.push_back({"x=[" + std::to_string(n) + "]", {Gen::Vector(g.Input(0), perm)}, {}});
        }
        return cases;
      },
      kExact, ""};
}

OpEntry UnsortedSegmentSum() {
  return {[](Gen& g) {
            struct S {
              Shape data, ids;
              int64_t num_segments;
            };
            static const std::vector<S> specs = {{{7}, {7}, 3},          {{6, 4}, {6}, 10},
                                                 {{2, 3, 5}, {2, 3}, 4}, {{0, 3}, {0}, 2},
                                                 {{5, 2}, {5}, 0},       {{4096, 256}, {4096}, 64}};
            std::vector<Case> cases;
            for (const S& s : specs) {
              // Ids in [-1, num_segments): -1 is dropped.
              Tensor ids = g.Random(g.Input(1), s.ids, {0, 0, -1, s.num_segments - 1});
              cases.push_back({"data=" + s.data.ToString() + " segment_ids=" + s.ids.ToString() +
                                   " num_segments=" + std::to_string(s.num_segments),
                               {g.Random(g.Input(0), s.data, {0, 1, -10, 10}), ids,
                                Gen::Scalar(g.Input(2), static_cast<double>(s.num_segments))},
                               {}});
            }
            return cases;
          },
          kReduction, ""};
}

// The sorted segment reductions: ids sorted, with repeats, gaps (empty segments) and one segment
// of everything.
OpEntry SortedSegment(Tolerance tol) {
  return {[](Gen& g) {
            struct S {
              Shape data;
              std::vector<double> ids;
            };
            static const std::vector<S> specs = {{{6}, {0, 0, 1, 3, 3, 3}},
                                                 {{5, 4}, {0, 2, 2, 2, 7}},
                                                 {{3, 2, 2}, {1, 1, 1}},
                                                 {{0, 3}, {}}};
            std::vector<Case> cases;
            for (const S& spec : specs)
              cases.push_back({"data=" + spec.data.ToString() + " segment_ids=" +
                                   std::to_string(spec.ids.size()),
                               {g.Random(g.Input(0), spec.data, {0, 1, -10, 10}),
                                Gen::Vector(g.Input(1), spec.ids)},
                               {}});
            return cases;
          },
          tol, ""};
}
}  // namespace

void AddGradientOpCases(std::map<std::string, OpEntry>* table) {
  std::map<std::string, OpEntry>& t = *table;
  const Range any{-10, 10, -10, 10};
  const Range ties{-3, 3, -3, 3, false, 0.5};  // some features exactly 0
  t["ReluGrad"] = SameShapeBinary(any, ties, kExact);
  t["SigmoidGrad"] = SameShapeBinary({0, 1}, any, kArithmetic);
  t["TanhGrad"] = SameShapeBinary({-1, 1}, any, kArithmetic);
  for (const char* op : {"SqrtGrad", "RsqrtGrad"})
    t[op] = SameShapeBinary({0.1, 10}, any, kArithmetic);
  t["ReciprocalGrad"] = SameShapeBinary(any, any, kArithmetic);
  t["BroadcastGradientArgs"] = BroadcastGradientArgs();
  t["BroadcastArgs"] = BroadcastGradientArgs();  // the same (s0, s1) pairs
  t["ConcatOffset"] = ConcatOffset();
  t["ShapeN"] = ShapeN();
  t["BroadcastTo"] = BroadcastTo();
  t["InvertPermutation"] = InvertPermutation();
  t["StopGradient"] = Identity({});
  t["PreventGradient"] = Identity({{"message", AttrValue::String("conformance")}});
  t["UnsortedSegmentSum"] = UnsortedSegmentSum();
  for (const char* op : {"UnsortedSegmentProd", "UnsortedSegmentMax", "UnsortedSegmentMin"})
    t[op] = UnsortedSegmentSum();
  for (const char* op : {"SegmentSum", "SegmentMean", "SegmentProd"})
    t[op] = SortedSegment(kReduction);
  for (const char* op : {"SegmentMax", "SegmentMin"}) t[op] = SortedSegment(kExact);
}

}  // namespace cfx::conformance
