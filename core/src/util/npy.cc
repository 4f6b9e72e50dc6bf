// The .npy format (numpy/lib/format.py, NEP 1): "\x93NUMPY", a major and a minor version byte,
// the header length (uint16 little-endian in 1.0, uint32 in 2.0 and 3.0), then the header: a
// Python dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded with
// spaces and a final '\n', then the raw elements.
#include "conflux/npy.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <optional>
#include <vector>

#include "util/file.h"

namespace cfx {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
constexpr size_t kAlignment = 64;  // numpy aligns the payload to 64 bytes
// numpy leaves room after the dict for the first dimension to grow to this many digits.
constexpr size_t kGrowthAxisMaxDigits = 21;
constexpr char kNativeOrder = std::endian::native == std::endian::little ? '<' : '>';

struct NpyType {
  char kind;  // numpy's kind: 'b' bool, 'i' signed, 'u' unsigned, 'f' float, 'c' complex
  size_t size;
  DataType dtype;
};

constexpr NpyType kTypes[] = {
    {'b', 1, DT_BOOL},      {'i', 1, DT_INT8},        {'i', 2, DT_INT16},  {'i', 4, DT_INT32},
    {'i', 8, DT_INT64},     {'u', 1, DT_UINT8},       {'u', 2, DT_UINT16}, {'u', 4, DT_UINT32},
    {'u', 8, DT_UINT64},    {'f', 2, DT_HALF},        {'f', 4, DT_FLOAT},  {'f', 8, DT_DOUBLE},
    {'c', 8, DT_COMPLEX64}, {'c', 16, DT_COMPLEX128},
};

constexpr const char* kSupported =
    "expected one of b1 i1 i2 i4 i8 u1 u2 u4 u8 f2 f4 f8 c8 c16 with byte order '<', '>', '|' "
    "or '=', or a fixed-width string: S<n> (bytes) or U<n> (text)";

struct Header {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

// A parser for the small subset of Python literals that .npy headers use.
class HeaderParser {
 public:
  explicit HeaderParser(std::string_view text) : text_(text) {}

  Status Parse(Header* header) {
    bool have_descr = false, have_order = false, have_shape = false;
    SkipSpace();
    if (!Consume('{')) return Error("expected '{'");
    while (true) {
      SkipSpace();
      if (Consume('}')) break;
      std::string key;
      CFX_RETURN_IF_ERROR(ParseString(&key));
      SkipSpace();
      if (!Consume(':')) return Error("expected ':' after key '" + key + "'");
      SkipSpace();
      if (key == "descr") {
        if (Peek() != '\'' && Peek() != '"')
          return errors::InvalidArgument(
              "unsupported descr: only simple dtypes are supported, not structured ones (",
              kSupported, ")");
        CFX_RETURN_IF_ERROR(ParseString(&header->descr));
        have_descr = true;
      } else if (key == "fortran_order") {
        CFX_RETURN_IF_ERROR(ParseBool(&header->fortran_order));
        have_order = true;
      } else if (key == "shape") {
        CFX_RETURN_IF_ERROR(ParseShape(&header->shape));
        have_shape = true;
      } else {
        return Error("unexpected key '" + key + "'");
      }
      SkipSpace();
      if (Consume('}')) break;
      if (!Consume(',')) return Error("expected ',' or '}'");
    }
    SkipSpace();
    if (pos_ != text_.size()) return Error("unexpected text after '}'");
    if (!have_descr) return Error("no 'descr' key");
    if (!have_order) return Error("no 'fortran_order' key");
    if (!have_shape) return Error("no 'shape' key");
    return Status::OK();
  }

 private:
  char Peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool Consume(char c) {
    if (Peek() != c || pos_ >= text_.size()) return false;
    ++pos_;
    return true;
  }
  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }
  Status Error(const std::string& what) const {
    std::string shown(text_.substr(0, 200));
    while (!shown.empty() && (shown.back() == ' ' || shown.back() == '\n')) shown.pop_back();
    for (char& c : shown)
      if (static_cast<unsigned char>(c) < 0x20) c = ' ';
    return errors::InvalidArgument("malformed header dict: ", what, " at offset ", pos_, " of \"",
                                   shown, text_.size() > 200 ? "..." : "", "\"");
  }
  Status ParseString(std::string* out) {
    char quote = Peek();
    if (quote != '\'' && quote != '"') return Error("expected a quoted string");
    ++pos_;
    size_t end = text_.find(quote, pos_);
    if (end == std::string_view::npos) return Error("unterminated string");
    *out = std::string(text_.substr(pos_, end - pos_));
    if (out->find('\\') != std::string::npos) return Error("escapes in strings are not supported");
    pos_ = end + 1;
    return Status::OK();
  }
  Status ParseBool(bool* out) {
    if (text_.substr(pos_).starts_with("True")) {
      *out = true;
    } else if (text_.substr(pos_).starts_with("False")) {
      *out = false;
    } else {
      return Error("expected True or False");
    }
    pos_ += *out ? 4 : 5;
    return Status::OK();
  }
  Status ParseShape(std::vector<int64_t>* shape) {
    if (!Consume('(')) return Error("expected a tuple for 'shape'");
    while (true) {
      SkipSpace();
      if (Consume(')')) return Status::OK();
      if (Peek() < '0' || Peek() > '9') return Error("expected a non-negative integer dimension");
      int64_t d = 0;
      while (Peek() >= '0' && Peek() <= '9') {
        int digit = Peek() - '0';
        if (d > (std::numeric_limits<int64_t>::max() - digit) / 10)
          return Error("dimension does not fit in 64 bits");
        d = d * 10 + digit;
        ++pos_;
      }
      Consume('L');  // Python 2 longs
      shape->push_back(d);
      SkipSpace();
      if (Consume(')')) {
        // Python needs the comma in a 1-tuple; numpy's reader (literal_eval) would read "(3)"
        // as an int, which it then rejects.
        if (shape->size() == 1) return Error("a 1-tuple needs a trailing comma, as in (3,)");
        return Status::OK();
      }
      if (!Consume(',')) return Error("expected ',' or ')' in 'shape'");
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
};

// The dtype and byte order of a descr such as "<f4", "|b1", ">i8" or "?".
StatusOr<std::pair<NpyType, char>> ParseDescr(const std::string& descr) {
  auto bad = [&](const char* why) {
    return errors::InvalidArgument("unsupported descr '", descr, "': ", why, " (", kSupported, ")");
  };
  std::string_view rest = descr;
  char order = '|';
  if (!rest.empty() && std::string_view("<>|=").find(rest.front()) != std::string_view::npos) {
    order = rest.front();
    rest.remove_prefix(1);
  }
  if (rest.empty()) return bad("no type code");
  if (order == '=') order = kNativeOrder;
  if (rest == "?") return std::make_pair(kTypes[0], order);
  char kind = rest.front();
  rest.remove_prefix(1);
  if (kind == 'O')
    return errors::InvalidArgument(
        "object arrays (descr '", descr, "') hold Python objects, not data; save strings as "
        "fixed-width bytes or text instead: numpy.save(f, numpy.asarray(a, dtype=bytes)) or "
        "numpy.asarray(a, dtype=str)");
  if (kind == 'V') return bad("void (structured) arrays have no Conflux dtype");
  if (kind == 'M' || kind == 'm') return bad("datetime arrays have no Conflux dtype");
  if (rest.empty() || rest.size() > 2 ||
      !std::all_of(rest.begin(), rest.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return bad("expected a kind letter and a size in bytes");
  size_t size = std::stoul(std::string(rest));
  for (const NpyType& t : kTypes)
    if (t.kind == kind && t.size == size) {
      // '|' (no byte order) is how numpy writes 1-byte types; for wider ones numpy reads it as
      // native order.
      if (order == '|') order = kNativeOrder;
      return std::make_pair(t, order);
    }
  return bad("no such type");
}

std::optional<NpyType> TypeFor(DataType dtype) {
  for (const NpyType& t : kTypes)
    if (t.dtype == dtype) return t;
  return std::nullopt;
}

uint32_t ReadLittleEndian(std::string_view bytes) {
  uint32_t v = 0;
  for (size_t i = bytes.size(); i-- > 0;) v = (v << 8) | static_cast<unsigned char>(bytes[i]);
  return v;
}

void AppendLittleEndian(uint32_t v, size_t bytes, std::string* out) {
  for (size_t i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// Swaps the bytes of every `word`-byte word of `data`.
void SwapWords(char* data, size_t bytes, size_t word) {
  for (size_t i = 0; i + word <= bytes; i += word) std::reverse(data + i, data + i + word);
}

// A fixed-width string descr ("|S5", "<U7", "|a3"): kind 'S' or 'U', characters per element and
// byte order; nullopt for any other descr.
struct StringDescr {
  char kind;
  size_t width;
  char order;
};
std::optional<StringDescr> ParseStringDescr(const std::string& descr) {
  std::string_view rest = descr;
  char order = '|';
  if (!rest.empty() && std::string_view("<>|=").find(rest.front()) != std::string_view::npos) {
    order = rest.front();
    rest.remove_prefix(1);
  }
  if (rest.empty() || (rest.front() != 'S' && rest.front() != 'U' && rest.front() != 'a'))
    return std::nullopt;
  const char kind = rest.front() == 'U' ? 'U' : 'S';
  rest.remove_prefix(1);
  if (rest.empty() || rest.size() > 9 ||
      !std::all_of(rest.begin(), rest.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  if (order == '=' || order == '|') order = kNativeOrder;
  return StringDescr{kind, std::stoul(std::string(rest)), order};
}

// Appends code point `c` as UTF-8; false for one outside Unicode or a surrogate.
bool AppendUtf8(uint32_t c, std::string* out) {
  if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return false;
  if (c < 0x80) {
    out->push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (c >> 6)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (c >> 12)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (c >> 18)));
    out->push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
  return true;
}

// A string tensor from the elements of a fixed-width array: bytes ('S', trailing NULs dropped,
// as numpy reads them) or UTF-32 text ('U', encoded as UTF-8).
StatusOr<Tensor> ParseStrings(const StringDescr& d, const TensorShape& shape,
                              std::string_view body, const std::string& descr) {
  const int64_t n = shape.num_elements();
  const size_t char_size = d.kind == 'U' ? 4 : 1;
  if (d.width > 0 && static_cast<uint64_t>(n) > body.size() / (d.width * char_size) + 1)
    return errors::InvalidArgument("payload size mismatch: ", body.size(), " bytes of data for ",
                                   descr, " with shape ", shape.ToString());
  const size_t payload = static_cast<size_t>(n) * d.width * char_size;
  if (body.size() != payload)
    return errors::InvalidArgument("payload size mismatch: ", body.size(), " bytes of data, expected ",
                                   payload, " for ", descr, " with shape ", shape.ToString());
  Tensor t(DT_STRING, shape);
  for (int64_t i = 0; i < n; ++i) {
    std::string_view e = body.substr(static_cast<size_t>(i) * d.width * char_size, d.width * char_size);
    std::string& out = t.at<std::string>(i);
    if (d.kind == 'S') {
      size_t len = e.size();
      while (len > 0 && e[len - 1] == '\0') --len;
      out.assign(e.data(), len);
      continue;
    }
    size_t chars = d.width;
    auto code = [&](size_t k) {
      uint32_t c = 0;
      for (int b = 0; b < 4; ++b) {
        const int shift = d.order == '>' ? 8 * (3 - b) : 8 * b;
        c |= static_cast<uint32_t>(static_cast<unsigned char>(e[k * 4 + b])) << shift;
      }
      return c;
    };
    while (chars > 0 && code(chars - 1) == 0) --chars;
    for (size_t k = 0; k < chars; ++k)
      if (!AppendUtf8(code(k), &out))
        return errors::InvalidArgument("element ", i, " of the ", descr,
                                       " array holds code point ", code(k),
                                       ", which is not Unicode text");
  }
  return t;
}

}  // namespace

StatusOr<Tensor> ParseNpy(std::string_view data, std::string_view source) {
  std::string name = source.empty() ? "<memory>" : std::string(source);
  auto fail = [&](const Status& s) { return s.WithPrefix(name + ": "); };
  if (data.size() < kMagicSize + 2 || data.substr(0, kMagicSize) != std::string_view(kMagic))
    return fail(errors::InvalidArgument(
        "not a .npy file: bad magic (expected the file to start with \"\\x93NUMPY\" and a "
        "version)"));
  const int major = static_cast<unsigned char>(data[kMagicSize]);
  const int minor = static_cast<unsigned char>(data[kMagicSize + 1]);
  if (major < 1 || major > 3 || minor != 0)
    return fail(errors::InvalidArgument("unsupported .npy format version ", major, ".", minor,
                                        " (expected 1.0, 2.0 or 3.0)"));
  const size_t length_bytes = major == 1 ? 2 : 4;
  const size_t prefix = kMagicSize + 2 + length_bytes;
  if (data.size() < prefix)
    return fail(errors::InvalidArgument("truncated header: the file is ", data.size(),
                                        " bytes, too short for the header length field"));
  const size_t header_len = ReadLittleEndian(data.substr(kMagicSize + 2, length_bytes));
  if (data.size() - prefix < header_len)
    return fail(errors::InvalidArgument("truncated header: the header is ", header_len,
                                        " bytes but the file has only ", data.size() - prefix,
                                        " after the length field"));
  Header header;
  CFX_RETURN_IF_ERROR(fail(HeaderParser(data.substr(prefix, header_len)).Parse(&header)));
  if (header.fortran_order)
    return fail(errors::Unimplemented(
        "fortran_order True (column-major) arrays are not supported; save a C-order array, "
        "e.g. numpy.save(f, numpy.ascontiguousarray(a))"));
  if (auto sd = ParseStringDescr(header.descr)) {
    auto shape = TensorShape::Make(header.shape);
    if (!shape.ok()) return fail(shape.status());
    auto t = ParseStrings(*sd, *shape, data.substr(prefix + header_len), header.descr);
    if (!t.ok()) return fail(t.status());
    return t;
  }
  auto descr = ParseDescr(header.descr);
  if (!descr.ok()) return fail(descr.status());
  const auto [type, order] = *descr;
  auto shape = TensorShape::Make(header.shape);
  if (!shape.ok()) return fail(shape.status());
  const int64_t n = shape->num_elements();
  if (n > 0 && static_cast<uint64_t>(n) > std::numeric_limits<size_t>::max() / type.size)
    return fail(errors::InvalidArgument("shape ", shape->ToString(), " is too large"));
  const size_t payload = static_cast<size_t>(n) * type.size;
  std::string_view body = data.substr(prefix + header_len);
  if (body.size() != payload)
    return fail(errors::InvalidArgument("payload size mismatch: ", body.size(),
                                        " bytes of data, expected ", payload, " for ", header.descr,
                                        " with shape ", shape->ToString()));
  auto tensor = Tensor::Allocate(HostAllocator(), type.dtype, *shape);
  if (!tensor.ok()) return fail(tensor.status());
  char* out = static_cast<char*>(tensor->raw_data());
  if (payload > 0) std::memcpy(out, body.data(), payload);
  if (order != kNativeOrder && type.size > 1)
    SwapWords(out, payload, type.kind == 'c' ? type.size / 2 : type.size);
  if (type.dtype == DT_BOOL)  // a bool must hold 0 or 1; numpy reads any non-zero byte as True
    for (size_t i = 0; i < payload; ++i) out[i] = out[i] != 0;
  return tensor;
}

StatusOr<std::string> SerializeNpy(const Tensor& t) {
  std::optional<NpyType> type = TypeFor(t.dtype());
  std::string strings;  // a string tensor's elements, each padded to the widest
  if (t.dtype() == DT_STRING) {
    size_t width = 1;  // numpy's narrowest is S1
    for (int64_t i = 0; i < t.num_elements(); ++i) width = std::max(width, t.at<std::string>(i).size());
    for (int64_t i = 0; i < t.num_elements(); ++i) {
      const std::string& e = t.at<std::string>(i);
      strings += e;
      strings.append(width - e.size(), '\0');
    }
    type = NpyType{'S', width, DT_STRING};
  }
  if (!type)
    return errors::Unimplemented("cannot write a ", DataTypeString(t.dtype()),
                                 " tensor as .npy: NumPy has no such dtype",
                                 t.dtype() == DT_BFLOAT16 ? " (cast it to float32 first)" : "");
  if (!t.IsInitialized() && t.num_elements() > 0)
    return errors::InvalidArgument("cannot write a tensor without a buffer as .npy");
  if (t.IsInitialized() && !t.buffer()->allocator()->host_addressable())
    return errors::InvalidArgument(
        "cannot write a tensor in device memory as .npy; copy it to the host first");
  // The same header numpy.save writes, byte for byte.
  std::string dict = "{'descr': '";
  dict += type->size == 1 || type->kind == 'S' ? '|' : kNativeOrder;
  dict += StrCat(type->kind, type->size, "', 'fortran_order': False, 'shape': (");
  for (int i = 0; i < t.rank(); ++i) dict += StrCat(i ? ", " : "", t.dim(i));
  dict += t.rank() == 1 ? ",), }" : "), }";
  if (t.rank() > 0) {
    size_t digits = std::to_string(t.dim(0)).size();
    dict.append(kGrowthAxisMaxDigits - std::min(digits, kGrowthAxisMaxDigits), ' ');
  }
  auto prefixed = [&](size_t length_bytes) {
    const size_t unpadded = kMagicSize + 2 + length_bytes + dict.size() + 1;  // 1 for '\n'
    return unpadded + (kAlignment - unpadded % kAlignment);
  };
  int major = 1;
  size_t total = prefixed(2);
  if (total - kMagicSize - 4 > std::numeric_limits<uint16_t>::max()) {
    major = 2;
    total = prefixed(4);
  }
  const size_t length_bytes = major == 1 ? 2 : 4;
  const size_t header_len = total - kMagicSize - 2 - length_bytes;
  std::string out;
  out.reserve(total + t.TotalBytes());
  out.append(kMagic, kMagicSize);
  out.push_back(static_cast<char>(major));
  out.push_back(0);
  AppendLittleEndian(static_cast<uint32_t>(header_len), length_bytes, &out);
  out += dict;
  out.append(header_len - dict.size() - 1, ' ');
  out.push_back('\n');
  if (t.dtype() == DT_STRING) {
    out += strings;
  } else if (t.num_elements() > 0) {
    out.append(static_cast<const char*>(t.raw_data()), t.TotalBytes());
  }
  return out;
}

StatusOr<Tensor> ReadNpy(const std::string& path) {
  CFX_ASSIGN_OR_RETURN(std::string data, internal::ReadFileToString(path));
  return ParseNpy(data, path);
}

Status WriteNpy(const std::string& path, const Tensor& host_tensor) {
  auto data = SerializeNpy(host_tensor);
  if (!data.ok()) return data.status().WithPrefix(path + ": ");
  return internal::WriteStringToFile(path, *data);
}

}  // namespace cfx
