// The gradient table of the host API (cfx_host_gradient_api): the context of one gradient-
// function call, which forwards to a GradBuilderBackend; and the call itself.
#include <memory>

#include "plugin/abi_types.h"
#include "plugin/host_api_tables.h"

namespace cfx::internal {
namespace {

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
void AttrInt(cfx_grad_node* n, const char* k, int64_t v) {
  n->request.attrs[k] = AttrValue::Int(v);
}
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
    SetError(s, handle.status());
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
    SetError(s, h.status());
    if (g->error.ok()) g->error = h.status();
    return -1;
  }
  return *h;
}

}  // namespace

const cfx_host_gradient_api* HostGradientApi() {
  return StaticTable<cfx_host_gradient_api>([](cfx_host_gradient_api* a) {
    a->num_inputs = NumInputs;
    a->num_outputs = NumOutputs;
    a->input = Input;
    a->output = Output;
    a->output_grad = OutputGrad;
    a->attrs = Attrs;
    a->tensor_dtype = TensorDType;
    a->node_new = NodeNew;
    a->node_input = NodeInput;
    a->node_input_list = NodeInputList;
    a->node_attr_int = AttrInt;
    a->node_attr_float = AttrFloat;
    a->node_attr_bool = AttrBool;
    a->node_attr_type = AttrType;
    a->node_attr_string = AttrString;
    a->node_attr_int_list = AttrIntList;
    a->node_copy_attr = CopyAttr;
    a->node_finish = NodeFinish;
    a->set_input_grad = SetInputGrad;
    a->scalar = Scalar;
  });
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
