// The runtime's own kernels (call frame, Send/Recv, variables, queues, accumulators,
// TensorArrays, stacks, lookup tables, strings): OpKernels written against the runtime's
// KernelContext, registered by the Runtime for every device type ("*") or for the CPU.
#ifndef CONFLUX_CORE_SRC_KERNELS_BUILTIN_H_
#define CONFLUX_CORE_SRC_KERNELS_BUILTIN_H_

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "conflux/kernel_registry.h"
#include "conflux/op_def.h"
#include "runtime/kernel_context.h"
#include "runtime/step.h"
#include "state/resource_mgr.h"

namespace cfx::internal {

// A built-in kernel: Init reads the node's attrs once; `async` kernels override ComputeAsync.
class BuiltinKernel : public OpKernel {
 public:
  virtual Status Init(const NodeDef& node, const OpDef& op) {
    (void)node;
    (void)op;
    return Status();
  }
  bool is_async() const final { return async_; }
  void set_async(bool async) { async_ = async; }

 private:
  bool async_ = false;
};

// The KernelDef of built-in kernel K for `op` on `device_type`; `flags` are KernelFlags.
template <typename K>
KernelDef BuiltinKernelDef(const std::string& op, const std::string& device_type, bool async,
                           uint32_t flags, std::vector<std::string> host_memory = {}) {
  KernelDef def;
  def.op = op;
  def.device_type = device_type;
  def.flags = flags;
  def.registered_by = "runtime";
  def.host_memory_args.insert(host_memory.begin(), host_memory.end());
  def.create = [async](const NodeDef& node, const OpDef& op_def,
                       Device*) -> StatusOr<std::unique_ptr<OpKernel>> {
    auto k = std::make_unique<K>();
    k->set_async(async);
    CFX_RETURN_IF_ERROR(k->Init(node, op_def));
    return std::unique_ptr<OpKernel>(std::move(k));
  };
  return def;
}

// Registers `def` into a runtime's registry; the built-in kernels never clash, so a failure is
// a bug, reported with the kernel's name before aborting.
void RegisterBuiltin(KernelRegistry* r, KernelDef def);

// Helpers for built-in kernels.
inline void SetOutput(KernelContext* c, int i, Tensor t) { c->set_output(i, std::move(t)); }
inline void SetRefOutput(KernelContext* c, int i, RefPtr<Var> var) {
  c->set_ref_output(i, std::move(var));
}
template <typename T>
Status GetNodeAttr(const NodeDef& node, const OpDef& op, const std::string& name, T* out);

// The cancellation manager of the call's step; null outside a step (KernelRunner), where
// nothing cancels a call.
inline CancellationManager* StepCancellation(const KernelContext* c) {
  return c->step != nullptr ? c->step->cancellation : nullptr;
}

// A scalar host tensor holding a resource handle.
Tensor MakeResourceTensor(const ResourceHandle& h);
StatusOr<ResourceHandle> HandleFromInput(const KernelContext* c, int i);

void RegisterRuntimeKernels(KernelRegistry* r);      // _Arg, _Retval, _Send, _Recv
void RegisterStateKernels(KernelRegistry* r);        // variables
void RegisterQueueKernels(KernelRegistry* r);        // queues
void RegisterAccumulatorKernels(KernelRegistry* r);  // ConditionalAccumulator family
void RegisterReaderKernels(KernelRegistry* r);       // FixedLengthRecordReaderV2, ReaderRead*V2
void RegisterSummaryKernels(KernelRegistry* r);      // ScalarSummary, ..., MergeSummary
void RegisterCheckpointKernels(KernelRegistry* r);   // SaveV2, RestoreV2, MergeV2Checkpoints
void RegisterControlFlowKernels(KernelRegistry* r);  // Switch, Merge, Enter, Exit, ...
void RegisterTensorArrayKernels(KernelRegistry* r);  // TensorArrayV3 family
void RegisterListKernels(KernelRegistry* r);         // EmptyTensorList, TensorListPushBack, ...
void RegisterStackKernels(KernelRegistry* r);        // StackV2 family
void RegisterLookupTableKernels(KernelRegistry* r);  // HashTableV2, LookupTableFindV2, ...
void RegisterStringKernels(KernelRegistry* r);       // StringJoin, ..., StaticRegexFullMatch
// CollectiveReduceV2, ... on every device type: the CPU's run on the host collectives, another
// type's on the collectives a plugin registered for its memory, or fail naming the missing ones.
void RegisterCollectiveKernels(KernelRegistry* r,  // on `device_type`
                               const std::string& device_type);

// The container of the step's own resources (TensorArrays, stacks): shared by every executor of
// the step, gone when the step ends. FailedPrecondition outside a Session step.
StatusOr<ResourceMgr*> StepResources(const KernelContext* c);
// Adds make(name) to the step's container as "<base>:<n>", n counting the calls with `counter`,
// so that every run of one node (every loop iteration) has its own resource; returns its handle.
template <typename T>
StatusOr<ResourceHandle> CreateStepResource(const KernelContext* c, const std::string& base,
                                            std::atomic<int64_t>* counter,
                                            const std::function<T*(const std::string&)>& make) {
  CFX_ASSIGN_OR_RETURN(ResourceMgr * resources, StepResources(c));
  ResourceHandle h;
  h.device = c->device->full_name();
  h.name = StrCat(base, ":", counter->fetch_add(1, std::memory_order_relaxed));
  h.type = T::kTypeName;
  auto created = resources->LookupOrCreate<T>(h.container, h.name,
                                              [&]() -> StatusOr<T*> { return make(h.name); });
  CFX_RETURN_IF_ERROR(created.status());
  return h;
}
// A kernel of an op on the step resource of type T whose handle is input 0: Run gets the resource
// and returns the op's status.
template <typename T>
class StepResourceKernel : public BuiltinKernel {
 public:
  void Compute(KernelContext* c) final {
    c->status = [&]() -> Status {
      CFX_ASSIGN_OR_RETURN(ResourceHandle h, HandleFromInput(c, 0));
      CFX_ASSIGN_OR_RETURN(ResourceMgr * resources, StepResources(c));
      CFX_ASSIGN_OR_RETURN(RefPtr<T> resource, resources->Lookup<T>(h.container, h.name));
      return Run(c, *resource);
    }();
  }

 protected:
  virtual Status Run(KernelContext* c, T& resource) = 0;
};

// Dequeues one element of the string queue named by input `index` (a reader's next file);
// done(error) when the queue is closed and empty (OutOfRange) or the step is cancelled.
void DequeueStringAsync(KernelContext* c, int index,
                        std::function<void(const Status&, std::string)> done);

}  // namespace cfx::internal

#endif  // CONFLUX_CORE_SRC_KERNELS_BUILTIN_H_
