// The registration table of the host API (cfx_host_registration_api): ops, kernels, device
// types and gradients, staged in the registrar of one plugin's init call.
#include <algorithm>
#include <memory>

#include "plugin/abi_types.h"
#include "plugin/host_api_tables.h"
#include "plugin/plugin_kernel.h"
#include "plugin/plugin_struct.h"

namespace cfx::internal {

void RegistrationError(cfx_registrar* r, cfx_status* s, Status error) {
  if (r->first_error.ok()) r->first_error = error;
  SetError(s, std::move(error));
}

namespace {

// ---- op registration ----
cfx_op_builder* OpBuilderNew(const char* name) { return new cfx_op_builder(name ? name : ""); }
void OpBuilderInput(cfx_op_builder* b, const char* spec) { b->builder.Input(spec ? spec : ""); }
void OpBuilderOutput(cfx_op_builder* b, const char* spec) { b->builder.Output(spec ? spec : ""); }
void OpBuilderAttr(cfx_op_builder* b, const char* spec) { b->builder.Attr(spec ? spec : ""); }
void OpBuilderSetStateful(cfx_op_builder* b, int v) { b->builder.SetIsStateful(v != 0); }
void OpBuilderSetShapeFn(cfx_op_builder* b, cfx_shape_fn fn) {
  if (fn) b->builder.SetShapeFn(WrapShapeFn(fn));
}

void RegisterOp(cfx_registrar* r, cfx_op_builder* b, cfx_status* s) {
  std::unique_ptr<cfx_op_builder> owned(b);
  auto reg = b->builder.Build();
  if (!reg.ok())
    return RegistrationError(r, s, reg.status().WithPrefix("plugin " + r->plugin + ": "));
  const std::string& name = reg->def.name;
  if (const OpRegistration* existing = r->ops->LookUp(name))
    return RegistrationError(
        r, s,
        errors::AlreadyExists("plugin ", r->plugin, ": duplicate registration of op ", name,
                              " (already registered by ", existing->registered_by, ")"));
  for (const OpRegistration& o : r->staged_ops)
    if (o.def.name == name)
      return RegistrationError(
          r, s, errors::AlreadyExists("plugin ", r->plugin, " registers op ", name, " twice"));
  reg->registered_by = r->plugin;
  r->staged_ops.push_back(std::move(reg).value());
}

// ---- kernel registration ----
cfx_kernel_builder* KernelBuilderNew(const char* op, const char* device_type,
                                     cfx_kernel_create_fn create, cfx_kernel_compute_fn compute,
                                     cfx_kernel_compute_async_fn compute_async,
                                     cfx_kernel_destroy_fn destroy) {
  auto* b = new cfx_kernel_builder();
  b->def.op = op ? op : "";
  b->def.device_type = device_type ? device_type : "";
  b->functions = {create, compute, compute_async, destroy};
  return b;
}
void KernelBuilderTypeConstraint(cfx_kernel_builder* b, const char* attr, cfx_dtype dtype) {
  b->def.type_constraints[attr ? attr : ""].push_back(static_cast<DataType>(dtype));
}
void KernelBuilderHostMemory(cfx_kernel_builder* b, const char* arg) {
  b->def.host_memory_args.insert(arg ? arg : "");
}
void KernelBuilderSetFlags(cfx_kernel_builder* b, uint32_t flags) { b->def.flags = flags; }

bool SameKernel(const KernelDef& a, const KernelDef& b) {
  return a.op == b.op && a.device_type == b.device_type && a.type_constraints == b.type_constraints;
}

void RegisterKernel(cfx_registrar* r, cfx_kernel_builder* b, cfx_status* s) {
  std::unique_ptr<cfx_kernel_builder> owned(b);
  KernelDef& def = b->def;
  def.registered_by = r->plugin;
  auto fail = [&](const std::string& msg) {
    RegistrationError(
        r, s,
        errors::InvalidArgument("plugin ", r->plugin, ": kernel ", def.DebugString(), ": ", msg));
  };
  if (def.op.empty() || def.device_type.empty()) return fail("op and device type are required");
  const PluginKernelFunctions& f = b->functions;
  if (f.compute == nullptr && f.compute_async == nullptr)
    return fail("needs a compute or compute_async function");
  if (f.create == nullptr) return fail("needs a create function");
  def.create = PluginKernelFactory(f);
  for (const KernelDef* k : r->kernels->All())
    if (SameKernel(*k, def))
      return RegistrationError(
          r, s,
          errors::AlreadyExists("plugin ", r->plugin, ": duplicate registration of kernel ",
                                def.DebugString(), " (already registered by ", k->registered_by,
                                ")"));
  for (const KernelDef& k : r->staged_kernels)
    if (SameKernel(k, def))
      return RegistrationError(r, s,
                               errors::AlreadyExists("plugin ", r->plugin, " registers kernel ",
                                                     def.DebugString(), " twice"));
  r->staged_kernels.push_back(std::move(def));
}

void RegisterDeviceType(cfx_registrar* r, const cfx_device_type_desc* desc, cfx_status* s) {
  // Sizes first: nothing past a struct's struct_size may be read.
  const std::string owner = "plugin " + r->plugin;
  if (desc != nullptr) {
    Status size = CheckStructSize(desc, owner);
    if (size.ok() && desc->funcs != nullptr)
      size = CheckStructSize(desc->funcs, owner + ": device type " +
                                              (desc->type != nullptr ? desc->type : "(unnamed)"));
    if (!size.ok()) return RegistrationError(r, s, std::move(size));
  }
  if (desc == nullptr || desc->type == nullptr || desc->funcs == nullptr ||
      desc->create_device == nullptr || desc->funcs->allocate == nullptr ||
      desc->funcs->deallocate == nullptr)
    return RegistrationError(
        r, s,
        errors::InvalidArgument("plugin ", r->plugin,
                                ": device type descriptor needs a type name, create_device and "
                                "allocate/deallocate functions"));
  std::string type = desc->type;
  bool valid = !type.empty() && std::all_of(type.begin(), type.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
  if (!valid)
    return RegistrationError(r, s,
                             errors::InvalidArgument("plugin ", r->plugin, ": device type name '",
                                                     type, "' must match [A-Z0-9_]+"));
  auto it = r->device_types->find(type);
  if (it != r->device_types->end())
    return RegistrationError(
        r, s,
        errors::AlreadyExists("plugin ", r->plugin, ": duplicate registration of device type ",
                              type, " (already registered by ", it->second, ")"));
  for (const cfx_device_type_desc* d : r->staged_device_types)
    if (type == d->type)
      return RegistrationError(
          r, s,
          errors::AlreadyExists("plugin ", r->plugin, " registers device type ", type, " twice"));
  r->staged_device_types.push_back(desc);
}

void RegisterGradient(cfx_registrar* r, const char* op, cfx_gradient_fn fn, void* user_data,
                      cfx_status* s) {
  const std::string name = op != nullptr ? op : "";
  if (name.empty() || fn == nullptr)
    return RegistrationError(
        r, s,
        errors::InvalidArgument("plugin ", r->plugin,
                                ": a gradient needs an op name and a function"));
  if (r->gradients != nullptr) {
    auto it = r->gradients->find(name);
    if (it != r->gradients->end())
      return RegistrationError(
          r, s,
          errors::AlreadyExists("plugin ", r->plugin, ": a gradient for op ", name,
                                " is already registered by ", it->second.plugin));
  }
  for (const auto& [staged, g] : r->staged_gradients)
    if (staged == name)
      return RegistrationError(
          r, s,
          errors::AlreadyExists("plugin ", r->plugin, " registers the gradient of op ", name,
                                " twice"));
  r->staged_gradients.emplace_back(name, PluginGradient{fn, user_data, r->plugin});
}

}  // namespace

const cfx_host_registration_api* HostRegistrationApi() {
  return StaticTable<cfx_host_registration_api>([](cfx_host_registration_api* a) {
    a->op_builder_new = OpBuilderNew;
    a->op_builder_input = OpBuilderInput;
    a->op_builder_output = OpBuilderOutput;
    a->op_builder_attr = OpBuilderAttr;
    a->op_builder_set_stateful = OpBuilderSetStateful;
    a->op_builder_set_shape_fn = OpBuilderSetShapeFn;
    a->register_op = RegisterOp;
    a->kernel_builder_new = KernelBuilderNew;
    a->kernel_builder_type_constraint = KernelBuilderTypeConstraint;
    a->kernel_builder_host_memory = KernelBuilderHostMemory;
    a->kernel_builder_set_flags = KernelBuilderSetFlags;
    a->register_kernel = RegisterKernel;
    a->register_device_type = RegisterDeviceType;
    a->register_gradient = RegisterGradient;
  });
}

}  // namespace cfx::internal
