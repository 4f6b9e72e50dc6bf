// Element-wise kernels on CPU: the loop that runs an element function over a broadcast of up to
// three operands on the intra-op pool, and the kernel templates that the element-wise families
// share.
//
// The broadcast itself is the SDK's plan (conflux/sdk/broadcast_plan.h): the output shape plus a
// collapsed iteration space, so [8,1,16,16] + [8,1,1,1] runs as an [8,256] loop with strides
// {256,1} and {1,0}, and same-shape or scalar operands run as one flat loop. Along the innermost
// dim each operand has stride 1 or 0; the loop is instantiated per pattern so that a broadcast
// operand is a loop-invariant value and the compiler vectorises the run.
//
// Everything here is stateless. The threads of one ParallelFor read a plan concurrently.
#ifndef CONFLUX_PLUGINS_CPU_KERNELS_BROADCAST_H_
#define CONFLUX_PLUGINS_CPU_KERNELS_BROADCAST_H_

#include <algorithm>
#include <array>
#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "conflux/sdk.h"
#include "conflux/sdk/broadcast_plan.h"
#include "conflux/sdk/wrapping_arithmetic.h"

namespace cfx::cpu {

// OK when the kernel got exactly `dtypes.size()` inputs with these dtypes; otherwise
// InvalidArgument naming the count, or the input and both dtypes. The executor checks the same,
// but a kernel run on its own must fail cleanly rather than crash.
sdk::Status ExpectInputs(const sdk::KernelContext& ctx, std::initializer_list<cfx_dtype> dtypes);
// The same for a count of inputs known only at run time (AddN's N).
sdk::Status ExpectInputs(const sdk::KernelContext& ctx, std::span<const cfx_dtype> dtypes);

// Integer arithmetic that wraps around on overflow (conflux/sdk/wrapping_arithmetic.h); the
// reductions (reduction_loops.h) use it too.
using sdk::WrappingAdd;
using sdk::WrappingMultiply;
using sdk::WrappingSub;
// False for every integer.
template <typename T>
bool IsNan(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return v != v;
  } else {
    return false;
  }
}

namespace internal {

// An operand inside one run of the innermost dim: a pointer stepping by one element, or (kOne)
// the single value that the run broadcasts.
template <typename T, bool kOne>
struct RunOperand {
  explicit RunOperand(const T* p) : p(p) {}
  T operator[](int64_t i) const { return p[i]; }
  const T* p;
};
template <typename T>
struct RunOperand<T, true> {
  explicit RunOperand(const T* p) : v(*p) {}
  T operator[](int64_t) const { return v; }
  T v;
};

// out[i] = f(operand_k[i]...) for i in [0, n); operand k starts at in_k + offsets[k] and is one
// value when bit k of kMask is set.
template <unsigned kMask, typename F, typename Out, size_t N, size_t... K, typename... In>
inline void RunSpan(const F& f, int64_t n, Out* out, const std::array<int64_t, N>& offsets,
                    std::index_sequence<K...>, const In*... in) {
  // `out` is either a buffer of its own or exactly an input's (a forwarded buffer): element i is
  // read before it is written and no iteration touches another's elements, so there is no
  // loop-carried dependence. ivdep says so: otherwise GCC guards the vector loop with an overlap
  // check that an in-place run fails, and falls back to a scalar loop.
  auto loop = [&](auto... operand) {
#pragma GCC ivdep
    for (int64_t i = 0; i < n; ++i) out[i] = f(operand[i]...);
  };
  loop(RunOperand<In, ((kMask >> K) & 1u) != 0>(in + offsets[K])...);
}

// Calls run(output_offset, operand_offsets, n) for the consecutive runs along the innermost dim
// that cover output elements [begin, end) of `b`, in order.
template <size_t N, typename Run>
void ForEachRun(const sdk::BroadcastPlan& b, int64_t begin, int64_t end, const Run& run) {
  const int inner = static_cast<int>(b.dims.size()) - 1;
  const int64_t inner_size = b.dims[inner];
  std::vector<int64_t> index(inner, 0);  // position along the outer dims
  std::array<int64_t, N> row{};          // operand offsets at the start of the current row
  // The plan's stride rows, loaded once: the runs store through pointers that the compiler cannot
  // tell apart from the plan's, so it would otherwise reload them for every row.
  std::array<const int64_t*, N> strides;
  for (size_t k = 0; k < N; ++k) strides[k] = b.strides[k].data();
  int64_t col = begin % inner_size;
  for (int64_t rest = begin / inner_size, d = inner - 1; d >= 0; --d) {
    index[d] = rest % b.dims[d];
    rest /= b.dims[d];
    for (size_t k = 0; k < N; ++k) row[k] += index[d] * strides[k][d];
  }
  for (int64_t pos = begin; pos < end; col = 0) {
    const int64_t n = std::min(inner_size - col, end - pos);
    std::array<int64_t, N> offsets;
    for (size_t k = 0; k < N; ++k) offsets[k] = row[k] + col * strides[k][inner];
    run(pos, offsets, n);
    pos += n;
    for (int d = inner - 1; d >= 0; --d) {  // next row: an odometer over the outer dims
      for (size_t k = 0; k < N; ++k) row[k] += strides[k][d];
      if (++index[d] < b.dims[d]) break;
      for (size_t k = 0; k < N; ++k) row[k] -= b.dims[d] * strides[k][d];
      index[d] = 0;
    }
  }
}

// Calls fn(std::integral_constant<unsigned, mask>) for a runtime mask in [M, kEnd).
template <unsigned M, unsigned kEnd, typename Fn>
void WithMask(unsigned mask, const Fn& fn) {
  if constexpr (M < kEnd) {
    if (mask == M) return fn(std::integral_constant<unsigned, M>());
    WithMask<M + 1, kEnd>(mask, fn);
  }
}

}  // namespace internal

// out[i] = f(in_0[..], ..., in_N-1[..]) over the broadcast `b` of the N inputs (b must have been
// made from N shapes, in this order), split across the device's intra-op threads when the output
// is large. cost: rough cycles per element. `out` may be an input's buffer when that input has
// the output's element count (ForwardOrAllocateOutput): each element is read before it is written.
template <typename F, typename Out, typename... In>
void RunBroadcast(sdk::KernelContext& ctx, const sdk::BroadcastPlan& b, int64_t cost, const F& f,
                  Out* out, const In*... in) {
  constexpr size_t N = sizeof...(In);
  if (b.num_elements == 0) return;
  internal::WithMask<0, (1u << N) - 1>(b.inner_broadcast_mask, [&](auto mask) {
    ctx.ParallelFor(b.num_elements, cost, [&](int64_t begin, int64_t end) {
      internal::ForEachRun<N>(
          b, begin, end, [&](int64_t pos, const std::array<int64_t, N>& offsets, int64_t n) {
            internal::RunSpan<decltype(mask)::value>(f, n, out + pos, offsets,
                                                     std::index_sequence_for<In...>(), in...);
          });
    });
  });
}

// A function struct with `static void Span(const In* in, Out* out, int64_t n)` for some types
// computes whole ranges of them itself (a hand-vectorized loop); `out` may be `in`.
template <typename F, typename Out, typename In>
concept HasSpan = requires(const In* in, Out* out) { F::Span(in, out, int64_t{0}); };

// out[i] = f(in[i]) for i in [0, n), split across the device's intra-op threads when n is large.
// `out` may be `in`.
template <typename F, typename Out, typename In>
void RunFlat(sdk::KernelContext& ctx, int64_t n, int64_t cost, const F& f, Out* out, const In* in) {
  ctx.ParallelFor(n, cost, [&](int64_t begin, int64_t end) {
    if constexpr (HasSpan<F, Out, In>) {
      F::Span(in + begin, out + begin, end - begin);
    } else {
#pragma GCC ivdep
      for (int64_t i = begin; i < end; ++i) out[i] = f(in[i]);  // in place or apart (see RunSpan)
    }
  });
}

// An element function for the kernels below: a captureless (usually generic) lambda with its
// rough cost in cycles per element, for ParallelFor:
//   using AddFn = ElementFn<1, [](auto a, auto b) { return WrappingAdd(a, b); }>;
// A hand-written function struct works too; a binary one may add
// `template <typename T> static sdk::Status Validate(x, y)`, which runs before computing.
template <int64_t kCostPerElement, auto kFunction>
struct ElementFn {
  static constexpr int64_t kCost = kCostPerElement;
  template <typename... T>
  auto operator()(T... v) const {
    return kFunction(v...);
  }
};

template <typename F, typename T>
concept HasValidate = requires(const sdk::Tensor& t) {
  { F::template Validate<T>(t, t) } -> std::same_as<sdk::Status>;
};

// y = F(x) element-wise, x of T and y of Out; the output reuses x's buffer when it can (Out
// is T).
template <typename T, typename F, typename Out = T>
class UnaryKernel {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    CFX_SDK_RETURN_IF_ERROR(ExpectInputs(ctx, {sdk::kDType<T>}));
    sdk::Tensor x = ctx.input(0);
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor y, MakeOutput(ctx, x));
    RunFlat(ctx, x.num_elements(), F::kCost, F(), y.data<Out>(), x.data<T>());
    return sdk::Status();
  }

 private:
  static sdk::Result<sdk::Tensor> MakeOutput(sdk::KernelContext& ctx, const sdk::Tensor& x) {
    if constexpr (std::is_same_v<T, Out>) return ctx.ForwardOrAllocateOutput({0}, 0, x.shape());
    return ctx.AllocateOutput(0, x.shape());
  }
};

// z = F(x, y) with inputs 0 and 1 broadcast as in `b`; the output (of dtype Out) reuses an
// input's buffer when it can.
template <typename T, typename Out, typename F>
sdk::Status ComputeBinary(sdk::KernelContext& ctx, const sdk::BroadcastPlan& b) {
  sdk::Tensor x = ctx.input(0), y = ctx.input(1);
  if constexpr (HasValidate<F, T>) CFX_SDK_RETURN_IF_ERROR(F::template Validate<T>(x, y));
  CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor z, ctx.ForwardOrAllocateOutput({0, 1}, 0, b.output_shape));
  RunBroadcast(ctx, b, F::kCost, F(), z.data<Out>(), x.data<T>(), y.data<T>());
  return sdk::Status();
}

// For z = f(x, y), when one flat loop over z's elements computes it: 0 when x and y have the same
// shape, 2 when y is a single element of no higher rank than x (z has x's shape and y's one value
// is broadcast), 1 the other way round; -1 when the operands need a broadcast plan. Only reads
// ranks and dims, so that the common small-tensor case costs no heap allocation.
int FlatBroadcastMask(const sdk::Tensor& x, const sdk::Tensor& y);

// z = F(x, y) as one flat loop, for a FlatBroadcastMask `mask` of x and y (not -1).
template <typename T, typename Out, typename F>
sdk::Status ComputeFlatBinary(sdk::KernelContext& ctx, int mask) {
  sdk::Tensor x = ctx.input(0), y = ctx.input(1);
  if constexpr (HasValidate<F, T>) CFX_SDK_RETURN_IF_ERROR(F::template Validate<T>(x, y));
  const sdk::Tensor& shaped = mask == 1 ? y : x;
  CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor z, ctx.ForwardOrAllocateOutput({0, 1}, 0, shaped.shape()));
  const int64_t n = shaped.num_elements();
  Out* out = z.data<Out>();
  const T* px = x.data<T>();
  const T* py = y.data<T>();
  internal::WithMask<0, 3>(static_cast<unsigned>(mask), [&](auto m) {
    constexpr unsigned kMask = decltype(m)::value;
    ctx.ParallelFor(n, F::kCost, [&](int64_t begin, int64_t end) {
      const std::array<int64_t, 2> offsets{(kMask & 1u) ? 0 : begin, (kMask & 2u) ? 0 : begin};
      internal::RunSpan<kMask>(F(), end - begin, out + begin, offsets, std::index_sequence<0, 1>(),
                               px, py);
    });
  });
  return sdk::Status();
}

// z = F(x, y) element-wise with NumPy broadcasting; x and y are T, z is Out.
template <typename T, typename Out, typename F>
class BinaryKernel {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    CFX_SDK_RETURN_IF_ERROR(ExpectInputs(ctx, {sdk::kDType<T>, sdk::kDType<T>}));
    const int mask = FlatBroadcastMask(ctx.input(0), ctx.input(1));
    if (mask >= 0) return ComputeFlatBinary<T, Out, F>(ctx, mask);
    CFX_SDK_ASSIGN_OR_RETURN(
        sdk::BroadcastPlan b,
        sdk::PlanBroadcast({{"x", ctx.input(0).shape()}, {"y", ctx.input(1).shape()}}));
    return ComputeBinary<T, Out, F>(ctx, b);
  }
};

// Kernel templates of one element function, in the form RegisterForTypes takes:
//   RegisterForTypes<Binary<AddFn>::Kernel, float, double>(p, "Add");
template <typename F>
struct Unary {
  template <typename T>
  using Kernel = UnaryKernel<T, F>;
};
template <typename F, typename Out>
struct UnaryTo {
  template <typename T>
  using Kernel = UnaryKernel<T, F, Out>;
};
template <typename F>
struct Binary {
  template <typename T>
  using Kernel = BinaryKernel<T, T, F>;
};

}  // namespace cfx::cpu

#endif  // CONFLUX_PLUGINS_CPU_KERNELS_BROADCAST_H_
