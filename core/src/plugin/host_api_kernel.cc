// The kernel table of the host API (cfx_host_kernel_api): one kernel call's inputs, outputs,
// temporaries and error, where it runs (step, frame, iteration), its step's cancellation and the
// files it writes. A cfx_kernel_context* is the runtime's KernelContext*; a cfx_file* is a
// WritableFile* of the step's Env.
#include <algorithm>
#include <optional>

#include "conflux/env.h"
#include "plugin/abi_types.h"
#include "plugin/host_api_tables.h"
#include "runtime/kernel_context.h"
#include "runtime/step.h"

namespace cfx::internal {

bool CheckOutputIndex(const KernelContext* c, int i, cfx_status* s) {
  if (i >= 0 && i < static_cast<int>(c->outputs.size())) return true;
  SetError(s, errors::Internal("kernel of node ", *c->node_name, " used output index ", i,
                               "; the node has ", c->outputs.size(), " outputs"));
  return false;
}

namespace {

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

Allocator* OutputAllocator(const KernelContext* c, int i) {
  bool host = c->host_memory_outputs != nullptr && (*c->host_memory_outputs)[i];
  return host ? c->device->host_allocator() : c->device->allocator();
}

// The shape of `rank` dims from a kernel; InvalidArgument into `s` when it is not a valid shape.
std::optional<TensorShape> ShapeOf(const int64_t* dims, int rank, cfx_status* s) {
  auto shape = TensorShape::Make(std::span<const int64_t>(dims, std::max(rank, 0)));
  if (!shape.ok()) {
    SetError(s, shape.status());
    return std::nullopt;
  }
  return std::move(shape).value();
}

cfx_tensor* AllocateWith(Allocator* alloc, cfx_dtype dtype, const TensorShape& shape, Tensor* out,
                         cfx_status* s) {
  auto t = Tensor::Allocate(alloc, static_cast<DataType>(dtype), shape);
  if (!t.ok()) {
    SetError(s, t.status());
    return nullptr;
  }
  *out = std::move(t).value();
  return ToHandle(out);
}

cfx_tensor* AllocateOutputShaped(KernelContext* c, int i, const TensorShape& shape, cfx_status* s) {
  cfx_tensor* t =
      AllocateWith(OutputAllocator(c, i), CtxOutputDType(c, i), shape, &c->outputs[i], s);
  if (t) c->output_set[i] = true;
  return t;
}

cfx_tensor* CtxAllocateOutput(KernelContext* c, int i, const int64_t* dims, int rank,
                              cfx_status* s) {
  if (!CheckOutputIndex(c, i, s)) return nullptr;
  std::optional<TensorShape> shape = ShapeOf(dims, rank, s);
  return shape ? AllocateOutputShaped(c, i, *shape, s) : nullptr;
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
  std::optional<TensorShape> shape = ShapeOf(dims, rank, s);
  if (!shape) return;
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
  std::optional<TensorShape> shape = ShapeOf(dims, rank, s);
  if (!shape) return nullptr;
  for (int k = 0; k < n; ++k) {
    int in = candidates[k];
    if (in < 0 || in >= c->num_inputs) continue;
    Tensor& x = c->inputs[in];
    if (x.RefCountIsOne() && x.dtype() == static_cast<DataType>(CtxOutputDType(c, out_index)) &&
        x.num_elements() == shape->num_elements() &&
        x.buffer()->allocator() == OutputAllocator(c, out_index)) {
      auto reshaped = x.Reshaped(*shape);
      if (!reshaped.ok()) continue;
      c->outputs[out_index] = std::move(reshaped).value();
      c->output_set[out_index] = true;
      return ToHandle(&c->outputs[out_index]);
    }
  }
  return AllocateOutputShaped(c, out_index, *shape, s);
}

cfx_tensor* CtxAllocateTemp(KernelContext* c, cfx_dtype dtype, const int64_t* dims, int rank,
                            cfx_status* s) {
  std::optional<TensorShape> shape = ShapeOf(dims, rank, s);
  if (!shape) return nullptr;
  auto* holder = new Tensor();
  if (AllocateWith(c->device->allocator(), dtype, *shape, holder, s) == nullptr) {
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
const char* CtxNodeName(const KernelContext* c) { return c->node_name->c_str(); }

int64_t CtxStepId(const KernelContext* c) { return c->step != nullptr ? c->step->step_id : 0; }
int64_t CtxFrameId(const KernelContext* c) { return c->frame_id; }
int64_t CtxIteration(const KernelContext* c) { return c->iteration; }

// Null when nothing can cancel the call (it runs alone, outside a step).
CancellationManager* CancellationOf(const KernelContext* c) {
  return c->step != nullptr ? c->step->cancellation : nullptr;
}

// What register_cancellation returns outside a step: valid, and never called back.
constexpr cfx_cancel_token kNeverCancelled = 0;

cfx_cancel_token CtxRegisterCancellation(KernelContext* c, cfx_cancel_fn cb, void* arg) {
  CancellationManager* cm = CancellationOf(c);
  if (cm == nullptr) return kNeverCancelled;
  CancellationManager::Token t = cm->Register([cb, arg](const Status& s) {
    cfx_status why{s};
    if (cb != nullptr) cb(arg, &why);
  });
  return t == CancellationManager::kInvalidToken ? CFX_INVALID_CANCEL_TOKEN : t;
}

int CtxDeregisterCancellation(KernelContext* c, cfx_cancel_token token) {
  CancellationManager* cm = CancellationOf(c);
  if (cm == nullptr) return 1;
  if (token < 0) return 0;
  return cm->Deregister(token) ? 1 : 0;
}

// Files: through the Env of the call's step (the runtime's), Env::Default() outside a step.
Env* EnvOf(const KernelContext* c) {
  return c->step != nullptr && c->step->env != nullptr ? c->step->env : Env::Default();
}

// The handle of a file a kernel opened.
WritableFile* FileOf(cfx_file* f) { return reinterpret_cast<WritableFile*>(f); }

cfx_file* CtxFileOpen(KernelContext* c, const char* path, cfx_status* s) {
  auto file = EnvOf(c)->NewWritableFile(path);
  if (!file.ok()) {
    SetError(s, file.status());
    return nullptr;
  }
  return reinterpret_cast<cfx_file*>(file->release());
}
void FileAppend(cfx_file* f, const void* data, size_t size, cfx_status* s) {
  SetError(s, FileOf(f)->Append(std::string_view(static_cast<const char*>(data), size)));
}
void FileSync(cfx_file* f, cfx_status* s) { SetError(s, FileOf(f)->Sync()); }
void FileClose(cfx_file* f, cfx_status* s) {
  std::unique_ptr<WritableFile> file(FileOf(f));
  SetError(s, file->Close());
}
void CtxFileRename(KernelContext* c, const char* from, const char* to, cfx_status* s) {
  SetError(s, EnvOf(c)->RenameFile(from, to));
}
void CtxFileDelete(KernelContext* c, const char* path, cfx_status* s) {
  SetError(s, EnvOf(c)->DeleteFile(path));
}
void CtxFileCreateDir(KernelContext* c, const char* dir, cfx_status* s) {
  SetError(s, EnvOf(c)->CreateDir(dir));
}
void CtxFileSyncDir(KernelContext* c, const char* dir, cfx_status* s) {
  SetError(s, EnvOf(c)->SyncDir(dir));
}

}  // namespace

const cfx_host_kernel_api* HostKernelApi() {
  return StaticTable<cfx_host_kernel_api>([](cfx_host_kernel_api* a) {
    a->num_inputs = OnContext<CtxNumInputs>::Call;
    a->num_outputs = OnContext<CtxNumOutputs>::Call;
    a->input = OnContext<CtxInput>::Call;
    a->output_dtype = OnContext<CtxOutputDType>::Call;
    a->allocate_output = OnContext<CtxAllocateOutput>::Call;
    a->set_output = OnContext<CtxSetOutput>::Call;
    a->forward_or_allocate = OnContext<CtxForwardOrAllocate>::Call;
    a->allocate_temp = OnContext<CtxAllocateTemp>::Call;
    a->set_error = OnContext<CtxSetError>::Call;
    a->node_name = OnContext<CtxNodeName>::Call;
    a->set_output_reshaped = OnContext<CtxSetOutputReshaped>::Call;
    a->step_id = OnContext<CtxStepId>::Call;
    a->frame_id = OnContext<CtxFrameId>::Call;
    a->iteration = OnContext<CtxIteration>::Call;
    a->register_cancellation = OnContext<CtxRegisterCancellation>::Call;
    a->deregister_cancellation = OnContext<CtxDeregisterCancellation>::Call;
    a->file_open = OnContext<CtxFileOpen>::Call;
    a->file_append = FileAppend;
    a->file_sync = FileSync;
    a->file_close = FileClose;
    a->file_rename = OnContext<CtxFileRename>::Call;
    a->file_delete = OnContext<CtxFileDelete>::Call;
    a->file_create_dir = OnContext<CtxFileCreateDir>::Call;
    a->file_sync_dir = OnContext<CtxFileSyncDir>::Call;
  });
}

}  // namespace cfx::internal
