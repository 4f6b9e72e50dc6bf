// PluginGradient (see plugin_gradients.h).
#include "plugin_gradients.h"

namespace cfx::internal {

std::optional<GradFunc> PluginGradient(const Runtime*, const std::string&) { return std::nullopt; }

}  // namespace cfx::internal
