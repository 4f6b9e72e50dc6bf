// GraphDef and NodeDef: TensorFlow's serialized graph, in C++, and its file I/O.
//
// Files use TensorFlow's protobuf wire format (binary, or protobuf text format), read and written
// through Conflux's own .proto files with TensorFlow's field numbers. Reading then writing a
// GraphDef gives back the same message: tensor attrs keep their original TensorProto encoding and
// the function library is carried through unchanged.
#ifndef CONFLUX_GRAPH_DEF_H_
#define CONFLUX_GRAPH_DEF_H_

#include <string>
#include <string_view>
#include <vector>

#include "conflux/attr_value.h"
#include "conflux/op_def.h"
#include "conflux/status.h"

namespace cfx {

struct NodeDef {
  std::string name;
  std::string op;
  // "node", "node:1" (data inputs, first) and "^node" (control inputs, last).
  std::vector<std::string> input;
  std::string device;  // requested device spec, may be partial or empty
  AttrMap attr;
  std::string experimental_debug_info;  // serialized NodeDef.ExperimentalDebugInfo, carried as is
  bool operator==(const NodeDef& o) const;
};

struct VersionDef {
  int32_t producer = 0;
  int32_t min_consumer = 0;
  std::vector<int32_t> bad_consumers;
  bool operator==(const VersionDef& o) const {
    return producer == o.producer && min_consumer == o.min_consumer &&
           bad_consumers == o.bad_consumers;
  }
};

struct GraphDef {
  std::vector<NodeDef> node;
  bool has_versions = false;
  VersionDef versions;
  int32_t version = 0;  // deprecated field 3, carried as is
  std::string library;  // serialized FunctionDefLibrary, carried as is (empty when absent)
  bool operator==(const GraphDef& o) const;
};

enum class GraphFormat { kBinary, kText };

// Parses TensorFlow's wire format; InvalidArgument naming what was malformed.
StatusOr<GraphDef> ParseGraphDef(std::string_view data, GraphFormat format);
std::string SerializeGraphDef(const GraphDef& graph, GraphFormat format);
// Reads a file: protobuf text when the name ends in .pbtxt or .txt, binary otherwise.
// Errors name the file.
StatusOr<GraphDef> ReadGraphDefFile(const std::string& path);
Status WriteGraphDefFile(const GraphDef& graph, const std::string& path);
GraphFormat GraphFormatForPath(const std::string& path);

// Parses TensorFlow's OpList (what its op registry dumps, e.g. `op_def_registry.get(name)` of
// every op, written as one OpList) into OpDefs, in the file's order. Descriptions, deprecations
// and full-type information are dropped. InvalidArgument naming the op and attr that is malformed.
StatusOr<std::vector<OpDef>> ParseOpList(std::string_view data, GraphFormat format);

// Splits "name:3" / "^name" into its parts. Port is -1 for control inputs.
struct TensorId {
  std::string node;
  int port = 0;
  bool operator==(const TensorId& o) const { return node == o.node && port == o.port; }
};
StatusOr<TensorId> ParseTensorName(std::string_view name);

}  // namespace cfx

#endif  // CONFLUX_GRAPH_DEF_H_
