// The byte encoding of the distributed runtime's control messages and tensor metadata: little
// fixed-width integers and length-prefixed strings. A Reader checks every length against what is
// left and fails with a Status naming the message, never reading past the end.
#ifndef CONFLUX_CORE_SRC_DISTRIBUTED_WIRE_H_
#define CONFLUX_CORE_SRC_DISTRIBUTED_WIRE_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "conflux/status.h"

namespace cfx::internal {

class WireWriter {
 public:
  WireWriter& U8(uint8_t v) { return Raw(&v, 1); }
  WireWriter& I32(int32_t v) { return Raw(&v, 4); }
  WireWriter& I64(int64_t v) { return Raw(&v, 8); }
  WireWriter& U64(uint64_t v) { return Raw(&v, 8); }
  WireWriter& Bytes(std::string_view s) {
    U64(s.size());
    out_.append(s.data(), s.size());
    return *this;
  }
  std::string& str() { return out_; }

 private:
  WireWriter& Raw(const void* p, size_t n) {
    out_.append(static_cast<const char*>(p), n);
    return *this;
  }
  std::string out_;
};

class WireReader {
 public:
  // `what` names the message in errors ("RunGraph from /job:ps/replica:0/task:0").
  WireReader(std::string_view data, std::string what) : data_(data), what_(std::move(what)) {}
  Status U8(uint8_t* v) { return Raw(v, 1); }
  Status I32(int32_t* v) { return Raw(v, 4); }
  Status I64(int64_t* v) { return Raw(v, 8); }
  Status U64(uint64_t* v) { return Raw(v, 8); }
  Status Bytes(std::string* s) {
    uint64_t n = 0;
    CFX_RETURN_IF_ERROR(U64(&n));
    if (n > data_.size())
      return errors::DataLoss(what_, ": a field of ", n, " bytes but only ", data_.size(), " left");
    s->assign(data_.data(), n);
    data_.remove_prefix(n);
    return Status();
  }
  bool done() const { return data_.empty(); }

 private:
  Status Raw(void* p, size_t n) {
    if (data_.size() < n)
      return errors::DataLoss(what_, ": truncated (", n, " bytes wanted, ", data_.size(), " left)");
    std::memcpy(p, data_.data(), n);
    data_.remove_prefix(n);
    return Status();
  }
  std::string_view data_;
  std::string what_;
};

// A Status on the wire (code, message).
inline void WriteStatus(WireWriter& w, const Status& s) {
  w.I32(static_cast<int32_t>(s.code())).Bytes(s.message());
}
inline Status ReadStatus(WireReader& r, Status* out) {
  int32_t code = 0;
  std::string message;
  CFX_RETURN_IF_ERROR(r.I32(&code));
  CFX_RETURN_IF_ERROR(r.Bytes(&message));
  *out = code == 0 ? Status() : Status(static_cast<Code>(code), std::move(message));
  return Status();
}

}  // namespace cfx::internal

#endif  // CONFLUX_CORE_SRC_DISTRIBUTED_WIRE_H_
