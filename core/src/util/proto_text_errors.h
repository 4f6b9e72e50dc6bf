// The first error of protobuf's text-format parser, for error messages: install with
// `parser.RecordErrorsTo(&collector)`. Warnings (unknown fields the parser was told to allow)
// are dropped instead of logged.
#ifndef CONFLUX_CORE_SRC_UTIL_PROTO_TEXT_ERRORS_H_
#define CONFLUX_CORE_SRC_UTIL_PROTO_TEXT_ERRORS_H_

#include <google/protobuf/io/tokenizer.h>

#include <string>

#include "conflux/status.h"

namespace cfx::internal {

// Keeps the first error as "line:column: message" (1-based).
class FirstErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (!first_.empty()) return;
    first_ = line < 0 ? message : StrCat(line + 1, ":", column + 1, ": ", message);
  }
  void AddWarning(int, google::protobuf::io::ColumnNumber, const std::string&) override {}
  const std::string& first() const { return first_; }

 private:
  std::string first_;
};

}  // namespace cfx::internal

#endif  // CONFLUX_CORE_SRC_UTIL_PROTO_TEXT_ERRORS_H_
