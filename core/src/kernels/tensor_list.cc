// TensorList values and the helpers the list kernels share.
#include "kernels/tensor_list.h"

#include <cstring>
#include <utility>

namespace cfx::internal {

std::string TensorList::DebugString() const {
  return StrCat("TensorList<", DataTypeString(element_dtype), ", ", element_shape.ToString(),
                "> of ", tensors.size(), " elements");
}

namespace {
StatusOr<const TensorList*> ListIn(const Tensor& t, int i, DataType element_dtype) {
  if (t.dtype() != DT_VARIANT || t.num_elements() != 1 || t.buffer() == nullptr)
    return errors::InvalidArgument("input ", i, " must be a scalar variant holding a TensorList, got a ",
                                   DataTypeString(t.dtype()), " tensor of shape ",
                                   t.shape().ToString());
  const auto* list = dynamic_cast<const TensorList*>(t.at<Variant>(0).get());
  if (list == nullptr) {
    const Variant& v = t.at<Variant>(0);
    return errors::InvalidArgument("input ", i, " must hold a TensorList, got ",
                                   v != nullptr ? v->TypeName() : std::string("an empty variant"));
  }
  if (element_dtype != DT_INVALID && list->element_dtype != element_dtype)
    return errors::InvalidArgument("Invalid data types; op elements ",
                                   DataTypeString(element_dtype), " but list elements ",
                                   DataTypeString(list->element_dtype));
  return list;
}
}  // namespace

StatusOr<const TensorList*> ListInput(const KernelContext* c, int i, DataType element_dtype) {
  return ListIn(c->inputs[i], i, element_dtype);
}

StatusOr<std::shared_ptr<TensorList>> ForwardOrCopyList(KernelContext* c, int i,
                                                        DataType element_dtype) {
  Tensor& t = c->inputs[i];
  CFX_ASSIGN_OR_RETURN(const TensorList* list, ListIn(t, i, element_dtype));
  Variant& held = t.at<Variant>(0);
  // The input tensor is the only reference to its buffer and the buffer the only holder of the
  // list: nothing else can read it, so the list is taken instead of copied.
  if (t.RefCountIsOne() && held.use_count() == 1) {
    auto owned = std::const_pointer_cast<VariantValue>(std::move(held));
    return std::static_pointer_cast<TensorList>(std::move(owned));
  }
  return std::make_shared<TensorList>(*list);
}

Tensor ListTensor(std::shared_ptr<const TensorList> list) {
  Tensor t(DT_VARIANT, TensorShape());
  t.at<Variant>(0) = std::move(list);
  return t;
}

StatusOr<PartialTensorShape> ShapeFromTensor(const Tensor& t, const char* what) {
  if (t.dtype() != DT_INT32 && t.dtype() != DT_INT64)
    return errors::InvalidArgument(what, " must be int32 or int64, got ",
                                   DataTypeString(t.dtype()));
  auto value = [&t](int64_t k) -> int64_t {
    return t.dtype() == DT_INT64 ? t.at<int64_t>(k) : t.at<int32_t>(k);
  };
  if (t.rank() == 0) {
    if (value(0) != -1)
      return errors::InvalidArgument(what, ": the only valid scalar shape is -1 (unknown rank), got ",
                                     value(0));
    return PartialTensorShape::UnknownRank();
  }
  if (t.rank() != 1)
    return errors::InvalidArgument(what, " must be a scalar or a vector, got shape ",
                                   t.shape().ToString());
  std::vector<int64_t> dims(t.num_elements());
  for (int64_t k = 0; k < t.num_elements(); ++k) dims[k] = value(k);
  auto shape = PartialTensorShape::Make(std::move(dims));
  if (!shape.ok()) return shape.status().WithPrefix(std::string(what) + ": ");
  return shape;
}

Tensor TensorFromShape(const PartialTensorShape& shape, DataType dtype) {
  const bool wide = dtype == DT_INT64;
  if (shape.unknown_rank()) {
    return wide ? Tensor::Scalar<int64_t>(DT_INT64, -1) : Tensor::Scalar<int32_t>(DT_INT32, -1);
  }
  Tensor t(wide ? DT_INT64 : DT_INT32, TensorShape({shape.rank()}));
  for (int k = 0; k < shape.rank(); ++k) {
    if (wide) {
      t.at<int64_t>(k) = shape.dim(k);
    } else {
      t.at<int32_t>(k) = static_cast<int32_t>(shape.dim(k));
    }
  }
  return t;
}

StatusOr<Tensor> ZerosTensor(DataType dtype, const TensorShape& shape) {
  CFX_ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(HostAllocator(), dtype, shape));
  if (DataTypeSize(dtype) > 0 && t.TotalBytes() > 0) std::memset(t.raw_data(), 0, t.TotalBytes());
  return t;
}

void CopyElements(const Tensor& src, int64_t src_offset, Tensor* dst, int64_t dst_offset,
                  int64_t count) {
  if (count == 0) return;
  if (src.dtype() == DT_STRING) {
    for (int64_t i = 0; i < count; ++i)
      dst->at<std::string>(dst_offset + i) = src.at<std::string>(src_offset + i);
    return;
  }
  if (src.dtype() == DT_VARIANT) {
    for (int64_t i = 0; i < count; ++i)
      dst->at<Variant>(dst_offset + i) = src.at<Variant>(src_offset + i);
    return;
  }
  const size_t size = DataTypeSize(src.dtype());
  std::memcpy(static_cast<char*>(dst->raw_data()) + dst_offset * size,
              static_cast<const char*>(src.raw_data()) + src_offset * size, count * size);
}

}  // namespace cfx::internal
