// Per-step data structures of dynamic control flow: the TensorArrayV3 family and the StackV2
// family; and the ConditionalAccumulator family that aggregates the gradients of synchronous
// replicas. Signatures, attrs and statefulness are TensorFlow's; kernels are in
// kernels/tensor_array_kernels.cc, kernels/stack_kernels.cc and kernels/accumulator_kernels.cc.
//
// Resource handles are DT_RESOURCE scalars (TensorFlow's shape functions still say [2], a
// leftover of the string handles of the V1 ops). The `flow` scalars carry no data, only the
// order of the operations on one array, and let gradients flow backwards through it.
// ConditionalAccumulator keeps TensorFlow's reference handle: a Ref(string) vector
// [container, name].
#include <initializer_list>

#include "conflux/shape_inference.h"
#include "framework/ops/ops.h"

namespace cfx::internal {
namespace {

// The inputs at `indices` must be scalars (where their rank is known).
Status ScalarInputs(const InferenceContext& c, std::initializer_list<int> indices) {
  for (int i : indices) CFX_RETURN_IF_ERROR(c.WithRank(i, 0).status());
  return Status();
}

// [leading] + element: unknown rank when `element`'s rank is unknown.
PartialTensorShape Prepend(int64_t leading, const PartialTensorShape& element) {
  if (element.unknown_rank()) return PartialTensorShape::UnknownRank();
  std::vector<int64_t> dims{leading};
  dims.insert(dims.end(), element.dims().begin(), element.dims().end());
  return PartialTensorShape(std::move(dims));
}

// The number of elements of a vector input: -1 when unknown.
StatusOr<int64_t> CheckedVectorLength(const InferenceContext& c, int i) {
  CFX_ASSIGN_OR_RETURN(PartialTensorShape s, c.WithRank(i, 1));
  return s.dim(0);
}

void RegisterTensorArrayOps(OpRegistry* r) {
  r->RegisterOrDie(OpDefBuilder("TensorArrayV3")
                       .Input("size: int32")
                       .Output("handle: resource")
                       .Output("flow: float")
                       .Attr("dtype: type")
                       .Attr("element_shape: shape = { unknown_rank: true }")
                       .Attr("dynamic_size: bool = false")
                       .Attr("clear_after_read: bool = true")
                       .Attr("identical_element_shapes: bool = false")
                       .Attr("tensor_array_name: string = ''")
                       .SetIsStateful()
                       .SetShapeFn([](InferenceContext& c) -> Status {
                         CFX_RETURN_IF_ERROR(ScalarInputs(c, {0}));
                         return ScalarShape(c);
                       })
                       .Summary("A new array of `size` tensors for this step; `flow` orders the "
                                "operations on it."));
  r->RegisterOrDie(OpDefBuilder("TensorArrayGradV3")
                       .Input("handle: resource")
                       .Input("flow_in: float")
                       .Output("grad_handle: resource")
                       .Output("flow_out: float")
                       .Attr("source: string")
                       .SetIsStateful()
                       .SetShapeFn([](InferenceContext& c) -> Status {
                         CFX_RETURN_IF_ERROR(ScalarInputs(c, {1}));
                         return ScalarShape(c);
                       })
                       .Summary("The gradient array of `handle` for `source` (created on first "
                                "use): same size and element shapes; writes to one index sum."));
  r->RegisterOrDie(OpDefBuilder("TensorArrayWriteV3")
                       .Input("handle: resource")
                       .Input("index: int32")
                       .Input("value: T")
                       .Input("flow_in: float")
                       .Output("flow_out: float")
                       .Attr("T: type")
                       .SetShapeFn([](InferenceContext& c) -> Status {
                         CFX_RETURN_IF_ERROR(ScalarInputs(c, {1, 3}));
                         return ScalarShape(c);
                       })
                       .SetIsStateful()
                       .Summary("Stores `value` at `index`."));
  r->RegisterOrDie(OpDefBuilder("TensorArrayReadV3")
                       .Input("handle: resource")
                       .Input("index: int32")
                       .Input("flow_in: float")
                       .Output("value: dtype")
                       .Attr("dtype: type")
                       .SetShapeFn([](InferenceContext& c) -> Status {
                         CFX_RETURN_IF_ERROR(ScalarInputs(c, {1, 2}));
                         return UnknownShape(c);
                       })
                       .SetIsStateful()
                       .Summary("The element at `index` (zeros when it was never written and the "
                                "element shape is known)."));
  r->RegisterOrDie(OpDefBuilder("TensorArrayGatherV3")
                       .Input("handle: resource")
                       .Input("indices: int32")
                       .Input("flow_in: float")
                       .Output("value: dtype")
                       .Attr("dtype: type")
                       .Attr("element_shape: shape = { unknown_rank: true }")
                       .SetShapeFn([](InferenceContext& c) -> Status {
                         CFX_RETURN_IF_ERROR(ScalarInputs(c, {2}));
                         CFX_ASSIGN_OR_RETURN(int64_t n, CheckedVectorLength(c, 1));
                         PartialTensorShape element;
                         CFX_RETURN_IF_ERROR(c.GetAttr("element_shape", &element));
                         c.set_output(0, Prepend(n, element));
                         return Status();
                       })
                       .SetIsStateful()
                       .Summary("The elements at `indices` stacked along a new dimension 0."));
  r->RegisterOrDie(
      OpDefBuilder("TensorArrayScatterV3")
          .Input("handle: resource")
          .Input("indices: int32")
          .Input("value: T")
          .Input("flow_in: float")
          .Output("flow_out: float")
          .Attr("T: type")
          .SetShapeFn([](InferenceContext& c) -> Status {
            CFX_RETURN_IF_ERROR(ScalarInputs(c, {3}));
            CFX_ASSIGN_OR_RETURN(int64_t n, CheckedVectorLength(c, 1));
            CFX_ASSIGN_OR_RETURN(PartialTensorShape value, c.WithRankAtLeast(2, 1));
            if (n >= 0 && !value.unknown_rank() && value.dim(0) >= 0 && value.dim(0) != n)
              return c.Error(StrCat("value has ", value.dim(0), " rows (shape ", value.ToString(),
                                    ") but there are ", n, " indices"));
            return ScalarShape(c);
          })
          .SetIsStateful()
          .Summary("Stores row i of `value` at `indices[i]`."));
  r->RegisterOrDie(OpDefBuilder("TensorArrayConcatV3")
                       .Input("handle: resource")
                       .Input("flow_in: float")
                       .Output("value: dtype")
                       .Output("lengths: int64")
                       .Attr("dtype: type")
                       .Attr("element_shape_except0: shape = { unknown_rank: true }")
                       .SetShapeFn([](InferenceContext& c) -> Status {
                         CFX_RETURN_IF_ERROR(ScalarInputs(c, {1}));
                         PartialTensorShape except0;
                         CFX_RETURN_IF_ERROR(c.GetAttr("element_shape_except0", &except0));
                         c.set_output(0, Prepend(-1, except0));
                         c.set_output(1, PartialTensorShape({-1}));
                         return Status();
                       })
                       .SetIsStateful()
                       .Summary("Every element concatenated along dimension 0, and each "
                                "element's length along it."));
  r->RegisterOrDie(OpDefBuilder("TensorArraySplitV3")
                       .Input("handle: resource")
                       .Input("value: T")
                       .Input("lengths: int64")
                       .Input("flow_in: float")
                       .Output("flow_out: float")
                       .Attr("T: type")
                       .SetShapeFn([](InferenceContext& c) -> Status {
                         CFX_RETURN_IF_ERROR(ScalarInputs(c, {3}));
                         CFX_RETURN_IF_ERROR(c.WithRankAtLeast(1, 1).status());
                         CFX_RETURN_IF_ERROR(c.WithRank(2, 1).status());
                         return ScalarShape(c);
                       })
                       .SetIsStateful()
                       .Summary("Stores consecutive pieces of `value` (along dimension 0, "
                                "lengths[i] rows for element i) as the elements."));
  r->RegisterOrDie(OpDefBuilder("TensorArraySizeV3")
                       .Input("handle: resource")
                       .Input("flow_in: float")
                       .Output("size: int32")
                       .SetShapeFn([](InferenceContext& c) -> Status {
                         CFX_RETURN_IF_ERROR(ScalarInputs(c, {1}));
                         return ScalarShape(c);
                       })
                       .SetIsStateful()
                       .Summary("The current number of elements."));
  r->RegisterOrDie(OpDefBuilder("TensorArrayCloseV3")
                       .Input("handle: resource")
                       .SetIsStateful()
                       .Summary("Drops the elements; later operations on the array fail."));
}

void RegisterStackOps(OpRegistry* r) {
  r->RegisterOrDie(OpDefBuilder("StackV2")
                       .Input("max_size: int32")
                       .Output("handle: resource")
                       .Attr("elem_type: type")
                       .Attr("stack_name: string = ''")
                       .SetIsStateful()
                       .SetShapeFn([](InferenceContext& c) -> Status {
                         CFX_RETURN_IF_ERROR(ScalarInputs(c, {0}));
                         return ScalarShape(c);
                       })
                       .Summary("A new last-in first-out stack for this step (unbounded when "
                                "max_size < 0)."));
  r->RegisterOrDie(OpDefBuilder("StackPushV2")
                       .Input("handle: resource")
                       .Input("elem: T")
                       .Output("output: T")
                       .Attr("T: type")
                       .Attr("swap_memory: bool = false")
                       .SetShapeFn([](InferenceContext& c) -> Status {
                         c.set_output(0, c.input(1));
                         return Status();
                       })
                       .SetIsStateful()
                       .Summary("Pushes `elem`; outputs it unchanged."));
  r->RegisterOrDie(OpDefBuilder("StackPopV2")
                       .Input("handle: resource")
                       .Output("elem: elem_type")
                       .Attr("elem_type: type")
                       .SetShapeFn(UnknownShape)
                       .SetIsStateful()
                       .Summary("Removes and returns the last pushed element."));
  r->RegisterOrDie(OpDefBuilder("StackCloseV2")
                       .Input("handle: resource")
                       .SetIsStateful()
                       .Summary("Drops the elements; later operations on the stack fail."));
}

// Input 1 (local_step, num_required, new_global_step) must be a scalar.
Status ScalarInput1(InferenceContext& c) { return ScalarInputs(c, {1}); }

// ConditionalAccumulator with its reference handle and ResourceConditionalAccumulator with a
// resource handle; the operations on them come in both forms ("" and "Resource" prefixed). As in
// TensorFlow, the operations of the resource form are stateful and those of the reference form
// are not (a reference input already keeps them from being merged or folded).
void RegisterAccumulatorOps(OpRegistry* r) {
  for (bool resource : {false, true}) {
    const std::string prefix = resource ? "Resource" : "";
    const std::string handle = resource ? "handle: resource" : "handle: Ref(string)";
    r->RegisterOrDie(OpDefBuilder(prefix + "ConditionalAccumulator")
                         .Output(handle)
                         .Attr("dtype: numbertype")
                         .Attr("shape: shape")
                         .Attr("container: string = ''")
                         .Attr("shared_name: string = ''")
                         .Attr("reduction_type: {'MEAN', 'SUM'} = 'MEAN'")
                         .SetIsStateful()
                         .SetShapeFn([resource](InferenceContext& c) -> Status {
                           if (resource) return ScalarShape(c);
                           c.set_output(0, PartialTensorShape({2}));
                           return Status();
                         })
                         .Summary("An accumulator of gradients of `shape`: it sums those not "
                                  "older than its global step until they are taken."));
    r->RegisterOrDie(OpDefBuilder(prefix + "AccumulatorApplyGradient")
                         .Input(handle)
                         .Input("local_step: int64")
                         .Input("gradient: dtype")
                         .Attr("dtype: numbertype")
                         .SetShapeFn(ScalarInput1)
                         .SetIsStateful(resource)
                         .Summary("Adds `gradient` to the accumulator unless `local_step` is "
                                  "older than its global step (then drops it)."));
    r->RegisterOrDie(OpDefBuilder(prefix + "AccumulatorTakeGradient")
                         .Input(handle)
                         .Input("num_required: int32")
                         .Output("average: dtype")
                         .Attr("dtype: numbertype")
                         .SetShapeFn([](InferenceContext& c) -> Status {
                           CFX_RETURN_IF_ERROR(ScalarInputs(c, {1}));
                           return UnknownShape(c);
                         })
                         .SetIsStateful(resource)
                         .Summary("Waits until `num_required` gradients were added; returns "
                                  "their mean (or sum), resets the sum and advances the "
                                  "global step by one."));
    r->RegisterOrDie(OpDefBuilder(prefix + "AccumulatorNumAccumulated")
                         .Input(handle)
                         .Output("num_accumulated: int32")
                         .SetShapeFn(ScalarShape)
                         .SetIsStateful(resource)
                         .Summary("The number of gradients summed since the last take."));
    r->RegisterOrDie(OpDefBuilder(prefix + "AccumulatorSetGlobalStep")
                         .Input(handle)
                         .Input("new_global_step: int64")
                         .SetShapeFn(ScalarInput1)
                         .SetIsStateful(resource)
                         .Summary("Sets the accumulator's global step: gradients of older "
                                  "local steps are dropped from then on."));
  }
}

}  // namespace

void RegisterDataFlowOps(OpRegistry* r) {
  RegisterTensorArrayOps(r);
  RegisterStackOps(r);
  RegisterAccumulatorOps(r);
}

}  // namespace cfx::internal
