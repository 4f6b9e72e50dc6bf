// The tensor table of the host API (cfx_host_tensor_api). A tensor handle is a cfx::Tensor*.
#include <algorithm>

#include "conflux/allocator.h"
#include "plugin/abi_types.h"
#include "plugin/host_api_tables.h"

namespace cfx::internal {
namespace {

cfx_dtype TensorDType(const cfx_tensor* t) {
  return static_cast<cfx_dtype>(FromHandle(t)->dtype());
}
int TensorRank(const cfx_tensor* t) { return FromHandle(t)->rank(); }
int64_t TensorDim(const cfx_tensor* t, int i) {
  const Tensor* x = FromHandle(t);
  return i >= 0 && i < x->rank() ? x->dim(i) : -1;
}
int64_t TensorNumElements(const cfx_tensor* t) { return FromHandle(t)->num_elements(); }
size_t TensorByteSize(const cfx_tensor* t) { return FromHandle(t)->TotalBytes(); }
void* TensorData(const cfx_tensor* t) { return FromHandle(t)->raw_data(); }
cfx_tensor* TensorShare(const cfx_tensor* t) { return ToHandle(new Tensor(*FromHandle(t))); }
void TensorRelease(cfx_tensor* t) { delete FromHandle(t); }
const char* TensorString(const cfx_tensor* t, int64_t i, size_t* size) {
  const Tensor* x = FromHandle(t);
  if (x->dtype() != DT_STRING || i < 0 || i >= x->num_elements()) {
    *size = 0;
    return "";
  }
  const std::string& v = x->data<std::string>()[i];
  *size = v.size();
  return v.data();
}
void TensorSetString(cfx_tensor* t, int64_t i, const char* data, size_t size) {
  Tensor* x = FromHandle(t);
  if (x->dtype() == DT_STRING && i >= 0 && i < x->num_elements())
    x->data<std::string>()[i].assign(data, size);
}
cfx_tensor* TensorNewHost(cfx_dtype dtype, const int64_t* dims, int rank, cfx_status* s) {
  if (!IsValidDataType(dtype) ||
      (DataTypeSize(static_cast<DataType>(dtype)) == 0 && dtype != CFX_STRING)) {
    SetError(s, errors::InvalidArgument("cannot make a host tensor of dtype ",
                                        DataTypeString(static_cast<DataType>(dtype))));
    return nullptr;
  }
  auto shape = TensorShape::Make(std::span<const int64_t>(dims, std::max(rank, 0)));
  if (!shape.ok()) {
    SetError(s, shape.status());
    return nullptr;
  }
  auto t = Tensor::Allocate(HostAllocator(), static_cast<DataType>(dtype), *shape);
  if (!t.ok()) {
    SetError(s, t.status());
    return nullptr;
  }
  return ToHandle(new Tensor(std::move(t).value()));
}

}  // namespace

const cfx_host_tensor_api* HostTensorApi() {
  return StaticTable<cfx_host_tensor_api>([](cfx_host_tensor_api* a) {
    a->dtype = TensorDType;
    a->rank = TensorRank;
    a->dim = TensorDim;
    a->num_elements = TensorNumElements;
    a->byte_size = TensorByteSize;
    a->data = TensorData;
    a->share = TensorShare;
    a->release = TensorRelease;
    a->string = TensorString;
    a->set_string = TensorSetString;
    a->new_host = TensorNewHost;
  });
}

}  // namespace cfx::internal
