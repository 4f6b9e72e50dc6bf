// The GPU device type: the CUDA devices the driver reports (chosen and ordered by the
// visible_devices option), each with a best-fit-with-coalescing pool over cudaMalloc regions,
// a pool of pinned host memory for staging copies, non-blocking streams, events, and stream
// callbacks run on a per-device callback thread. With no driver or no device the type has zero
// devices and says why.
#ifndef CONFLUX_PLUGINS_CUDA_CUDA_DEVICE_H_
#define CONFLUX_PLUGINS_CUDA_CUDA_DEVICE_H_

#include "conflux/plugin_api.h"

namespace cfx::cuda {

// The device type descriptor registered by the plugin (static storage).
const cfx_device_type_desc* GpuDeviceType();

}  // namespace cfx::cuda

#endif  // CONFLUX_PLUGINS_CUDA_CUDA_DEVICE_H_
