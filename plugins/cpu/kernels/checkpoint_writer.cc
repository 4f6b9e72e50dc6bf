// WriteCheckpoint: header, payloads in input order, sorted index, footer; written through the
// host's file system to a temporary file, synced, and renamed into place.
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

// Appends to a host file, counting the bytes; the host buffers small appends.
class FileWriter {
 public:
  explicit FileWriter(sdk::WritableFile& file) : file_(file) {}
  uint64_t position() const { return position_; }

  sdk::Status Append(const void* data, size_t n) {
    position_ += n;
    return file_.Append(std::string_view(static_cast<const char*>(data), n));
  }
  sdk::Status Append(const std::string& s) { return Append(s.data(), s.size()); }

 private:
  sdk::WritableFile& file_;
  uint64_t position_ = 0;
};

std::string Dirname(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
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

// Writes the whole file to `file` and syncs it.
sdk::Status WriteFile(sdk::WritableFile& file, const std::vector<NamedTensor>& tensors) {
  FileWriter w(file);
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
  CFX_SDK_RETURN_IF_ERROR(file.Sync());
  return file.Close();
}

}  // namespace

sdk::Status WriteCheckpoint(sdk::KernelContext& ctx, const std::string& path,
                            const std::vector<NamedTensor>& tensors) {
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
  CFX_SDK_RETURN_IF_ERROR(ctx.CreateDir(dir));
  const std::string tmp_path = path + ".tmp." + RandomSuffix();
  sdk::Status s = [&]() -> sdk::Status {
    CFX_SDK_ASSIGN_OR_RETURN(sdk::WritableFile file, ctx.OpenFile(tmp_path));
    CFX_SDK_RETURN_IF_ERROR(WriteFile(file, tensors));
    return ctx.RenameFile(tmp_path, path);
  }();
  if (!s.ok()) {
    (void)ctx.DeleteFile(tmp_path);
    return s;
  }
  return ctx.SyncDir(dir);
}

}  // namespace cfx::cpu::checkpoint
