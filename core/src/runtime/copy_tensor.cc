// CopyTensor.
#include "runtime/copy_tensor.h"

#include <utility>

#include "runtime/step.h"

namespace cfx {
namespace {

std::string Where(const Device* d) { return d != nullptr ? d->full_name() : "host memory"; }

StatusOr<Tensor> Copy(const Device* src, const Device* dst, const Tensor& t,
                      const CopyTensorOptions& options) {
  if (t.buffer() == nullptr) return t;
  if (src == nullptr) src = DeviceOf(t);
  const bool src_host = t.buffer()->allocator()->host_addressable();
  const bool host_only = t.dtype() == DT_STRING || t.dtype() == DT_RESOURCE;
  const bool dst_host = dst == nullptr || dst->host_addressable() || host_only;
  if (!options.new_buffer && ((src_host && dst_host) || (!src_host && src == dst))) return t;
  auto fail = [&](const Status& s) {
    return s.WithPrefix("copying a " + DataTypeString(t.dtype()) + " " + t.shape().ToString() +
                        " tensor from " + Where(src) + " to " + Where(dst) + ": ");
  };
  if (src_host && dst_host) {  // a new buffer in host-readable memory
    Allocator* a = dst != nullptr && !host_only ? dst->allocator() : nullptr;
    auto copy = t.DeepCopy(a);
    return copy.ok() ? copy : fail(copy.status());
  }
  if (!src_host && src == dst) {  // a new buffer on the same device
    auto copy = Tensor::Allocate(dst->allocator(), t.dtype(), t.shape());
    if (!copy.ok()) return fail(copy.status());
    Status s = dst->CopyDeviceToDevice(t, &*copy);
    return s.ok() ? copy : fail(s);
  }
  // Through host memory: device -> host, then host -> device.
  Tensor host = t;
  if (!src_host) {
    if (src == nullptr) return fail(errors::Internal("the tensor's memory belongs to no device"));
    auto h = src->ToHost(t);
    if (!h.ok()) return fail(h.status());
    host = *std::move(h);
  }
  if (dst_host) return host;
  auto d = dst->FromHost(host);
  return d.ok() ? d : fail(d.status());
}

}  // namespace

void CopyTensor(const Device* src, const Device* dst, const Tensor& t,
                const CopyTensorOptions& options, CopyTensorDone done) {
  StatusOr<Tensor> copy = Copy(src, dst, t, options);
  if (copy.ok()) {
    done(Status(), *std::move(copy));
  } else {
    done(copy.status(), Tensor());
  }
}

StatusOr<Tensor> CopyTensorSync(const Device* src, const Device* dst, const Tensor& t,
                                const CopyTensorOptions& options) {
  StatusOr<Tensor> result = errors::Internal("CopyTensor did not call done");
  Notification copied;
  CopyTensor(src, dst, t, options, [&](const Status& s, Tensor copy) {
    if (s.ok()) {
      result = std::move(copy);
    } else {
      result = s;
    }
    copied.Notify();
  });
  copied.Wait();
  return result;
}

}  // namespace cfx
