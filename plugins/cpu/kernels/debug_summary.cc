// SummarizeValue, in TensorFlow's format for Assert and Print (Tensor::SummarizeValue).
#include "kernels/debug_summary.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "conflux/sdk/float16.h"

namespace cfx::cpu {

namespace {

// Shortest of `short_digits` and `long_digits` significant digits that reads back exactly.
template <typename F>
std::string FormatFloat(F v, int short_digits, int long_digits) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.*g", short_digits, static_cast<double>(v));
  F back;
  if constexpr (sizeof(F) == sizeof(float)) {
    back = std::strtof(buf, nullptr);
  } else {
    back = std::strtod(buf, nullptr);
  }
  if (back != v) std::snprintf(buf, sizeof(buf), "%.*g", long_digits, static_cast<double>(v));
  return buf;
}

// C-style escape of a byte string, in double quotes.
std::string QuoteString(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\'':
        out += "\\'";
        break;
      default:
        if (c < 0x20 || c >= 0x7F) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\%03o", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

template <typename T>
std::string FormatInteger(const void* data, int64_t i) {
  T v;
  std::memcpy(&v, static_cast<const char*>(data) + i * sizeof(T), sizeof(T));
  if constexpr (std::is_signed_v<T>) {
    return std::to_string(static_cast<long long>(v));
  } else {
    return std::to_string(static_cast<unsigned long long>(v));
  }
}

// Element i of `t` as text.
std::string FormatElement(const sdk::Tensor& t, int64_t i) {
  const void* p = t.raw_data();
  switch (t.dtype()) {
    case CFX_FLOAT:
      return FormatFloat(t.data<float>()[i], 6, 9);
    case CFX_DOUBLE:
      return FormatFloat(t.data<double>()[i], 15, 17);
    case CFX_HALF:
      return FormatFloat(sdk::HalfToFloat(t.data<uint16_t>()[i]), 6, 9);
    case CFX_BFLOAT16:
      return FormatFloat(sdk::Bfloat16ToFloat(t.data<uint16_t>()[i]), 6, 9);
    case CFX_COMPLEX64:
      return "(" + FormatFloat(t.data<float>()[2 * i], 6, 9) + "," +
             FormatFloat(t.data<float>()[2 * i + 1], 6, 9) + ")";
    case CFX_COMPLEX128:
      return "(" + FormatFloat(t.data<double>()[2 * i], 15, 17) + "," +
             FormatFloat(t.data<double>()[2 * i + 1], 15, 17) + ")";
    case CFX_BOOL:
      return t.data<uint8_t>()[i] ? "1" : "0";
    case CFX_STRING:
      return QuoteString(t.string(i));
    case CFX_INT8:
    case CFX_QINT8:
      return FormatInteger<int8_t>(p, i);
    case CFX_UINT8:
    case CFX_QUINT8:
      return FormatInteger<uint8_t>(p, i);
    case CFX_INT16:
    case CFX_QINT16:
      return FormatInteger<int16_t>(p, i);
    case CFX_UINT16:
    case CFX_QUINT16:
      return FormatInteger<uint16_t>(p, i);
    case CFX_INT32:
    case CFX_QINT32:
      return FormatInteger<int32_t>(p, i);
    case CFX_UINT32:
      return FormatInteger<uint32_t>(p, i);
    case CFX_INT64:
      return FormatInteger<int64_t>(p, i);
    case CFX_UINT64:
      return FormatInteger<uint64_t>(p, i);
    default:
      return "?";
  }
}

// One dimension of the nested form; advances *index through the elements in row-major order.
void SummarizeDim(const sdk::Tensor& t, const sdk::Shape& shape, int dim, int64_t limit,
                  int64_t* index, std::string* out) {
  if (*index >= limit) return;
  const int64_t count = shape[dim];
  if (dim == static_cast<int>(shape.size()) - 1) {
    for (int64_t i = 0; i < count; ++i) {
      if (*index >= limit) {
        if (dim != 0) *out += "...";
        return;
      }
      if (i > 0) *out += " ";
      *out += FormatElement(t, (*index)++);
    }
    return;
  }
  for (int64_t i = 0; i < count; ++i) {
    const bool opened = *index < limit;
    if (opened) *out += "[";
    SummarizeDim(t, shape, dim + 1, limit, index, out);
    if (opened) *out += "]";
  }
}

}  // namespace

std::string SummarizeValue(const sdk::Tensor& t, int64_t max_entries) {
  const int64_t n = t.num_elements();
  const int64_t limit = max_entries < 0 ? n : std::min(max_entries, n);
  std::string out;
  const sdk::Shape shape = t.shape();
  if (shape.size() <= 1) {
    for (int64_t i = 0; i < limit; ++i) {
      if (i > 0) out += " ";
      out += FormatElement(t, i);
    }
  } else {
    int64_t index = 0;
    SummarizeDim(t, shape, 0, limit, &index, &out);
  }
  if (n > limit) out += "...";
  return out;
}

}  // namespace cfx::cpu
