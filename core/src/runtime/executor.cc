// Executor and its per-step state.
//
// Graphs without control flow take a lock-free path: one frame, one iteration, atomic pending
// counts. Graphs with Switch/Merge/Enter/Exit/NextIteration follow EuroSys 2018 §4.3 (Fig. 5):
// each frame instance has a mutex under which its nodes are activated, so that Merge's
// any-input rule, dead counts and the iteration bookkeeping stay consistent.
#include "runtime/executor.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <unordered_map>

#include "graph/control_flow_info.h"
#include "runtime/copy_tensor.h"
#include "runtime/flush_denormal.h"
#include "runtime/kernel_context.h"

namespace cfx {

// What the executor does with a node: run its kernel, or route its values (control flow).
using NodeKind = ControlFlowOp;

// The most iterations of one loop that run at once, whatever an Enter's parallel_iterations.
constexpr int64_t kMaxParallelIterations = int64_t{1} << 16;

struct Executor::NodeItem {
  const KernelInstance* kernel = nullptr;
  int input_start = 0;  // first input slot, in the node's frame
  int type_start = 0;   // the node's first entry in expects_ref_
  int num_inputs = 0;
  int num_outputs = 0;
  int edge_start = 0;  // out edges: edges_[edge_start, edge_start + num_edges)
  int num_edges = 0;
  int frame = 0;                     // the static frame the node runs in
  int local = 0;                     // the node's index within its frame
  int child_frame = -1;              // Enter: the frame it enters
  int64_t parallel_iterations = 10;  // Enter, at most kMaxParallelIterations
  NodeKind kind = NodeKind::kNone;
  bool is_constant_enter = false;
  bool is_transfer = false;  // _Send/_Recv run even when dead: they carry the dead signal
  bool inexpensive = false;
  bool is_async = false;
  bool has_ref_inputs = false;
  bool accepts_uninitialized_refs = false;  // Assign, IsVariableInitialized
};

struct Executor::OutEdge {
  int dst = 0;
  int dst_slot = -1;  // -1: control edge; else the input slot in the destination's frame
  int src_output = 0;
  bool last_use = false;  // the last edge reading src_output: the value may be moved
};

// A frame of the graph (the root, or the body of one loop), known when the executor is built.
struct Executor::FrameInfo {
  std::string name;  // the Enter nodes' frame_name ("" for the root)
  int num_nodes = 0;
  int num_slots = 0;
  int num_enters = 0;  // Enter nodes into the frame: each fires once per parent iteration
  std::vector<int> initial_pending;  // per node of the frame (by local index)
};

namespace {

int64_t NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// 64-bit FNV-1a: frame ids in rendezvous keys, equal in every partition for the same frame.
int64_t FrameId(const std::string& name) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
  return static_cast<int64_t>(h & 0x7fffffffffffffffull);
}

// One input slot or output of the step state: a value or a reference to a variable, or nothing
// (a dead tensor: the untaken output of a Switch, or any output of a dead node).
struct Entry {
  Tensor val;
  RefPtr<Var> ref;
  bool has_value = false;
};

// One iteration of a frame: the input slots, pending and dead counts of the frame's nodes, and
// what is still running in it (under the frame's mutex, except on the lock-free path).
struct IterationState {
  explicit IterationState(const Executor::FrameInfo& f)
      : slots(new Entry[f.num_slots]),
        pending(new std::atomic<int>[f.num_nodes]),
        dead(new std::atomic<int>[f.num_nodes]) {
    Reset(f);
  }
  // The counts of an iteration that has not started; the slots must be empty (new, or Cleared).
  void Reset(const Executor::FrameInfo& f) {
    for (int i = 0; i < f.num_nodes; ++i) {
      pending[i].store(f.initial_pending[i], std::memory_order_relaxed);
      dead[i].store(0, std::memory_order_relaxed);
    }
    outstanding_ops = 0;
    outstanding_frames = 0;
  }
  // Drops the values still in the slots (dead ones, or ones no node read).
  void Clear(const Executor::FrameInfo& f) {
    for (int i = 0; i < f.num_slots; ++i)
      if (slots[i].has_value || slots[i].ref || slots[i].val.IsInitialized()) slots[i] = Entry();
  }
  std::unique_ptr<Entry[]> slots;
  std::unique_ptr<std::atomic<int>[]> pending;
  std::unique_ptr<std::atomic<int>[]> dead;  // dead inputs received
  int outstanding_ops = 0;                   // ready or running nodes of this iteration
  int outstanding_frames = 0;  // child frames entered from this iteration, not yet done
};

// An execution frame (EuroSys 2018 §4.3): the root frame of the step, or the frame of one loop
// entered from (parent, parent_iteration). Iterations are created as the loop advances; at most
// `max_parallel` run at once, values for later ones wait in next_iter_roots.
struct FrameState {
  const Executor::FrameInfo* info = nullptr;
  std::string name;  // parent's name;parent iteration;frame_name
  int64_t id = 0;
  FrameState* parent = nullptr;
  int64_t parent_iter = 0;
  int64_t max_parallel = 1;
  std::mutex mu;
  std::vector<std::unique_ptr<IterationState>> iterations;  // a ring of max_parallel + 1
  int64_t iteration_count = 0;                              // the newest iteration
  int num_outstanding_iterations = 1;
  int num_pending_inputs = 0;                          // Enter nodes that have not fired yet
  std::vector<std::pair<int, Entry>> inv_values;       // loop invariants (node, value)
  std::vector<std::pair<int, Entry>> next_iter_roots;  // NextIteration values held back
  std::vector<int> dead_exits;                         // dead Exit nodes of the newest iteration
  // Finished iterations' states, cleared, for the next ones: a loop of many short iterations
  // allocates its iteration state only up to max_parallel times.
  std::vector<std::unique_ptr<IterationState>> spare_iterations;

  IterationState* Iter(int64_t i) const { return iterations[i % iterations.size()].get(); }
  std::unique_ptr<IterationState>& IterSlot(int64_t i) { return iterations[i % iterations.size()]; }
};

// A node instance ready to run: the node, its frame and iteration, and whether it is dead.
struct TaggedNode {
  int node = 0;
  FrameState* frame = nullptr;
  int64_t iteration = 0;
  bool is_dead = false;
};

}  // namespace

class ExecutorState;

namespace {

// State kept across an asynchronous kernel call. `phase` tells which of the two sides comes
// second, the node's thread once the kernel's ComputeAsync has returned or the kernel's done
// callback: that one finishes the node. A kernel that completes before its ComputeAsync returns
// (a blocking collective, a _Recv whose value was there) is thus finished in the loop that ran
// it, without a nested loop on the same stack.
struct AsyncCall {
  enum Phase : int { kComputing, kReturned, kDone };
  ExecutorState* state = nullptr;
  TaggedNode node;
  std::vector<Tensor> inputs;
  std::vector<RefPtr<Var>> refs;
  KernelContext ctx;
  int64_t start_us = 0;
  std::atomic<int> phase{kComputing};
};

// What the loop that runs nodes needs from node to node: vectors that keep their capacity from
// node to node and from step to step (a step of small nodes otherwise allocates them anew each
// time), and a spare AsyncCall. A thread keeps a few, since loops may nest on one stack (an
// asynchronous kernel that completes on another executor's thread continues its step there).
struct ProcessScratch {
  KernelContext ctx;
  std::vector<Tensor> inputs;
  std::vector<RefPtr<Var>> refs;
  std::vector<Entry> outs;
  std::vector<TaggedNode> ready;
  std::vector<TaggedNode> inline_ready;
  std::unique_ptr<AsyncCall> spare_call;
};

// The calling thread's scratch for one loop, returned to the thread's spares at scope exit.
class ScratchHolder {
 public:
  ScratchHolder() {
    std::vector<std::unique_ptr<ProcessScratch>>& spares = Spares();
    if (spares.empty()) {
      s_ = std::make_unique<ProcessScratch>();
    } else {
      s_ = std::move(spares.back());
      spares.pop_back();
    }
  }
  ~ScratchHolder() {
    // Nothing of a step may stay alive in a spare: values go, capacities stay.
    s_->inputs.clear();
    s_->refs.clear();
    s_->outs.clear();
    s_->ready.clear();
    s_->inline_ready.clear();
    std::vector<std::unique_ptr<ProcessScratch>>& spares = Spares();
    if (spares.size() < kMaxSpares) spares.push_back(std::move(s_));
  }
  ScratchHolder(const ScratchHolder&) = delete;
  ScratchHolder& operator=(const ScratchHolder&) = delete;
  ProcessScratch& operator*() const { return *s_; }
  ProcessScratch* operator->() const { return s_.get(); }

 private:
  static constexpr size_t kMaxSpares = 4;
  static std::vector<std::unique_ptr<ProcessScratch>>& Spares() {
    thread_local std::vector<std::unique_ptr<ProcessScratch>> spares;
    return spares;
  }
  std::unique_ptr<ProcessScratch> s_;
};

}  // namespace

// The state of one executor for one step.
class ExecutorState {
 public:
  ExecutorState(const Executor& ex, const StepContext& step, DeviceStepStats* stats,
                Executor::DoneCallback done)
      : ex_(ex), step_(step), stats_(stats), done_(std::move(done)) {
    root_.info = &ex.frames_[0];
    auto* spare = static_cast<IterationState*>(
        ex.spare_root_iteration_.exchange(nullptr, std::memory_order_acquire));
    if (spare != nullptr) {
      spare->Reset(ex.frames_[0]);
      root_.iterations.emplace_back(spare);
    } else {
      root_.iterations.push_back(std::make_unique<IterationState>(ex.frames_[0]));
    }
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
    ScratchHolder scratch;
    std::vector<TaggedNode>& ready = scratch->ready;
    for (int id : ex_.roots_) ready.push_back({id, &root_, 0, false});
    root_.Iter(0)->outstanding_ops = static_cast<int>(ready.size());
    Schedule(ready, &scratch->inline_ready);
    Process(*scratch);
  }

 private:
  using NodeItem = Executor::NodeItem;

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

  static Entry* Slots(const TaggedNode& tn) { return tn.frame->Iter(tn.iteration)->slots.get(); }

  // The value of input `input` of `item` (moved out of its slot `e`), dereferencing a variable
  // unless the kernel takes the reference; `ref` (may be null) receives the reference then.
  Status TakeInput(const NodeItem& item, int input, Entry& e, Tensor* value, RefPtr<Var>* ref) {
    const bool expects_ref = ex_.expects_ref_[item.type_start + input];
    if (!e.ref) {
      *value = std::move(e.val);
      e.has_value = false;
      return Status();
    }
    Var* var = e.ref.get();
    std::shared_lock<std::shared_mutex> lock(var->mu());
    if (!var->initialized() && !(expects_ref && item.accepts_uninitialized_refs))
      return errors::FailedPrecondition("node ", item.kernel->node().name, " (op ",
                                        item.kernel->node().op,
                                        "): attempting to use uninitialized value ", var->name,
                                        " (run its initializer, e.g. an Assign, first)");
    *value = *var->tensor();
    lock.unlock();
    if (expects_ref && ref != nullptr) *ref = std::move(e.ref);
    e.ref = RefPtr<Var>();
    e.has_value = false;
    return Status();
  }

  Status PrepareInputs(const TaggedNode& tn, const NodeItem& item, std::vector<Tensor>* inputs,
                       std::vector<RefPtr<Var>>* refs) {
    Entry* slots = Slots(tn);
    inputs->resize(item.num_inputs);
    if (item.has_ref_inputs) refs->assign(item.num_inputs, RefPtr<Var>());
    for (int i = 0; i < item.num_inputs; ++i) {
      CFX_RETURN_IF_ERROR(TakeInput(item, i, slots[item.input_start + i], &(*inputs)[i],
                                    item.has_ref_inputs ? &(*refs)[i] : nullptr));
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
      if (t.buffer() == nullptr || t.dtype() == DT_STRING || t.dtype() == DT_RESOURCE ||
          t.dtype() == DT_VARIANT)
        continue;  // host memory only: a kernel on any device reads them there
      const bool in_host = t.buffer()->allocator()->host_addressable();
      if (host_inputs[i] && !in_host) {
        CFX_ASSIGN_OR_RETURN(t, CopyTensorSync(nullptr, nullptr, t));
      } else if (!host_inputs[i] && in_host) {
        CFX_ASSIGN_OR_RETURN(t, CopyTensorSync(nullptr, ex_.device_, t));
      }
    }
    return Status();
  }

  void InitContext(const TaggedNode& tn, const NodeItem& item, KernelContext* ctx,
                   std::vector<Tensor>* inputs, std::vector<RefPtr<Var>>* refs) {
    item.kernel->InitContext(ctx, inputs->data(), item.num_inputs);
    ctx->step = &step_;
    ctx->frame_id = tn.frame->id;
    ctx->iteration = tn.iteration;
    ctx->is_input_dead = tn.is_dead;
    if (item.has_ref_inputs) ctx->input_refs = refs->data();
  }

  // Moves a finished kernel's outputs into `outs` (an unset output is dead).
  static void CollectOutputs(KernelContext* ctx, std::vector<Entry>* outs) {
    outs->resize(ctx->outputs.size());
    const bool has_refs = !ctx->output_refs.empty();
    for (size_t i = 0; i < ctx->outputs.size(); ++i) {
      Entry& o = (*outs)[i];
      o = Entry();  // `outs` is reused from node to node: nothing of the last node's may remain
      if (has_refs && i < ctx->output_refs.size() && ctx->output_refs[i]) {
        o.ref = std::move(ctx->output_refs[i]);
        o.has_value = true;
      } else {
        o.has_value = ctx->output_set[i] && !ctx->is_output_dead;
        if (o.has_value) o.val = std::move(ctx->outputs[i]);
      }
    }
    for (Tensor& t : ctx->outputs) t = Tensor();
    ctx->output_refs.clear();
  }

  // The control-flow primitives run here, not through their kernels: they only route entries.
  Status RunControlFlow(const TaggedNode& tn, const NodeItem& item, std::vector<Entry>* outs) {
    Entry* slots = Slots(tn);
    outs->assign(item.num_outputs, Entry());
    auto forward = [&](int input, Entry* out) {
      Entry& in = slots[item.input_start + input];
      if (in.ref && !ex_.expects_ref_[item.type_start + input]) {
        RefPtr<Var> unused;
        CFX_RETURN_IF_ERROR(TakeInput(item, input, in, &out->val, &unused));
      } else {
        *out = std::move(in);
        in = Entry();
      }
      out->has_value = true;
      return Status();
    };
    switch (item.kind) {
      case NodeKind::kSwitch: {
        Entry& pred_entry = slots[item.input_start + 1];
        Tensor pred;
        CFX_RETURN_IF_ERROR(TakeInput(item, 1, pred_entry, &pred, nullptr));
        CFX_ASSIGN_OR_RETURN(pred, CopyTensorSync(nullptr, nullptr, pred));
        if (pred.dtype() != DT_BOOL || pred.num_elements() != 1)
          return errors::InvalidArgument("node ", item.kernel->node().name,
                                         " (op Switch): the predicate must be a bool scalar, got ",
                                         DataTypeString(pred.dtype()), " ",
                                         pred.shape().ToString());
        return forward(0, &(*outs)[pred.data<bool>()[0] ? 1 : 0]);
      }
      case NodeKind::kMerge: {
        for (int i = 0; i < item.num_inputs; ++i) {
          if (!slots[item.input_start + i].has_value) continue;
          CFX_RETURN_IF_ERROR(forward(i, &(*outs)[0]));
          CFX_ASSIGN_OR_RETURN(Tensor index, Tensor::Allocate(ex_.device_->host_allocator(),
                                                              DT_INT32, TensorShape()));
          index.data<int32_t>()[0] = i;
          (*outs)[1].val = std::move(index);
          (*outs)[1].has_value = true;
          return Status();
        }
        return errors::Internal("node ", item.kernel->node().name,
                                " (op Merge) ran without a live input");
      }
      case NodeKind::kControlTrigger:
        return Status();
      default:  // Enter, Exit, NextIteration, LoopCond
        return forward(0, &(*outs)[0]);
    }
  }

  // ---- Propagation without loops or Merge: one frame, atomic counts, no lock. ----
  // A dead input (a dead tensor received from another partition) still makes its consumer dead:
  // the dead mark is stored before the pending count drops, so the thread that sees the count
  // reach zero sees it.

  void PropagateFast(const TaggedNode& tn, std::vector<Entry>& outs,
                     std::vector<TaggedNode>* ready) {
    const NodeItem& item = ex_.nodes_[tn.node];
    IterationState& iter = *tn.frame->Iter(tn.iteration);
    for (int k = 0; k < item.num_edges; ++k) {
      const Executor::OutEdge& e = ex_.edges_[item.edge_start + k];
      bool live = !tn.is_dead;
      if (e.dst_slot >= 0) {
        Entry& src = outs[e.src_output];
        live = live && src.has_value;
        if (e.last_use) {
          iter.slots[e.dst_slot] = std::move(src);
        } else {
          iter.slots[e.dst_slot] = src;
        }
      }
      if (!live) iter.dead[e.dst].store(1, std::memory_order_relaxed);
      if (iter.pending[e.dst].fetch_sub(1, std::memory_order_acq_rel) == 1)
        ready->push_back(
            {e.dst, tn.frame, tn.iteration, iter.dead[e.dst].load(std::memory_order_relaxed) != 0});
    }
  }

  // ---- Propagation with control flow (EuroSys 2018 Fig. 5). ----

  // Delivers `outs` of `item` (dead when is_dead) to its consumers in (frame, iter), which must
  // be the consumers' frame; appends newly ready nodes. Under frame->mu.
  void ActivateNodes(const NodeItem& item, bool is_dead, FrameState* frame, int64_t iter,
                     std::span<Entry> outs, std::vector<TaggedNode>* ready) {
    IterationState& st = *frame->Iter(iter);
    for (int k = 0; k < item.num_edges; ++k) {
      const Executor::OutEdge& e = ex_.edges_[item.edge_start + k];
      const NodeItem& dst = ex_.nodes_[e.dst];
      const int id = dst.local;
      const bool is_control = e.dst_slot < 0;
      bool dst_dead = false;
      bool dst_ready = false;
      bool need_input = !is_control;
      const bool live = !is_dead && (is_control || outs[e.src_output].has_value);
      if (dst.kind == NodeKind::kMerge) {
        // Pending is 2 per control input plus 1 while no live data input has arrived.
        const int num_data = dst.num_inputs;
        if (is_control) {
          const int pending = st.pending[id].fetch_sub(2, std::memory_order_relaxed) - 2;
          dst_dead = st.dead[id].load(std::memory_order_relaxed) == num_data;
          dst_ready = pending == 0 || (pending == 1 && dst_dead);
        } else if (live) {
          const int pending = st.pending[id].load(std::memory_order_relaxed);
          need_input = (pending & 1) == 1;  // only the first live input counts
          if (need_input) st.pending[id].store(pending - 1, std::memory_order_relaxed);
          dst_ready = pending == 1;
        } else {
          // A dead data input. A dead Enter makes the Merge dead at once: in the first
          // iteration its NextIteration input never comes (a loop on an untaken branch).
          const int dead = st.dead[id].fetch_add(1, std::memory_order_relaxed) + 1;
          dst_dead = dead == num_data || item.kind == NodeKind::kEnter;
          dst_ready = st.pending[id].load(std::memory_order_relaxed) == 1 && dst_dead;
          need_input = false;
        }
      } else {
        if (!live) st.dead[id].fetch_add(1, std::memory_order_relaxed);
        dst_dead = st.dead[id].load(std::memory_order_relaxed) > 0;
        dst_ready = st.pending[id].fetch_sub(1, std::memory_order_relaxed) == 1;
        if (!live) need_input = false;
      }
      if (need_input) {
        Entry& src = outs[e.src_output];
        Entry& slot = st.slots[e.dst_slot];
        if (e.last_use) {
          slot = std::move(src);
        } else {
          slot = src;
        }
      }
      if (dst_ready) {
        if (dst.kind == NodeKind::kControlTrigger) dst_dead = false;
        ready->push_back({e.dst, frame, iter, dst_dead});
        ++st.outstanding_ops;
      }
    }
  }

  // Makes a loop invariant's value reach every iteration, present and future. Under frame->mu.
  void AddLoopInvariant(FrameState* frame, int node, const Entry& value, bool is_dead,
                        std::vector<TaggedNode>* ready) {
    Entry v = value;
    v.has_value = v.has_value && !is_dead;
    frame->inv_values.push_back({node, v});
    for (int64_t i = frame->iteration_count - frame->num_outstanding_iterations + 1;
         i <= frame->iteration_count; ++i) {
      Entry out = v;
      ActivateNodes(ex_.nodes_[node], !v.has_value, frame, i, std::span<Entry>(&out, 1), ready);
    }
  }

  // Starts iteration iteration_count + 1 with the held-back NextIteration values and the loop
  // invariants. Under frame->mu.
  void IncrementIteration(FrameState* frame, std::vector<TaggedNode>* ready) {
    const int64_t next = ++frame->iteration_count;
    if (frame->spare_iterations.empty()) {
      frame->IterSlot(next) = std::make_unique<IterationState>(*frame->info);
    } else {
      frame->IterSlot(next) = std::move(frame->spare_iterations.back());
      frame->spare_iterations.pop_back();
      frame->IterSlot(next)->Reset(*frame->info);
    }
    ++frame->num_outstanding_iterations;
    frame->dead_exits.clear();
    std::vector<std::pair<int, Entry>> roots = std::move(frame->next_iter_roots);
    frame->next_iter_roots.clear();
    for (auto& [node, value] : roots)
      ActivateNodes(ex_.nodes_[node], false, frame, next, std::span<Entry>(&value, 1), ready);
    for (const auto& [node, value] : frame->inv_values) {
      Entry out = value;  // ActivateNodes may move it into the last reader's slot
      ActivateNodes(ex_.nodes_[node], !value.has_value, frame, next, std::span<Entry>(&out, 1),
                    ready);
    }
  }

  bool IsIterationDone(FrameState* frame, int64_t iter) const {
    const IterationState* st = frame->Iter(iter);
    if (st->outstanding_ops != 0 || st->outstanding_frames != 0) return false;
    if (iter == 0) return frame->num_pending_inputs == 0;
    return frame->Iter(iter - 1) == nullptr;  // the previous iteration is gone
  }

  // Deletes finished iterations from `iter` on, starting held-back ones. True when the whole
  // frame is done. Under frame->mu.
  bool CleanupIterations(FrameState* frame, int64_t iter, std::vector<TaggedNode>* ready) {
    if (frame == &root_) return false;
    while (iter <= frame->iteration_count && frame->Iter(iter) != nullptr &&
           IsIterationDone(frame, iter)) {
      frame->IterSlot(iter)->Clear(*frame->info);
      frame->spare_iterations.push_back(std::move(frame->IterSlot(iter)));
      --frame->num_outstanding_iterations;
      ++iter;
      if (!frame->next_iter_roots.empty()) IncrementIteration(frame, ready);
    }
    return frame->num_pending_inputs == 0 && frame->num_outstanding_iterations == 0;
  }

  // A node of (frame, iter) is done. Under frame->mu. True when the frame is done.
  bool DecrementOutstandingOps(FrameState* frame, int64_t iter, std::vector<TaggedNode>* ready) {
    IterationState* st = frame->Iter(iter);
    if (--st->outstanding_ops != 0) return false;
    return CleanupIterations(frame, iter, ready);
  }

  FrameState* FindOrCreateChildFrame(FrameState* parent, int64_t parent_iter,
                                     const NodeItem& enter) {
    const Executor::FrameInfo& info = ex_.frames_[enter.child_frame];
    std::string name = StrCat(parent->name, ";", parent_iter, ";", info.name);
    std::lock_guard<std::mutex> lock(frames_mu_);
    auto it = frames_.find(name);
    if (it != frames_.end()) return it->second.get();
    auto frame = std::make_unique<FrameState>();
    frame->info = &info;
    frame->id = FrameId(name);
    frame->name = std::move(name);
    frame->parent = parent;
    frame->parent_iter = parent_iter;
    frame->max_parallel = std::max<int64_t>(1, enter.parallel_iterations);
    frame->iterations.resize(frame->max_parallel + 1);
    frame->IterSlot(0) = std::make_unique<IterationState>(info);
    frame->num_pending_inputs = info.num_enters;
    {
      std::lock_guard<std::mutex> parent_lock(parent->mu);
      ++parent->Iter(parent_iter)->outstanding_frames;
    }
    FrameState* raw = frame.get();
    frames_.emplace(raw->name, std::move(frame));
    return raw;
  }

  // A finished frame: its dead exits (a loop that never ran: it sat on an untaken branch) make
  // their consumers in the parent dead; then it is deleted.
  void DeleteFrame(FrameState* frame, std::vector<TaggedNode>* ready) {
    FrameState* parent = frame->parent;
    {
      std::lock_guard<std::mutex> lock(parent->mu);
      std::vector<Entry> no_outputs(1);
      for (int node : frame->dead_exits)
        ActivateNodes(ex_.nodes_[node], true, parent, frame->parent_iter, no_outputs, ready);
    }
    std::lock_guard<std::mutex> lock(frames_mu_);
    frames_.erase(frame->name);
  }

  // Child frame `frame` of (parent, parent_iter) may be done: cleans up recursively.
  void CleanupFramesIterations(FrameState* frame, int64_t iter, std::vector<TaggedNode>* ready) {
    bool done;
    {
      std::lock_guard<std::mutex> lock(frame->mu);
      --frame->Iter(iter)->outstanding_frames;
      done = CleanupIterations(frame, iter, ready);
    }
    if (!done) return;
    FrameState* parent = frame->parent;
    const int64_t parent_iter = frame->parent_iter;
    DeleteFrame(frame, ready);
    if (parent != nullptr) CleanupFramesIterations(parent, parent_iter, ready);
  }

  void PropagateSlow(const TaggedNode& tn, std::vector<Entry>& outs,
                     std::vector<TaggedNode>* ready) {
    const NodeItem& item = ex_.nodes_[tn.node];
    FrameState* frame = tn.frame;
    const int64_t iter = tn.iteration;
    const bool is_dead = tn.is_dead;
    bool frame_done = false;
    switch (item.kind) {
      case NodeKind::kEnter: {
        FrameState* child = FindOrCreateChildFrame(frame, iter, item);
        {
          std::lock_guard<std::mutex> lock(child->mu);
          if (item.is_constant_enter) {
            AddLoopInvariant(child, tn.node, outs[0], is_dead, ready);
          } else {
            ActivateNodes(item, is_dead, child, 0, outs, ready);
          }
          --child->num_pending_inputs;
        }
        std::lock_guard<std::mutex> lock(frame->mu);
        frame_done = DecrementOutstandingOps(frame, iter, ready);
        break;
      }
      case NodeKind::kExit: {
        if (is_dead) {
          std::lock_guard<std::mutex> lock(frame->mu);
          if (iter == frame->iteration_count) frame->dead_exits.push_back(tn.node);
          frame_done = DecrementOutstandingOps(frame, iter, ready);
        } else {
          {
            std::lock_guard<std::mutex> lock(frame->parent->mu);
            ActivateNodes(item, false, frame->parent, frame->parent_iter, outs, ready);
          }
          std::lock_guard<std::mutex> lock(frame->mu);
          frame_done = DecrementOutstandingOps(frame, iter, ready);
        }
        break;
      }
      case NodeKind::kNextIteration: {
        std::lock_guard<std::mutex> lock(frame->mu);
        if (!is_dead) {  // a dead NextIteration ends its loop: nothing goes on
          if (iter == frame->iteration_count &&
              frame->num_outstanding_iterations == frame->max_parallel) {
            frame->next_iter_roots.push_back({tn.node, std::move(outs[0])});
          } else {
            if (iter == frame->iteration_count) IncrementIteration(frame, ready);
            ActivateNodes(item, false, frame, iter + 1, outs, ready);
          }
        }
        frame_done = DecrementOutstandingOps(frame, iter, ready);
        break;
      }
      default: {
        std::lock_guard<std::mutex> lock(frame->mu);
        ActivateNodes(item, is_dead, frame, iter, outs, ready);
        frame_done = DecrementOutstandingOps(frame, iter, ready);
        break;
      }
    }
    if (frame_done) {
      FrameState* parent = frame->parent;
      const int64_t parent_iter = frame->parent_iter;
      DeleteFrame(frame, ready);
      if (parent != nullptr) CleanupFramesIterations(parent, parent_iter, ready);
    }
  }

  void Propagate(const TaggedNode& tn, std::vector<Entry>& outs, std::vector<TaggedNode>* ready) {
    if (ex_.has_control_flow_) {
      PropagateSlow(tn, outs, ready);
    } else {
      PropagateFast(tn, outs, ready);
    }
  }

  void RecordStats(int id, int64_t start_us, const KernelContext& ctx) {
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

  // Hands ready nodes out: inexpensive ones (and dead ones, which run nothing) to
  // `inline_ready`, costly ones to the pool, except that a pool thread keeps one costly node
  // when nothing else is left. Threads outside the pool (the caller of Run, the completer of an
  // asynchronous kernel) run no costly kernel, so that at most `inter_op` of them run at once,
  // each with the intra-op threads it expects; a caller that ran kernels too would start a second
  // OpenMP team that competes with the pool's for the cores. Accounts for the nodes in
  // outstanding_ first.
  void Schedule(const std::vector<TaggedNode>& ready, std::vector<TaggedNode>* inline_ready) {
    const TaggedNode* costly_inline = nullptr;
    for (const TaggedNode& tn : ready) {
      if (ex_.nodes_[tn.node].inexpensive || tn.is_dead) {
        inline_ready->push_back(tn);
      } else if (costly_inline == nullptr && inline_ready->empty() &&
                 ex_.pool_->OwnsCurrentThread()) {
        costly_inline = &tn;
      } else {
        ex_.pool_->Schedule([this, tn] {
          ScratchHolder scratch;
          scratch->inline_ready.push_back(tn);
          Process(*scratch);
        });
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

  // The node as its consumers see it once its kernel ran: live, except a _Recv that received a
  // dead tensor (dead for its control edges too: a control edge that crosses devices is such a
  // _Recv) and a dead _Send.
  static TaggedNode Finished(TaggedNode tn, const NodeItem& item, const KernelContext& ctx) {
    tn.is_dead = item.is_transfer && (ctx.is_output_dead || (tn.is_dead && item.num_outputs == 0));
    return tn;
  }

  // Runs one node; false when it went asynchronous (AsyncDone accounts for it).
  bool RunNode(const TaggedNode& tn, ProcessScratch& scratch) {
    KernelContext& ctx = scratch.ctx;
    std::vector<Tensor>& inputs = scratch.inputs;
    std::vector<RefPtr<Var>>& refs = scratch.refs;
    std::vector<Entry>& outs = scratch.outs;
    std::vector<TaggedNode>* ready = &scratch.ready;
    std::unique_ptr<AsyncCall>& spare_call = scratch.spare_call;
    const NodeItem& item = ex_.nodes_[tn.node];
    if (tn.is_dead && !item.is_transfer) {
      // A dead node runs nothing; its outputs are dead (Fig. 5). Its inputs are dropped.
      Entry* slots = Slots(tn);
      for (int i = 0; i < item.num_inputs; ++i) slots[item.input_start + i] = Entry();
      outs.assign(item.num_outputs, Entry());
      Propagate(tn, outs, ready);
      return true;
    }
    if (item.kind != NodeKind::kNone) {
      Status s = RunControlFlow(tn, item, &outs);
      if (!s.ok()) {
        Fail(s);
      } else {
        Propagate(tn, outs, ready);
      }
      return true;
    }
    const int64_t start_us = step_.collect_stats ? NowMicros() : 0;
    Status s = tn.is_dead ? Status() : PrepareInputs(tn, item, &inputs, &refs);
    if (tn.is_dead) inputs.assign(item.num_inputs, Tensor());
    if (!s.ok()) {
      Fail(s);
      return true;
    }
    if (item.is_async) {
      std::unique_ptr<AsyncCall> call = std::move(spare_call);
      if (call == nullptr) call = std::make_unique<AsyncCall>();
      call->state = this;
      call->node = tn;
      call->start_us = start_us;
      call->phase.store(AsyncCall::kComputing, std::memory_order_relaxed);
      call->inputs.swap(inputs);
      call->refs.swap(refs);
      InitContext(tn, item, &call->ctx, &call->inputs, &call->refs);
      AsyncCall* raw = call.release();
      item.kernel->ComputeAsync(&raw->ctx, AsyncDone{&ExecutorState::OnAsyncDone, raw});
      if (raw->phase.exchange(AsyncCall::kReturned, std::memory_order_acq_rel) ==
          AsyncCall::kComputing)
        return false;  // the done callback finishes the node
      // Done before ComputeAsync returned: finish it here, keep the call and its vectors.
      call.reset(raw);
      FinishNode(tn, item, call->ctx, outs, ready, start_us);
      inputs.swap(call->inputs);
      refs.swap(call->refs);
      spare_call = std::move(call);
    } else {
      InitContext(tn, item, &ctx, &inputs, &refs);
      item.kernel->ComputeSync(&ctx);
      FinishNode(tn, item, ctx, outs, ready, start_us);
    }
    for (int i = 0; i < item.num_inputs; ++i) inputs[i] = Tensor();
    if (item.has_ref_inputs) refs.clear();
    return true;
  }

  // After a node's kernel ran: its outputs to its consumers, or the step fails. An asynchronous
  // kernel may finish after the step was aborted: then its outputs go nowhere.
  void FinishNode(const TaggedNode& tn, const NodeItem& item, KernelContext& ctx,
                  std::vector<Entry>& outs, std::vector<TaggedNode>* ready, int64_t start_us) {
    item.kernel->FinishCompute(&ctx);
    if (!ctx.status.ok()) {
      Fail(ctx.status);
    } else if (!item.is_async || !aborted_.load(std::memory_order_acquire)) {
      if (step_.collect_stats && stats_ != nullptr) RecordStats(tn.node, start_us, ctx);
      CollectOutputs(&ctx, &outs);
      Propagate(Finished(tn, item, ctx), outs, ready);
    }
    for (Tensor& t : ctx.outputs) t = Tensor();
    ctx.output_refs.clear();
  }

  // Runs the nodes of scratch.inline_ready and those they make ready that run inline. The state
  // may be gone when it returns (the last node finished the step).
  void Process(ProcessScratch& scratch) {
    ScopedFlushDenormal flush;  // kernels see denormals as zero, as in TensorFlow
    std::vector<TaggedNode>& inline_ready = scratch.inline_ready;
    while (!inline_ready.empty()) {
      const TaggedNode tn = inline_ready.back();
      inline_ready.pop_back();
      scratch.ready.clear();
      if (!aborted_.load(std::memory_order_acquire) && !RunNode(tn, scratch)) continue;
      NodeDone(scratch.ready, &inline_ready);
    }
  }

  static void OnAsyncDone(void* arg) {
    auto* raw = static_cast<AsyncCall*>(arg);
    // Done before ComputeAsync returned: the node's own loop finishes it (RunNode).
    if (raw->phase.exchange(AsyncCall::kDone, std::memory_order_acq_rel) == AsyncCall::kComputing)
      return;
    std::unique_ptr<AsyncCall> call(raw);
    ExecutorState* self = call->state;
    const NodeItem& item = self->ex_.nodes_[call->node.node];
    ScratchHolder scratch;
    self->FinishNode(call->node, item, call->ctx, scratch->outs, &scratch->ready, call->start_us);
    call.reset();
    self->NodeDone(scratch->ready, &scratch->inline_ready);
    if (!scratch->inline_ready.empty()) self->Process(*scratch);
  }

  void Finish() {
    if (token_ != CancellationManager::kInvalidToken) step_.cancellation->Deregister(token_);
    Status s;
    {
      std::lock_guard<std::mutex> lock(mu_);
      s = status_;
    }
    if (s.ok() && ex_.has_control_flow_) {
      std::lock_guard<std::mutex> lock(frames_mu_);
      if (!frames_.empty())
        s = errors::Internal("the step ended with loop frame '", frames_.begin()->first,
                             "' unfinished (a malformed loop: an Enter, Merge or NextIteration "
                             "that never fired)");
    }
    Executor::DoneCallback done = std::move(done_);
    const Executor& ex = ex_;
    if (IterationState* root = root_.iterations[0].release(); root != nullptr) {
      root->Clear(ex.frames_[0]);
      void* expected = nullptr;
      if (!ex.spare_root_iteration_.compare_exchange_strong(expected, root,
                                                            std::memory_order_release))
        delete root;
    }
    this->~ExecutorState();
    ex.ReleaseStateMemory(this);
    done(s);
  }

  const Executor& ex_;
  const StepContext step_;
  DeviceStepStats* stats_;
  Executor::DoneCallback done_;
  FrameState root_;
  std::mutex frames_mu_;  // taken before any frame's mu, never after
  std::unordered_map<std::string, std::unique_ptr<FrameState>> frames_;
  std::atomic<int64_t> outstanding_{0};
  std::atomic<bool> aborted_{false};
  std::mutex mu_;
  Status status_;
  std::mutex stats_mu_;
  CancellationManager::Token token_ = CancellationManager::kInvalidToken;
};

Executor::~Executor() {
  ::operator delete(spare_state_.exchange(nullptr));
  delete static_cast<IterationState*>(spare_root_iteration_.exchange(nullptr));
}

void* Executor::StateMemory() const {
  void* p = spare_state_.exchange(nullptr, std::memory_order_acquire);
  return p != nullptr ? p : ::operator new(sizeof(ExecutorState));
}

void Executor::ReleaseStateMemory(void* p) const {
  void* expected = nullptr;
  if (!spare_state_.compare_exchange_strong(expected, p, std::memory_order_release))
    ::operator delete(p);
}

// Lays out each static frame (graph/control_flow_info.h): its nodes' local indices and input
// slots, and what its Enter nodes need to create instances of it.
Status Executor::BuildFrames(const Graph& graph) {
  CFX_ASSIGN_OR_RETURN(ControlFlowInfo cf, BuildControlFlowInfo(graph));
  frames_.resize(cf.frames.size());
  for (size_t f = 0; f < cf.frames.size(); ++f) {
    frames_[f].name = cf.frames[f].name;
    frames_[f].num_enters = cf.frames[f].num_enters;
  }
  for (const auto& n : graph.nodes()) {
    NodeItem& item = nodes_[n->id()];
    item.frame = cf.frame_of[n->id()];
    item.child_frame = cf.entered[n->id()];
    if (item.child_frame >= 0) {
      if (const AttrValue* c = n->attr("is_constant")) item.is_constant_enter = c->b;
      // Each frame instance allocates a ring of parallel_iterations + 1 slots, so the attr is
      // not taken as a size as it stands (2^62 would be 2^62 slots). It only bounds how many
      // iterations run at once, so the clamp changes no result.
      if (const AttrValue* p = n->attr("parallel_iterations"))
        item.parallel_iterations = std::min(p->i, kMaxParallelIterations);
    }
    FrameInfo& info = frames_[item.frame];
    item.local = info.num_nodes++;
    item.input_start = info.num_slots;
    info.num_slots += item.num_inputs;
    info.initial_pending.push_back(initial_pending_[n->id()]);
  }
  return Status();
}

StatusOr<std::unique_ptr<Executor>> Executor::Create(const Runtime& runtime, Device* device,
                                                     ThreadPool* pool,
                                                     std::unique_ptr<Graph> graph) {
  std::unique_ptr<Executor> ex(new Executor());
  ex->device_ = device;
  ex->host_addressable_ = device->host_addressable();
  ex->pool_ = pool;
  const int n = graph->num_nodes();
  ex->nodes_.resize(n);
  ex->kernels_.resize(n);
  ex->initial_pending_.resize(n);
  for (const auto& node : graph->nodes()) {
    const int id = node->id();
    NodeItem& item = ex->nodes_[id];
    const OpDef& op = node->op_registration().def;
    CFX_ASSIGN_OR_RETURN(const KernelDef* def,
                         runtime.kernels().Find(node->def(), op, device->type()));
    CFX_ASSIGN_OR_RETURN(ex->kernels_[id], KernelInstance::Create(def, node->def(), op, device));
    item.kernel = ex->kernels_[id].get();
    item.num_inputs = node->num_inputs();
    item.num_outputs = node->num_outputs();
    item.kind = ControlFlowOpOf(node->op());
    item.is_transfer = node->op() == "_Send" || node->op() == "_Recv";
    item.inexpensive = item.kernel->inexpensive() || item.kind != NodeKind::kNone;
    item.is_async = item.kernel->is_async();
    item.accepts_uninitialized_refs =
        node->op() == "Assign" || node->op() == "IsVariableInitialized";
    if (item.kind != NodeKind::kNone) ex->has_control_flow_ = true;
    const int num_control = static_cast<int>(node->in_control_edges().size());
    int pending = static_cast<int>(node->in_data_edges().size()) + num_control;
    // Merge: 2 per control input, plus 1 until its first live data input arrives.
    if (item.kind == NodeKind::kMerge) pending = 2 * num_control + 1;
    ex->initial_pending_[id] = pending;
    if (node->in_data_edges().empty() && num_control == 0) ex->roots_.push_back(id);
    item.type_start = static_cast<int>(ex->expects_ref_.size());
    for (DataType t : node->input_types()) {
      ex->expects_ref_.push_back(IsRefType(t) ? 1 : 0);
      if (IsRefType(t)) item.has_ref_inputs = true;
    }
  }
  CFX_RETURN_IF_ERROR(ex->BuildFrames(*graph));
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
  (new (StateMemory()) ExecutorState(*this, step, stats, std::move(done)))->Start();
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
