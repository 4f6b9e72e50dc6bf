// CopyTensor: the one way a tensor moves between memory spaces — between two devices, from a
// device to host memory or back, or into a new buffer on the same device. The transfer kernels
// (_Recv), the executor (arguments a kernel wants in host memory, a Switch's predicate),
// variables' copy on write and Session::Run's fetches all go through it.
//
// CopyTensor is asynchronous: on a device with streams, a copy from device memory waits for a
// ready event on the device's compute stream (not for the whole device), and `done` runs on the
// device's completion thread when the copy is complete; without streams it runs inline.
// CopyTensorSync blocks the calling thread without needing any other thread, so it may run on a
// device's completion thread. Both are thread-safe.
#ifndef CONFLUX_CORE_SRC_RUNTIME_COPY_TENSOR_H_
#define CONFLUX_CORE_SRC_RUNTIME_COPY_TENSOR_H_

#include <functional>

#include "conflux/device.h"
#include "conflux/status.h"
#include "conflux/tensor.h"

namespace cfx {

// The device whose memory holds `t`; null when it is in the process's host memory (or has no
// buffer).
inline const Device* DeviceOf(const Tensor& t) {
  return t.buffer() != nullptr ? t.buffer()->allocator()->device() : nullptr;
}

struct CopyTensorOptions {
  // A buffer of its own even when `t` is already readable where it goes (copy on write).
  bool new_buffer = false;
};

using CopyTensorDone = std::function<void(const Status& status, Tensor copy)>;

// Makes `t` (held by `src`; null: found from the tensor) readable in the memory of `dst`, or in
// host memory when `dst` is null. Shares the buffer when it already is readable there (same
// device, or host-addressable memory on both sides; strings and resource handles always live in
// host memory), unless options.new_buffer. Errors: an allocation or a device copy that failed,
// with the devices named.
void CopyTensor(const Device* src, const Device* dst, const Tensor& t,
                const CopyTensorOptions& options, CopyTensorDone done);

// CopyTensor, done on the calling thread.
StatusOr<Tensor> CopyTensorSync(const Device* src, const Device* dst, const Tensor& t,
                                const CopyTensorOptions& options = {});

}  // namespace cfx

#endif  // CONFLUX_CORE_SRC_RUNTIME_COPY_TENSOR_H_
