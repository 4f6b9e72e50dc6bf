// ClusterConfig and ClusterTask (conflux/config.h): ranks resolved from jobs, chief and ranks.
#include "plugin/cluster_config.h"

#include <charconv>
#include <utility>

namespace cfx {
namespace internal {
namespace {

// More ranks than any MPI job runs; a guard against a typo that would make a task table of
// billions of entries.
constexpr int kMaxTasks = 1 << 20;

std::string JobNames(const ClusterConfig& cluster) {
  std::string names;
  for (const ClusterJob& job : cluster.jobs) names += (names.empty() ? "" : ", ") + job.name;
  return names;
}

// The task that `text` ("worker:1") names, as its position among all tasks (jobs in order, tasks
// in order); `first_task[j]` is the position of jobs[j]'s task 0.
StatusOr<int> FindTask(const ClusterConfig& cluster, const std::vector<int>& first_task,
                       const std::string& text) {
  const size_t colon = text.find(':');
  int index = -1;
  if (colon != std::string::npos && colon > 0) {
    const char* end = text.data() + text.size();
    auto [after, ec] = std::from_chars(text.data() + colon + 1, end, index);
    if (ec != std::errc() || after != end) index = -1;
  }
  if (index < 0)
    return errors::InvalidArgument("expected a task as job:index (e.g. worker:0), got \"", text,
                                   "\"");
  const std::string job = text.substr(0, colon);
  for (size_t j = 0; j < cluster.jobs.size(); ++j) {
    if (cluster.jobs[j].name != job) continue;
    if (index >= cluster.jobs[j].tasks)
      return errors::InvalidArgument("expected a task of job ", job, " (", job, ":0 to ", job, ":",
                                     cluster.jobs[j].tasks - 1, "), got \"", text, "\"");
    return first_task[j] + index;
  }
  return errors::InvalidArgument("expected a task of a job in cluster.jobs (", JobNames(cluster),
                                 "), got \"", text, "\"");
}

// Checks the jobs; returns each job's first position among all tasks.
StatusOr<std::vector<int>> CheckJobs(const ClusterConfig& cluster, ClusterSpot* spot) {
  if (cluster.jobs.empty()) {
    *spot = {ClusterSpot::kJobs, 0};
    return errors::InvalidArgument("expected at least one job (e.g. - {name: worker, tasks: 2})");
  }
  std::vector<int> first_task;
  int num_tasks = 0;
  for (size_t j = 0; j < cluster.jobs.size(); ++j) {
    const ClusterJob& job = cluster.jobs[j];
    *spot = {ClusterSpot::kJobName, static_cast<int>(j)};
    if (job.name.empty()) return errors::InvalidArgument("expected a name (e.g. name: worker)");
    if (!IsJobName(job.name))
      return errors::InvalidArgument(
          "expected a job name of lower-case letters, digits and '_' that starts with a letter "
          "(e.g. worker, ps), got \"",
          job.name, "\"");
    for (size_t k = 0; k < j; ++k) {
      if (cluster.jobs[k].name != job.name) continue;
      return errors::InvalidArgument("job ", job.name, " is listed twice (first ",
                                     cluster.jobs[k].source.empty()
                                         ? StrCat("as cluster.jobs[", k, "]")
                                         : "at " + cluster.jobs[k].source,
                                     ")");
    }
    *spot = {ClusterSpot::kJobTasks, static_cast<int>(j)};
    if (job.tasks < 1) return errors::InvalidArgument("expected at least 1 task, got ", job.tasks);
    if (job.tasks > kMaxTasks - num_tasks)
      return errors::InvalidArgument("expected at most ", kMaxTasks,
                                     " tasks in all jobs together, got ", job.tasks, " here after ",
                                     num_tasks, " in the jobs before");
    first_task.push_back(num_tasks);
    num_tasks += job.tasks;
  }
  return first_task;
}

}  // namespace

std::string ClusterSpot::Path() const {
  switch (kind) {
    case kJobs:
      return "cluster.jobs";
    case kJobName:
      return StrCat("cluster.jobs[", index, "].name");
    case kJobTasks:
      return StrCat("cluster.jobs[", index, "].tasks");
    case kChief:
      return "cluster.chief";
    case kRanks:
      return "cluster.ranks";
    case kRank:
      return StrCat("cluster.ranks[", index, "]");
  }
  return "cluster";
}

bool IsJobName(const std::string& name) {
  if (name.empty() || name[0] < 'a' || name[0] > 'z') return false;
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

StatusOr<ResolvedCluster> ResolveCluster(const ClusterConfig& cluster, ClusterSpot* spot) {
  CFX_ASSIGN_OR_RETURN(std::vector<int> first_task, CheckJobs(cluster, spot));
  // Every task in job order, and its rank (-1 until it has one).
  std::vector<ClusterTask> tasks;
  for (const ClusterJob& job : cluster.jobs)
    for (int t = 0; t < job.tasks; ++t) tasks.push_back({job.name, t, -1});
  int chief = -1;  // the task of rank 0 unless `chief` names one
  if (!cluster.chief.empty()) {
    *spot = {ClusterSpot::kChief, 0};
    CFX_ASSIGN_OR_RETURN(chief, FindTask(cluster, first_task, cluster.chief));
  }
  std::vector<int> by_rank;  // positions in `tasks`
  if (cluster.ranks.empty()) {
    if (chief < 0) chief = 0;
    by_rank.push_back(chief);
    for (int i = 0; i < static_cast<int>(tasks.size()); ++i)
      if (i != chief) by_rank.push_back(i);
  }
  for (size_t r = 0; r < cluster.ranks.size(); ++r) {
    *spot = {ClusterSpot::kRank, static_cast<int>(r)};
    CFX_ASSIGN_OR_RETURN(int i, FindTask(cluster, first_task, cluster.ranks[r]));
    if (tasks[i].rank >= 0)
      return errors::InvalidArgument(cluster.ranks[r], " is listed twice (first as ranks[",
                                     tasks[i].rank, "])");
    tasks[i].rank = static_cast<int>(r);
    by_rank.push_back(i);
  }
  if (chief < 0) chief = by_rank.empty() ? 0 : by_rank[0];
  for (const ClusterTask& task : tasks) {
    if (by_rank.size() == tasks.size()) break;  // each listed once: none is missing
    if (task.rank >= 0) continue;
    *spot = {ClusterSpot::kRanks, 0};
    return errors::InvalidArgument("expected every one of the ", tasks.size(), " tasks once, but ",
                                   task.job, ":", task.task, " is missing");
  }
  ResolvedCluster resolved;
  for (int i : by_rank) {
    if (i == chief) resolved.chief_rank = static_cast<int>(resolved.tasks.size());
    resolved.tasks.push_back(tasks[i]);
    resolved.tasks.back().rank = static_cast<int>(resolved.tasks.size()) - 1;
  }
  return resolved;
}

}  // namespace internal

std::string ClusterTask::name() const { return StrCat("/job:", job, "/replica:0/task:", task); }

int ClusterConfig::num_tasks() const {
  int n = 0;
  for (const ClusterJob& job : jobs) n += job.tasks;
  return n;
}

namespace {

// ResolveCluster with the section's source and the key path in a message.
StatusOr<internal::ResolvedCluster> ResolveNamingTheSource(const ClusterConfig& cluster) {
  internal::ClusterSpot spot;
  StatusOr<internal::ResolvedCluster> resolved = internal::ResolveCluster(cluster, &spot);
  if (resolved.ok()) return resolved;
  return errors::InvalidArgument(cluster.source.empty() ? "" : cluster.source + ": ", spot.Path(),
                                 ": ", resolved.status().message());
}

}  // namespace

StatusOr<std::vector<ClusterTask>> ClusterConfig::Resolve() const {
  CFX_ASSIGN_OR_RETURN(internal::ResolvedCluster resolved, ResolveNamingTheSource(*this));
  return std::move(resolved.tasks);
}

StatusOr<int> ClusterConfig::ChiefRank() const {
  CFX_ASSIGN_OR_RETURN(internal::ResolvedCluster resolved, ResolveNamingTheSource(*this));
  return resolved.chief_rank;
}

const std::map<std::string, DeviceTypeConfig>& ClusterConfig::DevicesOf(
    const std::string& job, const std::map<std::string, DeviceTypeConfig>& fallback) const {
  for (const ClusterJob& j : jobs)
    if (j.name == job && !j.devices.empty()) return j.devices;
  return fallback;
}

}  // namespace cfx
