// CostModel: static FLOP/byte estimates refined by measured step stats.
#include "passes/cost_model.h"

#include <algorithm>
#include <set>

namespace cfx {

namespace {

// Nominal throughput of a device type. The numbers only need to rank devices and weigh compute
// against transfers sensibly; measured stats replace them for nodes that have run.
struct DeviceRates {
  double flops_per_us;
  double bytes_per_us;
  double overhead_us;  // per node: scheduling and launch
};

DeviceRates RatesFor(const std::string& device_type) {
  if (device_type == "CPU") return {5e4, 1e4, 1.0};  // 50 GFLOP/s, 10 GB/s
  if (device_type == "GPU") return {1e7, 5e5, 5.0};  // 10 TFLOP/s, 500 GB/s
  return {2e6, 1e5, 10.0};                           // some other accelerator
}

// Ops that produce their output without touching the data (views, metadata, plumbing).
bool IsFreeOp(const std::string& op) {
  static const std::set<std::string> kFree = {
      "Const",   "Identity",   "NoOp",    "Placeholder", "Shape",   "Rank",  "Size",
      "Reshape", "ExpandDims", "Squeeze", "_Arg",        "_Retval", "_Send", "_Recv"};
  return kFree.count(op) > 0;
}

int64_t Dim(const PartialTensorShape& s, int i) {
  if (s.unknown_rank() || i < 0 || i >= s.rank() || s.dim(i) < 0) return CostModel::kUnknownDim;
  return s.dim(i);
}

double Elements(const PartialTensorShape& s) {
  if (s.unknown_rank()) return CostModel::kUnknownDim;
  double n = 1;
  for (int i = 0; i < s.rank(); ++i) n *= static_cast<double>(Dim(s, i));
  return n;
}

double ElementBytes(DataType dtype) {
  size_t size = DataTypeSize(BaseType(dtype));
  if (size == 0) return BaseType(dtype) == DT_STRING ? 16 : 8;
  return static_cast<double>(size);
}

bool AttrBool(const Node& node, const std::string& name) {
  const AttrValue* v = node.attr(name);
  return v != nullptr && v->kind == AttrValue::Kind::kBool && v->b;
}

// Multiply-adds of the ops whose cost is not proportional to their bytes, times two; -1 for the
// others.
double MatrixFlops(const Node& node, const NodeShapes& shapes) {
  const std::string& op = node.op();
  if (shapes.inputs.size() < 2) return -1;
  const PartialTensorShape& a = shapes.inputs[0];
  const PartialTensorShape& b = shapes.inputs[1];
  if (op == "MatMul") {
    bool ta = AttrBool(node, "transpose_a"), tb = AttrBool(node, "transpose_b");
    double m = static_cast<double>(Dim(a, ta ? 1 : 0));
    double k = static_cast<double>(Dim(a, ta ? 0 : 1));
    double n = static_cast<double>(Dim(b, tb ? 0 : 1));
    return 2 * m * n * k;
  }
  if (op == "BatchMatMul" || op == "BatchMatMulV2" || op == "BatchMatMulV3") {
    if (a.unknown_rank() || a.rank() < 2 || shapes.outputs.empty()) return -1;
    bool adj_x = AttrBool(node, "adj_x");
    int r = a.rank();
    double k = static_cast<double>(Dim(a, adj_x ? r - 2 : r - 1));
    return 2 * Elements(shapes.outputs[0]) * k;
  }
  if (op == "Conv2D" || op == "Conv3D" || op == "DepthwiseConv2dNative") {
    // Filter: spatial dims..., in_channels, out_channels (or channel multiplier).
    if (b.unknown_rank() || shapes.outputs.empty()) return -1;
    double per_output = 1;
    for (int i = 0; i + 1 < b.rank(); ++i) per_output *= static_cast<double>(Dim(b, i));
    if (op == "DepthwiseConv2dNative") per_output /= std::max<double>(1, Dim(b, b.rank() - 2));
    return 2 * Elements(shapes.outputs[0]) * per_output;
  }
  return -1;
}

}  // namespace

double CostModel::StaticUs(const Node& node, const std::string& device_type,
                           const NodeShapes& shapes) const {
  DeviceRates rates = RatesFor(device_type);
  if (IsFreeOp(node.op())) return rates.overhead_us;
  double bytes = 0, elements = 0;
  for (size_t i = 0; i < shapes.inputs.size(); ++i) {
    double n = Elements(shapes.inputs[i]);
    elements = std::max(elements, n);
    bytes += n * ElementBytes(node.input_types()[i]);
  }
  for (size_t i = 0; i < shapes.outputs.size(); ++i) {
    double n = Elements(shapes.outputs[i]);
    elements = std::max(elements, n);
    bytes += n * ElementBytes(node.output_types()[i]);
  }
  double flops = MatrixFlops(node, shapes);
  if (flops < 0) flops = elements;  // element-wise and reductions: about one op per element
  return rates.overhead_us + std::max(flops / rates.flops_per_us, bytes / rates.bytes_per_us);
}

double CostModel::ComputeUs(const Node& node, const std::string& device_type) const {
  return ComputeUs(node, device_type, InferLocalNodeShapes(node));
}

double CostModel::ComputeUs(const Node& node, const std::string& device_type,
                            const NodeShapes& shapes) const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = compute_.find({node.name(), device_type});
    if (it != compute_.end()) return it->second.value();
    // Measured on another device type only: scale this type's static estimate by how far off the
    // static estimate was there (first such type in name order, for determinism).
    auto other = compute_.lower_bound({node.name(), std::string()});
    if (other != compute_.end() && other->first.first == node.name()) {
      double static_there = StaticUs(node, other->first.second, shapes);
      double measured_there = other->second.value();
      if (static_there > 0)
        return StaticUs(node, device_type, shapes) * (measured_there / static_there);
    }
  }
  return StaticUs(node, device_type, shapes);
}

double CostModel::TransferUs(int64_t bytes, const Device& from, const Device& to) const {
  if (&from == &to || from.name() == to.name()) return 0;
  double b = static_cast<double>(std::max<int64_t>(bytes, 0));
  if (from.name().job != to.name().job || from.name().task != to.name().task)
    return network_latency_us_ + b / network_bytes_per_us_ +
           (from.host_addressable() ? 0.0 : b / 1e4) + (to.host_addressable() ? 0.0 : b / 1e4);
  bool from_host = from.host_addressable(), to_host = to.host_addressable();
  if (from_host && to_host) return 2.0 + b / 2e4;           // a hand-over, at most a memcpy
  if (from_host || to_host) return 10.0 + b / 1e4;          // one bus crossing
  if (from.plugin() == to.plugin()) return 10.0 + b / 2e4;  // peer copy
  return 20.0 + b / 5e3;                                    // staged through the host
}

void CostModel::SetNetwork(double latency_us, double bytes_per_us) {
  network_latency_us_ = std::max(latency_us, 0.0);
  network_bytes_per_us_ = std::max(bytes_per_us, 1.0);
}

int64_t CostModel::OutputBytes(const Node& node, int port, const PartialTensorShape& shape) const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = output_bytes_.find({node.name(), port});
    if (it != output_bytes_.end()) return static_cast<int64_t>(it->second.value());
  }
  if (port < 0 || port >= node.num_outputs()) return 0;
  return static_cast<int64_t>(Elements(shape) * ElementBytes(node.output_types()[port]));
}

void CostModel::Record(const StepStats& stats,
                       const std::map<std::string, std::string>& device_type_of) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const DeviceStepStats& device : stats.devices) {
    auto type = device_type_of.find(device.device);
    if (type == device_type_of.end()) continue;
    for (const NodeExecStats& n : device.nodes) {
      Mean& m = compute_[{n.node_name, type->second}];
      m.sum += static_cast<double>(std::max<int64_t>(n.end_us - n.start_us, 0));
      ++m.count;
      for (size_t port = 0; port < n.output_bytes.size(); ++port) {
        if (n.output_bytes[port] < 0) continue;
        Mean& b = output_bytes_[{n.node_name, static_cast<int>(port)}];
        b.sum += static_cast<double>(n.output_bytes[port]);
        ++b.count;
      }
    }
  }
}

bool CostModel::measured() const {
  std::lock_guard<std::mutex> lock(mu_);
  return !compute_.empty();
}

}  // namespace cfx
