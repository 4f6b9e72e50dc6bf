// The host function table handed to plugins: each function adapts the C ABI to core C++ types.
// No exception may leave these functions (they run inside plugin call stacks).
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "conflux/allocator.h"
#include "kernels/builtin.h"
#include "plugin/abi_types.h"
#include "plugin/gradient_abi.h"
#include "plugin/log.h"
#include "plugin/plugin_device.h"
#include "plugin/plugin_kernel.h"
#include "plugin/plugin_struct.h"
#include "runtime/copy_tensor.h"

namespace cfx::internal {
namespace {

void SetError(cfx_status* s, Status error) {
  if (s != nullptr) s->status = std::move(error);
}

// A registration error: reported to the plugin and remembered by the registrar, so that a
// plugin that ignores it still fails to load.
void RegistrationError(cfx_registrar* r, cfx_status* s, Status error) {
  if (r->first_error.ok()) r->first_error = error;
  SetError(s, std::move(error));
}

// ---- status ----
void StatusSet(cfx_status* s, cfx_code code, const char* message) {
  s->status = Status(static_cast<Code>(code), message ? message : "");
}
cfx_code StatusCode(const cfx_status* s) { return static_cast<cfx_code>(s->status.code()); }
const char* StatusMessage(const cfx_status* s) { return s->status.message().c_str(); }
cfx_status* StatusNew() { return new cfx_status(); }
void StatusDelete(cfx_status* s) { delete s; }

void Log(cfx_log_level level, const char* message) {
  LogMessage(static_cast<LogLevel>(level), message ? message : "");
}

// ---- op registration ----
cfx_op_builder* OpBuilderNew(const char* name) { return new cfx_op_builder(name ? name : ""); }
void OpBuilderInput(cfx_op_builder* b, const char* spec) { b->builder.Input(spec ? spec : ""); }
void OpBuilderOutput(cfx_op_builder* b, const char* spec) { b->builder.Output(spec ? spec : ""); }
void OpBuilderAttr(cfx_op_builder* b, const char* spec) { b->builder.Attr(spec ? spec : ""); }
void OpBuilderSetStateful(cfx_op_builder* b, int v) { b->builder.SetIsStateful(v != 0); }
void OpBuilderSetShapeFn(cfx_op_builder* b, cfx_shape_fn fn) {
  if (fn) b->builder.SetShapeFn(WrapShapeFn(fn));
}

void RegisterOp(cfx_registrar* r, cfx_op_builder* b, cfx_status* s) {
  std::unique_ptr<cfx_op_builder> owned(b);
  auto reg = b->builder.Build();
  if (!reg.ok())
    return RegistrationError(r, s, reg.status().WithPrefix("plugin " + r->plugin + ": "));
  const std::string& name = reg->def.name;
  if (const OpRegistration* existing = r->ops->LookUp(name))
    return RegistrationError(
        r, s,
        errors::AlreadyExists("plugin ", r->plugin, ": duplicate registration of op ", name,
                              " (already registered by ", existing->registered_by, ")"));
  for (const OpRegistration& o : r->staged_ops)
    if (o.def.name == name)
      return RegistrationError(
          r, s, errors::AlreadyExists("plugin ", r->plugin, " registers op ", name, " twice"));
  reg->registered_by = r->plugin;
  r->staged_ops.push_back(std::move(reg).value());
}

// ---- kernel registration ----
cfx_kernel_builder* KernelBuilderNew(const char* op, const char* device_type,
                                     cfx_kernel_create_fn create, cfx_kernel_compute_fn compute,
                                     cfx_kernel_compute_async_fn compute_async,
                                     cfx_kernel_destroy_fn destroy) {
  auto* b = new cfx_kernel_builder();
  b->def.op = op ? op : "";
  b->def.device_type = device_type ? device_type : "";
  b->functions = {create, compute, compute_async, destroy};
  return b;
}
void KernelBuilderTypeConstraint(cfx_kernel_builder* b, const char* attr, cfx_dtype dtype) {
  b->def.type_constraints[attr ? attr : ""].push_back(static_cast<DataType>(dtype));
}
void KernelBuilderHostMemory(cfx_kernel_builder* b, const char* arg) {
  b->def.host_memory_args.insert(arg ? arg : "");
}
void KernelBuilderSetFlags(cfx_kernel_builder* b, uint32_t flags) { b->def.flags = flags; }

bool SameKernel(const KernelDef& a, const KernelDef& b) {
  return a.op == b.op && a.device_type == b.device_type && a.type_constraints == b.type_constraints;
}

void RegisterKernel(cfx_registrar* r, cfx_kernel_builder* b, cfx_status* s) {
  std::unique_ptr<cfx_kernel_builder> owned(b);
  KernelDef& def = b->def;
  def.registered_by = r->plugin;
  auto fail = [&](const std::string& msg) {
    RegistrationError(
        r, s,
        errors::InvalidArgument("plugin ", r->plugin, ": kernel ", def.DebugString(), ": ", msg));
  };
  if (def.op.empty() || def.device_type.empty()) return fail("op and device type are required");
  const PluginKernelFunctions& f = b->functions;
  if (f.compute == nullptr && f.compute_async == nullptr)
    return fail("needs a compute or compute_async function");
  if (f.create == nullptr) return fail("needs a create function");
  def.create = PluginKernelFactory(f);
  for (const KernelDef* k : r->kernels->All())
    if (SameKernel(*k, def))
      return RegistrationError(
          r, s,
          errors::AlreadyExists("plugin ", r->plugin, ": duplicate registration of kernel ",
                                def.DebugString(), " (already registered by ", k->registered_by,
                                ")"));
  for (const KernelDef& k : r->staged_kernels)
    if (SameKernel(k, def))
      return RegistrationError(r, s,
                               errors::AlreadyExists("plugin ", r->plugin, " registers kernel ",
                                                     def.DebugString(), " twice"));
  r->staged_kernels.push_back(std::move(def));
}

void RegisterDeviceType(cfx_registrar* r, const cfx_device_type_desc* desc, cfx_status* s) {
  // Sizes first: nothing past a struct's struct_size may be read.
  const std::string owner = "plugin " + r->plugin;
  if (desc != nullptr) {
    Status size = CheckStructSize(desc, owner);
    if (size.ok() && desc->funcs != nullptr)
      size = CheckStructSize(desc->funcs, owner + ": device type " +
                                              (desc->type != nullptr ? desc->type : "(unnamed)"));
    if (!size.ok()) return RegistrationError(r, s, std::move(size));
  }
  if (desc == nullptr || desc->type == nullptr || desc->funcs == nullptr ||
      desc->create_device == nullptr || desc->funcs->allocate == nullptr ||
      desc->funcs->deallocate == nullptr)
    return RegistrationError(
        r, s,
        errors::InvalidArgument("plugin ", r->plugin,
                                ": device type descriptor needs a type name, create_device and "
                                "allocate/deallocate functions"));
  std::string type = desc->type;
  bool valid = !type.empty() && std::all_of(type.begin(), type.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
  if (!valid)
    return RegistrationError(r, s,
                             errors::InvalidArgument("plugin ", r->plugin, ": device type name '",
                                                     type, "' must match [A-Z0-9_]+"));
  auto it = r->device_types->find(type);
  if (it != r->device_types->end())
    return RegistrationError(
        r, s,
        errors::AlreadyExists("plugin ", r->plugin, ": duplicate registration of device type ",
                              type, " (already registered by ", it->second, ")"));
  for (const cfx_device_type_desc* d : r->staged_device_types)
    if (type == d->type)
      return RegistrationError(
          r, s,
          errors::AlreadyExists("plugin ", r->plugin, " registers device type ", type, " twice"));
  r->staged_device_types.push_back(desc);
}

// ---- attrs ----
const AttrValue* FindAttr(const cfx_attrs* a, const char* name, AttrValue::Kind kind,
                          const char* kind_name, cfx_status* s) {
  const AttrValue* v = FindAttrOrDefault(*a->node, *a->op, name);
  if (v == nullptr) {
    SetError(s, errors::NotFound("node ", a->node->name, " (op ", a->op->name, ") has no attr '",
                                 name, "'"));
    return nullptr;
  }
  if (v->kind != kind) {
    SetError(s, errors::InvalidArgument("node ", a->node->name, " (op ", a->op->name, "): attr '",
                                        name, "' is ", v->KindName(), "; expected ", kind_name));
    return nullptr;
  }
  return v;
}

const char* AttrsNodeName(const cfx_attrs* a) { return a->node->name.c_str(); }
int AttrExists(const cfx_attrs* a, const char* name) {
  return FindAttrOrDefault(*a->node, *a->op, name) != nullptr;
}
void AttrGetInt(const cfx_attrs* a, const char* name, int64_t* out, cfx_status* s) {
  if (auto* v = FindAttr(a, name, AttrValue::Kind::kInt, "int", s)) *out = v->i;
}
void AttrGetFloat(const cfx_attrs* a, const char* name, float* out, cfx_status* s) {
  if (auto* v = FindAttr(a, name, AttrValue::Kind::kFloat, "float", s)) *out = v->f;
}
void AttrGetBool(const cfx_attrs* a, const char* name, uint8_t* out, cfx_status* s) {
  if (auto* v = FindAttr(a, name, AttrValue::Kind::kBool, "bool", s)) *out = v->b ? 1 : 0;
}
void AttrGetType(const cfx_attrs* a, const char* name, cfx_dtype* out, cfx_status* s) {
  if (auto* v = FindAttr(a, name, AttrValue::Kind::kType, "type", s))
    *out = static_cast<cfx_dtype>(v->type);
}
void AttrGetString(const cfx_attrs* a, const char* name, const char** data, size_t* size,
                   cfx_status* s) {
  if (auto* v = FindAttr(a, name, AttrValue::Kind::kString, "string", s)) {
    *data = v->s.data();
    *size = v->s.size();
  }
}
void AttrGetShape(const cfx_attrs* a, const char* name, int64_t* dims, int max_rank, int* rank,
                  cfx_status* s) {
  auto* v = FindAttr(a, name, AttrValue::Kind::kShape, "shape", s);
  if (v == nullptr) return;
  if (v->shape.rank() > max_rank)
    return SetError(s,
                    errors::InvalidArgument("node ", a->node->name, ": attr '", name, "' has rank ",
                                            v->shape.rank(), ", more than ", max_rank));
  *rank = v->shape.rank();
  for (int i = 0; i < v->shape.rank(); ++i) dims[i] = v->shape.dim(i);
}
const AttrValue* FindList(const cfx_attrs* a, const char* name, cfx_status* s) {
  return FindAttr(a, name, AttrValue::Kind::kList, "a list", s);
}
void AttrGetListSize(const cfx_attrs* a, const char* name, int64_t* size, cfx_status* s) {
  const AttrValue* v = FindList(a, name, s);
  if (v == nullptr) return;
  const auto& l = v->list;
  *size =
      static_cast<int64_t>(std::max({l.s.size(), l.i.size(), l.f.size(), l.b.size(), l.type.size(),
                                     l.shape.size(), l.tensor.size(), l.func.size()}));
}
template <typename Out, typename In>
void CopyList(const cfx_attrs* a, const char* name, const std::vector<In>& src, Out* out,
              int64_t max, cfx_status* s) {
  if (static_cast<int64_t>(src.size()) > max)
    return SetError(s, errors::InvalidArgument("node ", a->node->name, ": attr '", name, "' has ",
                                               src.size(), " elements; buffer holds ", max));
  for (size_t i = 0; i < src.size(); ++i) out[i] = static_cast<Out>(src[i]);
}
void AttrGetIntList(const cfx_attrs* a, const char* name, int64_t* out, int64_t max,
                    cfx_status* s) {
  if (auto* v = FindList(a, name, s)) CopyList(a, name, v->list.i, out, max, s);
}
void AttrGetFloatList(const cfx_attrs* a, const char* name, float* out, int64_t max,
                      cfx_status* s) {
  if (auto* v = FindList(a, name, s)) CopyList(a, name, v->list.f, out, max, s);
}
void AttrGetTypeList(const cfx_attrs* a, const char* name, cfx_dtype* out, int64_t max,
                     cfx_status* s) {
  if (auto* v = FindList(a, name, s)) CopyList(a, name, v->list.type, out, max, s);
}
cfx_tensor* AttrGetTensor(const cfx_attrs* a, const char* name, cfx_status* s) {
  auto* v = FindAttr(a, name, AttrValue::Kind::kTensor, "tensor", s);
  return v ? ToHandle(new Tensor(v->tensor)) : nullptr;
}

// ---- tensors ----
cfx_dtype TensorDType(const cfx_tensor* t) {
  return static_cast<cfx_dtype>(FromHandle(t)->dtype());
}
int TensorRank(const cfx_tensor* t) { return FromHandle(t)->rank(); }
int64_t TensorDim(const cfx_tensor* t, int i) {
  const Tensor* x = FromHandle(t);
  return i >= 0 && i < x->rank() ? x->dim(i) : -1;
}
int64_t TensorNumElements(const cfx_tensor* t) { return FromHandle(t)->num_elements(); }
size_t TensorByteSize(const cfx_tensor* t) { return FromHandle(t)->TotalBytes(); }
void* TensorData(const cfx_tensor* t) { return FromHandle(t)->raw_data(); }
cfx_tensor* TensorShare(const cfx_tensor* t) { return ToHandle(new Tensor(*FromHandle(t))); }
void TensorRelease(cfx_tensor* t) { delete FromHandle(t); }
const char* TensorString(const cfx_tensor* t, int64_t i, size_t* size) {
  const Tensor* x = FromHandle(t);
  if (x->dtype() != DT_STRING || i < 0 || i >= x->num_elements()) {
    *size = 0;
    return "";
  }
  const std::string& v = x->data<std::string>()[i];
  *size = v.size();
  return v.data();
}
void TensorSetString(cfx_tensor* t, int64_t i, const char* data, size_t size) {
  Tensor* x = FromHandle(t);
  if (x->dtype() == DT_STRING && i >= 0 && i < x->num_elements())
    x->data<std::string>()[i].assign(data, size);
}
cfx_tensor* TensorNewHost(cfx_dtype dtype, const int64_t* dims, int rank, cfx_status* s) {
  if (!IsValidDataType(dtype) ||
      (DataTypeSize(static_cast<DataType>(dtype)) == 0 && dtype != CFX_STRING)) {
    SetError(s, errors::InvalidArgument("cannot make a host tensor of dtype ",
                                        DataTypeString(static_cast<DataType>(dtype))));
    return nullptr;
  }
  auto shape = TensorShape::Make(std::vector<int64_t>(dims, dims + std::max(rank, 0)));
  if (!shape.ok()) {
    SetError(s, shape.status());
    return nullptr;
  }
  auto t = Tensor::Allocate(HostAllocator(), static_cast<DataType>(dtype), *shape);
  if (!t.ok()) {
    SetError(s, t.status());
    return nullptr;
  }
  return ToHandle(new Tensor(std::move(t).value()));
}

// ---- kernel context ----
// A cfx_kernel_context* is the runtime's KernelContext*: the functions below take the C++ type,
// and OnContext<F>::Call is the C entry point that converts the handle.
template <auto F>
struct OnContext;
template <typename R, typename... A, R (*F)(KernelContext*, A...)>
struct OnContext<F> {
  static R Call(cfx_kernel_context* c, A... a) { return F(FromHandle(c), a...); }
};
template <typename R, typename... A, R (*F)(const KernelContext*, A...)>
struct OnContext<F> {
  static R Call(const cfx_kernel_context* c, A... a) { return F(FromHandle(c), a...); }
};

int CtxNumInputs(const KernelContext* c) { return c->num_inputs; }
int CtxNumOutputs(const KernelContext* c) { return static_cast<int>(c->outputs.size()); }
const cfx_tensor* CtxInput(const KernelContext* c, int i) {
  if (i < 0 || i >= c->num_inputs) return nullptr;
  return ToHandle(&c->inputs[i]);
}
cfx_dtype CtxOutputDType(const KernelContext* c, int i) {
  if (i < 0 || i >= static_cast<int>(c->output_types->size())) return CFX_INVALID;
  return static_cast<cfx_dtype>(BaseType((*c->output_types)[i]));
}

bool CheckOutputIndex(const KernelContext* c, int i, cfx_status* s) {
  if (i >= 0 && i < static_cast<int>(c->outputs.size())) return true;
  SetError(s, errors::Internal("kernel of node ", *c->node_name, " used output index ", i,
                               "; the node has ", c->outputs.size(), " outputs"));
  return false;
}

Allocator* OutputAllocator(const KernelContext* c, int i) {
  bool host = c->host_memory_outputs != nullptr && (*c->host_memory_outputs)[i];
  return host ? c->device->host_allocator() : c->device->allocator();
}

cfx_tensor* AllocateWith(Allocator* alloc, cfx_dtype dtype, const int64_t* dims, int rank,
                         Tensor* out, cfx_status* s) {
  auto shape = TensorShape::Make(std::vector<int64_t>(dims, dims + std::max(rank, 0)));
  if (!shape.ok()) {
    SetError(s, shape.status());
    return nullptr;
  }
  auto t = Tensor::Allocate(alloc, static_cast<DataType>(dtype), *shape);
  if (!t.ok()) {
    SetError(s, t.status());
    return nullptr;
  }
  *out = std::move(t).value();
  return ToHandle(out);
}

cfx_tensor* CtxAllocateOutput(KernelContext* c, int i, const int64_t* dims, int rank,
                              cfx_status* s) {
  if (!CheckOutputIndex(c, i, s)) return nullptr;
  cfx_tensor* t =
      AllocateWith(OutputAllocator(c, i), CtxOutputDType(c, i), dims, rank, &c->outputs[i], s);
  if (t) c->output_set[i] = true;
  return t;
}

void CtxSetOutput(KernelContext* c, int i, const cfx_tensor* t, cfx_status* s) {
  if (!CheckOutputIndex(c, i, s)) return;
  const Tensor* x = FromHandle(t);
  if (x->dtype() != static_cast<DataType>(CtxOutputDType(c, i)))
    return SetError(s,
                    errors::Internal("kernel of node ", *c->node_name, " set output ", i, " to a ",
                                     DataTypeString(x->dtype()), " tensor; expected ",
                                     DataTypeString(static_cast<DataType>(CtxOutputDType(c, i)))));
  c->outputs[i] = *x;
  c->output_set[i] = true;
}

void CtxSetOutputReshaped(KernelContext* c, int i, const cfx_tensor* t, const int64_t* dims,
                          int rank, cfx_status* s) {
  if (!CheckOutputIndex(c, i, s)) return;
  auto shape = TensorShape::Make(std::vector<int64_t>(dims, dims + std::max(rank, 0)));
  if (!shape.ok()) return SetError(s, shape.status());
  const Tensor* x = FromHandle(t);
  if (x->dtype() != static_cast<DataType>(CtxOutputDType(c, i)))
    return SetError(s, errors::Internal("kernel of node ", *c->node_name, " set output ", i,
                                        " to a ", DataTypeString(x->dtype()), " tensor"));
  auto reshaped = x->Reshaped(*shape);
  if (!reshaped.ok()) return SetError(s, reshaped.status());
  c->outputs[i] = std::move(reshaped).value();
  c->output_set[i] = true;
}

cfx_tensor* CtxForwardOrAllocate(KernelContext* c, const int* candidates, int n, int out_index,
                                 const int64_t* dims, int rank, cfx_status* s) {
  if (!CheckOutputIndex(c, out_index, s)) return nullptr;
  int64_t elements = 1;
  for (int d = 0; d < rank; ++d) elements *= dims[d];
  for (int k = 0; k < n; ++k) {
    int in = candidates[k];
    if (in < 0 || in >= c->num_inputs) continue;
    Tensor& x = c->inputs[in];
    if (x.RefCountIsOne() && x.dtype() == static_cast<DataType>(CtxOutputDType(c, out_index)) &&
        x.num_elements() == elements && x.buffer()->allocator() == OutputAllocator(c, out_index)) {
      auto reshaped = x.Reshaped(TensorShape(std::vector<int64_t>(dims, dims + rank)));
      if (!reshaped.ok()) continue;
      c->outputs[out_index] = std::move(reshaped).value();
      c->output_set[out_index] = true;
      return ToHandle(&c->outputs[out_index]);
    }
  }
  return CtxAllocateOutput(c, out_index, dims, rank, s);
}

cfx_tensor* CtxAllocateTemp(KernelContext* c, cfx_dtype dtype, const int64_t* dims, int rank,
                            cfx_status* s) {
  auto* holder = new Tensor();
  if (AllocateWith(c->device->allocator(), dtype, dims, rank, holder, s) == nullptr) {
    delete holder;
    return nullptr;
  }
  return ToHandle(holder);
}

void CtxSetError(KernelContext* c, cfx_code code, const char* message) {
  if (c->status.ok())
    c->status =
        Status(code == CFX_OK ? Code::kUnknown : static_cast<Code>(code), message ? message : "");
}
cfx_device* CtxDevice(const KernelContext* c) { return PluginDevice::Of(*c->device).handle(); }
cfx_stream* CtxStream(const KernelContext* c) { return c->stream; }
const char* CtxNodeName(const KernelContext* c) { return c->node_name->c_str(); }
void CtxParallelFor(KernelContext* c, int64_t total, int64_t cost, cfx_range_fn fn, void* arg) {
  c->device->ParallelFor(total, cost, [&](int64_t b, int64_t e) { fn(arg, b, e); });
}

// ---- shape context ----
const cfx_attrs* ShapeAttrs(const cfx_shape_context* c) { return &c->attrs; }
int ShapeNumInputs(const cfx_shape_context* c) { return c->ic->num_inputs(); }
int ShapeNumOutputs(const cfx_shape_context* c) { return c->ic->num_outputs(); }
int ShapeInputRank(const cfx_shape_context* c, int i) {
  return i >= 0 && i < c->ic->num_inputs() ? c->ic->input(i).rank() : -1;
}
int64_t ShapeInputDim(const cfx_shape_context* c, int i, int d) {
  if (i < 0 || i >= c->ic->num_inputs()) return -1;
  const PartialTensorShape& s = c->ic->input(i);
  return d >= 0 && d < s.rank() ? s.dim(d) : -1;
}
const cfx_tensor* ShapeInputTensor(const cfx_shape_context* c, int i) {
  const Tensor* t = i >= 0 && i < c->ic->num_inputs() ? c->ic->input_tensor(i) : nullptr;
  return t ? ToHandle(t) : nullptr;
}
void ShapeSetOutput(cfx_shape_context* c, int i, const int64_t* dims, int rank) {
  if (i < 0 || i >= c->ic->num_outputs()) return;
  if (rank < 0)
    c->ic->set_output(i, PartialTensorShape::UnknownRank());
  else
    c->ic->set_output(i, PartialTensorShape(std::vector<int64_t>(dims, dims + rank)));
}

// ---- Minor 1: state.
Var* RefInput(const KernelContext* c, int i) {
  if (c->input_refs == nullptr || i < 0 || i >= c->num_inputs) return nullptr;
  return c->input_refs[i].get();
}
int CtxInputIsRef(const KernelContext* c, int i) { return RefInput(c, i) != nullptr; }
void CtxRefInputLock(KernelContext* c, int i) {
  if (Var* v = RefInput(c, i)) v->mu().lock();
}
void CtxRefInputUnlock(KernelContext* c, int i) {
  if (Var* v = RefInput(c, i)) v->mu().unlock();
}
void CtxRefInputAssign(KernelContext* c, int i, const cfx_tensor* t, cfx_status* s) {
  Var* v = RefInput(c, i);
  if (v == nullptr) {
    SetError(s,
             errors::InvalidArgument("node ", *c->node_name, ": input ", i, " is not a reference"));
    return;
  }
  *v->tensor() = *FromHandle(t);
  c->inputs[i] = *FromHandle(t);
}
void CtxForwardRefInput(KernelContext* c, int in, int out, cfx_status* s) {
  if (RefInput(c, in) == nullptr || !CheckOutputIndex(c, out, s)) {
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

cfx_host_api MakeHostApi() {
  cfx_host_api h{};
  h.struct_size = sizeof(cfx_host_api);
  h.abi_major = CFX_ABI_MAJOR;
  h.abi_minor = CFX_ABI_MINOR;
  h.status_set = StatusSet;
  h.status_code = StatusCode;
  h.status_message = StatusMessage;
  h.status_new = StatusNew;
  h.status_delete = StatusDelete;
  h.log = Log;
  h.op_builder_new = OpBuilderNew;
  h.op_builder_input = OpBuilderInput;
  h.op_builder_output = OpBuilderOutput;
  h.op_builder_attr = OpBuilderAttr;
  h.op_builder_set_stateful = OpBuilderSetStateful;
  h.op_builder_set_shape_fn = OpBuilderSetShapeFn;
  h.register_op = RegisterOp;
  h.kernel_builder_new = KernelBuilderNew;
  h.kernel_builder_type_constraint = KernelBuilderTypeConstraint;
  h.kernel_builder_host_memory = KernelBuilderHostMemory;
  h.kernel_builder_set_flags = KernelBuilderSetFlags;
  h.register_kernel = RegisterKernel;
  h.register_device_type = RegisterDeviceType;
  h.attrs_node_name = AttrsNodeName;
  h.attr_exists = AttrExists;
  h.attr_get_int = AttrGetInt;
  h.attr_get_float = AttrGetFloat;
  h.attr_get_bool = AttrGetBool;
  h.attr_get_type = AttrGetType;
  h.attr_get_string = AttrGetString;
  h.attr_get_shape = AttrGetShape;
  h.attr_get_list_size = AttrGetListSize;
  h.attr_get_int_list = AttrGetIntList;
  h.attr_get_float_list = AttrGetFloatList;
  h.attr_get_type_list = AttrGetTypeList;
  h.attr_get_tensor = AttrGetTensor;
  h.tensor_dtype = TensorDType;
  h.tensor_rank = TensorRank;
  h.tensor_dim = TensorDim;
  h.tensor_num_elements = TensorNumElements;
  h.tensor_byte_size = TensorByteSize;
  h.tensor_data = TensorData;
  h.tensor_share = TensorShare;
  h.tensor_release = TensorRelease;
  h.tensor_string = TensorString;
  h.tensor_set_string = TensorSetString;
  h.tensor_new_host = TensorNewHost;
  h.ctx_num_inputs = OnContext<CtxNumInputs>::Call;
  h.ctx_num_outputs = OnContext<CtxNumOutputs>::Call;
  h.ctx_input = OnContext<CtxInput>::Call;
  h.ctx_output_dtype = OnContext<CtxOutputDType>::Call;
  h.ctx_allocate_output = OnContext<CtxAllocateOutput>::Call;
  h.ctx_set_output = OnContext<CtxSetOutput>::Call;
  h.ctx_forward_or_allocate = OnContext<CtxForwardOrAllocate>::Call;
  h.ctx_allocate_temp = OnContext<CtxAllocateTemp>::Call;
  h.ctx_set_error = OnContext<CtxSetError>::Call;
  h.ctx_device = OnContext<CtxDevice>::Call;
  h.ctx_stream = OnContext<CtxStream>::Call;
  h.ctx_node_name = OnContext<CtxNodeName>::Call;
  h.ctx_parallel_for = OnContext<CtxParallelFor>::Call;
  h.shape_attrs = ShapeAttrs;
  h.shape_num_inputs = ShapeNumInputs;
  h.shape_num_outputs = ShapeNumOutputs;
  h.shape_input_rank = ShapeInputRank;
  h.shape_input_dim = ShapeInputDim;
  h.shape_input_tensor = ShapeInputTensor;
  h.shape_set_output = ShapeSetOutput;
  h.ctx_set_output_reshaped = OnContext<CtxSetOutputReshaped>::Call;
  h.ctx_input_is_ref = OnContext<CtxInputIsRef>::Call;
  h.ctx_ref_input_lock = OnContext<CtxRefInputLock>::Call;
  h.ctx_ref_input_unlock = OnContext<CtxRefInputUnlock>::Call;
  h.ctx_ref_input_assign = OnContext<CtxRefInputAssign>::Call;
  h.ctx_forward_ref_input = OnContext<CtxForwardRefInput>::Call;
  h.ctx_input_variable = OnContext<CtxInputVariable>::Call;
  h.variable_lock = VariableLock;
  h.variable_unlock = VariableUnlock;
  h.variable_tensor = VariableTensor;
  h.variable_tensor_for_update = OnContext<VariableTensorForUpdate>::Call;
  h.variable_assign = VariableAssign;
  h.variable_release = VariableRelease;
  AddGradientFunctions(&h);
  return h;
}

}  // namespace

const cfx_host_api* HostApi() {
  static const cfx_host_api api = MakeHostApi();
  return &api;
}

ShapeFn WrapShapeFn(cfx_shape_fn fn) {
  return [fn](InferenceContext& ic) -> Status {
    cfx_shape_context c{&ic, cfx_attrs{&ic.node(), &ic.op()}};
    cfx_status s;
    fn(&c, &s);
    return s.status;
  };
}

}  // namespace cfx::internal
