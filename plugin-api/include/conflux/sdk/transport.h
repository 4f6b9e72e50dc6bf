// Conflux plugin SDK: transports and collectives (ABI minor 4, conflux/plugin_transport.h).
//
// A transport is a class derived from sdk::Transport with a static factory
//   static Result<std::unique_ptr<T>> Create(const TransportConfig& config);
// and collectives a class derived from sdk::Collectives with
//   static Result<std::unique_ptr<C>> Create(const HostGroup& group);
// Register them in the plugin's init function:
//   p.Transport<MyTransport>("mine");                                 // point-to-point only
//   p.Transport<MpiTransport>("mpi").HostCollectives<MpiCollectives>("mpi");
//   p.Collectives<NcclCollectives>("nccl", "GPU");                    // a device's collectives
// The SDK makes the C descriptors (static storage: they outlive the plugin's use) and the C
// entry points (conflux/sdk/transport_entry.h), which catch every exception: an exception thrown by
// Send, Recv or a collective becomes that operation's `done` with INTERNAL, so an implementation
// must not throw once it has called `done` or handed it on; one thrown elsewhere is logged.
//
// Threads: the ABI's rules hold for the C++ members too: every member may be called from any
// thread, concurrently; TransportDone and TransportAlloc are called exactly once each, from any
// thread, and are cheap to copy.
#ifndef CONFLUX_SDK_TRANSPORT_H_
#define CONFLUX_SDK_TRANSPORT_H_

#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "conflux/sdk/status.h"

namespace cfx::sdk {

// An operation's completion, to be called exactly once.
class TransportDone {
 public:
  TransportDone() = default;
  TransportDone(cfx_transport_done_fn fn, void* arg) : fn_(fn), arg_(arg) {}
  void operator()(const Status& status) const {
    if (status.ok()) return fn_(arg_, nullptr);
    HostStatus s;
    status.ExportTo(s.get());
    fn_(arg_, s.get());
  }

 private:
  cfx_transport_done_fn fn_ = nullptr;
  void* arg_ = nullptr;
};

// A receive's buffer, asked for once the message's metadata is known: where its
// `payload_bytes` bytes go (nullptr when there are none), or the host's error, after which the
// transport discards the payload and completes the receive with that error.
class TransportAlloc {
 public:
  TransportAlloc() = default;
  TransportAlloc(cfx_transport_alloc_fn fn, void* arg) : fn_(fn), arg_(arg) {}
  Result<void*> operator()(std::string_view meta, uint64_t payload_bytes) const {
    HostStatus s;
    void* buffer = fn_(arg_, meta.data(), meta.size(), payload_bytes, s.get());
    Status error = s.ToStatus();
    if (!error.ok()) return error;
    if (buffer == nullptr && payload_bytes > 0)
      return Internal("the host gave no buffer for a payload of ", payload_bytes, " bytes");
    return buffer;
  }

 private:
  cfx_transport_alloc_fn fn_ = nullptr;
  void* arg_ = nullptr;
};

// What a transport is created with: the plugin's `options:` and the cluster's
// `transport_options:` (later keys win), and the cluster's task count (0 = not known).
struct TransportConfig {
  std::map<std::string, std::string> options;
  int32_t expected_size = 0;
  // cfx_host_transport_config.blocking_collectives: collectives may block their caller.
  bool blocking_collectives = false;

  std::string Option(const std::string& key, const std::string& fallback) const {
    auto it = options.find(key);
    return it == options.end() ? fallback : it->second;
  }
  // A whole number, with an optional binary suffix K, M or G, or KiB, MiB or GiB as in the
  // config's sizes ("64M", "64MiB"); `fallback` when absent.
  Result<int64_t> IntOption(const std::string& key, int64_t fallback) const {
    auto it = options.find(key);
    if (it == options.end()) return fallback;
    const std::string& text = it->second;
    size_t used = 0;
    int64_t value = 0;
    try {
      value = std::stoll(text, &used);
    } catch (...) {
      used = 0;
    }
    const std::string suffix = used > 0 ? text.substr(used) : std::string();
    int shift = -1;
    if (suffix.empty()) shift = 0;
    if (suffix == "K" || suffix == "KiB") shift = 10;
    if (suffix == "M" || suffix == "MiB") shift = 20;
    if (suffix == "G" || suffix == "GiB") shift = 30;
    if (used == 0 || shift < 0 || value < 0 || (value >> (62 - shift)) != 0)
      return InvalidArgument("option ", key, ": '", text,
                             "' is not a whole number (optionally with K, M, G, KiB, MiB or GiB)");
    return value << shift;
  }
};

// This process's endpoint of the process group: what the host's Transport calls.
class Transport {
 public:
  virtual ~Transport() = default;
  virtual int32_t Rank() const = 0;
  virtual int32_t Size() const = 0;
  // The host's name for a rank, for error messages from then on.
  virtual void SetPeerName(int32_t /*rank*/, const std::string& /*name*/) {}
  // Where a rank runs, for people ("host node3, pid 4711").
  virtual std::string DescribePeer(int32_t rank) const { return StrCat("rank ", rank); }
  // Sends (meta, payload) to `peer` under `key`; key and meta are only valid during the call,
  // the payload until `done`. Returns an id for Cancel (0 = none).
  virtual cfx_transport_request Send(int32_t peer, std::string_view key, std::string_view meta,
                                     const void* payload, uint64_t payload_bytes,
                                     TransportDone done) = 0;
  // Receives the message `peer` sends under `key` (valid during the call): alloc, then done.
  virtual cfx_transport_request Recv(int32_t peer, std::string_view key, TransportAlloc alloc,
                                     TransportDone done) = 0;
  virtual void Cancel(cfx_transport_request /*request*/) {}
  // `why` is CANCELLED when the host gave no status.
  virtual void AbortPrefix(std::string_view /*prefix*/, const Status& /*why*/) {}
  // True when Send and Recv accept buffers in `device_type`'s own memory.
  virtual bool DeviceMemory(std::string_view /*device_type*/) const { return false; }
};

// The host's process group, for collectives that bootstrap over it (valid until the collectives
// are destroyed).
class HostGroup {
 public:
  explicit HostGroup(const cfx_host_group* group) : group_(group) {}
  int32_t Rank() const { return Host().transport->group_rank(group_); }
  int32_t Size() const { return Host().transport->group_size(group_); }
  // Blocking: `bytes` bytes at `data` on every member become those of `root`'s. Every member
  // calls it, in the same order as its other broadcasts.
  Status Broadcast(void* data, size_t bytes, int32_t root) const {
    HostStatus s;
    Host().transport->group_broadcast(group_, data, bytes, root, s.get());
    return s.ToStatus();
  }
  const cfx_host_group* get() const { return group_; }

 private:
  const cfx_host_group* group_;
};

// Collectives over groups of ranks (ascending; empty = every rank). Every member issues the
// same collectives on the same group in the same order. What is not overridden answers
// UNIMPLEMENTED.
class Collectives {
 public:
  using Ranks = std::span<const int32_t>;
  virtual ~Collectives() = default;
  virtual void AllReduce(Ranks /*ranks*/, cfx_dtype /*dtype*/, const void* /*input*/,
                         void* /*output*/, uint64_t /*count*/, cfx_reduce_op /*op*/,
                         cfx_stream* /*stream*/, TransportDone done) {
    done(Unimplemented("these collectives have no all_reduce"));
  }
  virtual void AllGather(Ranks /*ranks*/, cfx_dtype /*dtype*/, const void* /*input*/,
                         uint64_t /*count*/, void* /*output*/, cfx_stream* /*stream*/,
                         TransportDone done) {
    done(Unimplemented("these collectives have no all_gather"));
  }
  virtual void Broadcast(Ranks /*ranks*/, cfx_dtype /*dtype*/, void* /*buffer*/, uint64_t /*count*/,
                         int32_t /*root*/, cfx_stream* /*stream*/, TransportDone done) {
    done(Unimplemented("these collectives have no broadcast"));
  }
};

class Plugin;

// Registers a transport when it goes out of scope (the end of the full expression).
class TransportBuilder {
 public:
  TransportBuilder(Plugin* p, cfx_transport_desc* desc) : p_(p), desc_(desc) {}
  TransportBuilder(const TransportBuilder&) = delete;
  ~TransportBuilder();  // registrar.h
  // The transport's own collectives for host memory (device type "CPU").
  template <typename C>
  TransportBuilder& HostCollectives(const char* name);

 private:
  Plugin* p_;
  cfx_transport_desc* desc_;
};

}  // namespace cfx::sdk

#endif  // CONFLUX_SDK_TRANSPORT_H_
