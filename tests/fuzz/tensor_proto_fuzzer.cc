// libFuzzer target: a TensorProto's wire bytes decoded into a Tensor (dtype, shape validity,
// content sizes against the shape). Every input must end in a tensor or an error status.
#include <google/protobuf/stubs/logging.h>

#include <cstddef>
#include <cstdint>

#include "graph/tensor_proto.h"
#include "proto/tensor.pb.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool quiet = [] {
    google::protobuf::SetLogHandler(nullptr);  // malformed strings are expected, not news
    return true;
  }();
  (void)quiet;
  conflux::TensorProto proto;
  if (!proto.ParseFromArray(data, static_cast<int>(size))) return 0;
  (void)cfx::internal::TensorFromProto(proto);
  return 0;
}
