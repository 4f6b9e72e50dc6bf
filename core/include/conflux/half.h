// 16-bit floating-point element types as stored in tensors (raw bits), converted to float.
#ifndef CONFLUX_HALF_H_
#define CONFLUX_HALF_H_

#include <cstdint>

namespace cfx {

// IEEE binary16 (DT_HALF) and bfloat16 (DT_BFLOAT16) bits to float; both are exact.
float HalfToFloat(uint16_t bits);
float Bfloat16ToFloat(uint16_t bits);

}  // namespace cfx

#endif  // CONFLUX_HALF_H_
