// The root table of the host API (cfx_host_api): pointers to the tables by concept
// (host_api_<table>.cc) and the flat layout of minors 0-2, filled with the same functions.
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>

#include "plugin/abi_types.h"
#include "plugin/host_api_tables.h"

namespace cfx::internal {

// The flat fields must be exactly the ones CFX_HOST_API_LEGACY_FIELDS pairs with table fields.
#define CFX_COUNT_FIELD(flat, table, field) +1
static_assert((0 CFX_HOST_API_LEGACY_FIELDS(CFX_COUNT_FIELD)) * sizeof(void (*)()) ==
                  offsetof(cfx_host_api, core) - offsetof(cfx_host_api, status_set),
              "CFX_HOST_API_LEGACY_FIELDS must list every flat field of cfx_host_api");
#undef CFX_COUNT_FIELD

const cfx_host_api* HostApi() {
  static const cfx_host_api api = [] {
    cfx_host_api h{};
    h.struct_size = sizeof(h);
    h.abi_major = CFX_ABI_MAJOR;
    h.abi_minor = CFX_ABI_MINOR;
    h.core = HostCoreApi();
    h.registration = HostRegistrationApi();
    h.attr = HostAttrApi();
    h.shape = HostShapeApi();
    h.tensor = HostTensorApi();
    h.kernel = HostKernelApi();
    h.state = HostStateApi();
    h.gradient = HostGradientApi();
    h.device = HostDeviceApi();
    h.transport = HostTransportApi();
#define CFX_FLAT_FROM_TABLE(flat, table, field) h.flat = h.table->field;
    CFX_HOST_API_LEGACY_FIELDS(CFX_FLAT_FROM_TABLE)
#undef CFX_FLAT_FROM_TABLE
    return h;
  }();
  return &api;
}

const cfx_host_api* HostApiForMinor(uint32_t minor) {
  static std::mutex mu;
  static auto* tables = new std::map<uint32_t, std::unique_ptr<cfx_host_api>>();
  std::lock_guard<std::mutex> lock(mu);
  auto& table = (*tables)[minor];
  if (table == nullptr) {
    table = std::make_unique<cfx_host_api>(*HostApi());
    table->abi_minor = minor;
    // A table that grew after a plugin's minor shows it only what that minor had.
    if (minor < 4) table->transport = HostTransportApiOfMinor3();
  }
  return table.get();
}

}  // namespace cfx::internal
