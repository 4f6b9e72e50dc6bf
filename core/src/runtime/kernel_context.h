// KernelContext and OpKernel: the runtime's kernel interface (TensorFlow's OpKernelContext and
// OpKernel). An OpKernel is built once per node and device and holds what it read from the
// node's attrs; a KernelContext is one call of it: the inputs, the outputs it sets, its status,
// and where the call runs (device, stream, step, frame, iteration).
//
// The runtime's own kernels (_Send/_Recv, _Arg/_Retval, variables, queues, TensorArrays, stacks)
// implement OpKernel directly. A plugin's kernel reaches the same object through the C ABI: its
// `cfx_kernel_context*` handle is a KernelContext* (plugin/ adapts one to the other), so a call
// costs the same whoever wrote the kernel.
//
// Threads: one KernelContext is used by one kernel call at a time; an asynchronous kernel may
// finish it on another thread. OpKernel::Compute may run concurrently for different steps and
// iterations, so kernels keep per-call state in the context, not in themselves.
#ifndef CONFLUX_CORE_SRC_RUNTIME_KERNEL_CONTEXT_H_
#define CONFLUX_CORE_SRC_RUNTIME_KERNEL_CONTEXT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "conflux/device.h"
#include "conflux/status.h"
#include "conflux/tensor.h"
#include "state/resource_mgr.h"

namespace cfx {

struct StepContext;

class KernelContext {
 public:
  KernelContext() = default;
  KernelContext(const KernelContext&) = delete;
  KernelContext& operator=(const KernelContext&) = delete;
  ~KernelContext() = default;

  int num_outputs() const { return static_cast<int>(outputs.size()); }
  // Input i, owned by the caller for the call; a kernel may move from it to forward its buffer.
  Tensor& input(int i) { return inputs[i]; }
  const Tensor& input(int i) const { return inputs[i]; }
  // The variable behind reference input i; null when input i is not a reference.
  Var* ref_input(int i) const {
    return input_refs != nullptr && i >= 0 && i < num_inputs ? input_refs[i].get() : nullptr;
  }
  DataType output_type(int i) const { return (*output_types)[i]; }
  bool output_in_host_memory(int i) const {
    return host_memory_outputs != nullptr && (*host_memory_outputs)[i];
  }
  // The allocator that output i comes from (host memory for HostMemory outputs).
  Allocator* output_allocator(int i) const {
    return output_in_host_memory(i) ? device->host_allocator() : device->allocator();
  }

  void set_output(int i, Tensor t) {
    outputs[i] = std::move(t);
    output_set[i] = true;
  }
  // Output i is the variable `var` itself (a Ref(T) output).
  void set_ref_output(int i, RefPtr<Var> var) {
    if (output_refs.size() < outputs.size()) output_refs.resize(outputs.size());
    output_refs[i] = std::move(var);
  }
  // Keeps the first error of the call.
  void SetStatus(Status s) {
    if (status.ok()) status = std::move(s);
  }

  // The fields are the executor's to fill (KernelInstance::InitContext) and read back; kernels
  // use the accessors above.
  const std::string* node_name = nullptr;
  Device* device = nullptr;
  // The device's compute stream (null on a device without streams): a kernel that enqueues its
  // work there may return before the work completes.
  DeviceStream* stream = nullptr;
  Tensor* inputs = nullptr;
  int num_inputs = 0;
  const std::vector<DataType>* output_types = nullptr;
  const std::vector<bool>* host_memory_outputs = nullptr;  // may be null: none
  std::vector<Tensor> outputs;
  std::vector<bool> output_set;
  Status status;
  // Reference inputs: parallel to `inputs`, null where the input is not a reference (or null
  // when no input is).
  const RefPtr<Var>* input_refs = nullptr;
  // Reference outputs, sized on first use.
  std::vector<RefPtr<Var>> output_refs;
  // The step this call belongs to (null outside an executor, e.g. in KernelRunner).
  const StepContext* step = nullptr;
  // The frame (0: the root) and iteration the call runs in: part of rendezvous keys.
  int64_t frame_id = 0;
  int64_t iteration = 0;
  // Dead-tensor signals of the transfer kernels (_Send/_Recv), which run even when dead: a _Send
  // whose input is dead sends a dead tensor; a _Recv that receives one sets is_output_dead.
  bool is_input_dead = false;
  bool is_output_dead = false;
};

// Called once when an asynchronous kernel has finished (its outputs and status are in the
// context). A plain function and argument: no allocation per call.
struct AsyncDone {
  void (*fn)(void* arg) = nullptr;
  void* arg = nullptr;
  void operator()() const { fn(arg); }
};

class OpKernel {
 public:
  virtual ~OpKernel() = default;
  // True when the kernel completes through ComputeAsync.
  virtual bool is_async() const { return false; }
  // A synchronous kernel's call: on return, ctx holds its outputs or its error.
  virtual void Compute(KernelContext* ctx) { (void)ctx; }
  // An asynchronous kernel's call: `done` runs exactly once, on any thread, possibly before
  // ComputeAsync returns. The default runs Compute and then done.
  virtual void ComputeAsync(KernelContext* ctx, AsyncDone done) {
    Compute(ctx);
    done();
  }
};

}  // namespace cfx

#endif  // CONFLUX_CORE_SRC_RUNTIME_KERNEL_CONTEXT_H_
