// OutputRanges (see conflux/cc/op_outputs.h).
#include "conflux/cc/op_outputs.h"

namespace cfx::internal {

std::vector<std::pair<int, int>> OutputRanges(const Operation& op) {
  const Node* node = op.node();
  std::vector<std::pair<int, int>> ranges;
  int next = 0;
  for (const ArgDef& arg : node->op_registration().def.output_arg) {
    int count = 1;
    if (!arg.number_attr.empty()) {
      const AttrValue* n = node->attr(arg.number_attr);
      count = n == nullptr ? 0 : static_cast<int>(n->i);
    } else if (!arg.type_list_attr.empty()) {
      const AttrValue* types = node->attr(arg.type_list_attr);
      count = types == nullptr ? 0 : static_cast<int>(types->list.type.size());
    }
    ranges.emplace_back(next, next + count);
    next += count;
  }
  return ranges;
}

}  // namespace cfx::internal
