// Lossy compression of float32 tensors between tasks (whitepaper §5.5, config
// `cluster.compression`): the sender narrows each element to 16 bits, the receiver widens it
// back to float32. "truncate16" keeps the upper 16 bits (sign, exponent and 7 mantissa bits: a
// bfloat16 made by truncation, as the whitepaper describes; NaN stays NaN), "half" rounds to IEEE
// binary16 (11 significant bits, range ±65504: larger values become infinities).
#ifndef CONFLUX_CORE_SRC_DISTRIBUTED_COMPRESSION_H_
#define CONFLUX_CORE_SRC_DISTRIBUTED_COMPRESSION_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "conflux/config.h"
#include "conflux/status.h"
#include "conflux/types.h"

namespace cfx::internal {

// How a tensor's bytes travel (part of its metadata on the wire).
enum class WireEncoding : uint8_t { kRaw = 0, kTruncated16 = 1, kHalf = 2 };

class EdgeCompression {
 public:
  EdgeCompression() = default;
  explicit EdgeCompression(const ClusterConfig& cluster);
  // The encoding of a tensor named `tensor_name` ("node:port") of `dtype` and `bytes`.
  WireEncoding For(std::string_view tensor_name, DataType dtype, int64_t bytes) const;

 private:
  WireEncoding mode_ = WireEncoding::kRaw;
  int64_t min_bytes_ = 0;
  std::vector<std::string> patterns_;
};

// Narrow and widen `n` elements: with AVX2 and F16C where the CPU has them (checked at run time),
// else one element at a time. The Portable forms are always the latter; both give the same bits.
void Narrow(WireEncoding encoding, const float* in, uint16_t* out, int64_t n);
void Widen(WireEncoding encoding, const uint16_t* in, float* out, int64_t n);
void NarrowPortable(WireEncoding encoding, const float* in, uint16_t* out, int64_t n);
void WidenPortable(WireEncoding encoding, const uint16_t* in, float* out, int64_t n);

// Bytes of tensors sent to other tasks by this process: as tensors, and as sent.
struct TransferCounters {
  std::atomic<uint64_t> tensor_bytes{0};
  std::atomic<uint64_t> wire_bytes{0};
};
TransferCounters& SentBytes();

}  // namespace cfx::internal

#endif  // CONFLUX_CORE_SRC_DISTRIBUTED_COMPRESSION_H_
