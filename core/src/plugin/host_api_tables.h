// The host's function tables by concept (conflux/plugin_host_tables.h): one file each,
// host_api_<table>.cc, whose functions adapt the C ABI to core C++ types. host_api.cc makes the
// root table (cfx_host_api) from them, flat part included. Each getter returns a table with
// static storage duration: plugins keep the pointers for as long as they are loaded, which is
// for the process. No exception may leave a table's functions (they run inside plugin call
// stacks). Thread-safe.
#ifndef CONFLUX_CORE_SRC_PLUGIN_HOST_API_TABLES_H_
#define CONFLUX_CORE_SRC_PLUGIN_HOST_API_TABLES_H_

#include <utility>

#include "conflux/plugin_api.h"
#include "conflux/status.h"
#include "plugin/abi_types.h"
#include "runtime/kernel_context.h"

namespace cfx::internal {

const cfx_host_core_api* HostCoreApi();
const cfx_host_registration_api* HostRegistrationApi();
const cfx_host_attr_api* HostAttrApi();
const cfx_host_shape_api* HostShapeApi();
const cfx_host_tensor_api* HostTensorApi();
const cfx_host_kernel_api* HostKernelApi();
const cfx_host_state_api* HostStateApi();
const cfx_host_gradient_api* HostGradientApi();
const cfx_host_device_api* HostDeviceApi();
const cfx_host_transport_api* HostTransportApi();
// The transport table as minor 3 had it (struct_size only): what a plugin of minor <= 3 gets.
const cfx_host_transport_api* HostTransportApiOfMinor3();

// The table of type T: made once, by `fill` setting its functions, with struct_size set.
template <typename T, typename Fill>
const T* StaticTable(Fill fill) {
  static const T table = [&] {
    T t{};
    t.struct_size = sizeof(T);
    fill(&t);
    return t;
  }();
  return &table;
}

// Stores `error` in a plugin's status argument (which may be NULL: the plugin does not care).
void SetError(cfx_status* s, Status error);

// A registration error: reported to the plugin and remembered by the registrar, so that a
// plugin that ignores it still fails to load.
void RegistrationError(cfx_registrar* r, cfx_status* s, Status error);

// A cfx_kernel_context* is the runtime's KernelContext*: the kernel, state and device tables'
// functions take the C++ type, and OnContext<F>::Call is the C entry point that converts the
// handle.
template <auto F>
struct OnContext;
template <typename R, typename... A, R (*F)(KernelContext*, A...)>
struct OnContext<F> {
  static R Call(cfx_kernel_context* c, A... a) { return F(FromHandle(c), a...); }
};
template <typename R, typename... A, R (*F)(const KernelContext*, A...)>
struct OnContext<F> {
  static R Call(const cfx_kernel_context* c, A... a) { return F(FromHandle(c), a...); }
};

// True when `i` is an output index of the call; otherwise an Internal error naming the node.
bool CheckOutputIndex(const KernelContext* c, int i, cfx_status* s);

}  // namespace cfx::internal

#endif  // CONFLUX_CORE_SRC_PLUGIN_HOST_API_TABLES_H_
