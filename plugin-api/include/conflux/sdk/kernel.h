// Conflux plugin SDK: kernels and shape functions.
//
// A kernel is a C++ class with a default constructor, an optional
//   Status Init(const KernelInit& init)     // once per node: read and validate attrs
// and
//   Status Compute(KernelContext& ctx)      // once per step; return an error, never throw
// Register it with Registrar::Kernel<K>(op, device_type). Compute may run concurrently on
// several threads for different steps: keep per-step state in locals.
#ifndef CONFLUX_SDK_KERNEL_H_
#define CONFLUX_SDK_KERNEL_H_

#include <exception>
#include <new>
#include <type_traits>
#include <utility>

#include "conflux/sdk/file.h"
#include "conflux/sdk/tensor.h"

namespace cfx::sdk {

// What a kernel sees while it is being built.
class KernelInit {
 public:
  KernelInit(const cfx_attrs* attrs, cfx_device* device) : attrs_(attrs), device_(device) {}
  const Attrs& attrs() const { return attrs_; }
  cfx_device* device() const { return device_; }
  std::string node_name() const { return attrs_.node_name(); }

 private:
  Attrs attrs_;
  cfx_device* device_;
};

class KernelContext;

namespace internal {
// Inside a catch block: the exception as an error: RESOURCE_EXHAUSTED for std::bad_alloc,
// INTERNAL for anything else.
inline Status FromException() {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    return ResourceExhausted("out of host memory in plugin (std::bad_alloc)");
  } catch (const std::exception& e) {
    return Internal("uncaught exception in plugin: ", e.what());
  } catch (...) {
    return Internal("uncaught non-standard exception in plugin");
  }
}
}  // namespace internal

// A resource variable reached through a DT_RESOURCE input (ABI minor 1). Owns its reference.
// Read or update the value only between Lock and Unlock.
class Variable {
 public:
  Variable() = default;
  explicit Variable(cfx_variable* v) : v_(v) {}
  Variable(Variable&& o) noexcept : v_(std::exchange(o.v_, nullptr)) {}
  Variable& operator=(Variable&& o) noexcept {
    std::swap(v_, o.v_);
    return *this;
  }
  ~Variable() {
    if (v_ != nullptr) Host().state->variable_release(v_);
  }
  void Lock(bool exclusive) { Host().state->variable_lock(v_, exclusive ? 1 : 0); }
  void Unlock(bool exclusive) { Host().state->variable_unlock(v_, exclusive ? 1 : 0); }
  // The value; invalid when the variable has none yet.
  Tensor value() const { return Tensor(Host().state->variable_tensor(v_)); }
  // Under an exclusive lock: the value with a buffer that this variable alone holds.
  inline Result<Tensor> ValueForUpdate(KernelContext& ctx);
  Status Assign(const Tensor& t) {
    HostStatus s;
    Host().state->variable_assign(v_, t.handle(), s.get());
    return s.ToStatus();
  }

 private:
  cfx_variable* v_ = nullptr;
};

// One kernel invocation.
class KernelContext {
 public:
  explicit KernelContext(cfx_kernel_context* c) : c_(c) {}
  cfx_kernel_context* handle() const { return c_; }
  int num_inputs() const { return Host().kernel->num_inputs(c_); }
  int num_outputs() const { return Host().kernel->num_outputs(c_); }
  Tensor input(int i) const { return Tensor(Host().kernel->input(c_, i)); }
  cfx_dtype output_dtype(int i) const { return Host().kernel->output_dtype(c_, i); }
  std::string node_name() const { return Host().kernel->node_name(c_); }
  cfx_device* device() const { return Host().device->kernel_device(c_); }
  cfx_stream* stream() const { return Host().device->kernel_stream(c_); }

  // ---- State (ABI minor 1). Reference inputs (from VariableV2) alias the variable's buffer.
  bool HasStateApi() const {
    return Host().abi_minor >= 1 && Host().state->input_is_ref != nullptr;
  }
  bool input_is_ref(int i) const { return HasStateApi() && Host().state->input_is_ref(c_, i) != 0; }
  void LockRefInput(int i) { Host().state->ref_input_lock(c_, i); }
  void UnlockRefInput(int i) { Host().state->ref_input_unlock(c_, i); }
  // Ref output `out` refers to the variable of ref input `in`.
  Status ForwardRefInput(int in, int out) {
    HostStatus s;
    Host().state->forward_ref_input(c_, in, out, s.get());
    return s.ToStatus();
  }
  // The resource variable named by the handle in input `i` (created when `create`).
  Result<Variable> InputVariable(int i, bool create) {
    if (!HasStateApi()) return Unimplemented("the host does not support variables (ABI < 1.1)");
    HostStatus s;
    cfx_variable* v = Host().state->input_variable(c_, i, create ? 1 : 0, s.get());
    if (v == nullptr) return s.ToStatus();
    return Variable(v);
  }

  // ---- Where the call runs and its step's cancellation (ABI 1.3). On an older host step_id,
  // frame_id and iteration are 0 and RegisterCancellation is Unimplemented.
  bool HasStepApi() const {
    const cfx_host_kernel_api* k = Host().kernel;
    return CFX_HAS_FIELD(k, cfx_host_kernel_api, deregister_cancellation) &&
           k->step_id != nullptr && k->frame_id != nullptr && k->iteration != nullptr &&
           k->register_cancellation != nullptr && k->deregister_cancellation != nullptr;
  }
  // The step's id: > 0 and different for each Session::Run; 0 outside a step (KernelRunner).
  int64_t step_id() const { return HasStepApi() ? Host().kernel->step_id(c_) : 0; }
  // 0 in the root frame, else the id of the while loop's frame.
  int64_t frame_id() const { return HasStepApi() ? Host().kernel->frame_id(c_) : 0; }
  // The loop iteration (0, 1, ...); 0 in the root frame.
  int64_t iteration() const { return HasStepApi() ? Host().kernel->iteration(c_) : 0; }

  // For an asynchronous kernel that may wait without bound: (*callback)(why) runs once, on the
  // thread that cancels the step, if the step is cancelled (timeout, session closed, another
  // kernel's error) before DeregisterCancellation; it may finish the kernel (AsyncDone with an
  // error). `callback` (any object with `void operator()(const Status&)`) must live until then;
  // an exception leaving it is logged and dropped. Errors: CANCELLED when the step is already
  // cancelled (nothing was registered: finish at once, e.g. by returning that error),
  // UNIMPLEMENTED on a host older than ABI 1.3. Outside a step the token is valid and the
  // callback never runs.
  template <typename F>
  Result<cfx_cancel_token> RegisterCancellation(F* callback) {
    if (!HasStepApi())
      return Unimplemented("the host does not support cancellation of kernels (ABI < 1.3)");
    cfx_cancel_token t = Host().kernel->register_cancellation(
        c_,
        [](void* arg, const cfx_status* why) {
          try {
            (*static_cast<F*>(arg))(Status::From(why));
          } catch (...) {
            Host().core->log(CFX_LOG_ERROR, internal::FromException().message().c_str());
          }
        },
        callback);
    if (t == CFX_INVALID_CANCEL_TOKEN)
      return Status(CFX_CANCELLED, "the step was cancelled before the kernel registered");
    return t;
  }
  // Call before AsyncDone, never after. True when the callback was removed before it ran: the
  // caller finishes the kernel. False when it ran or is running: it owns the kernel's completion
  // (this waits for it to return unless called from inside a cancellation callback).
  bool DeregisterCancellation(cfx_cancel_token token) {
    return HasStepApi() && Host().kernel->deregister_cancellation(c_, token) != 0;
  }

  // ---- Files, through the host's file system (the runtime's Env). Errors name the file; a full
  // disk is CFX_RESOURCE_EXHAUSTED; UNIMPLEMENTED on a host whose kernel table predates the file
  // functions.
  bool HasFileApi() const {
    const cfx_host_kernel_api* k = Host().kernel;
    return CFX_HAS_FIELD(k, cfx_host_kernel_api, file_sync_dir) && k->file_open != nullptr;
  }
  // Creates or truncates `path`.
  Result<WritableFile> OpenFile(const std::string& path) {
    if (!HasFileApi()) return NoFileApi();
    HostStatus s;
    cfx_file* f = Host().kernel->file_open(c_, path.c_str(), s.get());
    if (f == nullptr) return s.ToStatus();
    return WritableFile(f);
  }
  // Replaces `to` with `from` atomically.
  Status RenameFile(const std::string& from, const std::string& to) {
    if (!HasFileApi()) return NoFileApi();
    HostStatus s;
    Host().kernel->file_rename(c_, from.c_str(), to.c_str(), s.get());
    return s.ToStatus();
  }
  Status DeleteFile(const std::string& path) {
    return OnPath(&cfx_host_kernel_api::file_delete, path);
  }
  // Creates `dir` and its missing parents.
  Status CreateDir(const std::string& dir) {
    return OnPath(&cfx_host_kernel_api::file_create_dir, dir);
  }
  // Makes the entries of folder `dir` durable.
  Status SyncDir(const std::string& dir) {
    return OnPath(&cfx_host_kernel_api::file_sync_dir, dir);
  }

  // Output `i` with a fresh buffer of the node's output dtype; owned by the context.
  Result<Tensor> AllocateOutput(int i, const Shape& shape) {
    HostStatus s;
    cfx_tensor* t = Host().kernel->allocate_output(c_, i, shape.data(),
                                                   static_cast<int>(shape.size()), s.get());
    if (t == nullptr) return s.ToStatus();
    return Tensor(t);
  }
  // Output `i` reusing the buffer of one of the `candidates` inputs when possible.
  Result<Tensor> ForwardOrAllocateOutput(std::initializer_list<int> candidates, int i,
                                         const Shape& shape) {
    HostStatus s;
    cfx_tensor* t = Host().kernel->forward_or_allocate(
        c_, candidates.begin(), static_cast<int>(candidates.size()), i, shape.data(),
        static_cast<int>(shape.size()), s.get());
    if (t == nullptr) return s.ToStatus();
    return Tensor(t);
  }
  // Output `i` shares `t`'s buffer.
  Status SetOutput(int i, Tensor t) {
    HostStatus s;
    Host().kernel->set_output(c_, i, t.handle(), s.get());
    return s.ToStatus();
  }
  // Output `i` shares `t`'s buffer under `shape` (same element count).
  Status SetOutputReshaped(int i, Tensor t, const Shape& shape) {
    HostStatus s;
    Host().kernel->set_output_reshaped(c_, i, t.handle(), shape.data(),
                                       static_cast<int>(shape.size()), s.get());
    return s.ToStatus();
  }
  Result<TensorRef> AllocateTemp(cfx_dtype dtype, const Shape& shape) {
    HostStatus s;
    cfx_tensor* t = Host().kernel->allocate_temp(c_, dtype, shape.data(),
                                                 static_cast<int>(shape.size()), s.get());
    if (t == nullptr) return s.ToStatus();
    return TensorRef::Adopt(t);
  }

  // Runs fn(begin, end) over [0, total) on the device's intra-op pool and waits.
  // cost_per_unit: rough cycles per element, so that small loops stay on one thread.
  template <typename Fn>
  void ParallelFor(int64_t total, int64_t cost_per_unit, Fn&& fn) {
    if (total <= 0) return;
    using F = std::remove_reference_t<Fn>;
    Host().device->parallel_for(
        c_, total, cost_per_unit,
        [](void* arg, int64_t begin, int64_t end) { (*static_cast<F*>(arg))(begin, end); },
        const_cast<void*>(static_cast<const void*>(&fn)));
  }

 private:
  static Status NoFileApi() {
    return Unimplemented(
        "the host cannot write files for kernels (its kernel table predates "
        "the file functions)");
  }
  // Calls the kernel table's field `fn` on `path`, once the host is known to have it.
  using PathFn = void (*)(cfx_kernel_context*, const char*, cfx_status*);
  Status OnPath(PathFn cfx_host_kernel_api::*fn, const std::string& path) {
    if (!HasFileApi()) return NoFileApi();
    HostStatus s;
    (Host().kernel->*fn)(c_, path.c_str(), s.get());
    return s.ToStatus();
  }

  cfx_kernel_context* c_;
};

inline Result<Tensor> Variable::ValueForUpdate(KernelContext& ctx) {
  HostStatus s;
  cfx_tensor* t = Host().state->variable_tensor_for_update(ctx.handle(), v_, s.get());
  if (t == nullptr) return s.ToStatus();
  return Tensor(t);
}

// The continuation of an asynchronous kernel: call it exactly once, from any thread, after the
// outputs are set (or with the error). Copyable; only the first call counts.
class AsyncDone {
 public:
  AsyncDone(cfx_kernel_context* c, cfx_done_fn fn, void* arg) : c_(c), fn_(fn), arg_(arg) {}
  void operator()(const Status& s = Status()) const {
    if (!s.ok()) Host().kernel->set_error(c_, s.code(), s.message().c_str());
    fn_(arg_);
  }

 private:
  cfx_kernel_context* c_;
  cfx_done_fn fn_;
  void* arg_;
};

// One shape-function invocation.
class ShapeContext {
 public:
  explicit ShapeContext(cfx_shape_context* c) : c_(c) {}
  Attrs attrs() const { return Attrs(Host().shape->attrs(c_)); }
  int num_inputs() const { return Host().shape->num_inputs(c_); }
  int num_outputs() const { return Host().shape->num_outputs(c_); }
  // Shape of input i; unknown_rank when not known.
  PartialShape input(int i) const {
    PartialShape s;
    int r = Host().shape->input_rank(c_, i);
    s.unknown_rank = r < 0;
    for (int d = 0; d < r; ++d) s.dims.push_back(Host().shape->input_dim(c_, i, d));
    return s;
  }
  // The value of input i when known during inference, else an invalid view.
  Tensor input_tensor(int i) const { return Tensor(Host().shape->input_tensor(c_, i)); }
  void set_output(int i, const PartialShape& s) {
    Host().shape->set_output(c_, i, s.dims.data(),
                             s.unknown_rank ? -1 : static_cast<int>(s.dims.size()));
  }
  void set_output(int i, const Shape& dims) {
    Host().shape->set_output(c_, i, dims.data(), static_cast<int>(dims.size()));
  }

 private:
  cfx_shape_context* c_;
};

using ShapeFunction = Status (*)(ShapeContext&);

namespace internal {

template <typename K>
concept HasInit = requires(K k, const KernelInit& init) {
  { k.Init(init) } -> std::same_as<Status>;
};

template <typename K>
void* CreateKernel(const cfx_attrs* attrs, cfx_device* device, cfx_status* status) {
  try {
    auto* k = new K();
    if constexpr (HasInit<K>) {
      Status s = k->Init(KernelInit(attrs, device));
      if (!s.ok()) {
        delete k;
        s.ExportTo(status);
        return nullptr;
      }
    }
    return k;
  } catch (...) {
    FromException().ExportTo(status);
    return nullptr;
  }
}

template <typename K>
void ComputeKernel(void* kernel, cfx_kernel_context* c) {
  Status s;
  try {
    KernelContext ctx(c);
    s = static_cast<K*>(kernel)->Compute(ctx);
  } catch (...) {
    s = FromException();
  }
  if (!s.ok()) Host().kernel->set_error(c, s.code(), s.message().c_str());
}

// An asynchronous kernel's entry point: K::ComputeAsync(KernelContext&, AsyncDone) returns a
// Status; an error returned before the continuation was handed off finishes the call.
template <typename K>
void ComputeKernelAsync(void* kernel, cfx_kernel_context* c, cfx_done_fn done, void* arg) {
  Status s;
  try {
    KernelContext ctx(c);
    s = static_cast<K*>(kernel)->ComputeAsync(ctx, AsyncDone(c, done, arg));
  } catch (...) {
    s = FromException();
  }
  if (!s.ok()) AsyncDone(c, done, arg)(s);
}

template <typename K>
void DestroyKernel(void* kernel) {
  delete static_cast<K*>(kernel);
}

template <ShapeFunction F>
void RunShapeFn(cfx_shape_context* c, cfx_status* status) {
  try {
    ShapeContext ctx(c);
    F(ctx).ExportTo(status);
  } catch (...) {
    FromException().ExportTo(status);
  }
}

}  // namespace internal
}  // namespace cfx::sdk

#endif  // CONFLUX_SDK_KERNEL_H_
