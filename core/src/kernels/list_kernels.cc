// TensorFlow's TensorList ops (EmptyTensorList, TensorListPushBack, ...): lists of tensors held
// by scalar DT_VARIANT tensors (kernels/tensor_list.h), which TensorFlow 2's functional while
// gradients and Keras RNN layers use to carry values between loop iterations; and the list cases
// (T=variant) of ZerosLike and AddN, which make and sum the gradients of lists.
//
// The kernels run on the CPU; lists live in host memory on every device, as in TensorFlow. An op
// that changes a list outputs a new one and never changes its input visibly: it takes the input's
// list only when nothing else holds it. Errors name the index, the list's length and the shapes,
// as TensorFlow's do. Thread-safety: a kernel keeps no state between calls but its attrs.
#include <algorithm>
#include <limits>
#include <utility>

#include "kernels/builtin.h"
#include "kernels/tensor_list.h"

namespace cfx::internal {
namespace {

// A list kernel: reads element_dtype when the op has it, runs Run for each call.
class ListKernel : public BuiltinKernel {
 public:
  Status Init(const NodeDef& node, const OpDef& op) override {
    for (const AttrDef& attr : op.attr)
      if (attr.name == "element_dtype") return GetNodeAttr(node, op, "element_dtype", &dtype_);
    return Status();
  }
  void Compute(KernelContext* c) final { c->status = Run(c); }

 protected:
  virtual Status Run(KernelContext* c) = 0;
  DataType dtype_ = DT_INVALID;
};

// The int32 or int64 scalar input `i`, named `what` in errors.
StatusOr<int64_t> ScalarInput(const KernelContext* c, int i, const char* what) {
  const Tensor& t = c->inputs[i];
  if (t.rank() != 0)
    return errors::InvalidArgument(what, " must be a scalar, got shape ", t.shape().ToString());
  return t.dtype() == DT_INT64 ? t.at<int64_t>(0) : t.at<int32_t>(0);
}

// The int32 or int64 vector input `i`.
StatusOr<std::vector<int64_t>> VectorInput(const KernelContext* c, int i, const char* what) {
  const Tensor& t = c->inputs[i];
  if (t.rank() != 1)
    return errors::InvalidArgument(what, " must be a vector, got shape ", t.shape().ToString());
  std::vector<int64_t> out(t.num_elements());
  for (int64_t k = 0; k < t.num_elements(); ++k)
    out[k] = t.dtype() == DT_INT64 ? t.at<int64_t>(k) : t.at<int32_t>(k);
  return out;
}

// The dims of `shape` after the first.
std::vector<int64_t> Except0(const std::vector<int64_t>& dims) {
  return std::vector<int64_t>(dims.begin() + 1, dims.end());
}

// `item` may be stored in `list`: its dtype and a shape compatible with the list's.
Status CheckItem(const TensorList& list, const Tensor& item, const char* what) {
  if (item.dtype() != list.element_dtype)
    return errors::InvalidArgument("Invalid data types; ", what, " a ",
                                   DataTypeString(item.dtype()), " tensor but list elements are ",
                                   DataTypeString(list.element_dtype));
  if (!list.element_shape.IsCompatibleWith(item.shape()))
    return errors::InvalidArgument("Tried to ", what, " a tensor of shape ",
                                   item.shape().ToString(),
                                   " into a list of incompatible element shape ",
                                   list.element_shape.ToString());
  return Status();
}

// The list's element shape merged with the op's `requested` one.
StatusOr<PartialTensorShape> MergedShape(const TensorList& list,
                                         const PartialTensorShape& requested) {
  auto merged = list.element_shape.Merge(requested);
  if (!merged.ok())
    return errors::InvalidArgument("Incompatible shapes: the list's element shape is ",
                                   list.element_shape.ToString(), " but the op asks for ",
                                   requested.ToString());
  return merged;
}

// Makes `shape` more specific with element `index`'s shape when it is set (a contradiction is
// left for StackElements to report with the element's index).
void MergeSetElement(const TensorList& list, int64_t index, PartialTensorShape* shape) {
  const Tensor& t = list.tensors[index];
  if (t.buffer() == nullptr) return;
  auto merged = shape->Merge(t.shape());
  if (merged.ok()) *shape = *std::move(merged);
}

// Element `index` of `list`; zeros of the element shape when it is unset, which must then be
// fully defined (list's and `requested` merged).
StatusOr<Tensor> ElementOrZeros(const TensorList& list, int64_t index,
                                const PartialTensorShape& requested) {
  const Tensor& t = list.tensors[index];
  if (t.buffer() != nullptr) return t;
  CFX_ASSIGN_OR_RETURN(PartialTensorShape shape, MergedShape(list, requested));
  if (!shape.IsFullyDefined())
    return errors::InvalidArgument("element ", index,
                                   " of the list is unset and its element shape is not fully "
                                   "defined: ",
                                   shape.ToString());
  CFX_ASSIGN_OR_RETURN(TensorShape s, shape.AsTensorShape());
  return ZerosTensor(list.element_dtype, s);
}

// Stacks `elements` (one shape) into [n] + shape; an empty `elements` needs `shape` fully
// defined.
StatusOr<Tensor> StackElements(DataType dtype, const std::vector<Tensor>& elements,
                               PartialTensorShape shape) {
  for (size_t i = 0; i < elements.size(); ++i) {
    auto merged = shape.Merge(elements[i].shape());
    if (!merged.ok())
      return errors::InvalidArgument("Incompatible shapes: element ", i, " has shape ",
                                     elements[i].shape().ToString(), " but the elements so far "
                                     "or the requested element shape are ",
                                     shape.ToString());
    shape = *std::move(merged);
  }
  if (!shape.IsFullyDefined())
    return errors::InvalidArgument(
        "stacking a list of no elements needs a fully defined element shape, got ",
        shape.ToString());
  CFX_ASSIGN_OR_RETURN(TensorShape element, shape.AsTensorShape());
  std::vector<int64_t> dims{static_cast<int64_t>(elements.size())};
  dims.insert(dims.end(), element.dims().begin(), element.dims().end());
  CFX_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(HostAllocator(), dtype, TensorShape(dims)));
  const int64_t n = element.num_elements();
  for (size_t i = 0; i < elements.size(); ++i) CopyElements(elements[i], 0, &out, i * n, n);
  return out;
}

// Row `i` of `value` (rank >= 1) as a tensor of shape value.shape[1:].
StatusOr<Tensor> Row(const Tensor& value, int64_t i) {
  TensorShape row_shape(Except0(value.shape().dims()));
  CFX_ASSIGN_OR_RETURN(Tensor row, Tensor::Allocate(HostAllocator(), value.dtype(), row_shape));
  CopyElements(value, i * row_shape.num_elements(), &row, 0, row_shape.num_elements());
  return row;
}

// A new list of `dtype` whose elements are the rows of `value`; `shape` must fit them.
StatusOr<std::shared_ptr<TensorList>> ListOfRows(DataType dtype, const Tensor& value,
                                                 const PartialTensorShape& shape,
                                                 const char* op) {
  if (value.rank() < 1)
    return errors::InvalidArgument(op, ": the tensor must have rank >= 1 (rows to list), got a "
                                       "scalar");
  const PartialTensorShape rows(Except0(value.shape().dims()));
  if (!shape.IsCompatibleWith(rows))
    return errors::InvalidArgument(op, ": the element shape ", shape.ToString(),
                                   " is incompatible with the tensor's rows of shape ",
                                   rows.ToString(), " (tensor shape ", value.shape().ToString(),
                                   ")");
  auto list = std::make_shared<TensorList>();
  list->element_dtype = dtype;
  list->element_shape = shape;
  return list;
}

class EmptyKernel : public ListKernel {
  Status Run(KernelContext* c) override {
    CFX_ASSIGN_OR_RETURN(PartialTensorShape shape, ShapeFromTensor(c->inputs[0], "element_shape"));
    CFX_ASSIGN_OR_RETURN(int64_t max, ScalarInput(c, 1, "max_num_elements"));
    if (max < -1)
      return errors::InvalidArgument("max_num_elements must be -1 (no limit) or >= 0, got ", max);
    auto list = std::make_shared<TensorList>();
    list->element_dtype = dtype_;
    list->element_shape = std::move(shape);
    list->max_num_elements = max;
    SetOutput(c, 0, ListTensor(std::move(list)));
    return Status();
  }
};

class ReserveKernel : public ListKernel {
  Status Run(KernelContext* c) override {
    CFX_ASSIGN_OR_RETURN(PartialTensorShape shape, ShapeFromTensor(c->inputs[0], "element_shape"));
    CFX_ASSIGN_OR_RETURN(int64_t n, ScalarInput(c, 1, "num_elements"));
    if (n < 0)
      return errors::InvalidArgument("The num_elements to reserve must be a non negative number, "
                                     "but got ",
                                     n);
    auto list = std::make_shared<TensorList>();
    list->element_dtype = dtype_;
    list->element_shape = std::move(shape);
    list->tensors.resize(n);
    SetOutput(c, 0, ListTensor(std::move(list)));
    return Status();
  }
};

class FromTensorKernel : public ListKernel {
  Status Run(KernelContext* c) override {
    const Tensor& value = c->inputs[0];
    CFX_ASSIGN_OR_RETURN(PartialTensorShape shape, ShapeFromTensor(c->inputs[1], "element_shape"));
    CFX_ASSIGN_OR_RETURN(auto list, ListOfRows(dtype_, value, shape, "TensorListFromTensor"));
    for (int64_t i = 0; i < value.dim(0); ++i) {
      CFX_ASSIGN_OR_RETURN(Tensor row, Row(value, i));
      list->tensors.push_back(std::move(row));
    }
    SetOutput(c, 0, ListTensor(std::move(list)));
    return Status();
  }
};

class TensorListStackKernel : public ListKernel {
 public:
  Status Init(const NodeDef& node, const OpDef& op) override {
    CFX_RETURN_IF_ERROR(ListKernel::Init(node, op));
    return GetNodeAttr(node, op, "num_elements", &num_elements_);
  }

 private:
  Status Run(KernelContext* c) override {
    CFX_ASSIGN_OR_RETURN(const TensorList* list, ListInput(c, 0, dtype_));
    CFX_ASSIGN_OR_RETURN(PartialTensorShape requested,
                         ShapeFromTensor(c->inputs[1], "element_shape"));
    const int64_t length = static_cast<int64_t>(list->tensors.size());
    if (num_elements_ != -1 && num_elements_ != length)
      return errors::InvalidArgument("Operation expected a list with ", num_elements_,
                                     " elements but got a list with ", length, " elements.");
    CFX_ASSIGN_OR_RETURN(PartialTensorShape shape, MergedShape(*list, requested));
    std::vector<Tensor> elements;
    for (int64_t i = 0; i < length; ++i) MergeSetElement(*list, i, &shape);
    for (int64_t i = 0; i < length; ++i) {
      CFX_ASSIGN_OR_RETURN(Tensor e, ElementOrZeros(*list, i, shape));
      elements.push_back(std::move(e));
    }
    CFX_ASSIGN_OR_RETURN(Tensor out, StackElements(dtype_, elements, shape));
    SetOutput(c, 0, std::move(out));
    return Status();
  }

  int64_t num_elements_ = -1;
};

class GetItemKernel : public ListKernel {
  Status Run(KernelContext* c) override {
    CFX_ASSIGN_OR_RETURN(const TensorList* list, ListInput(c, 0, dtype_));
    CFX_ASSIGN_OR_RETURN(int64_t index, ScalarInput(c, 1, "index"));
    const int64_t length = static_cast<int64_t>(list->tensors.size());
    if (index < 0 || index >= length)
      return errors::InvalidArgument("Trying to access element ", index, " in a list with ",
                                     length, " elements.");
    CFX_ASSIGN_OR_RETURN(PartialTensorShape requested,
                         ShapeFromTensor(c->inputs[2], "element_shape"));
    CFX_ASSIGN_OR_RETURN(PartialTensorShape shape, MergedShape(*list, requested));
    // An unset element whose shape neither the list nor the op fixes reads as zeros of the shape
    // the set elements share, as in TensorFlow: the gradient list of one GetItem (one element
    // set) read at another index gives zeros of that element's shape.
    if (list->tensors[index].buffer() == nullptr && !shape.IsFullyDefined())
      for (int64_t i = 0; i < length; ++i) MergeSetElement(*list, i, &shape);
    CFX_ASSIGN_OR_RETURN(Tensor item, ElementOrZeros(*list, index, shape));
    SetOutput(c, 0, std::move(item));
    return Status();
  }
};

class SetItemKernel : public ListKernel {
 public:
  Status Init(const NodeDef& node, const OpDef& op) override {
    CFX_RETURN_IF_ERROR(ListKernel::Init(node, op));
    return GetNodeAttr(node, op, "resize_if_index_out_of_bounds", &resize_);
  }

 private:
  Status Run(KernelContext* c) override {
    CFX_ASSIGN_OR_RETURN(int64_t index, ScalarInput(c, 1, "index"));
    CFX_ASSIGN_OR_RETURN(auto list, ForwardOrCopyList(c, 0, dtype_));
    const int64_t length = static_cast<int64_t>(list->tensors.size());
    if (index < 0 || (index >= length && !resize_))
      return errors::InvalidArgument("Trying to modify element ", index, " in a list with ",
                                     length, " elements.");
    CFX_RETURN_IF_ERROR(CheckItem(*list, c->inputs[2], "set"));
    if (index >= length) list->tensors.resize(index + 1);
    list->tensors[index] = c->inputs[2];
    SetOutput(c, 0, ListTensor(std::move(list)));
    return Status();
  }

  bool resize_ = false;
};

class PushBackKernel : public ListKernel {
  Status Run(KernelContext* c) override {
    CFX_ASSIGN_OR_RETURN(auto list, ForwardOrCopyList(c, 0, dtype_));
    CFX_RETURN_IF_ERROR(CheckItem(*list, c->inputs[1], "push"));
    const int64_t length = static_cast<int64_t>(list->tensors.size());
    if (list->max_num_elements != -1 && length >= list->max_num_elements)
      return errors::InvalidArgument("Tried to push item into a full list list size: ", length,
                                     " max: ", list->max_num_elements);
    list->tensors.push_back(c->inputs[1]);
    SetOutput(c, 0, ListTensor(std::move(list)));
    return Status();
  }
};

class PopBackKernel : public ListKernel {
  Status Run(KernelContext* c) override {
    CFX_ASSIGN_OR_RETURN(PartialTensorShape requested,
                         ShapeFromTensor(c->inputs[1], "element_shape"));
    CFX_ASSIGN_OR_RETURN(auto list, ForwardOrCopyList(c, 0, dtype_));
    if (list->tensors.empty())
      return errors::InvalidArgument("Trying to pop from an empty list.");
    CFX_ASSIGN_OR_RETURN(
        Tensor item,
        ElementOrZeros(*list, static_cast<int64_t>(list->tensors.size()) - 1, requested));
    list->tensors.pop_back();
    SetOutput(c, 0, ListTensor(std::move(list)));
    SetOutput(c, 1, std::move(item));
    return Status();
  }
};

class LengthKernel : public ListKernel {
  Status Run(KernelContext* c) override {
    CFX_ASSIGN_OR_RETURN(const TensorList* list, ListInput(c, 0, DT_INVALID));
    SetOutput(c, 0,
              Tensor::Scalar<int32_t>(DT_INT32, static_cast<int32_t>(list->tensors.size())));
    return Status();
  }
};

class ElementShapeKernel : public ListKernel {
 public:
  Status Init(const NodeDef& node, const OpDef& op) override {
    return GetNodeAttr(node, op, "shape_type", &shape_type_);
  }

 private:
  Status Run(KernelContext* c) override {
    CFX_ASSIGN_OR_RETURN(const TensorList* list, ListInput(c, 0, DT_INVALID));
    SetOutput(c, 0, TensorFromShape(list->element_shape, shape_type_));
    return Status();
  }

  DataType shape_type_ = DT_INT32;
};

class ResizeKernel : public ListKernel {
  Status Run(KernelContext* c) override {
    CFX_ASSIGN_OR_RETURN(int64_t size, ScalarInput(c, 1, "size"));
    if (size < 0)
      return errors::InvalidArgument("TensorListResize expects size to be non-negative. Got: ",
                                     size);
    CFX_ASSIGN_OR_RETURN(auto list, ForwardOrCopyList(c, 0, DT_INVALID));
    list->tensors.resize(size);
    SetOutput(c, 0, ListTensor(std::move(list)));
    return Status();
  }
};

class GatherKernel : public ListKernel {
  Status Run(KernelContext* c) override {
    CFX_ASSIGN_OR_RETURN(const TensorList* list, ListInput(c, 0, dtype_));
    CFX_ASSIGN_OR_RETURN(std::vector<int64_t> indices, VectorInput(c, 1, "indices"));
    CFX_ASSIGN_OR_RETURN(PartialTensorShape requested,
                         ShapeFromTensor(c->inputs[2], "element_shape"));
    CFX_ASSIGN_OR_RETURN(PartialTensorShape shape, MergedShape(*list, requested));
    const int64_t length = static_cast<int64_t>(list->tensors.size());
    std::vector<Tensor> elements;
    for (int64_t index : indices) {
      if (index < 0 || index >= length)
        return errors::InvalidArgument("Trying to gather element ", index, " in a list with ",
                                       length, " elements.");
      MergeSetElement(*list, index, &shape);
    }
    for (int64_t index : indices) {
      CFX_ASSIGN_OR_RETURN(Tensor e, ElementOrZeros(*list, index, shape));
      elements.push_back(std::move(e));
    }
    CFX_ASSIGN_OR_RETURN(Tensor out, StackElements(dtype_, elements, shape));
    SetOutput(c, 0, std::move(out));
    return Status();
  }
};

// Writes the rows of `value` at `indices` of `list`, growing it where an index is past its end;
// an index at or past `max_length` (unless -1) is an error, TensorListScatterV2's num_elements.
Status ScatterRows(TensorList* list, const Tensor& value, const std::vector<int64_t>& indices,
                   int64_t max_length = -1) {
  if (value.rank() < 1 || value.dim(0) != static_cast<int64_t>(indices.size()))
    return errors::InvalidArgument("Invalid number of rows in input tensor. Expected: ",
                                   indices.size(), " Actual: ",
                                   value.rank() < 1 ? 0 : value.dim(0), " (tensor shape ",
                                   value.shape().ToString(), ")");
  for (size_t i = 0; i < indices.size(); ++i) {
    if (indices[i] < 0)
      return errors::InvalidArgument("Indices in TensorListScatter must all be non-negative, got ",
                                     indices[i], " at position ", i);
    if (max_length != -1 && indices[i] >= max_length)
      return errors::InvalidArgument("TensorListScatter: Trying to scatter at index ", indices[i],
                                     " (position ", i, " of indices) in list with size ",
                                     max_length, " (num_elements)");
  }
  for (size_t i = 0; i < indices.size(); ++i) {
    CFX_ASSIGN_OR_RETURN(Tensor row, Row(value, static_cast<int64_t>(i)));
    CFX_RETURN_IF_ERROR(CheckItem(*list, row, "scatter"));
    if (indices[i] >= static_cast<int64_t>(list->tensors.size()))
      list->tensors.resize(indices[i] + 1);
    list->tensors[indices[i]] = std::move(row);
  }
  return Status();
}

class ScatterIntoExistingKernel : public ListKernel {
  Status Run(KernelContext* c) override {
    CFX_ASSIGN_OR_RETURN(std::vector<int64_t> indices, VectorInput(c, 2, "indices"));
    if (c->inputs[1].dtype() != dtype_)
      return errors::InvalidArgument("Invalid data types; op elements ", DataTypeString(dtype_),
                                     " but the tensor is ", DataTypeString(c->inputs[1].dtype()));
    CFX_ASSIGN_OR_RETURN(auto list, ForwardOrCopyList(c, 0, dtype_));
    CFX_RETURN_IF_ERROR(ScatterRows(list.get(), c->inputs[1], indices));
    SetOutput(c, 0, ListTensor(std::move(list)));
    return Status();
  }
};

// TensorListScatter and TensorListScatterV2: a new list with row i of the tensor at indices[i].
// V2's num_elements fixes the length (-1: as V1, as long as the largest index needs).
class ScatterKernel : public ListKernel {
 public:
  Status Init(const NodeDef& node, const OpDef& op) override {
    has_num_elements_ = op.input_arg.size() > 3;
    return ListKernel::Init(node, op);
  }

 private:
  Status Run(KernelContext* c) override {
    const Tensor& value = c->inputs[0];
    CFX_ASSIGN_OR_RETURN(std::vector<int64_t> indices, VectorInput(c, 1, "indices"));
    CFX_ASSIGN_OR_RETURN(PartialTensorShape shape, ShapeFromTensor(c->inputs[2], "element_shape"));
    int64_t num_elements = -1;
    if (has_num_elements_) {
      CFX_ASSIGN_OR_RETURN(num_elements, ScalarInput(c, 3, "num_elements"));
      if (num_elements < -1)
        return errors::InvalidArgument("TensorListScatter expects num_elements >= -1, found: ",
                                       num_elements);
    }
    CFX_ASSIGN_OR_RETURN(
        auto list, ListOfRows(dtype_, value, shape,
                              has_num_elements_ ? "TensorListScatterV2" : "TensorListScatter"));
    list->tensors.resize(std::max<int64_t>(num_elements, 0));
    CFX_RETURN_IF_ERROR(ScatterRows(list.get(), value, indices, num_elements));
    SetOutput(c, 0, ListTensor(std::move(list)));
    return Status();
  }

  bool has_num_elements_ = false;
};

// TensorListConcat and TensorListConcatV2: the elements concatenated along dimension 0, and
// their dimensions 0 (int64). The elements' shape is the list's merged with the op's: V2's
// element_shape input, or V1's attr without its dimension 0 (which TensorFlow's V1 ignores). An
// unset element is zeros of that shape past dimension 0, of leading_dims[i] rows where V2's
// leading_dims has an entry for it, else of the dimension 0 that the shape fixes or that every
// set element shares; an error naming the element when there is none.
class ConcatKernel : public ListKernel {
 public:
  Status Init(const NodeDef& node, const OpDef& op) override {
    CFX_RETURN_IF_ERROR(ListKernel::Init(node, op));
    v1_ = op.input_arg.size() == 1;
    if (!v1_) return Status();
    PartialTensorShape attr;
    CFX_RETURN_IF_ERROR(GetNodeAttr(node, op, "element_shape", &attr));
    if (attr.unknown_rank()) return Status();
    if (attr.rank() == 0)
      return errors::InvalidArgument(
          "element_shape must not be empty: TensorListConcat needs elements of rank >= 1 to "
          "concatenate along dimension 0, got the element_shape attr []");
    std::vector<int64_t> dims = attr.dims();
    dims[0] = kUnknownDim;
    attr_shape_ = PartialTensorShape(std::move(dims));
    return Status();
  }

 private:
  Status Run(KernelContext* c) override {
    CFX_ASSIGN_OR_RETURN(const TensorList* list, ListInput(c, 0, dtype_));
    PartialTensorShape requested = attr_shape_;
    std::vector<int64_t> leading;
    if (!v1_) {
      CFX_ASSIGN_OR_RETURN(requested, ShapeFromTensor(c->inputs[1], "element_shape"));
      CFX_ASSIGN_OR_RETURN(leading, VectorInput(c, 2, "leading_dims"));
    }
    CFX_ASSIGN_OR_RETURN(PartialTensorShape shape, MergedShape(*list, requested));
    if (!shape.unknown_rank() && shape.rank() < 1)
      return errors::InvalidArgument(
          "Concat requires elements to be at least vectors, found scalars instead (element "
          "shape [])");
    // What every element's shape must be past dimension 0, and its dimension 0 where known.
    PartialTensorShape inner = PartialTensorShape::UnknownRank();
    int64_t first = kUnknownDim;
    if (!shape.unknown_rank()) {
      inner = PartialTensorShape(Except0(shape.dims()));
      first = shape.dim(0);
    }
    const int64_t length = static_cast<int64_t>(list->tensors.size());
    if (length == 0 && !inner.IsFullyDefined())
      return errors::InvalidArgument(
          "All except the first dimension must be fully defined when concating an empty tensor "
          "list. element_shape: ",
          inner.ToString());
    // The dimension 0 of the unset elements: the shape's, else the one the set elements share.
    int64_t shared = first;
    bool seen = false;
    for (int64_t i = 0; i < length; ++i) {
      const Tensor& t = list->tensors[i];
      if (t.buffer() == nullptr) continue;
      if (t.rank() < 1)
        return errors::InvalidArgument("Concat saw a scalar shape at index ", i,
                                       " but requires at least vectors.");
      auto merged = inner.Merge(PartialTensorShape(Except0(t.shape().dims())));
      if (!merged.ok())
        return errors::InvalidArgument("Incompatible shapes: element ", i, " has shape ",
                                       t.shape().ToString(), " but the others past dimension 0 "
                                       "are ",
                                       inner.ToString());
      inner = *std::move(merged);
      if (first != kUnknownDim && t.dim(0) != first)
        return errors::InvalidArgument("element ", i, " has shape ", t.shape().ToString(),
                                       " but the element shape ", shape.ToString(),
                                       " fixes dimension 0 at ", first);
      if (first == kUnknownDim) shared = !seen || shared == t.dim(0) ? t.dim(0) : kUnknownDim;
      seen = true;
    }
    if (!inner.IsFullyDefined())
      return errors::InvalidArgument(
          "Trying to concat a list with only unset elements, but the element shape past "
          "dimension 0 is not fully defined: ",
          inner.ToString());
    CFX_ASSIGN_OR_RETURN(TensorShape row, inner.AsTensorShape());
    Tensor lengths(DT_INT64, TensorShape({length}));
    int64_t rows = 0;
    for (int64_t i = 0; i < length; ++i) {
      CFX_ASSIGN_OR_RETURN(int64_t n, ElementRows(*list, i, leading, shared));
      if (n > std::numeric_limits<int64_t>::max() - rows)
        return errors::InvalidArgument("Concat: the dimensions 0 sum past 2^63 at element ", i);
      lengths.at<int64_t>(i) = n;
      rows += n;
    }
    std::vector<int64_t> dims{rows};
    dims.insert(dims.end(), row.dims().begin(), row.dims().end());
    CFX_ASSIGN_OR_RETURN(TensorShape out_shape, TensorShape::Make(dims));
    CFX_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(HostAllocator(), dtype_, out_shape));
    int64_t offset = 0;
    for (int64_t i = 0; i < length; ++i) {
      Tensor t = list->tensors[i];
      if (t.buffer() == nullptr) {
        dims[0] = lengths.at<int64_t>(i);
        CFX_ASSIGN_OR_RETURN(TensorShape zeros, TensorShape::Make(dims));
        CFX_ASSIGN_OR_RETURN(t, ZerosTensor(dtype_, zeros));
      }
      CopyElements(t, 0, &out, offset, t.num_elements());
      offset += t.num_elements();
    }
    SetOutput(c, 0, std::move(out));
    SetOutput(c, 1, std::move(lengths));
    return Status();
  }

  // The dimension 0 of element i: its own when set; else leading_dims[i] when there is one, else
  // `shared` (the shape's or the set elements'); an error naming the element without either.
  StatusOr<int64_t> ElementRows(const TensorList& list, int64_t i,
                                const std::vector<int64_t>& leading, int64_t shared) const {
    const Tensor& t = list.tensors[i];
    if (t.buffer() != nullptr) return t.dim(0);
    if (i < static_cast<int64_t>(leading.size())) {
      if (leading[i] < 0)
        return errors::InvalidArgument("leading_dims[", i, "] must be >= 0, got ", leading[i]);
      return leading[i];
    }
    if (shared != kUnknownDim) return shared;
    if (v1_)
      return errors::InvalidArgument(
          "element ", i,
          " is unset and neither the element shape nor the set elements (which must all share "
          "one) fix its dimension 0: Concating lists with uninitialized tensors is not supported "
          "in this version of TensorListConcat (TensorListConcatV2 takes leading_dims)");
    return errors::InvalidArgument("List contains uninitialized tensor at index ", i,
                                   " but leading_dims has only ", leading.size(),
                                   " elements, and neither the element shape nor the set elements "
                                   "(which must all share one) fix its dimension 0");
  }

  bool v1_ = false;
  PartialTensorShape attr_shape_;  // V1's element_shape attr, dimension 0 unknown
};

class SplitKernel : public ListKernel {
  Status Run(KernelContext* c) override {
    const Tensor& value = c->inputs[0];
    CFX_ASSIGN_OR_RETURN(PartialTensorShape shape, ShapeFromTensor(c->inputs[1], "element_shape"));
    CFX_ASSIGN_OR_RETURN(std::vector<int64_t> lengths, VectorInput(c, 2, "lengths"));
    if (value.rank() < 1)
      return errors::InvalidArgument("Tensor must be at least a vector, but saw shape: ",
                                     value.shape().ToString());
    if (!shape.unknown_rank() && shape.rank() < 1)
      return errors::InvalidArgument("TensorListSplit requires element_shape to be at least of "
                                     "rank 1, but saw: ",
                                     shape.ToString());
    int64_t total = 0;
    for (int64_t n : lengths) {
      if (n < 0)
        return errors::InvalidArgument("TensorListSplit: lengths must be >= 0, got ", n);
      total += n;
    }
    if (total != value.dim(0))
      return errors::InvalidArgument("Unaligned lengths: they sum to ", total,
                                     " but the tensor has ", value.dim(0), " rows (shape ",
                                     value.shape().ToString(), ")");
    auto list = std::make_shared<TensorList>();
    list->element_dtype = dtype_;
    list->element_shape = shape;
    const std::vector<int64_t> past0 = Except0(value.shape().dims());
    const int64_t row = TensorShape(past0).num_elements();
    int64_t begin = 0;
    for (int64_t n : lengths) {
      std::vector<int64_t> dims{n};
      dims.insert(dims.end(), past0.begin(), past0.end());
      if (!shape.IsCompatibleWith(PartialTensorShape(dims)))
        return errors::InvalidArgument("TensorListSplit: a piece of shape ",
                                       PartialTensorShape(dims).ToString(),
                                       " is incompatible with the element shape ",
                                       shape.ToString());
      CFX_ASSIGN_OR_RETURN(Tensor piece,
                           Tensor::Allocate(HostAllocator(), dtype_, TensorShape(dims)));
      CopyElements(value, begin * row, &piece, 0, n * row);
      list->tensors.push_back(std::move(piece));
      begin += n;
    }
    SetOutput(c, 0, ListTensor(std::move(list)));
    return Status();
  }
};

// TensorListConcatLists: output[k] is input_a[k] with the elements of input_b[k] appended, for
// two variant tensors of one shape holding lists of element_dtype with identical element shapes.
// As TensorFlow's, it keeps a's max_num_elements without checking it.
class ConcatListsKernel : public ListKernel {
  Status Run(KernelContext* c) override {
    const Tensor& a = c->inputs[0];
    const Tensor& b = c->inputs[1];
    if (a.shape() != b.shape())
      return errors::InvalidArgument("Incompatible input TensorList tensor shapes: input_a is ",
                                     a.shape().ToString(), " but input_b is ", b.shape().ToString(),
                                     "; they must be equal");
    std::vector<const TensorList*> tails;
    for (int64_t k = 0; k < a.num_elements(); ++k) {
      CFX_ASSIGN_OR_RETURN(const TensorList* head, ListAt(a, k, dtype_, "input_a"));
      CFX_ASSIGN_OR_RETURN(const TensorList* tail, ListAt(b, k, dtype_, "input_b"));
      if (!(head->element_shape == tail->element_shape))
        return errors::InvalidArgument(
            "input_a and input_b TensorList element shapes are not identical at index ", k,
            ". Saw ", head->element_shape.ToString(), " vs. ", tail->element_shape.ToString());
      tails.push_back(tail);
    }
    Tensor out(DT_VARIANT, a.shape());
    for (int64_t k = 0; k < a.num_elements(); ++k) {
      std::shared_ptr<TensorList> list = TakeOrCopyList(c->inputs[0], k);
      list->tensors.insert(list->tensors.end(), tails[k]->tensors.begin(), tails[k]->tensors.end());
      out.at<Variant>(k) = std::move(list);
    }
    SetOutput(c, 0, std::move(out));
    return Status();
  }
};

// TensorListPushBackBatch: output_handles[k] is input_handles[k] (a vector of lists) with row k
// of the tensor appended. As TensorFlow's, it does not check the lists' max_num_elements.
class PushBackBatchKernel : public ListKernel {
  Status Run(KernelContext* c) override {
    const Tensor& handles = c->inputs[0];
    const Tensor& value = c->inputs[1];
    if (handles.rank() != 1)
      return errors::InvalidArgument("Expected input_handles to be a vector, but saw shape: ",
                                     handles.shape().ToString());
    if (value.rank() < 1)
      return errors::InvalidArgument(
          "Expected tensor to be at least a vector (one row per list), but saw shape: ",
          value.shape().ToString());
    const int64_t batch = handles.dim(0);
    if (value.dim(0) != batch)
      return errors::InvalidArgument("Expected tensor.shape[0] == input_handles.size, but saw ",
                                     value.dim(0), " vs. ", batch, " (tensor shape ",
                                     value.shape().ToString(), ")");
    std::vector<Tensor> rows;
    for (int64_t k = 0; k < batch; ++k) {
      CFX_ASSIGN_OR_RETURN(const TensorList* list, ListAt(handles, k, dtype_, "input_handles"));
      CFX_ASSIGN_OR_RETURN(Tensor row, Row(value, k));
      Status s = CheckItem(*list, row, "push");
      if (!s.ok()) return s.WithPrefix(StrCat("input_handles[", k, "]: "));
      rows.push_back(std::move(row));
    }
    Tensor out(DT_VARIANT, handles.shape());
    for (int64_t k = 0; k < batch; ++k) {
      std::shared_ptr<TensorList> list = TakeOrCopyList(c->inputs[0], k);
      list->tensors.push_back(std::move(rows[k]));
      out.at<Variant>(k) = std::move(list);
    }
    SetOutput(c, 0, std::move(out));
    return Status();
  }
};

// ZerosLike of a list (T=variant): the gradient of a list nothing downstream differentiates.
class ZerosLikeListKernel : public ListKernel {
  Status Run(KernelContext* c) override {
    CFX_ASSIGN_OR_RETURN(const TensorList* list, ListInput(c, 0, DT_INVALID));
    CFX_ASSIGN_OR_RETURN(std::shared_ptr<TensorList> zeros, ZerosLikeList(*list));
    SetOutput(c, 0, ListTensor(std::move(zeros)));
    return Status();
  }
};

// AddN of lists (T=variant): the sum of the gradients of a list that several ops read. Input 0's
// list is taken when nothing else holds it; the others are added into it.
class AddNListKernel : public ListKernel {
  Status Run(KernelContext* c) override {
    CFX_ASSIGN_OR_RETURN(std::shared_ptr<TensorList> sum, ForwardOrCopyList(c, 0, DT_INVALID));
    for (int i = 1; i < c->num_inputs; ++i) {
      CFX_ASSIGN_OR_RETURN(const TensorList* list, ListInput(c, i, DT_INVALID));
      Status s = AddListInto(sum.get(), *list);
      if (!s.ok()) return s.WithPrefix(StrCat("AddN of lists, input ", i, ": "));
    }
    SetOutput(c, 0, ListTensor(std::move(sum)));
    return Status();
  }
};

}  // namespace

void RegisterListKernels(KernelRegistry* r) {
  auto reg = [&](KernelDef def) { RegisterBuiltin(r, std::move(def)); };
  const uint32_t cheap = kKernelInexpensive;
  reg(BuiltinKernelDef<EmptyKernel>("EmptyTensorList", "CPU", false, cheap));
  reg(BuiltinKernelDef<ReserveKernel>("TensorListReserve", "CPU", false, cheap));
  reg(BuiltinKernelDef<GetItemKernel>("TensorListGetItem", "CPU", false, cheap));
  reg(BuiltinKernelDef<SetItemKernel>("TensorListSetItem", "CPU", false, cheap));
  reg(BuiltinKernelDef<PushBackKernel>("TensorListPushBack", "CPU", false, cheap));
  reg(BuiltinKernelDef<PopBackKernel>("TensorListPopBack", "CPU", false, cheap));
  reg(BuiltinKernelDef<LengthKernel>("TensorListLength", "CPU", false, cheap));
  reg(BuiltinKernelDef<ElementShapeKernel>("TensorListElementShape", "CPU", false, cheap));
  reg(BuiltinKernelDef<ResizeKernel>("TensorListResize", "CPU", false, cheap));
  // These copy whole tensors, or the lists of a batch: not inexpensive.
  reg(BuiltinKernelDef<FromTensorKernel>("TensorListFromTensor", "CPU", false, 0));
  reg(BuiltinKernelDef<TensorListStackKernel>("TensorListStack", "CPU", false, 0));
  reg(BuiltinKernelDef<GatherKernel>("TensorListGather", "CPU", false, 0));
  reg(BuiltinKernelDef<ScatterIntoExistingKernel>("TensorListScatterIntoExistingList", "CPU",
                                                  false, 0));
  reg(BuiltinKernelDef<ScatterKernel>("TensorListScatter", "CPU", false, 0));
  reg(BuiltinKernelDef<ScatterKernel>("TensorListScatterV2", "CPU", false, 0));
  reg(BuiltinKernelDef<ConcatKernel>("TensorListConcat", "CPU", false, 0));
  reg(BuiltinKernelDef<ConcatKernel>("TensorListConcatV2", "CPU", false, 0));
  reg(BuiltinKernelDef<SplitKernel>("TensorListSplit", "CPU", false, 0));
  reg(BuiltinKernelDef<ConcatListsKernel>("TensorListConcatLists", "CPU", false, 0));
  reg(BuiltinKernelDef<PushBackBatchKernel>("TensorListPushBackBatch", "CPU", false, 0));
  // The variant cases of two numeric ops, as TensorFlow registers its list's ZerosLike and
  // AddN: the device plugins' kernels of these ops take no variants. Both write every element.
  for (KernelDef def : {BuiltinKernelDef<ZerosLikeListKernel>("ZerosLike", "CPU", false, 0),
                        BuiltinKernelDef<AddNListKernel>("AddN", "CPU", false, 0)}) {
    def.type_constraints["T"] = {DT_VARIANT};
    reg(std::move(def));
  }
}

}  // namespace cfx::internal
