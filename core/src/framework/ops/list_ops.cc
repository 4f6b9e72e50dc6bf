// TensorFlow's TensorList ops: lists of tensors held by scalar DT_VARIANT tensors (kernels in
// kernels/list_kernels.cc). Signatures and attrs are TensorFlow 2.21's (the full-type
// annotations of the variant outputs, which no GraphDef carries, are left out).
//
// Shape inference sees the list's element shape only through the ops' own element_shape inputs:
// Conflux keeps no shape data on variant handles (TensorFlow's handle_data), so an element output
// whose op was given only -1 (unknown rank) is unknown, where TensorFlow may know more.
#include "conflux/shape_inference.h"
#include "framework/ops/ops.h"
#include "framework/ops/shape_fn_util.h"

namespace cfx::internal {
namespace {

// The element shape that shape input `i` describes (-1 as a scalar: unknown rank).
StatusOr<PartialTensorShape> ElementShapeInput(const InferenceContext& c, int i) {
  const Tensor* t = c.input_tensor(i);
  if (t != nullptr && t->rank() == 0) {
    if (t->dtype() != DT_INT32 && t->dtype() != DT_INT64)
      return c.Error(StrCat("input ", i, " (element_shape) must be int32 or int64, got ",
                            DataTypeString(t->dtype())));
    const int64_t v = t->dtype() == DT_INT64 ? t->at<int64_t>(0) : t->at<int32_t>(0);
    if (v != -1)
      return c.Error(StrCat("the only valid scalar element_shape is -1 (unknown rank), got ", v));
    return PartialTensorShape::UnknownRank();
  }
  return c.MakeShapeFromInput(i);
}

// [leading] + element; unknown rank when element's rank is unknown.
PartialTensorShape PrependDim(int64_t leading, const PartialTensorShape& element) {
  if (element.unknown_rank()) return PartialTensorShape::UnknownRank();
  std::vector<int64_t> dims{leading};
  dims.insert(dims.end(), element.dims().begin(), element.dims().end());
  return PartialTensorShape(std::move(dims));
}

// The inputs at `indices` must be scalars where their rank is known; output 0 is a list.
Status ListOutput(InferenceContext& c, std::initializer_list<int> scalar_inputs) {
  for (int i : scalar_inputs) CFX_RETURN_IF_ERROR(c.WithRank(i, 0).status());
  c.set_output(0, PartialTensorShape(TensorShape()));
  return Status();
}

// TensorListScatter(V2)'s list of the rows of input 0 at the indices of input 1 (a vector); V2's
// num_elements is a scalar.
Status ScatterOutput(InferenceContext& c) {
  CFX_RETURN_IF_ERROR(c.WithRankAtLeast(0, 1).status());
  CFX_RETURN_IF_ERROR(c.WithRank(1, 1).status());
  if (c.num_inputs() > 3) return ListOutput(c, {3});
  return ListOutput(c, {});
}

// TensorListConcat(V2)'s outputs: the elements, of shape `element`, concatenated along
// dimension 0 ([?] + element[1:]), and one length per element.
Status ConcatOutputs(InferenceContext& c, const PartialTensorShape& element) {
  CFX_RETURN_IF_ERROR(c.WithRank(0, 0).status());
  PartialTensorShape out = PartialTensorShape::UnknownRank();
  if (!element.unknown_rank() && element.rank() >= 1) {
    std::vector<int64_t> dims = element.dims();
    dims[0] = kUnknownDim;
    out = PartialTensorShape(std::move(dims));
  }
  c.set_output(0, std::move(out));
  c.set_output(1, PartialTensorShape({kUnknownDim}));
  return Status();
}

}  // namespace

void RegisterListOps(OpRegistry* r) {
  r->RegisterOrDie(OpDefBuilder("EmptyTensorList")
                       .Input("element_shape: shape_type")
                       .Input("max_num_elements: int32")
                       .Output("handle: variant")
                       .Attr("element_dtype: type")
                       .Attr("shape_type: {int32, int64}")
                       .SetShapeFn([](InferenceContext& c) { return ListOutput(c, {1}); })
                       .Summary("An empty list of `element_dtype` tensors of `element_shape`, "
                                "holding at most `max_num_elements` (-1: no limit)."));
  r->RegisterOrDie(OpDefBuilder("TensorListReserve")
                       .Input("element_shape: shape_type")
                       .Input("num_elements: int32")
                       .Output("handle: variant")
                       .Attr("element_dtype: type")
                       .Attr("shape_type: {int32, int64}")
                       .SetShapeFn([](InferenceContext& c) { return ListOutput(c, {1}); })
                       .Summary("A list of `num_elements` unset elements (read as zeros)."));
  r->RegisterOrDie(OpDefBuilder("TensorListFromTensor")
                       .Input("tensor: element_dtype")
                       .Input("element_shape: shape_type")
                       .Output("output_handle: variant")
                       .Attr("element_dtype: type")
                       .Attr("shape_type: {int32, int64}")
                       .SetShapeFn([](InferenceContext& c) -> Status {
                         CFX_RETURN_IF_ERROR(c.WithRankAtLeast(0, 1).status());
                         return ListOutput(c, {});
                       })
                       .Summary("A list of the rows of `tensor`."));
  r->RegisterOrDie(OpDefBuilder("TensorListStack")
                       .Input("input_handle: variant")
                       .Input("element_shape: int32")
                       .Output("tensor: element_dtype")
                       .Attr("element_dtype: type")
                       .Attr("num_elements: int = -1")
                       .SetShapeFn([](InferenceContext& c) -> Status {
                         CFX_RETURN_IF_ERROR(c.WithRank(0, 0).status());
                         int64_t n = -1;
                         CFX_RETURN_IF_ERROR(c.GetAttr("num_elements", &n));
                         CFX_ASSIGN_OR_RETURN(PartialTensorShape e, ElementShapeInput(c, 1));
                         c.set_output(0, PrependDim(n, e));
                         return Status();
                       })
                       .Summary("The elements of the list stacked along a new dimension 0."));
  r->RegisterOrDie(OpDefBuilder("TensorListGetItem")
                       .Input("input_handle: variant")
                       .Input("index: int32")
                       .Input("element_shape: Tshape")
                       .Output("item: element_dtype")
                       .Attr("element_dtype: type")
                       .Attr("Tshape: {int32, int64} = DT_INT32")
                       .SetShapeFn([](InferenceContext& c) -> Status {
                         CFX_RETURN_IF_ERROR(c.WithRank(0, 0).status());
                         CFX_RETURN_IF_ERROR(c.WithRank(1, 0).status());
                         CFX_ASSIGN_OR_RETURN(PartialTensorShape e, ElementShapeInput(c, 2));
                         c.set_output(0, e);
                         return Status();
                       })
                       .Summary("Element `index` of the list (zeros when it is unset)."));
  r->RegisterOrDie(OpDefBuilder("TensorListSetItem")
                       .Input("input_handle: variant")
                       .Input("index: int32")
                       .Input("item: element_dtype")
                       .Output("output_handle: variant")
                       .Attr("element_dtype: type")
                       .Attr("resize_if_index_out_of_bounds: bool = false")
                       .SetShapeFn([](InferenceContext& c) { return ListOutput(c, {0, 1}); })
                       .Summary("The list with element `index` set to `item`."));
  r->RegisterOrDie(OpDefBuilder("TensorListPushBack")
                       .Input("input_handle: variant")
                       .Input("tensor: element_dtype")
                       .Output("output_handle: variant")
                       .Attr("element_dtype: type")
                       .SetShapeFn([](InferenceContext& c) { return ListOutput(c, {0}); })
                       .Summary("The list with `tensor` appended."));
  r->RegisterOrDie(OpDefBuilder("TensorListPopBack")
                       .Input("input_handle: variant")
                       .Input("element_shape: int32")
                       .Output("output_handle: variant")
                       .Output("tensor: element_dtype")
                       .Attr("element_dtype: type")
                       .SetShapeFn([](InferenceContext& c) -> Status {
                         CFX_RETURN_IF_ERROR(ListOutput(c, {0}));
                         CFX_ASSIGN_OR_RETURN(PartialTensorShape e, ElementShapeInput(c, 1));
                         c.set_output(1, e);
                         return Status();
                       })
                       .Summary("The list without its last element, and that element."));
  r->RegisterOrDie(OpDefBuilder("TensorListLength")
                       .Input("input_handle: variant")
                       .Output("length: int32")
                       .SetShapeFn([](InferenceContext& c) { return ListOutput(c, {0}); })
                       .Summary("The number of elements of the list."));
  r->RegisterOrDie(OpDefBuilder("TensorListElementShape")
                       .Input("input_handle: variant")
                       .Output("element_shape: shape_type")
                       .Attr("shape_type: {int32, int64}")
                       .SetShapeFn([](InferenceContext& c) -> Status {
                         CFX_RETURN_IF_ERROR(c.WithRank(0, 0).status());
                         return UnknownShape(c);  // a vector, or -1 for an unknown rank
                       })
                       .Summary("The list's element shape (-1 where unknown)."));
  r->RegisterOrDie(OpDefBuilder("TensorListResize")
                       .Input("input_handle: variant")
                       .Input("size: int32")
                       .Output("output_handle: variant")
                       .SetShapeFn([](InferenceContext& c) { return ListOutput(c, {0, 1}); })
                       .Summary("The list truncated, or extended with unset elements, to `size`."));
  r->RegisterOrDie(OpDefBuilder("TensorListGather")
                       .Input("input_handle: variant")
                       .Input("indices: int32")
                       .Input("element_shape: int32")
                       .Output("values: element_dtype")
                       .Attr("element_dtype: type")
                       .SetShapeFn([](InferenceContext& c) -> Status {
                         CFX_RETURN_IF_ERROR(c.WithRank(0, 0).status());
                         CFX_ASSIGN_OR_RETURN(PartialTensorShape indices, c.WithRank(1, 1));
                         CFX_ASSIGN_OR_RETURN(PartialTensorShape e, ElementShapeInput(c, 2));
                         c.set_output(0, PrependDim(indices.dim(0), e));
                         return Status();
                       })
                       .Summary("The elements at `indices`, stacked."));
  r->RegisterOrDie(OpDefBuilder("TensorListScatterIntoExistingList")
                       .Input("input_handle: variant")
                       .Input("tensor: element_dtype")
                       .Input("indices: int32")
                       .Output("output_handle: variant")
                       .Attr("element_dtype: type")
                       .SetShapeFn([](InferenceContext& c) -> Status {
                         CFX_RETURN_IF_ERROR(c.WithRankAtLeast(1, 1).status());
                         CFX_RETURN_IF_ERROR(c.WithRank(2, 1).status());
                         return ListOutput(c, {0});
                       })
                       .Summary("The list with row i of `tensor` at `indices[i]` (growing it)."));
  r->RegisterOrDie(OpDefBuilder("TensorListScatterV2")
                       .Input("tensor: element_dtype")
                       .Input("indices: int32")
                       .Input("element_shape: shape_type")
                       .Input("num_elements: int32")
                       .Output("output_handle: variant")
                       .Attr("element_dtype: type")
                       .Attr("shape_type: {int32, int64}")
                       .SetShapeFn(ScatterOutput)
                       .Summary("A list of `num_elements` elements (-1: as many as the largest "
                                "index needs) with row i of `tensor` at `indices[i]`."));
  r->RegisterOrDie(OpDefBuilder("TensorListScatter")
                       .Input("tensor: element_dtype")
                       .Input("indices: int32")
                       .Input("element_shape: shape_type")
                       .Output("output_handle: variant")
                       .Attr("element_dtype: type")
                       .Attr("shape_type: {int32, int64}")
                       .SetShapeFn(ScatterOutput)
                       .Summary("A list as long as the largest index needs with row i of "
                                "`tensor` at `indices[i]` (TensorListScatterV2 with "
                                "num_elements -1)."));
  r->RegisterOrDie(OpDefBuilder("TensorListConcatV2")
                       .Input("input_handle: variant")
                       .Input("element_shape: shape_type")
                       .Input("leading_dims: int64")
                       .Output("tensor: element_dtype")
                       .Output("lengths: int64")
                       .Attr("element_dtype: type")
                       .Attr("shape_type: {int32, int64}")
                       .SetShapeFn([](InferenceContext& c) -> Status {
                         CFX_ASSIGN_OR_RETURN(PartialTensorShape e, ElementShapeInput(c, 1));
                         return ConcatOutputs(c, e);
                       })
                       .Summary("The elements concatenated along dimension 0, and their "
                                "lengths."));
  r->RegisterOrDie(OpDefBuilder("TensorListConcat")
                       .Input("input_handle: variant")
                       .Output("tensor: element_dtype")
                       .Output("lengths: int64")
                       .Attr("element_dtype: type")
                       .Attr("element_shape: shape = { unknown_rank: true }")
                       .SetShapeFn([](InferenceContext& c) -> Status {
                         PartialTensorShape e;
                         CFX_RETURN_IF_ERROR(c.GetAttr("element_shape", &e));
                         return ConcatOutputs(c, e);
                       })
                       .Summary("TensorListConcatV2 without leading_dims, the element shape an "
                                "attr: an unset element takes the dimension 0 that the set ones "
                                "share."));
  r->RegisterOrDie(OpDefBuilder("TensorListSplit")
                       .Input("tensor: element_dtype")
                       .Input("element_shape: shape_type")
                       .Input("lengths: int64")
                       .Output("output_handle: variant")
                       .Attr("element_dtype: type")
                       .Attr("shape_type: {int32, int64}")
                       .SetShapeFn([](InferenceContext& c) -> Status {
                         CFX_RETURN_IF_ERROR(c.WithRankAtLeast(0, 1).status());
                         CFX_RETURN_IF_ERROR(c.WithRank(2, 1).status());
                         return ListOutput(c, {});
                       })
                       .Summary("A list of the pieces of `tensor` along dimension 0 of "
                                "`lengths` rows."));
  // Batches of lists: variant tensors of any shape (ConcatLists) or vectors (PushBackBatch)
  // holding one list per element, as TensorFlow's pfor vectorizes the list ops of a loop body.
  r->RegisterOrDie(OpDefBuilder("TensorListConcatLists")
                       .Input("input_a: variant")
                       .Input("input_b: variant")
                       .Output("output: variant")
                       .Attr("element_dtype: type")
                       .SetShapeFn(MergeBothInputsShape)
                       .Summary("Element-wise, list a[i] with the elements of list b[i] "
                                "appended."));
  r->RegisterOrDie(
      OpDefBuilder("TensorListPushBackBatch")
          .Input("input_handles: variant")
          .Input("tensor: element_dtype")
          .Output("output_handles: variant")
          .Attr("element_dtype: type")
          .SetShapeFn([](InferenceContext& c) -> Status {
            CFX_ASSIGN_OR_RETURN(PartialTensorShape handles, c.WithRank(0, 1));
            CFX_ASSIGN_OR_RETURN(PartialTensorShape tensor, c.WithRankAtLeast(1, 1));
            const PartialTensorShape rows({tensor.unknown_rank() ? kUnknownDim : tensor.dim(0)});
            auto batch = handles.Merge(rows);
            if (!batch.ok())
              return c.Error(StrCat("input_handles holds ", handles.dim(0),
                                    " lists but tensor has ", tensor.dim(0),
                                    " rows; there must be one row per list"));
            c.set_output(0, *std::move(batch));
            return Status();
          })
          .Summary("Element-wise, list input_handles[i] with row i of `tensor` appended."));
}

}  // namespace cfx::internal
