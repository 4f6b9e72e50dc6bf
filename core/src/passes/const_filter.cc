// MarkConstantFilters (const_filter.h).
#include "passes/const_filter.h"

#include <map>
#include <string>

namespace cfx {
namespace {

// The node an input string names ("node", "node:1"; control inputs are not data).
std::string ProducerOf(const std::string& input) { return input.substr(0, input.find(':')); }

}  // namespace

int MarkConstantFilters(GraphDef* graph) {
  std::map<std::string, const NodeDef*> by_name;
  for (const NodeDef& n : graph->node) by_name[n.name] = &n;
  // Follows Identity nodes (output 0 of each) up to the producer; null when a name is missing.
  auto source = [&](std::string input) -> const NodeDef* {
    for (size_t hops = 0; hops <= by_name.size(); ++hops) {
      if (input.empty() || input[0] == '^') return nullptr;
      auto it = by_name.find(ProducerOf(input));
      if (it == by_name.end()) return nullptr;
      const NodeDef* n = it->second;
      if (n->op != "Identity" || n->input.empty()) return n;
      input = n->input[0];
    }
    return nullptr;  // a cycle of Identity nodes
  };
  int marked = 0;
  for (NodeDef& n : graph->node) {
    const bool convolution =
        n.op == "Conv2D" || n.op == "_FusedConv2D" || n.op == "DepthwiseConv2dNative";
    if (!convolution || n.input.size() < 2) continue;
    const NodeDef* filter = source(n.input[1]);
    if (filter == nullptr || filter->op != "Const") continue;
    n.attr["_filter_const"] = AttrValue::Bool(true);
    ++marked;
  }
  return marked;
}

}  // namespace cfx
