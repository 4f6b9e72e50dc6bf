// Plugin gradient functions as GradFuncs: a GradBuilderBackend over a Scope (see
// plugin_gradients.h and core/src/plugin/gradient_backend.h).
#include "plugin_gradients.h"

#include "conflux/cc/const_op.h"
#include "conflux/cc/op_builder.h"
#include "conflux/runtime.h"
#include "plugin/gradient_backend.h"

namespace cfx::internal {
namespace {

// Handles index `tensors_`: the forward inputs, then its outputs, then their gradients, then the
// outputs of every node built.
class ScopeBackend : public GradBuilderBackend {
 public:
  ScopeBackend(const Scope& scope, const Operation& op, const std::vector<Output>& grads)
      : scope_(scope), op_(op) {
    for (int i = 0; i < op.num_inputs(); ++i) tensors_.push_back(op.input(i));
    for (int i = 0; i < op.num_outputs(); ++i) tensors_.push_back(op.output(i));
    for (const Output& g : grads) tensors_.push_back(g);
    input_grads_.resize(op.num_inputs());
  }

  int num_inputs() const override { return op_.num_inputs(); }
  int num_outputs() const override { return op_.num_outputs(); }
  int64_t input(int i) const override { return i; }
  int64_t output(int i) const override { return op_.num_inputs() + i; }
  int64_t output_grad(int i) const override { return op_.num_inputs() + op_.num_outputs() + i; }
  const NodeDef& forward_node() const override { return op_.node()->def(); }
  const OpDef& forward_op() const override { return op_.node()->op_registration().def; }
  DataType dtype(int64_t h) const override {
    return Valid(h) ? BaseType(tensors_[h].type()) : DT_INVALID;
  }

  StatusOr<int64_t> AddNode(const GradNodeRequest& r) override {
    OpBuilder b(scope_, r.op);
    for (size_t a = 0; a < r.inputs.size(); ++a) {
      InputList list;
      for (int64_t h : r.inputs[a]) {
        if (!Valid(h))
          return errors::InvalidArgument("input ", a, " of the ", r.op, " node names tensor ",
                                         h, ", which is not a tensor of this gradient");
        list.push_back(tensors_[h]);
      }
      if (r.is_list[a]) {
        b.Input(list);
      } else {
        b.Input(list[0]);
      }
    }
    for (const auto& [name, value] : r.attrs) b.Attr(name, value);
    Operation op = b.Finish();
    if (!op.valid()) return scope_.status();
    const int64_t first = static_cast<int64_t>(tensors_.size());
    for (int k = 0; k < op.num_outputs(); ++k) tensors_.push_back(op.output(k));
    return first;
  }

  StatusOr<int64_t> AddScalar(DataType dtype, double value) override {
    Output c = ops::Const(scope_, value, dtype);
    if (!c.valid()) return scope_.status();
    tensors_.push_back(c);
    return static_cast<int64_t>(tensors_.size()) - 1;
  }

  void SetInputGrad(int i, int64_t h) override {
    if (Valid(h)) input_grads_[i] = tensors_[h];
  }

  const std::vector<Output>& input_grads() const { return input_grads_; }

 private:
  bool Valid(int64_t h) const {
    return h >= 0 && h < static_cast<int64_t>(tensors_.size()) && tensors_[h].valid();
  }

  Scope scope_;
  Operation op_;
  std::vector<Output> tensors_;
  std::vector<Output> input_grads_;
};

}  // namespace

std::optional<GradFunc> FindPluginGradFunc(const Runtime* runtime, const std::string& op) {
  if (runtime == nullptr) return std::nullopt;
  const internal::PluginGradient* g = runtime->FindPluginGradient(op);
  if (g == nullptr) return std::nullopt;
  internal::PluginGradient copy = *g;
  return GradFunc([copy](const Scope& scope, const Operation& fwd,
                         const std::vector<Output>& grads, std::vector<Output>* dxs) {
    ScopeBackend backend(scope, fwd, grads);
    CFX_RETURN_IF_ERROR(CallPluginGradient(copy, &backend));
    *dxs = backend.input_grads();
    return Status();
  });
}

}  // namespace cfx::internal
