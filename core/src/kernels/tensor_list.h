// TensorList: the value a DT_VARIANT tensor of TensorFlow's TensorList ops holds — an element
// dtype, an element shape (partial) and a vector of tensors, some of which may be unset (a
// reserved slot reads as zeros of the element shape).
//
// A list in a tensor is immutable (a Variant is a shared const value): an op that changes a list
// builds a new one, copying the vector of tensor handles (the element buffers are shared), or
// takes the input's list when no other tensor holds it (ForwardOrCopyList). So a list never
// changes under another consumer of the same tensor, as in TensorFlow. Thread-safety: a const
// TensorList may be read from any thread.
#ifndef CONFLUX_CORE_SRC_KERNELS_TENSOR_LIST_H_
#define CONFLUX_CORE_SRC_KERNELS_TENSOR_LIST_H_

#include <memory>
#include <string>
#include <vector>

#include "conflux/status.h"
#include "conflux/tensor.h"
#include "conflux/tensor_shape.h"
#include "framework/variant.h"
#include "runtime/kernel_context.h"

namespace cfx::internal {

class TensorList final : public VariantValue {
 public:
  DataType element_dtype = DT_INVALID;
  PartialTensorShape element_shape;  // unknown rank when the list was made without one
  std::vector<Tensor> tensors;       // an element without a buffer is unset
  int64_t max_num_elements = -1;     // -1: no limit (EmptyTensorList's max_num_elements)

  std::string TypeName() const override { return "TensorList"; }
  // "TensorList<float, [?,3]> of 4 elements"
  std::string DebugString() const override;
};

// The list held by the scalar variant input `i` of the call, checked to hold `element_dtype`
// (DT_INVALID: any); InvalidArgument naming the input when it is no list or another dtype.
StatusOr<const TensorList*> ListInput(const KernelContext* c, int i, DataType element_dtype);
// A list to change and output in place of input `i`: the input's own list when no other tensor
// or value holds it (it is moved out of the input), otherwise a copy.
StatusOr<std::shared_ptr<TensorList>> ForwardOrCopyList(KernelContext* c, int i,
                                                        DataType element_dtype);
// Batched lists (TensorListConcatLists, TensorListPushBackBatch): a variant tensor of any shape
// holding one list per element. ListAt: the list element `k` of `t` holds, checked to hold
// `element_dtype`; InvalidArgument naming `what`[k] ("input_a[1]") when it holds no list or one
// of another dtype. TakeOrCopyList: a list to change and output in place of that element (which
// ListAt accepted): the element's own list when no other tensor or value holds it (it is moved
// out of `t`), otherwise a copy.
StatusOr<const TensorList*> ListAt(const Tensor& t, int64_t k, DataType element_dtype,
                                   const std::string& what);
std::shared_ptr<TensorList> TakeOrCopyList(Tensor& t, int64_t k);
// A scalar variant host tensor holding `list`.
Tensor ListTensor(std::shared_ptr<const TensorList> list);

// The gradient arithmetic of lists, as TensorFlow's ZerosLike and AddN of variants define it.
// ZerosLikeList: a list of `list`'s dtype, element shape and length whose set elements are
// zeros of their shapes (lists of lists: zeros-like lists) and whose unset elements stay unset.
StatusOr<std::shared_ptr<TensorList>> ZerosLikeList(const TensorList& list);
// Adds `other` into `sum` element by element: an unset element reads as the other list's
// element, two set ones are summed (lists of lists recursively). InvalidArgument naming both
// dtypes, element shapes or lengths when the lists differ, or the index and both shapes when two
// elements do; Unimplemented for an element dtype without host arithmetic.
Status AddListInto(TensorList* sum, const TensorList& other);

// The element shape a shape tensor (int32 or int64) describes: -1 as a scalar is an unknown
// rank, -1 in a vector an unknown dimension. InvalidArgument naming `what` otherwise.
StatusOr<PartialTensorShape> ShapeFromTensor(const Tensor& t, const char* what);
// `shape` as a shape tensor of `dtype` (int32 or int64): a scalar -1 for an unknown rank.
Tensor TensorFromShape(const PartialTensorShape& shape, DataType dtype);

// A host tensor of zeros (empty strings, empty variants) of `dtype` and `shape`.
StatusOr<Tensor> ZerosTensor(DataType dtype, const TensorShape& shape);
// Copies `count` elements of `src` from element `src_offset` into `dst` from `dst_offset`
// (host tensors of one dtype; strings and variants element by element).
void CopyElements(const Tensor& src, int64_t src_offset, Tensor* dst, int64_t dst_offset,
                  int64_t count);

}  // namespace cfx::internal

#endif  // CONFLUX_CORE_SRC_KERNELS_TENSOR_LIST_H_
