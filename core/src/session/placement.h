// The session's use of graph optimization, placement and the measured cost model.
#ifndef CONFLUX_CORE_SRC_SESSION_PLACEMENT_H_
#define CONFLUX_CORE_SRC_SESSION_PLACEMENT_H_

#include <vector>

#include "conflux/graph.h"
#include "conflux/kernel_registry.h"
#include "conflux/runtime.h"
#include "conflux/session.h"
#include "passes/cost_model.h"
#include "session/graph_rewrite.h"

namespace cfx {

// The placement cost model of one session: static estimates, refined by the step stats of
// traced runs when the config's placement.cost_model is "measured".
class PlacementCosts {
 public:
  explicit PlacementCosts(bool measured) : measured_(measured) {}
  void Record(const StepStats& stats, const Runtime& runtime);
  const CostModel& model() const { return model_; }
  // The link between the tasks of a cluster (CostModel::SetNetwork).
  void SetNetwork(double latency_us, double bytes_per_us) {
    model_.SetNetwork(latency_us, bytes_per_us);
  }

 private:
  bool measured_;
  CostModel model_;
};

// A device for every node (indexed by Node::id()).
// `default_task`: see PlaceGraph.
StatusOr<std::vector<Device*>> Place(const Graph& graph, const std::vector<Device*>& devices,
                                     const KernelRegistry& kernels, const PlacementCosts& costs,
                                     const DeviceName* default_task = nullptr);

// Runs the config's graph optimizations (CSE, constant folding) on a pruned graph, keeping the
// feeds, fetches and targets.
Status OptimizeForRun(const Runtime& runtime, const PrunedGraph& pruned,
                      const std::vector<std::string>& targets, GraphDef* graph);

}  // namespace cfx

#endif  // CONFLUX_CORE_SRC_SESSION_PLACEMENT_H_
