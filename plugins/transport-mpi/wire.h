// What the MPI transport puts on the wire. Each message is a header on kHeaderTag:
//   WireHeader (fixed size, host byte order: every rank of a job runs the same build), then the
//   key's bytes, then the metadata's bytes, then a small payload's bytes (inline_bytes or less:
//   one message instead of two, for the price of copying them);
// then, for a larger payload, its bytes in chunks of at most chunk_bytes on the message's own
// payload tag, sent in order (MPI keeps the order of messages with one source and tag), straight
// from the sender's buffer into the receiver's; or, to a rank of the same host, no more
// messages: the payload waits in the sender's staging segment (staging.h) at the header's
// staged_offset.
// Stateless; thread-safe.
#ifndef CONFLUX_PLUGINS_TRANSPORT_MPI_WIRE_H_
#define CONFLUX_PLUGINS_TRANSPORT_MPI_WIRE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "conflux/sdk/status.h"

namespace cfx::mpi {

inline constexpr int kHeaderTag = 0;  // payload tags are 1..MPI_TAG_UB
inline constexpr int32_t kStagedTag = -1;  // Header::payload_tag of a staged payload

struct Header {
  std::string key;
  std::string meta;
  uint64_t payload_bytes = 0;
  uint64_t chunk_bytes = 0;
  uint64_t num_chunks = 0;
  int32_t payload_tag = 0;     // 0: no payload, or the payload is inline; kStagedTag: staged
  std::string inline_payload;  // a small payload, carried by the header
  int64_t staged_offset = -1;  // where a staged payload is in the sender's segment

  bool staged() const { return payload_tag == kStagedTag; }

  // Bytes of chunk `i` (< num_chunks).
  uint64_t ChunkSize(uint64_t i) const {
    const uint64_t rest = payload_bytes - i * chunk_bytes;
    return rest < chunk_bytes ? rest : chunk_bytes;
  }
};

// The header of a message of `payload_bytes` sent in chunks of `chunk_bytes` on `payload_tag`,
// or, when `payload_tag` is 0, carried by the header itself (copied from `payload`), or, when it
// is kStagedTag, staged at `staged_offset` of the sender's segment.
std::string EncodeHeader(std::string_view key, std::string_view meta, const char* payload,
                         uint64_t payload_bytes, uint64_t chunk_bytes, int32_t payload_tag,
                         int64_t staged_offset = -1);
// INTERNAL when `data` is not a header this build wrote.
sdk::Result<Header> DecodeHeader(const char* data, size_t size);

}  // namespace cfx::mpi

#endif  // CONFLUX_PLUGINS_TRANSPORT_MPI_WIRE_H_
