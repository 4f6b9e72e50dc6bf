// The device table of the host API (cfx_host_device_api): the device and stream a kernel runs
// on, and that device's intra-op pool.
#include "plugin/abi_types.h"
#include "plugin/host_api_tables.h"
#include "plugin/plugin_device.h"
#include "runtime/kernel_context.h"

namespace cfx::internal {
namespace {

cfx_device* CtxDevice(const KernelContext* c) { return PluginDevice::Of(*c->device).handle(); }
cfx_stream* CtxStream(const KernelContext* c) { return PluginDevice::ToCStream(c->stream); }
void CtxParallelFor(KernelContext* c, int64_t total, int64_t cost, cfx_range_fn fn, void* arg) {
  c->device->ParallelFor(total, cost, [&](int64_t b, int64_t e) { fn(arg, b, e); });
}

}  // namespace

const cfx_host_device_api* HostDeviceApi() {
  return StaticTable<cfx_host_device_api>([](cfx_host_device_api* a) {
    a->kernel_device = OnContext<CtxDevice>::Call;
    a->kernel_stream = OnContext<CtxStream>::Call;
    a->parallel_for = OnContext<CtxParallelFor>::Call;
  });
}

}  // namespace cfx::internal
