// A plugin's kernel as an OpKernel: the C kernel API's create/compute(_async)/destroy functions
// behind the runtime's kernel interface. The plugin sees the call's KernelContext through its
// cfx_kernel_context handle.
#ifndef CONFLUX_CORE_SRC_PLUGIN_PLUGIN_KERNEL_H_
#define CONFLUX_CORE_SRC_PLUGIN_PLUGIN_KERNEL_H_

#include "conflux/kernel_registry.h"
#include "conflux/plugin_api.h"

namespace cfx::internal {

// The functions a plugin registered for one kernel. `create` and one of `compute` and
// `compute_async` are required (a synchronous kernel has `compute`).
struct PluginKernelFunctions {
  cfx_kernel_create_fn create = nullptr;
  cfx_kernel_compute_fn compute = nullptr;
  cfx_kernel_compute_async_fn compute_async = nullptr;
  cfx_kernel_destroy_fn destroy = nullptr;
};

// A KernelDef::create that builds the plugin's kernel for a node.
decltype(KernelDef::create) PluginKernelFactory(PluginKernelFunctions functions);

}  // namespace cfx::internal

#endif  // CONFLUX_CORE_SRC_PLUGIN_PLUGIN_KERNEL_H_
