// CopyTensor.
#include "runtime/copy_tensor.h"

#include <utility>

namespace cfx {
namespace {

std::string Where(const Device* d) { return d != nullptr ? d->full_name() : "host memory"; }

// One byte copy of the plan below: `blocking` waits on the calling thread (what
// CopyTensorSync needs, and safe on a device's completion thread); otherwise the device's
// asynchronous copy, which keeps both tensors alive until it is done.
enum class Step { kToHost, kToDevice, kOnDevice };
void CopyBytes(Step step, const Device* device, const Tensor& from, const Tensor& to, bool blocking,
               StatusCallback done) {
  void* dst = to.raw_data();
  const void* src = from.raw_data();
  const size_t bytes = from.TotalBytes();
  if (bytes == 0) return done(Status());
  if (blocking) {
    Tensor out = to;
    switch (step) {
      case Step::kToHost:
        return done(device->CopyDeviceToHost(from, &out));
      case Step::kToDevice:
        return done(device->CopyHostToDevice(from, &out));
      case Step::kOnDevice:
        return done(device->CopyDeviceToDevice(from, &out));
    }
  }
  auto keep = [from, to, done](const Status& s) { done(s); };
  switch (step) {
    case Step::kToHost:
      return device->CopyToHostAsync(dst, src, bytes, keep);
    case Step::kToDevice:
      return device->CopyToDeviceAsync(dst, src, bytes, keep);
    case Step::kOnDevice:
      return device->CopyOnDeviceAsync(dst, src, bytes, keep);
  }
}

// Where a copy starts and ends: computed once per call.
struct Route {
  const Device* src;  // the device that holds the tensor (null: host memory)
  bool src_host;      // the tensor is in host-readable memory
  bool host_only;     // strings, resource handles and variants live in host memory only
  bool dst_host;      // it goes to host-readable memory
};

Route RouteOf(const Device* src, const Device* dst, const Tensor& t) {
  Route r;
  r.src = src != nullptr ? src : DeviceOf(t);
  r.src_host = t.buffer()->allocator()->host_addressable();
  r.host_only = t.dtype() == DT_STRING || t.dtype() == DT_RESOURCE || t.dtype() == DT_VARIANT;
  r.dst_host = dst == nullptr || dst->host_addressable() || r.host_only;
  return r;
}

// True when `t` is readable where it goes as it is (CopyTensor shares its buffer).
bool Shareable(const Route& r, const Device* dst, const CopyTensorOptions& options) {
  return !options.new_buffer && (r.src_host ? r.dst_host : r.src == dst);
}

void Copy(const Device* src, const Device* dst, const Tensor& t, const CopyTensorOptions& options,
          bool blocking, CopyTensorDone done) {
  if (t.buffer() == nullptr) return done(Status(), t);
  const Route route = RouteOf(src, dst, t);
  if (Shareable(route, dst, options)) return done(Status(), t);
  src = route.src;
  const bool src_host = route.src_host, host_only = route.host_only, dst_host = route.dst_host;
  auto fail = [src, dst, t, done](const Status& s) {
    done(s.WithPrefix("copying a " + DataTypeString(t.dtype()) + " " + t.shape().ToString() +
                      " tensor from " + Where(src) + " to " + Where(dst) + ": "),
         Tensor());
  };
  if (src_host && dst_host) {  // a new buffer in host-readable memory
    auto copy = t.DeepCopy(dst != nullptr && !host_only ? dst->allocator() : nullptr);
    return copy.ok() ? done(Status(), *std::move(copy)) : fail(copy.status());
  }
  // To a device's memory: from the same device, or from host memory.
  auto to_device = [dst, blocking, fail, done](const Tensor& from, Step step) {
    auto out = Tensor::Allocate(dst->allocator(), from.dtype(), from.shape());
    if (!out.ok()) return fail(out.status());
    Tensor to = *std::move(out);
    CopyBytes(step, dst, from, to, blocking,
              [to, fail, done](const Status& s) { return s.ok() ? done(Status(), to) : fail(s); });
  };
  if (src_host) return to_device(t, Step::kToDevice);
  if (src == nullptr) return fail(errors::Internal("the tensor's memory belongs to no device"));
  if (src == dst) return to_device(t, Step::kOnDevice);
  // Device memory to host memory, then on to the destination device if there is one.
  auto staged = Tensor::Allocate(src->host_allocator(), t.dtype(), t.shape());
  if (!staged.ok()) return fail(staged.status());
  Tensor host = *std::move(staged);
  CopyBytes(Step::kToHost, src, t, host, blocking,
            [host, dst_host, to_device, fail, done](const Status& s) {
              if (!s.ok()) return fail(s);
              if (dst_host) return done(Status(), host);
              to_device(host, Step::kToDevice);
            });
}

}  // namespace

void CopyTensor(const Device* src, const Device* dst, const Tensor& t,
                const CopyTensorOptions& options, CopyTensorDone done) {
  Copy(src, dst, t, options, /*blocking=*/false, std::move(done));
}

StatusOr<Tensor> CopyTensorSync(const Device* src, const Device* dst, const Tensor& t,
                                const CopyTensorOptions& options) {
  // The common case, without a callback.
  if (t.buffer() == nullptr || Shareable(RouteOf(src, dst, t), dst, options)) return t;
  // Every step blocks on this thread: `done` has run when Copy returns.
  Status status;
  Tensor result;
  Copy(src, dst, t, options, /*blocking=*/true, [&](const Status& s, Tensor copy) {
    status = s;
    result = std::move(copy);
  });
  if (!status.ok()) return status;
  return result;
}

}  // namespace cfx
