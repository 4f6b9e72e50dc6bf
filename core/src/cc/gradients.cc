// AddSymbolicGradients: the backward pass over a Scope's graph (whitepaper §4.1), and the
// GradientRegistry (see conflux/cc/gradients.h).
//
// Only nodes on a path from an x to a y take part. They are visited in reverse topological order,
// so every consumer of a node has contributed its gradients before the node is visited; a node's
// gradient per output is the sum of those contributions. Nodes with no x among their ancestors
// (a Placeholder, a variable, a constant) only collect gradients; their gradient functions are not
// called.
#include "conflux/cc/gradients.h"

#include <map>
#include <set>

#include "conflux/cc/ops/standard_ops.h"
#include "control_flow_internal.h"
#include "plugin_gradients.h"

namespace cfx {

Status GradientRegistry::Register(const std::string& op, GradFunc fn) {
  if (fns_.count(op) || no_gradient_.count(op))
    return errors::AlreadyExists("a gradient for op ", op, " is already registered");
  fns_.emplace(op, std::move(fn));
  return Status();
}

void GradientRegistry::RegisterNoGradient(const std::string& op) { no_gradient_.insert(op); }

const GradFunc* GradientRegistry::Find(const std::string& op) const {
  auto it = fns_.find(op);
  return it == fns_.end() ? nullptr : &it->second;
}

namespace internal {

bool IsDifferentiable(DataType t) {
  t = BaseType(t);
  return t == DT_FLOAT || t == DT_DOUBLE || t == DT_HALF || t == DT_BFLOAT16 || t == DT_COMPLEX64 ||
         t == DT_COMPLEX128 || t == DT_VARIANT;
}

Output SumGradients(const Scope& scope, const std::vector<Output>& parts) {
  if (parts.empty()) return Output();
  // Lists (variants) have no AddV2; their AddN sums element by element, as in TensorFlow.
  if (parts.size() > 1 && BaseType(parts[0].type()) == DT_VARIANT)
    return ops::AddN(scope, InputList(parts.begin(), parts.end()));
  Output sum = parts[0];
  for (size_t i = 1; i < parts.size(); ++i) sum = ops::AddV2(scope, sum, parts[i]);
  return sum;
}

}  // namespace internal

namespace {

using internal::IsDifferentiable;
using internal::SumGradients;

// The sweep; while loops and conds take part through internal::SweepGradients
// (control_flow_grad.cc), which calls back into VisitNode per node.
class Backprop final : public internal::GradientSweep {
 public:
  Backprop(const Scope& scope, const GradientRegistry* extra) : scope_(scope), extra_(extra) {}

  Status Run(const std::vector<Output>& ys, const std::vector<Output>& xs,
             const std::vector<Output>& grad_ys, std::vector<Output>* grad_xs) {
    if (!grad_ys.empty() && grad_ys.size() != ys.size())
      return errors::InvalidArgument("AddSymbolicGradients: ", ys.size(), " ys but ",
                                     grad_ys.size(), " grad_ys");
    for (const Output& o : ys)
      if (!o.valid()) return errors::InvalidArgument("AddSymbolicGradients: an invalid y");
    for (const Output& o : xs)
      if (!o.valid()) return errors::InvalidArgument("AddSymbolicGradients: an invalid x");
    MarkRelevant(ys, xs);
    for (size_t i = 0; i < ys.size(); ++i) {
      Output g = grad_ys.empty() ? ops::OnesLike(scope_.NewSubScope("grad_ys"), ys[i]) : grad_ys[i];
      contributions_[ys[i]].push_back(g);
    }
    CFX_RETURN_IF_ERROR(scope_.status());
    CFX_RETURN_IF_ERROR(internal::SweepGradients(scope_, this));
    grad_xs->clear();
    for (const Output& x : xs) {
      Output g = SumGradients(scope_, contributions_[x]);
      if (!g.valid()) g = ops::ZerosLike(scope_, x);
      grad_xs->push_back(g);
    }
    return scope_.status();
  }

  // internal::GradientSweep.
  const Scope& scope() const override { return scope_; }
  bool IsFromX(Node* n) const override { return from_x_.count(n) > 0; }
  bool IsToY(Node* n) const override { return to_y_.count(n) > 0; }
  Output Gradient(const Output& o) override {
    auto it = contributions_.find(o);
    return it == contributions_.end() ? Output() : SumGradients(scope_, it->second);
  }
  void AddGradient(const Output& o, const Output& grad) override {
    contributions_[o].push_back(grad);
  }
  Status VisitNode(Node* n) override { return Visit(Operation(n)); }

 private:
  // from_x_: nodes with an x among their ancestors (or an x's own node); to_y_: nodes some y
  // depends on through data edges.
  void MarkRelevant(const std::vector<Output>& ys, const std::vector<Output>& xs) {
    std::vector<Node*> stack;
    for (const Output& y : ys) stack.push_back(y.node());
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      if (!to_y_.insert(n).second) continue;
      for (const Edge* e : n->in_data_edges())
        if (e != nullptr) stack.push_back(e->src);
    }
    for (const Output& x : xs) stack.push_back(x.node());
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      if (!from_x_.insert(n).second) continue;
      for (const Edge* e : n->out_edges())
        if (!e->IsControl()) stack.push_back(e->dst);
    }
    for (const Output& x : xs) x_nodes_.insert(x.node());
  }

  // Whether some data input of `n` is reachable from an x: only then is its gradient needed.
  bool NeedsInputGradients(Node* n) const {
    for (const Edge* e : n->in_data_edges())
      if (e != nullptr && from_x_.count(e->src) && IsDifferentiable(e->src->output_types()[e->src_output]))
        return true;
    return false;
  }

  StatusOr<GradFunc> FindGradient(const Operation& op) {
    const std::string& type = op.op_type();
    if (extra_ != nullptr) {
      if (const GradFunc* f = extra_->Find(type)) return *f;
    }
    if (const GradFunc* f = StandardGradients().Find(type)) return *f;
    if (const GradFunc* f = internal::ControlFlowGradients().Find(type)) return *f;
    if (auto f = internal::FindPluginGradFunc(scope_.runtime(), type)) return *f;
    return errors::NotFound("no gradient is defined for op ", type, " (node '", op.name(),
                            "'), which is on the path from an x to a y");
  }

  Status Visit(const Operation& op) {
    std::vector<Output> dys(op.num_outputs());
    bool any = false;
    for (int k = 0; k < op.num_outputs(); ++k) {
      auto it = contributions_.find(op.output(k));
      if (it == contributions_.end()) continue;
      dys[k] = SumGradients(scope_, it->second);
      any = any || dys[k].valid();
    }
    if (!any || !NeedsInputGradients(op.node())) return Status();
    const std::string& type = op.op_type();
    if ((extra_ != nullptr && extra_->IsNoGradient(type)) ||
        StandardGradients().IsNoGradient(type) ||
        internal::ControlFlowGradients().IsNoGradient(type))
      return Status();
    CFX_ASSIGN_OR_RETURN(GradFunc fn, FindGradient(op));
    // Outputs nothing depends on get zeros, so that every function sees a gradient per output
    // (except Switch and Merge, where zeros would be live on the wrong branch).
    Scope grad_scope = scope_.NewSubScope("gradients/" + op.name());
    for (int k = 0; k < op.num_outputs(); ++k)
      if (!dys[k].valid() && IsDifferentiable(op.output_type(k)) &&
          !internal::TakesMissingGradients(type))
        dys[k] = ops::ZerosLike(grad_scope, op.output(k));
    std::vector<Output> dxs;
    Status s = fn(grad_scope, op, dys, &dxs);
    if (!s.ok())
      return s.WithPrefix(StrCat("gradient of node '", op.name(), "' (", type, "): "));
    CFX_RETURN_IF_ERROR(scope_.status());
    if (static_cast<int>(dxs.size()) != op.num_inputs())
      return errors::Internal("the gradient function of ", type, " returned ", dxs.size(),
                              " gradients for ", op.num_inputs(), " inputs (node '", op.name(),
                              "')");
    for (int i = 0; i < op.num_inputs(); ++i) {
      if (!dxs[i].valid()) continue;
      Output src = op.input(i);
      if (!from_x_.count(src.node()) || !IsDifferentiable(src.type())) continue;
      contributions_[src].push_back(dxs[i]);
    }
    return Status();
  }

  Scope scope_;
  const GradientRegistry* extra_;
  std::set<Node*> from_x_, to_y_, x_nodes_;
  std::map<Output, std::vector<Output>> contributions_;
};

}  // namespace

Status AddSymbolicGradients(const Scope& scope, const std::vector<Output>& ys,
                            const std::vector<Output>& xs, const std::vector<Output>& grad_ys,
                            std::vector<Output>* grad_xs, const GradientRegistry* extra) {
  CFX_RETURN_IF_ERROR(scope.status());
  Backprop backprop(scope, extra);
  Status s = backprop.Run(ys, xs, grad_ys, grad_xs);
  if (!s.ok()) scope.UpdateStatus(s);
  return s;
}

Status AddSymbolicGradients(const Scope& scope, const std::vector<Output>& ys,
                            const std::vector<Output>& xs, std::vector<Output>* grad_xs) {
  return AddSymbolicGradients(scope, ys, xs, {}, grad_xs, nullptr);
}

}  // namespace cfx
