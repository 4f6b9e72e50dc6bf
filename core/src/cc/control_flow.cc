// WhileLoop and Cond (conflux/cc/control_flow.h), and the contexts that record which construct
// every node belongs to (control_flow_internal.h).
#include "conflux/cc/control_flow.h"

#include <limits>

#include "conflux/cc/const_op.h"
#include "conflux/cc/ops/standard_ops.h"
#include "control_flow_internal.h"

namespace cfx {
namespace internal {

ControlFlowContext* FrameOf(ControlFlowContext* ctx) {
  while (ctx != nullptr && !ctx->is_loop()) ctx = ctx->parent;
  return ctx;
}

bool Encloses(const ControlFlowContext* ancestor, const ControlFlowContext* ctx) {
  for (; ctx != nullptr; ctx = ctx->parent)
    if (ctx == ancestor) return true;
  return ancestor == nullptr;
}

namespace {

std::string Describe(const ControlFlowContext* ctx) {
  if (ctx == nullptr) return "the root";
  if (ctx->is_loop()) return StrCat("while loop '", ctx->name, "'");
  return StrCat("the ", ctx->branch ? "true" : "false", " branch of cond '", ctx->name, "'");
}

}  // namespace

ControlFlowGraph* ControlFlowGraph::Get(const Scope& scope, bool create) {
  std::function<std::shared_ptr<void>()> make;
  if (create)
    make = [] { return std::static_pointer_cast<void>(std::make_shared<ControlFlowGraph>()); };
  return static_cast<ControlFlowGraph*>(scope.GraphState("conflux.control_flow", make).get());
}

ControlFlowContext* ControlFlowGraph::NewContext(ControlFlowContext::Kind kind,
                                                 ControlFlowContext* parent, std::string name) {
  contexts_.push_back(std::make_unique<ControlFlowContext>());
  ControlFlowContext* ctx = contexts_.back().get();
  ctx->kind = kind;
  ctx->parent = parent;
  ctx->name = std::move(name);
  return ctx;
}

void ControlFlowGraph::Claim(Node* n, ControlFlowContext* ctx) { placement_[n] = {ctx, ctx}; }

void ControlFlowGraph::ClaimSkeleton(Node* n, ControlFlowContext* ctx,
                                     ControlFlowContext* output_ctx) {
  placement_[n] = {ctx, output_ctx};
  if (ctx != nullptr) ctx->structure.insert(n);
}

ControlFlowContext* ControlFlowGraph::ContextOf(const Node* n) const {
  auto it = placement_.find(n);
  return it == placement_.end() ? nullptr : it->second.first;
}

ControlFlowContext* ControlFlowGraph::OutputContextOf(const Node* n) const {
  auto it = placement_.find(n);
  return it == placement_.end() ? nullptr : it->second.second;
}

Output ControlFlowGraph::CondMergePred(const Node* merge) const {
  auto it = cond_merges_.find(merge);
  return it == cond_merges_.end() ? Output() : it->second;
}

Status ControlFlowGraph::Open(const Scope& scope, ControlFlowContext* ctx) {
  CFX_RETURN_IF_ERROR(Flush(scope, current_));
  ctx->first_unclaimed = scope.graph()->num_nodes();
  current_ = ctx;
  return Status();
}

Status ControlFlowGraph::Close(const Scope& scope, ControlFlowContext* ctx) {
  CFX_RETURN_IF_ERROR(Flush(scope, ctx));
  current_ = ctx->parent;
  return Status();
}

Status ControlFlowGraph::Flush(const Scope& scope, ControlFlowContext* ctx) {
  if (ctx == nullptr) return Status();  // the root needs no claiming
  Graph* graph = scope.graph();
  std::vector<Node*> claimed;
  for (int id = ctx->first_unclaimed; id < graph->num_nodes(); ++id) {
    Node* n = graph->nodes()[id].get();
    if (placement_.count(n)) continue;
    Claim(n, ctx);
    claimed.push_back(n);
  }
  if (ctx->forward != nullptr) CFX_RETURN_IF_ERROR(PlaceShapeReads(this, scope, ctx, claimed));
  // A shape read may have moved to the forward loop: resolve each node where it now lives.
  for (Node* n : claimed) CFX_RETURN_IF_ERROR(ResolveInputs(scope, ContextOf(n), n));
  ctx->first_unclaimed = graph->num_nodes();
  return Status();
}

Status ControlFlowGraph::ResolveInputs(const Scope& scope, ControlFlowContext* ctx, Node* n) {
  Graph* graph = scope.graph();
  for (int i = 0; i < n->num_inputs(); ++i) {
    const Edge* e = n->in_data_edges()[i];
    if (e == nullptr) continue;
    const Output value(e->src, e->src_output);
    CFX_ASSIGN_OR_RETURN(Output version, Resolve(scope, ctx, value, n));
    if (!(version == value))
      CFX_RETURN_IF_ERROR(graph->UpdateEdge(version.node(), version.index(), n, i));
  }
  // A control dependency on a node of another frame becomes one on an Identity, here, of that
  // node's first output (as TensorFlow does); one on a node without outputs is dropped.
  std::vector<Node*> external;
  for (const Edge* e : n->in_control_edges())
    if (FrameOf(OutputContextOf(e->src)) != FrameOf(ctx)) external.push_back(e->src);
  for (Node* src : external) {
    graph->RemoveControlEdge(src, n);
    if (src->num_outputs() == 0) continue;
    CFX_ASSIGN_OR_RETURN(Output value, Resolve(scope, ctx, Output(src, 0), n));
    const Scope s = scope.WithNoControlDependencies();
    OpBuilder identity(s, "Identity");
    identity.Input(value);
    CFX_ASSIGN_OR_RETURN(Node * after, BuildNode(this, s, identity, ctx, ctx, false));
    graph->AddControlEdge(after, n);
  }
  // A node that reads nothing that changes per iteration (or nothing at all) would run where its
  // inputs are available rather than where the construct runs: the pivot decides.
  if (ctx->pivot == nullptr || !n->in_control_edges().empty()) return Status();
  bool invariant = ctx->is_loop();
  for (const Edge* e : n->in_data_edges()) {
    const AttrValue* constant =
        e != nullptr && e->src->op() == "Enter" ? e->src->attr("is_constant") : nullptr;
    invariant = invariant && constant != nullptr && constant->b;
  }
  if (n->num_inputs() == 0 || invariant) graph->AddControlEdge(ctx->pivot, n);
  return Status();
}

StatusOr<Output> ControlFlowGraph::Resolve(const Scope& scope, ControlFlowContext* ctx,
                                           const Output& value, const Node* consumer) {
  ControlFlowContext* home = OutputContextOf(value.node());
  if (home == ctx) return value;
  // A backward loop reads its forward loop's values from stacks.
  if (ctx != nullptr && ctx->forward != nullptr && FrameOf(home) == ctx->forward)
    return StackedValue(this, scope, ctx, value);
  const bool reachable = ctx == nullptr            ? FrameOf(home) == nullptr
                         : ctx->forward != nullptr ? !Encloses(ctx, home)
                                                   : Encloses(home, ctx);
  if (!reachable)
    return errors::InvalidArgument(
        consumer != nullptr ? StrCat("node '", consumer->name(), "' in ") : std::string(),
        Describe(ctx), " reads '", value.name(), "', which is built inside ", Describe(home),
        "; outside a while loop or cond use its outputs instead");
  if (ctx == nullptr) return value;  // a value of a cond branch, in the root frame
  CFX_ASSIGN_OR_RETURN(Output outer, Resolve(scope, ctx->parent, value, consumer));
  return Capture(scope, ctx, outer);
}

StatusOr<Output> ControlFlowGraph::Capture(const Scope& scope, ControlFlowContext* ctx,
                                           const Output& value) {
  auto it = ctx->captured.find(value);
  if (it != ctx->captured.end()) return it->second;
  const Scope s = scope.WithNoControlDependencies();
  Output version;
  if (ctx->is_loop()) {
    OpBuilder b(s, "Enter");
    b.Input(value)
        .Attr("frame_name", ctx->name)
        .Attr("is_constant", true)
        .Attr("parallel_iterations", ctx->parallel_iterations);
    CFX_ASSIGN_OR_RETURN(Node * enter, BuildNode(this, s, b, ctx, ctx));
    ctx->invariants.emplace_back(value, enter);
    version = Output(enter, 0);
  } else {
    OpBuilder b(s, "Switch");
    b.Input(value).Input(ctx->pred);
    CFX_ASSIGN_OR_RETURN(Node * sw, BuildNode(this, s, b, ctx, ctx));
    version = Output(sw, ctx->branch);
  }
  ctx->captured[value] = version;
  return version;
}

StatusOr<Node*> BuildNode(ControlFlowGraph* cf, const Scope& scope, OpBuilder& b,
                          ControlFlowContext* ctx, ControlFlowContext* output_ctx, bool skeleton) {
  Operation op = b.Finish();
  if (!op.valid()) {
    CFX_RETURN_IF_ERROR(scope.status());
    return errors::Internal("building a control-flow node failed without an error");
  }
  if (skeleton) {
    cf->ClaimSkeleton(op.node(), ctx, output_ctx);
  } else {
    cf->Claim(op.node(), ctx);
  }
  return op.node();
}

StatusOr<Node*> ConstantIn(ControlFlowGraph* cf, const Scope& scope, ControlFlowContext* ctx,
                           const Tensor& value, const std::string& name) {
  const Scope s = scope.WithNoControlDependencies().WithOpName(name);
  OpBuilder b(s, "Const");
  b.Attr("dtype", value.dtype()).Attr("value", value);
  if (ctx != nullptr && ctx->pivot != nullptr) b.ControlInput(Operation(ctx->pivot));
  return BuildNode(cf, s, b, ctx, ctx);
}

// Builds Enter -> Merge(Enter, Enter) for one loop variable; the Merge's second input becomes the
// NextIteration once the body exists.
Status AddLoopEntry(ControlFlowGraph* cf, const Scope& enter_scope, const Scope& s,
                    ControlFlowContext* loop, const Output& init, LoopVarNodes* var) {
  OpBuilder enter(enter_scope, "Enter");
  enter.Input(init)
      .Attr("frame_name", loop->name)
      .Attr("is_constant", false)
      .Attr("parallel_iterations", loop->parallel_iterations);
  CFX_ASSIGN_OR_RETURN(var->enter, BuildNode(cf, enter_scope, enter, loop, loop));
  OpBuilder merge(s, "Merge");
  merge.Input(InputList{Output(var->enter, 0), Output(var->enter, 0)});
  CFX_ASSIGN_OR_RETURN(var->merge, BuildNode(cf, s, merge, loop, loop));
  return Status();
}

// Switch(Merge, LoopCond) -> Exit(Switch:0), Identity(Switch:1) for one loop variable.
Status AddLoopSwitch(ControlFlowGraph* cf, const Scope& s, ControlFlowContext* loop,
                     LoopVarNodes* var) {
  OpBuilder sw(s, "Switch");
  sw.Input(Output(var->merge, 0)).Input(Output(loop->loop_cond, 0));
  CFX_ASSIGN_OR_RETURN(var->switch_node, BuildNode(cf, s, sw, loop, loop));
  OpBuilder exit(s, "Exit");
  exit.Input(Output(var->switch_node, 0));
  CFX_ASSIGN_OR_RETURN(var->exit, BuildNode(cf, s, exit, loop, loop->parent));
  OpBuilder identity(s, "Identity");
  identity.Input(Output(var->switch_node, 1));
  CFX_ASSIGN_OR_RETURN(var->identity, BuildNode(cf, s, identity, loop, loop));
  return Status();
}

// NextIteration(next) closes the loop variable's cycle into its Merge.
Status AddLoopBackEdge(ControlFlowGraph* cf, const Scope& s, ControlFlowContext* loop,
                       const Output& next, LoopVarNodes* var) {
  OpBuilder b(s, "NextIteration");
  b.Input(next);
  CFX_ASSIGN_OR_RETURN(var->next_iteration, BuildNode(cf, s, b, loop, loop));
  return s.graph()->UpdateEdge(var->next_iteration, 0, var->merge, 1);
}

std::string ScopeName(const Scope& scope) {
  std::string name = scope.prefix();
  if (!name.empty() && name.back() == '/') name.pop_back();
  return name;
}

}  // namespace internal

namespace {

using internal::AddLoopBackEdge;
using internal::AddLoopEntry;
using internal::AddLoopSwitch;
using internal::BuildNode;
using internal::ControlFlowContext;
using internal::ControlFlowGraph;
using internal::ScopeName;

Status BuildWhileLoop(const Scope& scope, const std::vector<Output>& loop_vars, const CondFn& cond,
                      const BodyFn& body, std::vector<Output>* outputs,
                      const WhileLoopOptions& options) {
  CFX_RETURN_IF_ERROR(scope.status());
  const std::string what = StrCat("WhileLoop '", options.name, "': ");
  if (loop_vars.empty()) return errors::InvalidArgument(what, "needs at least one loop variable");
  for (size_t i = 0; i < loop_vars.size(); ++i)
    if (!loop_vars[i].valid())
      return errors::InvalidArgument(what, "loop variable ", i, " is an invalid Output");
  if (options.parallel_iterations < 1)
    return errors::InvalidArgument(what, "parallel_iterations must be at least 1, got ",
                                   options.parallel_iterations);
  if (options.maximum_iterations > std::numeric_limits<int32_t>::max())
    return errors::InvalidArgument(what, "maximum_iterations ", options.maximum_iterations,
                                   " does not fit in int32");
  ControlFlowGraph* cf = ControlFlowGraph::Get(scope, true);
  ControlFlowContext* parent = cf->current();
  const Scope outer = scope.NewSubScope(options.name);  // Enters keep the caller's dependencies
  const Scope s = outer.WithNoControlDependencies();
  // maximum_iterations: a counter, loop variable 0, ANDed into the predicate.
  const bool counted = options.maximum_iterations >= 0;
  const size_t skip = counted ? 1 : 0;
  std::vector<Output> vars = loop_vars;
  if (counted) vars.insert(vars.begin(), ops::Const(s.WithOpName("iteration_counter"), 0));
  CFX_RETURN_IF_ERROR(s.status());

  ControlFlowContext* loop =
      cf->NewContext(ControlFlowContext::Kind::kWhile, parent, ScopeName(outer));
  loop->parallel_iterations = options.parallel_iterations;
  loop->swap_memory = options.swap_memory;
  CFX_RETURN_IF_ERROR(cf->Open(s, loop));
  loop->vars.resize(vars.size());
  for (size_t i = 0; i < vars.size(); ++i) {
    CFX_ASSIGN_OR_RETURN(Output init, cf->Resolve(s, parent, vars[i], nullptr));
    CFX_RETURN_IF_ERROR(AddLoopEntry(cf, outer, s, loop, init, &loop->vars[i]));
  }

  loop->pivot = loop->vars[0].merge;
  std::vector<Output> current;
  for (size_t i = skip; i < vars.size(); ++i) current.emplace_back(loop->vars[i].merge, 0);
  Output pred;
  CFX_RETURN_IF_ERROR(cond(s, current, &pred));
  CFX_RETURN_IF_ERROR(s.status());
  if (!pred.valid() || BaseType(pred.type()) != DT_BOOL)
    return errors::InvalidArgument(what, "cond must return a bool scalar, but it returned ",
                                   pred.valid()
                                       ? StrCat(DataTypeString(pred.type()), " (", pred.name(), ")")
                                       : std::string("an invalid Output"));
  if (counted) {
    Output below =
        ops::Less(s, Output(loop->vars[0].merge, 0), static_cast<int>(options.maximum_iterations));
    pred = ops::LogicalAnd(s, below, pred);
  }
  CFX_RETURN_IF_ERROR(cf->Flush(s, loop));
  CFX_ASSIGN_OR_RETURN(pred, cf->Resolve(s, loop, pred, nullptr));
  OpBuilder loop_cond(s, "LoopCond");
  loop_cond.Input(pred);
  CFX_ASSIGN_OR_RETURN(loop->loop_cond, BuildNode(cf, s, loop_cond, loop, loop));
  for (internal::LoopVarNodes& var : loop->vars)
    CFX_RETURN_IF_ERROR(AddLoopSwitch(cf, s, loop, &var));

  loop->pivot = loop->vars[0].identity;
  current.clear();
  for (size_t i = skip; i < vars.size(); ++i) current.emplace_back(loop->vars[i].identity, 0);
  std::vector<Output> next;
  CFX_RETURN_IF_ERROR(body(s, current, &next));
  CFX_RETURN_IF_ERROR(s.status());
  if (next.size() != loop_vars.size())
    return errors::InvalidArgument(what, "body returned ", next.size(), " values for ",
                                   loop_vars.size(), " loop variables");
  for (size_t i = 0; i < next.size(); ++i) {
    if (!next[i].valid())
      return errors::InvalidArgument(what, "body's value ", i, " is an invalid Output");
    if (BaseType(next[i].type()) != BaseType(loop_vars[i].type()))
      return errors::InvalidArgument(what, "body's value ", i, " (", next[i].name(), ") is ",
                                     DataTypeString(next[i].type()), " but loop variable ", i,
                                     " is ", DataTypeString(loop_vars[i].type()));
  }
  if (counted) next.insert(next.begin(), ops::AddV2(s, Output(loop->vars[0].identity, 0), 1));
  CFX_RETURN_IF_ERROR(cf->Flush(s, loop));
  for (size_t i = 0; i < vars.size(); ++i) {
    CFX_ASSIGN_OR_RETURN(Output value, cf->Resolve(s, loop, next[i], nullptr));
    CFX_RETURN_IF_ERROR(AddLoopBackEdge(cf, s, loop, value, &loop->vars[i]));
  }
  CFX_RETURN_IF_ERROR(cf->Close(s, loop));
  outputs->clear();
  for (size_t i = skip; i < vars.size(); ++i) outputs->emplace_back(loop->vars[i].exit, 0);
  return Status();
}

Status BuildCond(const Scope& scope, const Output& pred, const BranchFn& true_fn,
                 const BranchFn& false_fn, std::vector<Output>* outputs, const std::string& name) {
  CFX_RETURN_IF_ERROR(scope.status());
  const std::string what = StrCat("Cond '", name, "': ");
  if (!pred.valid()) return errors::InvalidArgument(what, "the predicate is an invalid Output");
  if (BaseType(pred.type()) != DT_BOOL)
    return errors::InvalidArgument(what, "the predicate must be a bool scalar, but ", pred.name(),
                                   " is ", DataTypeString(pred.type()));
  ControlFlowGraph* cf = ControlFlowGraph::Get(scope, true);
  ControlFlowContext* parent = cf->current();
  const Scope s = scope.NewSubScope(name);
  const Scope skeleton = s.WithNoControlDependencies();
  CFX_RETURN_IF_ERROR(cf->Flush(s, parent));
  CFX_ASSIGN_OR_RETURN(Output p, cf->Resolve(skeleton, parent, pred, nullptr));
  OpBuilder pred_id(skeleton.WithOpName("pred_id"), "Identity");
  pred_id.Input(p);
  CFX_ASSIGN_OR_RETURN(Node * pred_node, BuildNode(cf, skeleton, pred_id, parent, parent));
  OpBuilder sw(skeleton, "Switch");
  sw.Input(Output(pred_node, 0)).Input(Output(pred_node, 0));
  CFX_ASSIGN_OR_RETURN(Node * pred_switch, BuildNode(cf, skeleton, sw, parent, parent));

  // The true branch first, as TensorFlow builds it.
  std::vector<Output> results[2];
  for (int branch : {1, 0}) {
    ControlFlowContext* ctx = cf->NewContext(ControlFlowContext::Kind::kCond, parent, ScopeName(s));
    ctx->pred = Output(pred_node, 0);
    ctx->branch = branch;
    OpBuilder pivot(skeleton.WithOpName(branch ? "switch_t" : "switch_f"), "Identity");
    pivot.Input(Output(pred_switch, branch));
    CFX_ASSIGN_OR_RETURN(ctx->pivot, BuildNode(cf, skeleton, pivot, ctx, ctx));
    CFX_RETURN_IF_ERROR(cf->Open(s, ctx));
    std::vector<Output>& out = results[branch];
    CFX_RETURN_IF_ERROR((branch ? true_fn : false_fn)(s, &out));
    CFX_RETURN_IF_ERROR(s.status());
    CFX_RETURN_IF_ERROR(cf->Flush(s, ctx));
    for (size_t i = 0; i < out.size(); ++i) {
      if (!out[i].valid())
        return errors::InvalidArgument(what, branch ? "true_fn" : "false_fn", "'s output ", i,
                                       " is an invalid Output");
      CFX_ASSIGN_OR_RETURN(out[i], cf->Resolve(s, ctx, out[i], nullptr));
    }
    CFX_RETURN_IF_ERROR(cf->Close(s, ctx));
  }
  if (results[0].size() != results[1].size())
    return errors::InvalidArgument(what, "true_fn returned ", results[1].size(),
                                   " outputs but false_fn ", results[0].size());
  outputs->clear();
  for (size_t i = 0; i < results[0].size(); ++i) {
    const DataType f = BaseType(results[0][i].type()), t = BaseType(results[1][i].type());
    if (f != t)
      return errors::InvalidArgument(what, "output ", i, " is ", DataTypeString(t),
                                     " in true_fn but ", DataTypeString(f), " in false_fn");
    OpBuilder merge(skeleton, "Merge");
    merge.Input(InputList{results[0][i], results[1][i]});
    // Not skeleton: the gradient sweep visits a cond's Merges like any other node.
    CFX_ASSIGN_OR_RETURN(Node * m, BuildNode(cf, skeleton, merge, parent, parent, false));
    cf->SetCondMerge(m, Output(pred_node, 0));
    outputs->emplace_back(m, 0);
  }
  return Status();
}

// Runs `build`; on failure the scope records the error and the enclosing construct (if any) is
// current again.
Status Guarded(const Scope& scope, const std::function<Status()>& build) {
  ControlFlowGraph* cf = ControlFlowGraph::Get(scope, true);
  ControlFlowContext* saved = cf->current();
  Status s = build();
  if (!s.ok()) {
    cf->RestoreCurrent(saved);
    scope.UpdateStatus(s);
  }
  return s;
}

}  // namespace

Status WhileLoop(const Scope& scope, const std::vector<Output>& loop_vars, const CondFn& cond,
                 const BodyFn& body, std::vector<Output>* outputs,
                 const WhileLoopOptions& options) {
  return Guarded(scope,
                 [&] { return BuildWhileLoop(scope, loop_vars, cond, body, outputs, options); });
}

Status Cond(const Scope& scope, const Output& pred, const BranchFn& true_fn,
            const BranchFn& false_fn, std::vector<Output>* outputs, const std::string& name) {
  return Guarded(scope, [&] { return BuildCond(scope, pred, true_fn, false_fn, outputs, name); });
}

}  // namespace cfx
