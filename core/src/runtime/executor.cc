// Executor and its per-step state.
#include "runtime/executor.h"

#include <atomic>
#include <chrono>
#include <mutex>

#include "plugin/abi_types.h"

namespace cfx {

struct Executor::NodeItem {
  const KernelInstance* kernel = nullptr;
  int input_start = 0;  // first input slot
  int num_inputs = 0;
  int num_outputs = 0;
  int edge_start = 0;  // out edges: edges_[edge_start, edge_start + num_edges)
  int num_edges = 0;
  int initial_pending = 0;
  bool inexpensive = false;
  bool is_async = false;
  bool has_ref_inputs = false;
  bool accepts_uninitialized_refs = false;  // Assign, IsVariableInitialized
};

struct Executor::OutEdge {
  int dst = 0;
  int dst_slot = -1;  // -1: control edge
  int src_output = 0;
  bool last_use = false;  // the last edge reading src_output: the value may be moved
};

namespace {

int64_t NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// One input slot of the step state: a value, or a reference to a variable. `is_dead` marks a
// dead tensor (the untaken output of a Switch, once conditionals exist).
struct Entry {
  Tensor val;
  RefPtr<Var> ref;
  bool is_dead = false;
};

// One iteration of a frame: the input slots and pending counts of every node.
struct IterationState {
  IterationState(int num_slots, const std::vector<int>& initial_pending)
      : slots(new Entry[num_slots]), pending(new std::atomic<int>[initial_pending.size()]) {
    for (size_t i = 0; i < initial_pending.size(); ++i)
      pending[i].store(initial_pending[i], std::memory_order_relaxed);
  }
  std::unique_ptr<Entry[]> slots;
  std::unique_ptr<std::atomic<int>[]> pending;
};

// An execution frame (EuroSys 2018 §4.3): the root frame of the step, or the frame of one loop
// entered from (parent, parent_iteration). Iterations are created as a loop advances.
struct FrameState {
  std::string name;
  FrameState* parent = nullptr;
  int64_t parent_iteration = 0;
  std::vector<std::unique_ptr<IterationState>> iterations;
};

// A node instance ready to run: the node, its frame and iteration, and whether it is dead.
struct TaggedNode {
  int node = 0;
  FrameState* frame = nullptr;
  int64_t iteration = 0;
  bool is_dead = false;
};

}  // namespace

// The state of one executor for one step. Frames and iterations: the root frame's iteration 0
// holds the slots and pending counts; a TaggedNode names a node in a frame and iteration.
class ExecutorState {
 public:
  ExecutorState(const Executor& ex, const StepContext& step, DeviceStepStats* stats,
                Executor::DoneCallback done)
      : ex_(ex),
        step_(step),
        stats_(stats),
        done_(std::move(done)) {
    root_.name = "";
    root_.iterations.push_back(std::make_unique<IterationState>(ex.num_slots_, ex.initial_pending_));
  }

  void Start() {
    if (step_.cancellation != nullptr) {
      token_ = step_.cancellation->Register([this](const Status& s) { Abort(s); });
      if (token_ == CancellationManager::kInvalidToken) Abort(step_.cancellation->status());
    }
    if (ex_.roots_.empty()) {
      Finish();
      return;
    }
    outstanding_.store(static_cast<int64_t>(ex_.roots_.size()), std::memory_order_relaxed);
    std::vector<TaggedNode> ready;
    for (int id : ex_.roots_) ready.push_back({id, &root_, 0, false});
    std::vector<TaggedNode> inline_ready;
    Schedule(ready, &inline_ready);
    Process(std::move(inline_ready));
  }

 private:
  using NodeItem = Executor::NodeItem;

  // State kept across an asynchronous kernel call.
  struct AsyncCall {
    ExecutorState* state;
    TaggedNode node;
    std::vector<Tensor> inputs;
    std::vector<RefPtr<Var>> refs;
    cfx_kernel_context ctx;
    int64_t start_us = 0;
  };

  void Abort(const Status& s) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (status_.ok()) status_ = s.ok() ? errors::Cancelled("step cancelled") : s;
    }
    aborted_.store(true, std::memory_order_release);
  }

  void Fail(const Status& s) {
    Abort(s);
    if (step_.cancellation != nullptr) step_.cancellation->StartCancel(s);
  }

  static Entry* Slots(const TaggedNode& tn) {
    return tn.frame->iterations[tn.iteration]->slots.get();
  }

  Status PrepareInputs(const TaggedNode& tn, const NodeItem& item, std::vector<Tensor>* inputs,
                       std::vector<RefPtr<Var>>* refs) {
    Entry* slots = Slots(tn);
    inputs->resize(item.num_inputs);
    if (item.has_ref_inputs) refs->assign(item.num_inputs, RefPtr<Var>());
    for (int i = 0; i < item.num_inputs; ++i) {
      const int slot = item.input_start + i;
      Entry& e = slots[slot];
      if (!e.ref) {
        (*inputs)[i] = std::move(e.val);
        continue;
      }
      Var* var = e.ref.get();
      std::shared_lock<std::shared_mutex> lock(var->mu());
      if (!var->initialized() && !(ex_.expects_ref_[slot] && item.accepts_uninitialized_refs))
        return errors::FailedPrecondition("node ", item.kernel->node().name, " (op ",
                                          item.kernel->node().op,
                                          "): attempting to use uninitialized value ", var->name,
                                          " (run its initializer, e.g. an Assign, first)");
      (*inputs)[i] = *var->tensor();
      lock.unlock();
      if (ex_.expects_ref_[slot]) (*refs)[i] = std::move(e.ref);
      e.ref = RefPtr<Var>();
    }
    if (!ex_.host_addressable_) return MoveToMemorySpaces(item, inputs);
    return Status();
  }

  // On a device with its own memory: an input the kernel wants in host memory (a shape, an axis)
  // that lives on the device is copied to the host, and the other way round.
  Status MoveToMemorySpaces(const NodeItem& item, std::vector<Tensor>* inputs) {
    const std::vector<bool>& host_inputs = item.kernel->host_memory_inputs();
    for (int i = 0; i < item.num_inputs; ++i) {
      Tensor& t = (*inputs)[i];
      if (t.buffer() == nullptr || t.dtype() == DT_STRING || t.dtype() == DT_RESOURCE) continue;
      const bool in_host = t.buffer()->allocator()->host_addressable();
      if (host_inputs[i] && !in_host) {
        CFX_ASSIGN_OR_RETURN(t, ex_.device_->ToHost(t));
      } else if (!host_inputs[i] && in_host) {
        CFX_ASSIGN_OR_RETURN(t, ex_.device_->FromHost(t));
      }
    }
    return Status();
  }

  void InitContext(const NodeItem& item, cfx_kernel_context* ctx, std::vector<Tensor>* inputs,
                   std::vector<RefPtr<Var>>* refs) {
    item.kernel->InitContext(ctx, inputs->data(), item.num_inputs);
    ctx->step = &step_;
    if (item.has_ref_inputs) ctx->input_refs = refs->data();
  }

  // Moves the outputs of a finished node into its consumers' slots; collects newly ready nodes.
  // (Within the node's frame and iteration; Exit and NextIteration will route to others.)
  void PropagateOutputs(const TaggedNode& tn, cfx_kernel_context* ctx,
                        std::vector<TaggedNode>* ready) {
    const NodeItem& item = ex_.nodes_[tn.node];
    IterationState& iter = *tn.frame->iterations[tn.iteration];
    const bool has_refs = !ctx->output_refs.empty();
    for (int k = 0; k < item.num_edges; ++k) {
      const Executor::OutEdge& e = ex_.edges_[item.edge_start + k];
      if (e.dst_slot >= 0) {
        Entry& dst = iter.slots[e.dst_slot];
        if (has_refs && static_cast<size_t>(e.src_output) < ctx->output_refs.size() &&
            ctx->output_refs[e.src_output]) {
          dst.ref = ctx->output_refs[e.src_output];
        } else if (e.last_use) {
          dst.val = std::move(ctx->outputs[e.src_output]);
        } else {
          dst.val = ctx->outputs[e.src_output];
        }
      }
      if (iter.pending[e.dst].fetch_sub(1, std::memory_order_acq_rel) == 1)
        ready->push_back({e.dst, tn.frame, tn.iteration, false});
    }
  }

  void RecordStats(int id, int64_t start_us, const cfx_kernel_context& ctx) {
    NodeExecStats ns;
    const NodeDef& def = ex_.nodes_[id].kernel->node();
    ns.node_name = def.name;
    ns.op = def.op;
    ns.start_us = start_us;
    ns.end_us = NowMicros();
    ns.thread_id = static_cast<uint64_t>(ThreadPool::CurrentThreadId());
    for (size_t i = 0; i < ctx.outputs.size(); ++i) {
      const Tensor& t = ctx.outputs[i];
      const bool set = i < ctx.output_set.size() && ctx.output_set[i];
      ns.output_bytes.push_back(set ? static_cast<int64_t>(t.TotalBytes()) : -1);
      std::vector<int64_t> dims;
      if (set)
        for (int d = 0; d < t.rank(); ++d) dims.push_back(t.dim(d));
      ns.output_shapes.push_back(std::move(dims));
    }
    std::lock_guard<std::mutex> lock(stats_mu_);
    stats_->nodes.push_back(std::move(ns));
  }

  // Hands ready nodes out: inexpensive ones to `inline_ready`, costly ones to the pool, except
  // that a pool thread keeps one costly node when nothing else is left. Threads outside the pool
  // (the caller of Run, the completer of an asynchronous kernel) run no costly kernel, so that at
  // most `inter_op` of them run at once, each with the intra-op threads it expects; a caller that
  // ran kernels too would start a second OpenMP team that competes with the pool's for the cores.
  // Accounts for the nodes in outstanding_ first.
  void Schedule(const std::vector<TaggedNode>& ready, std::vector<TaggedNode>* inline_ready) {
    const TaggedNode* costly_inline = nullptr;
    for (const TaggedNode& tn : ready) {
      if (ex_.nodes_[tn.node].inexpensive) {
        inline_ready->push_back(tn);
      } else if (costly_inline == nullptr && inline_ready->empty() &&
                 ex_.pool_->OwnsCurrentThread()) {
        costly_inline = &tn;
      } else {
        ex_.pool_->Schedule([this, tn] { Process({tn}); });
      }
    }
    if (costly_inline != nullptr) inline_ready->push_back(*costly_inline);
  }

  // Called once per finished node with the nodes it made ready.
  void NodeDone(const std::vector<TaggedNode>& ready, std::vector<TaggedNode>* inline_ready) {
    const int64_t n = static_cast<int64_t>(ready.size());
    if (n == 0) {
      if (outstanding_.fetch_sub(1, std::memory_order_acq_rel) == 1) Finish();
      return;
    }
    if (n > 1) outstanding_.fetch_add(n - 1, std::memory_order_relaxed);
    Schedule(ready, inline_ready);
  }

  void Process(std::vector<TaggedNode> inline_ready) {
    cfx_kernel_context ctx;
    std::vector<Tensor> inputs;
    std::vector<RefPtr<Var>> refs;
    std::vector<TaggedNode> ready;
    while (!inline_ready.empty()) {
      const TaggedNode tn = inline_ready.back();
      inline_ready.pop_back();
      const int id = tn.node;
      const NodeItem& item = ex_.nodes_[id];
      ready.clear();
      if (!aborted_.load(std::memory_order_acquire)) {
        const int64_t start_us = step_.collect_stats ? NowMicros() : 0;
        Status s = PrepareInputs(tn, item, &inputs, &refs);
        if (!s.ok()) {
          Fail(s);
        } else if (item.is_async) {
          auto* call = new AsyncCall{this, tn, std::move(inputs), std::move(refs), {}, start_us};
          inputs.clear();
          refs.clear();
          InitContext(item, &call->ctx, &call->inputs, &call->refs);
          item.kernel->ComputeAsync(&call->ctx, &ExecutorState::AsyncDone, call);
          continue;  // AsyncDone accounts for the node
        } else {
          InitContext(item, &ctx, &inputs, &refs);
          item.kernel->ComputeSync(&ctx);
          item.kernel->FinishCompute(&ctx);
          if (!ctx.status.ok()) {
            Fail(ctx.status);
          } else {
            if (step_.collect_stats && stats_ != nullptr) RecordStats(id, start_us, ctx);
            PropagateOutputs(tn, &ctx, &ready);
          }
          for (Tensor& t : ctx.outputs) t = Tensor();
          ctx.output_refs.clear();
        }
        for (int i = 0; i < item.num_inputs; ++i) inputs[i] = Tensor();
        if (item.has_ref_inputs) refs.clear();
      }
      NodeDone(ready, &inline_ready);
    }
  }

  static void AsyncDone(void* arg) {
    std::unique_ptr<AsyncCall> call(static_cast<AsyncCall*>(arg));
    ExecutorState* self = call->state;
    const NodeItem& item = self->ex_.nodes_[call->node.node];
    item.kernel->FinishCompute(&call->ctx);
    std::vector<TaggedNode> ready;
    if (!call->ctx.status.ok()) {
      self->Fail(call->ctx.status);
    } else if (!self->aborted_.load(std::memory_order_acquire)) {
      if (self->step_.collect_stats && self->stats_ != nullptr)
        self->RecordStats(call->node.node, call->start_us, call->ctx);
      self->PropagateOutputs(call->node, &call->ctx, &ready);
    }
    call.reset();
    std::vector<TaggedNode> inline_ready;
    self->NodeDone(ready, &inline_ready);
    if (!inline_ready.empty()) self->Process(std::move(inline_ready));
  }

  void Finish() {
    if (token_ != CancellationManager::kInvalidToken) step_.cancellation->Deregister(token_);
    Status s;
    {
      std::lock_guard<std::mutex> lock(mu_);
      s = status_;
    }
    Executor::DoneCallback done = std::move(done_);
    delete this;
    done(s);
  }

  const Executor& ex_;
  const StepContext step_;
  DeviceStepStats* stats_;
  Executor::DoneCallback done_;
  FrameState root_;
  std::atomic<int64_t> outstanding_{0};
  std::atomic<bool> aborted_{false};
  std::mutex mu_;
  Status status_;
  std::mutex stats_mu_;
  CancellationManager::Token token_ = CancellationManager::kInvalidToken;
};

Executor::~Executor() = default;

StatusOr<std::unique_ptr<Executor>> Executor::Create(const Runtime& runtime, Device* device,
                                                     ThreadPool* pool,
                                                     std::unique_ptr<Graph> graph) {
  std::unique_ptr<Executor> ex(new Executor());
  ex->device_ = device;
  ex->host_addressable_ = device->host_addressable();
  ex->pool_ = pool;
  CFX_ASSIGN_OR_RETURN(std::vector<Node*> order, graph->TopologicalOrder());
  (void)order;
  const int n = graph->num_nodes();
  ex->nodes_.resize(n);
  ex->kernels_.resize(n);
  for (const auto& node : graph->nodes()) {
    const int id = node->id();
    NodeItem& item = ex->nodes_[id];
    const OpDef& op = node->op_registration().def;
    CFX_ASSIGN_OR_RETURN(const KernelDef* def,
                         runtime.kernels().Find(node->def(), op, device->type()));
    CFX_ASSIGN_OR_RETURN(ex->kernels_[id], KernelInstance::Create(def, node->def(), op, device));
    item.kernel = ex->kernels_[id].get();
    item.input_start = ex->num_slots_;
    item.num_inputs = node->num_inputs();
    item.num_outputs = node->num_outputs();
    item.inexpensive = item.kernel->inexpensive();
    item.is_async = item.kernel->is_async();
    item.accepts_uninitialized_refs = node->op() == "Assign" ||
                                      node->op() == "IsVariableInitialized";
    item.initial_pending =
        static_cast<int>(node->in_data_edges().size() + node->in_control_edges().size());
    if (item.initial_pending == 0) ex->roots_.push_back(id);
    ex->initial_pending_.push_back(item.initial_pending);
    ex->num_slots_ += item.num_inputs;
    for (DataType t : node->input_types()) {
      ex->expects_ref_.push_back(IsRefType(t) ? 1 : 0);
      if (IsRefType(t)) item.has_ref_inputs = true;
    }
  }
  for (const auto& node : graph->nodes()) {
    NodeItem& item = ex->nodes_[node->id()];
    item.edge_start = static_cast<int>(ex->edges_.size());
    std::vector<int> last_edge_of_output(node->num_outputs(), -1);
    for (const Edge* e : node->out_edges()) {
      OutEdge oe;
      oe.dst = e->dst->id();
      oe.src_output = e->src_output;
      if (!e->IsControl()) {
        oe.dst_slot = ex->nodes_[oe.dst].input_start + e->dst_input;
        last_edge_of_output[e->src_output] = static_cast<int>(ex->edges_.size());
      } else {
        oe.src_output = 0;
      }
      ex->edges_.push_back(oe);
    }
    for (int idx : last_edge_of_output)
      if (idx >= 0) ex->edges_[idx].last_use = true;
    item.num_edges = static_cast<int>(ex->edges_.size()) - item.edge_start;
  }
  ex->graph_ = std::move(graph);
  return ex;
}

void Executor::RunAsync(const StepContext& step, DeviceStepStats* stats, DoneCallback done) {
  if (stats != nullptr && step.collect_stats) stats->device = device_->full_name();
  (new ExecutorState(*this, step, stats, std::move(done)))->Start();
}

Status Executor::Run(const StepContext& step, DeviceStepStats* stats) {
  Notification n;
  Status result;
  RunAsync(step, stats, [&](const Status& s) {
    result = s;
    n.Notify();
  });
  n.Wait();
  return result;
}

}  // namespace cfx
