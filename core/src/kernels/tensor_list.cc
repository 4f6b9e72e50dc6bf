// TensorList values and the helpers the list kernels share.
#include "kernels/tensor_list.h"

#include <cstring>
#include <utility>

#include "kernels/host_arithmetic.h"

namespace cfx::internal {

std::string TensorList::DebugString() const {
  return StrCat("TensorList<", DataTypeString(element_dtype), ", ", element_shape.ToString(),
                "> of ", tensors.size(), " elements");
}

namespace {
// The list variant `v` holds, of `element_dtype` (DT_INVALID: any); `where` names it in errors.
StatusOr<const TensorList*> HeldList(const Variant& v, DataType element_dtype,
                                     const std::string& where) {
  const auto* list = dynamic_cast<const TensorList*>(v.get());
  if (list == nullptr)
    return errors::InvalidArgument(where, " must hold a TensorList, got ",
                                   v != nullptr ? v->TypeName() : std::string("an empty variant"));
  if (element_dtype != DT_INVALID && list->element_dtype != element_dtype)
    return errors::InvalidArgument("Invalid data types; op elements ",
                                   DataTypeString(element_dtype), " but list elements ",
                                   DataTypeString(list->element_dtype), " (", where, ")");
  return list;
}

StatusOr<const TensorList*> ListIn(const Tensor& t, int i, DataType element_dtype) {
  if (t.dtype() != DT_VARIANT || t.num_elements() != 1 || t.buffer() == nullptr)
    return errors::InvalidArgument(
        "input ", i, " must be a scalar variant holding a TensorList, got a ",
        DataTypeString(t.dtype()), " tensor of shape ", t.shape().ToString());
  return HeldList(t.at<Variant>(0), element_dtype, StrCat("input ", i));
}
}  // namespace

StatusOr<const TensorList*> ListInput(const KernelContext* c, int i, DataType element_dtype) {
  return ListIn(c->inputs[i], i, element_dtype);
}

StatusOr<std::shared_ptr<TensorList>> ForwardOrCopyList(KernelContext* c, int i,
                                                        DataType element_dtype) {
  CFX_RETURN_IF_ERROR(ListIn(c->inputs[i], i, element_dtype).status());
  return TakeOrCopyList(c->inputs[i], 0);
}

StatusOr<const TensorList*> ListAt(const Tensor& t, int64_t k, DataType element_dtype,
                                   const std::string& what) {
  if (t.dtype() != DT_VARIANT)
    return errors::InvalidArgument(what, " must be a variant tensor of TensorLists, got a ",
                                   DataTypeString(t.dtype()), " tensor");
  return HeldList(t.at<Variant>(k), element_dtype, StrCat(what, "[", k, "]"));
}

std::shared_ptr<TensorList> TakeOrCopyList(Tensor& t, int64_t k) {
  Variant& held = t.at<Variant>(k);
  // The tensor is the only reference to its buffer and the buffer the only holder of the list:
  // nothing else can read it, so the list is taken instead of copied.
  if (t.RefCountIsOne() && held.use_count() == 1) {
    auto owned = std::const_pointer_cast<VariantValue>(std::move(held));
    return std::static_pointer_cast<TensorList>(std::move(owned));
  }
  return std::make_shared<TensorList>(static_cast<const TensorList&>(*held));
}

Tensor ListTensor(std::shared_ptr<const TensorList> list) {
  Tensor t(DT_VARIANT, TensorShape());
  t.at<Variant>(0) = std::move(list);
  return t;
}

namespace {

// The list a variant element holds; null for an empty variant, Unimplemented for another value
// (`what` names the operation in the error).
StatusOr<const TensorList*> ListInVariant(const Variant& v, const char* what) {
  if (v == nullptr) return nullptr;
  const auto* list = dynamic_cast<const TensorList*>(v.get());
  if (list == nullptr)
    return errors::Unimplemented(what, " of a variant holding ", v->TypeName(),
                                 " is not supported; only TensorLists");
  return list;
}

// Zeros like one list element: unset stays unset, variants hold zeros-like lists.
StatusOr<Tensor> ZerosLikeElement(const Tensor& element) {
  if (element.buffer() == nullptr) return Tensor();
  if (element.dtype() != DT_VARIANT) return ZerosTensor(element.dtype(), element.shape());
  Tensor out(DT_VARIANT, element.shape());
  for (int64_t k = 0; k < element.num_elements(); ++k) {
    CFX_ASSIGN_OR_RETURN(const TensorList* list,
                         ListInVariant(element.at<Variant>(k), "ZerosLike"));
    if (list == nullptr) continue;
    CFX_ASSIGN_OR_RETURN(std::shared_ptr<TensorList> zeros, ZerosLikeList(*list));
    out.at<Variant>(k) = std::move(zeros);
  }
  return out;
}

// The sum of two set elements of one dtype, element `index` of their lists.
StatusOr<Tensor> SumOfElements(const Tensor& a, const Tensor& b, size_t index) {
  if (a.shape() != b.shape())
    return errors::InvalidArgument("Trying to add two tensors with incompatible shapes at index ",
                                   index, " of the lists. One is ", a.shape().ToString(),
                                   " and the other is ", b.shape().ToString());
  if (a.dtype() != DT_VARIANT) {
    CFX_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(HostAllocator(), a.dtype(), a.shape()));
    CFX_RETURN_IF_ERROR(AddElements(a, b, &out));
    return out;
  }
  Tensor out(DT_VARIANT, a.shape());
  for (int64_t k = 0; k < a.num_elements(); ++k) {
    CFX_ASSIGN_OR_RETURN(const TensorList* x, ListInVariant(a.at<Variant>(k), "AddN"));
    CFX_ASSIGN_OR_RETURN(const TensorList* y, ListInVariant(b.at<Variant>(k), "AddN"));
    if (x == nullptr || y == nullptr) {
      out.at<Variant>(k) = x == nullptr ? b.at<Variant>(k) : a.at<Variant>(k);
      continue;
    }
    auto sum = std::make_shared<TensorList>(*x);
    CFX_RETURN_IF_ERROR(AddListInto(sum.get(), *y));
    out.at<Variant>(k) = std::move(sum);
  }
  return out;
}

}  // namespace

StatusOr<std::shared_ptr<TensorList>> ZerosLikeList(const TensorList& list) {
  auto zeros = std::make_shared<TensorList>();
  zeros->element_dtype = list.element_dtype;
  zeros->element_shape = list.element_shape;
  zeros->max_num_elements = list.max_num_elements;
  zeros->tensors.reserve(list.tensors.size());
  for (const Tensor& t : list.tensors) {
    CFX_ASSIGN_OR_RETURN(Tensor z, ZerosLikeElement(t));
    zeros->tensors.push_back(std::move(z));
  }
  return zeros;
}

Status AddListInto(TensorList* sum, const TensorList& other) {
  if (sum->element_dtype != other.element_dtype)
    return errors::InvalidArgument(
        "Trying to add two lists of tensors of different dtypes. One is ",
        DataTypeString(sum->element_dtype), " and the other is ",
        DataTypeString(other.element_dtype));
  auto shape = sum->element_shape.Merge(other.element_shape);
  if (!shape.ok())
    return errors::InvalidArgument(
        "Trying to add two lists of tensors with incompatible element shapes. One is ",
        sum->element_shape.ToString(), " and the other is ", other.element_shape.ToString());
  if (sum->tensors.size() != other.tensors.size())
    return errors::InvalidArgument(
        "Trying to add two lists of tensors with different lengths. One is ", sum->tensors.size(),
        " and the other is ", other.tensors.size());
  sum->element_shape = *std::move(shape);
  for (size_t i = 0; i < other.tensors.size(); ++i) {
    const Tensor& b = other.tensors[i];
    if (b.buffer() == nullptr) continue;  // unset reads as the other element
    Tensor& a = sum->tensors[i];
    if (a.buffer() == nullptr) {
      a = b;
      continue;
    }
    CFX_ASSIGN_OR_RETURN(a, SumOfElements(a, b, i));
  }
  return Status();
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
