// IEEE binary16 (DT_HALF) and bfloat16 (DT_BFLOAT16) element bits to and from float: the one
// definition the core and the plugins share (header-only, no ABI). Widening is exact; narrowing
// rounds to nearest, ties to even, and keeps NaN a NaN. Stateless; thread-safe.
#ifndef CONFLUX_SDK_FLOAT16_H_
#define CONFLUX_SDK_FLOAT16_H_

#include <bit>
#include <cstdint>

namespace cfx::sdk {

inline float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1Fu;
  uint32_t mantissa = h & 0x3FFu;
  uint32_t bits;
  if (exponent == 0x1F) {
    bits = sign | 0x7F800000u | (mantissa << 13);  // Inf or NaN
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;  // zero
  } else {
    // Subnormal half: normalize into a float.
    int shift = 0;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      ++shift;
    }
    bits = sign | (static_cast<uint32_t>(113 - shift) << 23) | ((mantissa & 0x3FFu) << 13);
  }
  return std::bit_cast<float>(bits);
}

inline uint16_t FloatToHalf(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t abs = bits & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u)  // Inf or NaN (a quiet NaN keeps a mantissa bit)
    return sign | 0x7C00u | (abs > 0x7F800000u ? 0x200u : 0u);
  if (abs >= 0x477FF000u) return sign | 0x7C00u;  // rounds past the largest half: Inf
  if (abs < 0x38800000u) {
    // A half subnormal (or zero): the value in units of 2^-24, rounded to nearest even.
    if (abs < 0x33000000u) return sign;  // below half the smallest subnormal
    const uint32_t mantissa = (abs & 0x7FFFFFu) | 0x800000u;
    const int shift = 126 - static_cast<int>(abs >> 23);  // 14..24
    const uint32_t kept = mantissa >> shift;
    const uint32_t rest = mantissa & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    const uint32_t rounded = kept + (rest > halfway || (rest == halfway && (kept & 1u)));
    return sign | static_cast<uint16_t>(rounded);
  }
  // Normal: rebias the exponent and round the mantissa's 13 extra bits to nearest even.
  const uint32_t rebased = abs - 0x38000000u;
  const uint32_t rounded = rebased + 0xFFFu + ((rebased >> 13) & 1u);
  return sign | static_cast<uint16_t>(rounded >> 13);
}

inline float Bfloat16ToFloat(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

inline uint16_t FloatToBfloat16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u)
    return static_cast<uint16_t>((bits >> 16) | 0x40u);  // NaN stays a (quiet) NaN
  return static_cast<uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

// How a kernel computes on the elements of a dtype: Storage is the element's C++ type, Acc the
// type it computes in; Load widens an element, Store rounds a result back to the element type.
// Native types compute as themselves; half and bfloat16 compute in float, as TensorFlow's
// Eigen::half and Eigen::bfloat16 do, and round after each operation a kernel stores.
template <typename T>
struct NativeElement {
  using Storage = T;
  using Acc = T;
  static Acc Load(T v) { return v; }
  static T Store(Acc v) { return v; }
};
template <float (*kWiden)(uint16_t), uint16_t (*kNarrow)(float)>
struct NarrowElement {
  using Storage = uint16_t;
  using Acc = float;
  static float Load(uint16_t v) { return kWiden(v); }
  static uint16_t Store(float v) { return kNarrow(v); }
};
using HalfElement = NarrowElement<HalfToFloat, FloatToHalf>;
using Bfloat16Element = NarrowElement<Bfloat16ToFloat, FloatToBfloat16>;

}  // namespace cfx::sdk

#endif  // CONFLUX_SDK_FLOAT16_H_
