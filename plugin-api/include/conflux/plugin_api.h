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
 * `cfx_device_type_desc` and `cfx_device_funcs`. Handles are opaque. The host's functions are
 * in tables by concept (conflux/plugin_host_api.h).
 *
 * Thread-safety: a kernel context is one kernel call's. Host functions that take it may be called
 * by the thread running compute, or, for compute_async, by any thread until the kernel calls
 * done, never after; calls on one context must not overlap, except step_id, frame_id, iteration
 * and (de)register_cancellation, which may run concurrently with each other and with the rest.
 * A shape context is usable only by the thread running that shape function. Tensor accessors
 * may be called from any thread while the caller holds a reference; everything else is
 * thread-safe.
 */
#ifndef CONFLUX_PLUGIN_API_H_
#define CONFLUX_PLUGIN_API_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CFX_ABI_MAJOR 1
#define CFX_ABI_MINOR 4

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
typedef struct cfx_variable cfx_variable; /* host-owned variable (minor 1) */
typedef struct cfx_grad_context cfx_grad_context; /* one gradient-function call (minor 2) */
typedef struct cfx_grad_node cfx_grad_node;       /* a node being built by one (minor 2) */
typedef struct cfx_file cfx_file; /* a file a kernel writes through the host (after minor 4) */

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

/* Kernel flags (cfx_host_registration_api.kernel_builder_set_flags). */
enum {
  /* Cheap enough to run inline on the executor thread (no hand-off to the inter-op pool). */
  CFX_KERNEL_INEXPENSIVE = 1u << 0
};

/* ---- Plugin-provided callbacks ----------------------------------------------------------- */
/* Kernel lifecycle (TensorFlow's C kernel API shape): create once per node, compute per step.
 * create: reads and validates attrs; on error sets `status` and returns NULL.
 * compute: sets outputs or an error through the context; never throws, never aborts.
 * compute_async: like compute but must eventually call done(done_arg) exactly once, from any
 *   thread; outputs and errors are set on the context before done (see Thread-safety above).
 *   A kernel that may wait without bound registers for its step's cancellation
 *   (cfx_host_kernel_api.register_cancellation) so that an aborted step does not wait for it.
 * destroy: frees what create returned (may be NULL). */
typedef void* (*cfx_kernel_create_fn)(const cfx_attrs* attrs, cfx_device* device,
                                      cfx_status* status);
typedef void (*cfx_kernel_compute_fn)(void* kernel, cfx_kernel_context* ctx);
typedef void (*cfx_done_fn)(void* done_arg);
typedef void (*cfx_kernel_compute_async_fn)(void* kernel, cfx_kernel_context* ctx,
                                            cfx_done_fn done, void* done_arg);
typedef void (*cfx_kernel_destroy_fn)(void* kernel);

/* Cancellation of a kernel's step (cfx_host_kernel_api.register_cancellation, minor 3): `why`
 * is the step's error (DEADLINE_EXCEEDED when it timed out, CANCELLED when the session was closed,
 * a kernel's error), valid during the call. */
typedef void (*cfx_cancel_fn)(void* arg, const cfx_status* why);
typedef int64_t cfx_cancel_token;
#define CFX_INVALID_CANCEL_TOKEN ((cfx_cancel_token)-1)

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
  /* Runs cb(arg, status) once all work enqueued on `stream` before this call has completed, on a
   * thread of the plugin's that no stream's progress depends on: the callback may enqueue work
   * and wait for any stream (stream_synchronize), and may run for a while. */
  void (*stream_then)(cfx_device* dev, cfx_stream* stream, cfx_stream_callback_fn cb, void* arg);
  cfx_event* (*event_create)(cfx_device* dev, cfx_status* status);
  /* May be called while a stream still waits for the event (stream_wait_event): the plugin keeps
   * what that wait needs, as CUDA and OpenCL do. */
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
  /* Appended in ABI 1.4 (read it only when struct_size covers it; may be NULL): the bytes the
   * device's memory pool may hold, for a device created without a memory_limit that sets one of
   * its own (a GPU's share of its memory). The host's statistics and swap thresholds use it. */
  int64_t (*memory_limit)(cfx_device* dev);
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

/* A gradient function (minor 2): adds, through the grad_* host functions, the nodes that compute
 * the gradients of one forward node's inputs, and sets them with grad_set_input_grad. On failure
 * sets `status`. Called by the host while it builds a backward graph. */
typedef void (*cfx_gradient_fn)(cfx_grad_context* g, void* user_data, cfx_status* status);

/* The host function table: conflux/plugin_host_api.h (included at the end of this file). */
typedef struct cfx_host_api cfx_host_api;

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

#include "conflux/plugin_host_api.h"

#endif /* CONFLUX_PLUGIN_API_H_ */
