// PluginTransport and PluginCollectives: the runtime's Transport and Collectives over a plugin's
// C functions.
#include "plugin/plugin_transport.h"

#include <cstring>
#include <exception>

#include "plugin/abi_types.h"
#include "plugin/host_api_tables.h"
#include "util/log.h"
#include "plugin/plugin_device.h"

namespace cfx::internal {
namespace {

static_assert(static_cast<int>(ReduceOp::kSum) == CFX_REDUCE_SUM &&
                  static_cast<int>(ReduceOp::kMean) == CFX_REDUCE_MEAN &&
                  static_cast<int>(ReduceOp::kMin) == CFX_REDUCE_MIN &&
                  static_cast<int>(ReduceOp::kMax) == CFX_REDUCE_MAX &&
                  static_cast<int>(ReduceOp::kProd) == CFX_REDUCE_PROD,
              "ReduceOp and cfx_reduce_op must agree");

Status FromC(const cfx_status* s) { return s == nullptr ? Status() : s->status; }

// What `fn` threw, as a Status (host callbacks run inside the plugin's frames, which no
// exception may cross).
template <typename Fn>
Status Guarded(const char* what, Fn&& fn) {
  try {
    return fn();
  } catch (const std::exception& e) {
    return errors::Internal(what, " threw: ", e.what());
  } catch (...) {
    return errors::Internal(what, " threw a non-standard exception");
  }
}

// One started operation: its callbacks, handed to the plugin as `arg` and freed by Finish.
struct Call {
  Transport::Alloc alloc;  // receives only
  Transport::Done done;
};

void Finish(void* arg, const cfx_status* status) {
  std::unique_ptr<Call> call(static_cast<Call*>(arg));
  Status error = Guarded("a transport callback", [&] {
    call->done(FromC(status));
    return Status();
  });
  if (!error.ok()) LogMessage(LogLevel::kError, error.ToString());
}

void* Allocate(void* arg, const void* meta, size_t meta_size, uint64_t payload_bytes,
               cfx_status* status) {
  auto* call = static_cast<Call*>(arg);
  void* buffer = nullptr;
  Status result = Guarded("a receive's allocation", [&]() -> Status {
    StatusOr<void*> b =
        call->alloc(std::string_view(static_cast<const char*>(meta), meta_size), payload_bytes);
    if (!b.ok()) return b.status();
    buffer = *b;
    return Status();
  });
  if (!result.ok()) SetError(status, std::move(result));
  return result.ok() ? buffer : nullptr;
}

const int32_t* RanksOrNull(const std::vector<int32_t>& ranks) {
  return ranks.empty() ? nullptr : ranks.data();
}

class PluginTransport final : public Transport {
 public:
  PluginTransport(const cfx_transport_desc* desc, cfx_transport* handle, std::string plugin)
      : desc_(desc), f_(desc->funcs), t_(handle), name_(desc->name), plugin_(std::move(plugin)) {}
  ~PluginTransport() override { desc_->destroy(desc_->state, t_); }
  PluginTransport(const PluginTransport&) = delete;
  PluginTransport& operator=(const PluginTransport&) = delete;

  const std::string& name() const override { return name_; }
  int rank() const override { return f_->rank(t_); }
  int size() const override { return f_->size(t_); }
  void SetPeerName(int rank, const std::string& name) override {
    if (f_->set_peer_name != nullptr) f_->set_peer_name(t_, rank, name.c_str());
  }
  std::string DescribePeer(int rank) const override {
    char buffer[256] = {0};
    if (f_->describe_peer == nullptr) return "rank " + std::to_string(rank);
    f_->describe_peer(t_, rank, buffer, sizeof(buffer));
    buffer[sizeof(buffer) - 1] = '\0';
    return buffer;
  }

  Request Send(int peer, std::string_view key, std::string_view meta, const void* payload,
               uint64_t payload_bytes, Done done) override {
    auto* call = new Call{nullptr, std::move(done)};
    return f_->send(t_, peer, key.data(), key.size(), meta.data(), meta.size(), payload,
                    payload_bytes, &Finish, call);
  }
  Request Recv(int peer, std::string_view key, Alloc alloc, Done done) override {
    auto* call = new Call{std::move(alloc), std::move(done)};
    return f_->recv(t_, peer, key.data(), key.size(), &Allocate, &Finish, call);
  }
  void Cancel(Request request) override {
    if (f_->cancel != nullptr && request != 0) f_->cancel(t_, request);
  }
  void AbortPrefix(std::string_view prefix, const Status& why) override {
    if (f_->abort_prefix == nullptr) return;
    cfx_status status{why};
    f_->abort_prefix(t_, prefix.data(), prefix.size(), why.ok() ? nullptr : &status);
  }
  bool DeviceMemory(const std::string& device_type) const override {
    return f_->device_memory != nullptr && f_->device_memory(t_, device_type.c_str()) != 0;
  }

 private:
  const cfx_transport_desc* desc_;
  const cfx_transport_funcs* f_;
  cfx_transport* t_;
  std::string name_;
  std::string plugin_;
};

class PluginCollectives final : public Collectives {
 public:
  PluginCollectives(const cfx_collectives_desc* desc, std::unique_ptr<cfx_host_group> group,
                    std::string plugin)
      : desc_(desc),
        f_(desc->funcs),
        group_(std::move(group)),
        name_(desc->name),
        device_type_(desc->device_type),
        plugin_(std::move(plugin)) {}
  ~PluginCollectives() override {
    if (c_ != nullptr) desc_->destroy(desc_->state, c_);
  }
  PluginCollectives(const PluginCollectives&) = delete;
  PluginCollectives& operator=(const PluginCollectives&) = delete;

  Status Create() {
    cfx_status status;
    c_ = desc_->create(desc_->state, group_.get(), &status);
    if (!status.status.ok()) return status.status.WithPrefix(Who() + ": ");
    if (c_ == nullptr) return errors::Internal(Who(), ": create returned NULL and no error");
    return Status();
  }

  const std::string& name() const override { return name_; }
  const std::string& device_type() const override { return device_type_; }

  void AllReduce(const std::vector<int32_t>& ranks, DataType dtype, const void* input, void* output,
                 uint64_t count, ReduceOp op, DeviceStream* stream, Done done) override {
    if (f_->all_reduce == nullptr) return done(Missing("all_reduce"));
    f_->all_reduce(c_, RanksOrNull(ranks), static_cast<int32_t>(ranks.size()),
                   static_cast<cfx_dtype>(dtype), input, output, count,
                   static_cast<cfx_reduce_op>(op), PluginDevice::ToCStream(stream), &Finish,
                   new Call{nullptr, std::move(done)});
  }
  void AllGather(const std::vector<int32_t>& ranks, DataType dtype, const void* input,
                 uint64_t count, void* output, DeviceStream* stream, Done done) override {
    if (f_->all_gather == nullptr) return done(Missing("all_gather"));
    f_->all_gather(c_, RanksOrNull(ranks), static_cast<int32_t>(ranks.size()),
                   static_cast<cfx_dtype>(dtype), input, count, output,
                   PluginDevice::ToCStream(stream), &Finish, new Call{nullptr, std::move(done)});
  }
  void Broadcast(const std::vector<int32_t>& ranks, DataType dtype, void* buffer, uint64_t count,
                 int32_t root, DeviceStream* stream, Done done) override {
    if (f_->broadcast == nullptr) return done(Missing("broadcast"));
    f_->broadcast(c_, RanksOrNull(ranks), static_cast<int32_t>(ranks.size()),
                  static_cast<cfx_dtype>(dtype), buffer, count, root,
                  PluginDevice::ToCStream(stream), &Finish, new Call{nullptr, std::move(done)});
  }

 private:
  std::string Who() const {
    return "collectives '" + name_ + "' (" + device_type_ + ") of plugin " + plugin_;
  }
  Status Missing(const char* function) const {
    return errors::Unimplemented(Who(), " have no ", function);
  }

  const cfx_collectives_desc* desc_;
  const cfx_collective_funcs* f_;
  std::unique_ptr<cfx_host_group> group_;
  cfx_collectives* c_ = nullptr;
  std::string name_;
  std::string device_type_;
  std::string plugin_;
};

}  // namespace

StatusOr<std::unique_ptr<Transport>> CreatePluginTransport(
    const cfx_transport_desc* desc, const std::string& plugin,
    const std::vector<std::pair<std::string, std::string>>& options, int expected_size,
    bool blocking_collectives) {
  const std::string who = "transport '" + std::string(desc->name) + "' of plugin " + plugin;
  std::vector<const char*> keys, values;
  for (const auto& [key, value] : options) {
    keys.push_back(key.c_str());
    values.push_back(value.c_str());
  }
  cfx_host_transport_config config{};
  config.struct_size = sizeof(config);
  config.num_options = keys.size();
  config.option_keys = keys.data();
  config.option_values = values.data();
  config.expected_size = expected_size;
  config.blocking_collectives = blocking_collectives ? 1 : 0;
  cfx_status status;
  cfx_transport* handle = desc->create(desc->state, &config, &status);
  if (!status.status.ok()) {
    if (handle != nullptr) desc->destroy(desc->state, handle);
    return status.status.WithPrefix(who + ": ");
  }
  if (handle == nullptr) return errors::Internal(who, ": create returned NULL and no error");
  auto transport = std::make_unique<PluginTransport>(desc, handle, plugin);
  const int size = transport->size(), rank = transport->rank();
  if (size < 1 || rank < 0 || rank >= size)
    return errors::Internal(who, ": rank ", rank, " is not in a group of size ", size);
  if (expected_size > 0 && size != expected_size)
    return errors::FailedPrecondition(who, ": the process group has ", size,
                                      " processes but the cluster has ", expected_size,
                                      " tasks (launch with mpirun -n ", expected_size, ")");
  return std::unique_ptr<Transport>(std::move(transport));
}

StatusOr<std::unique_ptr<Collectives>> CreatePluginCollectives(const cfx_collectives_desc* desc,
                                                               const std::string& plugin,
                                                               Transport* group) {
  if (group == nullptr)
    return errors::InvalidArgument("collectives '", desc->name, "' of plugin ", plugin,
                                   ": there is no transport to bootstrap over");
  auto g = std::make_unique<cfx_host_group>();
  g->transport = group;
  g->key_prefix = "_group;bcast;" + std::string(desc->name) + ";" + desc->device_type + ";";
  auto collectives = std::make_unique<PluginCollectives>(desc, std::move(g), plugin);
  CFX_RETURN_IF_ERROR(collectives->Create());
  return std::unique_ptr<Collectives>(std::move(collectives));
}

Status BroadcastOverTransport(const cfx_host_group* group, void* data, size_t bytes, int32_t root) {
  Transport* t = group->transport;
  if (root < 0 || root >= t->size())
    return errors::InvalidArgument("group broadcast: root ", root, " is not a rank of the group (",
                                   t->size(), " processes)");
  const std::string key = group->key_prefix + std::to_string(group->broadcasts++);
  if (t->rank() != root) {
    CFX_ASSIGN_OR_RETURN(std::string received, t->RecvSync(root, key));
    if (received.size() != bytes)
      return errors::InvalidArgument("group broadcast ", key, ": rank ", root, " sent ",
                                     received.size(), " bytes, this rank expects ", bytes);
    if (bytes > 0) std::memcpy(data, received.data(), bytes);
    return Status();
  }
  // Bootstrap data is small: one member after the other is fast enough.
  for (int peer = 0; peer < t->size(); ++peer) {
    if (peer == root) continue;
    CFX_RETURN_IF_ERROR(t->SendSync(peer, key, std::string_view(static_cast<char*>(data), bytes)));
  }
  return Status();
}

std::string CollectivesKey(const cfx_collectives_desc* desc) {
  return std::string(desc->name != nullptr ? desc->name : "") + "/" +
         (desc->device_type != nullptr ? desc->device_type : "");
}

}  // namespace cfx::internal
