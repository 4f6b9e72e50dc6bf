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
// entry points, which catch every exception: an exception thrown by Send, Recv or a collective
// becomes that operation's `done` with INTERNAL, so an implementation must not throw once it has
// called `done` or handed it on; one thrown elsewhere is logged.
//
// Threads: the ABI's rules hold for the C++ members too: every member may be called from any
// thread, concurrently; TransportDone and TransportAlloc are called exactly once each, from any
// thread, and are cheap to copy.
#ifndef CONFLUX_SDK_TRANSPORT_H_
#define CONFLUX_SDK_TRANSPORT_H_

#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "conflux/sdk/kernel.h"
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

  std::string Option(const std::string& key, const std::string& fallback) const {
    auto it = options.find(key);
    return it == options.end() ? fallback : it->second;
  }
  // A whole number, with an optional binary suffix K, M or G ("64M"); `fallback` when absent.
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
    int shift = 0;
    if (used > 0 && used + 1 == text.size()) {
      const char suffix = text[used];
      shift = suffix == 'K' ? 10 : suffix == 'M' ? 20 : suffix == 'G' ? 30 : -1;
      if (shift > 0) ++used;
    }
    if (used == 0 || used != text.size() || value < 0 || (value >> (62 - shift)) != 0)
      return InvalidArgument("option ", key, ": '", text,
                             "' is not a whole number (optionally with K, M or G)");
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

namespace internal {

// True when the host has the transport table of minor 4.
inline bool HostHasTransports() {
  const cfx_host_transport_api* t = Host().transport;
  return Host().abi_minor >= 4 && t != nullptr &&
         CFX_HAS_FIELD(t, cfx_host_transport_api, register_transport) &&
         t->register_transport != nullptr;
}

// A zeroed struct with static storage duration (descriptors outlive every registration).
template <typename D>
D* NewStatic() {
  static std::mutex mu;
  static auto* all = new std::deque<D>();
  std::lock_guard<std::mutex> lock(mu);
  D* d = &all->emplace_back();
  d->struct_size = sizeof(D);
  return d;
}

inline void LogException() { Host().core->log(CFX_LOG_ERROR, FromException().message().c_str()); }

// fn(), or `fallback` when it throws (logged): for entry points with no status to report to.
template <typename R, typename Fn>
R LogIfThrows(R fallback, Fn&& fn) {
  try {
    return fn();
  } catch (...) {
    LogException();
    return fallback;
  }
}
template <typename Fn>
void LogIfThrows(Fn&& fn) {
  try {
    fn();
  } catch (...) {
    LogException();
  }
}

// fn(); when it throws, the operation's `done` gets the exception as INTERNAL and the result is
// value-initialized (request 0).
template <typename Fn>
auto FinishIfThrows(const TransportDone& done, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (...) {
    done(FromException());
    return decltype(fn())();
  }
}

// What `make` made (a Result<std::unique_ptr<T>>, T derived from Base) as the host's handle H;
// NULL with the error in `status` when it failed or threw.
template <typename H, typename Base, typename Make>
H* MakeHandle(cfx_status* status, Make&& make) {
  try {
    auto made = make();
    if (!made.ok()) {
      made.status().ExportTo(status);
      return nullptr;
    }
    Base* object = made.value().release();
    return reinterpret_cast<H*>(object);
  } catch (...) {
    FromException().ExportTo(status);
    return nullptr;
  }
}

inline Transport* Of(cfx_transport* t) { return reinterpret_cast<Transport*>(t); }
inline Collectives* Of(cfx_collectives* c) { return reinterpret_cast<Collectives*>(c); }

struct TransportEntry {
  static int32_t Rank(cfx_transport* t) {
    return LogIfThrows<int32_t>(-1, [t] { return Of(t)->Rank(); });
  }
  static int32_t Size(cfx_transport* t) {
    return LogIfThrows<int32_t>(0, [t] { return Of(t)->Size(); });
  }
  static void SetPeerName(cfx_transport* t, int32_t rank, const char* name) {
    LogIfThrows([&] { Of(t)->SetPeerName(rank, name != nullptr ? name : ""); });
  }
  static void DescribePeer(cfx_transport* t, int32_t rank, char* buffer, size_t size) {
    if (size == 0) return;
    std::snprintf(buffer, size, "rank %d", static_cast<int>(rank));
    LogIfThrows([&] { std::snprintf(buffer, size, "%s", Of(t)->DescribePeer(rank).c_str()); });
  }
  static cfx_transport_request Send(cfx_transport* t, int32_t peer, const char* key,
                                    size_t key_size, const void* meta, size_t meta_size,
                                    const void* payload, uint64_t payload_bytes,
                                    cfx_transport_done_fn done, void* arg) {
    TransportDone finish(done, arg);
    return FinishIfThrows(finish, [&] {
      return Of(t)->Send(peer, std::string_view(key, key_size),
                         std::string_view(static_cast<const char*>(meta), meta_size), payload,
                         payload_bytes, finish);
    });
  }
  static cfx_transport_request Recv(cfx_transport* t, int32_t peer, const char* key,
                                    size_t key_size, cfx_transport_alloc_fn alloc,
                                    cfx_transport_done_fn done, void* arg) {
    TransportDone finish(done, arg);
    return FinishIfThrows(finish, [&] {
      return Of(t)->Recv(peer, std::string_view(key, key_size), TransportAlloc(alloc, arg), finish);
    });
  }
  static void Cancel(cfx_transport* t, cfx_transport_request request) {
    LogIfThrows([&] { Of(t)->Cancel(request); });
  }
  static void AbortPrefix(cfx_transport* t, const char* prefix, size_t prefix_size,
                          const cfx_status* why) {
    LogIfThrows([&] {
      Status reason = Status::From(why);
      if (reason.ok()) reason = Status(CFX_CANCELLED, "messages under this key were aborted");
      Of(t)->AbortPrefix(std::string_view(prefix, prefix_size), reason);
    });
  }
  static int32_t DeviceMemory(cfx_transport* t, const char* device_type) {
    return LogIfThrows<int32_t>(
        0, [&] { return Of(t)->DeviceMemory(device_type != nullptr ? device_type : "") ? 1 : 0; });
  }
  static void Destroy(void*, cfx_transport* t) {
    LogIfThrows([t] { delete Of(t); });
  }
  static const cfx_transport_funcs* Funcs() {
    static const cfx_transport_funcs funcs = [] {
      cfx_transport_funcs f{};
      f.struct_size = sizeof(f);
      f.rank = &Rank;
      f.size = &Size;
      f.set_peer_name = &SetPeerName;
      f.describe_peer = &DescribePeer;
      f.send = &Send;
      f.recv = &Recv;
      f.cancel = &Cancel;
      f.abort_prefix = &AbortPrefix;
      f.device_memory = &DeviceMemory;
      return f;
    }();
    return &funcs;
  }
};

template <typename T>
cfx_transport* CreateTransport(void*, const cfx_host_transport_config* config, cfx_status* status) {
  static_assert(std::is_base_of_v<Transport, T>, "a transport derives from sdk::Transport");
  return MakeHandle<cfx_transport, Transport>(status, [config] {
    TransportConfig c;
    for (size_t i = 0; i < config->num_options; ++i)
      c.options[config->option_keys[i]] = config->option_values[i];
    c.expected_size = config->expected_size;
    return T::Create(c);
  });
}

template <typename T>
cfx_transport_desc* MakeTransportDesc(const char* name) {
  cfx_transport_desc* d = NewStatic<cfx_transport_desc>();
  d->name = name;
  d->create = &CreateTransport<T>;
  d->destroy = &TransportEntry::Destroy;
  d->funcs = TransportEntry::Funcs();
  return d;
}

struct CollectivesEntry {
  static void AllReduce(cfx_collectives* c, const int32_t* ranks, int32_t num_ranks,
                        cfx_dtype dtype, const void* input, void* output, uint64_t count,
                        cfx_reduce_op op, cfx_stream* stream, cfx_transport_done_fn done,
                        void* arg) {
    TransportDone finish(done, arg);
    FinishIfThrows(finish, [&] {
      Of(c)->AllReduce(Collectives::Ranks(ranks, num_ranks), dtype, input, output, count, op,
                       stream, finish);
    });
  }
  static void AllGather(cfx_collectives* c, const int32_t* ranks, int32_t num_ranks,
                        cfx_dtype dtype, const void* input, uint64_t count, void* output,
                        cfx_stream* stream, cfx_transport_done_fn done, void* arg) {
    TransportDone finish(done, arg);
    FinishIfThrows(finish, [&] {
      Of(c)->AllGather(Collectives::Ranks(ranks, num_ranks), dtype, input, count, output, stream,
                       finish);
    });
  }
  static void Broadcast(cfx_collectives* c, const int32_t* ranks, int32_t num_ranks,
                        cfx_dtype dtype, void* buffer, uint64_t count, int32_t root,
                        cfx_stream* stream, cfx_transport_done_fn done, void* arg) {
    TransportDone finish(done, arg);
    FinishIfThrows(finish, [&] {
      Of(c)->Broadcast(Collectives::Ranks(ranks, num_ranks), dtype, buffer, count, root, stream,
                       finish);
    });
  }
  static void Destroy(void*, cfx_collectives* c) {
    LogIfThrows([c] { delete Of(c); });
  }
  static const cfx_collective_funcs* Funcs() {
    static const cfx_collective_funcs funcs = [] {
      cfx_collective_funcs f{};
      f.struct_size = sizeof(f);
      f.all_reduce = &AllReduce;
      f.all_gather = &AllGather;
      f.broadcast = &Broadcast;
      return f;
    }();
    return &funcs;
  }
};

template <typename C>
cfx_collectives* CreateCollectives(void*, const cfx_host_group* group, cfx_status* status) {
  static_assert(std::is_base_of_v<Collectives, C>, "collectives derive from sdk::Collectives");
  return MakeHandle<cfx_collectives, Collectives>(status,
                                                  [group] { return C::Create(HostGroup(group)); });
}

template <typename C>
const cfx_collectives_desc* MakeCollectivesDesc(const char* name, const char* device_type) {
  cfx_collectives_desc* d = NewStatic<cfx_collectives_desc>();
  d->name = name;
  d->device_type = device_type;
  d->create = &CreateCollectives<C>;
  d->destroy = &CollectivesEntry::Destroy;
  d->funcs = CollectivesEntry::Funcs();
  return d;
}

}  // namespace internal

template <typename C>
TransportBuilder& TransportBuilder::HostCollectives(const char* name) {
  desc_->collectives = internal::MakeCollectivesDesc<C>(name, "CPU");
  return *this;
}

}  // namespace cfx::sdk

#endif  // CONFLUX_SDK_TRANSPORT_H_
