// Tensor <-> TensorProto, DataType and shape conversions, following TensorFlow's decoding rules
// (tensor_content first; else the dtype's typed field, padded with its last value) but stricter
// where TensorFlow would silently ignore data: values in another dtype's field, more values than
// elements, and tensor_content together with typed values are errors.
#include "graph/tensor_proto.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "proto/tensor.pb.h"
#include "proto/tensor_shape.pb.h"
#include "proto/types.pb.h"

namespace cfx::internal {
namespace {

namespace pb = ::conflux;

struct ValueField {
  const char* name;
  int64_t count;
};

// Every typed value field of a TensorProto with its number of values.
std::array<ValueField, 14> ValueFields(const pb::TensorProto& p) {
  return {{{"half_val", p.half_val_size()},
           {"float_val", p.float_val_size()},
           {"double_val", p.double_val_size()},
           {"int_val", p.int_val_size()},
           {"string_val", p.string_val_size()},
           {"scomplex_val", p.scomplex_val_size()},
           {"int64_val", p.int64_val_size()},
           {"bool_val", p.bool_val_size()},
           {"dcomplex_val", p.dcomplex_val_size()},
           {"resource_handle_val", p.resource_handle_val_size()},
           {"variant_val", p.variant_val_size()},
           {"uint32_val", p.uint32_val_size()},
           {"uint64_val", p.uint64_val_size()},
           {"float8_val", static_cast<int64_t>(p.float8_val().size())}}};
}

// The typed field that holds values of `dtype` (TensorFlow's choice), nullptr for none.
const char* ValueFieldOf(DataType dtype) {
  switch (dtype) {
    case DT_HALF:
    case DT_BFLOAT16:
      return "half_val";
    case DT_FLOAT:
      return "float_val";
    case DT_DOUBLE:
      return "double_val";
    case DT_INT32:
    case DT_INT16:
    case DT_INT8:
    case DT_UINT16:
    case DT_UINT8:
    case DT_QINT32:
    case DT_QINT16:
    case DT_QUINT16:
    case DT_QINT8:
    case DT_QUINT8:
      return "int_val";
    case DT_STRING:
      return "string_val";
    case DT_COMPLEX64:
      return "scomplex_val";
    case DT_INT64:
      return "int64_val";
    case DT_BOOL:
      return "bool_val";
    case DT_COMPLEX128:
      return "dcomplex_val";
    case DT_UINT32:
      return "uint32_val";
    case DT_UINT64:
      return "uint64_val";
    default:
      return nullptr;
  }
}

// Fields from a newer TensorFlow that these protos do not declare; kept by protobuf on parse.
bool HasUnknownFields(const google::protobuf::Message& message) {
  return !message.GetReflection()->GetUnknownFields(message).empty();
}

int64_t TotalValues(const pb::TensorProto& p) {
  int64_t total = 0;
  for (const ValueField& field : ValueFields(p)) total += field.count;
  return total;
}

// Copies `values` into `n` elements of `parts` scalars each (2 for complex numbers), padding with
// the last element, or with zeros when there are no values.
template <typename Dst, typename Values>
Status CopyPadded(const Values& values, const char* field, int parts, int64_t n, Dst* out) {
  const int64_t count = values.size();
  if (count % parts != 0)
    return errors::InvalidArgument(field, " holds ", count,
                                   " values, not whole (real, imaginary) pairs");
  const int64_t given = count / parts;
  if (given > n)
    return errors::InvalidArgument(field, " holds ", given, " values for a tensor of ", n,
                                   " elements");
  for (int64_t i = 0; i < count; ++i) out[i] = static_cast<Dst>(values[i]);
  if (given == 0) {
    std::fill(out, out + n * parts, Dst());
    return Status::OK();
  }
  const Dst* last = out + (given - 1) * parts;
  if (parts == 1) {  // one fill, not an element-wise copy: up to kMaxDecodedTensorBytes of it
    std::fill(out + given, out + n, *last);
    return Status::OK();
  }
  for (int64_t e = given; e < n; ++e) std::copy(last, last + parts, out + e * parts);
  return Status::OK();
}

Status FillFromValues(const pb::TensorProto& p, Tensor& t) {
  const int64_t n = t.num_elements();
  const char* field = ValueFieldOf(t.dtype());
  switch (t.dtype()) {
    case DT_FLOAT:
      return CopyPadded(p.float_val(), field, 1, n, t.data<float>());
    case DT_DOUBLE:
      return CopyPadded(p.double_val(), field, 1, n, t.data<double>());
    case DT_INT32:
    case DT_QINT32:
      return CopyPadded(p.int_val(), field, 1, n, t.data<int32_t>());
    case DT_INT16:
    case DT_QINT16:
      return CopyPadded(p.int_val(), field, 1, n, t.data<int16_t>());
    case DT_UINT16:
    case DT_QUINT16:
      return CopyPadded(p.int_val(), field, 1, n, t.data<uint16_t>());
    case DT_INT8:
    case DT_QINT8:
      return CopyPadded(p.int_val(), field, 1, n, t.data<int8_t>());
    case DT_UINT8:
    case DT_QUINT8:
      return CopyPadded(p.int_val(), field, 1, n, t.data<uint8_t>());
    case DT_INT64:
      return CopyPadded(p.int64_val(), field, 1, n, t.data<int64_t>());
    case DT_UINT32:
      return CopyPadded(p.uint32_val(), field, 1, n, t.data<uint32_t>());
    case DT_UINT64:
      return CopyPadded(p.uint64_val(), field, 1, n, t.data<uint64_t>());
    case DT_BOOL:
      return CopyPadded(p.bool_val(), field, 1, n, t.data<bool>());
    // The 16-bit payload sits in the low bits of each int32.
    case DT_HALF:
    case DT_BFLOAT16:
      return CopyPadded(p.half_val(), field, 1, n, t.data<uint16_t>());
    case DT_COMPLEX64:
      return CopyPadded(p.scomplex_val(), field, 2, n, t.data<float>());
    case DT_COMPLEX128:
      return CopyPadded(p.dcomplex_val(), field, 2, n, t.data<double>());
    case DT_STRING:
      return CopyPadded(p.string_val(), field, 1, n, t.data<std::string>());
    default:
      return errors::Unimplemented("cannot decode ", DataTypeString(t.dtype()), " tensors");
  }
}

bool ReadVarint32(const char*& p, const char* end, uint32_t* value) {
  uint32_t result = 0;
  for (int shift = 0; shift <= 28 && p < end; shift += 7) {
    const auto byte = static_cast<uint8_t>(*p++);
    result |= static_cast<uint32_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *value = result;
      return true;
    }
  }
  return false;
}

// TensorFlow's tensor_content for strings: the n lengths as varint32s, then the n strings.
Status DecodeStringContent(const std::string& content, int64_t n, std::string* out) {
  // Each length takes at least one byte: a cheap bound before reading n varints.
  if (static_cast<int64_t>(content.size()) < n)
    return errors::InvalidArgument("tensor_content of ", content.size(), " bytes is too short for ",
                                   n, " strings");
  const char* p = content.data();
  const char* end = p + content.size();
  std::vector<uint32_t> sizes(n);
  int64_t total = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!ReadVarint32(p, end, &sizes[i]))
      return errors::InvalidArgument("tensor_content: bad length of string ", i);
    total += sizes[i];
  }
  if (total != end - p)
    return errors::InvalidArgument("tensor_content: string lengths add up to ", total,
                                   " bytes but ", end - p, " bytes follow them");
  for (int64_t i = 0; i < n; ++i) {
    out[i].assign(p, sizes[i]);
    p += sizes[i];
  }
  return Status::OK();
}

Status DecodeContent(const std::string& content, Tensor& t) {
  const int64_t n = t.num_elements();
  if (t.dtype() == DT_STRING) return DecodeStringContent(content, n, t.data<std::string>());
  const size_t expected = static_cast<size_t>(n) * DataTypeSize(t.dtype());
  if (content.size() != expected)
    return errors::InvalidArgument("tensor_content has ", content.size(), " bytes but a ",
                                   DataTypeString(t.dtype()), " tensor of shape ",
                                   t.shape().ToString(), " needs ", expected);
  if (t.dtype() == DT_BOOL) {
    // Any non-zero byte is true; copying it raw would make a bool that is neither.
    for (int64_t i = 0; i < n; ++i) t.data<bool>()[i] = content[i] != 0;
  } else if (expected > 0) {
    std::memcpy(t.raw_data(), content.data(), expected);
  }
  return Status::OK();
}

StatusOr<TensorShape> TensorShapeFromProto(const pb::TensorShapeProto& proto) {
  CFX_ASSIGN_OR_RETURN(PartialTensorShape partial, PartialShapeFromProto(proto));
  if (!partial.IsFullyDefined())
    return errors::InvalidArgument("a tensor's shape must be fully defined, not ",
                                   partial.ToString());
  return TensorShape::Make(partial.dims());
}

}  // namespace

StatusOr<DataType> DataTypeFromProto(int value, bool allow_ref, bool allow_invalid) {
  if (!pb::DataType_IsValid(value))
    return errors::InvalidArgument("unknown DataType value ", value);
  if (value == DT_INVALID) {
    if (allow_invalid) return DT_INVALID;
    return errors::InvalidArgument("DT_INVALID is not a valid type here");
  }
  const auto type = static_cast<DataType>(value);
  if (IsRefType(type) && !allow_ref)
    return errors::InvalidArgument("reference type ", pb::DataType_Name(value),
                                   " is not allowed here");
  if (!IsValidDataType(BaseType(type)))
    return errors::Unimplemented("type ", pb::DataType_Name(value), " is not supported by Conflux");
  return type;
}

StatusOr<PartialTensorShape> PartialShapeFromProto(const pb::TensorShapeProto& proto) {
  if (proto.unknown_rank()) {
    if (proto.dim_size() > 0)
      return errors::InvalidArgument("a shape of unknown rank has ", proto.dim_size(), " dims");
    return PartialTensorShape::UnknownRank();
  }
  if (proto.dim_size() > kMaxRank)
    return errors::InvalidArgument("a shape of rank ", proto.dim_size(), " exceeds the maximum ",
                                   kMaxRank);
  std::vector<int64_t> dims;
  dims.reserve(proto.dim_size());
  // TensorFlow's grappler writes symbolic dimensions (-2, -3, ...: unknown, but equal where the
  // number is) in the shapes it records (`_input_shapes`); here they are simply unknown.
  for (const pb::TensorShapeProto::Dim& dim : proto.dim())
    dims.push_back(dim.size() < kUnknownDim ? kUnknownDim : dim.size());
  return PartialTensorShape::Make(std::move(dims));  // the known dims' product fits int64
}

void PartialShapeToProto(const PartialTensorShape& shape, pb::TensorShapeProto* proto) {
  proto->Clear();
  if (shape.unknown_rank()) {
    proto->set_unknown_rank(true);
    return;
  }
  for (int64_t d : shape.dims()) proto->add_dim()->set_size(d);
}

Status ConstantBudget::Take(int64_t bytes, const std::string& what) {
  if (bytes > left_)
    return errors::ResourceExhausted(what, " decodes to ", bytes, " bytes, more than the ", left_,
                                     " left of the graph's ", limit_,
                                     " for constants (config key limits.constant_bytes)");
  left_ -= bytes;
  return Status::OK();
}

StatusOr<Tensor> TensorFromProto(const pb::TensorProto& proto, ConstantBudget* budget) {
  CFX_ASSIGN_OR_RETURN(DataType dtype, DataTypeFromProto(proto.dtype(), /*allow_ref=*/false,
                                                         /*allow_invalid=*/false));
  const char* field = ValueFieldOf(dtype);
  if (field == nullptr || (dtype != DT_STRING && DataTypeSize(dtype) == 0))
    return errors::Unimplemented("cannot decode ", DataTypeString(dtype), " tensors");
  CFX_ASSIGN_OR_RETURN(TensorShape shape, TensorShapeFromProto(proto.tensor_shape()));

  const int64_t n = shape.num_elements();
  const int64_t element_bytes = dtype == DT_STRING ? sizeof(std::string) : DataTypeSize(dtype);
  if (n > kMaxDecodedTensorBytes / element_bytes)
    return errors::ResourceExhausted("a ", DataTypeString(dtype), " tensor of shape ",
                                     shape.ToString(), " is larger than the ",
                                     kMaxDecodedTensorBytes, " bytes a TensorProto may decode to");
  if (budget != nullptr)
    CFX_RETURN_IF_ERROR(budget->Take(
        n * element_bytes,
        StrCat("a ", DataTypeString(dtype), " tensor of shape ", shape.ToString())));
  CFX_ASSIGN_OR_RETURN(Tensor tensor, Tensor::Allocate(HostAllocator(), dtype, shape));
  // As TensorFlow: an empty tensor ignores whatever values came with it.
  if (n == 0) return tensor;

  for (const ValueField& other : ValueFields(proto)) {
    if (other.count > 0 && std::strcmp(other.name, field) != 0)
      return errors::InvalidArgument("a ", DataTypeString(dtype), " tensor has values in ",
                                     other.name, " (expected ", field, ")");
  }
  if (!proto.tensor_content().empty()) {
    if (TotalValues(proto) > 0)
      return errors::InvalidArgument("a tensor has both tensor_content and ", field);
    CFX_RETURN_IF_ERROR(DecodeContent(proto.tensor_content(), tensor));
  } else {
    CFX_RETURN_IF_ERROR(FillFromValues(proto, tensor));
  }
  return tensor;
}

Status TensorToProto(const Tensor& tensor, pb::TensorProto* proto) {
  proto->Clear();
  proto->set_dtype(static_cast<pb::DataType>(tensor.dtype()));
  PartialShapeToProto(tensor.shape(), proto->mutable_tensor_shape());
  const int64_t n = tensor.num_elements();
  if (n == 0) return Status::OK();
  if (!tensor.IsInitialized())
    return errors::FailedPrecondition("a ", DataTypeString(tensor.dtype()), " tensor of shape ",
                                      tensor.shape().ToString(), " has no buffer to encode");
  if (!tensor.buffer()->allocator()->host_addressable())
    return errors::FailedPrecondition("cannot encode a tensor in device memory (",
                                      tensor.buffer()->allocator()->name(), ")");
  if (tensor.dtype() == DT_STRING) {
    for (int64_t i = 0; i < n; ++i) proto->add_string_val(tensor.data<std::string>()[i]);
    return Status::OK();
  }
  if (DataTypeSize(tensor.dtype()) == 0)
    return errors::Unimplemented("cannot encode ", DataTypeString(tensor.dtype()), " tensors");
  proto->set_tensor_content(static_cast<const char*>(tensor.raw_data()), tensor.TotalBytes());
  return Status::OK();
}

bool IsCanonicalTensorProto(const pb::TensorProto& proto, const Tensor& tensor) {
  if (proto.version_number() != 0 || !proto.has_tensor_shape() || HasUnknownFields(proto) ||
      HasUnknownFields(proto.tensor_shape()) || proto.tensor_shape().unknown_rank()) {
    return false;
  }
  for (const pb::TensorShapeProto::Dim& dim : proto.tensor_shape().dim())
    if (!dim.name().empty() || HasUnknownFields(dim)) return false;
  const int64_t n = tensor.num_elements();
  if (n == 0) return proto.tensor_content().empty() && TotalValues(proto) == 0;
  if (tensor.dtype() == DT_STRING)
    return proto.tensor_content().empty() && proto.string_val_size() == n;
  // Numbers: canonical only as tensor_content (of the right size, as TensorFromProto checked).
  if (proto.tensor_content().empty() || TotalValues(proto) > 0) return false;
  if (tensor.dtype() == DT_BOOL) {
    const std::string& content = proto.tensor_content();
    return std::all_of(content.begin(), content.end(), [](char c) { return c == 0 || c == 1; });
  }
  return true;
}

}  // namespace cfx::internal
