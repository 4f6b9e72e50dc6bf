// Binary arithmetic on CPU with NumPy broadcasting: Add, AddV2, Sub, Mul, Div, RealDiv, FloorDiv,
// FloorMod, TruncateDiv, Maximum, Minimum, Pow, SquaredDifference, for float, double, int32 and
// int64; Atan2, Xdivy, Xlogy, Xlog1py, DivNoNan, MulNoNan for float and double (as are RealDiv's
// kernels); BitwiseAnd, BitwiseOr, BitwiseXor, LeftShift, RightShift for the eight integer
// types. Div and TruncateDiv truncate toward zero, FloorDiv and FloorMod round toward negative
// infinity.
#include <cmath>
#include <type_traits>

#include "kernels/broadcast.h"
#include "kernels/util.h"

namespace cfx::cpu {
namespace {

using AddFn = ElementFn<1, [](auto a, auto b) { return WrappingAdd(a, b); }>;
using SubFn = ElementFn<1, [](auto a, auto b) { return WrappingSub(a, b); }>;
using MulFn = ElementFn<1, [](auto a, auto b) { return WrappingMultiply(a, b); }>;
using RealDivFn = ElementFn<4, [](auto a, auto b) { return a / b; }>;  // registered for floats
// A NaN operand gives NaN, as TensorFlow's Maximum and Minimum do.
using MaximumFn = ElementFn<1, [](auto a, auto b) { return (a > b || IsNan(a)) ? a : b; }>;
using MinimumFn = ElementFn<1, [](auto a, auto b) { return (a < b || IsNan(a)) ? a : b; }>;
using SquaredDifferenceFn = ElementFn<2, [](auto a, auto b) {
  const auto d = WrappingSub(a, b);
  return WrappingMultiply(d, d);
}>;

// Divisions: a zero integer divisor fails the whole op, as in TensorFlow (floats give inf or NaN).
struct CheckedDivisors {
  template <typename T>
  static sdk::Status Validate(const sdk::Tensor&, const sdk::Tensor& y) {
    if constexpr (std::is_integral_v<T>) {
      const T* divisors = y.data<T>();
      for (int64_t i = 0; i < y.num_elements(); ++i) {
        if (divisors[i] == 0) return sdk::InvalidArgument("Integer division by zero (y[", i, "])");
      }
    }
    return sdk::Status();
  }
};

// Div: a / b for floats; for integers C's truncation toward zero and INT_MIN / -1 wrapping
// around.
struct DivFn : CheckedDivisors {
  static constexpr int64_t kCost = 4;
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      if (b == T(-1)) return WrappingSub(T(0), a);
    }
    return a / b;
  }
};

// TruncateDiv: the quotient rounded toward zero: Div for integers, trunc(a / b) for floats.
struct TruncateDivFn : DivFn {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      return DivFn::operator()(a, b);
    } else {
      return std::trunc(a / b);
    }
  }
};

// FloorDiv: floor(a / b); for integers the quotient rounded toward negative infinity (-7 // 2 =
// -4), INT_MIN // -1 wrapping around.
struct FloorDivFn : CheckedDivisors {
  static constexpr int64_t kCost = 6;
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      if (b == T(-1)) return WrappingSub(T(0), a);
      const T q = a / b;
      return (a % b != 0 && ((a < 0) != (b < 0))) ? T(q - 1) : q;
    } else {
      return std::floor(a / b);
    }
  }
};

// FloorMod: the remainder of FloorDiv, with the divisor's sign (-7 mod 2 = 1, 7 mod -2 = -1).
struct FloorModFn : CheckedDivisors {
  static constexpr int64_t kCost = 6;
  template <typename T>
  T operator()(T a, T b) const {
    T r;
    if constexpr (std::is_integral_v<T>) {
      r = b == T(-1) ? T(0) : T(a % b);
    } else {
      r = std::fmod(a, b);
    }
    return (r != T(0) && ((r < T(0)) != (b < T(0)))) ? T(r + b) : r;
  }
};

struct PowFn {
  static constexpr int64_t kCost = 20;
  // Integers to negative powers have no integer result: TensorFlow rejects the whole op.
  template <typename T>
  static sdk::Status Validate(const sdk::Tensor&, const sdk::Tensor& y) {
    if constexpr (std::is_integral_v<T>) {
      const T* exponents = y.data<T>();
      for (int64_t i = 0; i < y.num_elements(); ++i) {
        if (exponents[i] < 0)
          return sdk::InvalidArgument("Integers to negative integer powers are not allowed (y[", i,
                                      "] = ", exponents[i], ")");
      }
    }
    return sdk::Status();
  }
  template <typename T>
  T operator()(T base, T exponent) const {
    if constexpr (std::is_floating_point_v<T>) {
      return std::pow(base, exponent);
    } else {
      // Square-and-multiply in the unsigned type: wraps around like WrappingMultiply.
      using U = std::make_unsigned_t<T>;
      U result = 1, factor = static_cast<U>(base);
      for (T e = exponent; e > 0; e >>= 1) {
        if (e & 1) result *= factor;
        factor *= factor;
      }
      return static_cast<T>(result);
    }
  }
};

// Atan2(y, x): the angle of the point (x, y), in [-pi, pi].
using Atan2Fn = ElementFn<20, [](auto y, auto x) { return std::atan2(y, x); }>;
// Xdivy and Xlogy: 0 where x is 0 (whatever y is, NaN included), else x / y and x * log(y).
using XdivyFn = ElementFn<4, [](auto x, auto y) { return x == 0 ? decltype(x)(0) : x / y; }>;
using XlogyFn =
    ElementFn<20, [](auto x, auto y) { return x == 0 ? decltype(x)(0) : x * std::log(y); }>;

// Xlog1py: 0 where x is 0, else x * log1p(y). DivNoNan and MulNoNan: 0 where y is 0, else x / y
// and x * y.
using Xlog1pyFn =
    ElementFn<20, [](auto x, auto y) { return x == 0 ? decltype(x)(0) : x * std::log1p(y); }>;
using DivNoNanFn = ElementFn<4, [](auto x, auto y) { return y == 0 ? decltype(x)(0) : x / y; }>;
using MulNoNanFn = ElementFn<1, [](auto x, auto y) { return y == 0 ? decltype(x)(0) : x * y; }>;

// The bitwise ops. A shift count is clamped to [0, bits - 1], as TensorFlow's kernels do (a
// shift by the width or more is undefined in C++); a left shift goes through the unsigned type.
using BitwiseAndFn = ElementFn<1, [](auto x, auto y) { return static_cast<decltype(x)>(x & y); }>;
using BitwiseOrFn = ElementFn<1, [](auto x, auto y) { return static_cast<decltype(x)>(x | y); }>;
using BitwiseXorFn = ElementFn<1, [](auto x, auto y) { return static_cast<decltype(x)>(x ^ y); }>;
template <typename T>
constexpr T ClampedShift(T y) {
  constexpr T kLast = static_cast<T>(sizeof(T) * 8 - 1);
  return y < T(0) ? T(0) : (y > kLast ? kLast : y);
}
using LeftShiftFn = ElementFn<1, []<typename T>(T x, T y) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(static_cast<U>(x) << static_cast<U>(ClampedShift(y))));
}>;
using RightShiftFn = ElementFn<1, []<typename T>(T x, T y) {
  return static_cast<T>(x >> ClampedShift(y));
}>;

template <typename F>
void RegisterBitwise(sdk::Plugin& p, const char* op) {
  RegisterForTypes<Binary<F>::template Kernel, int8_t, int16_t, int32_t, int64_t, uint8_t,
                   uint16_t, uint32_t, uint64_t>(p, op);
}

template <typename F>
void RegisterArithmetic(sdk::Plugin& p, const char* op) {
  RegisterForTypes<Binary<F>::template Kernel, float, double, int32_t, int64_t>(p, op);
}

}  // namespace

void RegisterBinaryArithmeticKernels(sdk::Plugin& p) {
  RegisterArithmetic<AddFn>(p, "Add");
  RegisterArithmetic<AddFn>(p, "AddV2");
  RegisterArithmetic<SubFn>(p, "Sub");
  RegisterArithmetic<MulFn>(p, "Mul");
  RegisterArithmetic<MaximumFn>(p, "Maximum");
  RegisterArithmetic<MinimumFn>(p, "Minimum");
  RegisterArithmetic<PowFn>(p, "Pow");
  RegisterArithmetic<SquaredDifferenceFn>(p, "SquaredDifference");
  RegisterForTypes<Binary<RealDivFn>::Kernel, float, double>(p, "RealDiv");
  RegisterArithmetic<DivFn>(p, "Div");
  RegisterArithmetic<FloorDivFn>(p, "FloorDiv");
  RegisterArithmetic<FloorModFn>(p, "FloorMod");
  RegisterArithmetic<TruncateDivFn>(p, "TruncateDiv");
  RegisterForTypes<Binary<Atan2Fn>::Kernel, float, double>(p, "Atan2");
  RegisterForTypes<Binary<XdivyFn>::Kernel, float, double>(p, "Xdivy");
  RegisterForTypes<Binary<XlogyFn>::Kernel, float, double>(p, "Xlogy");
  RegisterForTypes<Binary<Xlog1pyFn>::Kernel, float, double>(p, "Xlog1py");
  RegisterForTypes<Binary<DivNoNanFn>::Kernel, float, double>(p, "DivNoNan");
  RegisterForTypes<Binary<MulNoNanFn>::Kernel, float, double>(p, "MulNoNan");
  RegisterBitwise<BitwiseAndFn>(p, "BitwiseAnd");
  RegisterBitwise<BitwiseOrFn>(p, "BitwiseOr");
  RegisterBitwise<BitwiseXorFn>(p, "BitwiseXor");
  RegisterBitwise<LeftShiftFn>(p, "LeftShift");
  RegisterBitwise<RightShiftFn>(p, "RightShift");
}

}  // namespace cfx::cpu
