// Reading the structs a plugin fills (cfx_plugin_info, cfx_device_type_desc, cfx_device_funcs,
// and from minor 4 the transport and collectives descriptors and their function tables).
//
// A plugin built against an older header hands the host a smaller struct: every field appended
// after the plugin's release lies past its end. So the host checks each such struct once, when it
// first sees it (CheckStructSize: at least the size of the first ABI release that had the struct,
// else a load error naming the plugin, the struct and both sizes), reads the fields of that first
// release directly, and reads every field appended later only through FieldOr, which compares the
// field's end with the struct's struct_size. Stateless; thread-safe.
#ifndef CONFLUX_CORE_SRC_PLUGIN_PLUGIN_STRUCT_H_
#define CONFLUX_CORE_SRC_PLUGIN_PLUGIN_STRUCT_H_

#include <cstddef>
#include <string>
#include <type_traits>

#include "conflux/plugin_api.h"
#include "conflux/status.h"

namespace cfx::internal {

// Each plugin-filled struct's name and its size in the first ABI release that had it (the end of
// its last field there). These numbers never change: a field appended later is read with FieldOr.
template <typename T>
struct PluginStruct;
// PluginStruct<T> for a struct whose first release `release` ended with field `last`.
#define CFX_PLUGIN_STRUCT(T, release, last)                                   \
  template <>                                                                 \
  struct PluginStruct<T> {                                                    \
    static constexpr const char* kName = #T;                                  \
    static constexpr const char* kRelease = release;                          \
    static constexpr size_t kFirstSize = offsetof(T, last) + sizeof(T::last); \
  };
CFX_PLUGIN_STRUCT(cfx_plugin_info, "1.0", shutdown)
CFX_PLUGIN_STRUCT(cfx_device_type_desc, "1.0", funcs)
CFX_PLUGIN_STRUCT(cfx_device_funcs, "1.0", describe)
CFX_PLUGIN_STRUCT(cfx_transport_desc, "1.4", collectives)
CFX_PLUGIN_STRUCT(cfx_transport_funcs, "1.4", device_memory)
CFX_PLUGIN_STRUCT(cfx_collectives_desc, "1.4", funcs)
CFX_PLUGIN_STRUCT(cfx_collective_funcs, "1.4", broadcast)
#undef CFX_PLUGIN_STRUCT

// OK when `s` holds at least the fields of the first release of T; otherwise InvalidArgument
// "<owner>: <struct> has struct_size N, smaller than the M bytes it has had since ABI <release>".
template <typename T>
Status CheckStructSize(const T* s, const std::string& owner) {
  using Info = PluginStruct<T>;
  if (s->struct_size >= Info::kFirstSize) return Status();
  return errors::InvalidArgument(owner, ": ", Info::kName, " has struct_size ", s->struct_size,
                                 ", smaller than the ", Info::kFirstSize,
                                 " bytes it has had since ABI ", Info::kRelease,
                                 " (set struct_size = sizeof(", Info::kName, "))");
}

// `s->*field` when the struct the plugin filled is large enough to hold it, else `fallback` (for
// a function pointer, nullptr: "not provided"). Works for any struct that starts with
// struct_size.
template <typename T, typename F>
F FieldOr(const T* s, F T::*field, std::type_identity_t<F> fallback) {
  static const T probe{};
  const size_t end = static_cast<size_t>(reinterpret_cast<const char*>(&(probe.*field)) -
                                         reinterpret_cast<const char*>(&probe)) +
                     sizeof(F);
  return s->struct_size >= end ? s->*field : fallback;
}

}  // namespace cfx::internal

#endif  // CONFLUX_CORE_SRC_PLUGIN_PLUGIN_STRUCT_H_
