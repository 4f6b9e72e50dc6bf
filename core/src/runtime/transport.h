// Transport: how the processes of a cluster reach each other (the runtime's view of a transport
// plugin, conflux/plugin_transport.h). Asynchronous point-to-point messages keyed by a byte
// string, each (metadata, payload); and optional collectives over a group of ranks.
//
// The distributed runtime (core/src/distributed) is written against these interfaces only;
// plugin/ adapts a plugin's C functions onto them. Thread-safe: every member may be called from
// any thread. Callbacks run on a transport thread or inline, exactly once per operation; they
// must not block for long and may start new operations.
#ifndef CONFLUX_CORE_SRC_RUNTIME_TRANSPORT_H_
#define CONFLUX_CORE_SRC_RUNTIME_TRANSPORT_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "conflux/device.h"
#include "conflux/status.h"
#include "conflux/types.h"

namespace cfx {

enum class ReduceOp { kSum = 0, kMean = 1, kMin = 2, kMax = 3, kProd = 4 };

// Collectives for one memory space (host memory for device type "CPU"). Every member of `ranks`
// (ascending; empty = every rank) calls the same collectives in the same order.
class Collectives {
 public:
  using Done = std::function<void(const Status&)>;
  virtual ~Collectives() = default;
  virtual const std::string& name() const = 0;
  virtual const std::string& device_type() const = 0;
  virtual void AllReduce(const std::vector<int32_t>& ranks, DataType dtype, const void* input,
                         void* output, uint64_t count, ReduceOp op, DeviceStream* stream,
                         Done done) = 0;
  virtual void AllGather(const std::vector<int32_t>& ranks, DataType dtype, const void* input,
                         uint64_t count, void* output, DeviceStream* stream, Done done) = 0;
  virtual void Broadcast(const std::vector<int32_t>& ranks, DataType dtype, void* buffer,
                         uint64_t count, int32_t root, DeviceStream* stream, Done done) = 0;
};

// The collectives of a process group for device memory, one provider per device type ("nccl"
// for "GPU"), and why a device type that a loaded plugin registers collectives for has none here.
// Filled once, when the process joins its group, before any step runs; read-only afterwards, so
// concurrent Find calls need no lock.
class DeviceCollectives {
 public:
  // Takes `c` for its device type, which has no collectives yet.
  void Add(std::unique_ptr<Collectives> c);
  // Records why `device_type` has no collectives in this process (Find's error says it).
  void Skip(const std::string& device_type, std::string why);
  void Clear();
  // The collectives for `device_type`; null when there are none, with the reason in *why.
  Collectives* Find(const std::string& device_type, std::string* why) const;
  // The device types that have collectives, in name order.
  std::vector<std::string> types() const;

 private:
  std::map<std::string, std::unique_ptr<Collectives>> by_type_;
  std::map<std::string, std::string> skipped_;
};

class Transport {
 public:
  using Request = uint64_t;  // 0 = none
  using Done = std::function<void(const Status&)>;
  // Where the payload of a matched message goes, once its metadata is known. An error discards
  // the payload and fails the receive with it. The buffer stays valid until `done` runs.
  using Alloc = std::function<StatusOr<void*>(std::string_view meta, uint64_t payload_bytes)>;

  virtual ~Transport() = default;
  virtual const std::string& name() const = 0;  // the plugin's transport name ("mpi")
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Names a rank in the transport's errors from then on ("/job:worker/replica:0/task:1").
  virtual void SetPeerName(int rank, const std::string& name) = 0;
  // Where a rank runs ("host node3, pid 4711").
  virtual std::string DescribePeer(int rank) const = 0;

  // The payload stays valid until `done`; key and meta are copied.
  virtual Request Send(int peer, std::string_view key, std::string_view meta, const void* payload,
                       uint64_t payload_bytes, Done done) = 0;
  virtual Request Recv(int peer, std::string_view key, Alloc alloc, Done done) = 0;
  // `done` of the operation runs with Cancelled unless it ran already.
  virtual void Cancel(Request request) = 0;
  // Pending receives under `prefix` fail with `why`; their messages, now and later, are dropped.
  virtual void AbortPrefix(std::string_view prefix, const Status& why) = 0;
  // True when Send/Recv take buffers in `device_type`'s own memory (no staging needed).
  virtual bool DeviceMemory(const std::string& device_type) const = 0;

  // Byte messages (no metadata) over Send/Recv: control messages, bootstrap ids. The
  // asynchronous ones keep `bytes` until sent and hand `done` the received bytes (a message too
  // large to hold is ResourceExhausted); the blocking ones wait for them.
  void SendBytes(int peer, std::string_view key, std::string bytes, Done done);
  void RecvBytes(int peer, std::string_view key,
                 std::function<void(const Status&, std::string)> done);
  Status SendSync(int peer, std::string_view key, std::string_view bytes);
  StatusOr<std::string> RecvSync(int peer, std::string_view key);
};

}  // namespace cfx

#endif  // CONFLUX_CORE_SRC_RUNTIME_TRANSPORT_H_
