// Conversions between Conflux's Tensor, DataType and shapes and TensorFlow's TensorProto,
// DataType enum and TensorShapeProto (our own protos with TensorFlow's field numbers).
//
// Stateless functions, safe to call from any thread. Errors say what is wrong with the proto but
// not where it came from: callers prefix the node and attr.
#ifndef CONFLUX_GRAPH_TENSOR_PROTO_H_
#define CONFLUX_GRAPH_TENSOR_PROTO_H_

#include <cstdint>
#include <string>

#include "conflux/status.h"
#include "conflux/tensor.h"
#include "conflux/tensor_shape.h"
#include "conflux/types.h"

namespace conflux {
class TensorProto;
class TensorShapeProto;
}  // namespace conflux

namespace cfx::internal {

// The largest tensor a TensorProto may decode to, in bytes of host memory. A short *_val list is
// padded to the full shape, so a few bytes of proto can ask for any size; this bounds it at
// protobuf's own 2 GiB message limit.
inline constexpr int64_t kMaxDecodedTensorBytes = int64_t{1} << 31;

// What the constants of one graph (or function library) may still decode to, in bytes: every
// tensor attr read from it takes its decoded size from one budget, so that many small protos that
// each pad to kMaxDecodedTensorBytes cannot ask for more memory than the graph's limit
// (GraphLimits::max_constant_bytes, config key limits.constant_bytes) in all. Not thread-safe.
class ConstantBudget {
 public:
  explicit ConstantBudget(int64_t limit) : limit_(limit), left_(limit) {}
  // Takes `bytes` for a tensor described by `what`; ResourceExhausted naming the limit and its
  // config key when they do not fit in what is left.
  Status Take(int64_t bytes, const std::string& what);

 private:
  int64_t limit_, left_;
};

// A DataType enum value read from a proto. InvalidArgument for values TensorFlow does not define
// and Unimplemented for TensorFlow types Conflux does not support (float8, int4, ...). Reference
// types (base + 100) are accepted only when `allow_ref`; DT_INVALID only when `allow_invalid`.
StatusOr<DataType> DataTypeFromProto(int value, bool allow_ref, bool allow_invalid);

// A shape attr: unknown rank, or dims of size >= 0 or -1 (unknown). Dimension names are
// dropped. InvalidArgument for dims below -1, for dims with unknown_rank, or rank > kMaxRank.
StatusOr<PartialTensorShape> PartialShapeFromProto(const conflux::TensorShapeProto& proto);
void PartialShapeToProto(const PartialTensorShape& shape, conflux::TensorShapeProto* proto);

// Decodes a TensorProto into a new host tensor, from tensor_content or from the typed *_val field
// of the dtype (a short list is padded with its last value; an empty one gives zeros).
// InvalidArgument when the content does not match the shape and dtype, when values sit in a field
// of another dtype, or when the shape is not fully defined; Unimplemented for DT_RESOURCE,
// DT_VARIANT and types Conflux does not support; ResourceExhausted past kMaxDecodedTensorBytes,
// past what is left of `budget` (when given; checked before anything is allocated), or when the
// host allocator fails.
StatusOr<Tensor> TensorFromProto(const conflux::TensorProto& proto,
                                 ConstantBudget* budget = nullptr);

// Encodes a host tensor: dtype, shape, and tensor_content (string_val for DT_STRING).
// FailedPrecondition for a non-empty tensor without a buffer or in device memory; Unimplemented
// for dtypes without a fixed element size other than DT_STRING.
Status TensorToProto(const Tensor& tensor, conflux::TensorProto* proto);

// True when TensorToProto(tensor) gives exactly `proto`, so a reader need not keep the proto's
// bytes to write it back unchanged. `tensor` must be TensorFromProto(proto).
bool IsCanonicalTensorProto(const conflux::TensorProto& proto, const Tensor& tensor);

}  // namespace cfx::internal

#endif  // CONFLUX_GRAPH_TENSOR_PROTO_H_
