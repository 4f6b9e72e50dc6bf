// The state table of the host API (cfx_host_state_api): reference inputs (VariableV2) and
// resource variables (VarHandleOp) as kernels see them.
#include "plugin/abi_types.h"
#include "plugin/host_api_tables.h"
#include "runtime/copy_tensor.h"
#include "runtime/kernel_context.h"

namespace cfx::internal {
namespace {

int CtxInputIsRef(const KernelContext* c, int i) { return c->ref_input(i) != nullptr; }
void CtxRefInputLock(KernelContext* c, int i) {
  if (Var* v = c->ref_input(i)) v->mu().lock();
}
void CtxRefInputUnlock(KernelContext* c, int i) {
  if (Var* v = c->ref_input(i)) v->mu().unlock();
}
void CtxRefInputAssign(KernelContext* c, int i, const cfx_tensor* t, cfx_status* s) {
  Var* v = c->ref_input(i);
  if (v == nullptr) {
    SetError(s,
             errors::InvalidArgument("node ", *c->node_name, ": input ", i, " is not a reference"));
    return;
  }
  *v->tensor() = *FromHandle(t);
  c->inputs[i] = *FromHandle(t);
}
void CtxForwardRefInput(KernelContext* c, int in, int out, cfx_status* s) {
  if (c->ref_input(in) == nullptr || !CheckOutputIndex(c, out, s)) {
    if (s->status.ok())
      SetError(s, errors::InvalidArgument("node ", *c->node_name, ": input ", in,
                                          " is not a reference"));
    return;
  }
  if (c->output_refs.size() < c->outputs.size()) c->output_refs.resize(c->outputs.size());
  c->output_refs[out] = c->input_refs[in];
}
cfx_variable* CtxInputVariable(KernelContext* c, int i, int create, cfx_status* s) {
  if (i < 0 || i >= c->num_inputs || c->inputs[i].dtype() != DT_RESOURCE ||
      c->inputs[i].num_elements() != 1) {
    SetError(s, errors::InvalidArgument("node ", *c->node_name, ": input ", i,
                                        " is not a scalar resource handle"));
    return nullptr;
  }
  auto h = ResourceHandle::Decode(c->inputs[i].data<std::string>()[0]);
  if (!h.ok()) {
    SetError(s, h.status());
    return nullptr;
  }
  if (h->device != c->device->full_name()) {
    SetError(s, errors::InvalidArgument("node ", *c->node_name, ": resource ", h->DebugString(),
                                        " is used on ", c->device->full_name()));
    return nullptr;
  }
  StatusOr<RefPtr<Var>> var =
      create ? c->device->resource_mgr()->LookupOrCreate<Var>(h->container, h->name,
                                                              [&]() -> StatusOr<Var*> {
                                                                auto* v = new Var();
                                                                v->name = h->name;
                                                                return v;
                                                              })
             : c->device->resource_mgr()->Lookup<Var>(h->container, h->name);
  if (!var.ok()) {
    SetError(s, var.status().code() == Code::kNotFound
                    ? errors::FailedPrecondition(
                          "node ", *c->node_name,
                          ": reading an uninitialized variable: ", var.status().message())
                    : var.status());
    return nullptr;
  }
  return new cfx_variable{*std::move(var)};
}
void VariableLock(cfx_variable* v, int exclusive) {
  if (exclusive)
    v->var->mu().lock();
  else
    v->var->mu().lock_shared();
}
void VariableUnlock(cfx_variable* v, int exclusive) {
  if (exclusive)
    v->var->mu().unlock();
  else
    v->var->mu().unlock_shared();
}
const cfx_tensor* VariableTensor(cfx_variable* v) {
  return v->var->initialized() ? ToHandle(v->var->tensor()) : nullptr;
}
cfx_tensor* VariableTensorForUpdate(KernelContext* c, cfx_variable* v, cfx_status* s) {
  Tensor* t = v->var->tensor();
  if (!t->IsInitialized()) {
    SetError(s, errors::FailedPrecondition("node ", *c->node_name,
                                           ": updating an uninitialized variable ", v->var->name));
    return nullptr;
  }
  if (!t->RefCountIsOne()) {  // a reader still holds the buffer: copy on write
    auto copy = CopyTensorSync(c->device, c->device, *t, {.new_buffer = true});
    if (!copy.ok()) {
      SetError(s, copy.status());
      return nullptr;
    }
    *t = *std::move(copy);
  }
  return ToHandle(t);
}
void VariableAssign(cfx_variable* v, const cfx_tensor* t, cfx_status* s) {
  (void)s;
  if (v->var->dtype == DT_INVALID) v->var->dtype = FromHandle(t)->dtype();
  *v->var->tensor() = *FromHandle(t);
}
void VariableRelease(cfx_variable* v) { delete v; }

}  // namespace

const cfx_host_state_api* HostStateApi() {
  return StaticTable<cfx_host_state_api>([](cfx_host_state_api* a) {
    a->input_is_ref = OnContext<CtxInputIsRef>::Call;
    a->ref_input_lock = OnContext<CtxRefInputLock>::Call;
    a->ref_input_unlock = OnContext<CtxRefInputUnlock>::Call;
    a->ref_input_assign = OnContext<CtxRefInputAssign>::Call;
    a->forward_ref_input = OnContext<CtxForwardRefInput>::Call;
    a->input_variable = OnContext<CtxInputVariable>::Call;
    a->variable_lock = VariableLock;
    a->variable_unlock = VariableUnlock;
    a->variable_tensor = VariableTensor;
    a->variable_tensor_for_update = OnContext<VariableTensorForUpdate>::Call;
    a->variable_assign = VariableAssign;
    a->variable_release = VariableRelease;
  });
}

}  // namespace cfx::internal
