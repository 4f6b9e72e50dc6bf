// Integer arithmetic that wraps around on overflow (two's complement, as TensorFlow's kernels
// behave in practice) instead of being undefined; plain arithmetic for floating point. Every
// kernel that adds, subtracts or multiplies values of a tensor of any integer type uses these:
// signed overflow is undefined behaviour, which a graph's values must never reach.
//
// Narrow integers (8 and 16 bits) are computed in unsigned int, since they would otherwise promote
// to int, where 65535 * 65535 overflows; the result converts back modulo 2^bits (C++20).
#ifndef CONFLUX_SDK_WRAPPING_ARITHMETIC_H_
#define CONFLUX_SDK_WRAPPING_ARITHMETIC_H_

#include <type_traits>

namespace cfx::sdk {
namespace wrapping_internal {

// The unsigned type the arithmetic of T is done in: T's own, at least unsigned int.
template <typename T>
using Unsigned = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned,
                                    std::make_unsigned_t<T>>;

}  // namespace wrapping_internal

template <typename T>
T WrappingAdd(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = wrapping_internal::Unsigned<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}

template <typename T>
T WrappingSub(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = wrapping_internal::Unsigned<T>;
    return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
  } else {
    return a - b;
  }
}

template <typename T>
T WrappingMultiply(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = wrapping_internal::Unsigned<T>;
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return a * b;
  }
}

}  // namespace cfx::sdk

#endif  // CONFLUX_SDK_WRAPPING_ARITHMETIC_H_
