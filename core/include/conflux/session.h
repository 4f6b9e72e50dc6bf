// Session: runs steps of a graph on a Runtime's devices (whitepaper §3.2, §4.2).
//
//   auto runtime = Runtime::Create(Config::Default()).value();
//   auto session = Session::Create(runtime.get(), graph_def).value();
//   std::vector<Tensor> out;
//   CFX_RETURN_IF_ERROR(session->Run({{"x:0", x}}, {"y:0"}, {}, &out));
//
// Only what the fetches and targets need runs; a feed may replace any output ("node:port").
// Each (feeds, fetches, targets) signature is pruned, optimized, placed and partitioned once;
// its executors are cached. Run is thread-safe: concurrent calls overlap.
#ifndef CONFLUX_SESSION_H_
#define CONFLUX_SESSION_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "conflux/graph_def.h"
#include "conflux/runtime.h"
#include "conflux/status.h"
#include "conflux/step_stats.h"
#include "conflux/tensor.h"

namespace cfx {

struct RunOptions {
  // 0 = no limit. A step that runs longer is aborted with DeadlineExceeded.
  int64_t timeout_ms = 0;
  // Collect per-node step stats into RunMetadata::step_stats.
  bool trace = false;
};

struct RunMetadata {
  StepStats step_stats;
  // Per partition: device name -> the partition's graph, as it ran (with _Send/_Recv).
  std::vector<std::pair<std::string, GraphDef>> partition_graphs;
};

struct DeviceAttributes {
  std::string name;  // full name
  std::string type;
  std::string description;
  int64_t memory_limit = 0;
};

class Session {
 public:
  // `runtime` must outlive the session. The graph is validated against the runtime's ops and
  // its config's limits (Config::limits; Extend checks the grown graph).
  static StatusOr<std::unique_ptr<Session>> Create(Runtime* runtime, const GraphDef& graph = {});
  ~Session();  // closes the session
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Adds nodes to the graph (names must be new). Cached executors stay valid.
  Status Extend(const GraphDef& graph);

  // feeds: "node:port" (or "node") -> host tensor; fetches: "node:port"; targets: node names run
  // for their effect. Outputs come back as host tensors in fetch order.
  Status Run(const RunOptions& options, const std::vector<std::pair<std::string, Tensor>>& feeds,
             const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
             std::vector<Tensor>* outputs, RunMetadata* metadata);
  Status Run(const std::vector<std::pair<std::string, Tensor>>& feeds,
             const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
             std::vector<Tensor>* outputs);

  // Aborts running steps (blocked queue ops and Recvs are released with Cancelled) and
  // rejects further calls.
  Status Close();

  std::vector<DeviceAttributes> ListDevices() const;

  // Clears the named resource containers on every device of the runtime (variables, queues);
  // every session of the process sees the change. The default container ("") is kept.
  Status Reset(const std::vector<std::string>& containers);

  Runtime* runtime() const;

 private:
  struct Impl;
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace cfx

#endif  // CONFLUX_SESSION_H_
