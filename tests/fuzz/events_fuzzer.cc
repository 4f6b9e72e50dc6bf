// libFuzzer target: an events file (TFRecord framing with masked CRC-32C around Event protobufs,
// what SummaryWriter writes and TensorBoard reads) read back by ReadEventFile. Every input must
// end in records or an error status: never a crash, a hang or an allocation the file's size does
// not justify.
//
// Input: one mode byte, then the file. With the mode's low bit set, both checksums of every
// record the framing locates are recomputed before the file is written, so that mutations get
// past the checksums to the Event parsing; with it clear the bytes are written as they are.
#include <google/protobuf/stubs/logging.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "conflux/sdk/crc32c.h"
#include "conflux/summary_writer.h"
#include "scratch_dir.h"

namespace cfx::fuzz {
namespace {

// TFRecord's checksum: CRC-32C rotated right by 15 bits plus a constant.
uint32_t MaskedCrc32c(const char* data, size_t n) {
  const uint32_t crc = sdk::Crc32c(data, n);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

void StoreCrc(std::string* file, size_t at, uint32_t crc) {
  std::memcpy(file->data() + at, &crc, 4);  // little-endian hosts, as the reader
}

// Each record: u64 length, masked CRC of the length, the data, masked CRC of the data. Repairs
// records as far as their lengths fit the file.
void RepairChecksums(std::string* file) {
  size_t pos = 0;
  while (file->size() - pos >= 12) {
    uint64_t length;
    std::memcpy(&length, file->data() + pos, 8);
    StoreCrc(file, pos + 8, MaskedCrc32c(file->data() + pos, 8));
    pos += 12;
    if (file->size() - pos < 4 || file->size() - pos - 4 < length) return;
    StoreCrc(file, pos + length, MaskedCrc32c(file->data() + pos, length));
    pos += length + 4;
  }
}

}  // namespace
}  // namespace cfx::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const cfx::fuzz::ScratchDir dir("events");
  static const bool quiet = [] {
    google::protobuf::SetLogHandler(nullptr);  // malformed Events are expected, not news
    return true;
  }();
  (void)quiet;
  if (size == 0) return 0;
  std::string file(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] & 1) cfx::fuzz::RepairChecksums(&file);
  bool truncated = false;
  (void)cfx::ReadEventFile(dir.Write("events.out.tfevents", file), &truncated);
  return 0;
}
