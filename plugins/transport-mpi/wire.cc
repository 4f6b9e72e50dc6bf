// Header encoding.
#include "wire.h"

#include <cstring>

namespace cfx::mpi {
namespace {

constexpr uint32_t kMagic = 0x32584643;  // "CFX2"

struct WireHeader {
  uint32_t magic;
  uint32_t key_size;
  uint32_t meta_size;
  int32_t payload_tag;
  uint64_t payload_bytes;
  uint64_t chunk_bytes;
  uint64_t num_chunks;
  int64_t staged_offset;
};

}  // namespace

std::string EncodeHeader(std::string_view key, std::string_view meta, const char* payload,
                         uint64_t payload_bytes, uint64_t chunk_bytes, int32_t payload_tag,
                         int64_t staged_offset) {
  const bool carried = payload_tag == 0, staged = payload_tag == kStagedTag;
  WireHeader w{};
  w.magic = kMagic;
  w.key_size = static_cast<uint32_t>(key.size());
  w.meta_size = static_cast<uint32_t>(meta.size());
  w.payload_tag = payload_tag;
  w.payload_bytes = payload_bytes;
  w.chunk_bytes = carried || staged ? 0 : chunk_bytes;
  w.num_chunks = carried || staged ? 0 : (payload_bytes + chunk_bytes - 1) / chunk_bytes;
  w.staged_offset = staged ? staged_offset : -1;
  const size_t fixed = sizeof(w) + key.size() + meta.size();
  std::string out(fixed + (carried ? payload_bytes : 0), '\0');
  std::memcpy(out.data(), &w, sizeof(w));
  if (!key.empty()) std::memcpy(out.data() + sizeof(w), key.data(), key.size());
  if (!meta.empty()) std::memcpy(out.data() + sizeof(w) + key.size(), meta.data(), meta.size());
  if (carried && payload_bytes > 0) std::memcpy(out.data() + fixed, payload, payload_bytes);
  return out;
}

sdk::Result<Header> DecodeHeader(const char* data, size_t size) {
  WireHeader w;
  if (size < sizeof(w)) return sdk::Internal("a message header of ", size, " bytes is too short");
  std::memcpy(&w, data, sizeof(w));
  const bool carried = w.payload_tag == 0, staged = w.payload_tag == kStagedTag;
  const uint64_t fixed = sizeof(w) + uint64_t{w.key_size} + w.meta_size;
  const uint64_t expected = fixed + (carried ? w.payload_bytes : 0);
  if (w.magic != kMagic || expected != size ||
      (carried  ? w.num_chunks != 0
       : staged ? w.num_chunks != 0 || w.staged_offset < 0
                : w.payload_tag < 0 || w.chunk_bytes == 0 ||
                      w.num_chunks != (w.payload_bytes + w.chunk_bytes - 1) / w.chunk_bytes))
    return sdk::Internal("a message header of ", size,
                         " bytes is malformed (another program or build on this tag?)");
  Header h;
  h.key.assign(data + sizeof(w), w.key_size);
  h.meta.assign(data + sizeof(w) + w.key_size, w.meta_size);
  h.payload_bytes = w.payload_bytes;
  h.chunk_bytes = w.chunk_bytes;
  h.num_chunks = w.num_chunks;
  h.payload_tag = w.payload_tag;
  h.staged_offset = w.staged_offset;
  if (carried) h.inline_payload.assign(data + fixed, w.payload_bytes);
  return h;
}

}  // namespace cfx::mpi
