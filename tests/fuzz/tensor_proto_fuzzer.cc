// libFuzzer target: a TensorProto's wire bytes decoded into a Tensor (dtype, shape validity,
// content sizes against the shape). Every input must end in a tensor or an error status. The
// decode takes its size from a 64 MiB budget, as a graph's constants do from
// limits.constant_bytes: a 30-byte proto may ask for 2 GiB (kMaxDecodedTensorBytes), whose fill
// takes seconds and says nothing new (tests/graph/tensor_proto_test.cc covers that bound).
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
  cfx::internal::ConstantBudget budget(int64_t{64} << 20);
  (void)cfx::internal::TensorFromProto(proto, &budget);
  return 0;
}
