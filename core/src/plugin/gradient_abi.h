// Fills the gradient functions (ABI minor 2) of the host function table.
#ifndef CONFLUX_CORE_SRC_PLUGIN_GRADIENT_ABI_H_
#define CONFLUX_CORE_SRC_PLUGIN_GRADIENT_ABI_H_

#include "conflux/plugin_api.h"

namespace cfx::internal {

void AddGradientFunctions(cfx_host_api* h);

}  // namespace cfx::internal

#endif  // CONFLUX_CORE_SRC_PLUGIN_GRADIENT_ABI_H_
