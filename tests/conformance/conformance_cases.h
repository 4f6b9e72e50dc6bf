// The conformance case table: for each op, the inputs, attrs and tolerance with which a device's
// kernels are compared against the CPU reference (conformance_test.cc runs them).
//
// An entry makes its cases for one assignment of the op's type attrs (the dtypes a kernel was
// registered for); generators draw values in ranges that are valid for the op (positive for Log,
// nonzero divisors, invertible matrices) from a seeded generator, so a run is reproducible.
#ifndef CONFLUX_TESTS_CONFORMANCE_CONFORMANCE_CASES_H_
#define CONFLUX_TESTS_CONFORMANCE_CONFORMANCE_CASES_H_

#include <functional>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "conflux/attr_value.h"
#include "conflux/kernel_registry.h"
#include "conflux/op_def.h"
#include "conflux/tensor.h"

namespace cfx::conformance {

// How close a device's output must be to the CPU's. Integer, bool and other non-floating outputs
// are always compared bit for bit; floating outputs bit for bit when `exact`, else element-wise
// within atol + rtol * |reference| (and both NaN, or the same infinity).
struct Tolerance {
  bool exact = false;
  double rtol = 0;
  double atol = 0;
};

// Values drawn for one input: uniform in [lo, hi] for floating types, in [ilo, ihi] for integer
// types (clamped to the type; at least 0 for unsigned types), random for bool. With
// `random_sign`, a signed value's sign is flipped with probability 1/2 (so [0.5, 4] with
// random_sign is a nonzero divisor). Types with no arithmetic here (complex, quantized) get
// random bytes: they only reach data-movement ops.
struct Range {
  double lo = -10, hi = 10;
  int64_t ilo = -10, ihi = 10;
  bool random_sign = false;
  double step = 0;  // > 0: floating values are rounded to multiples of it (so that ties occur)
};

// The tolerance classes (the table at the top of conformance_cases.cc says which ops use which).
inline constexpr Tolerance kExact{true, 0, 0};
inline constexpr Tolerance kArithmetic{false, 1e-5, 1e-6};
inline constexpr Tolerance kTranscendental{false, 1e-4, 1e-6};
inline constexpr Tolerance kReduction{false, 1e-4, 1e-5};
inline constexpr Tolerance kMatMul{false, 1e-4, 2e-3};
inline constexpr Tolerance kLinalg{false, 1e-3, 1e-4};

// The size of the large cases: 2^20 elements.
inline constexpr int64_t kLarge = int64_t{1} << 20;

// The shapes of the element-wise cases: a scalar, empty tensors, sizes 1, 7, 33 and 257, and
// kLarge elements.
const std::vector<TensorShape>& UnaryShapes();

struct Case {
  std::string name;            // "x=[4,1,3] y=[5,1]": what the case covers
  std::vector<Tensor> inputs;  // host tensors, in the op's input order
  AttrMap attrs;               // besides the type attrs
};

// What a case generator sees: the op, the dtype of each of its type attrs, the random source.
class Gen {
 public:
  Gen(const OpDef* op, std::map<std::string, DataType> types, uint32_t seed)
      : op_(op), types_(std::move(types)), rng_(seed) {}
  // The dtype of input argument `arg` (by name), fixed or from its type attr.
  DataType Type(const std::string& arg) const;
  // The dtype of the `index`-th input argument.
  DataType Input(int index) const;
  DataType Attr(const std::string& type_attr) const { return types_.at(type_attr); }
  Tensor Random(DataType dtype, const TensorShape& shape, const Range& range);
  // A host tensor of an integer dtype (shape and axis inputs) or any numeric dtype from values.
  static Tensor Values(DataType dtype, const TensorShape& shape, const std::vector<double>& values);
  static Tensor Vector(DataType dtype, const std::vector<double>& values) {
    return Values(dtype, TensorShape({static_cast<int64_t>(values.size())}), values);
  }
  static Tensor Scalar(DataType dtype, double value) {
    return Values(dtype, TensorShape(), {value});
  }
  std::mt19937& rng() { return rng_; }
  // Tensors of more than `n` elements are zero-filled instead of drawn: for callers that use
  // only the small cases (drawing the large ones is most of the time a table takes to build).
  void ZeroFillAbove(int64_t n) { max_drawn_elements_ = n; }

 private:
  const OpDef* op_;
  std::map<std::string, DataType> types_;
  std::mt19937 rng_;
  int64_t max_drawn_elements_ = std::numeric_limits<int64_t>::max();
};

struct OpEntry {
  std::function<std::vector<Case>(Gen&)> cases;
  Tolerance tol;
  // Non-empty: the op is deliberately not compared (random, side effects only, file I/O); why.
  std::string skip;
};

// By op name. Every op whose kernels a device registers must have an entry (or take reference
// or resource arguments, which the kernel-level harness cannot feed).
const std::map<std::string, OpEntry>& ConformanceTable();

// Adds the entries of the ops-nn plugin's BiasAddGrad, activation, loss, batch-normalization and
// metric ops (nn_op_cases.cc) to `table`.
void AddNnOpCases(std::map<std::string, OpEntry>& table);
// Adds the entries of the ops-nn plugin's convolutions and pools (window_op_cases.cc).
void AddWindowOpCases(std::map<std::string, OpEntry>& table);
// Adds the entries of the ops that exported models use beyond the core set: TopKV2, OneHot,
// ReverseV2, SplitV, Cumsum, Cumprod, ... (model_op_cases.cc).
void AddModelOpCases(std::map<std::string, OpEntry>& table);
// Adds the cases of the ops that gradient functions use (gradient_cases.cc).
void AddGradientOpCases(std::map<std::string, OpEntry>* table);

// Why the kernel-level harness cannot run `op` at all ("" when it can): reference or resource
// arguments, which have no value outside a graph.
std::string Unfeedable(const OpDef& op);

// The dtype assignments of the op's type attrs to run kernel `k` with: the kernel's constraint
// lists, an unconstrained attr's default, or else float and int32 where the op allows them.
std::vector<std::map<std::string, DataType>> TypeAssignments(const KernelDef& k, const OpDef& op);

// "T=float, Tidx=int32".
std::string TypesString(const std::map<std::string, DataType>& types);

// FNV-1a of `s`: the seed of an op's cases, stable across runs and platforms.
uint32_t Fnv1a(const std::string& s);

// Element `i` of a numeric host tensor as a double (half and bfloat16 decoded).
double ElementAsDouble(const Tensor& t, int64_t i);

}  // namespace cfx::conformance

#endif  // CONFLUX_TESTS_CONFORMANCE_CONFORMANCE_CASES_H_
