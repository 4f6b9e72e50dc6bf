// The runtime's own kernels (call frame, Send/Recv, variables, queues): C++ classes adapted to the
// kernel ABI, registered by the Runtime for every device type ("*") or for the CPU.
#ifndef CONFLUX_CORE_SRC_KERNELS_BUILTIN_H_
#define CONFLUX_CORE_SRC_KERNELS_BUILTIN_H_

#include <functional>
#include <string>
#include <vector>

#include "conflux/kernel_registry.h"
#include "plugin/abi_types.h"

namespace cfx::internal {

class BuiltinKernel {
 public:
  virtual ~BuiltinKernel() = default;
  virtual Status Init(const NodeDef& node, const OpDef& op) {
    (void)node;
    (void)op;
    return Status();
  }
  virtual void Compute(cfx_kernel_context* ctx) { (void)ctx; }
  virtual void ComputeAsync(cfx_kernel_context* ctx, cfx_done_fn done, void* arg) {
    Compute(ctx);
    done(arg);
  }
};

template <typename K>
KernelDef BuiltinKernelDef(const std::string& op, const std::string& device_type, bool async,
                           uint32_t flags, std::vector<std::string> host_memory = {}) {
  KernelDef def;
  def.op = op;
  def.device_type = device_type;
  def.flags = flags;
  def.registered_by = "runtime";
  def.host_memory_args.insert(host_memory.begin(), host_memory.end());
  def.create = [](const cfx_attrs* a, cfx_device*, cfx_status* s) -> void* {
    auto* k = new K();
    Status st = k->Init(*a->node, *a->op);
    if (!st.ok()) {
      delete k;
      s->status = st;
      return nullptr;
    }
    return static_cast<BuiltinKernel*>(k);
  };
  if (async) {
    def.compute_async = [](void* k, cfx_kernel_context* c, cfx_done_fn done, void* arg) {
      static_cast<BuiltinKernel*>(k)->ComputeAsync(c, done, arg);
    };
  } else {
    def.compute = [](void* k, cfx_kernel_context* c) { static_cast<BuiltinKernel*>(k)->Compute(c); };
  }
  def.destroy = [](void* k) { delete static_cast<BuiltinKernel*>(k); };
  return def;
}

// Helpers for built-in kernels.
inline void SetOutput(cfx_kernel_context* c, int i, Tensor t) {
  c->outputs[i] = std::move(t);
  c->output_set[i] = true;
}
inline void SetRefOutput(cfx_kernel_context* c, int i, RefPtr<Var> var) {
  if (c->output_refs.size() < c->outputs.size()) c->output_refs.resize(c->outputs.size());
  c->output_refs[i] = std::move(var);
}
template <typename T>
Status GetNodeAttr(const NodeDef& node, const OpDef& op, const std::string& name, T* out);

// A scalar host tensor holding a resource handle.
Tensor MakeResourceTensor(const ResourceHandle& h);
StatusOr<ResourceHandle> HandleFromInput(const cfx_kernel_context* c, int i);

// Copies `src` into a new tensor on `device` (same dtype and shape).
StatusOr<Tensor> CopyOnDevice(const Device& device, const Tensor& src);

void RegisterRuntimeKernels(KernelRegistry* r);  // _Arg, _Retval, _Send, _Recv
void RegisterStateKernels(KernelRegistry* r);    // variables
void RegisterQueueKernels(KernelRegistry* r);    // queues
void RegisterReaderKernels(KernelRegistry* r);   // FixedLengthRecordReaderV2, ReaderRead*V2
void RegisterSummaryKernels(KernelRegistry* r);  // ScalarSummary, ..., MergeSummary

// Dequeues one element of the string queue named by input `index` (a reader's next file);
// done(error) when the queue is closed and empty (OutOfRange) or the step is cancelled.
void DequeueStringAsync(cfx_kernel_context* c, int index,
                        std::function<void(const Status&, std::string)> done);

}  // namespace cfx::internal

#endif  // CONFLUX_CORE_SRC_KERNELS_BUILTIN_H_
