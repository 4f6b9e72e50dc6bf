// Conflux plugin SDK: tensors and attributes.
//
// Tensor is a non-owning view of a host tensor handle (valid while the kernel call or the owner
// lasts); TensorRef owns one reference. Attrs reads a node's attributes with typed getters that
// return errors naming the node and the attr.
#ifndef CONFLUX_SDK_TENSOR_H_
#define CONFLUX_SDK_TENSOR_H_

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "conflux/sdk/status.h"

namespace cfx::sdk {

using Shape = std::vector<int64_t>;

// C++ type <-> cfx_dtype for the types that have a natural C++ spelling.
template <typename T>
struct DTypeOf;
#define CFX_SDK_DTYPE(T, D)               \
  template <>                             \
  struct DTypeOf<T> {                     \
    static constexpr cfx_dtype value = D; \
  }
CFX_SDK_DTYPE(float, CFX_FLOAT);
CFX_SDK_DTYPE(double, CFX_DOUBLE);
CFX_SDK_DTYPE(int32_t, CFX_INT32);
CFX_SDK_DTYPE(int64_t, CFX_INT64);
CFX_SDK_DTYPE(uint8_t, CFX_UINT8);
CFX_SDK_DTYPE(int8_t, CFX_INT8);
CFX_SDK_DTYPE(int16_t, CFX_INT16);
CFX_SDK_DTYPE(uint16_t, CFX_UINT16);
CFX_SDK_DTYPE(uint32_t, CFX_UINT32);
CFX_SDK_DTYPE(uint64_t, CFX_UINT64);
CFX_SDK_DTYPE(bool, CFX_BOOL);
#undef CFX_SDK_DTYPE
template <typename T>
inline constexpr cfx_dtype kDType = DTypeOf<T>::value;

// TensorFlow's lower-case type name ("float", "int32"), for error messages.
// Bytes per element of a fixed-size dtype; 0 for string, resource, variant and invalid.
inline size_t DTypeSize(cfx_dtype dtype) {
  switch (dtype) {
    case CFX_BOOL:
    case CFX_INT8:
    case CFX_UINT8:
    case CFX_QINT8:
    case CFX_QUINT8:
      return 1;
    case CFX_INT16:
    case CFX_UINT16:
    case CFX_QINT16:
    case CFX_QUINT16:
    case CFX_HALF:
    case CFX_BFLOAT16:
      return 2;
    case CFX_FLOAT:
    case CFX_INT32:
    case CFX_UINT32:
    case CFX_QINT32:
      return 4;
    case CFX_DOUBLE:
    case CFX_INT64:
    case CFX_UINT64:
    case CFX_COMPLEX64:
      return 8;
    case CFX_COMPLEX128:
      return 16;
    default:
      return 0;
  }
}

inline const char* DTypeName(cfx_dtype d) {
  switch (d) {
    case CFX_FLOAT:
      return "float";
    case CFX_DOUBLE:
      return "double";
    case CFX_INT32:
      return "int32";
    case CFX_UINT8:
      return "uint8";
    case CFX_INT16:
      return "int16";
    case CFX_INT8:
      return "int8";
    case CFX_STRING:
      return "string";
    case CFX_COMPLEX64:
      return "complex64";
    case CFX_INT64:
      return "int64";
    case CFX_BOOL:
      return "bool";
    case CFX_BFLOAT16:
      return "bfloat16";
    case CFX_UINT16:
      return "uint16";
    case CFX_COMPLEX128:
      return "complex128";
    case CFX_HALF:
      return "half";
    case CFX_RESOURCE:
      return "resource";
    case CFX_VARIANT:
      return "variant";
    case CFX_UINT32:
      return "uint32";
    case CFX_UINT64:
      return "uint64";
    default:
      return "invalid";
  }
}

// "[2,3,4]"
inline std::string ShapeString(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ",";
    out += std::to_string(s[i]);
  }
  return out + "]";
}

// The product of the dims of a valid shape; the int64 maximum when it does not fit int64 (no
// valid shape: the host refuses to allocate it).
inline int64_t NumElements(const Shape& s) {
  int64_t n = 1;
  bool overflow = false;
  for (int64_t d : s) {
    if (d == 0) return 0;
    overflow = overflow || __builtin_mul_overflow(n, d, &n);
  }
  return overflow ? std::numeric_limits<int64_t>::max() : n;
}

// Non-owning view of a tensor handle.
class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(const cfx_tensor* t) : t_(t) {}
  const cfx_tensor* handle() const { return t_; }
  bool valid() const { return t_ != nullptr; }
  cfx_dtype dtype() const { return Host().tensor->dtype(t_); }
  int rank() const { return Host().tensor->rank(t_); }
  int64_t dim(int i) const { return Host().tensor->dim(t_, i); }
  int64_t num_elements() const { return Host().tensor->num_elements(t_); }
  size_t byte_size() const { return Host().tensor->byte_size(t_); }
  Shape shape() const {
    Shape s(rank());
    for (int i = 0; i < static_cast<int>(s.size()); ++i) s[i] = dim(i);
    return s;
  }
  void* raw_data() const { return Host().tensor->data(t_); }
  // Typed host pointer; T must match dtype() (checked by the caller's dispatch).
  template <typename T>
  T* data() const {
    return static_cast<T*>(raw_data());
  }
  std::string_view string(int64_t i) const {
    size_t n = 0;
    const char* p = Host().tensor->string(t_, i, &n);
    return std::string_view(p, n);
  }
  void set_string(int64_t i, std::string_view v) const {
    Host().tensor->set_string(const_cast<cfx_tensor*>(t_), i, v.data(), v.size());
  }

 private:
  const cfx_tensor* t_ = nullptr;
};

// Owns one reference to a tensor handle.
class TensorRef {
 public:
  TensorRef() = default;
  // Takes over a reference the caller already owns.
  static TensorRef Adopt(cfx_tensor* t) {
    TensorRef r;
    r.t_ = t;
    return r;
  }
  TensorRef(const TensorRef& o) : t_(o.t_ ? Host().tensor->share(o.t_) : nullptr) {}
  // A new owned handle sharing the buffer of a borrowed view (keeps it alive past the call).
  static TensorRef Share(Tensor t) { return Adopt(Host().tensor->share(t.handle())); }
  TensorRef& operator=(TensorRef o) {
    std::swap(t_, o.t_);
    return *this;
  }
  ~TensorRef() {
    if (t_) Host().tensor->release(t_);
  }
  Tensor view() const { return Tensor(t_); }
  cfx_tensor* handle() const { return t_; }

  // A new host tensor.
  static Result<TensorRef> NewHost(cfx_dtype dtype, const Shape& shape) {
    HostStatus s;
    cfx_tensor* t =
        Host().tensor->new_host(dtype, shape.data(), static_cast<int>(shape.size()), s.get());
    if (t == nullptr) return s.ToStatus();
    return Adopt(t);
  }

 private:
  cfx_tensor* t_ = nullptr;
};

// Unknown rank or dimension, as in attrs and shape inference.
inline constexpr int64_t kUnknown = -1;
struct PartialShape {
  bool unknown_rank = true;
  Shape dims;  // kUnknown for unknown dimensions
};

// Typed read access to one node's attributes.
class Attrs {
 public:
  explicit Attrs(const cfx_attrs* a) : a_(a) {}
  const cfx_attrs* handle() const { return a_; }
  std::string node_name() const { return Host().attr->node_name(a_); }
  bool Has(const char* name) const { return Host().attr->exists(a_, name) != 0; }

  Status Get(const char* name, int64_t* out) const { return Call(Host().attr->get_int, name, out); }
  Status Get(const char* name, int32_t* out) const {
    int64_t v = 0;
    CFX_SDK_RETURN_IF_ERROR(Get(name, &v));
    *out = static_cast<int32_t>(v);
    return Status();
  }
  Status Get(const char* name, float* out) const { return Call(Host().attr->get_float, name, out); }
  Status Get(const char* name, bool* out) const {
    uint8_t v = 0;
    CFX_SDK_RETURN_IF_ERROR(Call(Host().attr->get_bool, name, &v));
    *out = v != 0;
    return Status();
  }
  Status Get(const char* name, cfx_dtype* out) const {
    return Call(Host().attr->get_type, name, out);
  }
  Status Get(const char* name, std::string* out) const {
    const char* data = nullptr;
    size_t size = 0;
    HostStatus s;
    Host().attr->get_string(a_, name, &data, &size, s.get());
    CFX_SDK_RETURN_IF_ERROR(s.ToStatus());
    out->assign(data, size);
    return Status();
  }
  Status Get(const char* name, std::vector<int64_t>* out) const {
    return GetList(Host().attr->get_int_list, name, out);
  }
  Status Get(const char* name, std::vector<int32_t>* out) const {
    std::vector<int64_t> v;
    CFX_SDK_RETURN_IF_ERROR(Get(name, &v));
    out->assign(v.begin(), v.end());
    return Status();
  }
  Status Get(const char* name, std::vector<float>* out) const {
    return GetList(Host().attr->get_float_list, name, out);
  }
  Status Get(const char* name, std::vector<cfx_dtype>* out) const {
    return GetList(Host().attr->get_type_list, name, out);
  }
  // A list(string) attr; Unimplemented on a host older than the function that reads one.
  Status Get(const char* name, std::vector<std::string>* out) const {
    const cfx_host_attr_api* attr = Host().attr;
    if (!CFX_HAS_FIELD(attr, cfx_host_attr_api, get_string_list_item) ||
        attr->get_string_list_item == nullptr)
      return Unimplemented("the host cannot read list(string) attrs such as '", name, "'");
    int64_t n = 0;
    HostStatus s;
    attr->get_list_size(a_, name, &n, s.get());
    CFX_SDK_RETURN_IF_ERROR(s.ToStatus());
    out->clear();
    for (int64_t i = 0; i < n; ++i) {
      const char* data = nullptr;
      size_t size = 0;
      attr->get_string_list_item(a_, name, i, &data, &size, s.get());
      CFX_SDK_RETURN_IF_ERROR(s.ToStatus());
      out->emplace_back(data, size);
    }
    return Status();
  }
  Status Get(const char* name, PartialShape* out) const {
    constexpr int kMaxRank = 64;
    int64_t dims[kMaxRank];
    int rank = 0;
    HostStatus s;
    Host().attr->get_shape(a_, name, dims, kMaxRank, &rank, s.get());
    CFX_SDK_RETURN_IF_ERROR(s.ToStatus());
    out->unknown_rank = rank < 0;
    out->dims.assign(dims, dims + (rank < 0 ? 0 : rank));
    return Status();
  }
  Status Get(const char* name, TensorRef* out) const {
    HostStatus s;
    cfx_tensor* t = Host().attr->get_tensor(a_, name, s.get());
    CFX_SDK_RETURN_IF_ERROR(s.ToStatus());
    *out = TensorRef::Adopt(t);
    return Status();
  }
  // The attr when present, else `fallback`.
  template <typename T>
  Status GetOr(const char* name, T* out, T fallback) const {
    if (!Has(name)) {
      *out = std::move(fallback);
      return Status();
    }
    return Get(name, out);
  }

 private:
  template <typename Fn, typename T>
  Status Call(Fn fn, const char* name, T* out) const {
    HostStatus s;
    fn(a_, name, out, s.get());
    return s.ToStatus();
  }
  template <typename Fn, typename T>
  Status GetList(Fn fn, const char* name, std::vector<T>* out) const {
    int64_t n = 0;
    HostStatus s;
    Host().attr->get_list_size(a_, name, &n, s.get());
    CFX_SDK_RETURN_IF_ERROR(s.ToStatus());
    out->resize(static_cast<size_t>(n));
    fn(a_, name, out->data(), n, s.get());
    return s.ToStatus();
  }

  const cfx_attrs* a_;
};

}  // namespace cfx::sdk

#endif  // CONFLUX_SDK_TENSOR_H_
