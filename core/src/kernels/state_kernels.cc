// Variables: VariableV2 and Assign (reference semantics, as in TensorFlow), resource variables
// (VarHandleOp, ReadVariableOp, AssignVariableOp, VarIsInitializedOp, DestroyResourceOp,
// DisableCopyOnRead, and ResourceGather on the CPU), and IsVariableInitialized. Variables live in
// the device's ResourceMgr. Arithmetic updates (AssignAdd, AssignAddVariableOp, ...) are device
// kernels that reach variables through the ABI.
#include <cstring>
#include <mutex>
#include <shared_mutex>

#include "conflux/sdk/shape_rules.h"
#include "kernels/builtin.h"
#include "runtime/copy_tensor.h"

namespace cfx::internal {
namespace {

StatusOr<RefPtr<Var>> LookupOrCreateVar(const Device& device, const std::string& container,
                                        const std::string& name, DataType dtype) {
  CFX_ASSIGN_OR_RETURN(RefPtr<Var> var, device.resource_mgr()->LookupOrCreate<Var>(
                                            container, name, [&]() -> StatusOr<Var*> {
                                              auto* v = new Var();
                                              v->dtype = dtype;
                                              v->name = name;
                                              return v;
                                            }));
  if (var->dtype != dtype)
    return errors::InvalidArgument("variable ", name, " holds ", DataTypeString(var->dtype),
                                   "; this op expects ", DataTypeString(dtype));
  return var;
}

class VariableKernel : public BuiltinKernel {
 public:
  Status Init(const NodeDef& node, const OpDef& op) override {
    CFX_RETURN_IF_ERROR(GetNodeAttr(node, op, "dtype", &dtype_));
    CFX_RETURN_IF_ERROR(GetNodeAttr(node, op, "shape", &shape_));
    CFX_RETURN_IF_ERROR(GetNodeAttr(node, op, "container", &container_));
    CFX_RETURN_IF_ERROR(GetNodeAttr(node, op, "shared_name", &name_));
    if (name_.empty()) name_ = node.name;
    return Status();
  }
  void Compute(KernelContext* c) override {
    auto var = LookupOrCreateVar(*c->device, container_, name_, dtype_);
    if (!var.ok()) {
      c->status = var.status();
      return;
    }
    SetRefOutput(c, 0, *std::move(var));
  }

 private:
  DataType dtype_ = DT_INVALID;
  PartialTensorShape shape_;
  std::string container_, name_;
};

// Makes `var` hold a copy of `value` (in its existing buffer when the shape is unchanged).
Status AssignTo(const Device& device, Var* var, const Tensor& value, bool validate_shape) {
  Tensor* cur = var->tensor();
  if (validate_shape && cur->IsInitialized() && cur->shape() != value.shape())
    return errors::InvalidArgument("Assign requires shapes of both tensors to match: variable ",
                                   var->name, " has shape ", cur->shape().ToString(),
                                   ", the value has shape ", value.shape().ToString());
  if (cur->IsInitialized() && cur->shape() == value.shape() && device.host_addressable() &&
      value.dtype() != DT_STRING) {
    if (value.TotalBytes() > 0 && cur->raw_data() != value.raw_data())
      std::memcpy(cur->raw_data(), value.raw_data(), value.TotalBytes());
    return Status();
  }
  CFX_ASSIGN_OR_RETURN(*cur, CopyTensorSync(nullptr, &device, value, {.new_buffer = true}));
  return Status();
}

class AssignKernel : public BuiltinKernel {
 public:
  Status Init(const NodeDef& node, const OpDef& op) override {
    return GetNodeAttr(node, op, "validate_shape", &validate_shape_);
  }
  void Compute(KernelContext* c) override {
    Var* var = c->input_refs ? c->input_refs[0].get() : nullptr;
    if (var == nullptr) {
      c->status = errors::Internal("Assign's first input is not a reference");
      return;
    }
    {
      std::unique_lock<std::shared_mutex> lock(var->mu());
      c->status = AssignTo(*c->device, var, c->inputs[1], validate_shape_);
    }
    if (c->status.ok()) SetRefOutput(c, 0, c->input_refs[0]);
  }

 private:
  bool validate_shape_ = true;
};

class IsVariableInitializedKernel : public BuiltinKernel {
 public:
  void Compute(KernelContext* c) override {
    Var* var = c->input_refs ? c->input_refs[0].get() : nullptr;
    Tensor out(DT_BOOL, TensorShape());
    if (var != nullptr) {
      std::shared_lock<std::shared_mutex> lock(var->mu());
      out.at<bool>(0) = var->initialized();
    } else {
      out.at<bool>(0) = false;
    }
    SetOutput(c, 0, out);
  }
};

class VarHandleKernel : public BuiltinKernel {
 public:
  Status Init(const NodeDef& node, const OpDef& op) override {
    CFX_RETURN_IF_ERROR(GetNodeAttr(node, op, "container", &handle_.container));
    CFX_RETURN_IF_ERROR(GetNodeAttr(node, op, "shared_name", &handle_.name));
    if (handle_.name.empty()) handle_.name = node.name;
    handle_.type = Var::kTypeName;
    return Status();
  }
  void Compute(KernelContext* c) override {
    ResourceHandle h = handle_;
    h.device = c->device->full_name();
    SetOutput(c, 0, MakeResourceTensor(h));
  }

 private:
  ResourceHandle handle_;
};

// The variable a resource handle names, on this kernel's device.
StatusOr<RefPtr<Var>> VarFromHandle(KernelContext* c, int input, bool create, DataType dtype) {
  CFX_ASSIGN_OR_RETURN(ResourceHandle h, HandleFromInput(c, input));
  if (h.device != c->device->full_name())
    return errors::InvalidArgument("resource ", h.DebugString(), " is used on ",
                                   c->device->full_name(),
                                   "; ops that use a resource must run on its device");
  if (create) return LookupOrCreateVar(*c->device, h.container, h.name, dtype);
  CFX_ASSIGN_OR_RETURN(RefPtr<Var> var,
                       c->device->resource_mgr()->Lookup<Var>(h.container, h.name));
  if (dtype != DT_INVALID && var->dtype != dtype)
    return errors::InvalidArgument("variable ", h.name, " holds ", DataTypeString(var->dtype),
                                   "; this op expects ", DataTypeString(dtype));
  return var;
}

class ReadVariableKernel : public BuiltinKernel {
 public:
  Status Init(const NodeDef& node, const OpDef& op) override {
    return GetNodeAttr(node, op, "dtype", &dtype_);
  }
  void Compute(KernelContext* c) override {
    auto var = VarFromHandle(c, 0, false, dtype_);
    if (!var.ok()) {
      c->status = var.status().code() == Code::kNotFound
                      ? errors::FailedPrecondition("reading an uninitialized variable: ",
                                                   var.status().message())
                      : var.status();
      return;
    }
    std::shared_lock<std::shared_mutex> lock((*var)->mu());
    if (!(*var)->initialized()) {
      c->status = errors::FailedPrecondition("reading an uninitialized variable ", (*var)->name,
                                             " (assign it a value first)");
      return;
    }
    SetOutput(c, 0, *(*var)->tensor());  // shares the buffer; updates copy on write
  }

 private:
  DataType dtype_ = DT_INVALID;
};

class AssignVariableKernel : public BuiltinKernel {
 public:
  Status Init(const NodeDef& node, const OpDef& op) override {
    return GetNodeAttr(node, op, "dtype", &dtype_);
  }
  void Compute(KernelContext* c) override {
    auto var = VarFromHandle(c, 0, true, dtype_);
    if (!var.ok()) {
      c->status = var.status();
      return;
    }
    std::unique_lock<std::shared_mutex> lock((*var)->mu());
    *(*var)->tensor() = c->inputs[1];  // shares the value's buffer; updates copy on write
  }

 private:
  DataType dtype_ = DT_INVALID;
};

class VarIsInitializedKernel : public BuiltinKernel {
 public:
  void Compute(KernelContext* c) override {
    Tensor out(DT_BOOL, TensorShape());
    auto var = VarFromHandle(c, 0, false, DT_INVALID);
    out.at<bool>(0) = false;
    if (var.ok()) {
      std::shared_lock<std::shared_mutex> lock((*var)->mu());
      out.at<bool>(0) = (*var)->initialized();
    }
    SetOutput(c, 0, out);
  }
};

// TensorFlow's variables copy their buffer on a read while a sparse update may run
// (copy-on-read mode); DisableCopyOnRead turns that off. A Conflux read shares the buffer and an
// update copies it when shared, so there is nothing to turn off: the op only checks, as
// TensorFlow's, that the variable exists.
class DisableCopyOnReadKernel : public BuiltinKernel {
 public:
  void Compute(KernelContext* c) override {
    auto var = VarFromHandle(c, 0, false, DT_INVALID);
    if (!var.ok())
      c->status = var.status().code() == Code::kNotFound
                      ? errors::FailedPrecondition("Could not find variable: ",
                                                   var.status().message(),
                                                   " (it was never assigned or was deleted)")
                      : var.status();
  }
};

// "[1,2]": the position of flat element `flat` in a tensor of shape `dims`.
std::string ResourceGatherPosition(const shape_rules::Dims& dims, int64_t flat) {
  shape_rules::Dims index(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    index[d] = flat % dims[d];
    flat /= dims[d];
  }
  return shape_rules::ListStr(index);
}

// ResourceGather: GatherV2 of the variable's value along axis batch_dims (CPU: the value is in
// host memory). out = params.shape[:batch_dims] + indices.shape[batch_dims:] +
// params.shape[batch_dims + 1:]. Every index is checked against its batch's rows (TensorFlow's
// CPU kernel checks them against all rows of all batches); validate_indices is ignored, as by
// TensorFlow's CPU kernel, which always checks.
class ResourceGatherKernel : public BuiltinKernel {
 public:
  Status Init(const NodeDef& node, const OpDef& op) override {
    CFX_RETURN_IF_ERROR(GetNodeAttr(node, op, "dtype", &dtype_));
    CFX_RETURN_IF_ERROR(GetNodeAttr(node, op, "batch_dims", &batch_dims_));
    if (batch_dims_ < 0)
      return errors::InvalidArgument("batch_dims is negative (", batch_dims_, ")");
    if (dtype_ != DT_STRING && DataTypeSize(dtype_) == 0)
      return errors::Unimplemented("ResourceGather of ", DataTypeString(dtype_),
                                   " variables is not supported");
    return Status();
  }
  void Compute(KernelContext* c) override { c->SetStatus(Gather(c)); }

 private:
  Status Gather(KernelContext* c) const {
    CFX_ASSIGN_OR_RETURN(RefPtr<Var> var, VarFromHandle(c, 0, false, dtype_));
    Tensor params;
    {
      std::shared_lock<std::shared_mutex> lock(var->mu());
      if (!var->initialized())
        return errors::FailedPrecondition("reading an uninitialized variable ", var->name);
      params = *var->tensor();  // shares the buffer; updates copy on write
    }
    const Tensor& indices = c->input(1);
    if (params.rank() == 0)
      return errors::InvalidArgument("params must be at least 1 dimensional (variable ",
                                     var->name, " holds a scalar)");
    const shape_rules::Dims params_dims(params.shape().dims()), indices_dims(indices.shape().dims());
    int64_t axis = batch_dims_, batch_dims = batch_dims_;
    shape_rules::Dims out_dims;
    shape_rules::GatherSizes sizes;
    const std::string error = shape_rules::GatherShape(params_dims, indices_dims, &axis,
                                                       &batch_dims, &out_dims, &sizes);
    if (!error.empty())
      return errors::InvalidArgument(error, " (variable ", var->name, ", batch_dims ",
                                     batch_dims_, ")");
    // Every index as int64, checked before anything is copied.
    std::vector<int64_t> rows(static_cast<size_t>(indices.num_elements()));
    for (int64_t i = 0; i < indices.num_elements(); ++i) {
      rows[i] = indices.dtype() == DT_INT32 ? indices.data<int32_t>()[i] : indices.data<int64_t>()[i];
      if (rows[i] < 0 || rows[i] >= sizes.axis_size)
        return errors::InvalidArgument("indices", ResourceGatherPosition(indices_dims, i), " = ",
                                       rows[i], " is not in [0, ", sizes.axis_size, ")");
    }
    CFX_ASSIGN_OR_RETURN(Tensor out,
                         Tensor::Allocate(HostAllocator(), dtype_, TensorShape(out_dims)));
    // out[b, k, :] = params[b, indices[b, k], :] (outer is 1: the axis is batch_dims).
    const int64_t inner = sizes.inner;
    for (int64_t r = 0; r < sizes.batch * sizes.per_batch; ++r) {
      const int64_t b = r / sizes.per_batch;
      const int64_t source = (b * sizes.axis_size + rows[r]) * inner;
      if (dtype_ == DT_STRING) {
        for (int64_t j = 0; j < inner; ++j)
          out.data<std::string>()[r * inner + j] = params.data<std::string>()[source + j];
      } else if (inner > 0) {
        const size_t row_bytes = static_cast<size_t>(inner) * DataTypeSize(dtype_);
        std::memcpy(static_cast<char*>(out.raw_data()) + r * row_bytes,
                    static_cast<const char*>(params.raw_data()) + source * DataTypeSize(dtype_),
                    row_bytes);
      }
    }
    SetOutput(c, 0, std::move(out));
    return Status();
  }

  DataType dtype_ = DT_INVALID;
  int64_t batch_dims_ = 0;
};

class DestroyResourceKernel : public BuiltinKernel {
 public:
  Status Init(const NodeDef& node, const OpDef& op) override {
    return GetNodeAttr(node, op, "ignore_lookup_error", &ignore_lookup_error_);
  }
  void Compute(KernelContext* c) override {
    auto h = HandleFromInput(c, 0);
    if (!h.ok()) {
      c->status = h.status();
      return;
    }
    Status s = c->device->resource_mgr()->Delete(h->container, h->type, h->name);
    if (!s.ok() && !(ignore_lookup_error_ && s.code() == Code::kNotFound)) c->status = s;
  }

 private:
  bool ignore_lookup_error_ = true;
};

}  // namespace

void RegisterStateKernels(KernelRegistry* r) {
  auto reg = [&](KernelDef def) { RegisterBuiltin(r, std::move(def)); };
  const uint32_t cheap = kKernelInexpensive;
  reg(BuiltinKernelDef<VariableKernel>("VariableV2", kAnyDeviceType, false, cheap));
  reg(BuiltinKernelDef<AssignKernel>("Assign", kAnyDeviceType, false, cheap));
  reg(BuiltinKernelDef<IsVariableInitializedKernel>("IsVariableInitialized", kAnyDeviceType, false,
                                                    cheap, {"is_initialized"}));
  reg(BuiltinKernelDef<VarHandleKernel>("VarHandleOp", kAnyDeviceType, false, cheap, {"resource"}));
  reg(BuiltinKernelDef<ReadVariableKernel>("ReadVariableOp", kAnyDeviceType, false, cheap,
                                           {"resource"}));
  reg(BuiltinKernelDef<AssignVariableKernel>("AssignVariableOp", kAnyDeviceType, false, cheap,
                                             {"resource"}));
  reg(BuiltinKernelDef<VarIsInitializedKernel>("VarIsInitializedOp", kAnyDeviceType, false, cheap,
                                               {"resource", "is_initialized"}));
  reg(BuiltinKernelDef<DestroyResourceKernel>("DestroyResourceOp", kAnyDeviceType, false, cheap,
                                              {"resource"}));
  reg(BuiltinKernelDef<DisableCopyOnReadKernel>("DisableCopyOnRead", kAnyDeviceType, false, cheap,
                                                {"resource"}));
  reg(BuiltinKernelDef<ResourceGatherKernel>("ResourceGather", "CPU", false, 0, {"resource"}));
}

}  // namespace cfx::internal
