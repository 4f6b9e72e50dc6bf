// PlaceGraph: assigns every node of a graph to a device (DESIGN §5; whitepaper §3.2.1, §4.3).
//
//   1. Feasible devices per node: devices whose type has a kernel for the node's op and dtypes,
//      narrowed by the node's requested device (full or partial spec; "" = any).
//   2. Colocation groups (union-find): `_class: loc:@other` attrs, and consumers of DT_RESOURCE
//      or reference outputs join their producer. Each group's feasible set is the intersection of
//      its members'. Softly, a "generator" (no inputs, stateless, every out-edge into one node,
//      e.g. a Const) follows its consumer when their devices allow it: it is placed when the
//      consumer is, on the same device (TensorFlow's placer has the same rule).
//   3. Greedy simulated execution in topological order with a CostModel: each group, when its
//      first member is reached, goes to the device where its nodes would finish soonest given
//      when each device becomes free and what moving the inputs costs.
// Deterministic for the same graph, devices and cost model: ties go to the lowest device index
// (for a group holding an `_Arg`, host-addressable devices first). A pure function; thread-safe.
#ifndef CONFLUX_CORE_SRC_PASSES_PLACER_H_
#define CONFLUX_CORE_SRC_PASSES_PLACER_H_

#include <string>
#include <vector>

#include "conflux/device.h"
#include "conflux/graph.h"
#include "conflux/kernel_registry.h"
#include "conflux/status.h"
#include "passes/cost_model.h"

namespace cfx {

struct PlacementResult {
  std::vector<Device*> device_of;  // indexed by Node::id()
  // The simulated schedule, indexed by Node::id(), in microseconds from the step's start.
  std::vector<double> start_us, finish_us;
  double estimated_makespan_us = 0;
  // One line per node in graph order: name, op, device, estimated start and finish.
  std::string Report(const Graph& graph) const;
};

// Places every node of `graph` on one of `devices` (which must outlive the result).
// InvalidArgument when a node has no feasible device (naming the node, its op and dtypes, its
// requested device and the device types with and without a kernel for it), when a colocation
// group's feasible sets do not intersect (naming the nodes, their requests, where each has
// kernels and why they are colocated), when a requested device cannot be parsed, or when the
// graph has a cycle.
// `default_task` (a cluster's chief, "/job:worker/replica:0/task:0"; may be null): a colocation
// group none of whose members names a job or task in its request stays on that task's devices
// when they can run it (TensorFlow places such nodes in the client's task).
StatusOr<PlacementResult> PlaceGraph(const Graph& graph, const std::vector<Device*>& devices,
                                     const KernelRegistry& kernels, const CostModel& costs,
                                     const DeviceName* default_task = nullptr);

}  // namespace cfx

#endif  // CONFLUX_CORE_SRC_PASSES_PLACER_H_
