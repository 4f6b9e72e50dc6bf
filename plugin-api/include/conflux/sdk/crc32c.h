// Conflux plugin SDK: CRC-32C (Castagnoli), the checksum of TFRecord files (TensorBoard event
// files) and of Conflux checkpoints. Slicing-by-8 tables in software, the crc32 instruction on
// x86-64 with SSE4.2. Header-only; thread-safe (pure functions). Little-endian hosts only.
#ifndef CONFLUX_SDK_CRC32C_H_
#define CONFLUX_SDK_CRC32C_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace cfx::sdk {
namespace crc32c_internal {

inline constexpr uint32_t kPolynomial = 0x82F63B78u;  // reflected Castagnoli polynomial

using Tables = std::array<std::array<uint32_t, 256>, 8>;

constexpr Tables MakeTables() {
  Tables t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPolynomial : c >> 1;
    t[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; ++i)
    for (int s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFF];
  return t;
}
inline constexpr Tables kTables = MakeTables();

// `crc` here is the raw register (already inverted).
inline uint32_t ExtendSoftware(uint32_t crc, const uint8_t* p, size_t n) {
  while (n >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);  // little-endian hosts only (checked where files are read)
    const uint32_t lo = static_cast<uint32_t>(word) ^ crc;
    const uint32_t hi = static_cast<uint32_t>(word >> 32);
    crc = kTables[7][lo & 0xFF] ^ kTables[6][(lo >> 8) & 0xFF] ^ kTables[5][(lo >> 16) & 0xFF] ^
          kTables[4][lo >> 24] ^ kTables[3][hi & 0xFF] ^ kTables[2][(hi >> 8) & 0xFF] ^
          kTables[1][(hi >> 16) & 0xFF] ^ kTables[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) crc = (crc >> 8) ^ kTables[0][(crc ^ *p++) & 0xFF];
  return crc;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("sse4.2"))) inline uint32_t ExtendHardware(uint32_t crc, const uint8_t* p,
                                                                 size_t n) {
  uint64_t c = crc;
  while (n >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    c = __builtin_ia32_crc32di(c, word);
    p += 8;
    n -= 8;
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  while (n-- > 0) c32 = __builtin_ia32_crc32qi(c32, *p++);
  return c32;
}
inline bool HaveHardware() {
  static const bool have = __builtin_cpu_supports("sse4.2");
  return have;
}
#else
inline uint32_t ExtendHardware(uint32_t crc, const uint8_t* p, size_t n) {
  return ExtendSoftware(crc, p, n);
}
inline bool HaveHardware() { return false; }
#endif

}  // namespace crc32c_internal

// The CRC-32C of data[0, n) continued from `crc`, the CRC of the bytes before (0 to start):
// Crc32cExtend(Crc32cExtend(0, a, na), b, nb) == CRC of a followed by b.
inline uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t n) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  crc = ~crc;
  crc = crc32c_internal::HaveHardware() ? crc32c_internal::ExtendHardware(crc, p, n)
                                         : crc32c_internal::ExtendSoftware(crc, p, n);
  return ~crc;
}
inline uint32_t Crc32c(const void* data, size_t n) { return Crc32cExtend(0, data, n); }

}  // namespace cfx::sdk

#endif  // CONFLUX_SDK_CRC32C_H_
