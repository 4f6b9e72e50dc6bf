// CostModel: how long a node takes on a device type and how long a tensor takes to move between
// two devices, for the placer (DESIGN §5).
//
// Estimates start static (FLOPs and bytes of a node from its shapes, divided by a nominal rate
// for the device type) and are replaced by measured means once Record() has seen step stats for
// the node. Thread-safe: Record may run while other threads ask for estimates.
#ifndef CONFLUX_CORE_SRC_PASSES_COST_MODEL_H_
#define CONFLUX_CORE_SRC_PASSES_COST_MODEL_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "conflux/device.h"
#include "conflux/graph.h"
#include "conflux/step_stats.h"
#include "conflux/tensor_shape.h"
#include "graph/graph_shapes.h"

namespace cfx {

class CostModel {
 public:
  CostModel() = default;
  CostModel(const CostModel&) = delete;
  CostModel& operator=(const CostModel&) = delete;

  // Estimated compute time of `node` in microseconds on `device_type`. The static estimate uses
  // the shapes that the node itself and its direct inputs reveal (Const values, Placeholder
  // shapes, `_output_shapes`); a measured mean for (node name, device type) wins over it. A node
  // measured only on another device type gets this type's static estimate scaled by how far the
  // static estimate was off there.
  double ComputeUs(const Node& node, const std::string& device_type) const;
  // The same with shapes inferred over the whole graph (InferGraphShapes).
  double ComputeUs(const Node& node, const std::string& device_type,
                   const NodeShapes& shapes) const;
  // Estimated time to move `bytes` from `from` to `to`; 0 on the same device. Between devices
  // of different tasks (job or task differ): the network's latency and bandwidth.
  double TransferUs(int64_t bytes, const Device& from, const Device& to) const;
  // Bytes of output `port` of `node`: measured when Record() saw it, else from `shape` and the
  // dtype (unknown dims count as kUnknownDim elements).
  int64_t OutputBytes(const Node& node, int port, const PartialTensorShape& shape) const;

  // Folds the per-node times and output sizes of one step into running means. `device_type_of`
  // maps a full device name to its type; devices it does not name are skipped.
  void Record(const StepStats& stats, const std::map<std::string, std::string>& device_type_of);
  // Whether any node time was recorded.
  bool measured() const;

  // The link between tasks of a cluster, measured at start-up: one-way latency and bytes per
  // microsecond. Until set: 50 us and 1 GB/s.
  void SetNetwork(double latency_us, double bytes_per_us);

  static constexpr int64_t kUnknownDim = 32;

 private:
  struct Mean {
    double sum = 0;
    int64_t count = 0;
    double value() const { return count ? sum / count : 0; }
  };
  double network_latency_us_ = 50.0, network_bytes_per_us_ = 1e3;
  // Static FLOP/byte estimate for a device type, ignoring measurements.
  double StaticUs(const Node& node, const std::string& device_type, const NodeShapes& shapes) const;

  mutable std::mutex mu_;
  std::map<std::pair<std::string, std::string>, Mean> compute_;  // (node, device type)
  std::map<std::pair<std::string, int>, Mean> output_bytes_;     // (node, port)
};

}  // namespace cfx

#endif  // CONFLUX_CORE_SRC_PASSES_COST_MODEL_H_
