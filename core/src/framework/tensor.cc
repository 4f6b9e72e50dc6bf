// Tensor and TensorBuffer.
#include "conflux/tensor.h"

#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <new>
#include <sstream>

#include "framework/variant.h"

namespace cfx {
namespace {

// DT_RESOURCE elements are encoded resource handles, stored like strings.
bool HoldsStrings(DataType dtype) { return dtype == DT_STRING || dtype == DT_RESOURCE; }
bool HoldsVariants(DataType dtype) { return dtype == DT_VARIANT; }

size_t ElementBytes(DataType dtype) {
  if (HoldsStrings(dtype)) return sizeof(std::string);
  if (HoldsVariants(dtype)) return sizeof(Variant);
  return DataTypeSize(dtype);
}

}  // namespace

TensorBuffer* TensorBuffer::Allocate(Allocator* allocator, size_t bytes, DataType dtype,
                                     int64_t num_elements) {
  void* data = allocator->Allocate(bytes, kDefaultAlignment);
  if (data == nullptr) return nullptr;
  auto* buf = new TensorBuffer();
  buf->allocator_ = allocator;
  buf->data_ = data;
  buf->size_ = bytes;
  buf->dtype_ = dtype;
  buf->num_elements_ = num_elements;
  if (HoldsStrings(dtype)) {
    auto* s = static_cast<std::string*>(data);
    for (int64_t i = 0; i < num_elements; ++i) new (s + i) std::string();
  }
  if (HoldsVariants(dtype)) {
    auto* v = static_cast<Variant*>(data);
    for (int64_t i = 0; i < num_elements; ++i) new (v + i) Variant();
  }
  return buf;
}

TensorBuffer::~TensorBuffer() {
  if (HoldsStrings(dtype_)) {
    auto* s = static_cast<std::string*>(data_);
    for (int64_t i = 0; i < num_elements_; ++i) s[i].~basic_string();
  }
  if (HoldsVariants(dtype_)) {
    auto* v = static_cast<Variant*>(data_);
    for (int64_t i = 0; i < num_elements_; ++i) v[i].~Variant();
  }
  allocator_->Deallocate(data_, size_);
}

void TensorBuffer::Unref() const {
  if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
}

namespace {
// Bytes of a `dtype` tensor of `shape`, or -1 when the shape is not valid or its bytes do not fit
// int64 (a shape of 2^62 int64 elements is a valid shape but not an allocatable one).
int64_t CheckedBytes(const TensorShape& shape, DataType dtype) {
  const int64_t elements = shape.num_elements();
  int64_t bytes = 0;
  if (elements < 0 ||
      __builtin_mul_overflow(elements, static_cast<int64_t>(ElementBytes(dtype)), &bytes))
    return -1;
  return bytes;
}
}  // namespace

Tensor::Tensor(Allocator* allocator, DataType dtype, const TensorShape& shape)
    : dtype_(dtype), shape_(shape) {
  const int64_t bytes = CheckedBytes(shape, dtype);
  if (bytes < 0) return;  // not initialized: Allocate says why
  buf_ = TensorBuffer::Allocate(allocator, static_cast<size_t>(bytes), dtype,
                                shape.num_elements());
}

Tensor::Tensor(DataType dtype, const TensorShape& shape) : Tensor(HostAllocator(), dtype, shape) {}

StatusOr<Tensor> Tensor::Allocate(Allocator* allocator, DataType dtype, const TensorShape& shape) {
  if (shape.num_elements() < 0 || shape.rank() > kMaxRank)  // a shape built unchecked
    CFX_RETURN_IF_ERROR(TensorShape::Make(shape.dims()).status());
  if (CheckedBytes(shape, dtype) < 0)
    return errors::InvalidArgument("a ", DataTypeString(dtype), " tensor of shape ",
                                   shape.ToString(), " would need more than 2^63-1 bytes");
  Tensor t(allocator, dtype, shape);
  if (!t.IsInitialized()) {
    const AllocatorStats stats = allocator->stats();
    return errors::ResourceExhausted(
        "out of memory allocating ", t.TotalBytes(), " bytes for a ", DataTypeString(dtype),
        " tensor of shape ", shape.ToString(), " on ", allocator->name(), " (", stats.bytes_in_use,
        " bytes in use, limit ",
        stats.bytes_limit > 0 ? std::to_string(stats.bytes_limit) : std::string("none"), ")");
  }
  return t;
}

size_t Tensor::TotalBytes() const {
  const int64_t bytes = CheckedBytes(shape_, dtype_);
  return bytes < 0 ? 0 : static_cast<size_t>(bytes);
}

StatusOr<Tensor> Tensor::DeepCopy(Allocator* allocator) const {
  CFX_ASSIGN_OR_RETURN(
      Tensor copy, Allocate(allocator != nullptr ? allocator : HostAllocator(), dtype_, shape_));
  if (dtype_ == DT_STRING) {
    for (int64_t i = 0; i < num_elements(); ++i) copy.at<std::string>(i) = at<std::string>(i);
  } else if (HoldsVariants(dtype_)) {
    for (int64_t i = 0; i < num_elements(); ++i) copy.at<Variant>(i) = at<Variant>(i);
  } else if (TotalBytes() > 0) {
    std::memcpy(copy.raw_data(), raw_data(), TotalBytes());
  }
  return copy;
}

StatusOr<Tensor> Tensor::Reshaped(const TensorShape& shape) const {
  if (shape.num_elements() != num_elements())
    return errors::InvalidArgument("cannot reshape a tensor of shape ", shape_.ToString(), " (",
                                   num_elements(), " elements) to ", shape.ToString(), " (",
                                   shape.num_elements(), " elements)");
  Tensor t(*this);
  t.shape_ = shape;
  return t;
}

bool Tensor::Equals(const Tensor& o) const {
  if (dtype_ != o.dtype_ || shape_ != o.shape_) return false;
  if (HoldsStrings(dtype_)) {
    for (int64_t i = 0; i < num_elements(); ++i)
      if (data<std::string>()[i] != o.data<std::string>()[i]) return false;
    return true;
  }
  if (HoldsVariants(dtype_)) {
    for (int64_t i = 0; i < num_elements(); ++i)
      if (data<Variant>()[i] != o.data<Variant>()[i]) return false;
    return true;
  }
  if (TotalBytes() == 0) return true;
  if (raw_data() == nullptr || o.raw_data() == nullptr) return raw_data() == o.raw_data();
  return std::memcmp(raw_data(), o.raw_data(), TotalBytes()) == 0;
}

namespace {
template <typename T>
void AppendValue(std::ostringstream& out, const void* data, int64_t i) {
  T v;
  std::memcpy(&v, static_cast<const char*>(data) + i * sizeof(T), sizeof(T));
  if constexpr (sizeof(T) == 1 && !std::is_same_v<T, bool>) {
    out << static_cast<int>(v);
  } else {
    out << v;
  }
}
}  // namespace

std::string Tensor::DebugString(int max_elements) const {
  std::ostringstream out;
  out << DataTypeString(dtype_) << " " << shape_.ToString();
  if (buf_ == nullptr) return out.str() + " <no buffer>";
  if (!buf_->allocator()->host_addressable()) return out.str() + " <device memory>";
  out << " {";
  int64_t n = std::min<int64_t>(num_elements(), max_elements);
  for (int64_t i = 0; i < n; ++i) {
    if (i) out << ", ";
    switch (dtype_) {
      case DT_FLOAT:
        AppendValue<float>(out, raw_data(), i);
        break;
      case DT_DOUBLE:
        AppendValue<double>(out, raw_data(), i);
        break;
      case DT_INT32:
        AppendValue<int32_t>(out, raw_data(), i);
        break;
      case DT_INT64:
        AppendValue<int64_t>(out, raw_data(), i);
        break;
      case DT_INT16:
        AppendValue<int16_t>(out, raw_data(), i);
        break;
      case DT_INT8:
        AppendValue<int8_t>(out, raw_data(), i);
        break;
      case DT_UINT8:
        AppendValue<uint8_t>(out, raw_data(), i);
        break;
      case DT_UINT16:
        AppendValue<uint16_t>(out, raw_data(), i);
        break;
      case DT_UINT32:
        AppendValue<uint32_t>(out, raw_data(), i);
        break;
      case DT_UINT64:
        AppendValue<uint64_t>(out, raw_data(), i);
        break;
      case DT_BOOL:
        out << (data<bool>()[i] ? "true" : "false");
        break;
      case DT_STRING:
        out << '"' << data<std::string>()[i] << '"';
        break;
      case DT_VARIANT: {
        const Variant& v = data<Variant>()[i];
        out << (v != nullptr ? v->DebugString() : std::string("<empty variant>"));
        break;
      }
      default:
        out << "?";
        break;
    }
  }
  if (num_elements() > n) out << ", ...";
  out << "}";
  return out.str();
}

}  // namespace cfx
