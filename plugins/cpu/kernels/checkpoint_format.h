// The checkpoint file `<prefix>.cfxckpt` (docs/checkpoint-format.md): constants of the layout,
// an atomic writer and a reader that seeks to the tensors it is asked for.
//
// Every error names the file, and the tensor where there is one. Reading checks every checksum
// it passes over. Thread-safety: WriteCheckpoint may run concurrently for different paths; a
// CheckpointReader is used by one thread at a time.
#ifndef CONFLUX_PLUGINS_CPU_KERNELS_CHECKPOINT_FORMAT_H_
#define CONFLUX_PLUGINS_CPU_KERNELS_CHECKPOINT_FORMAT_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "conflux/sdk.h"

namespace cfx::cpu::checkpoint {

inline constexpr char kFileSuffix[] = ".cfxckpt";
inline constexpr char kHeaderMagic[8] = {'C', 'F', 'X', 'C', 'K', 'P', 'T', '\0'};
inline constexpr char kFooterMagic[8] = {'C', 'F', 'X', 'C', 'K', 'E', 'N', 'D'};
// The format version this code writes, and the newest it reads.
inline constexpr uint32_t kFormatVersion = 1;
inline constexpr uint32_t kHeaderSize = 32;  // version 1; later versions may grow it
inline constexpr uint32_t kFooterSize = 32;

// Bytes per element of a fixed-size dtype; 0 for DT_STRING and dtypes a checkpoint cannot hold.
size_t ElementSize(cfx_dtype dtype);
// True for the dtypes a checkpoint holds: every numeric dtype, bool and string.
inline bool IsStorable(cfx_dtype dtype) { return dtype == CFX_STRING || ElementSize(dtype) > 0; }

// One tensor to write.
struct NamedTensor {
  std::string name;
  sdk::Tensor tensor;  // host memory
};

// Writes `tensors` to `path` through the host's file system (the files of `ctx`, the runtime's
// Env): first to `path.tmp.<random>` in the same directory (created with its parents when
// missing), synced, then renamed over `path`, then the directory synced. On failure the
// temporary file is removed and any previous file at `path` is untouched.
// InvalidArgument for duplicate names or dtypes a checkpoint cannot hold; I/O errors name the
// file (NotFound, PermissionDenied, ResourceExhausted for a full disk or file-size limit, ...).
sdk::Status WriteCheckpoint(sdk::KernelContext& ctx, const std::string& path,
                            const std::vector<NamedTensor>& tensors);

// One index record.
struct Entry {
  cfx_dtype dtype = CFX_INVALID;
  sdk::Shape shape;
  uint64_t offset = 0;  // absolute file offset of the payload
  uint64_t length = 0;  // payload bytes
  uint32_t crc = 0;     // CRC-32C of the payload
};

// An open checkpoint whose header, footer and index have been read and verified.
class CheckpointReader {
 public:
  // NotFound when `path` does not exist; DataLoss for a truncated or corrupted header, footer or
  // index; Unimplemented for a file that needs a newer reader.
  static sdk::Result<std::unique_ptr<CheckpointReader>> Open(const std::string& path);
  ~CheckpointReader();
  CheckpointReader(const CheckpointReader&) = delete;
  CheckpointReader& operator=(const CheckpointReader&) = delete;

  // The record of `name`; NotFound naming the file and a few names it holds.
  sdk::Result<const Entry*> Find(const std::string& name) const;
  // Reads the payload of `name` into `out`, a host tensor of entry.dtype and entry.shape.
  // DataLoss on a checksum mismatch or malformed payload.
  sdk::Status Read(const std::string& name, const Entry& entry, sdk::Tensor out) const;
  const std::map<std::string, Entry>& entries() const { return entries_; }

 private:
  CheckpointReader() = default;
  sdk::Status ReadAt(uint64_t offset, void* dst, size_t n, const char* what) const;
  sdk::Status ParseIndex(const std::string& index, uint64_t data_end);

  std::string path_;
  int fd_ = -1;
  std::map<std::string, Entry> entries_;
};

// Error helpers shared by the reader and the writer.
sdk::Status ErrnoStatus(int err, const std::string& message);
template <typename... Args>
sdk::Status DataLoss(const Args&... args) {
  return sdk::Status(CFX_DATA_LOSS, sdk::StrCat(args...));
}

// Little-endian fixed-width encoding (the layout of every integer in the file).
inline void PutU32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
inline void PutU64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
inline uint32_t GetU32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}
inline uint64_t GetU64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}

}  // namespace cfx::cpu::checkpoint

#endif  // CONFLUX_PLUGINS_CPU_KERNELS_CHECKPOINT_FORMAT_H_
