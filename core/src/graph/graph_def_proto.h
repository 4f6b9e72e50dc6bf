// Conversions between our protobuf messages and the structs of conflux/graph_def.h and
// conflux/op_def.h, shared by the GraphDef reader and the function library reader. Errors name
// the path of what failed ("node 'n' attr 'T': ..."); `where` prefixes it.
#ifndef CONFLUX_CORE_SRC_GRAPH_GRAPH_DEF_PROTO_H_
#define CONFLUX_CORE_SRC_GRAPH_GRAPH_DEF_PROTO_H_

#include <string>

#include "conflux/graph_def.h"
#include "conflux/op_def.h"
#include "graph/tensor_proto.h"
#include "proto/attr_value.pb.h"
#include "proto/node_def.pb.h"
#include "proto/op_def.pb.h"

namespace cfx::internal {

// Tensor attrs take their decoded sizes from `budget` when one is given (tensor_proto.h).
Status NodeDefFromProto(const ::conflux::NodeDef& proto, NodeDef* out,
                        ConstantBudget* budget = nullptr);
Status OpDefFromProtoMessage(const ::conflux::OpDef& proto, OpDef* out);
Status AttrValueFromProto(const ::conflux::AttrValue& proto, const std::string& where,
                          AttrValue* out, ConstantBudget* budget = nullptr);

}  // namespace cfx::internal

#endif  // CONFLUX_CORE_SRC_GRAPH_GRAPH_DEF_PROTO_H_
