// The gradient part of the host function table (ABI minor 2): registration and the grad_*
// functions, which forward to a GradBuilderBackend.
#include <memory>

#include "plugin/abi_types.h"
#include "plugin/gradient_abi.h"

namespace cfx::internal {
namespace {

void Fail(cfx_status* s, const Status& e) {
  if (s != nullptr) s->status = e;
}

void RegisterGradient(cfx_registrar* r, const char* op, cfx_gradient_fn fn, void* user_data,
                      cfx_status* s) {
  auto error = [&](const Status& e) {
    if (r->first_error.ok()) r->first_error = e;
    Fail(s, e);
  };
  const std::string name = op != nullptr ? op : "";
  if (name.empty() || fn == nullptr)
    return error(errors::InvalidArgument("plugin ", r->plugin,
                                         ": a gradient needs an op name and a function"));
  if (r->gradients != nullptr) {
    auto it = r->gradients->find(name);
    if (it != r->gradients->end())
      return error(errors::AlreadyExists("plugin ", r->plugin, ": a gradient for op ", name,
                                         " is already registered by ", it->second.plugin));
  }
  for (const auto& [staged, g] : r->staged_gradients)
    if (staged == name)
      return error(errors::AlreadyExists("plugin ", r->plugin, " registers the gradient of op ",
                                         name, " twice"));
  r->staged_gradients.emplace_back(name, PluginGradient{fn, user_data, r->plugin});
}

int NumInputs(const cfx_grad_context* g) { return g->backend->num_inputs(); }
int NumOutputs(const cfx_grad_context* g) { return g->backend->num_outputs(); }
int64_t Input(const cfx_grad_context* g, int i) {
  return i >= 0 && i < g->backend->num_inputs() ? g->backend->input(i) : -1;
}
int64_t Output(const cfx_grad_context* g, int i) {
  return i >= 0 && i < g->backend->num_outputs() ? g->backend->output(i) : -1;
}
int64_t OutputGrad(const cfx_grad_context* g, int i) {
  return i >= 0 && i < g->backend->num_outputs() ? g->backend->output_grad(i) : -1;
}
const cfx_attrs* Attrs(const cfx_grad_context* g) { return &g->attrs; }
cfx_dtype TensorDType(const cfx_grad_context* g, int64_t t) {
  return static_cast<cfx_dtype>(g->backend->dtype(t));
}

cfx_grad_node* NodeNew(cfx_grad_context* g, const char* op) {
  auto* n = new cfx_grad_node{g, {}};
  n->request.op = op != nullptr ? op : "";
  return n;
}
void NodeInput(cfx_grad_node* n, int64_t t) {
  n->request.inputs.push_back({t});
  n->request.is_list.push_back(false);
}
void NodeInputList(cfx_grad_node* n, const int64_t* t, int count) {
  n->request.inputs.emplace_back(t, t + std::max(count, 0));
  n->request.is_list.push_back(true);
}
void AttrInt(cfx_grad_node* n, const char* k, int64_t v) { n->request.attrs[k] = AttrValue::Int(v); }
void AttrFloat(cfx_grad_node* n, const char* k, float v) {
  n->request.attrs[k] = AttrValue::Float(v);
}
void AttrBool(cfx_grad_node* n, const char* k, int v) { n->request.attrs[k] = AttrValue::Bool(v); }
void AttrType(cfx_grad_node* n, const char* k, cfx_dtype v) {
  n->request.attrs[k] = AttrValue::Type(static_cast<DataType>(v));
}
void AttrString(cfx_grad_node* n, const char* k, const char* d, size_t size) {
  n->request.attrs[k] = AttrValue::String(std::string(d, size));
}
void AttrIntList(cfx_grad_node* n, const char* k, const int64_t* v, int count) {
  n->request.attrs[k] = AttrValue::IntList(std::vector<int64_t>(v, v + std::max(count, 0)));
}
void CopyAttr(cfx_grad_node* n, const char* from, const char* to) {
  const NodeDef& node = n->g->backend->forward_node();
  auto it = node.attr.find(from);
  if (it != node.attr.end()) {
    n->request.attrs[to] = it->second;
    return;
  }
  const AttrDef* def = n->g->backend->forward_op().FindAttr(from);
  if (def != nullptr && def->default_value) {
    n->request.attrs[to] = *def->default_value;
    return;
  }
  if (n->g->error.ok())
    n->g->error = errors::InvalidArgument("the forward node has no attr '", from, "' to copy");
}
int64_t NodeFinish(cfx_grad_node* n, cfx_status* s) {
  std::unique_ptr<cfx_grad_node> owned(n);
  auto handle = n->g->backend->AddNode(n->request);
  if (!handle.ok()) {
    Fail(s, handle.status());
    if (n->g->error.ok()) n->g->error = handle.status();
    return -1;
  }
  return *handle;
}
void SetInputGrad(cfx_grad_context* g, int i, int64_t t) {
  if (i < 0 || i >= g->backend->num_inputs()) {
    if (g->error.ok())
      g->error = errors::InvalidArgument("grad_set_input_grad: input ", i, " of ",
                                         g->backend->num_inputs());
    return;
  }
  g->backend->SetInputGrad(i, t);
}
int64_t Scalar(cfx_grad_context* g, cfx_dtype dtype, double value, cfx_status* s) {
  auto h = g->backend->AddScalar(static_cast<DataType>(dtype), value);
  if (!h.ok()) {
    Fail(s, h.status());
    if (g->error.ok()) g->error = h.status();
    return -1;
  }
  return *h;
}

}  // namespace

void AddGradientFunctions(cfx_host_api* h) {
  h->register_gradient = RegisterGradient;
  h->grad_num_inputs = NumInputs;
  h->grad_num_outputs = NumOutputs;
  h->grad_input = Input;
  h->grad_output = Output;
  h->grad_output_grad = OutputGrad;
  h->grad_attrs = Attrs;
  h->grad_tensor_dtype = TensorDType;
  h->grad_node_new = NodeNew;
  h->grad_node_input = NodeInput;
  h->grad_node_input_list = NodeInputList;
  h->grad_node_attr_int = AttrInt;
  h->grad_node_attr_float = AttrFloat;
  h->grad_node_attr_bool = AttrBool;
  h->grad_node_attr_type = AttrType;
  h->grad_node_attr_string = AttrString;
  h->grad_node_attr_int_list = AttrIntList;
  h->grad_node_copy_attr = CopyAttr;
  h->grad_node_finish = NodeFinish;
  h->grad_set_input_grad = SetInputGrad;
  h->grad_scalar = Scalar;
}

Status CallPluginGradient(const PluginGradient& g, GradBuilderBackend* backend) {
  cfx_grad_context ctx{backend, cfx_attrs{&backend->forward_node(), &backend->forward_op()}, {}};
  cfx_status status;
  g.fn(&ctx, g.user_data, &status);
  Status s = status.status.ok() ? ctx.error : status.status;
  if (!s.ok())
    return s.WithPrefix(StrCat("the gradient function of plugin ", g.plugin, " for node '",
                               backend->forward_node().name, "' (", backend->forward_node().op,
                               "): "));
  return Status();
}

}  // namespace cfx::internal
