/* Frozen copy of the file as released in ABI 1.3 (tests/plugin/fixtures/abi13_plugin.c). */
/* Conflux plugin ABI: the root host function table. Include conflux/plugin_api.h, which
 * includes this file.
 *
 * cfx_host_api is the root table the host hands to cfx_plugin_init. Since minor 3 it points to
 * one table per concept; each starts with struct_size and grows only by appending:
 *   core          status objects and logging
 *   registration  ops, kernels, device types and gradients (only inside cfx_plugin_init)
 *   attr          a node's attributes
 *   shape         the shape-function context
 *   tensor        tensors
 *   kernel        the kernel context: inputs, outputs, temporaries, errors, where the call
 *                 runs (step, frame, iteration) and its step's cancellation
 *   state         variables: reference inputs and resource variables
 *   gradient      the gradient-function context
 *   device        the kernel's device and stream, and its intra-op pool
 *   transport     reserved for transports (no functions yet)
 * New functions go only into these tables. The flat fields of cfx_host_api before the table
 * pointers are the layout of minors 0-2, frozen: each is the same function as one table field
 * (CFX_HOST_API_LEGACY_FIELDS lists the pairs). A plugin built with minor <= 2 keeps using the
 * flat fields; one built with minor >= 3 uses the tables when host->abi_minor >= 3 and otherwise
 * only the flat fields that host->struct_size holds (the SDK does this in one place, HostTables).
 * A reader of a table checks CFX_HAS_FIELD for every field appended after minor 3.
 */
#include "conflux/plugin_api.h"

#ifndef CONFLUX_PLUGIN_HOST_API_H_
#define CONFLUX_PLUGIN_HOST_API_H_

#include "conflux/plugin_host_tables.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- The root table --------------------------------------------------------------------- */
struct cfx_host_api {
  size_t struct_size;
  uint32_t abi_major;
  uint32_t abi_minor; /* negotiated minor: min(host, plugin) */

  /* ---- Minors 0-2: the flat layout, frozen. Each field is the table field that
   * CFX_HOST_API_LEGACY_FIELDS pairs it with; the tables document them. */
  void (*status_set)(cfx_status* status, cfx_code code, const char* message);
  cfx_code (*status_code)(const cfx_status* status);
  const char* (*status_message)(const cfx_status* status);
  cfx_status* (*status_new)(void);
  void (*status_delete)(cfx_status* status);
  void (*log)(cfx_log_level level, const char* message);
  cfx_op_builder* (*op_builder_new)(const char* op_name);
  void (*op_builder_input)(cfx_op_builder* b, const char* spec);
  void (*op_builder_output)(cfx_op_builder* b, const char* spec);
  void (*op_builder_attr)(cfx_op_builder* b, const char* spec);
  void (*op_builder_set_stateful)(cfx_op_builder* b, int stateful);
  void (*op_builder_set_shape_fn)(cfx_op_builder* b, cfx_shape_fn fn);
  void (*register_op)(cfx_registrar* r, cfx_op_builder* b, cfx_status* status);
  cfx_kernel_builder* (*kernel_builder_new)(const char* op_name, const char* device_type,
                                            cfx_kernel_create_fn create,
                                            cfx_kernel_compute_fn compute,
                                            cfx_kernel_compute_async_fn compute_async,
                                            cfx_kernel_destroy_fn destroy);
  void (*kernel_builder_type_constraint)(cfx_kernel_builder* b, const char* attr_name,
                                         cfx_dtype dtype);
  void (*kernel_builder_host_memory)(cfx_kernel_builder* b, const char* arg_name);
  void (*kernel_builder_set_flags)(cfx_kernel_builder* b, uint32_t flags);
  void (*register_kernel)(cfx_registrar* r, cfx_kernel_builder* b, cfx_status* status);
  void (*register_device_type)(cfx_registrar* r, const cfx_device_type_desc* desc,
                               cfx_status* status);
  const char* (*attrs_node_name)(const cfx_attrs* a);
  int (*attr_exists)(const cfx_attrs* a, const char* name);
  void (*attr_get_int)(const cfx_attrs* a, const char* name, int64_t* out, cfx_status* s);
  void (*attr_get_float)(const cfx_attrs* a, const char* name, float* out, cfx_status* s);
  void (*attr_get_bool)(const cfx_attrs* a, const char* name, uint8_t* out, cfx_status* s);
  void (*attr_get_type)(const cfx_attrs* a, const char* name, cfx_dtype* out, cfx_status* s);
  void (*attr_get_string)(const cfx_attrs* a, const char* name, const char** data, size_t* size,
                          cfx_status* s);
  void (*attr_get_shape)(const cfx_attrs* a, const char* name, int64_t* dims, int max_rank,
                         int* rank, cfx_status* s);
  void (*attr_get_list_size)(const cfx_attrs* a, const char* name, int64_t* size, cfx_status* s);
  void (*attr_get_int_list)(const cfx_attrs* a, const char* name, int64_t* out, int64_t max,
                            cfx_status* s);
  void (*attr_get_float_list)(const cfx_attrs* a, const char* name, float* out, int64_t max,
                              cfx_status* s);
  void (*attr_get_type_list)(const cfx_attrs* a, const char* name, cfx_dtype* out, int64_t max,
                             cfx_status* s);
  cfx_tensor* (*attr_get_tensor)(const cfx_attrs* a, const char* name, cfx_status* s);
  cfx_dtype (*tensor_dtype)(const cfx_tensor* t);
  int (*tensor_rank)(const cfx_tensor* t);
  int64_t (*tensor_dim)(const cfx_tensor* t, int i);
  int64_t (*tensor_num_elements)(const cfx_tensor* t);
  size_t (*tensor_byte_size)(const cfx_tensor* t);
  void* (*tensor_data)(const cfx_tensor* t);
  cfx_tensor* (*tensor_share)(const cfx_tensor* t);
  void (*tensor_release)(cfx_tensor* t);
  const char* (*tensor_string)(const cfx_tensor* t, int64_t index, size_t* size);
  void (*tensor_set_string)(cfx_tensor* t, int64_t index, const char* data, size_t size);
  cfx_tensor* (*tensor_new_host)(cfx_dtype dtype, const int64_t* dims, int rank, cfx_status* s);
  int (*ctx_num_inputs)(const cfx_kernel_context* c);
  int (*ctx_num_outputs)(const cfx_kernel_context* c);
  const cfx_tensor* (*ctx_input)(const cfx_kernel_context* c, int index);
  cfx_dtype (*ctx_output_dtype)(const cfx_kernel_context* c, int index);
  cfx_tensor* (*ctx_allocate_output)(cfx_kernel_context* c, int index, const int64_t* dims,
                                     int rank, cfx_status* s);
  void (*ctx_set_output)(cfx_kernel_context* c, int index, const cfx_tensor* t, cfx_status* s);
  cfx_tensor* (*ctx_forward_or_allocate)(cfx_kernel_context* c, const int* candidates,
                                         int num_candidates, int output_index, const int64_t* dims,
                                         int rank, cfx_status* s);
  cfx_tensor* (*ctx_allocate_temp)(cfx_kernel_context* c, cfx_dtype dtype, const int64_t* dims,
                                   int rank, cfx_status* s);
  void (*ctx_set_error)(cfx_kernel_context* c, cfx_code code, const char* message);
  cfx_device* (*ctx_device)(const cfx_kernel_context* c);
  cfx_stream* (*ctx_stream)(const cfx_kernel_context* c);
  const char* (*ctx_node_name)(const cfx_kernel_context* c);
  void (*ctx_parallel_for)(cfx_kernel_context* c, int64_t total, int64_t cost_per_unit,
                           cfx_range_fn fn, void* arg);
  const cfx_attrs* (*shape_attrs)(const cfx_shape_context* c);
  int (*shape_num_inputs)(const cfx_shape_context* c);
  int (*shape_num_outputs)(const cfx_shape_context* c);
  int (*shape_input_rank)(const cfx_shape_context* c, int index);
  int64_t (*shape_input_dim)(const cfx_shape_context* c, int index, int d);
  const cfx_tensor* (*shape_input_tensor)(const cfx_shape_context* c, int index);
  void (*shape_set_output)(cfx_shape_context* c, int index, const int64_t* dims, int rank);
  void (*ctx_set_output_reshaped)(cfx_kernel_context* c, int index, const cfx_tensor* t,
                                  const int64_t* dims, int rank, cfx_status* s);
  /* Minor 1. */
  int (*ctx_input_is_ref)(const cfx_kernel_context* c, int index);
  void (*ctx_ref_input_lock)(cfx_kernel_context* c, int index);
  void (*ctx_ref_input_unlock)(cfx_kernel_context* c, int index);
  void (*ctx_ref_input_assign)(cfx_kernel_context* c, int index, const cfx_tensor* t,
                               cfx_status* s);
  void (*ctx_forward_ref_input)(cfx_kernel_context* c, int input_index, int output_index,
                                cfx_status* s);
  cfx_variable* (*ctx_input_variable)(cfx_kernel_context* c, int index, int create, cfx_status* s);
  void (*variable_lock)(cfx_variable* v, int exclusive);
  void (*variable_unlock)(cfx_variable* v, int exclusive);
  const cfx_tensor* (*variable_tensor)(cfx_variable* v);
  cfx_tensor* (*variable_tensor_for_update)(cfx_kernel_context* c, cfx_variable* v, cfx_status* s);
  void (*variable_assign)(cfx_variable* v, const cfx_tensor* t, cfx_status* s);
  void (*variable_release)(cfx_variable* v);
  /* Minor 2. */
  void (*register_gradient)(cfx_registrar* r, const char* op_name, cfx_gradient_fn fn,
                            void* user_data, cfx_status* s);
  int (*grad_num_inputs)(const cfx_grad_context* g);
  int (*grad_num_outputs)(const cfx_grad_context* g);
  int64_t (*grad_input)(const cfx_grad_context* g, int index);
  int64_t (*grad_output)(const cfx_grad_context* g, int index);
  int64_t (*grad_output_grad)(const cfx_grad_context* g, int index);
  const cfx_attrs* (*grad_attrs)(const cfx_grad_context* g);
  cfx_dtype (*grad_tensor_dtype)(const cfx_grad_context* g, int64_t tensor);
  cfx_grad_node* (*grad_node_new)(cfx_grad_context* g, const char* op_name);
  void (*grad_node_input)(cfx_grad_node* n, int64_t tensor);
  void (*grad_node_input_list)(cfx_grad_node* n, const int64_t* tensors, int count);
  void (*grad_node_attr_int)(cfx_grad_node* n, const char* name, int64_t value);
  void (*grad_node_attr_float)(cfx_grad_node* n, const char* name, float value);
  void (*grad_node_attr_bool)(cfx_grad_node* n, const char* name, int value);
  void (*grad_node_attr_type)(cfx_grad_node* n, const char* name, cfx_dtype value);
  void (*grad_node_attr_string)(cfx_grad_node* n, const char* name, const char* data, size_t size);
  void (*grad_node_attr_int_list)(cfx_grad_node* n, const char* name, const int64_t* values,
                                  int count);
  void (*grad_node_copy_attr)(cfx_grad_node* n, const char* forward_name, const char* name);
  int64_t (*grad_node_finish)(cfx_grad_node* n, cfx_status* s);
  void (*grad_set_input_grad)(cfx_grad_context* g, int index, int64_t tensor);
  int64_t (*grad_scalar)(cfx_grad_context* g, cfx_dtype dtype, double value, cfx_status* s);

  /* ---- Minor 3: the tables by concept (never NULL from a host of minor >= 3). ----------- */
  const cfx_host_core_api* core;
  const cfx_host_registration_api* registration;
  const cfx_host_attr_api* attr;
  const cfx_host_shape_api* shape;
  const cfx_host_tensor_api* tensor;
  const cfx_host_kernel_api* kernel;
  const cfx_host_state_api* state;
  const cfx_host_gradient_api* gradient;
  const cfx_host_device_api* device;
  const cfx_host_transport_api* transport;
};

/* The flat fields of cfx_host_api and the table field each one is: X(flat, table, field). In
 * the order of the flat layout; the minor a flat field came with is the one of its position. */
#define CFX_HOST_API_LEGACY_FIELDS(X)                                             \
  X(status_set, core, status_set)                                                 \
  X(status_code, core, status_code)                                               \
  X(status_message, core, status_message)                                         \
  X(status_new, core, status_new)                                                 \
  X(status_delete, core, status_delete)                                           \
  X(log, core, log)                                                               \
  X(op_builder_new, registration, op_builder_new)                                 \
  X(op_builder_input, registration, op_builder_input)                             \
  X(op_builder_output, registration, op_builder_output)                           \
  X(op_builder_attr, registration, op_builder_attr)                               \
  X(op_builder_set_stateful, registration, op_builder_set_stateful)               \
  X(op_builder_set_shape_fn, registration, op_builder_set_shape_fn)               \
  X(register_op, registration, register_op)                                       \
  X(kernel_builder_new, registration, kernel_builder_new)                         \
  X(kernel_builder_type_constraint, registration, kernel_builder_type_constraint) \
  X(kernel_builder_host_memory, registration, kernel_builder_host_memory)         \
  X(kernel_builder_set_flags, registration, kernel_builder_set_flags)             \
  X(register_kernel, registration, register_kernel)                               \
  X(register_device_type, registration, register_device_type)                     \
  X(attrs_node_name, attr, node_name)                                             \
  X(attr_exists, attr, exists)                                                    \
  X(attr_get_int, attr, get_int)                                                  \
  X(attr_get_float, attr, get_float)                                              \
  X(attr_get_bool, attr, get_bool)                                                \
  X(attr_get_type, attr, get_type)                                                \
  X(attr_get_string, attr, get_string)                                            \
  X(attr_get_shape, attr, get_shape)                                              \
  X(attr_get_list_size, attr, get_list_size)                                      \
  X(attr_get_int_list, attr, get_int_list)                                        \
  X(attr_get_float_list, attr, get_float_list)                                    \
  X(attr_get_type_list, attr, get_type_list)                                      \
  X(attr_get_tensor, attr, get_tensor)                                            \
  X(tensor_dtype, tensor, dtype)                                                  \
  X(tensor_rank, tensor, rank)                                                    \
  X(tensor_dim, tensor, dim)                                                      \
  X(tensor_num_elements, tensor, num_elements)                                    \
  X(tensor_byte_size, tensor, byte_size)                                          \
  X(tensor_data, tensor, data)                                                    \
  X(tensor_share, tensor, share)                                                  \
  X(tensor_release, tensor, release)                                              \
  X(tensor_string, tensor, string)                                                \
  X(tensor_set_string, tensor, set_string)                                        \
  X(tensor_new_host, tensor, new_host)                                            \
  X(ctx_num_inputs, kernel, num_inputs)                                           \
  X(ctx_num_outputs, kernel, num_outputs)                                         \
  X(ctx_input, kernel, input)                                                     \
  X(ctx_output_dtype, kernel, output_dtype)                                       \
  X(ctx_allocate_output, kernel, allocate_output)                                 \
  X(ctx_set_output, kernel, set_output)                                           \
  X(ctx_forward_or_allocate, kernel, forward_or_allocate)                         \
  X(ctx_allocate_temp, kernel, allocate_temp)                                     \
  X(ctx_set_error, kernel, set_error)                                             \
  X(ctx_device, device, kernel_device)                                            \
  X(ctx_stream, device, kernel_stream)                                            \
  X(ctx_node_name, kernel, node_name)                                             \
  X(ctx_parallel_for, device, parallel_for)                                       \
  X(shape_attrs, shape, attrs)                                                    \
  X(shape_num_inputs, shape, num_inputs)                                          \
  X(shape_num_outputs, shape, num_outputs)                                        \
  X(shape_input_rank, shape, input_rank)                                          \
  X(shape_input_dim, shape, input_dim)                                            \
  X(shape_input_tensor, shape, input_tensor)                                      \
  X(shape_set_output, shape, set_output)                                          \
  X(ctx_set_output_reshaped, kernel, set_output_reshaped)                         \
  X(ctx_input_is_ref, state, input_is_ref)                                        \
  X(ctx_ref_input_lock, state, ref_input_lock)                                    \
  X(ctx_ref_input_unlock, state, ref_input_unlock)                                \
  X(ctx_ref_input_assign, state, ref_input_assign)                                \
  X(ctx_forward_ref_input, state, forward_ref_input)                              \
  X(ctx_input_variable, state, input_variable)                                    \
  X(variable_lock, state, variable_lock)                                          \
  X(variable_unlock, state, variable_unlock)                                      \
  X(variable_tensor, state, variable_tensor)                                      \
  X(variable_tensor_for_update, state, variable_tensor_for_update)                \
  X(variable_assign, state, variable_assign)                                      \
  X(variable_release, state, variable_release)                                    \
  X(register_gradient, registration, register_gradient)                           \
  X(grad_num_inputs, gradient, num_inputs)                                        \
  X(grad_num_outputs, gradient, num_outputs)                                      \
  X(grad_input, gradient, input)                                                  \
  X(grad_output, gradient, output)                                                \
  X(grad_output_grad, gradient, output_grad)                                      \
  X(grad_attrs, gradient, attrs)                                                  \
  X(grad_tensor_dtype, gradient, tensor_dtype)                                    \
  X(grad_node_new, gradient, node_new)                                            \
  X(grad_node_input, gradient, node_input)                                        \
  X(grad_node_input_list, gradient, node_input_list)                              \
  X(grad_node_attr_int, gradient, node_attr_int)                                  \
  X(grad_node_attr_float, gradient, node_attr_float)                              \
  X(grad_node_attr_bool, gradient, node_attr_bool)                                \
  X(grad_node_attr_type, gradient, node_attr_type)                                \
  X(grad_node_attr_string, gradient, node_attr_string)                            \
  X(grad_node_attr_int_list, gradient, node_attr_int_list)                        \
  X(grad_node_copy_attr, gradient, node_copy_attr)                                \
  X(grad_node_finish, gradient, node_finish)                                      \
  X(grad_set_input_grad, gradient, set_input_grad)                                \
  X(grad_scalar, gradient, scalar)

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CONFLUX_PLUGIN_HOST_API_H_ */
