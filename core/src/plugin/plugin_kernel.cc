// PluginKernel: adapts the C kernel API to OpKernel.
#include "plugin/plugin_kernel.h"

#include <memory>

#include "plugin/abi_types.h"
#include "plugin/plugin_device.h"

namespace cfx::internal {
namespace {

class PluginKernel final : public OpKernel {
 public:
  PluginKernel(const PluginKernelFunctions& f, void* state) : f_(f), state_(state) {}
  ~PluginKernel() override {
    if (f_.destroy != nullptr) f_.destroy(state_);
  }
  bool is_async() const override { return f_.compute == nullptr; }
  void Compute(KernelContext* ctx) override { f_.compute(state_, ToHandle(ctx)); }
  void ComputeAsync(KernelContext* ctx, AsyncDone done) override {
    f_.compute_async(state_, ToHandle(ctx), done.fn, done.arg);
  }

 private:
  PluginKernelFunctions f_;
  void* state_;
};

}  // namespace

decltype(KernelDef::create) PluginKernelFactory(PluginKernelFunctions functions) {
  return [functions](const NodeDef& node, const OpDef& op,
                     Device* device) -> StatusOr<std::unique_ptr<OpKernel>> {
    cfx_attrs attrs{&node, &op};
    cfx_status s;
    void* state = functions.create(&attrs, PluginDevice::Of(*device).handle(), &s);
    CFX_RETURN_IF_ERROR(s.status);
    return std::unique_ptr<OpKernel>(std::make_unique<PluginKernel>(functions, state));
  };
}

}  // namespace cfx::internal
