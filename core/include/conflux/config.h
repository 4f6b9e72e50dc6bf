// Config: what a process loads and creates at start-up, read from YAML (config/local.yaml is the
// default). config/README.md documents every key. Errors name file:line, the key and what was
// expected; unknown keys are errors.
#ifndef CONFLUX_CONFIG_H_
#define CONFLUX_CONFIG_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "conflux/graph_def.h"
#include "conflux/status.h"

namespace cfx {

struct PluginSpec {
  std::string name;  // resolved through the search path: libconflux_<name>.so
  std::string path;  // or an explicit file
  bool required = true;
  std::vector<std::pair<std::string, std::string>> options;
  std::string source;  // "file:line" where it was declared, for error messages
};

struct DeviceTypeConfig {
  int count = 1;
  int64_t memory_limit = 0;  // bytes, 0 = unlimited
  bool required = false;     // fail start-up when fewer than `count` devices exist
  // Loop stacks whose pushes have swap_memory set move their tensors to host memory once the
  // device's memory in use passes this fraction of its limit (0: always), as TensorFlow's 0.7.
  double swap_threshold = 0.7;
  std::vector<std::pair<std::string, std::string>> options;
};

// One job of a cluster (`cluster.jobs[i]`): `tasks` processes that share a name ("worker").
struct ClusterJob {
  std::string name;
  int tasks = 1;
  // The devices each task of the job creates; empty = the config's top-level `devices:`.
  std::map<std::string, DeviceTypeConfig> devices;
  std::string source;  // "file:line"
};

// One task of a resolved cluster: which MPI rank runs which (job, task).
struct ClusterTask {
  std::string job;
  int task = 0;
  int rank = 0;
  // "/job:<job>/replica:0/task:<task>": the prefix of its devices' full names.
  std::string name() const;
};

// The `cluster:` section (config/README.md, docs/distributed.md). Absent = one process.
struct ClusterConfig {
  bool enabled = false;
  std::string transport = "mpi";  // the transport a loaded plugin registered under this name
  // Given to the transport when it is created (after the plugin's own options).
  std::vector<std::pair<std::string, std::string>> transport_options;
  std::vector<ClusterJob> jobs;
  // The task that runs the client program and the master: "job:task" ("worker:0"). Empty = the
  // task of rank 0.
  std::string chief;
  // Which task each rank runs, rank i = ranks[i] ("ps:0"). Empty = the default rule: the chief
  // first (rank 0), then every other task, jobs in order and tasks in order.
  std::vector<std::string> ranks;
  // How a program uses the cluster (docs/distributed.md):
  //  - "in-graph": the chief's program builds one graph over every task and its master runs it;
  //    the other ranks serve it (Runtime::Create returns on the chief only).
  //  - "between-graph": every rank runs the program and gets a Runtime of its own task; each
  //    session runs on that task's devices only, and collectives (CollectiveReduceV2 and the
  //    others, group_size = every task) join the ranks' steps, as Horovod does. No master, no
  //    round trip per step.
  std::string replication = "in-graph";
  bool between_graph() const { return replication == "between-graph"; }
  // Every step's time limit across the cluster, 0 = none (RunOptions::timeout_ms overrides).
  int64_t step_timeout_ms = 0;
  // How often tasks check that their peers are alive, and after how long without an answer a
  // peer counts as dead.
  int64_t heartbeat_interval_ms = 1000;
  int64_t heartbeat_timeout_ms = 5000;
  // Data-parallel training (conflux/cc/distributed.h) all-reduces gradients in buckets of up to
  // this many bytes (tensor fusion); 0 = one all-reduce per gradient.
  int64_t fusion_bytes = int64_t{4} << 20;
  // Lossy compression of float32 tensors sent between tasks (whitepaper §5.5): "none",
  // "truncate16" (the upper 16 bits: bfloat16 by truncating the mantissa) or "half" (IEEE
  // binary16, rounded); the receiver widens them back to float32. `compression_edges`: glob
  // patterns on the tensor's name ("node:port"); empty = every float32 tensor.
  std::string compression = "none";
  std::vector<std::string> compression_edges;
  // Tensors (and all-reduce buckets) of fewer bytes travel exactly: hyperparameters, losses and
  // other small values, where there is no bandwidth to save and 16 bits may lose them (half
  // flushes Adam's epsilon of 1e-8 to zero).
  int64_t compression_min_bytes = 4096;
  std::string source;  // "file:line" of `cluster:`

  int num_tasks() const;
  // The tasks by rank (size num_tasks()); errors name the config's line: an unknown job or task
  // in `chief` or `ranks`, a task given two ranks or none.
  StatusOr<std::vector<ClusterTask>> Resolve() const;
  // The rank of the chief among Resolve()'s tasks.
  StatusOr<int> ChiefRank() const;
  // The devices a task creates: its job's, else `fallback` (the config's top-level devices).
  const std::map<std::string, DeviceTypeConfig>& DevicesOf(
      const std::string& job, const std::map<std::string, DeviceTypeConfig>& fallback) const;
};

struct Config {
  std::string source;  // the file (or "<embedded>")
  // The YAML text it was read from ("" for a Config built in code). A cluster's chief sends it
  // to the workers, which run under it.
  std::string text;
  std::vector<std::string> plugin_paths;
  std::vector<PluginSpec> plugins;
  std::map<std::string, DeviceTypeConfig> devices;  // by device type ("CPU")
  int intra_op_threads = 0;                         // 0 = number of cores
  int inter_op_threads = 0;                         // executor pool; 0 = number of cores
  // Graph optimizations run once per (feeds, fetches, targets) signature.
  bool common_subexpression_elimination = true;
  bool constant_folding = true;
  // TensorFlow's remapper: Conv2D/MatMul + BiasAdd (+ activation) into one fused CPU node.
  bool remapping = true;
  // Placement cost model: "static" (FLOP and byte estimates) or "measured" (refined from the
  // step stats of earlier runs).
  std::string placement_cost_model = "measured";
  std::string log_level = "warning";                // debug, info, warning, error
  // Bounds on the graphs this runtime's sessions take and the CLI reads (`limits:`).
  GraphLimits limits;
  ClusterConfig cluster;

  // The built-in default: config/local.yaml as shipped (embedded in libconflux).
  static Config Default();
  static StatusOr<Config> FromFile(const std::string& path);
  // `source` names the text in error messages.
  static StatusOr<Config> FromString(const std::string& yaml, const std::string& source);
};

// The text of config/local.yaml, embedded at build time.
const char* DefaultConfigYaml();

}  // namespace cfx

#endif  // CONFLUX_CONFIG_H_
