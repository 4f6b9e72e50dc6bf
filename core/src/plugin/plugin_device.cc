// PluginDevice: adapts a plugin's device functions to Device.
#include "plugin/plugin_device.h"

#include <memory>

#include "plugin/abi_types.h"

namespace cfx::internal {
namespace {

// Memory of one kind on a plugin device.
class PluginAllocator final : public Allocator {
 public:
  PluginAllocator(const cfx_device_type_desc* desc, cfx_device* dev, cfx_memory_kind kind,
                  std::string name, bool host_addressable)
      : desc_(desc), dev_(dev), kind_(kind), name_(std::move(name)), host_(host_addressable) {}
  std::string name() const override { return name_; }
  bool host_addressable() const override { return host_; }

 protected:
  void* RawAllocate(size_t bytes, size_t alignment) override {
    cfx_status s;
    void* p = desc_->funcs->allocate(dev_, kind_, bytes, alignment, &s);
    return s.status.ok() ? p : nullptr;
  }
  void RawDeallocate(void* ptr, size_t bytes) override {
    desc_->funcs->deallocate(dev_, kind_, ptr, bytes);
  }

 private:
  const cfx_device_type_desc* desc_;
  cfx_device* dev_;
  cfx_memory_kind kind_;
  std::string name_;
  bool host_;
};

std::unique_ptr<Allocator> MakeAllocator(const cfx_device_type_desc* desc, cfx_device* handle,
                                         cfx_memory_kind kind, std::string name, bool host,
                                         int64_t limit) {
  auto a = std::make_unique<PluginAllocator>(desc, handle, kind, std::move(name), host);
  if (limit > 0) a->set_bytes_limit(limit);
  return a;
}

std::string ShortName(const DeviceName& name) { return name.type + ":" + std::to_string(name.id); }

}  // namespace

PluginDevice::PluginDevice(const cfx_device_type_desc* desc, cfx_device* handle, DeviceName name,
                           std::string plugin, int64_t memory_limit)
    : Device(name, std::move(plugin), desc->host_addressable != 0,
             MakeAllocator(desc, handle, CFX_MEMORY_DEVICE, ShortName(name),
                           desc->host_addressable != 0, memory_limit),
             desc->host_addressable ? nullptr
                                    : MakeAllocator(desc, handle, CFX_MEMORY_HOST_PINNED,
                                                    ShortName(name) + " pinned host", true, 0)),
      desc_(desc),
      handle_(handle) {}

PluginDevice::~PluginDevice() {
  // Resources (variable buffers) go back to the allocators before the device goes away.
  ReleaseResources();
  if (desc_->destroy_device) desc_->destroy_device(desc_->type_state, handle_);
}

std::string PluginDevice::description() const {
  if (desc_->funcs->describe == nullptr) return type();
  char buf[256] = {0};
  desc_->funcs->describe(handle_, buf, sizeof(buf) - 1);
  return buf;
}

Status PluginDevice::CopyBytesToDevice(void* device_dst, const void* host_src, size_t bytes) const {
  if (desc_->funcs->copy_host_to_device == nullptr)
    return Device::CopyBytesToDevice(device_dst, host_src, bytes);
  cfx_status s;
  desc_->funcs->copy_host_to_device(handle_, nullptr, device_dst, 0, host_src, bytes, &s);
  CFX_RETURN_IF_ERROR(s.status);
  return Synchronize();
}

Status PluginDevice::CopyBytesToHost(void* host_dst, const void* device_src, size_t bytes) const {
  if (desc_->funcs->copy_device_to_host == nullptr)
    return Device::CopyBytesToHost(host_dst, device_src, bytes);
  cfx_status s;
  desc_->funcs->copy_device_to_host(handle_, nullptr, host_dst, device_src, 0, bytes, &s);
  CFX_RETURN_IF_ERROR(s.status);
  return Synchronize();
}

Status PluginDevice::CopyBytesOnDevice(void* device_dst, const void* device_src,
                                       size_t bytes) const {
  if (desc_->funcs->copy_device_to_device == nullptr)
    return Device::CopyBytesOnDevice(device_dst, device_src, bytes);
  cfx_status s;
  desc_->funcs->copy_device_to_device(handle_, nullptr, device_dst, 0, device_src, 0, bytes, &s);
  CFX_RETURN_IF_ERROR(s.status);
  return Synchronize();
}

Status PluginDevice::Synchronize() const {
  if (desc_->funcs->stream_synchronize == nullptr) return Status();
  cfx_status s;
  desc_->funcs->stream_synchronize(handle_, nullptr, &s);
  return s.status;
}

void PluginDevice::ParallelFor(int64_t total, int64_t cost_per_unit,
                               const std::function<void(int64_t, int64_t)>& fn) const {
  if (total <= 0) return;
  if (desc_->funcs->parallel_for == nullptr) return Device::ParallelFor(total, cost_per_unit, fn);
  desc_->funcs->parallel_for(
      handle_, total, cost_per_unit,
      [](void* arg, int64_t b, int64_t e) {
        (*static_cast<const std::function<void(int64_t, int64_t)>*>(arg))(b, e);
      },
      const_cast<void*>(static_cast<const void*>(&fn)));
}

}  // namespace cfx::internal
