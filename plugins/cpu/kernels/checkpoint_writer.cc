// WriteCheckpoint: header, payloads in input order, sorted index, footer; written to a temporary
// file and renamed into place.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>
#include <set>

#include "conflux/sdk/crc32c.h"
#include "kernels/checkpoint_format.h"

namespace cfx::cpu::checkpoint {

using sdk::Crc32c;
using sdk::Crc32cExtend;
namespace {

// Appends to a file descriptor through a buffer; large blocks go straight to write(2).
class FileWriter {
 public:
  FileWriter(int fd, const std::string& path) : fd_(fd), path_(path) {}
  uint64_t position() const { return position_; }

  sdk::Status Append(const void* data, size_t n) {
    const char* p = static_cast<const char*>(data);
    position_ += n;
    if (buffer_.size() + n <= kBufferSize) {
      buffer_.append(p, n);
      return sdk::Status();
    }
    CFX_SDK_RETURN_IF_ERROR(Flush());
    if (n <= kBufferSize) {
      buffer_.assign(p, n);
      return sdk::Status();
    }
    return WriteAll(p, n);
  }
  sdk::Status Append(const std::string& s) { return Append(s.data(), s.size()); }

  sdk::Status Flush() {
    sdk::Status s = WriteAll(buffer_.data(), buffer_.size());
    buffer_.clear();
    return s;
  }

 private:
  static constexpr size_t kBufferSize = 1 << 20;

  sdk::Status WriteAll(const char* p, size_t n) {
    while (n > 0) {
      ssize_t w = ::write(fd_, p, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus(errno, "cannot write checkpoint file " + path_);
      }
      p += w;
      n -= static_cast<size_t>(w);
    }
    return sdk::Status();
  }

  int fd_;
  const std::string& path_;
  uint64_t position_ = 0;
  std::string buffer_;
};

std::string Dirname(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// mkdir -p, as TensorFlow's savers create the checkpoint directory.
sdk::Status MakeDirectories(const std::string& dir) {
  for (size_t i = 1; i <= dir.size(); ++i) {
    if (i != dir.size() && dir[i] != '/') continue;
    std::string part = dir.substr(0, i);
    if (::mkdir(part.c_str(), 0777) != 0 && errno != EEXIST)
      return ErrnoStatus(errno, "cannot create checkpoint directory " + part);
  }
  return sdk::Status();
}

std::string RandomSuffix() {
  std::random_device rd;
  uint64_t v = (static_cast<uint64_t>(rd()) << 32) ^ rd() ^ static_cast<uint64_t>(::getpid());
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string EncodeHeader() {
  std::string h(kHeaderMagic, sizeof(kHeaderMagic));
  PutU32(&h, kFormatVersion);  // format_version
  PutU32(&h, 1);               // min_reader_version: readers of version 1 understand this file
  PutU32(&h, kHeaderSize);     // header_size
  PutU32(&h, 0);               // flags
  PutU32(&h, 0);               // reserved
  PutU32(&h, Crc32c(h.data(), h.size()));
  return h;
}

// Writes the payload of `t` and fills entry->length and entry->crc.
sdk::Status WritePayload(FileWriter& w, sdk::Tensor t, Entry* entry) {
  const uint64_t start = w.position();
  uint32_t crc = 0;
  if (t.dtype() == CFX_STRING) {
    const int64_t n = t.num_elements();
    std::string lengths;
    lengths.reserve(static_cast<size_t>(n) * 8);
    for (int64_t i = 0; i < n; ++i) PutU64(&lengths, t.string(i).size());
    crc = Crc32cExtend(crc, lengths.data(), lengths.size());
    CFX_SDK_RETURN_IF_ERROR(w.Append(lengths));
    for (int64_t i = 0; i < n; ++i) {
      std::string_view s = t.string(i);
      crc = Crc32cExtend(crc, s.data(), s.size());
      CFX_SDK_RETURN_IF_ERROR(w.Append(s.data(), s.size()));
    }
  } else {
    const size_t bytes = static_cast<size_t>(t.num_elements()) * ElementSize(t.dtype());
    if (bytes > 0) {
      crc = Crc32c(t.raw_data(), bytes);
      CFX_SDK_RETURN_IF_ERROR(w.Append(t.raw_data(), bytes));
    }
  }
  entry->length = w.position() - start;
  entry->crc = crc;
  return sdk::Status();
}

std::string EncodeIndex(const std::map<std::string, Entry>& entries) {
  std::string index;
  PutU64(&index, entries.size());
  for (const auto& [name, e] : entries) {
    PutU32(&index, static_cast<uint32_t>(name.size()));
    index += name;
    PutU32(&index, static_cast<uint32_t>(e.dtype));
    PutU32(&index, static_cast<uint32_t>(e.shape.size()));
    for (int64_t d : e.shape) PutU64(&index, static_cast<uint64_t>(d));
    PutU64(&index, e.offset);
    PutU64(&index, e.length);
    PutU32(&index, e.crc);
  }
  return index;
}

std::string EncodeFooter(uint64_t index_offset, const std::string& index) {
  std::string f;
  PutU64(&f, index_offset);
  PutU64(&f, index.size());
  PutU32(&f, Crc32c(index.data(), index.size()));
  PutU32(&f, Crc32c(f.data(), f.size()));
  f.append(kFooterMagic, sizeof(kFooterMagic));
  return f;
}

// Writes the whole file to the open descriptor `fd` and fsyncs it.
sdk::Status WriteFile(int fd, const std::string& tmp_path,
                      const std::vector<NamedTensor>& tensors) {
  FileWriter w(fd, tmp_path);
  CFX_SDK_RETURN_IF_ERROR(w.Append(EncodeHeader()));
  std::map<std::string, Entry> entries;
  for (const NamedTensor& nt : tensors) {
    Entry e;
    e.dtype = nt.tensor.dtype();
    e.shape = nt.tensor.shape();
    e.offset = w.position();
    CFX_SDK_RETURN_IF_ERROR(WritePayload(w, nt.tensor, &e));
    entries.emplace(nt.name, std::move(e));
  }
  const uint64_t index_offset = w.position();
  const std::string index = EncodeIndex(entries);
  CFX_SDK_RETURN_IF_ERROR(w.Append(index));
  CFX_SDK_RETURN_IF_ERROR(w.Append(EncodeFooter(index_offset, index)));
  CFX_SDK_RETURN_IF_ERROR(w.Flush());
  if (::fsync(fd) != 0) return ErrnoStatus(errno, "cannot fsync checkpoint file " + tmp_path);
  return sdk::Status();
}

sdk::Status SyncDirectory(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, "cannot open checkpoint directory " + dir);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) return ErrnoStatus(err, "cannot fsync checkpoint directory " + dir);
  return sdk::Status();
}

}  // namespace

sdk::Status WriteCheckpoint(const std::string& path, const std::vector<NamedTensor>& tensors) {
  if constexpr (std::endian::native != std::endian::little)
    return sdk::Unimplemented("checkpoints are little-endian; this host is not");
  std::set<std::string_view> names;
  for (const NamedTensor& nt : tensors) {
    if (!names.insert(nt.name).second)
      return sdk::InvalidArgument("cannot save two tensors under the name '", nt.name, "' in ",
                                  path);
    if (!IsStorable(nt.tensor.dtype()))
      return sdk::InvalidArgument("tensor '", nt.name, "' has dtype ",
                                  sdk::DTypeName(nt.tensor.dtype()),
                                  ", which a checkpoint cannot hold (numeric, bool and string "
                                  "tensors only)");
  }
  const std::string dir = Dirname(path);
  CFX_SDK_RETURN_IF_ERROR(MakeDirectories(dir));
  const std::string tmp_path = path + ".tmp." + RandomSuffix();
  int fd = ::open(tmp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) return ErrnoStatus(errno, "cannot create checkpoint file " + tmp_path);
  sdk::Status s = WriteFile(fd, tmp_path, tensors);
  if (::close(fd) != 0 && s.ok())
    s = ErrnoStatus(errno, "cannot close checkpoint file " + tmp_path);
  if (s.ok() && ::rename(tmp_path.c_str(), path.c_str()) != 0)
    s = ErrnoStatus(errno, "cannot rename " + tmp_path + " to " + path);
  if (!s.ok()) {
    ::unlink(tmp_path.c_str());
    return s;
  }
  return SyncDirectory(dir);
}

}  // namespace cfx::cpu::checkpoint
