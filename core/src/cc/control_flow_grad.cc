// Gradients through Cond and WhileLoop (EuroSys 2018 §5.1-5.2, TensorFlow's v1 control-flow
// gradients).
//
// A cond's gradient is a cond over the branch gradients, driven by the forward predicate: the
// gradient of a cond Merge is Switch(grad, pred), that of a branch's Switch is the Merge of what
// the branches gave back. These are per-op gradient functions.
//
// A while loop is differentiated as a unit, once the sweep has visited every consumer of its
// outputs: a backward loop runs as many iterations as the forward one did (a counter added to the
// forward loop for this gradient, counted down), its loop variables are the gradients of the
// forward loop variables plus one accumulator per loop invariant, and its body is the sweep over
// the forward body. A forward value the body's gradient needs is pushed on a stack in every
// forward iteration and popped in the matching backward one; pushes of iteration k run after
// iteration k's counter pivot and before its counter increment (so they run in iteration order),
// and likewise for the pops in the backward loop. A value computed in a branch of a cond inside
// the loop is pushed only when that branch runs and popped behind the same (popped) predicate; a
// loop invariant is entered into the backward loop instead, a constant copied. A value read only
// for its shape (Shape, Size, Rank: every broadcasting op's gradient) is not pushed: the shape read
// moves into the forward loop and its small result is pushed (PlaceShapeReads). The gradient
// functions themselves know nothing of this: the nodes they build in the backward loop are
// claimed by its context, which resolves their inputs (control_flow_internal.h).
#include <algorithm>
#include <deque>
#include <set>

#include "conflux/cc/ops/standard_ops.h"
#include "control_flow_internal.h"

namespace cfx::internal {
namespace {

struct SweepItem {
  Node* node = nullptr;                // a node of the frame, or
  ControlFlowContext* loop = nullptr;  // a loop directly inside the frame, as one unit
};

// The nodes of `frame` (nullptr: the root) in reverse topological order, every loop directly
// inside the frame standing for all the nodes it contains. Ties keep the graph's order, so a
// graph without loops sees the order of Graph::TopologicalOrder.
StatusOr<std::vector<SweepItem>> ReverseOrder(const ControlFlowGraph* cf, const Graph& graph,
                                              ControlFlowContext* frame) {
  std::vector<int> unit(graph.num_nodes(), -1);
  std::vector<SweepItem> items;
  std::map<ControlFlowContext*, int> loop_units;
  for (const auto& node : graph.nodes()) {
    ControlFlowContext* outermost = nullptr;
    bool inside = true;
    for (ControlFlowContext* c = cf ? cf->ContextOf(node.get()) : nullptr; c != frame;
         c = c->parent) {
      if (c == nullptr) {
        inside = false;
        break;
      }
      if (c->is_loop()) outermost = c;
    }
    if (!inside) continue;
    if (outermost == nullptr) {
      unit[node->id()] = static_cast<int>(items.size());
      items.push_back({node.get(), nullptr});
      continue;
    }
    auto [it, added] = loop_units.emplace(outermost, static_cast<int>(items.size()));
    if (added) items.push_back({nullptr, outermost});
    unit[node->id()] = it->second;
  }
  std::vector<int> pending(items.size(), 0);
  std::vector<std::vector<int>> successors(items.size());
  for (const auto& node : graph.nodes()) {
    const int from = unit[node->id()];
    if (from < 0) continue;
    for (const Edge* e : node->out_edges()) {
      const int to = unit[e->dst->id()];
      if (to < 0 || to == from || IsLoopBackEdge(*e)) continue;
      successors[from].push_back(to);
      ++pending[to];
    }
  }
  std::deque<int> ready;
  for (size_t i = 0; i < items.size(); ++i)
    if (pending[i] == 0) ready.push_back(static_cast<int>(i));
  std::vector<SweepItem> order;
  order.reserve(items.size());
  while (!ready.empty()) {
    const int i = ready.front();
    ready.pop_front();
    order.push_back(items[i]);
    for (int next : successors[i])
      if (--pending[next] == 0) ready.push_back(next);
  }
  if (order.size() != items.size())
    return errors::InvalidArgument(
        "the graph has a cycle that no while loop closes; gradients need an acyclic graph");
  return std::vector<SweepItem>(order.rbegin(), order.rend());
}

Status SweepFrame(ControlFlowGraph* cf, const Scope& scope, ControlFlowContext* frame,
                  GradientSweep* sweep);

// The counter that a gradient adds to forward loop `loop`: 0 -> +1 per iteration, its Exit the
// trip count. *sync (a ControlTrigger) runs after all of an iteration's pushes; the increment
// waits for it.
Status AddForwardCounter(ControlFlowGraph* cf, const Scope& s, ControlFlowContext* loop,
                         LoopVarNodes* counter, Node** sync) {
  CFX_ASSIGN_OR_RETURN(Node * zero, ConstantIn(cf, s, loop->parent,
                                               Tensor::Scalar<int32_t>(DT_INT32, 0), "f_count"));
  CFX_RETURN_IF_ERROR(AddLoopEntry(cf, s, s, loop, Output(zero, 0), counter));
  CFX_RETURN_IF_ERROR(AddLoopSwitch(cf, s, loop, counter));
  OpBuilder trigger(s.WithOpName("f_sync"), "ControlTrigger");
  trigger.ControlInput(Operation(counter->identity));
  CFX_ASSIGN_OR_RETURN(*sync, BuildNode(cf, s, trigger, loop, loop));
  OpBuilder one(s, "Const");
  one.Attr("dtype", DT_INT32)
      .Attr("value", Tensor::Scalar<int32_t>(DT_INT32, 1))
      .ControlInput(Operation(counter->identity));
  CFX_ASSIGN_OR_RETURN(Node * one_node, BuildNode(cf, s, one, loop, loop));
  OpBuilder add(s, "AddV2");
  add.Input(Output(counter->identity, 0)).Input(Output(one_node, 0)).ControlInput(Operation(*sync));
  CFX_ASSIGN_OR_RETURN(Node * next, BuildNode(cf, s, add, loop, loop));
  return AddLoopBackEdge(cf, s, loop, Output(next, 0), counter);
}

// The backward counter of `grad`: the forward trip count down to 0; its LoopCond drives the
// backward loop, its Identity(Switch:1) is the pivot that pops follow, and the decrement waits
// for backward_sync, which follows the pops.
Status AddBackwardCounter(ControlFlowGraph* cf, const Scope& s, ControlFlowContext* grad,
                          const Output& count) {
  LoopVarNodes counter;
  CFX_RETURN_IF_ERROR(AddLoopEntry(cf, s, s, grad, count, &counter));
  grad->pivot = counter.merge;
  const Tensor one = Tensor::Scalar<int32_t>(DT_INT32, 1);
  CFX_ASSIGN_OR_RETURN(Node * one_node, ConstantIn(cf, s, grad, one, "b_count/one"));
  OpBuilder more(s, "GreaterEqual");
  more.Input(Output(counter.merge, 0)).Input(Output(one_node, 0));
  CFX_ASSIGN_OR_RETURN(Node * more_node, BuildNode(cf, s, more, grad, grad));
  OpBuilder loop_cond(s, "LoopCond");
  loop_cond.Input(Output(more_node, 0));
  CFX_ASSIGN_OR_RETURN(grad->loop_cond, BuildNode(cf, s, loop_cond, grad, grad));
  CFX_RETURN_IF_ERROR(AddLoopSwitch(cf, s, grad, &counter));
  grad->pivot = grad->backward_pivot = counter.identity;
  OpBuilder trigger(s.WithOpName("b_sync"), "ControlTrigger");
  trigger.ControlInput(Operation(counter.identity));
  CFX_ASSIGN_OR_RETURN(grad->backward_sync, BuildNode(cf, s, trigger, grad, grad));
  CFX_ASSIGN_OR_RETURN(Node * one_in_body, ConstantIn(cf, s, grad, one, "b_count/one"));
  OpBuilder sub(s, "Sub");
  sub.Input(Output(counter.identity, 0))
      .Input(Output(one_in_body, 0))
      .ControlInput(Operation(grad->backward_sync));
  CFX_ASSIGN_OR_RETURN(Node * next, BuildNode(cf, s, sub, grad, grad));
  CFX_RETURN_IF_ERROR(AddLoopBackEdge(cf, s, grad, Output(next, 0), &counter));
  grad->vars.push_back(counter);
  return Status();
}

// Builds the backward loop of forward loop `loop` (see the file comment) and hands the
// gradients of the loop's inputs (initial values, invariants) to the sweep.
Status BuildWhileGradient(ControlFlowGraph* cf, ControlFlowContext* loop, GradientSweep* sweep) {
  if (loop->forward != nullptr) {
    for (size_t i = 1; i < loop->vars.size(); ++i)
      if (sweep->Gradient(Output(loop->vars[i].exit, 0)).valid())
        return errors::Unimplemented("a gradient through the backward loop '", loop->name,
                                     "' (a gradient of a gradient) is not supported");
    return Status();
  }
  std::vector<size_t> vars;
  std::vector<Output> inits;
  bool any = false;
  for (size_t i = 0; i < loop->vars.size(); ++i) {
    const LoopVarNodes& var = loop->vars[i];
    if (!IsDifferentiable(var.merge->output_types()[0]) || !sweep->IsFromX(var.merge)) continue;
    vars.push_back(i);
    inits.push_back(sweep->Gradient(Output(var.exit, 0)));
    any = any || inits.back().valid();
  }
  if (!any) return Status();
  std::vector<std::pair<Output, Node*>> invariants;
  for (const auto& [value, enter] : loop->invariants)
    if (IsDifferentiable(value.type()) && sweep->IsFromX(value.node()) && sweep->IsToY(enter))
      invariants.emplace_back(value, enter);

  const Scope s = sweep->scope().NewSubScope("gradients/" + loop->name).WithNoControlDependencies();
  for (size_t k = 0; k < vars.size(); ++k)
    if (!inits[k].valid()) inits[k] = ops::ZerosLike(s, Output(loop->vars[vars[k]].exit, 0));
  for (const auto& inv : invariants) inits.push_back(ops::ZerosLike(s, inv.first));
  CFX_RETURN_IF_ERROR(s.status());

  ControlFlowContext* parent = cf->current();
  ControlFlowContext* grad = cf->NewContext(ControlFlowContext::Kind::kWhile, parent, ScopeName(s));
  grad->forward = loop;
  grad->parallel_iterations = loop->parallel_iterations;
  CFX_RETURN_IF_ERROR(cf->Open(s, grad));
  LoopVarNodes forward_counter;
  CFX_RETURN_IF_ERROR(AddForwardCounter(cf, s, loop, &forward_counter, &grad->forward_sync));
  grad->forward_pivot = forward_counter.identity;
  CFX_ASSIGN_OR_RETURN(Output count,
                       cf->Resolve(s, parent, Output(forward_counter.exit, 0), nullptr));
  CFX_RETURN_IF_ERROR(AddBackwardCounter(cf, s, grad, count));
  for (const Output& init : inits) {
    CFX_ASSIGN_OR_RETURN(Output value, cf->Resolve(s, parent, init, nullptr));
    grad->vars.emplace_back();
    CFX_RETURN_IF_ERROR(AddLoopEntry(cf, s, s, grad, value, &grad->vars.back()));
  }
  for (size_t k = 1; k < grad->vars.size(); ++k)
    CFX_RETURN_IF_ERROR(AddLoopSwitch(cf, s, grad, &grad->vars[k]));

  // The body: the gradients of this iteration's results flow back through the forward body.
  for (size_t k = 0; k < vars.size(); ++k) {
    const Edge* result = loop->vars[vars[k]].next_iteration->in_data_edges()[0];
    sweep->AddGradient(Output(result->src, result->src_output),
                       Output(grad->vars[1 + k].identity, 0));
  }
  CFX_RETURN_IF_ERROR(SweepFrame(cf, s, loop, sweep));
  std::vector<Output> next;
  for (size_t k = 0; k < vars.size(); ++k) {
    Output g = sweep->Gradient(Output(loop->vars[vars[k]].identity, 0));
    next.push_back(g.valid() ? g : ops::ZerosLike(s, Output(grad->vars[1 + k].identity, 0)));
  }
  for (size_t j = 0; j < invariants.size(); ++j) {
    const Output sum(grad->vars[1 + vars.size() + j].identity, 0);
    const Output g = sweep->Gradient(Output(invariants[j].second, 0));
    next.push_back(g.valid() ? SumGradients(s, {sum, g}) : sum);
  }
  CFX_RETURN_IF_ERROR(s.status());
  CFX_RETURN_IF_ERROR(cf->Flush(s, grad));
  for (size_t k = 0; k < next.size(); ++k) {
    CFX_ASSIGN_OR_RETURN(Output value, cf->Resolve(s, grad, next[k], nullptr));
    CFX_RETURN_IF_ERROR(AddLoopBackEdge(cf, s, grad, value, &grad->vars[1 + k]));
  }
  CFX_RETURN_IF_ERROR(cf->Close(s, grad));

  // The gradients of the loop's inputs leave through the backward loop's Exits.
  for (size_t k = 0; k < vars.size(); ++k) {
    const Edge* init = loop->vars[vars[k]].enter->in_data_edges()[0];
    if (sweep->IsFromX(init->src))
      sweep->AddGradient(Output(init->src, init->src_output), Output(grad->vars[1 + k].exit, 0));
  }
  for (size_t j = 0; j < invariants.size(); ++j)
    sweep->AddGradient(invariants[j].first, Output(grad->vars[1 + vars.size() + j].exit, 0));
  return Status();
}

Status SweepFrame(ControlFlowGraph* cf, const Scope& scope, ControlFlowContext* frame,
                  GradientSweep* sweep) {
  CFX_ASSIGN_OR_RETURN(std::vector<SweepItem> order, ReverseOrder(cf, *scope.graph(), frame));
  for (const SweepItem& item : order) {
    if (item.loop != nullptr) {
      CFX_RETURN_IF_ERROR(BuildWhileGradient(cf, item.loop, sweep));
      continue;
    }
    Node* n = item.node;
    if (frame != nullptr && frame->structure.count(n)) continue;
    if (!sweep->IsFromX(n) || !sweep->IsToY(n)) continue;
    CFX_RETURN_IF_ERROR(sweep->VisitNode(n));
  }
  return Status();
}

using Grads = std::vector<Output>;

// Cond's Merge: Switch(grad, pred), output i to input i. Another Merge (from an imported graph)
// sends the gradient to the input that value_index names.
Status MergeGrad(const Scope& s, const Operation& op, const Grads& dy, Grads* dx) {
  dx->assign(op.num_inputs(), Output());
  if (!dy[0].valid()) return s.status();
  const ControlFlowGraph* cf = ControlFlowGraph::Get(s, false);
  const Output pred = cf != nullptr ? cf->CondMergePred(op.node()) : Output();
  if (pred.valid() && op.num_inputs() == 2) {
    OpBuilder b(s, "Switch");
    Operation sw = b.Input(dy[0]).Input(pred).Finish();
    if (sw.valid()) *dx = {sw.output(0), sw.output(1)};
    return s.status();
  }
  for (int i = 0; i < op.num_inputs(); ++i) {
    OpBuilder b(s, "Switch");
    Operation sw = b.Input(dy[0]).Input(ops::Equal(s, op.output(1), i)).Finish();
    if (sw.valid()) (*dx)[i] = sw.output(1);
  }
  return s.status();
}

// A branch's Switch: the Merge of the gradients of its two outputs; an output no gradient
// reached gets zeros that are live exactly when that output would have been.
Status SwitchGrad(const Scope& s, const Operation& op, const Grads& dy, Grads* dx) {
  dx->assign(op.num_inputs(), Output());
  if (!dy[0].valid() && !dy[1].valid()) return s.status();
  InputList parts;
  for (int k = 0; k < 2; ++k) {
    if (dy[k].valid()) {
      parts.push_back(dy[k]);
      continue;
    }
    OpBuilder b(s, "Switch");
    Operation zeros = b.Input(ops::ZerosLike(s, op.input(0))).Input(op.input(1)).Finish();
    if (!zeros.valid()) return s.status();
    parts.push_back(zeros.output(k));
  }
  OpBuilder b(s, "Merge");
  Operation merge = b.Input(parts).Finish();
  if (merge.valid()) (*dx)[0] = merge.output(0);
  return s.status();
}

Status UnbuiltLoopGrad(const Scope&, const Operation& op, const Grads&, Grads*) {
  return errors::Unimplemented(
      "gradients through a while loop that WhileLoop did not build "
      "(node '",
      op.name(), "', e.g. from an imported GraphDef) are not supported");
}

// Whether `n` is a loop invariant of `forward`: the constant Enter that captured it.
bool IsLoopInvariant(const ControlFlowContext* forward, const Node* n) {
  const AttrValue* is_constant = n->op() == "Enter" ? n->attr("is_constant") : nullptr;
  return is_constant != nullptr && is_constant->b && forward->structure.count(n) > 0;
}

// Ops that read nothing of their input but its shape.
bool IsShapeRead(const Node* n) {
  return (n->op() == "Shape" || n->op() == "Size" || n->op() == "Rank") && n->num_inputs() == 1;
}

}  // namespace

Status PlaceShapeReads(ControlFlowGraph* cf, const Scope& scope, ControlFlowContext* grad,
                       const std::vector<Node*>& claimed) {
  ControlFlowContext* forward = grad->forward;
  // The forward value that backward node `n` reads only for its shape and that StackedValue
  // would push; invalid for any other node. One with control inputs stays: they are backward
  // nodes, which a node of the forward loop must not wait for.
  auto shape_only_input = [&](const Node* n) {
    if (!IsShapeRead(n) || !n->in_control_edges().empty()) return Output();
    const Edge* e = n->in_data_edges()[0];
    if (e == nullptr || FrameOf(cf->OutputContextOf(e->src)) != forward ||
        IsLoopInvariant(forward, e->src) || e->src->op() == "Const")
      return Output();
    return Output(e->src, e->src_output);
  };
  std::set<Output> read_fully;
  for (const Node* n : claimed)
    if (!shape_only_input(n).valid())
      for (const Edge* e : n->in_data_edges())
        if (e != nullptr) read_fully.emplace(e->src, e->src_output);
  for (Node* n : claimed) {
    const Output value = shape_only_input(n);
    if (!value.valid() || read_fully.count(value) || grad->history.count(value)) continue;
    std::vector<Node*>& moved = grad->shape_reads[value];
    auto same = std::find_if(moved.begin(), moved.end(), [&](const Node* m) {
      return m->op() == n->op() && m->def().attr == n->def().attr;
    });
    if (same != moved.end()) {
      // A repeat: its readers read the first one, and it stays behind in the forward loop unread
      // (a graph does not remove nodes).
      std::vector<std::pair<Node*, int>> readers;
      for (const Edge* e : n->out_edges())
        if (!e->IsControl()) readers.emplace_back(e->dst, e->dst_input);
      for (const auto& [dst, input] : readers)
        CFX_RETURN_IF_ERROR(scope.graph()->UpdateEdge(*same, 0, dst, input));
    } else {
      moved.push_back(n);
    }
    ControlFlowContext* home = cf->OutputContextOf(value.node());
    cf->ClaimSkeleton(n, home, home);
  }
  return Status();
}

StatusOr<Output> StackedValue(ControlFlowGraph* cf, const Scope& scope, ControlFlowContext* grad,
                              const Output& value) {
  auto it = grad->history.find(value);
  if (it != grad->history.end()) return it->second;
  ControlFlowContext* forward = grad->forward;
  Node* n = value.node();
  const Scope s = scope.WithNoControlDependencies();
  Output result;
  if (IsLoopInvariant(forward, n)) {
    // A loop invariant: the value outside the forward loop, entered into the backward one.
    const Edge* e = n->in_data_edges()[0];
    CFX_ASSIGN_OR_RETURN(result, cf->Resolve(s, grad, Output(e->src, e->src_output), n));
  } else if (n->op() == "Const") {
    // A constant: a copy in the backward loop rather than a stack.
    OpBuilder copy(s, "Const");
    copy.Attr("dtype", *n->attr("dtype"))
        .Attr("value", *n->attr("value"))
        .ControlInput(Operation(grad->backward_pivot));
    CFX_ASSIGN_OR_RETURN(Node * c, BuildNode(cf, s, copy, grad, grad));
    result = Output(c, 0);
  } else {
    ControlFlowContext* home = cf->OutputContextOf(n);
    const DataType dtype = BaseType(value.type());
    CFX_ASSIGN_OR_RETURN(
        Node * max_size,
        ConstantIn(cf, s, forward->parent, Tensor::Scalar<int32_t>(DT_INT32, -1), "f_acc/size"));
    OpBuilder stack(s.WithOpName("f_acc"), "StackV2");
    stack.Input(Output(max_size, 0)).Attr("elem_type", dtype);
    CFX_ASSIGN_OR_RETURN(Node * stack_node,
                         BuildNode(cf, s, stack, forward->parent, forward->parent));
    const Output handle(stack_node, 0);
    // Push where the value lives (in a branch: only when that branch runs).
    CFX_ASSIGN_OR_RETURN(Output push_handle, cf->Resolve(s, home, handle, n));
    OpBuilder push(s, "StackPushV2");
    // On the value's device (as TensorFlow colocates it), where its swap copies start.
    push.Input(push_handle)
        .Input(value)
        .Attr("swap_memory", forward->swap_memory)
        .Attr("_class", std::vector<std::string>{"loc:@" + n->name()})
        .ControlInput(Operation(grad->forward_pivot));
    CFX_ASSIGN_OR_RETURN(Node * push_node, BuildNode(cf, s, push, home, home));
    s.graph()->AddControlEdge(push_node, grad->forward_sync);
    // Pop in the backward loop, behind the same branch's predicate.
    CFX_ASSIGN_OR_RETURN(Output pop_handle, cf->Resolve(s, grad, handle, n));
    if (home != forward) {
      CFX_ASSIGN_OR_RETURN(Output pred, cf->Resolve(s, grad, home->pred, n));
      OpBuilder guard(s, "Switch");
      guard.Input(pop_handle).Input(pred);
      CFX_ASSIGN_OR_RETURN(Node * guard_node, BuildNode(cf, s, guard, grad, grad));
      pop_handle = Output(guard_node, home->branch);
    }
    OpBuilder pop(s, "StackPopV2");
    pop.Input(pop_handle).Attr("elem_type", dtype).ControlInput(Operation(grad->backward_pivot));
    CFX_ASSIGN_OR_RETURN(Node * pop_node, BuildNode(cf, s, pop, grad, grad));
    s.graph()->AddControlEdge(pop_node, grad->backward_sync);
    result = Output(pop_node, 0);
  }
  grad->history[value] = result;
  return result;
}

Status SweepGradients(const Scope& scope, GradientSweep* sweep) {
  ControlFlowGraph* cf = ControlFlowGraph::Get(scope, false);
  ControlFlowContext* saved = cf != nullptr ? cf->current() : nullptr;
  Status s = SweepFrame(cf, scope, nullptr, sweep);
  // A failure half-way leaves no backward loop open for later constructs to nest in.
  if (!s.ok() && cf != nullptr) cf->RestoreCurrent(saved);
  return s;
}

const GradientRegistry& ControlFlowGradients() {
  static const GradientRegistry* registry = [] {
    auto* r = new GradientRegistry;
    for (const char* op : {"Switch", "RefSwitch"}) (void)r->Register(op, SwitchGrad);
    for (const char* op : {"Merge", "RefMerge"}) (void)r->Register(op, MergeGrad);
    for (const char* op :
         {"Enter", "RefEnter", "Exit", "RefExit", "NextIteration", "RefNextIteration"})
      (void)r->Register(op, UnbuiltLoopGrad);
    for (const char* op : {"LoopCond", "ControlTrigger"}) r->RegisterNoGradient(op);
    return r;
  }();
  return *registry;
}

bool TakesMissingGradients(const std::string& op) {
  return op == "Switch" || op == "RefSwitch" || op == "Merge" || op == "RefMerge";
}

}  // namespace cfx::internal
