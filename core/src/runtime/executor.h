// Executor: runs one partition (the nodes placed on one device) for a step (whitepaper §3.1,
// §5; DESIGN §4).
//
// Built once per partition: every node's kernel is created up front, edges are flattened into
// arrays. Per step only the step state is allocated: one input slot per node input and one
// pending count per node. A node whose pending count reaches zero is ready; ready nodes with
// inexpensive kernels run inline on the thread that made them ready, costly ones go to the
// inter-op pool (all but one, which the current thread keeps), asynchronous kernels (Recv, queue
// ops) call back when done and their continuation runs on the calling thread.
//
// The first error aborts the step: the step's CancellationManager is cancelled, which releases
// blocked Recvs and queue operations of every executor of the step; nodes not yet started are
// skipped.
//
// Control flow (EuroSys 2018 §4): the step state is organised as frames (the root, and one
// instance per loop entered per parent iteration) and iterations. Tensors carry (value, is_dead,
// frame, iteration): Switch marks its untaken output dead, Merge fires on its first live input,
// ops with a dead input are skipped and pass deadness on, Enter/Exit/NextIteration move values
// between frames and iterations, loop invariants (Enter is_constant) reach every iteration, and
// at most `parallel_iterations` (Enter's attr) iterations of a loop are in flight at once.
// _Send/_Recv run even when dead, so that dead signals cross partitions.
#ifndef CONFLUX_CORE_SRC_RUNTIME_EXECUTOR_H_
#define CONFLUX_CORE_SRC_RUNTIME_EXECUTOR_H_

#include <atomic>
#include <functional>
#include <memory>
#include <vector>

#include "conflux/graph.h"
#include "conflux/runtime.h"
#include "conflux/step_stats.h"
#include "runtime/kernel_instance.h"
#include "runtime/step.h"
#include "runtime/thread_pool.h"

namespace cfx {

class Executor {
 public:
  // Every node of `graph` runs on `device`. Fails when a node has no kernel for the device or
  // its kernel cannot be created (the error names the node), or the graph has a cycle.
  static StatusOr<std::unique_ptr<Executor>> Create(const Runtime& runtime, Device* device,
                                                    ThreadPool* pool, std::unique_ptr<Graph> graph);
  ~Executor();

  using DoneCallback = std::function<void(const Status&)>;
  // Runs the partition for one step; `done` is called exactly once, possibly before RunAsync
  // returns. `stats` (may be null) receives per-node stats when step.collect_stats.
  void RunAsync(const StepContext& step, DeviceStepStats* stats, DoneCallback done);
  Status Run(const StepContext& step, DeviceStepStats* stats = nullptr);

  Device* device() const { return device_; }
  const Graph& graph() const { return *graph_; }

 private:
  friend class ExecutorState;

 public:
  struct NodeItem;
  struct OutEdge;
  struct FrameInfo;

 private:
  Executor() = default;
  Status BuildFrames(const Graph& graph);
  // Memory for a step's state (ExecutorState), and its return once the state is destroyed.
  void* StateMemory() const;
  void ReleaseStateMemory(void* p) const;

  Device* device_ = nullptr;
  bool host_addressable_ = true;  // the device's memory is host memory (no copies needed)
  ThreadPool* pool_ = nullptr;
  std::unique_ptr<Graph> graph_;
  std::vector<std::unique_ptr<KernelInstance>> kernels_;
  std::vector<NodeItem> nodes_;
  std::vector<OutEdge> edges_;
  std::vector<FrameInfo> frames_;     // [0] is the root frame
  bool has_control_flow_ = false;     // any Switch, Merge, Enter, Exit, NextIteration, ...
  std::vector<char> expects_ref_;     // per node input (NodeItem::type_start + i)
  std::vector<int> roots_;            // nodes with no inputs
  std::vector<int> initial_pending_;  // per node
  int num_slots_ = 0;
  // The memory of the last step's state, kept for the next step's (a step state is over a
  // kilobyte: malloc's slow path, which also consolidates its heap, on every step).
  mutable std::atomic<void*> spare_state_{nullptr};
  // The root frame's iteration state (input slots, pending and dead counts) of the last step,
  // emptied, for the next step's.
  mutable std::atomic<void*> spare_root_iteration_{nullptr};
};

}  // namespace cfx

#endif  // CONFLUX_CORE_SRC_RUNTIME_EXECUTOR_H_
