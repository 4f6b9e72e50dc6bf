/* Frozen copy of plugin_api.h as released in ABI 1.0 (tests/plugin/fixtures/abi10_plugin.c). */
/* Conflux plugin ABI: the C boundary between libconflux (the host) and plugin shared objects.
 *
 * Rules that keep a plugin built once loading into later hosts:
 *  - every struct starts with `struct_size` and grows only by appending fields; a reader checks
 *    struct_size before touching a field added in a later minor version (CFX_HAS_FIELD);
 *  - the major version must match exactly; the minor version is negotiated (the host uses the
 *    smaller of its own and the plugin's);
 *  - a NULL function pointer means "not supported";
 *  - no C++ exception crosses the boundary; errors cross as cfx_status objects that the host makes;
 *  - registration happens only inside cfx_plugin_init, through the registrar it is handed.
 *
 * Names: structs the host fills are `cfx_host_*`; structs the plugin fills are `cfx_plugin_*`,
 * `cfx_device_type_desc` and `cfx_device_funcs`. Handles are opaque.
 *
 * Thread-safety: host functions that take a kernel or shape context may be called only by the
 * thread running that kernel or shape function; tensor accessors may be called from any thread
 * while the caller holds a reference; everything else is thread-safe.
 */
#ifndef CONFLUX_PLUGIN_API_H_
#define CONFLUX_PLUGIN_API_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CFX_ABI_MAJOR 1
#define CFX_ABI_MINOR 0

#if defined(_WIN32)
#define CFX_EXPORT __declspec(dllexport)
#else
#define CFX_EXPORT __attribute__((visibility("default")))
#endif

/* True when a struct of the given size holds `field` (for fields appended in later minors). */
#define CFX_HAS_FIELD(ptr, type, field) \
  ((ptr)->struct_size >= offsetof(type, field) + sizeof(((type*)0)->field))

/* ---- Opaque handles ---------------------------------------------------------------------- */
typedef struct cfx_status cfx_status;                 /* host-made error object */
typedef struct cfx_tensor cfx_tensor;                 /* reference-counted tensor */
typedef struct cfx_attrs cfx_attrs;                   /* read-only attributes of one node */
typedef struct cfx_kernel_context cfx_kernel_context; /* one kernel invocation */
typedef struct cfx_shape_context cfx_shape_context;   /* one shape-function invocation */
typedef struct cfx_registrar cfx_registrar;           /* collects registrations during init */
typedef struct cfx_op_builder cfx_op_builder;
typedef struct cfx_kernel_builder cfx_kernel_builder;
typedef struct cfx_device cfx_device; /* plugin-owned device object */
typedef struct cfx_stream cfx_stream; /* plugin-owned stream / command queue */
typedef struct cfx_event cfx_event;   /* plugin-owned completion event */

/* Status codes: the same numbers as TensorFlow's error codes. */
typedef enum cfx_code {
  CFX_OK = 0,
  CFX_CANCELLED = 1,
  CFX_UNKNOWN = 2,
  CFX_INVALID_ARGUMENT = 3,
  CFX_DEADLINE_EXCEEDED = 4,
  CFX_NOT_FOUND = 5,
  CFX_ALREADY_EXISTS = 6,
  CFX_PERMISSION_DENIED = 7,
  CFX_RESOURCE_EXHAUSTED = 8,
  CFX_FAILED_PRECONDITION = 9,
  CFX_ABORTED = 10,
  CFX_OUT_OF_RANGE = 11,
  CFX_UNIMPLEMENTED = 12,
  CFX_INTERNAL = 13,
  CFX_UNAVAILABLE = 14,
  CFX_DATA_LOSS = 15,
  CFX_UNAUTHENTICATED = 16
} cfx_code;

/* Data types: TensorFlow's DataType enum values. */
typedef enum cfx_dtype {
  CFX_INVALID = 0,
  CFX_FLOAT = 1,
  CFX_DOUBLE = 2,
  CFX_INT32 = 3,
  CFX_UINT8 = 4,
  CFX_INT16 = 5,
  CFX_INT8 = 6,
  CFX_STRING = 7,
  CFX_COMPLEX64 = 8,
  CFX_INT64 = 9,
  CFX_BOOL = 10,
  CFX_QINT8 = 11,
  CFX_QUINT8 = 12,
  CFX_QINT32 = 13,
  CFX_BFLOAT16 = 14,
  CFX_QINT16 = 15,
  CFX_QUINT16 = 16,
  CFX_UINT16 = 17,
  CFX_COMPLEX128 = 18,
  CFX_HALF = 19,
  CFX_RESOURCE = 20,
  CFX_VARIANT = 21,
  CFX_UINT32 = 22,
  CFX_UINT64 = 23
} cfx_dtype;

typedef enum cfx_log_level {
  CFX_LOG_DEBUG = 0,
  CFX_LOG_INFO = 1,
  CFX_LOG_WARNING = 2,
  CFX_LOG_ERROR = 3
} cfx_log_level;

/* Where a buffer lives. DEVICE memory may not be addressable by the host (a cl_mem, a CUDA
 * pointer); HOST_PINNED memory is host-addressable and fast to copy to and from the device. */
typedef enum cfx_memory_kind { CFX_MEMORY_DEVICE = 0, CFX_MEMORY_HOST_PINNED = 1 } cfx_memory_kind;

/* Kernel flags (cfx_host_api.kernel_builder_set_flags). */
enum {
  /* Cheap enough to run inline on the executor thread (no hand-off to the inter-op pool). */
  CFX_KERNEL_INEXPENSIVE = 1u << 0
};

/* ---- Plugin-provided callbacks ----------------------------------------------------------- */
/* Kernel lifecycle (TensorFlow's C kernel API shape): create once per node, compute per step.
 * create: reads and validates attrs; on error sets `status` and returns NULL.
 * compute: sets outputs or an error through the context; never throws, never aborts.
 * compute_async: like compute but must eventually call done(done_arg) exactly once, from any
 *   thread; outputs and errors are set on the context before done.
 * destroy: frees what create returned (may be NULL). */
typedef void* (*cfx_kernel_create_fn)(const cfx_attrs* attrs, cfx_device* device,
                                      cfx_status* status);
typedef void (*cfx_kernel_compute_fn)(void* kernel, cfx_kernel_context* ctx);
typedef void (*cfx_done_fn)(void* done_arg);
typedef void (*cfx_kernel_compute_async_fn)(void* kernel, cfx_kernel_context* ctx,
                                            cfx_done_fn done, void* done_arg);
typedef void (*cfx_kernel_destroy_fn)(void* kernel);

/* Shape function: reads input shapes (and constant inputs where known) from the context, sets
 * every output shape; on a contradiction sets `status`. */
typedef void (*cfx_shape_fn)(cfx_shape_context* ctx, cfx_status* status);

/* Work split for intra-op parallelism: fn(arg, begin, end) over [0, total). */
typedef void (*cfx_range_fn)(void* arg, int64_t begin, int64_t end);

/* Called once a stream reaches the point where it was enqueued; `status` is NULL on success. */
typedef void (*cfx_stream_callback_fn)(void* arg, const cfx_status* status);

/* ---- Devices (filled by the plugin) ------------------------------------------------------ */
/* Host-filled configuration for one device instance. */
typedef struct cfx_host_device_config {
  size_t struct_size;
  int32_t index;            /* ordinal among devices of this type in this process */
  int64_t memory_limit;     /* bytes; 0 = no limit requested */
  int32_t intra_op_threads; /* threads for intra-op parallelism; 0 = plugin default */
  size_t num_options;       /* device options from the config (key/value strings) */
  const char* const* option_keys;
  const char* const* option_values;
} cfx_host_device_config;

/* Functions of one device type. Pointers are per device type; each takes the device. Copies are
 * enqueued on `stream` (NULL = the device's default stream) and complete in stream order;
 * buffers are addressed as (base pointer returned by allocate, byte offset). */
typedef struct cfx_device_funcs {
  size_t struct_size;
  void* (*allocate)(cfx_device* dev, cfx_memory_kind kind, size_t bytes, size_t alignment,
                    cfx_status* status);
  void (*deallocate)(cfx_device* dev, cfx_memory_kind kind, void* ptr, size_t bytes);
  void (*copy_host_to_device)(cfx_device* dev, cfx_stream* stream, void* dst, size_t dst_offset,
                              const void* src, size_t bytes, cfx_status* status);
  void (*copy_device_to_host)(cfx_device* dev, cfx_stream* stream, void* dst, const void* src,
                              size_t src_offset, size_t bytes, cfx_status* status);
  void (*copy_device_to_device)(cfx_device* dev, cfx_stream* stream, void* dst, size_t dst_offset,
                                const void* src, size_t src_offset, size_t bytes,
                                cfx_status* status);
  cfx_stream* (*stream_create)(cfx_device* dev, cfx_status* status);
  void (*stream_destroy)(cfx_device* dev, cfx_stream* stream);
  void (*stream_synchronize)(cfx_device* dev, cfx_stream* stream, cfx_status* status);
  /* Runs cb(arg, status) once all work enqueued on `stream` before this call has completed. */
  void (*stream_then)(cfx_device* dev, cfx_stream* stream, cfx_stream_callback_fn cb, void* arg);
  cfx_event* (*event_create)(cfx_device* dev, cfx_status* status);
  void (*event_destroy)(cfx_device* dev, cfx_event* event);
  void (*event_record)(cfx_device* dev, cfx_event* event, cfx_stream* stream, cfx_status* status);
  /* 1 when complete, 0 when pending. */
  int (*event_query)(cfx_device* dev, cfx_event* event);
  void (*event_synchronize)(cfx_device* dev, cfx_event* event, cfx_status* status);
  void (*stream_wait_event)(cfx_device* dev, cfx_stream* stream, cfx_event* event,
                            cfx_status* status);
  /* Intra-op parallelism on this device's thread pool; blocks until every range is done. */
  void (*parallel_for)(cfx_device* dev, int64_t total, int64_t cost_per_unit, cfx_range_fn fn,
                       void* arg);
  /* One human-readable line describing the device (model, memory). */
  void (*describe)(cfx_device* dev, char* buffer, size_t buffer_size);
} cfx_device_funcs;

typedef struct cfx_device_type_desc {
  size_t struct_size;
  const char* type; /* "CPU", "GPU", "OPENCL", ... upper case, [A-Z0-9_]+ */
  void* type_state; /* passed back to the functions below */
  /* 1 when DEVICE memory is ordinary host memory (no copies needed to read it on the host). */
  int32_t host_addressable;
  /* How many devices of this type exist here; -1 = as many as configured (CPU). When 0, writes
   * why into `why`. */
  int32_t (*count)(void* type_state, char* why, size_t why_size);
  cfx_device* (*create_device)(void* type_state, const cfx_host_device_config* config,
                               cfx_status* status);
  void (*destroy_device)(void* type_state, cfx_device* dev);
  const cfx_device_funcs* funcs;
} cfx_device_type_desc;

/* ---- What the plugin reports about itself ------------------------------------------------ */
typedef struct cfx_plugin_info {
  size_t struct_size;
  const char* name;    /* short name, e.g. "cpu"; static storage */
  const char* version; /* the plugin's own version string; static storage */
  void* plugin_state;  /* passed to shutdown */
  void (*shutdown)(void* plugin_state); /* optional: called before the library is unloaded */
} cfx_plugin_info;

/* Options from the config's `options:` map for this plugin. */
typedef struct cfx_host_plugin_options {
  size_t struct_size;
  size_t count;
  const char* const* keys;
  const char* const* values;
} cfx_host_plugin_options;

/* ---- The host function table ------------------------------------------------------------- */
typedef struct cfx_host_api {
  size_t struct_size;
  uint32_t abi_major;
  uint32_t abi_minor; /* negotiated minor: min(host, plugin) */

  /* Status */
  void (*status_set)(cfx_status* status, cfx_code code, const char* message);
  cfx_code (*status_code)(const cfx_status* status);
  const char* (*status_message)(const cfx_status* status); /* valid until the next set/delete */
  cfx_status* (*status_new)(void);
  void (*status_delete)(cfx_status* status);

  void (*log)(cfx_log_level level, const char* message);

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

  /* Attributes. Getters set NOT_FOUND when absent and INVALID_ARGUMENT on a kind mismatch,
   * naming the node and the attr. Strings and lists stay valid as long as the attrs. */
  const char* (*attrs_node_name)(const cfx_attrs* a);
  int (*attr_exists)(const cfx_attrs* a, const char* name);
  void (*attr_get_int)(const cfx_attrs* a, const char* name, int64_t* out, cfx_status* s);
  void (*attr_get_float)(const cfx_attrs* a, const char* name, float* out, cfx_status* s);
  void (*attr_get_bool)(const cfx_attrs* a, const char* name, uint8_t* out, cfx_status* s);
  void (*attr_get_type)(const cfx_attrs* a, const char* name, cfx_dtype* out, cfx_status* s);
  void (*attr_get_string)(const cfx_attrs* a, const char* name, const char** data, size_t* size,
                          cfx_status* s);
  /* rank -1 = unknown rank; dims[i] -1 = unknown dimension. Fails if rank > max_rank. */
  void (*attr_get_shape)(const cfx_attrs* a, const char* name, int64_t* dims, int max_rank,
                         int* rank, cfx_status* s);
  /* Number of elements of a list attr. */
  void (*attr_get_list_size)(const cfx_attrs* a, const char* name, int64_t* size, cfx_status* s);
  void (*attr_get_int_list)(const cfx_attrs* a, const char* name, int64_t* out, int64_t max,
                            cfx_status* s);
  void (*attr_get_float_list)(const cfx_attrs* a, const char* name, float* out, int64_t max,
                              cfx_status* s);
  void (*attr_get_type_list)(const cfx_attrs* a, const char* name, cfx_dtype* out, int64_t max,
                             cfx_status* s);
  /* A tensor attr as a new owned host tensor handle. */
  cfx_tensor* (*attr_get_tensor)(const cfx_attrs* a, const char* name, cfx_status* s);

  /* Tensors. Data pointers of tensors in DEVICE memory of a non-host-addressable device are
   * device handles, not host addresses. */
  cfx_dtype (*tensor_dtype)(const cfx_tensor* t);
  int (*tensor_rank)(const cfx_tensor* t);
  int64_t (*tensor_dim)(const cfx_tensor* t, int i);
  int64_t (*tensor_num_elements)(const cfx_tensor* t);
  size_t (*tensor_byte_size)(const cfx_tensor* t);
  void* (*tensor_data)(const cfx_tensor* t);
  /* Handles are borrowed (inputs, outputs: valid for the kernel call) or owned (returned by
   * tensor_share, tensor_new_host, attr_get_tensor, ctx_allocate_temp: the caller releases). */
  cfx_tensor* (*tensor_share)(const cfx_tensor* t); /* new owned handle, same buffer */
  void (*tensor_release)(cfx_tensor* t);            /* releases an owned handle */
  /* Elements of DT_STRING tensors (host memory only). */
  const char* (*tensor_string)(const cfx_tensor* t, int64_t index, size_t* size);
  void (*tensor_set_string)(cfx_tensor* t, int64_t index, const char* data, size_t size);
  /* A new host tensor with its own buffer (owned). */
  cfx_tensor* (*tensor_new_host)(cfx_dtype dtype, const int64_t* dims, int rank, cfx_status* s);

  /* Kernel context. Inputs are borrowed for the call. Outputs returned by allocate_output and
   * forward_or_allocate are borrowed too: the context owns them. */
  int (*ctx_num_inputs)(const cfx_kernel_context* c);
  int (*ctx_num_outputs)(const cfx_kernel_context* c);
  const cfx_tensor* (*ctx_input)(const cfx_kernel_context* c, int index);
  cfx_dtype (*ctx_output_dtype)(const cfx_kernel_context* c, int index);
  cfx_tensor* (*ctx_allocate_output)(cfx_kernel_context* c, int index, const int64_t* dims,
                                     int rank, cfx_status* s);
  /* Makes output `index` share the buffer of `t` (no copy). */
  void (*ctx_set_output)(cfx_kernel_context* c, int index, const cfx_tensor* t, cfx_status* s);
  /* Reuses the buffer of one of `candidates` (input indices) when the kernel holds its only
   * reference and dtype and size fit; otherwise allocates. */
  cfx_tensor* (*ctx_forward_or_allocate)(cfx_kernel_context* c, const int* candidates,
                                         int num_candidates, int output_index,
                                         const int64_t* dims, int rank, cfx_status* s);
  /* Scratch tensor on the kernel's device (owned). */
  cfx_tensor* (*ctx_allocate_temp)(cfx_kernel_context* c, cfx_dtype dtype, const int64_t* dims,
                                   int rank, cfx_status* s);
  /* Records the kernel's failure; the step aborts with this error, prefixed with the node. */
  void (*ctx_set_error)(cfx_kernel_context* c, cfx_code code, const char* message);
  cfx_device* (*ctx_device)(const cfx_kernel_context* c);
  cfx_stream* (*ctx_stream)(const cfx_kernel_context* c);
  const char* (*ctx_node_name)(const cfx_kernel_context* c);
  void (*ctx_parallel_for)(cfx_kernel_context* c, int64_t total, int64_t cost_per_unit,
                           cfx_range_fn fn, void* arg);

  /* Shape context. */
  const cfx_attrs* (*shape_attrs)(const cfx_shape_context* c);
  int (*shape_num_inputs)(const cfx_shape_context* c);
  int (*shape_num_outputs)(const cfx_shape_context* c);
  int (*shape_input_rank)(const cfx_shape_context* c, int index);          /* -1 unknown */
  int64_t (*shape_input_dim)(const cfx_shape_context* c, int index, int d); /* -1 unknown */
  /* The value of input `index` when it is known while inferring (a constant), else NULL. */
  const cfx_tensor* (*shape_input_tensor)(const cfx_shape_context* c, int index);
  void (*shape_set_output)(cfx_shape_context* c, int index, const int64_t* dims, int rank);

  /* Makes output `index` share the buffer of `t` under another shape with the same number of
   * elements (Reshape, ExpandDims, Squeeze: no copy). InvalidArgument when the counts differ. */
  void (*ctx_set_output_reshaped)(cfx_kernel_context* c, int index, const cfx_tensor* t,
                                  const int64_t* dims, int rank, cfx_status* s);
} cfx_host_api;

/* ---- Entry points every plugin exports --------------------------------------------------- */
/* (CFX_ABI_MAJOR << 16) | CFX_ABI_MINOR of the headers the plugin was built with. The host
 * calls it before cfx_plugin_init and refuses a plugin whose major differs. */
typedef uint32_t (*cfx_plugin_abi_version_fn)(void);
/* Registers the plugin's ops, kernels and device types through `registrar` and fills `info`.
 * On failure sets `status`; the host then discards every registration made during the call. */
typedef void (*cfx_plugin_init_fn)(const cfx_host_api* host, cfx_registrar* registrar,
                                   const cfx_host_plugin_options* options, cfx_plugin_info* info,
                                   cfx_status* status);

#define CFX_PLUGIN_ABI_VERSION_SYMBOL "cfx_plugin_abi_version"
#define CFX_PLUGIN_INIT_SYMBOL "cfx_plugin_init"

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CONFLUX_PLUGIN_API_H_ */
