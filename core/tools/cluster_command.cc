#include "cluster_command.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace cfx {
namespace {

// Milliseconds in the largest unit that states them exactly: "0", "250ms", "30s", "2m", "1h".
std::string FormatDuration(int64_t ms) {
  if (ms == 0) return "0";
  constexpr std::pair<int64_t, const char*> kUnits[] = {
      {60 * 60 * 1000, "h"}, {60 * 1000, "m"}, {1000, "s"}};
  for (const auto& [size, name] : kUnits)
    if (ms % size == 0) return StrCat(ms / size, name);
  return StrCat(ms, "ms");
}

// "CPU x1, GPU x2 (memory_limit 1073741824)": the devices a task creates.
std::string FormatDevices(const std::map<std::string, DeviceTypeConfig>& devices) {
  if (devices.empty()) return "the devices its plugins provide by default";
  std::string out;
  for (const auto& [type, device] : devices) {
    out += StrCat(out.empty() ? "" : ", ", type, " x", device.count);
    if (device.memory_limit > 0) out += StrCat(" (memory_limit ", device.memory_limit, ")");
  }
  return out;
}

}  // namespace

StatusOr<std::string> DescribeCluster(const Config& config, const std::string& config_name,
                                      const std::string& program) {
  const ClusterConfig& cluster = config.cluster;
  if (!cluster.enabled)
    return StrCat(config_name,
                  " describes a single process (it has no cluster: section): run it without "
                  "mpirun\n");
  CFX_ASSIGN_OR_RETURN(std::vector<ClusterTask> tasks, cluster.Resolve());
  CFX_ASSIGN_OR_RETURN(int chief, cluster.ChiefRank());
  std::ostringstream out;
  out << (cluster.source.empty() ? config_name : cluster.source) << ": a cluster of "
      << tasks.size() << (tasks.size() == 1 ? " task" : " tasks") << ", transport "
      << cluster.transport;
  for (size_t i = 0; i < cluster.transport_options.size(); ++i) {
    const auto& [key, value] = cluster.transport_options[i];
    out << (i == 0 ? " (" : ", ") << key << "=" << value
        << (i + 1 == cluster.transport_options.size() ? ")" : "");
  }
  out << "\n";
  const size_t rank_width = std::to_string(tasks.size() - 1).size();
  size_t name_width = 0;
  for (const ClusterTask& task : tasks) name_width = std::max(name_width, task.name().size());
  for (const ClusterTask& task : tasks) {
    std::string rank = std::to_string(task.rank), name = task.name();
    rank.resize(rank_width, ' ');
    name.resize(name_width, ' ');
    out << "  rank " << rank << "  " << name << (task.rank == chief ? "  (chief)  " : "           ")
        << FormatDevices(cluster.DevicesOf(task.job, config.devices)) << "\n";
  }
  out << "step timeout: "
      << (cluster.step_timeout_ms == 0 ? "none" : FormatDuration(cluster.step_timeout_ms))
      << "; heartbeat: ";
  if (cluster.heartbeat_interval_ms == 0) {
    out << "none";
  } else {
    out << "every " << FormatDuration(cluster.heartbeat_interval_ms) << ", a peer is dead after "
        << FormatDuration(cluster.heartbeat_timeout_ms) << " without an answer";
  }
  out << "\nlaunch: mpirun -n " << tasks.size() << " " << program << " run GRAPH --config "
      << config_name << "\n";
  return out.str();
}

}  // namespace cfx
