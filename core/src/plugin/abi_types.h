// Definitions of the opaque handles of the plugin ABI on the host side. Included by plugin/ (the
// ABI adapters), by session/runtime.cc, which creates plugin devices (a cfx_status from
// create_device), and by tests of the ABI; nothing below plugin/ in the layer order.
//
// cfx_tensor and cfx_kernel_context are not defined: a tensor handle is a cfx::Tensor* and a
// kernel-context handle a cfx::KernelContext* (see ToHandle / FromHandle).
#ifndef CONFLUX_CORE_SRC_PLUGIN_ABI_TYPES_H_
#define CONFLUX_CORE_SRC_PLUGIN_ABI_TYPES_H_

#include <map>
#include <string>
#include <vector>

#include "conflux/device.h"
#include "conflux/graph_def.h"
#include "conflux/kernel_registry.h"
#include "conflux/op_def.h"
#include "conflux/plugin_api.h"
#include "conflux/plugin_transport.h"
#include "conflux/shape_inference.h"
#include "conflux/status.h"
#include "conflux/tensor.h"
#include "plugin/gradient_backend.h"
#include "plugin/plugin_kernel.h"
#include "runtime/kernel_context.h"
#include "state/resource_mgr.h"

struct cfx_status {
  cfx::Status status;
};

struct cfx_attrs {
  const cfx::NodeDef* node;
  const cfx::OpDef* op;
};

// A variable handed to a plugin: an owned reference.
struct cfx_variable {
  cfx::RefPtr<cfx::Var> var;
};

struct cfx_shape_context {
  cfx::InferenceContext* ic;
  cfx_attrs attrs;
};

struct cfx_op_builder {
  explicit cfx_op_builder(const char* name) : builder(name) {}
  cfx::OpDefBuilder builder;
  std::vector<std::string> errors;
};

// One gradient-function call (minor 2).
struct cfx_grad_context {
  cfx::internal::GradBuilderBackend* backend;
  cfx_attrs attrs;
  cfx::Status error;  // the first error of a grad_* call without a status argument
};
struct cfx_grad_node {
  cfx_grad_context* g;
  cfx::internal::GradNodeRequest request;
};
struct cfx_kernel_builder {
  cfx::KernelDef def;
  cfx::internal::PluginKernelFunctions functions;
};

// Collects the registrations of one plugin's init call; they are committed only when init
// succeeds.
struct cfx_registrar {
  std::string plugin;  // provisional name (from the file name) used in messages
  const cfx::OpRegistry* ops = nullptr;
  const cfx::KernelRegistry* kernels = nullptr;
  const std::map<std::string, std::string>* device_types = nullptr;  // type -> plugin
  std::vector<cfx::OpRegistration> staged_ops;
  std::vector<cfx::KernelDef> staged_kernels;
  std::vector<const cfx_device_type_desc*> staged_device_types;
  std::vector<std::pair<std::string, cfx::internal::PluginGradient>> staged_gradients;
  const std::map<std::string, cfx::internal::PluginGradient>* gradients = nullptr;
  // Transports and collectives (minor 4): name -> plugin of those already loaded.
  const std::map<std::string, std::string>* transports = nullptr;
  const std::map<std::string, std::string>* collectives = nullptr;  // "name/device type"
  std::vector<const cfx_transport_desc*> staged_transports;
  std::vector<const cfx_collectives_desc*> staged_collectives;
  cfx::Status first_error;
};

namespace cfx::internal {

inline cfx_tensor* ToHandle(Tensor* t) { return reinterpret_cast<cfx_tensor*>(t); }
inline const cfx_tensor* ToHandle(const Tensor* t) {
  return reinterpret_cast<const cfx_tensor*>(t);
}
inline Tensor* FromHandle(cfx_tensor* t) { return reinterpret_cast<Tensor*>(t); }
inline const Tensor* FromHandle(const cfx_tensor* t) { return reinterpret_cast<const Tensor*>(t); }
inline cfx_kernel_context* ToHandle(KernelContext* c) {
  return reinterpret_cast<cfx_kernel_context*>(c);
}
inline KernelContext* FromHandle(cfx_kernel_context* c) {
  return reinterpret_cast<KernelContext*>(c);
}
inline const KernelContext* FromHandle(const cfx_kernel_context* c) {
  return reinterpret_cast<const KernelContext*>(c);
}

// The host function table with the host's own minor version.
const cfx_host_api* HostApi();
// The table a plugin negotiated at ABI minor `minor` (<= the host's) gets: HostApi() with that
// minor, and each table as that minor had it. Plugins keep the pointer for as long as they are
// loaded, and libraries are never unloaded, so the tables live for the process (one per minor,
// shared by every Runtime).
const cfx_host_api* HostApiForMinor(uint32_t minor);

// Wraps a plugin's C shape function as a core ShapeFn.
ShapeFn WrapShapeFn(cfx_shape_fn fn);

}  // namespace cfx::internal

#endif  // CONFLUX_CORE_SRC_PLUGIN_ABI_TYPES_H_
