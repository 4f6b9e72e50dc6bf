// FunctionDefLibrary: the functions a GraphDef carries (TensorFlow's function.proto), read into
// C++ structs so that graph passes can instantiate and inline them.
//
// A GraphDef keeps its library as serialized bytes (GraphDef::library), so that reading and
// writing a graph gives back the same message; this is a read-only view parsed from those bytes.
// Plain data: thread-compatible.
#ifndef CONFLUX_CORE_SRC_GRAPH_FUNCTION_LIBRARY_H_
#define CONFLUX_CORE_SRC_GRAPH_FUNCTION_LIBRARY_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "conflux/graph_def.h"
#include "conflux/op_def.h"
#include "conflux/status.h"

namespace cfx {

// One function. Inside `node_def`, inputs name a function argument ("x", or "x:2" for the third
// tensor of a list argument), an output of another node of the body as
// "node:output_arg_name:index" (the index counts within that output arg), or a control input
// ("^node"). `ret` maps each output arg of the signature to such a tensor name.
struct FunctionDef {
  OpDef signature;  // name, input and output args, type attrs
  AttrMap attr;     // attrs of the function itself ("_noinline", "_construction_context", ...)
  std::map<uint32_t, AttrMap> arg_attr;  // per input arg index ("_output_shapes", ...)
  std::map<uint32_t, uint32_t> resource_arg_unique_id;
  std::vector<NodeDef> node_def;
  std::map<std::string, std::string> ret;          // output arg name -> tensor
  std::map<std::string, std::string> control_ret;  // control output name -> body node name
};

struct FunctionLibrary {
  std::map<std::string, FunctionDef> functions;  // by signature name
  std::map<std::string, std::string> gradients;  // function name -> its gradient function
  // nullptr when no function has that name.
  const FunctionDef* Find(const std::string& name) const;
};

// Parses GraphDef::library (empty bytes give an empty library). InvalidArgument naming the
// function, and the node or attr inside it, that is malformed; or a function defined twice.
// The functions' constants decode to at most `max_constant_bytes` in all (ResourceExhausted
// naming the function, node and attr past it; GraphLimits::max_constant_bytes).
StatusOr<FunctionLibrary> ParseFunctionLibrary(
    std::string_view serialized, int64_t max_constant_bytes = GraphLimits().max_constant_bytes);

}  // namespace cfx

#endif  // CONFLUX_CORE_SRC_GRAPH_FUNCTION_LIBRARY_H_
