// Conflux plugin SDK: Status and Result<T> for plugin code, and access to the host table.
//
// Header-only; built into each plugin, which sees only the C ABI of plugin_api.h. The host's
// tables are per shared object (plugins build with hidden visibility) and set once by
// CFX_DEFINE_PLUGIN before the plugin's init function runs. Thread-safe after that.
#ifndef CONFLUX_SDK_STATUS_H_
#define CONFLUX_SDK_STATUS_H_

#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "conflux/plugin_api.h"

namespace cfx::sdk {

// The host's function tables (conflux/plugin_host_api.h) and the negotiated ABI minor. A field
// appended to a table after minor 3 is read only after CFX_HAS_FIELD(Host().kernel, ...).
struct HostTables {
  uint32_t abi_minor = 0;
  const cfx_host_core_api* core = nullptr;
  const cfx_host_registration_api* registration = nullptr;
  const cfx_host_attr_api* attr = nullptr;
  const cfx_host_shape_api* shape = nullptr;
  const cfx_host_tensor_api* tensor = nullptr;
  const cfx_host_kernel_api* kernel = nullptr;
  const cfx_host_state_api* state = nullptr;
  const cfx_host_gradient_api* gradient = nullptr;
  const cfx_host_device_api* device = nullptr;
  const cfx_host_transport_api* transport = nullptr;
};

namespace internal {
inline HostTables& HostSlot() {
  static HostTables tables;
  return tables;
}

template <typename T>
T& EmptyTable() {
  static T table{};
  table.struct_size = sizeof(T);
  return table;
}

// The tables of `host`: its own from minor 3 on. An older host has only the flat fields of its
// minor, so the tables are made here over those (a field it lacks stays NULL: not provided).
inline HostTables TablesOf(const cfx_host_api* host) {
  if (host->abi_minor >= 3 && CFX_HAS_FIELD(host, cfx_host_api, transport))
    return {host->abi_minor, host->core,   host->registration, host->attr,
            host->shape,     host->tensor, host->kernel,       host->state,
            host->gradient,  host->device, host->transport};
  auto& core = EmptyTable<cfx_host_core_api>();
  auto& registration = EmptyTable<cfx_host_registration_api>();
  auto& attr = EmptyTable<cfx_host_attr_api>();
  auto& shape = EmptyTable<cfx_host_shape_api>();
  auto& tensor = EmptyTable<cfx_host_tensor_api>();
  auto& kernel = EmptyTable<cfx_host_kernel_api>();
  auto& state = EmptyTable<cfx_host_state_api>();
  auto& gradient = EmptyTable<cfx_host_gradient_api>();
  auto& device = EmptyTable<cfx_host_device_api>();
  auto& transport = EmptyTable<cfx_host_transport_api>();
#define CFX_SDK_FROM_FLAT(flat, table, field) \
  table.field = CFX_HAS_FIELD(host, cfx_host_api, flat) ? host->flat : nullptr;
  CFX_HOST_API_LEGACY_FIELDS(CFX_SDK_FROM_FLAT)
#undef CFX_SDK_FROM_FLAT
  return {host->abi_minor, &core,  &registration, &attr,   &shape,    &tensor,
          &kernel,         &state, &gradient,     &device, &transport};
}
}  // namespace internal

// The host's tables; valid from the start of cfx_plugin_init until the plugin unloads.
inline const HostTables& Host() { return internal::HostSlot(); }

template <typename... Args>
std::string StrCat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

// An error code and message; OK when code == CFX_OK.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(cfx_code code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status OK() { return Status(); }
  bool ok() const { return code_ == CFX_OK; }
  cfx_code code() const { return code_; }
  const std::string& message() const { return message_; }

  // Copies this status into a host-made status object.
  void ExportTo(cfx_status* out) const {
    if (!ok()) Host().core->status_set(out, code_, message_.c_str());
  }
  // Reads a host-made status object.
  static Status From(const cfx_status* s) {
    if (s == nullptr || Host().core->status_code(s) == CFX_OK) return Status();
    return Status(Host().core->status_code(s), Host().core->status_message(s));
  }

 private:
  cfx_code code_ = CFX_OK;
  std::string message_;
};

template <typename... Args>
Status InvalidArgument(const Args&... args) {
  return Status(CFX_INVALID_ARGUMENT, StrCat(args...));
}
template <typename... Args>
Status Unimplemented(const Args&... args) {
  return Status(CFX_UNIMPLEMENTED, StrCat(args...));
}
template <typename... Args>
Status Internal(const Args&... args) {
  return Status(CFX_INTERNAL, StrCat(args...));
}
template <typename... Args>
Status OutOfRange(const Args&... args) {
  return Status(CFX_OUT_OF_RANGE, StrCat(args...));
}
template <typename... Args>
Status ResourceExhausted(const Args&... args) {
  return Status(CFX_RESOURCE_EXHAUSTED, StrCat(args...));
}

// A host status object owned by the caller (RAII over status_new/status_delete).
class HostStatus {
 public:
  HostStatus() : s_(Host().core->status_new()) {}
  ~HostStatus() { Host().core->status_delete(s_); }
  HostStatus(const HostStatus&) = delete;
  HostStatus& operator=(const HostStatus&) = delete;
  cfx_status* get() { return s_; }
  Status ToStatus() const { return Status::From(s_); }

 private:
  cfx_status* s_;
};

// A value or an error.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}  // NOLINT: must not be OK
  bool ok() const { return v_.index() == 0; }
  Status status() const { return ok() ? Status() : std::get<1>(v_); }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  T* operator->() { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace cfx::sdk

#define CFX_SDK_CONCAT_INNER(a, b) a##b
#define CFX_SDK_CONCAT(a, b) CFX_SDK_CONCAT_INNER(a, b)

#define CFX_SDK_RETURN_IF_ERROR(expr)                  \
  do {                                                 \
    ::cfx::sdk::Status _cfx_sdk_status = (expr);       \
    if (!_cfx_sdk_status.ok()) return _cfx_sdk_status; \
  } while (0)

#define CFX_SDK_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return tmp.status();                 \
  lhs = std::move(tmp).value()

#define CFX_SDK_ASSIGN_OR_RETURN(lhs, expr) \
  CFX_SDK_ASSIGN_OR_RETURN_IMPL(CFX_SDK_CONCAT(_cfx_sdk_result_, __LINE__), lhs, expr)

#endif  // CONFLUX_SDK_STATUS_H_
