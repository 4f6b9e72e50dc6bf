// Conformance cases of the ops that exported models use beyond the core set (see
// conformance_cases.h): TopKV2, OneHot, ReverseV2 and SplitV move or pick values without
// arithmetic and are compared bit for bit; Cumsum and Cumprod add or multiply along an axis, in
// an order a device may change: kReduction's tolerance, on values that neither cancel nor
// overflow.
#include <cmath>
#include <limits>
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

void AddModelOpCases(std::map<std::string, OpEntry>& t) {
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
}

}  // namespace cfx::conformance
