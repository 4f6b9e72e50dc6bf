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

// Bounds on a graph from an untrusted source (docs/security.md): within them a graph gets an
// error or runs, never a crash. Each is a key of the config's `limits:` section
// (config/README.md), which sets them for the runtime's sessions (Session::Create, Extend) and
// for the graphs the CLI reads. A graph over one is InvalidArgument naming the limit, the
// graph's value and the config key.
struct GraphLimits {
  int64_t max_graph_bytes = int64_t{1} << 30;  // limits.graph_bytes: a serialized GraphDef
  int64_t max_nodes = int64_t{1} << 22;        // limits.nodes: a session's whole graph
  // limits.nesting_depth: messages nested in messages (func attrs in func attrs, ...), as
  // protobuf's recursion limit; the parsers' recursion never goes deeper.
  int max_nesting_depth = 100;
  int64_t max_attr_list_length = int64_t{1} << 20;  // limits.attr_list_length: any list attr
  // limits.constant_bytes: what a graph's tensor attrs (Const values, ...) decode to in all. A
  // TensorProto pads a short value list to its whole shape, so a few bytes of graph can ask for
  // gigabytes: this bounds the sum, as graph_bytes bounds what is read.
  int64_t max_constant_bytes = int64_t{4} << 30;
};

// OK when `graph` has at most limits.max_nodes nodes (`more_nodes` counts nodes the graph adds
// to, as for Session::Extend) and no list attr, nor one inside a func attr, is longer than
// limits.max_attr_list_length or nested deeper than limits.max_nesting_depth.
Status CheckGraphLimits(const GraphDef& graph, const GraphLimits& limits, int64_t more_nodes = 0);

// Parses TensorFlow's wire format; InvalidArgument naming what was malformed, or the limit that
// `data` is over.
StatusOr<GraphDef> ParseGraphDef(std::string_view data, GraphFormat format,
                                 const GraphLimits& limits = GraphLimits());
std::string SerializeGraphDef(const GraphDef& graph, GraphFormat format);
// Reads a file: protobuf text when the name ends in .pbtxt or .txt, binary otherwise.
// Errors name the file.
StatusOr<GraphDef> ReadGraphDefFile(const std::string& path,
                                    const GraphLimits& limits = GraphLimits());
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
