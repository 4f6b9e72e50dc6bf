// Runtime ops: _Arg, _Retval, _Send, _Recv; variables (VariableV2 family and resource
// variables, ResourceGather, DisableCopyOnRead); queues (FIFOQueueV2, RandomShuffleQueueV2 and
// their operations).
#include "conflux/shape_inference.h"
#include "framework/ops/ops.h"

namespace cfx::internal {
namespace {

Status ShapeFromAttr(InferenceContext& c) {
  PartialTensorShape s;
  CFX_RETURN_IF_ERROR(c.GetAttr("shape", &s));
  c.set_output(0, s);
  return Status();
}

}  // namespace

void RegisterStateOps(OpRegistry* r) {
  // The call frame and the rendezvous.
  r->RegisterOrDie(OpDefBuilder("_Arg")
                       .Output("output: T")
                       .Attr("T: type")
                       .Attr("index: int >= 0")
                       .SetIsStateful()
                       .SetShapeFn(UnknownShape)
                       .Summary("A feed of the step (the index-th argument)."));
  r->RegisterOrDie(OpDefBuilder("_Retval")
                       .Input("input: T")
                       .Attr("T: type")
                       .Attr("index: int >= 0")
                       .SetIsStateful()
                       .Summary("A fetch of the step (the index-th result)."));
  r->RegisterOrDie(OpDefBuilder("_Send")
                       .Input("tensor: T")
                       .Attr("T: type")
                       .Attr("tensor_name: string")
                       .Attr("send_device: string")
                       .Attr("send_device_incarnation: int")
                       .Attr("recv_device: string")
                       .Attr("client_terminated: bool = false")
                       .SetIsStateful()
                       .Summary("Sends a tensor to the _Recv with the same key."));
  r->RegisterOrDie(OpDefBuilder("_Recv")
                       .Output("tensor: tensor_type")
                       .Attr("tensor_type: type")
                       .Attr("tensor_name: string")
                       .Attr("send_device: string")
                       .Attr("send_device_incarnation: int")
                       .Attr("recv_device: string")
                       .Attr("client_terminated: bool = false")
                       .SetIsStateful()
                       .SetShapeFn(UnknownShape)
                       .Summary("Receives the tensor sent by the _Send with the same key."));

  // Reference variables.
  r->RegisterOrDie(OpDefBuilder("VariableV2")
                       .Output("ref: Ref(dtype)")
                       .Attr("shape: shape")
                       .Attr("dtype: type")
                       .Attr("container: string = ''")
                       .Attr("shared_name: string = ''")
                       .SetIsStateful()
                       .SetShapeFn(ShapeFromAttr)
                       .Summary("A variable with reference semantics."));
  r->RegisterOrDie(OpDefBuilder("Assign")
                       .Input("ref: Ref(T)")
                       .Input("value: T")
                       .Output("output_ref: Ref(T)")
                       .Attr("T: type")
                       .Attr("validate_shape: bool = true")
                       .Attr("use_locking: bool = true")
                       .SetAllowsUninitializedInput()
                       .SetShapeFn([](InferenceContext& c) -> Status {
                         c.set_output(0, c.input(1));
                         return Status();
                       })
                       .Summary("ref = value."));
  for (const char* name : {"AssignAdd", "AssignSub"})
    r->RegisterOrDie(OpDefBuilder(name)
                         .Input("ref: Ref(T)")
                         .Input("value: T")
                         .Output("output_ref: Ref(T)")
                         .Attr("T: numbertype")
                         .Attr("use_locking: bool = false")
                         .SetShapeFn(UnchangedShape)
                         .Summary("ref += value (AssignAdd), ref -= value (AssignSub)."));
  r->RegisterOrDie(OpDefBuilder("IsVariableInitialized")
                       .Input("ref: Ref(dtype)")
                       .Output("is_initialized: bool")
                       .Attr("dtype: type")
                       .SetAllowsUninitializedInput()
                       .SetShapeFn(ScalarShape)
                       .Summary("Whether the variable has been assigned a value."));

  // Resource variables.
  r->RegisterOrDie(OpDefBuilder("VarHandleOp")
                       .Output("resource: resource")
                       .Attr("container: string = ''")
                       .Attr("shared_name: string = ''")
                       .Attr("debug_name: string = ''")
                       .Attr("dtype: type")
                       .Attr("shape: shape")
                       .Attr("allowed_devices: list(string) = []")
                       .SetIsStateful()
                       .SetShapeFn(ScalarShape)
                       .Summary("A handle to a resource variable."));
  r->RegisterOrDie(OpDefBuilder("ReadVariableOp")
                       .Input("resource: resource")
                       .Output("value: dtype")
                       .Attr("dtype: type")
                       .SetIsStateful()
                       .SetShapeFn(UnknownShape)
                       .Summary("The current value of a resource variable."));
  r->RegisterOrDie(OpDefBuilder("AssignVariableOp")
                       .Input("resource: resource")
                       .Input("value: dtype")
                       .Attr("dtype: type")
                       .Attr("validate_shape: bool = false")
                       .SetIsStateful()
                       .Summary("Makes a resource variable hold `value`."));
  for (const char* name : {"AssignAddVariableOp", "AssignSubVariableOp"})
    r->RegisterOrDie(OpDefBuilder(name)
                         .Input("resource: resource")
                         .Input("value: dtype")
                         .Attr("dtype: type")
                         .SetIsStateful()
                         .Summary("variable += value (Add), variable -= value (Sub)."));
  r->RegisterOrDie(OpDefBuilder("VarIsInitializedOp")
                       .Input("resource: resource")
                       .Output("is_initialized: bool")
                       .SetIsStateful()
                       .SetShapeFn(ScalarShape)
                       .Summary("Whether the resource variable exists and has a value."));
  r->RegisterOrDie(OpDefBuilder("DisableCopyOnRead")
                       .Input("resource: resource")
                       .SetIsStateful()
                       .Summary("Turns off a variable's copy-on-read mode (a no-op in Conflux, "
                                "whose reads never copy)."));
  r->RegisterOrDie(OpDefBuilder("ResourceGather")
                       .Input("resource: resource")
                       .Input("indices: Tindices")
                       .Output("output: dtype")
                       .Attr("batch_dims: int = 0")
                       .Attr("validate_indices: bool = true")
                       .Attr("dtype: type")
                       .Attr("Tindices: {int32, int64}")
                       .SetIsStateful()
                       .SetShapeFn(UnknownShape)  // the variable's shape is not in the graph
                       .Summary("Rows of a resource variable's value picked by `indices` "
                                "(GatherV2 along axis batch_dims)."));
  r->RegisterOrDie(OpDefBuilder("DestroyResourceOp")
                       .Input("resource: resource")
                       .Attr("ignore_lookup_error: bool = true")
                       .SetIsStateful()
                       .Summary("Deletes the resource a handle names."));

  // Queues.
  r->RegisterOrDie(OpDefBuilder("FIFOQueueV2")
                       .Output("handle: resource")
                       .Attr("component_types: list(type) >= 1")
                       .Attr("shapes: list(shape) >= 0 = []")
                       .Attr("capacity: int = -1")
                       .Attr("container: string = ''")
                       .Attr("shared_name: string = ''")
                       .SetIsStateful()
                       .SetShapeFn(ScalarShape)
                       .Summary("A queue that produces elements in first-in first-out order."));
  r->RegisterOrDie(OpDefBuilder("RandomShuffleQueueV2")
                       .Output("handle: resource")
                       .Attr("component_types: list(type) >= 1")
                       .Attr("shapes: list(shape) >= 0 = []")
                       .Attr("capacity: int = -1")
                       .Attr("min_after_dequeue: int = 0")
                       .Attr("seed: int = 0")
                       .Attr("seed2: int = 0")
                       .Attr("container: string = ''")
                       .Attr("shared_name: string = ''")
                       .SetIsStateful()
                       .SetShapeFn(ScalarShape)
                       .Summary("A queue that dequeues elements in a random order."));
  for (const char* name : {"QueueEnqueueV2", "QueueEnqueueManyV2"})
    r->RegisterOrDie(OpDefBuilder(name)
                         .Input("handle: resource")
                         .Input("components: Tcomponents")
                         .Attr("Tcomponents: list(type) >= 1")
                         .Attr("timeout_ms: int = -1")
                         .SetIsStateful()
                         .Summary("Enqueues one element (EnqueueMany: slices along dimension 0)."));
  r->RegisterOrDie(OpDefBuilder("QueueDequeueV2")
                       .Input("handle: resource")
                       .Output("components: component_types")
                       .Attr("component_types: list(type) >= 1")
                       .Attr("timeout_ms: int = -1")
                       .SetIsStateful()
                       .SetShapeFn(UnknownShape)
                       .Summary("Dequeues one element; blocks while the queue is empty."));
  for (const char* name : {"QueueDequeueManyV2", "QueueDequeueUpToV2"})
    r->RegisterOrDie(OpDefBuilder(name)
                         .Input("handle: resource")
                         .Input("n: int32")
                         .Output("components: component_types")
                         .Attr("component_types: list(type) >= 1")
                         .Attr("timeout_ms: int = -1")
                         .SetIsStateful()
                         .SetShapeFn(UnknownShape)
                         .Summary("Dequeues n elements concatenated along a new dimension 0 "
                                  "(UpTo: fewer once the queue is closed)."));
  r->RegisterOrDie(OpDefBuilder("QueueCloseV2")
                       .Input("handle: resource")
                       .Attr("cancel_pending_enqueues: bool = false")
                       .SetIsStateful()
                       .Summary("Closes the queue: later enqueues fail, dequeues drain it."));
  r->RegisterOrDie(OpDefBuilder("QueueSizeV2")
                       .Input("handle: resource")
                       .Output("size: int32")
                       .SetIsStateful()
                       .SetShapeFn(ScalarShape)
                       .Summary("The number of elements in the queue."));
}

}  // namespace cfx::internal
