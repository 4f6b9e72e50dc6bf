// The transport table of the host API (cfx_host_transport_api, minor 4): registration of
// transports and collectives, staged in the registrar of one plugin's init call, and the process
// group a collectives plugin bootstraps over (a cfx_host_group wraps the running Transport).
#include <string>

#include "plugin/abi_types.h"
#include "plugin/host_api_tables.h"
#include "plugin/plugin_struct.h"
#include "plugin/plugin_transport.h"

namespace cfx::internal {
namespace {

std::string NameOr(const char* name) { return name != nullptr ? name : "(unnamed)"; }

// OK when `desc` can be used: sizes first (nothing past a struct's struct_size is read), then
// the fields without which it cannot run.
Status CheckCollectives(const std::string& owner, const cfx_collectives_desc* desc) {
  if (desc == nullptr)
    return errors::InvalidArgument(owner, ": the collectives descriptor is NULL");
  CFX_RETURN_IF_ERROR(CheckStructSize(desc, owner));
  const std::string who = owner + ": collectives '" + NameOr(desc->name) + "'";
  if (desc->funcs != nullptr) CFX_RETURN_IF_ERROR(CheckStructSize(desc->funcs, who));
  if (desc->name == nullptr || *desc->name == '\0' || desc->device_type == nullptr ||
      *desc->device_type == '\0' || desc->create == nullptr || desc->destroy == nullptr ||
      desc->funcs == nullptr)
    return errors::InvalidArgument(
        who, ": a collectives descriptor needs a name, a device type, create, destroy and funcs");
  return Status();
}

Status CheckTransport(const std::string& owner, const cfx_transport_desc* desc) {
  if (desc == nullptr) return errors::InvalidArgument(owner, ": the transport descriptor is NULL");
  CFX_RETURN_IF_ERROR(CheckStructSize(desc, owner));
  const std::string who = owner + ": transport '" + NameOr(desc->name) + "'";
  if (desc->funcs != nullptr) CFX_RETURN_IF_ERROR(CheckStructSize(desc->funcs, who));
  const cfx_transport_funcs* f = desc->funcs;
  if (desc->name == nullptr || *desc->name == '\0' || desc->create == nullptr ||
      desc->destroy == nullptr || f == nullptr || f->rank == nullptr || f->size == nullptr ||
      f->send == nullptr || f->recv == nullptr)
    return errors::InvalidArgument(who,
                                   ": a transport descriptor needs a name, create, destroy and "
                                   "funcs with rank, size, send and recv");
  if (desc->collectives != nullptr) CFX_RETURN_IF_ERROR(CheckCollectives(who, desc->collectives));
  return Status();
}

// Stages `desc` unless its (name, device type) is taken, by a loaded plugin or this one.
Status StageCollectives(cfx_registrar* r, const cfx_collectives_desc* desc) {
  const std::string key = CollectivesKey(desc);
  if (auto it = r->collectives->find(key); it != r->collectives->end())
    return errors::AlreadyExists("plugin ", r->plugin, ": collectives '", desc->name, "' for ",
                                 desc->device_type, " are already registered by plugin ",
                                 it->second);
  for (const cfx_collectives_desc* d : r->staged_collectives)
    if (CollectivesKey(d) == key)
      return errors::AlreadyExists("plugin ", r->plugin, " registers collectives '", desc->name,
                                   "' for ", desc->device_type, " twice");
  r->staged_collectives.push_back(desc);
  return Status();
}

void RegisterTransport(cfx_registrar* r, const cfx_transport_desc* desc, cfx_status* s) {
  const std::string owner = "plugin " + r->plugin;
  if (Status valid = CheckTransport(owner, desc); !valid.ok())
    return RegistrationError(r, s, std::move(valid));
  const std::string name = desc->name;
  if (auto it = r->transports->find(name); it != r->transports->end())
    return RegistrationError(
        r, s,
        errors::AlreadyExists(owner, ": transport '", name, "' is already registered by plugin ",
                              it->second, " (transport names are unique in a process)"));
  for (const cfx_transport_desc* d : r->staged_transports)
    if (name == d->name)
      return RegistrationError(
          r, s, errors::AlreadyExists(owner, " registers transport '", name, "' twice"));
  if (desc->collectives != nullptr) {
    if (Status staged = StageCollectives(r, desc->collectives); !staged.ok())
      return RegistrationError(r, s, std::move(staged));
  }
  r->staged_transports.push_back(desc);
}

void RegisterCollectives(cfx_registrar* r, const cfx_collectives_desc* desc, cfx_status* s) {
  Status result = CheckCollectives("plugin " + r->plugin, desc);
  if (result.ok()) result = StageCollectives(r, desc);
  if (!result.ok()) RegistrationError(r, s, std::move(result));
}

int32_t GroupRank(const cfx_host_group* g) { return g->transport->rank(); }
int32_t GroupSize(const cfx_host_group* g) { return g->transport->size(); }
void GroupBroadcast(const cfx_host_group* g, void* data, size_t bytes, int32_t root,
                    cfx_status* s) {
  Status result = BroadcastOverTransport(g, data, bytes, root);
  if (!result.ok()) SetError(s, std::move(result));
}

}  // namespace

const cfx_host_transport_api* HostTransportApi() {
  return StaticTable<cfx_host_transport_api>([](cfx_host_transport_api* a) {
    a->register_transport = RegisterTransport;
    a->register_collectives = RegisterCollectives;
    a->group_rank = GroupRank;
    a->group_size = GroupSize;
    a->group_broadcast = GroupBroadcast;
  });
}

const cfx_host_transport_api* HostTransportApiOfMinor3() {
  static const cfx_host_transport_api table = [] {
    cfx_host_transport_api t{};
    t.struct_size = offsetof(cfx_host_transport_api, register_transport);
    return t;
  }();
  return &table;
}

}  // namespace cfx::internal
