// Comparisons and logical ops on CPU, with NumPy broadcasting: Less, LessEqual, Greater,
// GreaterEqual for float, double, int32, int64; Equal and NotEqual for those and bool; LogicalAnd,
// LogicalOr and LogicalNot on bool.
#include "kernels/broadcast.h"
#include "kernels/util.h"

namespace cfx::cpu {
namespace {

using LessFn = ElementFn<1, [](auto a, auto b) { return a < b; }>;
using LessEqualFn = ElementFn<1, [](auto a, auto b) { return a <= b; }>;
// (a > b) in parentheses: a bare '>' would close the template argument list.
using GreaterFn = ElementFn<1, [](auto a, auto b) { return (a > b); }>;
using GreaterEqualFn = ElementFn<1, [](auto a, auto b) { return a >= b; }>;
using EqualFn = ElementFn<1, [](auto a, auto b) { return a == b; }>;
using NotEqualFn = ElementFn<1, [](auto a, auto b) { return a != b; }>;
using LogicalAndFn = ElementFn<1, [](bool a, bool b) { return a && b; }>;
using LogicalOrFn = ElementFn<1, [](bool a, bool b) { return a || b; }>;
using LogicalNotFn = ElementFn<1, [](bool x) { return !x; }>;

// Equal and NotEqual: like BinaryKernel<T, bool, F>, except that with incompatible_shape_error =
// false, shapes that do not broadcast give the scalar kIncompatibleResult ("these tensors are not
// equal": false for Equal, true for NotEqual) instead of an error.
template <typename T, typename F, bool kIncompatibleResult>
class EqualityKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) {
    return init.attrs().GetOr("incompatible_shape_error", &incompatible_shape_error_, true);
  }

  sdk::Status Compute(sdk::KernelContext& ctx) {
    CFX_SDK_RETURN_IF_ERROR(ExpectInputs(ctx, {sdk::kDType<T>, sdk::kDType<T>}));
    auto b = sdk::PlanBroadcast({{"x", ctx.input(0).shape()}, {"y", ctx.input(1).shape()}});
    if (b.ok()) return ComputeBinary<T, bool, F>(ctx, *b);
    if (incompatible_shape_error_) return b.status();
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor z, ctx.AllocateOutput(0, sdk::Shape()));
    *z.data<bool>() = kIncompatibleResult;
    return sdk::Status();
  }

 private:
  bool incompatible_shape_error_ = true;
};

template <typename F>
struct Comparison {
  template <typename T>
  using Kernel = BinaryKernel<T, bool, F>;
};

template <typename F, bool kIncompatibleResult>
struct Equality {
  template <typename T>
  using Kernel = EqualityKernel<T, F, kIncompatibleResult>;
};

template <typename F>
void RegisterOrdering(sdk::Plugin& p, const char* op) {
  RegisterForTypes<Comparison<F>::template Kernel, float, double, int32_t, int64_t>(p, op);
}

template <typename F, bool kIncompatibleResult>
void RegisterEquality(sdk::Plugin& p, const char* op) {
  RegisterForTypes<Equality<F, kIncompatibleResult>::template Kernel, float, double, int32_t,
                   int64_t, bool>(p, op);
}

}  // namespace

void RegisterComparisonKernels(sdk::Plugin& p) {
  RegisterOrdering<LessFn>(p, "Less");
  RegisterOrdering<LessEqualFn>(p, "LessEqual");
  RegisterOrdering<GreaterFn>(p, "Greater");
  RegisterOrdering<GreaterEqualFn>(p, "GreaterEqual");
  RegisterEquality<EqualFn, false>(p, "Equal");
  RegisterEquality<NotEqualFn, true>(p, "NotEqual");
  p.Kernel<BinaryKernel<bool, bool, LogicalAndFn>>("LogicalAnd", "CPU");
  p.Kernel<BinaryKernel<bool, bool, LogicalOrFn>>("LogicalOr", "CPU");
  p.Kernel<UnaryKernel<bool, LogicalNotFn>>("LogicalNot", "CPU");
}

}  // namespace cfx::cpu
