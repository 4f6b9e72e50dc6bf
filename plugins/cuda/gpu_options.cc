// Parsing of the GPU device options and the pool size rule.
#include "gpu_options.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <string>

namespace cfx::cuda {

namespace {

// "0,2" -> {0, 2}: distinct ordinals >= 0.
sdk::Result<std::vector<int>> ParseOrdinals(const std::string& text) {
  std::vector<int> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    std::string item = text.substr(start, comma - start);
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    char* end = nullptr;
    errno = 0;
    const long v = item.empty() ? -1 : std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || errno != 0 || v < 0 || v > 1023)
      return sdk::InvalidArgument("devices.GPU.options.visible_devices: '", text,
                                  "' is not a comma-separated list of CUDA device ordinals "
                                  "(e.g. \"0,1\")");
    if (std::find(out.begin(), out.end(), static_cast<int>(v)) != out.end())
      return sdk::InvalidArgument("devices.GPU.options.visible_devices: '", text, "' lists device ",
                                  v, " twice");
    out.push_back(static_cast<int>(v));
    start = comma + 1;
  }
  return out;
}

}  // namespace

sdk::Result<GpuOptions> ParseGpuOptions(size_t count, const char* const* keys,
                                        const char* const* values) {
  GpuOptions options;
  for (size_t i = 0; i < count; ++i) {
    const std::string key = keys[i], value = values[i];
    if (key == "visible_devices") {
      CFX_SDK_ASSIGN_OR_RETURN(options.visible_devices, ParseOrdinals(value));
    } else if (key == "memory_fraction") {
      char* end = nullptr;
      errno = 0;
      const double f = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0' || errno != 0 || !(f > 0.0 && f <= 1.0))
        return sdk::InvalidArgument(
            "devices.GPU.options.memory_fraction: expected a number in "
            "(0, 1], got '",
            value, "'");
      options.memory_fraction = f;
    } else if (key == "allow_tf32" || key == "cudnn_autotune") {
      if (value != "true" && value != "false")
        return sdk::InvalidArgument("devices.GPU.options.", key, ": expected true or false, got '",
                                    value, "'");
      (key == "allow_tf32" ? options.allow_tf32 : options.cudnn_autotune) = value == "true";
    } else {
      return sdk::InvalidArgument(
          "devices.GPU.options: unknown key '", key,
          "' (expected visible_devices, memory_fraction, allow_tf32 or cudnn_autotune)");
    }
  }
  return options;
}

sdk::Result<int> CudaOrdinal(const GpuOptions& options, int index, int device_count) {
  if (options.visible_devices.empty()) {
    if (index < device_count) return index;
    return sdk::Status(CFX_NOT_FOUND, sdk::StrCat("GPU:", index, " needs CUDA device ", index,
                                                  " but this machine has ", device_count));
  }
  if (index >= static_cast<int>(options.visible_devices.size()))
    return sdk::Status(
        CFX_NOT_FOUND,
        sdk::StrCat("GPU:", index, ": visible_devices lists only ", options.visible_devices.size(),
                    " device(s); lower devices.GPU.count or list more"));
  const int ordinal = options.visible_devices[index];
  if (ordinal >= device_count)
    return sdk::Status(CFX_NOT_FOUND,
                       sdk::StrCat("GPU:", index, ": visible_devices names CUDA device ", ordinal,
                                   " but this machine has ", device_count, " (ordinals 0 to ",
                                   device_count - 1, ")"));
  return ordinal;
}

size_t PoolLimit(const GpuOptions& options, size_t total_bytes, size_t free_bytes,
                 int64_t memory_limit) {
  size_t limit = static_cast<size_t>(static_cast<double>(total_bytes) * options.memory_fraction);
  limit = std::min(limit, free_bytes);
  if (memory_limit > 0) limit = std::min(limit, static_cast<size_t>(memory_limit));
  return limit;
}

}  // namespace cfx::cuda
