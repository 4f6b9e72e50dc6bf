/* Conflux plugin ABI: the host's function tables by concept, which cfx_host_api points to
 * (conflux/plugin_host_api.h describes the layout). Include conflux/plugin_api.h, which includes
 * this file. Each table starts with struct_size and grows only by appending; a reader checks
 * CFX_HAS_FIELD before using a field appended after minor 3.
 */
#include "conflux/plugin_api.h"
#include "conflux/plugin_transport.h"

#ifndef CONFLUX_PLUGIN_HOST_TABLES_H_
#define CONFLUX_PLUGIN_HOST_TABLES_H_

#ifdef __cplusplus
extern "C" {
#endif

/* ---- core ------------------------------------------------------------------------------- */
typedef struct cfx_host_core_api {
  size_t struct_size;
  void (*status_set)(cfx_status* status, cfx_code code, const char* message);
  cfx_code (*status_code)(const cfx_status* status);
  const char* (*status_message)(const cfx_status* status); /* valid until the next set/delete */
  cfx_status* (*status_new)(void);
  void (*status_delete)(cfx_status* status);
  void (*log)(cfx_log_level level, const char* message);
} cfx_host_core_api;

/* ---- registration (only inside cfx_plugin_init) ----------------------------------------- */
typedef struct cfx_host_registration_api {
  size_t struct_size;
  /* Op definitions. Specs use TensorFlow's op-definition syntax:
   *   input/output "x: T", "values: N * T", "indices: Tidx", "out: float"
   *   attr "T: {float, double, int32}", "transpose_a: bool = false", "N: int >= 1"
   * The builder is consumed by register_op (also on error). */
  cfx_op_builder* (*op_builder_new)(const char* op_name);
  void (*op_builder_input)(cfx_op_builder* b, const char* spec);
  void (*op_builder_output)(cfx_op_builder* b, const char* spec);
  void (*op_builder_attr)(cfx_op_builder* b, const char* spec);
  void (*op_builder_set_stateful)(cfx_op_builder* b, int stateful);
  void (*op_builder_set_shape_fn)(cfx_op_builder* b, cfx_shape_fn fn);
  void (*register_op)(cfx_registrar* r, cfx_op_builder* b, cfx_status* status);
  /* Kernels. The builder is consumed by register_kernel (also on error). */
  cfx_kernel_builder* (*kernel_builder_new)(const char* op_name, const char* device_type,
                                            cfx_kernel_create_fn create,
                                            cfx_kernel_compute_fn compute,
                                            cfx_kernel_compute_async_fn compute_async,
                                            cfx_kernel_destroy_fn destroy);
  void (*kernel_builder_type_constraint)(cfx_kernel_builder* b, const char* attr_name,
                                         cfx_dtype dtype);
  /* The named input or output lives in host memory even on a device with its own memory. */
  void (*kernel_builder_host_memory)(cfx_kernel_builder* b, const char* arg_name);
  void (*kernel_builder_set_flags)(cfx_kernel_builder* b, uint32_t flags);
  void (*register_kernel)(cfx_registrar* r, cfx_kernel_builder* b, cfx_status* status);
  /* Device types. `desc` and what it points to must outlive the plugin (static storage). */
  void (*register_device_type)(cfx_registrar* r, const cfx_device_type_desc* desc,
                               cfx_status* status);
  /* Registers `fn` as the gradient of `op_name` (an op of this plugin or of another); one per
   * op (see cfx_host_gradient_api). */
  void (*register_gradient)(cfx_registrar* r, const char* op_name, cfx_gradient_fn fn,
                            void* user_data, cfx_status* s);
} cfx_host_registration_api;

/* ---- attr ------------------------------------------------------------------------------- */
/* Getters set NOT_FOUND when absent and INVALID_ARGUMENT on a kind mismatch, naming the node and
 * the attr. Strings and lists stay valid as long as the attrs. */
typedef struct cfx_host_attr_api {
  size_t struct_size;
  const char* (*node_name)(const cfx_attrs* a);
  int (*exists)(const cfx_attrs* a, const char* name);
  void (*get_int)(const cfx_attrs* a, const char* name, int64_t* out, cfx_status* s);
  void (*get_float)(const cfx_attrs* a, const char* name, float* out, cfx_status* s);
  void (*get_bool)(const cfx_attrs* a, const char* name, uint8_t* out, cfx_status* s);
  void (*get_type)(const cfx_attrs* a, const char* name, cfx_dtype* out, cfx_status* s);
  void (*get_string)(const cfx_attrs* a, const char* name, const char** data, size_t* size,
                     cfx_status* s);
  /* rank -1 = unknown rank; dims[i] -1 = unknown dimension. Fails if rank > max_rank. */
  void (*get_shape)(const cfx_attrs* a, const char* name, int64_t* dims, int max_rank, int* rank,
                    cfx_status* s);
  /* Number of elements of a list attr. */
  void (*get_list_size)(const cfx_attrs* a, const char* name, int64_t* size, cfx_status* s);
  void (*get_int_list)(const cfx_attrs* a, const char* name, int64_t* out, int64_t max,
                       cfx_status* s);
  void (*get_float_list)(const cfx_attrs* a, const char* name, float* out, int64_t max,
                         cfx_status* s);
  void (*get_type_list)(const cfx_attrs* a, const char* name, cfx_dtype* out, int64_t max,
                        cfx_status* s);
  /* A tensor attr as a new owned host tensor handle. */
  cfx_tensor* (*get_tensor)(const cfx_attrs* a, const char* name, cfx_status* s);

  /* Element `index` of a list(string) attr (TensorFlow's `fused_ops`), as get_string gives a
   * string; OUT_OF_RANGE past the end (appended after minor 4: check CFX_HAS_FIELD). */
  void (*get_string_list_item)(const cfx_attrs* a, const char* name, int64_t index,
                               const char** data, size_t* size, cfx_status* s);
} cfx_host_attr_api;

/* ---- shape ------------------------------------------------------------------------------ */
typedef struct cfx_host_shape_api {
  size_t struct_size;
  const cfx_attrs* (*attrs)(const cfx_shape_context* c);
  int (*num_inputs)(const cfx_shape_context* c);
  int (*num_outputs)(const cfx_shape_context* c);
  int (*input_rank)(const cfx_shape_context* c, int index);           /* -1 unknown */
  int64_t (*input_dim)(const cfx_shape_context* c, int index, int d); /* -1 unknown */
  /* The value of input `index` when it is known while inferring (a constant), else NULL. */
  const cfx_tensor* (*input_tensor)(const cfx_shape_context* c, int index);
  void (*set_output)(cfx_shape_context* c, int index, const int64_t* dims, int rank);
} cfx_host_shape_api;

/* ---- tensor ----------------------------------------------------------------------------- */
/* Data pointers of tensors in DEVICE memory of a non-host-addressable device are device handles,
 * not host addresses. Handles are borrowed (inputs, outputs: valid for the kernel call) or owned
 * (returned by share, new_host, attr get_tensor, kernel allocate_temp: the caller releases). */
typedef struct cfx_host_tensor_api {
  size_t struct_size;
  cfx_dtype (*dtype)(const cfx_tensor* t);
  int (*rank)(const cfx_tensor* t);
  int64_t (*dim)(const cfx_tensor* t, int i);
  int64_t (*num_elements)(const cfx_tensor* t);
  size_t (*byte_size)(const cfx_tensor* t);
  void* (*data)(const cfx_tensor* t);
  cfx_tensor* (*share)(const cfx_tensor* t); /* new owned handle, same buffer */
  void (*release)(cfx_tensor* t);            /* releases an owned handle */
  /* Elements of DT_STRING tensors (host memory only). */
  const char* (*string)(const cfx_tensor* t, int64_t index, size_t* size);
  void (*set_string)(cfx_tensor* t, int64_t index, const char* data, size_t size);
  /* A new host tensor with its own buffer (owned). */
  cfx_tensor* (*new_host)(cfx_dtype dtype, const int64_t* dims, int rank, cfx_status* s);
} cfx_host_tensor_api;

/* ---- kernel ----------------------------------------------------------------------------- */
/* Inputs are borrowed for the call. Outputs returned by allocate_output and forward_or_allocate
 * are borrowed too: the context owns them. */
typedef struct cfx_host_kernel_api {
  size_t struct_size;
  int (*num_inputs)(const cfx_kernel_context* c);
  int (*num_outputs)(const cfx_kernel_context* c);
  const cfx_tensor* (*input)(const cfx_kernel_context* c, int index);
  cfx_dtype (*output_dtype)(const cfx_kernel_context* c, int index);
  cfx_tensor* (*allocate_output)(cfx_kernel_context* c, int index, const int64_t* dims, int rank,
                                 cfx_status* s);
  /* Makes output `index` share the buffer of `t` (no copy). */
  void (*set_output)(cfx_kernel_context* c, int index, const cfx_tensor* t, cfx_status* s);
  /* The same under another shape with the same number of elements (Reshape, ExpandDims,
   * Squeeze: no copy). InvalidArgument when the counts differ. */
  void (*set_output_reshaped)(cfx_kernel_context* c, int index, const cfx_tensor* t,
                              const int64_t* dims, int rank, cfx_status* s);
  /* Reuses the buffer of one of `candidates` (input indices) when the kernel holds its only
   * reference and dtype and size fit; otherwise allocates. */
  cfx_tensor* (*forward_or_allocate)(cfx_kernel_context* c, const int* candidates,
                                     int num_candidates, int output_index, const int64_t* dims,
                                     int rank, cfx_status* s);
  /* Scratch tensor on the kernel's device (owned). */
  cfx_tensor* (*allocate_temp)(cfx_kernel_context* c, cfx_dtype dtype, const int64_t* dims,
                               int rank, cfx_status* s);
  /* Records the kernel's failure; the step aborts with this error, prefixed with the node. */
  void (*set_error)(cfx_kernel_context* c, cfx_code code, const char* message);
  const char* (*node_name)(const cfx_kernel_context* c);

  /* Where the call runs (NULL on a host older than minor 3, like the rest below). step_id: the
   * step's id (> 0, different for each Session::Run), 0 when the kernel runs alone outside a step
   * (KernelRunner). frame_id: 0 in the root frame, else an id of the while loop's frame; iteration:
   * the loop iteration (0, 1, ...), 0 in the root. */
  int64_t (*step_id)(const cfx_kernel_context* c);
  int64_t (*frame_id)(const cfx_kernel_context* c);
  int64_t (*iteration)(const cfx_kernel_context* c);
  /* Asks for cb(arg, why) when the call's step is cancelled (it timed out, the session was
   * closed, another kernel failed), so that a kernel waiting without bound can finish. cb runs at
   * most once, on the thread that cancels the step, and may finish the kernel (set an error, call
   * done); it must not block on the kernel's own thread. Returns a token for
   * deregister_cancellation, or CFX_INVALID_CANCEL_TOKEN when the step is already cancelled:
   * then nothing was registered and the kernel must finish at once. Outside a step nothing
   * cancels the call: the token is valid and its callback never runs. */
  cfx_cancel_token (*register_cancellation)(cfx_kernel_context* c, cfx_cancel_fn cb, void* arg);
  /* Withdraws a registration before the kernel calls done. Returns 1 when the callback was
   * removed before it ran (it never will: the caller finishes the kernel), 0 when it ran or is
   * running (it owns the kernel's completion) or the token is invalid. When 0, waits until a
   * running callback has returned, unless called from inside a cancellation callback of the
   * same step, so that the caller may free what the callback uses. */
  int (*deregister_cancellation)(cfx_kernel_context* c, cfx_cancel_token token);

  /* Files written through the host's file system, the runtime's Env (conflux/env.h), so that
   * what a kernel writes (SaveV2's checkpoint) shares the runtime's storage and its tests' fault
   * injection (appended after minor 4: check CFX_HAS_FIELD). Errors name the file; a full disk
   * is CFX_RESOURCE_EXHAUSTED. file_open creates or truncates `path` and returns NULL on error;
   * file_sync makes what was appended durable; file_close closes and frees `f`, also when it
   * fails. file_rename replaces `to` atomically; file_create_dir creates missing parents too;
   * file_sync_dir makes a folder's entries (files created, renamed, deleted) durable. */
  cfx_file* (*file_open)(cfx_kernel_context* c, const char* path, cfx_status* s);
  void (*file_append)(cfx_file* f, const void* data, size_t size, cfx_status* s);
  void (*file_sync)(cfx_file* f, cfx_status* s);
  void (*file_close)(cfx_file* f, cfx_status* s);
  void (*file_rename)(cfx_kernel_context* c, const char* from, const char* to, cfx_status* s);
  void (*file_delete)(cfx_kernel_context* c, const char* path, cfx_status* s);
  void (*file_create_dir)(cfx_kernel_context* c, const char* dir, cfx_status* s);
  void (*file_sync_dir)(cfx_kernel_context* c, const char* dir, cfx_status* s);
} cfx_host_kernel_api;

/* ---- state ------------------------------------------------------------------------------ */
/* Reference inputs (TensorFlow's `float_ref` from VariableV2): the kernel context's input is the
 * variable's current tensor, whose buffer the kernel may update in place. Lock the reference
 * while updating when the op's `use_locking` is true. */
typedef struct cfx_host_state_api {
  size_t struct_size;
  int (*input_is_ref)(const cfx_kernel_context* c, int index);
  void (*ref_input_lock)(cfx_kernel_context* c, int index);
  void (*ref_input_unlock)(cfx_kernel_context* c, int index);
  /* Makes the referenced variable hold `t` (shares its buffer); the input then returns it. */
  void (*ref_input_assign)(cfx_kernel_context* c, int index, const cfx_tensor* t, cfx_status* s);
  /* Ref output `output_index` refers to the same variable as ref input `input_index`. */
  void (*forward_ref_input)(cfx_kernel_context* c, int input_index, int output_index,
                            cfx_status* s);
  /* Resource variables: the variable named by the DT_RESOURCE handle in input `index`, as an
   * owned reference (variable_release). NOT_FOUND when it does not exist and `create` is 0. */
  cfx_variable* (*input_variable)(cfx_kernel_context* c, int index, int create, cfx_status* s);
  void (*variable_lock)(cfx_variable* v, int exclusive);
  void (*variable_unlock)(cfx_variable* v, int exclusive);
  /* The value (borrowed; valid while locked), or NULL when uninitialized. The handle is the
   * variable's own tensor: the same on every call for one variable while it lives, and
   * different for different variables (kernels order their locks by it). */
  const cfx_tensor* (*variable_tensor)(cfx_variable* v);
  /* Before an in-place update under an exclusive lock: makes the variable the only holder of its
   * buffer (copying it when a reader still shares it) and returns the value (borrowed). */
  cfx_tensor* (*variable_tensor_for_update)(cfx_kernel_context* c, cfx_variable* v, cfx_status* s);
  void (*variable_assign)(cfx_variable* v, const cfx_tensor* t, cfx_status* s); /* under lock */
  void (*variable_release)(cfx_variable* v);
} cfx_host_state_api;

/* ---- gradient --------------------------------------------------------------------------- */
/* Inside a gradient-function call, graph tensors are int64 handles (>= 0), valid for the call:
 * the forward node's inputs and outputs, the incoming gradient of each output (zeros when
 * nothing depends on it), and the outputs of nodes the function builds (output k of a node is
 * its handle + k). */
typedef struct cfx_host_gradient_api {
  size_t struct_size;
  int (*num_inputs)(const cfx_grad_context* g);
  int (*num_outputs)(const cfx_grad_context* g);
  int64_t (*input)(const cfx_grad_context* g, int index);
  int64_t (*output)(const cfx_grad_context* g, int index);
  int64_t (*output_grad)(const cfx_grad_context* g, int index);
  /* The forward node's attrs (its NodeDef's, with the op's defaults). */
  const cfx_attrs* (*attrs)(const cfx_grad_context* g);
  cfx_dtype (*tensor_dtype)(const cfx_grad_context* g, int64_t tensor);
  /* A node of op `op_name`; inputs in the op's order (one call per argument), attrs, then
   * finish. Type attrs and list lengths are inferred from the inputs as in the C++ client API. */
  cfx_grad_node* (*node_new)(cfx_grad_context* g, const char* op_name);
  void (*node_input)(cfx_grad_node* n, int64_t tensor);
  void (*node_input_list)(cfx_grad_node* n, const int64_t* tensors, int count);
  void (*node_attr_int)(cfx_grad_node* n, const char* name, int64_t value);
  void (*node_attr_float)(cfx_grad_node* n, const char* name, float value);
  void (*node_attr_bool)(cfx_grad_node* n, const char* name, int value);
  void (*node_attr_type)(cfx_grad_node* n, const char* name, cfx_dtype value);
  void (*node_attr_string)(cfx_grad_node* n, const char* name, const char* data, size_t size);
  void (*node_attr_int_list)(cfx_grad_node* n, const char* name, const int64_t* values, int count);
  /* Copies attr `forward_name` of the forward node (with its default) as attr `name`. */
  void (*node_copy_attr)(cfx_grad_node* n, const char* forward_name, const char* name);
  /* Adds the node and frees the builder: the handle of output 0, or -1 with the error in `s`. */
  int64_t (*node_finish)(cfx_grad_node* n, cfx_status* s);
  /* The gradient of forward input `index` (unset inputs get no gradient). */
  void (*set_input_grad)(cfx_grad_context* g, int index, int64_t tensor);
  /* A scalar constant of `dtype` with `value` (handy for scales and epsilons). */
  int64_t (*scalar)(cfx_grad_context* g, cfx_dtype dtype, double value, cfx_status* s);
} cfx_host_gradient_api;

/* ---- device ----------------------------------------------------------------------------- */
typedef struct cfx_host_device_api {
  size_t struct_size;
  /* The device and stream a kernel runs on (plugin-owned handles). */
  cfx_device* (*kernel_device)(const cfx_kernel_context* c);
  cfx_stream* (*kernel_stream)(const cfx_kernel_context* c);
  /* Runs fn(arg, begin, end) over [0, total) on the kernel's device's intra-op pool; blocks. */
  void (*parallel_for)(cfx_kernel_context* c, int64_t total, int64_t cost_per_unit, cfx_range_fn fn,
                       void* arg);
} cfx_host_device_api;

/* ---- transport (minor 4) ---------------------------------------------------------------- */
/* Transports and collectives (conflux/plugin_transport.h): their registration, and the process
 * group a collectives plugin bootstraps over. */
typedef struct cfx_host_transport_api {
  size_t struct_size;
  /* `desc` and what it points to must outlive the plugin (static storage). One transport name
   * per process. */
  void (*register_transport)(cfx_registrar* r, const cfx_transport_desc* desc, cfx_status* status);
  void (*register_collectives)(cfx_registrar* r, const cfx_collectives_desc* desc,
                               cfx_status* status);
  /* The process group of the running transport. */
  int32_t (*group_rank)(const cfx_host_group* g);
  int32_t (*group_size)(const cfx_host_group* g);
  /* Blocking: `bytes` bytes of `data` on every rank become those of `root`'s (bootstrap ids). */
  void (*group_broadcast)(const cfx_host_group* g, void* data, size_t bytes, int32_t root,
                          cfx_status* status);
} cfx_host_transport_api;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CONFLUX_PLUGIN_HOST_TABLES_H_ */
