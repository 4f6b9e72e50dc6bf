// libFuzzer target: a GraphDef in TensorFlow's binary or text format (the first byte's low bit
// picks), imported with the default limits, validated against the standard ops (Graph) and
// shape-inferred (GraphShapes). Every input must end in a graph or an error status.
#include <google/protobuf/stubs/logging.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "conflux/graph.h"
#include "conflux/graph_def.h"
#include "conflux/runtime.h"
#include "graph/graph_shapes.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The standard ops, no plugins: nothing here runs a kernel.
  static cfx::Runtime* runtime = [] {
    google::protobuf::SetLogHandler(nullptr);  // malformed strings are expected, not news
    return cfx::Runtime::Create(cfx::Config()).value().release();
  }();
  if (size == 0) return 0;
  const auto format = (data[0] & 1) ? cfx::GraphFormat::kText : cfx::GraphFormat::kBinary;
  // Constants within 256 MiB in all (limits.constant_bytes), as a runtime serving untrusted
  // graphs would set it: each input is decoded whole before the next.
  static const cfx::GraphLimits limits = [] {
    cfx::GraphLimits l;
    l.max_constant_bytes = int64_t{256} << 20;
    return l;
  }();
  auto def = cfx::ParseGraphDef(std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1),
                                format, limits);
  if (!def.ok()) return 0;
  auto graph = cfx::Graph::FromGraphDef(*def, &runtime->ops());
  if (!graph.ok()) return 0;
  cfx::GraphShapes shapes(graph->get());
  shapes.Update();
  return 0;
}
