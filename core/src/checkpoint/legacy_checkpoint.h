// Reader of Conflux's earlier checkpoint format, one file `<prefix>.cfxckpt`
// (docs/checkpoint-format.md, "The earlier format"): RestoreV2 and `conflux checkpoint ls` still
// read such files; SaveV2 now writes TensorFlow's tensor bundles (tensor_bundle.h).
//
// Open verifies the header, footer and index; Read verifies each tensor's checksum. Errors name
// the file and the tensor. A reader is used by one thread at a time.
#ifndef CONFLUX_CORE_SRC_CHECKPOINT_LEGACY_CHECKPOINT_H_
#define CONFLUX_CORE_SRC_CHECKPOINT_LEGACY_CHECKPOINT_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "conflux/status.h"
#include "conflux/tensor.h"

namespace cfx::internal::legacy {

inline constexpr char kFileSuffix[] = ".cfxckpt";

struct Entry {
  DataType dtype = DT_INVALID;
  TensorShape shape;
  uint64_t offset = 0;  // absolute file offset of the payload
  uint64_t length = 0;  // payload bytes
  uint32_t crc = 0;     // CRC-32C of the payload
};

class CheckpointReader {
 public:
  // `path` is the file itself ("<prefix>.cfxckpt"). NotFound when it does not exist; DataLoss
  // for a truncated or corrupted header, footer or index; Unimplemented for a newer version.
  static StatusOr<std::unique_ptr<CheckpointReader>> Open(const std::string& path);
  ~CheckpointReader();
  CheckpointReader(const CheckpointReader&) = delete;
  CheckpointReader& operator=(const CheckpointReader&) = delete;

  // The record of `name`; NotFound naming the file and a few names it holds.
  StatusOr<const Entry*> Find(const std::string& name) const;
  // The tensor `name`; DataLoss on a checksum mismatch or a malformed payload.
  StatusOr<Tensor> Read(const std::string& name) const;
  const std::map<std::string, Entry>& entries() const { return entries_; }

 private:
  CheckpointReader() = default;
  Status ReadAt(uint64_t offset, void* dst, size_t n, const std::string& what) const;
  Status ParseIndex(const std::string& index, uint64_t data_end);

  std::string path_;
  int fd_ = -1;
  std::map<std::string, Entry> entries_;
};

}  // namespace cfx::internal::legacy

#endif  // CONFLUX_CORE_SRC_CHECKPOINT_LEGACY_CHECKPOINT_H_
