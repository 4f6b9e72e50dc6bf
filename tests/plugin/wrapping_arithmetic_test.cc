// conflux/sdk/wrapping_arithmetic.h: integer results modulo 2^bits for every width, narrow types
// included (they promote to int, where the products of two 16-bit values overflow), and plain
// floating point.
#include "conflux/sdk/wrapping_arithmetic.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

namespace cfx::sdk {
namespace {

template <typename T>
constexpr T kMax = std::numeric_limits<T>::max();
template <typename T>
constexpr T kMin = std::numeric_limits<T>::min();

TEST(WrappingArithmetic, SignedIntegersWrapAtBothEnds) {
  EXPECT_EQ(WrappingAdd<int8_t>(kMax<int8_t>, 1), kMin<int8_t>);
  EXPECT_EQ(WrappingSub<int16_t>(kMin<int16_t>, 1), kMax<int16_t>);
  EXPECT_EQ(WrappingAdd<int32_t>(kMax<int32_t>, 2), kMin<int32_t> + 1);
  EXPECT_EQ(WrappingSub<int64_t>(0, kMin<int64_t>), kMin<int64_t>);
  EXPECT_EQ(WrappingMultiply<int64_t>(kMin<int64_t>, -1), kMin<int64_t>);
  EXPECT_EQ(WrappingMultiply<int32_t>(65536, 65536), 0);
  EXPECT_EQ(WrappingMultiply<int8_t>(16, 16), 0);
  EXPECT_EQ(WrappingMultiply<int8_t>(-128, -1), -128);
}

TEST(WrappingArithmetic, NarrowUnsignedProductsDoNotOverflowInt) {
  // 65535 * 65535 = 2^32 - 2^17 + 1: beyond int, and 1 modulo 2^16.
  EXPECT_EQ(WrappingMultiply<uint16_t>(65535, 65535), 1);
  EXPECT_EQ(WrappingMultiply<uint8_t>(255, 255), 1);
  EXPECT_EQ(WrappingAdd<uint8_t>(200, 100), 44);
  EXPECT_EQ(WrappingSub<uint16_t>(0, 1), 65535);
  EXPECT_EQ(WrappingMultiply<uint64_t>(kMax<uint64_t>, kMax<uint64_t>), 1u);
}

TEST(WrappingArithmetic, ValuesThatFitAreExact) {
  EXPECT_EQ(WrappingAdd<int16_t>(-300, 299), -1);
  EXPECT_EQ(WrappingMultiply<int32_t>(-46341, 46340), -2147441940);
  EXPECT_EQ(WrappingSub<uint32_t>(7, 5), 2u);
}

TEST(WrappingArithmetic, FloatingPointIsPlain) {
  EXPECT_EQ(WrappingAdd(0.1, 0.2), 0.1 + 0.2);
  EXPECT_EQ(WrappingMultiply(4.0f, 1e38f), std::numeric_limits<float>::infinity());
  EXPECT_EQ(WrappingSub(1.0f, 1.0f), 0.0f);
}

}  // namespace
}  // namespace cfx::sdk
