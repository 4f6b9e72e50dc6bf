// The bookkeeping behind WhileLoop and Cond (conflux/cc/control_flow.h) and their gradients.
//
// Every node that a construct's functions build belongs to a context: a while loop (one frame of
// the executor) or one branch of a cond. The contexts form a tree under the root (nullptr) and
// live beside the graph, in the Scope's graph state, so AddSymbolicGradients finds them.
//
// Nodes are claimed in windows: when a construct opens, the nodes built so far belong to the
// enclosing context; the nodes built while it is open and not claimed by a nested construct
// belong to it. Claiming a node resolves its data inputs (Resolve): a tensor from an enclosing
// context is captured (a constant Enter per loop, a Switch per branch) at each level; in a
// backward loop a value of the forward loop is popped from a stack that the forward loop pushes
// (a node that reads such a value only for its shape moves to the forward loop instead, and its
// result is pushed: PlaceShapeReads).
// An input-less node gets the context's pivot as a control input, so that it runs in the
// context's frame and only where the context runs.
//
// Not thread-safe, like the Scope whose graph it describes.
#ifndef CONFLUX_CC_CONTROL_FLOW_INTERNAL_H_
#define CONFLUX_CC_CONTROL_FLOW_INTERNAL_H_

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "conflux/cc/gradients.h"
#include "conflux/cc/op_builder.h"
#include "conflux/cc/output.h"
#include "conflux/cc/scope.h"

namespace cfx::internal {

// The nodes of one loop variable: Enter -> Merge(Enter, NextIteration) -> Switch(Merge, LoopCond)
// -> Exit(Switch:0), and Identity(Switch:1) for the body.
struct LoopVarNodes {
  Node* enter = nullptr;
  Node* merge = nullptr;
  Node* switch_node = nullptr;
  Node* identity = nullptr;
  Node* next_iteration = nullptr;
  Node* exit = nullptr;
};

struct ControlFlowContext {
  enum class Kind { kWhile, kCond };

  bool is_loop() const { return kind == Kind::kWhile; }

  Kind kind = Kind::kWhile;
  ControlFlowContext* parent = nullptr;  // nullptr: the root
  // Input-less nodes built here get this node as a control input.
  Node* pivot = nullptr;
  // Where the current claiming window starts (a node id).
  int first_unclaimed = 0;
  // A value of the parent context -> its captured version here.
  std::map<Output, Output> captured;
  // Nodes that the construct (or its gradient) built as its skeleton, not the user's.
  std::set<const Node*> structure;

  // A loop's frame name; a cond's name scope (for messages).
  std::string name;

  // kWhile.
  int parallel_iterations = 10;
  // The gradient's stacks of this loop's values may move them to host memory (WhileLoopOptions).
  bool swap_memory = false;
  Node* loop_cond = nullptr;
  std::vector<LoopVarNodes> vars;
  // Captured loop invariants, in capture order: the value in the parent and its constant Enter.
  std::vector<std::pair<Output, Node*>> invariants;

  // kWhile built by AddSymbolicGradients: the forward loop it differentiates, the counter it
  // added to that loop for this gradient, its own counter, and the forward values it popped.
  ControlFlowContext* forward = nullptr;
  Node* forward_pivot = nullptr;   // Identity of the forward counter's Switch:1
  Node* forward_sync = nullptr;    // ControlTrigger after every push of an iteration
  Node* backward_pivot = nullptr;  // Identity of the backward counter's Switch:1
  Node* backward_sync = nullptr;   // ControlTrigger after every pop of an iteration
  std::map<Output, Output> history;
  // Shape, Size and Rank nodes that this loop's gradient moved into the forward loop (see
  // PlaceShapeReads), by the forward value they read: one per op and attrs.
  std::map<Output, std::vector<Node*>> shape_reads;

  // kCond (one branch): the predicate (in the parent) and which output of a Switch it takes.
  Output pred;
  int branch = 0;  // 1: the true branch
};

// The contexts of one graph and which node belongs where.
class ControlFlowGraph {
 public:
  // The graph's state; nullptr when `create` is false and no construct was built yet.
  static ControlFlowGraph* Get(const Scope& scope, bool create);

  // A context whose parent is `parent` (nullptr: the root), owned by this graph.
  ControlFlowContext* NewContext(ControlFlowContext::Kind kind, ControlFlowContext* parent,
                                 std::string name);
  // The innermost construct being built (nullptr: none).
  ControlFlowContext* current() const { return current_; }

  // Claims the nodes built so far for the current context (ctx's parent), then makes `ctx` the
  // current one.
  Status Open(const Scope& scope, ControlFlowContext* ctx);
  // Claims the nodes built since for `ctx` and makes its parent current again.
  Status Close(const Scope& scope, ControlFlowContext* ctx);
  // After an error half-way through a construct: `ctx` is current again, nothing is claimed.
  void RestoreCurrent(ControlFlowContext* ctx) { current_ = ctx; }
  // Claims for `ctx` the unclaimed nodes of its window (see the file comment).
  Status Flush(const Scope& scope, ControlFlowContext* ctx);

  // Records that `n` (a node of the user's, or of a gradient function) belongs to `ctx`.
  void Claim(Node* n, ControlFlowContext* ctx);
  // Records a node of a construct's skeleton: it belongs to `ctx` (and joins ctx->structure),
  // its outputs live in `output_ctx` (they differ for an Exit, whose output is in the parent).
  void ClaimSkeleton(Node* n, ControlFlowContext* ctx, ControlFlowContext* output_ctx);
  ControlFlowContext* ContextOf(const Node* n) const;
  ControlFlowContext* OutputContextOf(const Node* n) const;

  // The version of `value` that a node of `ctx` reads (`value` itself when it lives there). Errors
  // name `consumer`: a tensor of a construct that does not enclose `ctx`.
  StatusOr<Output> Resolve(const Scope& scope, ControlFlowContext* ctx, const Output& value,
                           const Node* consumer);

  // Cond's Merges: the predicate that chose the branch (invalid for other Merges).
  void SetCondMerge(const Node* merge, const Output& pred) { cond_merges_[merge] = pred; }
  Output CondMergePred(const Node* merge) const;

 private:
  StatusOr<Output> Capture(const Scope& scope, ControlFlowContext* ctx, const Output& value);
  // Resolves the inputs of `n`, just claimed for `ctx`, and gives it the pivot if it needs one.
  Status ResolveInputs(const Scope& scope, ControlFlowContext* ctx, Node* n);

  std::vector<std::unique_ptr<ControlFlowContext>> contexts_;
  // node -> (its context, the context of its outputs); absent: the root.
  std::map<const Node*, std::pair<ControlFlowContext*, ControlFlowContext*>> placement_;
  std::map<const Node*, Output> cond_merges_;
  ControlFlowContext* current_ = nullptr;
};

// The innermost loop context at or above `ctx` (nullptr: the root frame).
ControlFlowContext* FrameOf(ControlFlowContext* ctx);
// Whether `ancestor` (nullptr: the root) is `ctx` or encloses it.
bool Encloses(const ControlFlowContext* ancestor, const ControlFlowContext* ctx);

// Builds `b`'s node (whose inputs must be Outputs, not literals) for `ctx`, with outputs in
// `output_ctx`, as part of the skeleton unless `skeleton` is false; the scope's error on failure.
StatusOr<Node*> BuildNode(ControlFlowGraph* cf, const Scope& scope, OpBuilder& b,
                          ControlFlowContext* ctx, ControlFlowContext* output_ctx,
                          bool skeleton = true);
// A Const of `value` built in `ctx`, with ctx's pivot (if any) as its control input.
StatusOr<Node*> ConstantIn(ControlFlowGraph* cf, const Scope& scope, ControlFlowContext* ctx,
                           const Tensor& value, const std::string& name);

// The skeleton of one loop variable of `loop` (see LoopVarNodes), in three steps: Enter (built
// through `enter_scope`, whose control dependencies it takes) and Merge(Enter, Enter); once
// loop->loop_cond exists, Switch, Exit and Identity; once the body exists, NextIteration(next)
// replacing the Merge's second input.
Status AddLoopEntry(ControlFlowGraph* cf, const Scope& enter_scope, const Scope& s,
                    ControlFlowContext* loop, const Output& init, LoopVarNodes* var);
Status AddLoopSwitch(ControlFlowGraph* cf, const Scope& s, ControlFlowContext* loop,
                     LoopVarNodes* var);
Status AddLoopBackEdge(ControlFlowGraph* cf, const Scope& s, ControlFlowContext* loop,
                       const Output& next, LoopVarNodes* var);

// The scope's prefix without its trailing '/' (a loop's frame name).
std::string ScopeName(const Scope& scope);

// Whether gradients flow through tensors of this dtype: floating and complex types, and variants
// (TensorLists, whose gradients are lists of their elements' gradients).
bool IsDifferentiable(DataType t);
// The sum of the gradient contributions `parts` to one tensor (an invalid Output when there are
// none): AddV2 in turn, AddN for lists.
Output SumGradients(const Scope& scope, const std::vector<Output>& parts);

// A value of backward loop `grad`'s forward loop, as `grad` reads it: saved on a stack in the
// forward loop and popped in the same (reversed) order (control_flow_grad.cc).
StatusOr<Output> StackedValue(ControlFlowGraph* cf, const Scope& scope, ControlFlowContext* grad,
                              const Output& value);

// Of `claimed`, the nodes just claimed for backward loop `grad`: moves each Shape, Size or Rank of
// a value that the forward loop would otherwise push for it alone into the forward loop, beside
// that value, so that the small result is pushed instead (as TensorFlow's v1 gradients do). A value
// that another claimed node reads in full, or that is popped already, keeps its shape read here.
// Equal reads of one value (same op and attrs) share one node and so one stack. Claims the moved
// nodes for the forward loop's context as part of its skeleton; errors from rewiring the graph.
Status PlaceShapeReads(ControlFlowGraph* cf, const Scope& scope, ControlFlowContext* grad,
                       const std::vector<Node*>& claimed);

// The per-op steps of AddSymbolicGradients, as the control-flow gradient code uses them
// (implemented by gradients.cc).
class GradientSweep {
 public:
  virtual const Scope& scope() const = 0;
  // Whether an x is among `n`'s ancestors (or is `n`), and whether a y depends on `n`.
  virtual bool IsFromX(Node* n) const = 0;
  virtual bool IsToY(Node* n) const = 0;
  // The sum of the gradients that reached `o` so far; invalid when none did.
  virtual Output Gradient(const Output& o) = 0;
  virtual void AddGradient(const Output& o, const Output& grad) = 0;
  // Runs the gradient function of `n` on the gradients of its outputs.
  virtual Status VisitNode(Node* n) = 0;

 protected:
  ~GradientSweep() = default;
};

// Visits the nodes that lie on a path from an x to a y in reverse topological order; a while
// loop counts as one node, differentiated by a backward loop once every consumer of its outputs
// was visited (control_flow_grad.cc).
Status SweepGradients(const Scope& scope, GradientSweep* sweep);

// Gradient functions of the control-flow ops (Switch, Merge; Exit and friends of loops that
// WhileLoop did not build are an error).
const GradientRegistry& ControlFlowGradients();
// Ops whose gradient functions take an invalid Output for an output no gradient reached (rather
// than zeros, which in a cond would be live on the wrong branch).
bool TakesMissingGradients(const std::string& op);

}  // namespace cfx::internal

#endif  // CONFLUX_CC_CONTROL_FLOW_INTERNAL_H_
