// Gradient functions in the SDK (plugin ABI minor 2): a plugin registers, per op, a function that
// builds the gradient of one forward node with graph ops.
//
//   sdk::Status ReluGrad(sdk::GradientBuilder& g) {
//     g.SetInputGrad(0, g.Op("ReluGrad").Input(g.grad(0)).Input(g.output(0)).Finish());
//     return g.status();
//   }
//   ...  p.Gradient<&ReluGrad>("Relu");   // in the plugin's init function
//
// Tensors are GradTensor handles valid during the call. Node inputs go in the op's order (one
// Input per argument; a list argument takes a vector); type attrs and list lengths are inferred.
// An error in any step is kept by the builder (status()) and later steps build nothing useful,
// so a function may check once at the end.
#ifndef CONFLUX_SDK_GRADIENT_H_
#define CONFLUX_SDK_GRADIENT_H_

#include <functional>
#include <string>
#include <vector>

#include "conflux/plugin_api.h"
#include "conflux/sdk/kernel.h"
#include "conflux/sdk/status.h"
#include "conflux/sdk/tensor.h"

namespace cfx::sdk {

struct GradTensor {
  int64_t handle = -1;
  bool valid() const { return handle >= 0; }
  // Output k of the node whose output 0 this is.
  GradTensor output(int k) const { return GradTensor{handle < 0 ? -1 : handle + k}; }
};

class GradientBuilder;

// One node of a gradient; added by Finish().
class GradNode {
 public:
  GradNode(GradientBuilder* g, std::string op) : g_(g), op_(std::move(op)) {}
  GradNode& Input(GradTensor t) {
    inputs_.push_back({t.handle});
    is_list_.push_back(false);
    return *this;
  }
  GradNode& Input(const std::vector<GradTensor>& list) {
    std::vector<int64_t> h;
    for (const GradTensor& t : list) h.push_back(t.handle);
    inputs_.push_back(std::move(h));
    is_list_.push_back(true);
    return *this;
  }
  GradNode& Attr(const char* name, int64_t v) {
    return Set([=](cfx_grad_node* n) { Host().gradient->node_attr_int(n, name, v); });
  }
  GradNode& Attr(const char* name, int v) { return Attr(name, static_cast<int64_t>(v)); }
  GradNode& Attr(const char* name, float v) {
    return Set([=](cfx_grad_node* n) { Host().gradient->node_attr_float(n, name, v); });
  }
  GradNode& Attr(const char* name, bool v) {
    return Set([=](cfx_grad_node* n) { Host().gradient->node_attr_bool(n, name, v ? 1 : 0); });
  }
  GradNode& Attr(const char* name, cfx_dtype v) {
    return Set([=](cfx_grad_node* n) { Host().gradient->node_attr_type(n, name, v); });
  }
  GradNode& Attr(const char* name, const std::string& v) {
    return Set(
        [=](cfx_grad_node* n) { Host().gradient->node_attr_string(n, name, v.data(), v.size()); });
  }
  GradNode& Attr(const char* name, const std::vector<int64_t>& v) {
    return Set([=](cfx_grad_node* n) {
      Host().gradient->node_attr_int_list(n, name, v.data(), static_cast<int>(v.size()));
    });
  }
  // Copies the forward node's attr (or its default), under the same or another name.
  GradNode& CopyAttr(const char* name) { return CopyAttr(name, name); }
  GradNode& CopyAttr(const char* forward_name, const char* name) {
    return Set([=](cfx_grad_node* n) { Host().gradient->node_copy_attr(n, forward_name, name); });
  }
  // Adds the node; an invalid tensor on error (kept by the builder).
  GradTensor Finish();

 private:
  GradNode& Set(std::function<void(cfx_grad_node*)> f) {
    attrs_.push_back(std::move(f));
    return *this;
  }
  GradientBuilder* g_;
  std::string op_;
  std::vector<std::vector<int64_t>> inputs_;
  std::vector<bool> is_list_;
  std::vector<std::function<void(cfx_grad_node*)>> attrs_;
};

class GradientBuilder {
 public:
  explicit GradientBuilder(cfx_grad_context* g) : g_(g) {}
  int num_inputs() const { return Host().gradient->num_inputs(g_); }
  int num_outputs() const { return Host().gradient->num_outputs(g_); }
  GradTensor input(int i) const { return GradTensor{Host().gradient->input(g_, i)}; }
  GradTensor output(int i) const { return GradTensor{Host().gradient->output(g_, i)}; }
  // The gradient flowing into output i.
  GradTensor grad(int i) const { return GradTensor{Host().gradient->output_grad(g_, i)}; }
  Attrs attrs() const { return Attrs(Host().gradient->attrs(g_)); }
  cfx_dtype dtype(GradTensor t) const { return Host().gradient->tensor_dtype(g_, t.handle); }
  GradNode Op(const char* op) { return GradNode(this, op); }
  GradTensor Scalar(cfx_dtype dtype, double value) {
    HostStatus s;
    GradTensor t{Host().gradient->scalar(g_, dtype, value, s.get())};
    Record(s.ToStatus());
    return t;
  }
  void SetInputGrad(int i, GradTensor t) {
    if (t.valid()) Host().gradient->set_input_grad(g_, i, t.handle);
  }
  Status status() const { return status_; }
  void Record(Status s) {
    if (status_.ok() && !s.ok()) status_ = std::move(s);
  }
  cfx_grad_context* handle() const { return g_; }

 private:
  cfx_grad_context* g_;
  Status status_;
};

inline GradTensor GradNode::Finish() {
  if (!g_->status().ok()) return GradTensor{};
  cfx_grad_node* n = Host().gradient->node_new(g_->handle(), op_.c_str());
  for (size_t a = 0; a < inputs_.size(); ++a) {
    if (is_list_[a]) {
      Host().gradient->node_input_list(n, inputs_[a].data(), static_cast<int>(inputs_[a].size()));
    } else {
      Host().gradient->node_input(n, inputs_[a][0]);
    }
  }
  for (const auto& f : attrs_) f(n);
  HostStatus s;
  GradTensor t{Host().gradient->node_finish(n, s.get())};
  g_->Record(s.ToStatus());
  return t;
}

using GradientFunction = Status (*)(GradientBuilder&);

namespace internal {
template <GradientFunction F>
void RunGradient(cfx_grad_context* g, void*, cfx_status* status) {
  try {
    GradientBuilder b(g);
    Status s = F(b);
    if (s.ok()) s = b.status();
    s.ExportTo(status);
  } catch (...) {
    FromException().ExportTo(status);
  }
}
}  // namespace internal

}  // namespace cfx::sdk

#endif  // CONFLUX_SDK_GRADIENT_H_
