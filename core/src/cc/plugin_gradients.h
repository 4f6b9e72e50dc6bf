// Gradient functions registered by plugins through the plugin ABI, as GradFuncs.
#ifndef CONFLUX_CC_PLUGIN_GRADIENTS_H_
#define CONFLUX_CC_PLUGIN_GRADIENTS_H_

#include <optional>
#include <string>

#include "conflux/cc/gradients.h"

namespace cfx::internal {

// The gradient a loaded plugin registered for `op`, or nullopt (also for a null runtime).
std::optional<GradFunc> FindPluginGradFunc(const Runtime* runtime, const std::string& op);

}  // namespace cfx::internal

#endif  // CONFLUX_CC_PLUGIN_GRADIENTS_H_
