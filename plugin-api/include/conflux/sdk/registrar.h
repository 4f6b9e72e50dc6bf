// Conflux plugin SDK: registration of ops, kernels, device types, transports and collectives,
// and the plugin entry point.
//
//   cfx::sdk::Status Init(cfx::sdk::Plugin& p) {
//     p.SetInfo("myplugin", "1.0");
//     p.Op("MyOp").Input("x: T").Output("y: T").Attr("T: {float}").ShapeFn<&SameShape>();
//     p.Kernel<MyKernel>("MyOp", "CPU").TypeConstraint<float>("T");
//     return p.status();
//   }
//   CFX_DEFINE_PLUGIN(Init)
//
// Builders register when they go out of scope (end of the full expression); the first error is
// kept and returned by Plugin::status(), so an init function can register many things and check
// once. Registration is only valid inside the init call.
#ifndef CONFLUX_SDK_REGISTRAR_H_
#define CONFLUX_SDK_REGISTRAR_H_

#include <map>
#include <string>

#include "conflux/sdk/gradient.h"
#include "conflux/sdk/kernel.h"
#include "conflux/sdk/transport_entry.h"

namespace cfx::sdk {

class Plugin;

class OpBuilder {
 public:
  OpBuilder(Plugin* p, const char* name) : p_(p), b_(Host().registration->op_builder_new(name)) {}
  OpBuilder(const OpBuilder&) = delete;
  ~OpBuilder();
  OpBuilder& Input(const char* spec) {
    Host().registration->op_builder_input(b_, spec);
    return *this;
  }
  OpBuilder& Output(const char* spec) {
    Host().registration->op_builder_output(b_, spec);
    return *this;
  }
  OpBuilder& Attr(const char* spec) {
    Host().registration->op_builder_attr(b_, spec);
    return *this;
  }
  OpBuilder& Stateful() {
    Host().registration->op_builder_set_stateful(b_, 1);
    return *this;
  }
  template <ShapeFunction F>
  OpBuilder& ShapeFn() {
    Host().registration->op_builder_set_shape_fn(b_, &internal::RunShapeFn<F>);
    return *this;
  }

 private:
  Plugin* p_;
  cfx_op_builder* b_;
};

class KernelBuilder {
 public:
  KernelBuilder(Plugin* p, cfx_kernel_builder* b) : p_(p), b_(b) {}
  KernelBuilder(const KernelBuilder&) = delete;
  ~KernelBuilder();
  KernelBuilder& TypeConstraint(const char* attr, cfx_dtype dtype) {
    Host().registration->kernel_builder_type_constraint(b_, attr, dtype);
    return *this;
  }
  template <typename T>
  KernelBuilder& TypeConstraint(const char* attr) {
    return TypeConstraint(attr, kDType<T>);
  }
  KernelBuilder& HostMemory(const char* arg_name) {
    Host().registration->kernel_builder_host_memory(b_, arg_name);
    return *this;
  }
  KernelBuilder& Inexpensive() {
    Host().registration->kernel_builder_set_flags(b_, CFX_KERNEL_INEXPENSIVE);
    return *this;
  }

 private:
  Plugin* p_;
  cfx_kernel_builder* b_;
};

// What a plugin's init function gets: its options and the registrar.
class Plugin {
 public:
  Plugin(cfx_registrar* r, const cfx_host_plugin_options* options, cfx_plugin_info* info)
      : r_(r), info_(info) {
    if (options != nullptr) {
      for (size_t i = 0; i < options->count; ++i) options_[options->keys[i]] = options->values[i];
    }
  }
  // Name and version shown by `conflux plugins`; both must be static strings.
  void SetInfo(const char* name, const char* version) {
    info_->name = name;
    info_->version = version;
  }
  void SetShutdown(void* state, void (*shutdown)(void*)) {
    info_->plugin_state = state;
    info_->shutdown = shutdown;
  }
  const std::map<std::string, std::string>& options() const { return options_; }

  OpBuilder Op(const char* name) { return OpBuilder(this, name); }
  template <typename K>
  KernelBuilder Kernel(const char* op, const char* device_type) {
    return KernelBuilder(
        this, Host().registration->kernel_builder_new(op, device_type, &internal::CreateKernel<K>,
                                                      &internal::ComputeKernel<K>, nullptr,
                                                      &internal::DestroyKernel<K>));
  }
  // An asynchronous kernel: K has `Status ComputeAsync(KernelContext& ctx, AsyncDone done)`, which
  // either returns an error without calling `done`, or returns OK and calls `done` exactly once
  // (possibly before returning, possibly from another thread).
  template <typename K>
  KernelBuilder AsyncKernel(const char* op, const char* device_type) {
    return KernelBuilder(this, Host().registration->kernel_builder_new(
                                   op, device_type, &internal::CreateKernel<K>, nullptr,
                                   &internal::ComputeKernelAsync<K>, &internal::DestroyKernel<K>));
  }
  // Registers F as the gradient of `op` (ABI minor 2). A host older than minor 2 has no
  // gradient table: the plugin still loads, without its gradients.
  template <GradientFunction F>
  void Gradient(const char* op) {
    if (Host().abi_minor < 2 || Host().registration->register_gradient == nullptr) return;
    HostStatus s;
    Host().registration->register_gradient(r_, op, &internal::RunGradient<F>, nullptr, s.get());
    Record(s.ToStatus());
  }
  void DeviceType(const cfx_device_type_desc* desc) {
    HostStatus s;
    Host().registration->register_device_type(r_, desc, s.get());
    Record(s.ToStatus());
  }
  // A transport (ABI minor 4; conflux/sdk/transport.h): T derives from sdk::Transport and has
  // `static Result<std::unique_ptr<T>> Create(const TransportConfig&)`. `name` is a static
  // string. On a host without transports the plugin fails to load with an error saying so.
  template <typename T>
  TransportBuilder Transport(const char* name) {
    return TransportBuilder(this, internal::MakeTransportDesc<T>(name));
  }
  // Collectives for `device_type`'s memory: C derives from sdk::Collectives and has
  // `static Result<std::unique_ptr<C>> Create(const HostGroup&)`.
  template <typename C>
  void Collectives(const char* name, const char* device_type) {
    RegisterCollectives(internal::MakeCollectivesDesc<C>(name, device_type));
  }
  // The same for descriptors written by hand against the C ABI.
  void RegisterTransport(const cfx_transport_desc* desc) {
    if (!HasTransports()) return;
    HostStatus s;
    Host().transport->register_transport(r_, desc, s.get());
    Record(s.ToStatus());
  }
  void RegisterCollectives(const cfx_collectives_desc* desc) {
    if (!HasTransports()) return;
    HostStatus s;
    Host().transport->register_collectives(r_, desc, s.get());
    Record(s.ToStatus());
  }

  // The first registration error, or OK.
  Status status() const { return status_; }
  void Record(Status s) {
    if (status_.ok() && !s.ok()) status_ = std::move(s);
  }
  cfx_registrar* registrar() const { return r_; }

 private:
  bool HasTransports() {
    if (internal::HostHasTransports()) return true;
    Record(Unimplemented("this host's ABI minor ", Host().abi_minor, " has no transports"));
    return false;
  }

  cfx_registrar* r_;
  cfx_plugin_info* info_;
  std::map<std::string, std::string> options_;
  Status status_;
};

inline OpBuilder::~OpBuilder() {
  HostStatus s;
  Host().registration->register_op(p_->registrar(), b_, s.get());
  p_->Record(s.ToStatus());
}

inline KernelBuilder::~KernelBuilder() {
  HostStatus s;
  Host().registration->register_kernel(p_->registrar(), b_, s.get());
  p_->Record(s.ToStatus());
}

inline TransportBuilder::~TransportBuilder() { p_->RegisterTransport(desc_); }

namespace internal {
inline void RunPluginInit(const cfx_host_api* host, cfx_registrar* r,
                          const cfx_host_plugin_options* options, cfx_plugin_info* info,
                          cfx_status* status, Status (*init)(Plugin&)) {
  HostSlot() = TablesOf(host);
  try {
    Plugin p(r, options, info);
    init(p).ExportTo(status);
  } catch (...) {
    FromException().ExportTo(status);
  }
}
}  // namespace internal
}  // namespace cfx::sdk

// Defines the two entry points of a plugin around `init_fn` (Status init_fn(cfx::sdk::Plugin&)).
#define CFX_DEFINE_PLUGIN(init_fn)                                                        \
  extern "C" CFX_EXPORT uint32_t cfx_plugin_abi_version(void) {                           \
    return (static_cast<uint32_t>(CFX_ABI_MAJOR) << 16) | CFX_ABI_MINOR;                  \
  }                                                                                       \
  extern "C" CFX_EXPORT void cfx_plugin_init(const cfx_host_api* host, cfx_registrar* r,  \
                                             const cfx_host_plugin_options* options,      \
                                             cfx_plugin_info* info, cfx_status* status) { \
    ::cfx::sdk::internal::RunPluginInit(host, r, options, info, status, &init_fn);        \
  }

#endif  // CONFLUX_SDK_REGISTRAR_H_
