// PlacementCosts, Place and OptimizeForRun.
#include "session/placement.h"

#include <map>
#include <set>

#include "passes/optimizer.h"
#include "passes/placer.h"

namespace cfx {

void PlacementCosts::Record(const StepStats& stats, const Runtime& runtime) {
  if (!measured_) return;
  std::map<std::string, std::string> type_of;
  for (const auto& d : runtime.devices()) type_of[d->full_name()] = d->type();
  model_.Record(stats, type_of);
}

StatusOr<std::vector<Device*>> Place(const Graph& graph, const std::vector<Device*>& devices,
                                     const KernelRegistry& kernels, const PlacementCosts& costs,
                                     const DeviceName* default_task) {
  CFX_ASSIGN_OR_RETURN(PlacementResult placed,
                       PlaceGraph(graph, devices, kernels, costs.model(), default_task));
  return placed.device_of;
}

Status OptimizeForRun(const Runtime& runtime, const PrunedGraph& pruned,
                      const std::vector<std::string>& targets, GraphDef* graph) {
  GraphOptimizerOptions options;
  options.cse = runtime.config().common_subexpression_elimination;
  options.constant_folding = runtime.config().constant_folding;
  if (!options.cse && !options.constant_folding) return Status();
  std::set<std::string> keep(targets.begin(), targets.end());
  keep.insert(pruned.arg_nodes.begin(), pruned.arg_nodes.end());
  keep.insert(pruned.retval_nodes.begin(), pruned.retval_nodes.end());
  GraphOptimizerStats stats;
  return OptimizeGraph(runtime, options, keep, graph, &stats);
}

}  // namespace cfx
