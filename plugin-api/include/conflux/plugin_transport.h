/* Conflux plugin ABI, minor 4: transports and collectives, the plugin-filled side. Include
 * conflux/plugin_api.h, which includes this file; the host's side (registration, the process
 * group) is cfx_host_transport_api in conflux/plugin_host_tables.h.
 *
 * A transport joins the processes of a cluster into one group (an MPI job: rank, size, a name
 * per task) and moves messages between them: point-to-point, asynchronous, each message keyed by
 * a byte string (the host uses "<step id>;<rendezvous key>" for tensors and its own keys for
 * control messages). A message is (metadata, payload): the metadata is a few host-defined bytes
 * (the tensor's dtype, shape, whether it is dead), the payload the tensor's bytes. A receive names
 * the peer and the key; it matches the one send of that key from that peer whenever either side
 * comes first. The receiver learns the metadata and the payload size first and hands the
 * transport the buffer to receive into (`alloc`), so that payloads move straight between tensor
 * buffers.
 *
 * Collectives (all-reduce, all-gather, broadcast) are a separate, optional part: a transport may
 * offer them for host memory, and another plugin (NCCL) may register collectives for a device
 * type's memory, bootstrapped over the host's process group.
 *
 * Threads: every function may be called from any thread, concurrently. Callbacks (alloc, done)
 * run on a thread of the transport's, or inline in the call that started the operation; they must
 * not block for long, and may start new operations. Exactly one `done` per started operation.
 */
#include "conflux/plugin_api.h"

#ifndef CONFLUX_PLUGIN_TRANSPORT_H_
#define CONFLUX_PLUGIN_TRANSPORT_H_

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cfx_transport cfx_transport;     /* plugin-owned: this process's group endpoint */
typedef struct cfx_collectives cfx_collectives; /* plugin-owned: one collectives instance */
typedef struct cfx_host_group cfx_host_group;   /* host-owned: the process group (bootstrap) */

/* Identifies a started send or receive for `cancel`; 0 = none. */
typedef uint64_t cfx_transport_request;

/* Completion of one operation: `status` is NULL on success, else the error (valid during the
 * call). An error names the peer task (the name the host set with set_peer_name). */
typedef void (*cfx_transport_done_fn)(void* arg, const cfx_status* status);

/* Called once per receive, when the matching message's metadata has arrived: returns where its
 * `payload_bytes` bytes go (NULL is allowed when payload_bytes is 0). On failure sets `status`
 * and returns NULL: the transport then discards the payload and completes the receive with that
 * error. The buffer must stay valid until `done` runs. */
typedef void* (*cfx_transport_alloc_fn)(void* arg, const void* meta, size_t meta_size,
                                        uint64_t payload_bytes, cfx_status* status);

/* Host-filled: how to create the transport. Options are the plugin's `options:` from the config
 * and the cluster's `transport_options:`. */
typedef struct cfx_host_transport_config {
  size_t struct_size;
  size_t num_options;
  const char* const* option_keys;
  const char* const* option_values;
  int32_t expected_size; /* tasks in the cluster config (0 = not known) */
  /* Appended in ABI 1.4 (read it only when struct_size covers it): 1 when the host's calls of
   * the collectives may block the calling thread until every member has joined. The host sets it
   * under between-graph replication, where a member waits for nothing but the collectives
   * themselves; a transport may then run them on the caller's thread, without a handoff to a
   * thread of its own. 0: a call must return without waiting for the other members. */
  int32_t blocking_collectives;
} cfx_host_transport_config;

typedef struct cfx_transport_funcs {
  size_t struct_size;
  /* This process's rank in [0, size), and the group's size. */
  int32_t (*rank)(cfx_transport* t);
  int32_t (*size)(cfx_transport* t);
  /* The host's name for a rank ("/job:worker/replica:0/task:1"), used in the transport's error
   * messages from then on. */
  void (*set_peer_name)(cfx_transport* t, int32_t rank, const char* name);
  /* Where a rank runs, for people ("host node3, pid 4711"); NUL-terminated, truncated. */
  void (*describe_peer)(cfx_transport* t, int32_t rank, char* buffer, size_t buffer_size);
  /* Sends (meta, payload) to `peer` under `key`. The key and metadata are copied before the call
   * returns; the payload must stay valid and unchanged until `done` runs. `done` runs once the
   * payload buffer may be reused (not necessarily once the peer has received it). */
  cfx_transport_request (*send)(cfx_transport* t, int32_t peer, const char* key, size_t key_size,
                                const void* meta, size_t meta_size, const void* payload,
                                uint64_t payload_bytes, cfx_transport_done_fn done, void* arg);
  /* Receives the message `peer` sends under `key` (the key is copied): `alloc`, then `done`. */
  cfx_transport_request (*recv)(cfx_transport* t, int32_t peer, const char* key, size_t key_size,
                                cfx_transport_alloc_fn alloc, cfx_transport_done_fn done,
                                void* arg);
  /* Ends a started operation early: its `done` runs with CANCELLED unless it has run or is
   * running already. A cancelled receive's message, should it still come, is discarded. */
  void (*cancel)(cfx_transport* t, cfx_transport_request request);
  /* Discards every message whose key starts with `prefix` (an aborted step's): pending receives
   * under it complete with `why` (CANCELLED when NULL), payloads that arrived or arrive later
   * under it are received and dropped, so that their senders complete. */
  void (*abort_prefix)(cfx_transport* t, const char* prefix, size_t prefix_size,
                       const cfx_status* why);
  /* Hook for device-direct transfers: 1 when send and recv accept buffers in DEVICE memory of
   * `device_type` (e.g. CUDA-aware MPI). NULL or 0: the host stages such tensors through host
   * memory with the device's copy functions. */
  int32_t (*device_memory)(cfx_transport* t, const char* device_type);
} cfx_transport_funcs;

/* Reductions of cfx_collective_funcs.all_reduce. MEAN divides the sum by the group's size. */
typedef enum cfx_reduce_op {
  CFX_REDUCE_SUM = 0,
  CFX_REDUCE_MEAN = 1,
  CFX_REDUCE_MIN = 2,
  CFX_REDUCE_MAX = 3,
  CFX_REDUCE_PROD = 4
} cfx_reduce_op;

/* Collectives over a group of ranks: `ranks` ascending, `num_ranks` of them (NULL and 0 = every
 * rank). Every member calls the same collectives on the same group in the same order; buffers
 * are in the memory of the collectives' device type (host memory for "CPU"), and `stream` is
 * the device stream to order them on (NULL for host memory). `done` runs once the output is
 * complete (for device memory: once the work is ordered on `stream`). Unsupported dtype or op:
 * done with UNIMPLEMENTED. */
typedef struct cfx_collective_funcs {
  size_t struct_size;
  /* output[i] = op over the group of input[i], i < count; input may equal output (in place). */
  void (*all_reduce)(cfx_collectives* c, const int32_t* ranks, int32_t num_ranks, cfx_dtype dtype,
                     const void* input, void* output, uint64_t count, cfx_reduce_op op,
                     cfx_stream* stream, cfx_transport_done_fn done, void* arg);
  /* output = the members' inputs (count elements each) concatenated in rank order. */
  void (*all_gather)(cfx_collectives* c, const int32_t* ranks, int32_t num_ranks, cfx_dtype dtype,
                     const void* input, uint64_t count, void* output, cfx_stream* stream,
                     cfx_transport_done_fn done, void* arg);
  /* buffer on every member = buffer on `root` (a rank of the group). */
  void (*broadcast)(cfx_collectives* c, const int32_t* ranks, int32_t num_ranks, cfx_dtype dtype,
                    void* buffer, uint64_t count, int32_t root, cfx_stream* stream,
                    cfx_transport_done_fn done, void* arg);
} cfx_collective_funcs;

typedef struct cfx_collectives_desc {
  size_t struct_size;
  const char* name;        /* "mpi", "nccl"; static storage */
  const char* device_type; /* whose memory the buffers are in: "CPU" = host memory */
  void* state;
  /* Created once the process group exists; may talk to the other ranks through `group`
   * (cfx_host_transport_api.group_*), e.g. to share a bootstrap id. */
  cfx_collectives* (*create)(void* state, const cfx_host_group* group, cfx_status* status);
  void (*destroy)(void* state, cfx_collectives* c);
  const cfx_collective_funcs* funcs;
} cfx_collectives_desc;

typedef struct cfx_transport_desc {
  size_t struct_size;
  const char* name; /* "mpi"; what a cluster config's `transport:` names; static storage */
  void* state;
  /* Joins the process group (MPI_Init_thread). At most one transport per process. */
  cfx_transport* (*create)(void* state, const cfx_host_transport_config* config,
                           cfx_status* status);
  /* Leaves it, after every operation has completed or been cancelled. */
  void (*destroy)(void* state, cfx_transport* t);
  const cfx_transport_funcs* funcs;
  /* The transport's own collectives for host memory, or NULL. */
  const cfx_collectives_desc* collectives;
} cfx_transport_desc;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CONFLUX_PLUGIN_TRANSPORT_H_ */
