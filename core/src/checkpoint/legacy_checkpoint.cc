#include "checkpoint/legacy_checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>
#include <vector>

#include "checkpoint/tensor_bundle.h"
#include "conflux/sdk/crc32c.h"
#include "conflux/types.h"
#include "util/file.h"

namespace cfx::internal::legacy {

using sdk::Crc32c;

constexpr char kHeaderMagic[8] = {'C', 'F', 'X', 'C', 'K', 'P', 'T', '\0'};
constexpr char kFooterMagic[8] = {'C', 'F', 'X', 'C', 'K', 'E', 'N', 'D'};
constexpr uint32_t kFormatVersion = 1;
constexpr uint32_t kHeaderSize = 32;
constexpr uint32_t kFooterSize = 32;

namespace {

uint32_t GetU32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}
uint64_t GetU64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}
// A dtype a checkpoint holds: every numeric dtype, bool and string; checked as a number before it
// becomes a DataType.
bool IsStorable(uint32_t code) {
  if (code == DT_STRING) return true;
  return code <= DT_UINT64 && IsValidDataType(static_cast<int>(code)) && code != DT_RESOURCE &&
         code != DT_VARIANT && DataTypeSize(static_cast<DataType>(code)) > 0;
}

// Bounds-checked sequential reads from the index bytes.
class IndexCursor {
 public:
  explicit IndexCursor(const std::string& s) : p_(s.data()), end_(s.data() + s.size()) {}
  bool U32(uint32_t* v) {
    if (end_ - p_ < 4) return false;
    *v = GetU32(p_);
    p_ += 4;
    return true;
  }
  bool U64(uint64_t* v) {
    if (end_ - p_ < 8) return false;
    *v = GetU64(p_);
    p_ += 8;
    return true;
  }
  bool Bytes(size_t n, std::string* out) {
    if (static_cast<size_t>(end_ - p_) < n) return false;
    out->assign(p_, n);
    p_ += n;
    return true;
  }
  bool done() const { return p_ == end_; }

 private:
  const char* p_;
  const char* end_;
};

}  // namespace

CheckpointReader::~CheckpointReader() {
  if (fd_ >= 0) ::close(fd_);
}

Status CheckpointReader::ReadAt(uint64_t offset, void* dst, size_t n, const std::string& what) const {
  char* p = static_cast<char*>(dst);
  while (n > 0) {
    ssize_t r = ::pread(fd_, p, n, static_cast<off_t>(offset));
    if (r < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, StrCat("cannot read ", what, " of checkpoint ", path_));
    }
    if (r == 0)
      return errors::DataLoss("checkpoint ", path_, " is truncated: end of file while reading ", what);
    p += r;
    n -= static_cast<size_t>(r);
    offset += static_cast<uint64_t>(r);
  }
  return Status();
}

StatusOr<std::unique_ptr<CheckpointReader>> CheckpointReader::Open(const std::string& path) {
  if constexpr (std::endian::native != std::endian::little)
    return errors::Unimplemented("checkpoints are little-endian; this host is not");
  std::unique_ptr<CheckpointReader> r(new CheckpointReader());
  r->path_ = path;
  r->fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (r->fd_ < 0) return ErrnoStatus(errno, "cannot open checkpoint " + path);
  struct stat st;
  if (::fstat(r->fd_, &st) != 0) return ErrnoStatus(errno, "cannot stat checkpoint " + path);
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < kHeaderSize + kFooterSize)
    return errors::DataLoss("checkpoint ", path, " is truncated: ", size, " bytes, less than the ",
                    kHeaderSize + kFooterSize, " of an empty checkpoint");

  char header[kHeaderSize];
  CFX_RETURN_IF_ERROR(r->ReadAt(0, header, kHeaderSize, "the header"));
  if (std::memcmp(header, kHeaderMagic, sizeof(kHeaderMagic)) != 0)
    return errors::DataLoss(path, " is not a Conflux checkpoint (bad magic number)");
  // The checksum covers the 28 bytes every version starts with; a later version with a larger
  // header checksums its extra bytes itself.
  if (Crc32c(header, 28) != GetU32(header + 28))
    return errors::DataLoss("checksum mismatch in the header of checkpoint ", path);
  const uint32_t version = GetU32(header + 8);
  const uint32_t min_reader_version = GetU32(header + 12);
  const uint32_t header_size = GetU32(header + 16);
  if (min_reader_version > kFormatVersion)
    return errors::Unimplemented("checkpoint ", path, " has format version ", version,
                              " and needs a reader of version ", min_reader_version,
                              " or later; this build reads versions up to ", kFormatVersion);
  if (header_size < kHeaderSize || header_size > size - kFooterSize)
    return errors::DataLoss("checkpoint ", path, " has a bad header size ", header_size);

  char footer[kFooterSize];
  CFX_RETURN_IF_ERROR(r->ReadAt(size - kFooterSize, footer, kFooterSize, "the footer"));
  if (std::memcmp(footer + 24, kFooterMagic, sizeof(kFooterMagic)) != 0)
    return errors::DataLoss("checkpoint ", path,
                    " is truncated or incomplete: its last bytes are not a footer");
  if (Crc32c(footer, 20) != GetU32(footer + 20))
    return errors::DataLoss("checksum mismatch in the footer of checkpoint ", path);
  const uint64_t index_offset = GetU64(footer);
  const uint64_t index_length = GetU64(footer + 8);
  const uint64_t data_end = size - kFooterSize;
  if (index_offset < header_size || index_offset > data_end ||
      index_length > data_end - index_offset)
    return errors::DataLoss("checkpoint ", path, " has an index at [", index_offset, ", +", index_length,
                    ") outside the file (", size, " bytes)");
  std::string index(static_cast<size_t>(index_length), '\0');
  CFX_RETURN_IF_ERROR(r->ReadAt(index_offset, index.data(), index.size(), "the index"));
  if (Crc32c(index.data(), index.size()) != GetU32(footer + 16))
    return errors::DataLoss("checksum mismatch in the index of checkpoint ", path);
  CFX_RETURN_IF_ERROR(r->ParseIndex(index, index_offset));
  return r;
}

Status CheckpointReader::ParseIndex(const std::string& index, uint64_t data_end) {
  IndexCursor c(index);
  auto corrupt = [&](const std::string& what) {
    return errors::DataLoss("corrupt index in checkpoint ", path_, ": ", what);
  };
  uint64_t count = 0;
  if (!c.U64(&count)) return corrupt("no entry count");
  for (uint64_t i = 0; i < count; ++i) {
    uint32_t name_length = 0, dtype = 0, rank = 0;
    std::string name;
    Entry e;
    if (!c.U32(&name_length) || !c.Bytes(name_length, &name) || !c.U32(&dtype) || !c.U32(&rank))
      return corrupt(StrCat("entry ", i, " is cut short"));
    // Checked as a number before it becomes a DataType: an enum holding a value outside its
    // enumerators is undefined behaviour.
    if (!IsStorable(dtype))
      return corrupt(StrCat("tensor '", name, "' has an unknown dtype code ", dtype));
    e.dtype = static_cast<DataType>(dtype);
    if (rank > 254) return corrupt(StrCat("tensor '", name, "' has rank ", rank));
    uint64_t elements = 1;
    bool overflow = false;
    std::vector<int64_t> dims;
    for (uint32_t d = 0; d < rank; ++d) {
      uint64_t dim = 0;
      if (!c.U64(&dim)) return corrupt(StrCat("entry '", name, "' is cut short"));
      if (dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        return corrupt(StrCat("tensor '", name, "' has a negative dimension"));
      if (dim != 0 && elements > std::numeric_limits<uint64_t>::max() / dim) overflow = true;
      elements *= dim;
      dims.push_back(static_cast<int64_t>(dim));
    }
    if (!c.U64(&e.offset) || !c.U64(&e.length) || !c.U32(&e.crc))
      return corrupt(StrCat("entry '", name, "' is cut short"));
    if (overflow || elements > (uint64_t{1} << 56))
      return corrupt(StrCat("tensor '", name, "' has too many elements"));
    if (e.offset < kHeaderSize || e.offset > data_end || e.length > data_end - e.offset)
      return corrupt(StrCat("tensor '", name, "' lies outside the data section"));
    e.shape = TensorShape(dims);
    const size_t element_size = e.dtype == DT_STRING ? 0 : DataTypeSize(e.dtype);
    const bool length_ok =
        element_size > 0 ? e.length == elements * element_size : e.length >= elements * 8;
    if (!length_ok)
      return corrupt(StrCat("tensor '", name, "' of shape ", e.shape.ToString(),
                                 " cannot have ", e.length, " payload bytes"));
    if (!entries_.emplace(std::move(name), std::move(e)).second)
      return corrupt("a tensor name appears twice");
  }
  if (!c.done()) return corrupt("trailing bytes after the last entry");
  return Status();
}

StatusOr<const Entry*> CheckpointReader::Find(const std::string& name) const {
  auto it = entries_.find(name);
  if (it != entries_.end()) return &it->second;
  std::string some;
  int shown = 0;
  for (const auto& [n, e] : entries_) {
    if (shown == 5) {
      some += ", ...";
      break;
    }
    some += (shown++ ? ", '" : "'") + n + "'";
  }
  return errors::NotFound(StrCat("tensor '", name, "' not found in checkpoint ",
                                                path_, " (it holds ", entries_.size(), " tensors",
                                                entries_.empty() ? "" : ": ", some, ")"));
}

StatusOr<Tensor> CheckpointReader::Read(const std::string& name) const {
  CFX_ASSIGN_OR_RETURN(const Entry* found, Find(name));
  const Entry& e = *found;
  Tensor out(e.dtype, e.shape);
  const std::string what = "tensor '" + name + "'";
  if (e.dtype != DT_STRING) {
    // Straight into the output buffer, then checked there: no extra copy.
    if (e.length > 0) CFX_RETURN_IF_ERROR(ReadAt(e.offset, out.raw_data(), e.length, what));
    if (Crc32c(out.raw_data(), e.length) != e.crc)
      return errors::DataLoss("checksum mismatch for ", what, " in checkpoint ", path_);
    if (e.dtype == DT_BOOL) {
      const uint8_t* b = static_cast<const uint8_t*>(out.raw_data());
      for (uint64_t i = 0; i < e.length; ++i)
        if (b[i] > 1)
          return errors::DataLoss(what, " in checkpoint ", path_, " holds a bool byte ", +b[i]);
    }
    return out;
  }
  std::string payload(static_cast<size_t>(e.length), '\0');
  CFX_RETURN_IF_ERROR(ReadAt(e.offset, payload.data(), payload.size(), what));
  if (Crc32c(payload.data(), payload.size()) != e.crc)
    return errors::DataLoss("checksum mismatch for ", what, " in checkpoint ", path_);
  const int64_t n = out.num_elements();
  uint64_t pos = static_cast<uint64_t>(n) * 8;
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t len = GetU64(payload.data() + i * 8);
    if (len > payload.size() - pos)
      return errors::DataLoss(what, " in checkpoint ", path_, ": string ", i,
                              " runs past the payload");
    out.at<std::string>(i).assign(payload.data() + pos, len);
    pos += len;
  }
  if (pos != payload.size())
    return errors::DataLoss(what, " in checkpoint ", path_,
                            ": string lengths do not add up to the payload");
  return out;
}

}  // namespace cfx::internal::legacy

namespace cfx::internal {

StatusOr<std::vector<CheckpointVariable>> ListCheckpoint(const std::string& prefix) {
  std::vector<CheckpointVariable> out;
  const std::string legacy_path = prefix + legacy::kFileSuffix;
  if (!bundle::BundleExists(prefix) && ::access(legacy_path.c_str(), F_OK) == 0) {
    CFX_ASSIGN_OR_RETURN(auto r, legacy::CheckpointReader::Open(legacy_path));
    for (const auto& [name, e] : r->entries()) out.push_back({name, e.dtype, e.shape});
    return out;
  }
  CFX_ASSIGN_OR_RETURN(auto r, bundle::BundleReader::Open(prefix));
  return r->List();
}

}  // namespace cfx::internal
