// Conflux plugin SDK, internal: the C entry points and descriptors of transports and
// collectives written with conflux/sdk/transport.h (what Plugin::Transport and
// Plugin::Collectives register). Each entry point converts the C arguments, calls the C++
// object and catches every exception: as the operation's done (INTERNAL) where there is one,
// else logged. Thread-safe as the objects they call.
#ifndef CONFLUX_SDK_TRANSPORT_ENTRY_H_
#define CONFLUX_SDK_TRANSPORT_ENTRY_H_

#include <cstddef>
#include <cstdio>
#include <deque>
#include <memory>
#include <mutex>
#include <type_traits>

#include "conflux/sdk/kernel.h"
#include "conflux/sdk/transport.h"

namespace cfx::sdk {

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
    c.blocking_collectives =
        config->struct_size >= offsetof(cfx_host_transport_config, blocking_collectives) +
                                   sizeof(config->blocking_collectives) &&
        config->blocking_collectives != 0;
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

#endif  // CONFLUX_SDK_TRANSPORT_ENTRY_H_
