// Gradients of the TensorList ops, as TensorFlow 2.21 defines them (list_ops.py): the gradient of
// a list is a list of the same length whose element i is the gradient of element i, and each op's
// gradient is its dual: PushBack and PopBack, Stack and FromTensor, GetItem and SetItem, Gather
// and Scatter, Concat and Split, Resize and Resize back. The V1 forms (TensorListConcat,
// TensorListScatter) share their V2 forms' gradients, as in TensorFlow.
//
// A gradient list may have unset elements (the elements of a GetItem's gradient other than the
// one read): they read as zeros wherever a gradient function reads elements, because every read
// here passes the element shape of the forward tensor. Several gradients of one list are summed
// by AddN and a missing one is ZerosLike, both of which the runtime implements for lists
// (kernels/list_kernels.cc).
#include "conflux/cc/ops/standard_ops.h"
#include "grad_helpers.h"

namespace cfx::internal {
namespace {

using Grads = std::vector<Output>;

// The shape of one row of `t` (its shape past dimension 0), as the element_shape input of a list
// op that reads or writes rows of `t`.
Output RowShape(const Scope& s, const Output& t) {
  return ops::Slice(s, ops::Shape(s, t), {1}, {-1});
}

Output ElementShape(const Scope& s, const Output& list) {
  return ops::TensorListElementShape(s, list, DT_INT32);
}

// A list of forward list `list`'s element shape and length with no element set (all zeros): the
// gradient of `list` before the gradients of the elements an op read are set into it.
Output UnsetListLike(const Scope& s, const Output& list, DataType dtype) {
  return ops::TensorListReserve(s, ElementShape(s, list), ops::TensorListLength(s, list), dtype);
}

// PushBack(list, item) -> list: pop the item's gradient off the list's gradient.
Status PushBackGrad(const Scope& s, const Operation& op, const Grads& dy, Grads* dx) {
  const Output item = op.input(1);
  auto popped = ops::TensorListPopBack(s, dy[0], ops::Shape(s, item), item.type());
  *dx = {popped.output_handle, popped.tensor};
  return s.status();
}

// PopBack(list, element_shape) -> (list, item): push the item's gradient back.
Status PopBackGrad(const Scope& s, const Operation& op, const Grads& dy, Grads* dx) {
  (void)op;
  *dx = {ops::TensorListPushBack(s, dy[0], dy[1]), Output()};
  return s.status();
}

// Stack(list, element_shape) -> tensor: the rows of the tensor's gradient.
Status StackGrad(const Scope& s, const Operation& op, const Grads& dy, Grads* dx) {
  (void)op;
  *dx = {ops::TensorListFromTensor(s, dy[0], RowShape(s, dy[0])), Output()};
  return s.status();
}

// FromTensor(tensor, element_shape) -> list: the list's gradient stacked, unset rows as zeros.
Status FromTensorGrad(const Scope& s, const Operation& op, const Grads& dy, Grads* dx) {
  const Output tensor = op.input(0);
  *dx = {ops::TensorListStack(s, dy[0], RowShape(s, tensor), tensor.type()), Output()};
  return s.status();
}

// GetItem(list, index, element_shape) -> item: a list like the forward one with only the item's
// gradient set, at the index.
Status GetItemGrad(const Scope& s, const Operation& op, const Grads& dy, Grads* dx) {
  Output unset = UnsetListLike(s, op.input(0), dy[0].type());
  *dx = {ops::TensorListSetItem(s, unset, op.input(1), dy[0]), Output(), Output()};
  return s.status();
}

// SetItem(list, index, item) -> list: the item's gradient is read at the index, and the list's
// is the output's with that element zeroed (the forward op replaced it), cut back to the input's
// length when the op grew the list.
Status SetItemGrad(const Scope& s, const Operation& op, const Grads& dy, Grads* dx) {
  const Output list = op.input(0), index = op.input(1), item = op.input(2);
  Output list_grad = ops::TensorListSetItem(s, dy[0], index, ops::ZerosLike(s, item));
  Output item_grad = ops::TensorListGetItem(s, dy[0], index, ops::Shape(s, item), item.type());
  const AttrValue* resize = op.node()->attr("resize_if_index_out_of_bounds");
  if (resize != nullptr && resize->b)
    list_grad = ops::TensorListResize(s, list_grad, ops::TensorListLength(s, list));
  *dx = {list_grad, Output(), item_grad};
  return s.status();
}

// Resize(list, size) -> list: the gradient resized back to the input's length. The gradients of
// elements a growing Resize added (unset) are dropped; those of elements a shrinking one dropped
// are unset, so zeros.
Status ResizeGrad(const Scope& s, const Operation& op, const Grads& dy, Grads* dx) {
  *dx = {ops::TensorListResize(s, dy[0], ops::TensorListLength(s, op.input(0))), Output()};
  return s.status();
}

// Gather(list, indices, element_shape) -> values: the rows of the values' gradient scattered at
// the indices into a list like the forward one.
Status GatherGrad(const Scope& s, const Operation& op, const Grads& dy, Grads* dx) {
  Output unset = UnsetListLike(s, op.input(0), dy[0].type());
  *dx = {ops::TensorListScatterIntoExistingList(s, unset, dy[0], op.input(1)), Output(), Output()};
  return s.status();
}

// The gradient of the rows a scatter wrote at `indices` from `tensor`: the list's gradient
// gathered there.
Output ScatteredRowsGrad(const Scope& s, const Output& dlist, const Output& tensor,
                         const Output& indices) {
  return ops::TensorListGather(s, dlist, indices, RowShape(s, tensor), tensor.type());
}

// Scatter(tensor, indices, element_shape) -> list, and ScatterV2 with num_elements: the rows'
// gradient is gathered; the other inputs have none.
Status ScatterGrad(const Scope& s, const Operation& op, const Grads& dy, Grads* dx) {
  *dx = Grads(op.num_inputs());
  (*dx)[0] = ScatteredRowsGrad(s, dy[0], op.input(0), op.input(1));
  return s.status();
}

// ScatterIntoExistingList(list, tensor, indices) -> list: the rows' gradient is gathered, and the
// list's is the output's with the overwritten elements zeroed.
Status ScatterIntoExistingGrad(const Scope& s, const Operation& op, const Grads& dy, Grads* dx) {
  const Output tensor = op.input(1), indices = op.input(2);
  Output rows_grad = ScatteredRowsGrad(s, dy[0], tensor, indices);
  Output list_grad =
      ops::TensorListScatterIntoExistingList(s, dy[0], ops::ZerosLike(s, tensor), indices);
  *dx = {list_grad, rows_grad, Output()};
  return s.status();
}

// Concat(list) and ConcatV2(list, element_shape, leading_dims) -> (tensor, lengths): the
// tensor's gradient split by the lengths the forward op output; the list's is the only one.
Status ConcatGrad(const Scope& s, const Operation& op, const Grads& dy, Grads* dx) {
  *dx = Grads(op.num_inputs());
  (*dx)[0] = ops::TensorListSplit(s, dy[0], ElementShape(s, op.input(0)), op.output(1));
  return s.status();
}

// Split(tensor, element_shape, lengths) -> list: the list's gradient concatenated, an unset
// element as zeros of its length and the tensor's row shape.
Status SplitGrad(const Scope& s, const Operation& op, const Grads& dy, Grads* dx) {
  const Output tensor = op.input(0), lengths = op.input(2);
  Output element_shape = ops::ConcatV2(s, {ops::Const(s, {-1}), RowShape(s, tensor)}, 0);
  auto concat = ops::TensorListConcatV2(s, dy[0], element_shape, lengths, tensor.type());
  *dx = {concat.tensor, Output(), Output()};
  return s.status();
}

}  // namespace

void RegisterListGradients(GradientRegistry* r) {
  (void)r->Register("TensorListPushBack", PushBackGrad);
  (void)r->Register("TensorListPopBack", PopBackGrad);
  (void)r->Register("TensorListStack", StackGrad);
  (void)r->Register("TensorListFromTensor", FromTensorGrad);
  (void)r->Register("TensorListGetItem", GetItemGrad);
  (void)r->Register("TensorListSetItem", SetItemGrad);
  (void)r->Register("TensorListResize", ResizeGrad);
  (void)r->Register("TensorListGather", GatherGrad);
  (void)r->Register("TensorListScatter", ScatterGrad);
  (void)r->Register("TensorListScatterV2", ScatterGrad);
  (void)r->Register("TensorListScatterIntoExistingList", ScatterIntoExistingGrad);
  (void)r->Register("TensorListConcat", ConcatGrad);
  (void)r->Register("TensorListConcatV2", ConcatGrad);
  (void)r->Register("TensorListSplit", SplitGrad);
  // TensorFlow's list_ops.py declares the batched ops (TensorListConcatLists,
  // TensorListPushBackBatch) not differentiable, as it does Length and ElementShape.
  for (const char* op :
       {"EmptyTensorList", "TensorListReserve", "TensorListLength", "TensorListElementShape",
        "TensorListConcatLists", "TensorListPushBackBatch"})
    r->RegisterNoGradient(op);
}

}  // namespace cfx::internal
