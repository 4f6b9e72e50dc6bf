// Private to the CPU reduction kernels (the layout of a reduction comes from the SDK's
// reduction_plan.h).
#ifndef CONFLUX_PLUGINS_CPU_KERNELS_REDUCTION_H_
#define CONFLUX_PLUGINS_CPU_KERNELS_REDUCTION_H_

#include <cstdint>
#include <vector>

#include "conflux/sdk.h"
#include "conflux/sdk/reduction_plan.h"

namespace cfx::cpu {

using sdk::CanonicalAxis;
using sdk::PlanReduction;
using sdk::ReductionPlan;

// ArgMax and ArgMin (reduction_arg.cc); called by RegisterReductionKernels.
void RegisterArgReductionKernels(sdk::Plugin& p);
// Cumsum and Cumprod (scan.cc).
void RegisterScanKernels(sdk::Plugin& p);

}  // namespace cfx::cpu

#endif  // CONFLUX_PLUGINS_CPU_KERNELS_REDUCTION_H_
