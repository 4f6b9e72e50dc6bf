// Conflux plugin SDK: everything a plugin author includes.
#ifndef CONFLUX_SDK_H_
#define CONFLUX_SDK_H_

#include "conflux/plugin_api.h"
#include "conflux/sdk/broadcast_plan.h"
#include "conflux/sdk/gradient.h"
#include "conflux/sdk/kernel.h"
#include "conflux/sdk/reduction_plan.h"
#include "conflux/sdk/registrar.h"
#include "conflux/sdk/status.h"
#include "conflux/sdk/tensor.h"
#include "conflux/sdk/transport.h"
#include "conflux/sdk/variable_update.h"

#endif  // CONFLUX_SDK_H_
