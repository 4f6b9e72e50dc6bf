// FuseContractions and CpuOnlyPredicate (remapper.h).
#include "passes/remapper.h"

#include <algorithm>
#include <map>
#include <optional>

namespace cfx {
namespace {

constexpr const char* kActivations[] = {"Relu", "Relu6", "Elu", "LeakyRelu"};

// The attrs of Conv2D and MatMul that _FusedConv2D and _FusedMatMul also have (MatMul's
// grad_a/grad_b hints are not among them); internal `_` attrs are copied as well.
const std::set<std::string>& SharedAttrs(bool conv) {
  static const std::set<std::string> conv_attrs = {
      "T",           "strides",   "padding",         "explicit_paddings",
      "data_format", "dilations", "use_cudnn_on_gpu"};
  static const std::set<std::string> matmul_attrs = {"T", "transpose_a", "transpose_b"};
  return conv ? conv_attrs : matmul_attrs;
}

bool IsControl(const std::string& input) { return !input.empty() && input[0] == '^'; }

// The producer's name of a data input ("node" or "node:1") and whether it is output 0.
std::string ProducerName(const std::string& input, bool* output_zero) {
  const size_t colon = input.rfind(':');
  *output_zero = colon == std::string::npos || input.substr(colon + 1) == "0";
  return input.substr(0, colon);
}

std::string StringAttrOr(const NodeDef& n, const char* name, const std::string& fallback) {
  auto it = n.attr.find(name);
  return it == n.attr.end() ? fallback : it->second.s;
}

std::optional<DataType> TypeAttr(const NodeDef& n) {
  auto it = n.attr.find("T");
  if (it == n.attr.end() || it->second.kind != AttrValue::Kind::kType) return std::nullopt;
  return it->second.type;
}

class Remapper {
 public:
  Remapper(GraphDef* graph, const std::set<std::string>& keep, const FusionPredicate& predicate)
      : graph_(*graph), keep_(keep), predicate_(predicate), removed_(graph->node.size(), false) {
    for (size_t i = 0; i < graph_.node.size(); ++i) {
      const NodeDef& n = graph_.node[i];
      index_[n.name] = i;
      for (const std::string& input : n.input) {
        bool unused;
        if (IsControl(input)) {
          ++control_consumers_[input.substr(1)];
        } else {
          ++data_consumers_[ProducerName(input, &unused)];
        }
      }
    }
  }

  int Run() {
    int fused = 0;
    // Three-node patterns first, so that a BiasAdd followed by an activation is not taken alone.
    for (size_t i = 0; i < graph_.node.size(); ++i) {
      const std::string& op = graph_.node[i].op;
      const bool activation = std::any_of(std::begin(kActivations), std::end(kActivations),
                                          [&](const char* a) { return op == a; });
      if (!removed_[i] && activation && TryFuse(i, /*with_activation=*/true)) ++fused;
    }
    for (size_t i = 0; i < graph_.node.size(); ++i)
      if (!removed_[i] && graph_.node[i].op == "BiasAdd" && TryFuse(i, false)) ++fused;
    std::vector<NodeDef> kept;
    kept.reserve(graph_.node.size());
    for (size_t i = 0; i < graph_.node.size(); ++i)
      if (!removed_[i]) kept.push_back(std::move(graph_.node[i]));
    graph_.node = std::move(kept);
    return fused;
  }

 private:
  // The node behind data input `input` when that input is output 0 of a node whose only
  // consumer it is (no other data or control consumer) and which may disappear; else null.
  NodeDef* SoleProducer(const std::string& input) {
    if (IsControl(input)) return nullptr;
    bool output_zero = false;
    const std::string name = ProducerName(input, &output_zero);
    auto it = index_.find(name);
    if (!output_zero || it == index_.end() || removed_[it->second] || keep_.count(name) ||
        data_consumers_[name] != 1 || control_consumers_.count(name))
      return nullptr;
    return &graph_.node[it->second];
  }

  // Fuses the pattern ending at node `last` (an activation, or a BiasAdd when
  // !with_activation); false when it does not match or the predicate refuses.
  bool TryFuse(size_t last, bool with_activation) {
    NodeDef& tail = graph_.node[last];
    if (tail.input.empty()) return false;
    NodeDef* bias_add = with_activation ? SoleProducer(tail.input[0]) : &tail;
    if (bias_add == nullptr || bias_add->op != "BiasAdd" || bias_add->input.size() < 2 ||
        IsControl(bias_add->input[1]))
      return false;
    NodeDef* contraction = SoleProducer(bias_add->input[0]);
    if (contraction == nullptr || contraction->input.size() < 2 || IsControl(contraction->input[1]))
      return false;
    const bool conv = contraction->op == "Conv2D";
    if (!conv && contraction->op != "MatMul") return false;
    std::vector<const NodeDef*> parts = {contraction, bias_add};
    if (with_activation) parts.push_back(&tail);
    for (const NodeDef* p : parts)
      if (p->device != contraction->device || !TypeAttr(*p) || TypeAttr(*p) != TypeAttr(tail))
        return false;
    if (conv && (StringAttrOr(*contraction, "data_format", "NHWC") != "NHWC" ||
                 StringAttrOr(*bias_add, "data_format", "NHWC") != "NHWC"))
      return false;

    NodeDef fused;
    fused.name = tail.name;
    fused.op = conv ? "_FusedConv2D" : "_FusedMatMul";
    fused.device = contraction->device;
    fused.input = {contraction->input[0], contraction->input[1], bias_add->input[1]};
    for (const NodeDef* p : parts)
      for (const std::string& input : p->input) {
        const bool inside = std::any_of(parts.begin(), parts.end(),
                                        [&](const NodeDef* q) { return input == "^" + q->name; });
        if (IsControl(input) && !inside &&
            std::find(fused.input.begin(), fused.input.end(), input) == fused.input.end())
          fused.input.push_back(input);
      }
    for (const auto& [name, value] : contraction->attr)
      if (name[0] == '_' || SharedAttrs(conv).count(name)) fused.attr[name] = value;
    std::vector<std::string> fused_ops = {"BiasAdd"};
    if (with_activation) fused_ops.push_back(tail.op);
    fused.attr["fused_ops"] = AttrValue::StringList(fused_ops);
    fused.attr["num_args"] = AttrValue::Int(1);
    if (conv) fused.attr["TArgs"] = AttrValue::TypeList({*TypeAttr(tail)});
    fused.attr["epsilon"] = AttrValue::Float(0.0001f);
    auto alpha = tail.attr.find("alpha");
    fused.attr["leakyrelu_alpha"] = AttrValue::Float(
        tail.op == "LeakyRelu" && alpha != tail.attr.end() ? alpha->second.f : 0.2f);
    if (!predicate_(fused, parts)) return false;

    removed_[index_.at(contraction->name)] = true;
    if (with_activation) removed_[index_.at(bias_add->name)] = true;
    tail = std::move(fused);
    return true;
  }

  GraphDef& graph_;
  const std::set<std::string>& keep_;
  const FusionPredicate& predicate_;
  std::vector<bool> removed_;
  std::map<std::string, size_t> index_;
  std::map<std::string, int> data_consumers_, control_consumers_;
};

}  // namespace

int FuseContractions(GraphDef* graph, const std::set<std::string>& keep,
                     const FusionPredicate& runs_fused_on_cpu) {
  return Remapper(graph, keep, runs_fused_on_cpu).Run();
}

FusionPredicate CpuOnlyPredicate(const std::vector<Device*>& devices, const OpRegistry& ops,
                                 const KernelRegistry& kernels) {
  return
      [&devices, &ops, &kernels](const NodeDef& fused, const std::vector<const NodeDef*>& parts) {
        const OpRegistration* fused_op = ops.LookUp(fused.op);
        if (fused_op == nullptr) return false;
        std::optional<DeviceName> request;
        if (!fused.device.empty()) {
          StatusOr<DeviceName> parsed = DeviceName::Parse(fused.device);
          if (!parsed.ok()) return false;
          request = *parsed;
        }
        bool cpu_kernel = false;
        for (const Device* d : devices) {
          if (request && !request->Matches(d->name())) continue;
          if (d->type() == "CPU") {
            cpu_kernel = cpu_kernel || kernels.HasKernel(fused, fused_op->def, "CPU");
            continue;
          }
          for (const NodeDef* part : parts) {
            const OpRegistration* op = ops.LookUp(part->op);
            if (op != nullptr && kernels.HasKernel(*part, op->def, d->type())) return false;
          }
        }
        return cpu_kernel;
      };
}

}  // namespace cfx
