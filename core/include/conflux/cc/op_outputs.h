// Where each output argument of an op lands among a node's outputs (for the generated wrappers).
#ifndef CONFLUX_CC_OP_OUTPUTS_H_
#define CONFLUX_CC_OP_OUTPUTS_H_

#include <utility>
#include <vector>

#include "conflux/cc/output.h"

namespace cfx::internal {

// Per output argument of `op`'s OpDef: [first, end) output indices, from the node's attrs
// (list lengths and type lists).
std::vector<std::pair<int, int>> OutputRanges(const Operation& op);

}  // namespace cfx::internal

#endif  // CONFLUX_CC_OP_OUTPUTS_H_
