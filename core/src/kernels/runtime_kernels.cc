// _Arg and _Retval (the step's call frame: feeds and fetches) and _Send/_Recv (cross-device
// edges through the step's rendezvous). Registered for every device type.
#include <cstdio>
#include <cstdlib>

#include "kernels/builtin.h"
#include "runtime/copy_tensor.h"

namespace cfx::internal {

namespace {

// The attr kind and the AttrValue field each C++ type is read from.
template <typename T>
struct AttrField;
template <>
struct AttrField<int64_t> {
  static constexpr AttrValue::Kind kKind = AttrValue::Kind::kInt;
  static constexpr const char* kName = "int";
  static const int64_t& Get(const AttrValue& v) { return v.i; }
};
template <>
struct AttrField<std::string> {
  static constexpr AttrValue::Kind kKind = AttrValue::Kind::kString;
  static constexpr const char* kName = "string";
  static const std::string& Get(const AttrValue& v) { return v.s; }
};
template <>
struct AttrField<bool> {
  static constexpr AttrValue::Kind kKind = AttrValue::Kind::kBool;
  static constexpr const char* kName = "bool";
  static const bool& Get(const AttrValue& v) { return v.b; }
};
template <>
struct AttrField<DataType> {
  static constexpr AttrValue::Kind kKind = AttrValue::Kind::kType;
  static constexpr const char* kName = "type";
  static const DataType& Get(const AttrValue& v) { return v.type; }
};
template <>
struct AttrField<PartialTensorShape> {
  static constexpr AttrValue::Kind kKind = AttrValue::Kind::kShape;
  static constexpr const char* kName = "shape";
  static const PartialTensorShape& Get(const AttrValue& v) { return v.shape; }
};

}  // namespace

template <typename T>
Status GetNodeAttr(const NodeDef& node, const OpDef& op, const std::string& name, T* out) {
  const AttrValue* v = FindAttrOrDefault(node, op, name);
  if (v == nullptr || v->kind != AttrField<T>::kKind)
    return errors::InvalidArgument("node ", node.name, " (op ", node.op, ") needs ",
                                   AttrField<T>::kName, " attr '", name, "'");
  *out = AttrField<T>::Get(*v);
  return Status();
}
template Status GetNodeAttr(const NodeDef&, const OpDef&, const std::string&, int64_t*);
template Status GetNodeAttr(const NodeDef&, const OpDef&, const std::string&, std::string*);
template Status GetNodeAttr(const NodeDef&, const OpDef&, const std::string&, bool*);
template Status GetNodeAttr(const NodeDef&, const OpDef&, const std::string&, DataType*);
template Status GetNodeAttr(const NodeDef&, const OpDef&, const std::string&, PartialTensorShape*);

Tensor MakeResourceTensor(const ResourceHandle& h) {
  Tensor t(DT_RESOURCE, TensorShape());
  t.data<std::string>()[0] = h.Encode();
  return t;
}

StatusOr<ResourceHandle> HandleFromInput(const KernelContext* c, int i) {
  const Tensor& t = c->inputs[i];
  if (t.dtype() != DT_RESOURCE || t.num_elements() != 1)
    return errors::InvalidArgument("input ", i, " must be a scalar resource handle, got ",
                                   DataTypeString(t.dtype()), " ", t.shape().ToString());
  return ResourceHandle::Decode(t.data<std::string>()[0]);
}

void RegisterBuiltin(KernelRegistry* r, KernelDef def) {
  const std::string name = def.DebugString();
  Status s = r->Register(std::move(def));
  if (!s.ok()) {
    std::fprintf(stderr, "conflux: cannot register built-in kernel %s: %s\n", name.c_str(),
                 s.ToString().c_str());
    std::abort();
  }
}

namespace {

class ArgKernel : public BuiltinKernel {
 public:
  Status Init(const NodeDef& node, const OpDef& op) override {
    return GetNodeAttr(node, op, "index", &index_);
  }
  void Compute(KernelContext* c) override {
    const CallFrame* frame = c->step ? c->step->call_frame : nullptr;
    if (frame == nullptr || index_ < 0 || index_ >= static_cast<int64_t>(frame->args.size())) {
      c->status = errors::Internal("_Arg ", index_, " has no value in this step");
      return;
    }
    auto t = CopyTensorSync(nullptr, c->device, frame->args[index_]);
    if (!t.ok()) {
      c->status = t.status();
      return;
    }
    SetOutput(c, 0, *std::move(t));
  }

 private:
  int64_t index_ = 0;
};

class RetvalKernel : public BuiltinKernel {
 public:
  Status Init(const NodeDef& node, const OpDef& op) override {
    return GetNodeAttr(node, op, "index", &index_);
  }
  void Compute(KernelContext* c) override {
    CallFrame* frame = c->step ? c->step->call_frame : nullptr;
    if (frame == nullptr || index_ < 0 || index_ >= static_cast<int64_t>(frame->retvals.size())) {
      c->status = errors::Internal("_Retval ", index_, " has no place in this step");
      return;
    }
    frame->retvals[index_] = c->inputs[0];
    frame->retval_set[index_] = 1;
  }

 private:
  int64_t index_ = 0;
};

// The rendezvous key prefix of a _Send or _Recv node, from its attrs.
StatusOr<std::string> TransferKeyPrefix(const NodeDef& node, const OpDef& op) {
  std::string tensor, send, recv;
  int64_t incarnation = 0;
  CFX_RETURN_IF_ERROR(GetNodeAttr(node, op, "tensor_name", &tensor));
  CFX_RETURN_IF_ERROR(GetNodeAttr(node, op, "send_device", &send));
  CFX_RETURN_IF_ERROR(GetNodeAttr(node, op, "send_device_incarnation", &incarnation));
  CFX_RETURN_IF_ERROR(GetNodeAttr(node, op, "recv_device", &recv));
  return Rendezvous::KeyPrefix(send, static_cast<uint64_t>(incarnation), recv, tensor);
}

class SendKernel : public BuiltinKernel {
 public:
  Status Init(const NodeDef& node, const OpDef& op) override {
    CFX_ASSIGN_OR_RETURN(key_, TransferKeyPrefix(node, op));
    return Status();
  }
  void Compute(KernelContext* c) override {
    if (c->step == nullptr || c->step->rendezvous == nullptr) {
      c->status = errors::Internal("_Send outside a step with a rendezvous");
      return;
    }
    Rendezvous::Value v{c->is_input_dead ? Tensor() : c->inputs[0], c->device, c->is_input_dead};
    c->status = c->step->rendezvous->Send(Rendezvous::Key(key_, c->frame_id, c->iteration), v);
  }

 private:
  std::string key_;
};

class RecvKernel : public BuiltinKernel {
 public:
  Status Init(const NodeDef& node, const OpDef& op) override {
    CFX_ASSIGN_OR_RETURN(key_, TransferKeyPrefix(node, op));
    return Status();
  }
  void ComputeAsync(KernelContext* c, AsyncDone done) override {
    if (c->step == nullptr || c->step->rendezvous == nullptr) {
      c->status = errors::Internal("_Recv outside a step with a rendezvous");
      done();
      return;
    }
    c->step->rendezvous->RecvAsync(Rendezvous::Key(key_, c->frame_id, c->iteration),
                                   [c, done](const Status& s, const Rendezvous::Value& v) {
                                     if (!s.ok() || v.is_dead) {
                                       c->status = s;
                                       c->is_output_dead = v.is_dead;
                                       done();
                                       return;
                                     }
                                     CopyTensor(v.device, c->device, v.tensor, {},
                                                [c, done](const Status& s, Tensor t) {
                                                  if (s.ok()) {
                                                    SetOutput(c, 0, std::move(t));
                                                  } else {
                                                    c->status = s;
                                                  }
                                                  done();
                                                });
                                   });
  }

 private:
  std::string key_;
};

// A Placeholder runs only when it was not fed (a session replaces fed ones by _Arg nodes).
class PlaceholderKernel : public BuiltinKernel {
 public:
  Status Init(const NodeDef& node, const OpDef& op) override {
    DataType dtype = DT_INVALID;
    PartialTensorShape shape;
    CFX_RETURN_IF_ERROR(GetNodeAttr(node, op, "dtype", &dtype));
    (void)GetNodeAttr(node, op, "shape", &shape);
    message_ = StrCat("you must feed a value for placeholder tensor '", node.name, "' with dtype ",
                      DataTypeString(dtype), " and shape ", shape.ToString());
    return Status();
  }
  void Compute(KernelContext* c) override { c->status = errors::InvalidArgument(message_); }

 private:
  std::string message_;
};

}  // namespace

void RegisterRuntimeKernels(KernelRegistry* r) {
  auto reg = [&](KernelDef def) { RegisterBuiltin(r, std::move(def)); };
  reg(BuiltinKernelDef<ArgKernel>("_Arg", kAnyDeviceType, false, kKernelInexpensive));
  reg(BuiltinKernelDef<RetvalKernel>("_Retval", kAnyDeviceType, false, kKernelInexpensive));
  reg(BuiltinKernelDef<SendKernel>("_Send", kAnyDeviceType, false, kKernelInexpensive));
  reg(BuiltinKernelDef<RecvKernel>("_Recv", kAnyDeviceType, true, kKernelInexpensive));
  reg(BuiltinKernelDef<PlaceholderKernel>("Placeholder", kAnyDeviceType, false,
                                          kKernelInexpensive));
}

}  // namespace cfx::internal
