// CheckGraphLimits (see conflux/graph_def.h).
#include <algorithm>
#include <utility>
#include <vector>

#include "conflux/graph_def.h"

namespace cfx {
namespace {

size_t LongestList(const AttrValue::List& l) {
  return std::max({l.s.size(), l.i.size(), l.f.size(), l.b.size(), l.type.size(), l.shape.size(),
                   l.tensor.size(), l.tensor_encoding.size(), l.func.size()});
}

// The attrs of one node, and those of the func attrs inside them, walked without recursion.
Status CheckAttrs(const NodeDef& node, const GraphLimits& limits) {
  struct Pending {
    const AttrMap* attrs;
    int depth;  // 1 for the node's own attrs
    std::string where;
  };
  std::vector<Pending> pending{{&node.attr, 1, ""}};
  while (!pending.empty()) {
    Pending p = std::move(pending.back());
    pending.pop_back();
    if (p.depth > limits.max_nesting_depth)
      return errors::InvalidArgument(
          "node '", node.name, "' nests func attrs deeper than the limit of ",
          limits.max_nesting_depth, " (config key limits.nesting_depth)");
    for (const auto& [name, value] : *p.attrs) {
      const std::string where = p.where + "attr '" + name + "'";
      const size_t length = LongestList(value.list);
      if (static_cast<int64_t>(length) > limits.max_attr_list_length)
        return errors::InvalidArgument("node '", node.name, "' ", where, " is a list of ", length,
                                       " values, over the limit of ", limits.max_attr_list_length,
                                       " (config key limits.attr_list_length)");
      if (value.func) pending.push_back({&value.func->attr, p.depth + 1, where + " func "});
      for (const NameAttrList& f : value.list.func)
        pending.push_back({&f.attr, p.depth + 1, where + " func "});
    }
  }
  return Status();
}

}  // namespace

Status CheckGraphLimits(const GraphDef& graph, const GraphLimits& limits, int64_t more_nodes) {
  const int64_t nodes = static_cast<int64_t>(graph.node.size()) + more_nodes;
  if (nodes > limits.max_nodes)
    return errors::InvalidArgument("graph of ", nodes, " nodes is over the limit of ",
                                   limits.max_nodes, " (config key limits.nodes)");
  for (const NodeDef& node : graph.node) CFX_RETURN_IF_ERROR(CheckAttrs(node, limits));
  return Status();
}

}  // namespace cfx
