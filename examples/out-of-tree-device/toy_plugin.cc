// The plugin's entry point: reads the options, registers the TOYDEV device type and its kernels.
#include "conflux/sdk.h"
#include "toy_device.h"

namespace {

cfx::sdk::Status Init(cfx::sdk::Plugin& p) {
  p.SetInfo("example_toydev", "1.0.0");
  CFX_SDK_ASSIGN_OR_RETURN(toydev::Options options, toydev::ParseOptions(p.options()));
  // One device type per init, with these options; the host calls the shutdown function once it
  // has destroyed the devices, or at once when this init fails.
  auto* type = new toydev::DeviceType(options);
  p.SetShutdown(type, [](void* state) { delete static_cast<toydev::DeviceType*>(state); });
  p.DeviceType(type->desc());
  toydev::RegisterKernels(p);
  return p.status();
}

}  // namespace

CFX_DEFINE_PLUGIN(Init)
