// Conflux plugin SDK: Philox4x32-10 and TensorFlow's ways of turning its bits into random values,
// written once for every device. The CPU kernels call these functions on the host; the CUDA
// kernels call the very same functions on the device (nvcc compiles this header: it includes
// nothing else from the SDK, and what device code calls uses no standard-library type).
//
// Philox (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11) is counter-based:
// block `c` of a stream is a pure function of (key, c), so any range of the stream can be
// computed independently of the others, and threads that fill disjoint ranges give the same
// numbers whatever their number. The layout is TensorFlow's PhiloxRandom: a (seed, seed2) pair
// gives key = seed and the high 64 bits of the 128-bit counter = seed2; the low 64 bits count
// blocks from 0. The conversions to floating point, Box-Muller and the truncation loop are
// TensorFlow's too, so a stream drawn the same way gives the same bits.
//
// Where the last bit may differ between devices: Box-Muller calls logf, sinf and cosf (log, sin,
// cos for double). On the host they are glibc's, on a GPU CUDA's accurate (non-intrinsic)
// versions, whose results may differ from glibc's in the last bit for some arguments (CUDA
// documents logf within 1 ulp, sinf and cosf within 2); sqrtf is correctly rounded on both.
// Everything else here (Philox, the uniform and integer conversions) is exact integer work or a
// single exactly rounded operation: the same bits everywhere. Nothing here may be compiled with
// fast-math options, which would swap in the approximate intrinsics.
//
// Philox is a value type (copy it to fork a stream at the same position); GuardedPhilox (host
// only) is the per-kernel state, safe to share between threads.
#ifndef CONFLUX_SDK_PHILOX_H_
#define CONFLUX_SDK_PHILOX_H_

#include <cmath>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <random>

// Marks a function that both the host and CUDA device code call.
#if defined(__CUDACC__)
#define CFX_SDK_HOST_DEVICE __host__ __device__
#else
#define CFX_SDK_HOST_DEVICE
#endif

namespace cfx::sdk {

// Four 32-bit words: a counter, or the output of one Philox evaluation.
struct PhiloxBlock {
  uint32_t word[4];
  CFX_SDK_HOST_DEVICE uint32_t& operator[](int i) { return word[i]; }
  CFX_SDK_HOST_DEVICE const uint32_t& operator[](int i) const { return word[i]; }
};

class Philox {
 public:
  using Block = PhiloxBlock;

  CFX_SDK_HOST_DEVICE Philox() : counter_{{0, 0, 0, 0}}, key_{0, 0} {}
  CFX_SDK_HOST_DEVICE Philox(uint64_t seed, uint64_t seed2)
      : counter_{{0, 0, static_cast<uint32_t>(seed2), static_cast<uint32_t>(seed2 >> 32)}},
        key_{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)} {}

  // The block at the current counter; advances the counter by one.
  CFX_SDK_HOST_DEVICE Block operator()() {
    const Block out = Compute(counter_, key_[0], key_[1]);
    Skip(1);
    return out;
  }

  // Advances the counter by `count` blocks (carrying into the high words as a 128-bit number).
  CFX_SDK_HOST_DEVICE void Skip(uint64_t count) {
    const uint32_t count_lo = static_cast<uint32_t>(count);
    uint32_t count_hi = static_cast<uint32_t>(count >> 32);
    uint32_t* c = counter_.word;
    c[0] += count_lo;
    if (c[0] < count_lo) ++count_hi;
    c[1] += count_hi;
    if (c[1] < count_hi && ++c[2] == 0) ++c[3];
  }

  // The ten rounds of Philox4x32 on one counter with the key (key0, key1).
  CFX_SDK_HOST_DEVICE static Block Compute(Block counter, uint32_t key0, uint32_t key1) {
    constexpr uint32_t kMultiplierA = 0xD2511F53, kMultiplierB = 0xCD9E8D57;
    constexpr uint32_t kKeyStepA = 0x9E3779B9, kKeyStepB = 0xBB67AE85;
    uint32_t* c = counter.word;
    for (int round = 0; round < 10; ++round) {
      const uint64_t product_a = uint64_t{kMultiplierA} * c[0];
      const uint64_t product_b = uint64_t{kMultiplierB} * c[2];
      const uint32_t next[4] = {
          static_cast<uint32_t>(product_b >> 32) ^ c[1] ^ key0, static_cast<uint32_t>(product_b),
          static_cast<uint32_t>(product_a >> 32) ^ c[3] ^ key1, static_cast<uint32_t>(product_a)};
      for (int i = 0; i < 4; ++i) c[i] = next[i];
      key0 += kKeyStepA;
      key1 += kKeyStepB;
    }
    return counter;
  }

 private:
  Block counter_;
  uint32_t key_[2];
};

// Draws single 32-bit samples from a Philox stream, one block at a time.
class PhiloxSamples {
 public:
  CFX_SDK_HOST_DEVICE explicit PhiloxSamples(Philox* gen) : gen_(gen), block_{{0, 0, 0, 0}} {}
  CFX_SDK_HOST_DEVICE uint32_t operator()() {
    if (used_ == 4) {
      block_ = (*gen_)();
      used_ = 0;
    }
    return block_.word[used_++];
  }

 private:
  Philox* gen_;
  PhiloxBlock block_;
  int used_ = 4;
};

// A kernel's generator: seeded once, then each call reserves a disjoint range of blocks.
// Thread-safe. Host only.
class GuardedPhilox {
 public:
  // seed == seed2 == 0 seeds from a nondeterministic source; any other pair fixes the stream.
  void Init(int64_t seed, int64_t seed2) {
    uint64_t s = static_cast<uint64_t>(seed), s2 = static_cast<uint64_t>(seed2);
    if (s == 0 && s2 == 0) {
      std::random_device device;
      auto draw64 = [&] { return (uint64_t{device()} << 32) | device(); };
      s = draw64();
      s2 = draw64();
    }
    std::lock_guard<std::mutex> lock(mu_);
    gen_ = Philox(s, s2);
  }

  // A generator positioned at the start of `blocks` blocks that no other call receives.
  Philox Reserve(uint64_t blocks) {
    std::lock_guard<std::mutex> lock(mu_);
    Philox start = gen_;
    gen_.Skip(blocks);
    return start;
  }

 private:
  std::mutex mu_;
  Philox gen_;
};

// A call reserves whole multiples of this many blocks, as TensorFlow does for 32-bit outputs.
inline constexpr uint64_t kPhiloxReserveMultiple = 64;

// The blocks a call that reads `blocks` blocks reserves: rounded up to kPhiloxReserveMultiple.
constexpr uint64_t PhiloxReservation(uint64_t blocks) {
  return (blocks + kPhiloxReserveMultiple - 1) / kPhiloxReserveMultiple * kPhiloxReserveMultiple;
}

// TensorFlow's conversions of random bits to floating point: uniform in [0, 1) from the low 23
// (float) or 52 (double) bits.
CFX_SDK_HOST_DEVICE inline float Uint32ToFloat(uint32_t x) {
  const uint32_t bits = (x & 0x7fffffu) | 0x3f800000u;  // [1, 2)
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f - 1.0f;
}
CFX_SDK_HOST_DEVICE inline double Uint64ToDouble(uint32_t x0, uint32_t x1) {
  const uint64_t random = (uint64_t{x0} << 32) | x1;
  const uint64_t bits = (uint64_t{1023} << 52) | (random & 0xfffffffffffffull);
  double d;
  std::memcpy(&d, &bits, sizeof(d));
  return d - 1.0;
}

// Box-Muller: two independent standard normals from two uniforms (TensorFlow's formulation:
// u1 is clamped away from 0, and the pair is (sin, cos) of the angle times the radius). The C
// library's float functions are called by name (logf, not std::log on a float: the same function
// on the host) so that host and device code call their own library's float function.
CFX_SDK_HOST_DEVICE inline void BoxMullerFloat(uint32_t x0, uint32_t x1, float* f0, float* f1) {
  constexpr float kEpsilon = 1.0e-7f;
  float u1 = Uint32ToFloat(x0);
  if (u1 < kEpsilon) u1 = kEpsilon;
  // The angle is formed in double and rounded once, as TensorFlow's 2.0f * M_PI * u does.
  const float angle = static_cast<float>(6.283185307179586 * Uint32ToFloat(x1));
  const float radius = sqrtf(-2.0f * logf(u1));
  *f0 = sinf(angle) * radius;
  *f1 = cosf(angle) * radius;
}
CFX_SDK_HOST_DEVICE inline void BoxMullerDouble(uint32_t x0, uint32_t x1, uint32_t x2, uint32_t x3,
                                                double* d0, double* d1) {
  constexpr double kEpsilon = 1.0e-7;
  constexpr double kTwoPi = 6.283185307179586;
  double u1 = Uint64ToDouble(x0, x1);
  if (u1 < kEpsilon) u1 = kEpsilon;
  const double angle = kTwoPi * Uint64ToDouble(x2, x3);
  const double radius = sqrt(-2.0 * log(u1));
  *d0 = sin(angle) * radius;
  *d1 = cos(angle) * radius;
}

// ---- One group of output values from the stream, as every device's kernels draw them.

// RandomUniform (float): 4 values from one block.
CFX_SDK_HOST_DEVICE inline void UniformFloats(const PhiloxBlock& b, float* v) {
  for (int i = 0; i < 4; ++i) v[i] = Uint32ToFloat(b.word[i]);
}

// RandomStandardNormal (float): two Box-Muller pairs from one block.
CFX_SDK_HOST_DEVICE inline void NormalFloats(const PhiloxBlock& b, float* v) {
  BoxMullerFloat(b.word[0], b.word[1], &v[0], &v[1]);
  BoxMullerFloat(b.word[2], b.word[3], &v[2], &v[3]);
}

// TruncatedNormal (float): groups of kTruncatedNormalGroup values; each group owns a range of
// kTruncatedNormalBlocksPerGroup blocks (far more than it needs: a draw is kept with probability
// 0.95) and starts at the beginning of it.
inline constexpr int kTruncatedNormalGroup = 4;
inline constexpr uint64_t kTruncatedNormalBlocksPerGroup = kTruncatedNormalGroup * 256 / 4;

// One TruncatedNormal group from `gen` onwards: standard normals from consecutive pairs of
// samples, redrawn while |x| >= 2, kept in order.
CFX_SDK_HOST_DEVICE inline void TruncatedNormalFloats(Philox* gen, float* values) {
  constexpr float kTruncateAt = 2.0f;
  PhiloxSamples samples(gen);
  int filled = 0;
  while (true) {
    float pair[2];
    const uint32_t x0 = samples(), x1 = samples();
    BoxMullerFloat(x0, x1, &pair[0], &pair[1]);
    for (int k = 0; k < 2; ++k) {
      if (fabsf(pair[k]) < kTruncateAt) {
        values[filled++] = pair[k];
        if (filled == kTruncatedNormalGroup) return;
      }
    }
  }
}

// RandomUniformInt: lo + (bits % range) in U (T's unsigned type), with 32 bits per value when T
// has 4 bytes (4 values per block) and 64 bits, low word first, when it has 8 (2 values).
// range = maxval - minval > 0.
template <typename T, typename U>
CFX_SDK_HOST_DEVICE inline void UniformInts(const PhiloxBlock& b, U lo, U range, T* v) {
  constexpr int kPerBlock = sizeof(T) == 4 ? 4 : 2;
  for (int i = 0; i < kPerBlock; ++i) {
    U bits;
    if constexpr (sizeof(T) == 4) {
      bits = b.word[i];
    } else {
      bits = b.word[2 * i] | (U{b.word[2 * i + 1]} << 32);
    }
    v[i] = static_cast<T>(static_cast<U>(lo + bits % range));
  }
}

}  // namespace cfx::sdk

#endif  // CONFLUX_SDK_PHILOX_H_
