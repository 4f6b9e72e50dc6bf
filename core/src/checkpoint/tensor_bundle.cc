#include "checkpoint/tensor_bundle.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "conflux/sdk/crc32c.h"
#include "conflux/types.h"
#include "util/file.h"

namespace cfx::internal::bundle {
namespace {

// ---- Encodings (LevelDB's coding.h, CRC-32C masking) ----

void PutFixed32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
uint32_t GetFixed32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}
void PutVarint64(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}
// Reads a varint of at most `max_bits` bits from [*p, end); false when malformed or cut.
bool GetVarint(const char** p, const char* end, uint64_t* v, int max_bits = 64) {
  uint64_t result = 0;
  for (int shift = 0; shift < max_bits && *p < end; shift += 7) {
    const uint64_t byte = static_cast<uint8_t>(**p);
    ++*p;
    result |= (byte & 0x7F) << shift;
    if ((byte & 0x80) == 0) {
      *v = result;
      return true;
    }
  }
  return false;
}

constexpr uint32_t kMaskDelta = 0xa282ead8u;
uint32_t Mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + kMaskDelta; }
uint32_t Unmask(uint32_t masked) {
  const uint32_t rot = masked - kMaskDelta;
  return (rot >> 17) | (rot << 15);
}

// ---- The table ----

constexpr uint64_t kTableMagic = 0xdb4775248b80fb57ull;
constexpr size_t kMaxHandleLength = 20;        // two varint64s
constexpr size_t kFooterLength = 2 * kMaxHandleLength + 8;
constexpr size_t kBlockTrailerLength = 5;      // compression type + masked CRC-32C
constexpr int kDataRestartInterval = 16;
constexpr int kIndexRestartInterval = 1;

struct BlockHandle {
  uint64_t offset = 0;
  uint64_t size = 0;
  void EncodeTo(std::string* out) const {
    PutVarint64(out, offset);
    PutVarint64(out, size);
  }
};

class BlockBuilder {
 public:
  explicit BlockBuilder(int restart_interval) : interval_(restart_interval) { restarts_.push_back(0); }
  void Add(const std::string& key, std::string_view value) {
    size_t shared = 0;
    if (counter_ < interval_) {
      const size_t n = std::min(last_key_.size(), key.size());
      while (shared < n && last_key_[shared] == key[shared]) ++shared;
    } else {
      restarts_.push_back(static_cast<uint32_t>(buffer_.size()));
      counter_ = 0;
    }
    PutVarint64(&buffer_, shared);
    PutVarint64(&buffer_, key.size() - shared);
    PutVarint64(&buffer_, value.size());
    buffer_.append(key, shared, std::string::npos);
    buffer_.append(value);
    last_key_ = key;
    ++counter_;
  }
  size_t SizeEstimate() const { return buffer_.size() + restarts_.size() * 4 + 4; }
  bool empty() const { return buffer_.empty(); }
  std::string Finish() {
    std::string out = std::move(buffer_);
    for (uint32_t r : restarts_) PutFixed32(&out, r);
    PutFixed32(&out, static_cast<uint32_t>(restarts_.size()));
    buffer_.clear();
    restarts_.assign(1, 0);
    counter_ = 0;
    last_key_.clear();
    return out;
  }

 private:
  int interval_;
  std::string buffer_;
  std::vector<uint32_t> restarts_;
  int counter_ = 0;
  std::string last_key_;
};

// The bytewise comparator's shortening of index keys (TensorFlow's table_builder).
void ShortestSeparator(std::string* start, const std::string& limit) {
  const size_t n = std::min(start->size(), limit.size());
  size_t i = 0;
  while (i < n && (*start)[i] == limit[i]) ++i;
  if (i >= n) return;
  const auto byte = static_cast<uint8_t>((*start)[i]);
  if (byte < 0xFF && byte + 1 < static_cast<uint8_t>(limit[i])) {
    (*start)[i] = static_cast<char>(byte + 1);
    start->resize(i + 1);
  }
}
void ShortSuccessor(std::string* key) {
  for (size_t i = 0; i < key->size(); ++i) {
    const auto byte = static_cast<uint8_t>((*key)[i]);
    if (byte != 0xFF) {
      (*key)[i] = static_cast<char>(byte + 1);
      key->resize(i + 1);
      return;
    }
  }
}

BlockHandle WriteBlock(BlockBuilder* block, std::string* file) {
  const std::string raw = block->Finish();
  BlockHandle h{file->size(), raw.size()};
  file->append(raw);
  const char type = 0;  // no compression
  uint32_t crc = sdk::Crc32c(raw.data(), raw.size());
  crc = sdk::Crc32cExtend(crc, &type, 1);
  file->push_back(type);
  PutFixed32(file, Mask(crc));
  return h;
}

// The contents of the block at `h` of `file`, its trailer checked.
StatusOr<std::string_view> ReadBlock(std::string_view file, const BlockHandle& h,
                                     const std::string& path, const char* what) {
  if (h.offset > file.size() || h.size > file.size() - h.offset ||
      file.size() - h.offset - h.size < kBlockTrailerLength)
    return errors::DataLoss("checkpoint index ", path, ": the ", what, " block at offset ",
                            h.offset, " (", h.size, " bytes) lies past the end of the file (",
                            file.size(), " bytes): the file is truncated or corrupt");
  const char* p = file.data() + h.offset;
  const char type = p[h.size];
  uint32_t crc = sdk::Crc32c(p, h.size);
  crc = sdk::Crc32cExtend(crc, &type, 1);
  if (Unmask(GetFixed32(p + h.size + 1)) != crc)
    return errors::DataLoss("checkpoint index ", path, ": checksum mismatch in the ", what,
                            " block at offset ", h.offset);
  if (type != 0)
    return errors::Unimplemented("checkpoint index ", path, ": the ", what,
                                 " block is compressed (type ", static_cast<int>(type),
                                 "); only uncompressed tables are read");
  return std::string_view(p, h.size);
}

// Appends the entries of `block` to `out`.
Status ParseBlock(std::string_view block, const std::string& path, const char* what,
                  std::vector<std::pair<std::string, std::string>>* out) {
  auto corrupt = [&](const char* detail) {
    return errors::DataLoss("checkpoint index ", path, ": malformed ", what, " block (", detail,
                            ")");
  };
  if (block.size() < 4) return corrupt("shorter than its restart count");
  const uint32_t num_restarts = GetFixed32(block.data() + block.size() - 4);
  if (num_restarts > (block.size() - 4) / 4) return corrupt("restart count past the block");
  const char* p = block.data();
  const char* end = block.data() + block.size() - 4 - 4 * static_cast<size_t>(num_restarts);
  std::string key;
  while (p < end) {
    uint64_t shared = 0, non_shared = 0, value_len = 0;
    if (!GetVarint(&p, end, &shared, 35) || !GetVarint(&p, end, &non_shared, 35) ||
        !GetVarint(&p, end, &value_len, 35))
      return corrupt("bad entry header");
    if (shared > key.size()) return corrupt("key shares more bytes than the previous key has");
    if (non_shared > static_cast<uint64_t>(end - p) ||
        value_len > static_cast<uint64_t>(end - p) - non_shared)
      return corrupt("entry runs past the block");
    key.resize(shared);
    key.append(p, non_shared);
    p += non_shared;
    if (!out->empty() && out->back().first >= key && std::string_view(what) == "data")
      return corrupt("keys out of order");
    out->emplace_back(key, std::string(p, value_len));
    p += value_len;
  }
  return Status();
}

// ---- OrderedCode (tensorflow/core/lib/strings/ordered_code) ----

void WriteNumIncreasing(std::string* out, uint64_t v) {
  char buf[8];
  int len = 0;
  while (v > 0) {
    buf[7 - len] = static_cast<char>(v & 0xFF);
    v >>= 8;
    ++len;
  }
  out->push_back(static_cast<char>(len));
  out->append(buf + 8 - len, len);
}
void WriteOrderedString(std::string* out, const std::string& s) {
  for (char c : s) {
    out->push_back(c);
    if (c == '\0') out->push_back('\xff');
    if (c == '\xff') out->push_back('\0');
  }
  out->push_back('\0');
  out->push_back('\x01');
}
void WriteSignedNumIncreasing(std::string* out, int64_t v) {
  static constexpr uint8_t kHeader[11][2] = {{0, 0},       {0x80, 0},    {0xc0, 0}, {0xe0, 0},
                                             {0xf0, 0},    {0xf8, 0},    {0xfc, 0}, {0xfe, 0},
                                             {0xff, 0},    {0xff, 0x80}, {0xff, 0xc0}};
  const uint64_t x = v < 0 ? ~static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  if (x < 64) {
    out->push_back(static_cast<char>(kHeader[1][0] ^ static_cast<uint8_t>(v)));
    return;
  }
  int bits = 0;
  for (uint64_t t = x; t != 0; t >>= 1) ++bits;  // floor(log2 x) + 1
  const int len = bits == 64 ? 10 : bits / 7 + 1;
  uint8_t buf[10];
  const uint8_t sign = v < 0 ? 0xFF : 0x00;
  buf[0] = buf[1] = sign;
  for (int i = 0; i < 8; ++i) buf[2 + i] = static_cast<uint8_t>(static_cast<uint64_t>(v) >> (56 - 8 * i));
  uint8_t* begin = buf + 10 - len;
  begin[0] ^= kHeader[len][0];
  begin[1] ^= kHeader[len][1];
  out->append(reinterpret_cast<const char*>(begin), len);
}

// ---- Tensors ----

bool IsStorable(DataType d) {
  if (d == DT_STRING) return true;
  return IsValidDataType(d) && d != DT_RESOURCE && d != DT_VARIANT && DataTypeSize(d) > 0;
}

void ShapeToProto(const TensorShape& s, conflux::TensorShapeProto* p) {
  p->Clear();
  for (int i = 0; i < s.rank(); ++i) p->add_dim()->set_size(s.dim(i));
}

StatusOr<TensorShape> ShapeFromProto(const conflux::TensorShapeProto& p, const std::string& key,
                                     const std::string& path) {
  if (p.unknown_rank())
    return errors::DataLoss("checkpoint ", path, ": tensor '", key, "' has a shape of unknown rank");
  std::vector<int64_t> dims;
  for (const auto& d : p.dim()) dims.push_back(d.size());
  auto s = TensorShape::Make(dims);
  if (!s.ok())
    return errors::DataLoss("checkpoint ", path, ": tensor '", key, "' has an invalid shape: ",
                            s.status().message());
  return s;
}

void SliceToProto(const TensorSlice& s, conflux::TensorSliceProto* p) {
  for (const auto& [start, length] : s.extents) {
    auto* e = p->add_extent();
    if (length != -1) {
      e->set_start(start);
      e->set_length(length);
    }
  }
}

TensorSlice SliceFromProto(const conflux::TensorSliceProto& p) {
  TensorSlice s;
  for (const auto& e : p.extent())
    s.extents.emplace_back(e.start(), e.has_length_case() == conflux::TensorSliceProto::Extent::kLength
                                          ? e.length()
                                          : -1);
  return s;
}

// Checks `slice` against `full`: same rank, each extent inside its dimension.
Status CheckSlice(const TensorSlice& slice, const TensorShape& full, const std::string& what) {
  if (slice.rank() != full.rank())
    return errors::InvalidArgument(what, ": slice ", SliceString(slice), " has rank ", slice.rank(),
                                   " but the tensor's shape ", full.ToString(), " has rank ",
                                   full.rank());
  for (int d = 0; d < slice.rank(); ++d) {
    if (slice.IsFullAt(d)) continue;
    const auto [start, length] = slice.extents[d];
    if (start < 0 || length < 0 || start > full.dim(d) || length > full.dim(d) - start)
      return errors::InvalidArgument(what, ": slice ", SliceString(slice), " does not fit shape ",
                                     full.ToString(), " in dimension ", d);
  }
  return Status();
}

TensorShape SliceShape(const TensorSlice& slice, const TensorShape& full) {
  std::vector<int64_t> dims;
  for (int d = 0; d < slice.rank(); ++d) dims.push_back(slice.length(d, full.dim(d)));
  return TensorShape(dims);
}

// Copies the intersection of the boxes `src_box` (holding `src`) and `dst_box` (to hold `dst`),
// both in the full tensor's coordinates, from src to dst.
void CopyIntersection(const Tensor& src, const TensorSlice& src_box, Tensor* dst,
                      const TensorSlice& dst_box, const TensorShape& full) {
  const int rank = full.rank();
  std::vector<int64_t> lo(rank), hi(rank);
  for (int d = 0; d < rank; ++d) {
    const int64_t s0 = src_box.start(d), s1 = s0 + src_box.length(d, full.dim(d));
    const int64_t d0 = dst_box.start(d), d1 = d0 + dst_box.length(d, full.dim(d));
    lo[d] = std::max(s0, d0);
    hi[d] = std::min(s1, d1);
    if (lo[d] >= hi[d]) return;
  }
  const TensorShape src_shape = src.shape(), dst_shape = dst->shape();
  // Row-major strides of both.
  std::vector<int64_t> ss(rank, 1), ds(rank, 1);
  for (int d = rank - 2; d >= 0; --d) {
    ss[d] = ss[d + 1] * src_shape.dim(d + 1);
    ds[d] = ds[d + 1] * dst_shape.dim(d + 1);
  }
  const int64_t run = rank == 0 ? 1 : hi[rank - 1] - lo[rank - 1];
  std::vector<int64_t> idx(lo);
  const bool strings = src.dtype() == DT_STRING;
  const size_t esize = strings ? 0 : DataTypeSize(src.dtype());
  while (true) {
    int64_t so = 0, dof = 0;
    for (int d = 0; d < rank; ++d) {
      so += (idx[d] - src_box.start(d)) * ss[d];
      dof += (idx[d] - dst_box.start(d)) * ds[d];
    }
    if (strings) {
      for (int64_t i = 0; i < run; ++i) dst->at<std::string>(dof + i) = src.at<std::string>(so + i);
    } else {
      std::memcpy(static_cast<char*>(dst->raw_data()) + dof * esize,
                  static_cast<const char*>(src.raw_data()) + so * esize, run * esize);
    }
    int d = rank - 2;
    for (; d >= 0; --d) {
      if (++idx[d] < hi[d]) break;
      idx[d] = lo[d];
    }
    if (d < 0) return;
  }
}

Status ReadAt(int fd, int64_t offset, size_t n, char* dst, const std::string& path) {
  size_t done = 0;
  while (done < n) {
    const ssize_t r = ::pread(fd, dst + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, "reading " + path);
    }
    if (r == 0) return errors::DataLoss("checkpoint data file ", path, " is truncated");
    done += static_cast<size_t>(r);
  }
  return Status();
}

}  // namespace

std::string MetaFilename(std::string_view prefix) { return std::string(prefix) + ".index"; }

std::string DataFilename(std::string_view prefix, int shard, int num_shards) {
  char buf[64];
  std::snprintf(buf, sizeof buf, ".data-%05d-of-%05d", shard, num_shards);
  return std::string(prefix) + buf;
}

bool BundleExists(const std::string& prefix) {
  struct stat st;
  return ::stat(MetaFilename(prefix).c_str(), &st) == 0;
}

std::string BuildTable(const std::vector<std::pair<std::string, std::string>>& entries,
                       size_t block_size) {
  std::string file;
  BlockBuilder data(kDataRestartInterval), index(kIndexRestartInterval);
  std::string last_key;
  bool pending = false;
  BlockHandle pending_handle;
  for (const auto& [key, value] : entries) {
    if (pending) {
      ShortestSeparator(&last_key, key);
      std::string h;
      pending_handle.EncodeTo(&h);
      index.Add(last_key, h);
      pending = false;
    }
    last_key = key;
    data.Add(key, value);
    if (data.SizeEstimate() >= block_size) {
      pending_handle = WriteBlock(&data, &file);
      pending = true;
    }
  }
  if (!data.empty()) {
    pending_handle = WriteBlock(&data, &file);
    pending = true;
  }
  BlockBuilder meta(kIndexRestartInterval);
  const BlockHandle meta_handle = WriteBlock(&meta, &file);
  if (pending) {
    ShortSuccessor(&last_key);
    std::string h;
    pending_handle.EncodeTo(&h);
    index.Add(last_key, h);
  }
  const BlockHandle index_handle = WriteBlock(&index, &file);
  std::string footer;
  meta_handle.EncodeTo(&footer);
  index_handle.EncodeTo(&footer);
  footer.resize(2 * kMaxHandleLength, '\0');
  PutFixed32(&footer, static_cast<uint32_t>(kTableMagic & 0xFFFFFFFFu));
  PutFixed32(&footer, static_cast<uint32_t>(kTableMagic >> 32));
  file.append(footer);
  return file;
}

StatusOr<std::vector<std::pair<std::string, std::string>>> ParseTable(std::string_view file,
                                                                     const std::string& path) {
  if (file.size() < kFooterLength)
    return errors::DataLoss("checkpoint index ", path, " is truncated: ", file.size(),
                            " bytes, shorter than a table's footer (", kFooterLength, ")");
  const char* footer = file.data() + file.size() - kFooterLength;
  const uint64_t magic = GetFixed32(footer + kFooterLength - 8) |
                         static_cast<uint64_t>(GetFixed32(footer + kFooterLength - 4)) << 32;
  if (magic != kTableMagic)
    return errors::DataLoss("checkpoint index ", path,
                            " is not a tensor-bundle index (no table magic at its end): "
                            "truncated, corrupt, or another kind of file");
  const char* p = footer;
  const char* end = footer + 2 * kMaxHandleLength;
  BlockHandle meta, index;
  if (!GetVarint(&p, end, &meta.offset) || !GetVarint(&p, end, &meta.size) ||
      !GetVarint(&p, end, &index.offset) || !GetVarint(&p, end, &index.size))
    return errors::DataLoss("checkpoint index ", path, ": malformed footer");
  const std::string_view body = file.substr(0, file.size() - kFooterLength);
  CFX_ASSIGN_OR_RETURN(std::string_view index_block, ReadBlock(body, index, path, "index"));
  std::vector<std::pair<std::string, std::string>> handles;
  CFX_RETURN_IF_ERROR(ParseBlock(index_block, path, "index", &handles));
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [sep, value] : handles) {
    BlockHandle h;
    const char* q = value.data();
    if (!GetVarint(&q, value.data() + value.size(), &h.offset) ||
        !GetVarint(&q, value.data() + value.size(), &h.size))
      return errors::DataLoss("checkpoint index ", path, ": malformed block handle in the index");
    CFX_ASSIGN_OR_RETURN(std::string_view block, ReadBlock(body, h, path, "data"));
    const size_t before = out.size();
    CFX_RETURN_IF_ERROR(ParseBlock(block, path, "data", &out));
    if (before > 0 && out.size() > before && out[before].first <= out[before - 1].first)
      return errors::DataLoss("checkpoint index ", path, ": keys out of order across blocks");
  }
  return out;
}

// ---- Slices ----

std::string SliceString(const TensorSlice& slice) {
  std::string out;
  for (int d = 0; d < slice.rank(); ++d) {
    if (d > 0) out += ':';
    out += slice.IsFullAt(d) ? std::string("-")
                             : StrCat(slice.extents[d].first, ",", slice.extents[d].second);
  }
  return out;
}

StatusOr<ShapeAndSlice> ParseShapeAndSlice(std::string_view spec) {
  ShapeAndSlice out;
  if (spec.empty()) return out;
  auto bad = [&](const std::string& why) {
    return errors::InvalidArgument("shape_and_slices \"", std::string(spec), "\": ", why,
                                   "; expected the full shape's dims and a slice spec, such as "
                                   "\"6 4 0,2:-\"");
  };
  std::vector<std::string> tokens;
  size_t i = 0;
  while (i < spec.size()) {
    const size_t j = spec.find(' ', i);
    const std::string_view tok = spec.substr(i, j == std::string_view::npos ? spec.npos : j - i);
    if (!tok.empty()) tokens.emplace_back(tok);
    if (j == std::string_view::npos) break;
    i = j + 1;
  }
  if (tokens.empty()) return bad("no dims");
  auto parse_int = [](const std::string& s, int64_t* v) {
    if (s.empty()) return false;
    char* end = nullptr;
    errno = 0;
    const long long x = std::strtoll(s.c_str(), &end, 10);
    if (errno != 0 || *end != '\0') return false;
    *v = x;
    return true;
  };
  std::vector<int64_t> dims;
  for (size_t k = 0; k + 1 < tokens.size(); ++k) {
    int64_t d = 0;
    if (!parse_int(tokens[k], &d) || d < 0) return bad("dim '" + tokens[k] + "' is not a size");
    dims.push_back(d);
  }
  auto full = TensorShape::Make(dims);
  if (!full.ok()) return bad(std::string(full.status().message()));
  out.full_shape = *full;
  const std::string& s = tokens.back();
  size_t pos = 0;
  while (pos <= s.size()) {
    const size_t colon = std::min(s.find(':', pos), s.size());
    const std::string ext = s.substr(pos, colon - pos);
    if (ext == "-") {
      out.slice.extents.emplace_back(0, -1);
    } else {
      const size_t comma = ext.find(',');
      int64_t start = 0, length = 0;
      if (comma == std::string::npos || !parse_int(ext.substr(0, comma), &start) ||
          !parse_int(ext.substr(comma + 1), &length) || start < 0 || length < 0)
        return bad("extent '" + ext + "' is neither '-' nor 'start,length'");
      out.slice.extents.emplace_back(start, length);
    }
    pos = colon + 1;
  }
  CFX_RETURN_IF_ERROR(CheckSlice(out.slice, out.full_shape, "shape_and_slices \"" + std::string(spec) + "\""));
  out.whole = false;
  out.slice_shape = SliceShape(out.slice, out.full_shape);
  return out;
}

std::string EncodeTensorNameSlice(const std::string& name, const TensorSlice& slice) {
  std::string out;
  WriteNumIncreasing(&out, 0);
  WriteOrderedString(&out, name);
  WriteNumIncreasing(&out, static_cast<uint64_t>(slice.rank()));
  for (int d = 0; d < slice.rank(); ++d) {
    WriteSignedNumIncreasing(&out, slice.start(d));
    WriteSignedNumIncreasing(&out, slice.IsFullAt(d) ? -1 : slice.extents[d].second);
  }
  return out;
}

// ---- BundleWriter ----

BundleWriter::BundleWriter(Env* env, std::string prefix) : env_(env), prefix_(std::move(prefix)) {
  if (prefix_.empty()) {
    status_ = errors::InvalidArgument("checkpoint prefix is empty");
    return;
  }
  status_ = env_->CreateDir(DirName(prefix_));
  if (!status_.ok()) return;
  data_tmp_ = TemporaryFileName(DataFilename(prefix_, 0, 1));
  auto f = env_->NewWritableFile(data_tmp_);
  if (!f.ok()) {
    status_ = f.status();
    return;
  }
  data_ = std::move(*f);
}

BundleWriter::~BundleWriter() {
  if (data_ != nullptr) {
    (void)data_->Close();
    (void)env_->DeleteFile(data_tmp_);
  }
}

Status BundleWriter::Append(std::string_view bytes) {
  crc_ = sdk::Crc32cExtend(crc_, bytes.data(), bytes.size());
  if (bytes.empty()) return Status();
  return data_->Append(bytes);
}

Status BundleWriter::Add(const std::string& key, const Tensor& t) {
  if (!status_.ok()) return status_;
  if (key.empty()) return status_ = errors::InvalidArgument("checkpoint ", prefix_, ": empty tensor name");
  if (entries_.count(key))
    return status_ = errors::InvalidArgument("checkpoint ", prefix_, ": tensor name '", key,
                                             "' given twice");
  if (!IsStorable(t.dtype()))
    return status_ = errors::InvalidArgument("checkpoint ", prefix_, ": tensor '", key,
                                             "' has dtype ", DataTypeString(t.dtype()),
                                             ", which a checkpoint cannot hold");
  conflux::BundleEntryProto e;
  e.set_dtype(static_cast<conflux::DataType>(t.dtype()));
  ShapeToProto(t.shape(), e.mutable_shape());
  e.set_shard_id(0);
  e.set_offset(size_);
  crc_ = 0;
  int64_t written = 0;
  const int64_t n = t.num_elements();
  if (t.dtype() == DT_STRING) {
    std::string lengths;
    uint32_t crc = 0;
    for (int64_t i = 0; i < n; ++i) {
      const uint64_t len = t.at<std::string>(i).size();
      PutVarint64(&lengths, len);
      if (len <= UINT32_MAX) {
        const uint32_t l32 = static_cast<uint32_t>(len);
        crc = sdk::Crc32cExtend(crc, &l32, 4);
      } else {
        crc = sdk::Crc32cExtend(crc, &len, 8);
      }
    }
    if (n > 0) {
      std::string masked;
      PutFixed32(&masked, Mask(crc));
      status_ = data_->Append(lengths);
      if (status_.ok()) status_ = data_->Append(masked);
      crc = sdk::Crc32cExtend(crc, masked.data(), 4);
      written = static_cast<int64_t>(lengths.size() + 4);
      for (int64_t i = 0; i < n && status_.ok(); ++i) {
        const std::string& s = t.at<std::string>(i);
        if (!s.empty()) status_ = data_->Append(s);
        crc = sdk::Crc32cExtend(crc, s.data(), s.size());
        written += static_cast<int64_t>(s.size());
      }
    }
    crc_ = crc;
  } else {
    const size_t bytes = static_cast<size_t>(n) * DataTypeSize(t.dtype());
    status_ = Append(std::string_view(static_cast<const char*>(t.raw_data()), bytes));
    written = static_cast<int64_t>(bytes);
  }
  if (!status_.ok()) return status_;
  e.set_size(written);
  e.set_crc32c(Mask(crc_));
  size_ += written;
  entries_.emplace(key, std::move(e));
  return Status();
}

Status BundleWriter::AddSlice(const std::string& key, const TensorShape& full_shape,
                              const TensorSlice& slice, const Tensor& t) {
  if (!status_.ok()) return status_;
  const std::string what = StrCat("checkpoint ", prefix_, ": tensor '", key, "'");
  if (Status s = CheckSlice(slice, full_shape, what); !s.ok()) return status_ = s;
  if (SliceShape(slice, full_shape) != t.shape())
    return status_ = errors::InvalidArgument(what, ": slice ", SliceString(slice), " of shape ",
                                             full_shape.ToString(), " needs values of shape ",
                                             SliceShape(slice, full_shape).ToString(), ", got ",
                                             t.shape().ToString());
  if (t.shape() == full_shape) return Add(key, t);
  auto it = entries_.find(key);
  if (it != entries_.end()) {
    if (it->second.slices_size() == 0 || it->second.dtype() != static_cast<int>(t.dtype()))
      return status_ = errors::InvalidArgument(what, " was already added whole or with dtype ",
                                               DataTypeString(static_cast<DataType>(it->second.dtype())));
  } else {
    conflux::BundleEntryProto full;
    full.set_dtype(static_cast<conflux::DataType>(t.dtype()));
    ShapeToProto(full_shape, full.mutable_shape());
    it = entries_.emplace(key, std::move(full)).first;
  }
  SliceToProto(slice, it->second.add_slices());
  return Add(EncodeTensorNameSlice(key, slice), t);
}

Status BundleWriter::Finish() {
  if (data_ == nullptr) return status_.ok() ? errors::FailedPrecondition("BundleWriter finished") : status_;
  std::unique_ptr<WritableFile> data = std::move(data_);
  if (status_.ok()) status_ = data->Sync();
  if (status_.ok()) status_ = data->Close();
  if (status_.ok()) status_ = env_->RenameFile(data_tmp_, DataFilename(prefix_, 0, 1));
  if (!status_.ok()) {
    (void)data->Close();
    (void)env_->DeleteFile(data_tmp_);
    return status_;
  }
  conflux::BundleHeaderProto header;
  header.set_num_shards(1);
  header.set_endianness(conflux::BundleHeaderProto::LITTLE);
  header.mutable_version()->set_producer(1);
  header.mutable_version()->set_min_consumer(0);
  std::vector<std::pair<std::string, std::string>> table;
  table.emplace_back("", header.SerializeAsString());
  for (const auto& [k, e] : entries_) table.emplace_back(k, e.SerializeAsString());
  // Syncs the folder too, which makes the data file's rename durable with the index's.
  status_ = WriteFileAtomically(env_, MetaFilename(prefix_), BuildTable(table));
  return status_;
}

// ---- BundleReader ----

StatusOr<std::unique_ptr<BundleReader>> BundleReader::Open(const std::string& prefix) {
  const std::string path = MetaFilename(prefix);
  auto bytes = ReadFileToString(path);
  if (!bytes.ok()) {
    if (bytes.status().code() == Code::kNotFound)
      return errors::NotFound("no checkpoint at ", prefix, " (", path, " does not exist)");
    return bytes.status();
  }
  CFX_ASSIGN_OR_RETURN(auto table, ParseTable(*bytes, path));
  std::unique_ptr<BundleReader> r(new BundleReader());
  r->prefix_ = prefix;
  if (table.empty() || !table.front().first.empty() ||
      !r->header_.ParseFromString(table.front().second))
    return errors::DataLoss("checkpoint index ", path,
                            ": the first entry is not the bundle header (key \"\")");
  if (r->header_.endianness() != conflux::BundleHeaderProto::LITTLE)
    return errors::Unimplemented("checkpoint ", prefix,
                                 " was written on a big-endian machine; only little-endian "
                                 "bundles are read");
  if (r->header_.version().min_consumer() > 1)
    return errors::Unimplemented("checkpoint ", prefix, " needs a reader of version ",
                                 r->header_.version().min_consumer(), "; this one is version 1");
  if (r->header_.num_shards() < 1 || r->header_.num_shards() > 1000000)
    return errors::DataLoss("checkpoint index ", path, ": num_shards is ",
                            r->header_.num_shards());
  for (size_t i = 1; i < table.size(); ++i) {
    conflux::BundleEntryProto e;
    if (!e.ParseFromString(table[i].second))
      return errors::DataLoss("checkpoint index ", path, ": the entry of tensor '",
                              table[i].first, "' is not a BundleEntryProto");
    if (!IsValidDataType(e.dtype()))
      return errors::DataLoss("checkpoint index ", path, ": tensor '", table[i].first,
                              "' has dtype code ", static_cast<int>(e.dtype()),
                              ", which is not a DataType");
    if (e.shard_id() < 0 || e.shard_id() >= r->header_.num_shards() || e.offset() < 0 ||
        e.size() < 0)
      return errors::DataLoss("checkpoint index ", path, ": tensor '", table[i].first,
                              "' points outside the bundle's data files (shard ", e.shard_id(),
                              " of ", r->header_.num_shards(), ", offset ", e.offset(), ", size ",
                              e.size(), ")");
    r->entries_.emplace(table[i].first, std::move(e));
  }
  r->fds_.assign(static_cast<size_t>(r->header_.num_shards()), -1);
  r->sizes_.assign(r->fds_.size(), 0);
  return r;
}

BundleReader::~BundleReader() {
  for (int fd : fds_)
    if (fd >= 0) ::close(fd);
}

StatusOr<const conflux::BundleEntryProto*> BundleReader::Find(const std::string& key) const {
  auto it = entries_.find(key);
  if (it != entries_.end()) return &it->second;
  std::string some;
  int n = 0;
  for (const auto& [k, e] : entries_) {
    if (!k.empty() && k[0] == '\0') continue;  // a slice's key
    if (n++ == 8) {
      some += ", ...";
      break;
    }
    some += (n > 1 ? ", '" : "'") + k + "'";
  }
  return errors::NotFound("tensor '", key, "' is not in checkpoint ", prefix_, " (it holds ",
                          some.empty() ? std::string("no tensors") : some, ")");
}

StatusOr<int> BundleReader::DataFile(int shard) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (fds_[shard] >= 0) return fds_[shard];
  const std::string path = DataFilename(prefix_, shard, header_.num_shards());
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, "checkpoint data file " + path);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return ErrnoStatus(err, "checkpoint data file " + path);
  }
  fds_[shard] = fd;
  sizes_[shard] = st.st_size;
  return fd;
}

StatusOr<Tensor> BundleReader::ReadEntry(const std::string& key,
                                         const conflux::BundleEntryProto& e) const {
  CFX_ASSIGN_OR_RETURN(TensorShape shape, ShapeFromProto(e.shape(), key, prefix_));
  const auto dtype = static_cast<DataType>(e.dtype());
  if (!IsStorable(dtype))
    return errors::Unimplemented("checkpoint ", prefix_, ": tensor '", key, "' has dtype ",
                                 DataTypeString(dtype), ", which Conflux does not restore");
  const std::string path = DataFilename(prefix_, e.shard_id(), header_.num_shards());
  CFX_ASSIGN_OR_RETURN(int fd, DataFile(e.shard_id()));
  int64_t file_size;
  {
    std::lock_guard<std::mutex> lock(mu_);
    file_size = sizes_[e.shard_id()];
  }
  if (e.offset() > file_size || e.size() > file_size - e.offset())
    return errors::DataLoss("checkpoint ", prefix_, ": tensor '", key, "' (", e.size(),
                            " bytes at offset ", e.offset(), ") lies past the end of ", path,
                            " (", file_size, " bytes): the file is truncated");
  const int64_t n = shape.num_elements();
  if (n > file_size)
    return errors::DataLoss("checkpoint ", prefix_, ": tensor '", key, "' of shape ",
                            shape.ToString(), " has more elements than ", path, " has bytes");
  if (dtype != DT_STRING) {
    const uint64_t want = static_cast<uint64_t>(n) * DataTypeSize(dtype);
    if (static_cast<uint64_t>(e.size()) != want)
      return errors::DataLoss("checkpoint ", prefix_, ": tensor '", key, "' of shape ",
                              shape.ToString(), " and dtype ", DataTypeString(dtype), " needs ",
                              want, " bytes, its entry says ", e.size());
  } else if (n == 0 ? e.size() != 0 : static_cast<uint64_t>(e.size()) < static_cast<uint64_t>(n) + 4) {
    return errors::DataLoss("checkpoint ", prefix_, ": string tensor '", key, "' of shape ",
                            shape.ToString(), " cannot be ", e.size(), " bytes");
  }
  std::string bytes(static_cast<size_t>(e.size()), '\0');
  CFX_RETURN_IF_ERROR(ReadAt(fd, e.offset(), bytes.size(), bytes.data(), path));
  auto corrupt = [&]() {
    return errors::DataLoss("checkpoint ", prefix_, ": checksum mismatch for tensor '", key,
                            "' in ", path, ": the file is corrupt");
  };
  if (dtype != DT_STRING) {
    if (sdk::Crc32c(bytes.data(), bytes.size()) != Unmask(e.crc32c())) return corrupt();
    Tensor t(dtype, shape);
    if (!bytes.empty()) std::memcpy(t.raw_data(), bytes.data(), bytes.size());
    return t;
  }
  Tensor t(dtype, shape);
  if (n == 0) return t;
  const char* p = bytes.data();
  const char* end = bytes.data() + bytes.size();
  // TensorFlow checksums each length as a fixed-width integer (4 bytes, or 8 above 2^32), then
  // the masked checksum of the lengths, then the bytes.
  std::vector<uint64_t> lengths(static_cast<size_t>(n));
  uint64_t total = 0;
  uint32_t crc = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!GetVarint(&p, end, &lengths[i]) || lengths[i] > bytes.size())
      return errors::DataLoss("checkpoint ", prefix_, ": string tensor '", key,
                              "': malformed length of element ", i);
    total += lengths[i];
    if (lengths[i] <= UINT32_MAX) {
      const uint32_t l32 = static_cast<uint32_t>(lengths[i]);
      crc = sdk::Crc32cExtend(crc, &l32, 4);
    } else {
      crc = sdk::Crc32cExtend(crc, &lengths[i], 8);
    }
  }
  if (end - p < 4 || total != static_cast<uint64_t>(end - p - 4))
    return errors::DataLoss("checkpoint ", prefix_, ": string tensor '", key,
                            "': its lengths add up to ", total, " bytes, its entry holds ",
                            end - p < 4 ? 0 : end - p - 4);
  if (Unmask(GetFixed32(p)) != crc) return corrupt();
  crc = sdk::Crc32cExtend(crc, p, 4);
  p += 4;
  crc = sdk::Crc32cExtend(crc, p, static_cast<size_t>(total));
  if (crc != Unmask(e.crc32c())) return corrupt();
  for (int64_t i = 0; i < n; ++i) {
    t.at<std::string>(i).assign(p, lengths[i]);
    p += lengths[i];
  }
  return t;
}

StatusOr<Tensor> BundleReader::Read(const std::string& key) const {
  CFX_ASSIGN_OR_RETURN(const conflux::BundleEntryProto* e, Find(key));
  if (e->slices_size() == 0) return ReadEntry(key, *e);
  CFX_ASSIGN_OR_RETURN(TensorShape full, ShapeFromProto(e->shape(), key, prefix_));
  TensorSlice all;
  all.extents.assign(static_cast<size_t>(full.rank()), {0, -1});
  return ReadSlice(key, full, all);
}

StatusOr<Tensor> BundleReader::ReadSlice(const std::string& key, const TensorShape& full_shape,
                                         const TensorSlice& slice) const {
  CFX_ASSIGN_OR_RETURN(const conflux::BundleEntryProto* e, Find(key));
  CFX_ASSIGN_OR_RETURN(TensorShape stored, ShapeFromProto(e->shape(), key, prefix_));
  if (stored != full_shape)
    return errors::InvalidArgument("checkpoint ", prefix_, ": tensor '", key, "' has shape ",
                                   stored.ToString(), ", not ", full_shape.ToString());
  CFX_RETURN_IF_ERROR(CheckSlice(slice, full_shape, StrCat("checkpoint ", prefix_, ": tensor '", key, "'")));
  const auto dtype = static_cast<DataType>(e->dtype());
  Tensor out(dtype, SliceShape(slice, full_shape));
  if (e->slices_size() == 0) {
    CFX_ASSIGN_OR_RETURN(Tensor whole, ReadEntry(key, *e));
    TensorSlice all;
    all.extents.assign(static_cast<size_t>(full_shape.rank()), {0, -1});
    CopyIntersection(whole, all, &out, slice, full_shape);
    return out;
  }
  // Elements covered so far, to name a request that the stored slices do not cover.
  int64_t covered = 0;
  for (const auto& sp : e->slices()) {
    const TensorSlice stored_slice = SliceFromProto(sp);
    if (Status s = CheckSlice(stored_slice, full_shape, StrCat("checkpoint ", prefix_, ": tensor '", key, "'")); !s.ok())
      return errors::DataLoss(s.message());
    int64_t overlap = 1;
    for (int d = 0; d < full_shape.rank(); ++d) {
      const int64_t lo = std::max(stored_slice.start(d), slice.start(d));
      const int64_t hi = std::min(stored_slice.start(d) + stored_slice.length(d, full_shape.dim(d)),
                                  slice.start(d) + slice.length(d, full_shape.dim(d)));
      overlap *= std::max<int64_t>(0, hi - lo);
    }
    if (overlap == 0) continue;
    const std::string skey = EncodeTensorNameSlice(key, stored_slice);
    auto it = entries_.find(skey);
    if (it == entries_.end())
      return errors::DataLoss("checkpoint ", prefix_, ": tensor '", key, "' lists slice ",
                              SliceString(stored_slice), " but holds no entry for it");
    CFX_ASSIGN_OR_RETURN(Tensor part, ReadEntry(key + " (slice " + SliceString(stored_slice) + ")", it->second));
    if (part.shape() != SliceShape(stored_slice, full_shape) || part.dtype() != dtype)
      return errors::DataLoss("checkpoint ", prefix_, ": slice ", SliceString(stored_slice),
                              " of tensor '", key, "' has shape ", part.shape().ToString());
    CopyIntersection(part, stored_slice, &out, slice, full_shape);
    covered += overlap;
  }
  if (covered < out.num_elements())
    return errors::NotFound("checkpoint ", prefix_, ": the slices saved of tensor '", key,
                            "' do not cover slice ", SliceString(slice), " of ",
                            full_shape.ToString());
  return out;
}

std::vector<BundleVariable> BundleReader::List() const {
  std::vector<BundleVariable> out;
  for (const auto& [k, e] : entries_) {
    if (!k.empty() && k[0] == '\0') continue;
    BundleVariable v;
    v.name = k;
    v.dtype = static_cast<DataType>(e.dtype());
    auto s = ShapeFromProto(e.shape(), k, prefix_);
    if (s.ok()) v.shape = *s;
    out.push_back(std::move(v));
  }
  return out;
}

// ---- Merging ----

Status MergeBundles(Env* env, const std::vector<std::string>& prefixes, const std::string& merged,
                    bool delete_old_dirs, bool allow_missing_files) {
  std::map<std::string, conflux::BundleEntryProto> entries;
  std::vector<std::pair<std::string, std::string>> renames;  // data file -> new shard (later)
  std::vector<std::string> merged_prefixes;
  bool first = true;
  conflux::BundleHeaderProto header;
  for (const std::string& prefix : prefixes) {
    if (allow_missing_files && !BundleExists(prefix)) continue;
    CFX_ASSIGN_OR_RETURN(auto r, BundleReader::Open(prefix));
    if (first) {
      header = r->header();
      first = false;
    } else if (r->header().version().SerializeAsString() != header.version().SerializeAsString()) {
      return errors::InvalidArgument("MergeV2Checkpoints: ", prefix,
                                     " has another bundle format version than ", prefixes[0]);
    }
    const int base = static_cast<int>(renames.size());
    for (int s = 0; s < r->header().num_shards(); ++s)
      renames.emplace_back(DataFilename(prefix, s, r->header().num_shards()), "");
    for (const auto& [k, e] : r->entries()) {
      auto it = entries.find(k);
      if (it != entries.end()) {
        if (it->second.slices_size() == 0 || e.slices_size() == 0)
          return errors::InvalidArgument("MergeV2Checkpoints: tensor '", k, "' is in ", prefix,
                                         " and in an earlier checkpoint");
        if (it->second.dtype() != e.dtype() ||
            it->second.shape().SerializeAsString() != e.shape().SerializeAsString())
          return errors::InvalidArgument("MergeV2Checkpoints: the slices of tensor '", k,
                                         "' disagree on its dtype or shape");
        for (const auto& sp : e.slices()) *it->second.add_slices() = sp;
        continue;
      }
      conflux::BundleEntryProto copy = e;
      if (copy.slices_size() == 0) copy.set_shard_id(base + e.shard_id());
      entries.emplace(k, std::move(copy));
    }
    merged_prefixes.push_back(prefix);
  }
  if (first)
    return errors::NotFound("MergeV2Checkpoints: none of the ", prefixes.size(),
                            " checkpoints to merge exists");
  const int num_shards = static_cast<int>(renames.size());
  CFX_RETURN_IF_ERROR(env->CreateDir(DirName(merged)));
  for (int s = 0; s < num_shards; ++s) {
    const std::string to = DataFilename(merged, s, num_shards);
    if (renames[s].first != to) CFX_RETURN_IF_ERROR(env->RenameFile(renames[s].first, to));
  }
  header.set_num_shards(num_shards);
  std::vector<std::pair<std::string, std::string>> table;
  table.emplace_back("", header.SerializeAsString());
  for (const auto& [k, e] : entries) table.emplace_back(k, e.SerializeAsString());
  CFX_RETURN_IF_ERROR(WriteFileAtomically(env, MetaFilename(merged), BuildTable(table)));
  for (const std::string& prefix : merged_prefixes) {
    if (MetaFilename(prefix) == MetaFilename(merged)) continue;
    (void)env->DeleteFile(MetaFilename(prefix));
    if (delete_old_dirs) {
      std::error_code ec;
      const std::string dir = DirName(prefix);
      if (dir != DirName(merged) && std::filesystem::is_empty(dir, ec))
        std::filesystem::remove(dir, ec);
    }
  }
  return Status();
}

}  // namespace cfx::internal::bundle
