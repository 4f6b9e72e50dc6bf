// EdgeCompression, Narrow and Widen.
#include "distributed/compression.h"

#include <fnmatch.h>

#include <bit>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#include "conflux/sdk/float16.h"

namespace cfx::internal {

EdgeCompression::EdgeCompression(const ClusterConfig& cluster)
    : mode_(cluster.compression == "truncate16" ? WireEncoding::kTruncated16
            : cluster.compression == "half"     ? WireEncoding::kHalf
                                                : WireEncoding::kRaw),
      min_bytes_(cluster.compression_min_bytes),
      patterns_(cluster.compression_edges) {}

WireEncoding EdgeCompression::For(std::string_view tensor_name, DataType dtype,
                                  int64_t bytes) const {
  if (mode_ == WireEncoding::kRaw || dtype != DT_FLOAT || bytes < min_bytes_)
    return WireEncoding::kRaw;
  if (patterns_.empty()) return mode_;
  const std::string name(tensor_name);
  for (const std::string& p : patterns_)
    if (fnmatch(p.c_str(), name.c_str(), 0) == 0) return mode_;
  return WireEncoding::kRaw;
}

namespace {

// truncate16's element: the upper 16 bits, a NaN whose payload sat in the dropped bits kept a NaN
// (it would otherwise become an infinity).
uint16_t Truncate(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  uint16_t top = static_cast<uint16_t>(bits >> 16);
  if ((bits & 0x7fffffffu) > 0x7f800000u) top |= 0x0040;
  return top;
}

#if defined(__x86_64__)
// AVX2 + F16C, chosen at run time: 8 elements at a time, the scalar code for the tail. The
// results equal the scalar code's bit for bit, NaNs included (F16C treats NaNs its own way: the
// fix-ups below undo that).
// Eight 32-bit lanes holding values below 2^16 to eight 16-bit ones, in order (the pack works
// within each 128-bit half; the permute puts the halves' results next to each other).
__attribute__((target("avx2"))) __m128i PackLanes(__m256i v) {
  return _mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_packus_epi32(v, v), 0xd8));
}

__attribute__((target("avx2,f16c"))) void NarrowAvx2(WireEncoding encoding, const float* in,
                                                     uint16_t* out, int64_t n) {
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
  const __m256i inf = _mm256_set1_epi32(0x7f800000);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i));
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(bits, abs_mask), inf);
    __m128i narrow;
    if (encoding == WireEncoding::kHalf) {
      const __m128i half = _mm256_cvtps_ph(_mm256_castsi256_ps(bits),
                                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      const __m128i quiet =
          _mm_or_si128(_mm_and_si128(half, _mm_set1_epi16(static_cast<int16_t>(0x8000))),
                       _mm_set1_epi16(0x7e00));
      narrow = _mm_blendv_epi8(half, quiet, PackLanes(_mm256_srli_epi32(nan, 16)));
    } else {
      narrow = PackLanes(_mm256_or_si256(_mm256_srli_epi32(bits, 16),
                                         _mm256_and_si256(nan, _mm256_set1_epi32(0x40))));
    }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), narrow);
  }
  NarrowPortable(encoding, in + i, out + i, n - i);
}

__attribute__((target("avx2,f16c"))) void WidenAvx2(WireEncoding encoding, const uint16_t* in,
                                                    float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i narrow = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    const __m256i lanes = _mm256_cvtepu16_epi32(narrow);
    __m256i wide;
    if (encoding == WireEncoding::kHalf) {
      // F16C quiets a signaling NaN; the scalar code keeps its bits: clear the quiet bit again.
      const __m256i zero = _mm256_setzero_si256();
      const __m256i signaling = _mm256_andnot_si256(
          _mm256_cmpeq_epi32(_mm256_and_si256(lanes, _mm256_set1_epi32(0x1ff)), zero),
          _mm256_cmpeq_epi32(_mm256_and_si256(lanes, _mm256_set1_epi32(0x7e00)),
                             _mm256_set1_epi32(0x7c00)));
      wide = _mm256_andnot_si256(_mm256_and_si256(signaling, _mm256_set1_epi32(0x400000)),
                                 _mm256_castps_si256(_mm256_cvtph_ps(narrow)));
    } else {
      wide = _mm256_slli_epi32(lanes, 16);
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), wide);
  }
  WidenPortable(encoding, in + i, out + i, n - i);
}

// F16C comes from CPUID (leaf 1, ECX bit 29): clang's __builtin_cpu_supports does not know it.
bool HasF16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
}

bool HasAvx2F16c() {
  static const bool has = __builtin_cpu_supports("avx2") && HasF16c();
  return has;
}
#endif

}  // namespace

void NarrowPortable(WireEncoding encoding, const float* in, uint16_t* out, int64_t n) {
  if (encoding == WireEncoding::kHalf) {
    for (int64_t i = 0; i < n; ++i) out[i] = sdk::FloatToHalf(in[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = Truncate(in[i]);
  }
}

void WidenPortable(WireEncoding encoding, const uint16_t* in, float* out, int64_t n) {
  if (encoding == WireEncoding::kHalf) {
    for (int64_t i = 0; i < n; ++i) out[i] = sdk::HalfToFloat(in[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = sdk::Bfloat16ToFloat(in[i]);
  }
}

void Narrow(WireEncoding encoding, const float* in, uint16_t* out, int64_t n) {
#if defined(__x86_64__)
  if (HasAvx2F16c()) return NarrowAvx2(encoding, in, out, n);
#endif
  NarrowPortable(encoding, in, out, n);
}

void Widen(WireEncoding encoding, const uint16_t* in, float* out, int64_t n) {
#if defined(__x86_64__)
  if (HasAvx2F16c()) return WidenAvx2(encoding, in, out, n);
#endif
  WidenPortable(encoding, in, out, n);
}

TransferCounters& SentBytes() {
  static TransferCounters* counters = new TransferCounters();  // never destroyed
  return *counters;
}

}  // namespace cfx::internal
