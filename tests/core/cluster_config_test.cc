// The config's `cluster:` section: parsing, the shipped cluster examples, the rank rule, the
// chief, per-job devices and one test per kind of error (each checks file:line and key path).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "config_test_util.h"
#include "conflux/config.h"
#include "kernel_test_util.h"

namespace cfx {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using Options = std::vector<std::pair<std::string, std::string>>;
using test::ExpectInvalidConfig;
using test::ParseConfigOk;

// "rank job:task" per resolved task, and "(chief)" after the chief's.
std::vector<std::string> RankTable(const ClusterConfig& cluster) {
  StatusOr<std::vector<ClusterTask>> tasks = cluster.Resolve();
  EXPECT_TRUE(tasks.ok()) << tasks.status();
  StatusOr<int> chief = cluster.ChiefRank();
  EXPECT_TRUE(chief.ok()) << chief.status();
  std::vector<std::string> table;
  if (!tasks.ok() || !chief.ok()) return table;
  for (size_t r = 0; r < tasks->size(); ++r) {
    const ClusterTask& t = (*tasks)[r];
    EXPECT_EQ(t.rank, static_cast<int>(r));
    table.push_back(StrCat(t.rank, " ", t.job, ":", t.task, t.rank == *chief ? " (chief)" : ""));
  }
  return table;
}

std::vector<std::string> RankTableOf(const std::string& yaml) {
  return RankTable(ParseConfigOk(yaml).cluster);
}

// --- What is valid.

TEST(ClusterConfig, AbsentOrEmptyMeansOneProcess) {
  for (const char* text : {"", "cluster:\n", "devices: {CPU: {count: 1}}\n"}) {
    const ClusterConfig& c = ParseConfigOk(text).cluster;
    EXPECT_FALSE(c.enabled) << text;
    EXPECT_TRUE(c.jobs.empty()) << text;
  }
}

TEST(ClusterConfig, EveryKeyRoundTrips) {
  Config config = ParseConfigOk(R"(devices:
  CPU: {count: 2}
cluster:
  transport: mpi
  transport_options: {chunk_bytes: 64MiB, eager_limit: 4096}
  chief: worker:1
  jobs:
    - name: ps
      tasks: 1
    - name: worker
      tasks: 2
      devices:
        CPU: {count: 1, memory_limit: 1GiB}
  ranks: [worker:1, ps:0, worker:0]
  replication: between-graph
  step_timeout: 30s
  heartbeat: {interval: 250ms, timeout: 2m}
  fusion_bytes: 1.5MiB
  compression: {mode: truncate16, edges: ["*/grad*:0", "w:0"], min_bytes: 64KiB}
)");
  const ClusterConfig& c = config.cluster;
  EXPECT_TRUE(c.enabled);
  EXPECT_EQ(c.source, "test.yaml:3");
  EXPECT_EQ(c.transport, "mpi");
  EXPECT_EQ(c.transport_options, (Options{{"chunk_bytes", "64MiB"}, {"eager_limit", "4096"}}));
  EXPECT_EQ(c.chief, "worker:1");
  ASSERT_EQ(c.jobs.size(), 2u);
  EXPECT_EQ(c.jobs[0].name, "ps");
  EXPECT_EQ(c.jobs[0].tasks, 1);
  EXPECT_TRUE(c.jobs[0].devices.empty());
  EXPECT_EQ(c.jobs[0].source, "test.yaml:8");
  EXPECT_EQ(c.jobs[1].name, "worker");
  EXPECT_EQ(c.jobs[1].tasks, 2);
  ASSERT_EQ(c.jobs[1].devices.count("CPU"), 1u);
  EXPECT_EQ(c.jobs[1].devices.at("CPU").count, 1);
  EXPECT_EQ(c.jobs[1].devices.at("CPU").memory_limit, 1ll << 30);
  EXPECT_EQ(c.ranks, (std::vector<std::string>{"worker:1", "ps:0", "worker:0"}));
  EXPECT_EQ(c.replication, "between-graph");
  EXPECT_TRUE(c.between_graph());
  EXPECT_EQ(c.step_timeout_ms, 30000);
  EXPECT_EQ(c.heartbeat_interval_ms, 250);
  EXPECT_EQ(c.heartbeat_timeout_ms, 120000);
  EXPECT_EQ(c.fusion_bytes, 3ll << 19);
  EXPECT_EQ(c.compression, "truncate16");
  EXPECT_EQ(c.compression_edges, (std::vector<std::string>{"*/grad*:0", "w:0"}));
  EXPECT_EQ(c.compression_min_bytes, 64 << 10);
  EXPECT_EQ(c.num_tasks(), 3);
  EXPECT_EQ(RankTable(c), (std::vector<std::string>{"0 worker:1 (chief)", "1 ps:0", "2 worker:0"}));
}

TEST(ClusterConfig, Defaults) {
  const ClusterConfig& c = ParseConfigOk("cluster:\n  jobs: [{name: worker}]\n").cluster;
  EXPECT_TRUE(c.enabled);
  EXPECT_EQ(c.transport, "mpi");
  EXPECT_TRUE(c.transport_options.empty());
  ASSERT_EQ(c.jobs.size(), 1u);
  EXPECT_EQ(c.jobs[0].tasks, 1);
  EXPECT_EQ(c.step_timeout_ms, 0);
  EXPECT_EQ(c.replication, "in-graph");
  EXPECT_FALSE(c.between_graph());
  EXPECT_EQ(c.heartbeat_interval_ms, 1000);
  EXPECT_EQ(c.heartbeat_timeout_ms, 5000);
  EXPECT_EQ(c.fusion_bytes, 4ll << 20);
  EXPECT_EQ(c.compression, "none");
  EXPECT_TRUE(c.compression_edges.empty());
  EXPECT_EQ(c.compression_min_bytes, 4096);
  EXPECT_EQ(RankTable(c), (std::vector<std::string>{"0 worker:0 (chief)"}));
}

TEST(ClusterConfig, DurationsInMillisecondsOrWithAUnit) {
  const std::pair<const char*, int64_t> cases[] = {
      {"0", 0},       {"250", 250},   {"\"250\"", 250}, {"500ms", 500},  {"5s", 5000},
      {"1.5s", 1500}, {"2m", 120000}, {"0.5 m", 30000}, {"1h", 3600000}, {"0.001s", 1},
  };
  for (const auto& [text, ms] : cases) {
    const ClusterConfig& c =
        ParseConfigOk(std::string("cluster:\n  jobs: [{name: w}]\n  step_timeout: ") + text + "\n")
            .cluster;
    EXPECT_EQ(c.step_timeout_ms, ms) << text;
  }
}

// Rank 0 runs the chief; then every other task, jobs in order and tasks in order.
TEST(ClusterConfig, DefaultRankRuleWithoutAChief) {
  EXPECT_EQ(RankTableOf("cluster:\n  jobs:\n    - {name: ps, tasks: 2}\n"
                        "    - {name: worker, tasks: 2}\n"),
            (std::vector<std::string>{"0 ps:0 (chief)", "1 ps:1", "2 worker:0", "3 worker:1"}));
}

TEST(ClusterConfig, DefaultRankRuleWithAChief) {
  EXPECT_EQ(RankTableOf("cluster:\n  chief: worker:1\n  jobs:\n    - {name: ps, tasks: 2}\n"
                        "    - {name: worker, tasks: 2}\n"),
            (std::vector<std::string>{"0 worker:1 (chief)", "1 ps:0", "2 ps:1", "3 worker:0"}));
}

TEST(ClusterConfig, ExplicitRanksWithAndWithoutAChief) {
  const std::string jobs = "  jobs:\n    - {name: ps}\n    - {name: worker, tasks: 2}\n";
  // No chief: the task of rank 0.
  EXPECT_EQ(RankTableOf("cluster:\n  ranks: [ps:0, worker:1, worker:0]\n" + jobs),
            (std::vector<std::string>{"0 ps:0 (chief)", "1 worker:1", "2 worker:0"}));
  // The chief need not be rank 0 when the ranks are given.
  EXPECT_EQ(
      RankTableOf("cluster:\n  ranks: [ps:0, worker:1, worker:0]\n  chief: worker:0\n" + jobs),
      (std::vector<std::string>{"0 ps:0", "1 worker:1", "2 worker:0 (chief)"}));
}

TEST(ClusterConfig, TaskNames) {
  EXPECT_EQ((ClusterTask{"ps", 0, 1}).name(), "/job:ps/replica:0/task:0");
  EXPECT_EQ((ClusterTask{"worker", 12, 3}).name(), "/job:worker/replica:0/task:12");
}

TEST(ClusterConfig, DevicesOfAJobElseTheTopLevelDevices) {
  Config config = ParseConfigOk(
      "devices:\n  CPU: {count: 2}\ncluster:\n  jobs:\n    - name: ps\n      devices:\n"
      "        CPU: {count: 1}\n    - name: worker\n    - name: eval\n      devices:\n");
  const ClusterConfig& c = config.cluster;
  EXPECT_EQ(c.DevicesOf("ps", config.devices).at("CPU").count, 1);
  EXPECT_EQ(&c.DevicesOf("worker", config.devices), &config.devices);
  EXPECT_EQ(&c.DevicesOf("eval", config.devices), &config.devices);  // `devices:` left empty
  EXPECT_EQ(&c.DevicesOf("no_such_job", config.devices), &config.devices);
}

// A ClusterConfig built in code: Resolve checks it as the parser does, naming its source.
TEST(ClusterConfig, ResolveChecksAClusterBuiltInCode) {
  ClusterConfig c;
  c.enabled = true;
  c.jobs = {{"worker", 2, {}, ""}};
  c.ranks = {"worker:1", "worker:1"};
  EXPECT_EQ(c.Resolve().status(),
            errors::InvalidArgument("cluster.ranks[1]: worker:1 is listed twice (first as "
                                    "ranks[0])"));
  c.source = "mine.yaml:4";
  c.ranks = {"worker:1"};
  EXPECT_EQ(c.Resolve().status(),
            errors::InvalidArgument("mine.yaml:4: cluster.ranks: expected every one of the 2 "
                                    "tasks once, but worker:0 is missing"));
  EXPECT_EQ(c.ChiefRank().status(), c.Resolve().status());
  c.ranks.clear();
  c.chief = "worker:1";
  ASSERT_OK(c.ChiefRank().status());
  EXPECT_EQ(*c.ChiefRank(), 0);
  c.jobs.clear();
  EXPECT_THAT(c.Resolve().status().message(),
              StartsWith("mine.yaml:4: cluster.jobs: expected at least one job"));
}

// --- The shipped examples.

std::string ExamplePath(const std::string& name) {
  return std::string(CONFLUX_SOURCE_DIR) + "/config/examples/" + name;
}

StatusOr<Config> LoadExample(const std::string& name) {
  return Config::FromFile(ExamplePath(name));
}

void ExpectLoadsTransportMpi(const Config& config) {
  std::vector<std::string> names;
  for (const PluginSpec& p : config.plugins) {
    EXPECT_TRUE(p.required) << p.name;
    names.push_back(p.name);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"cpu", "ops-nn", "transport-mpi"}));
  EXPECT_TRUE(config.cluster.enabled);
  EXPECT_EQ(config.cluster.transport, "mpi");
}

TEST(ClusterExamples, Cluster2IsTwoWorkers) {
  StatusOr<Config> c = LoadExample("cluster-2.yaml");
  ASSERT_OK(c.status());
  ExpectLoadsTransportMpi(*c);
  EXPECT_EQ(RankTable(c->cluster), (std::vector<std::string>{"0 worker:0 (chief)", "1 worker:1"}));
}

TEST(ClusterExamples, Cluster2BetweenIsTwoWorkersRunningTheirOwnGraphs) {
  StatusOr<Config> c = LoadExample("cluster-2-between.yaml");
  ASSERT_OK(c.status());
  ExpectLoadsTransportMpi(*c);
  EXPECT_TRUE(c->cluster.between_graph());
  EXPECT_EQ(RankTable(c->cluster), (std::vector<std::string>{"0 worker:0 (chief)", "1 worker:1"}));
}

TEST(ClusterExamples, Cluster3IsOnePsAndTwoWorkers) {
  StatusOr<Config> c = LoadExample("cluster-3.yaml");
  ASSERT_OK(c.status());
  ExpectLoadsTransportMpi(*c);
  EXPECT_EQ(RankTable(c->cluster),
            (std::vector<std::string>{"0 worker:0 (chief)", "1 ps:0", "2 worker:1"}));
  EXPECT_EQ(c->cluster.transport_options, (Options{{"chunk_bytes", "64MiB"}}));
}

TEST(ClusterExamples, Cluster4IsTwoPsAndTwoWorkersWithTheirOwnDevices) {
  StatusOr<Config> c = LoadExample("cluster-4.yaml");
  ASSERT_OK(c.status());
  ExpectLoadsTransportMpi(*c);
  EXPECT_EQ(RankTable(c->cluster),
            (std::vector<std::string>{"0 worker:0 (chief)", "1 worker:1", "2 ps:0", "3 ps:1"}));
  EXPECT_EQ(c->cluster.DevicesOf("ps", c->devices).at("CPU").count, 1);
  EXPECT_EQ(c->cluster.DevicesOf("worker", c->devices).at("CPU").count, 2);
}

// --- Errors: one test per kind.

constexpr char kTwoJobs[] = "  jobs:\n    - {name: ps}\n    - {name: worker, tasks: 2}\n";

TEST(ClusterConfigErrors, WrongNodeKinds) {
  ExpectInvalidConfig("cluster: mpi\n", "test.yaml:1: cluster: ", {"expected a map, got \"mpi\""});
  ExpectInvalidConfig("cluster:\n  jobs: worker\n",
                      "test.yaml:2: cluster.jobs: ", {"expected a sequence, got \"worker\""});
  ExpectInvalidConfig("cluster:\n  jobs:\n    - worker\n", "test.yaml:3: cluster.jobs[0]: ",
                      {"expected a map with a name and tasks", "got \"worker\""});
  ExpectInvalidConfig("cluster:\n  jobs:\n    - name: [w]\n", "test.yaml:3: cluster.jobs[0].name: ",
                      {"expected a job name, got a sequence"});
  ExpectInvalidConfig(
      "cluster:\n  jobs:\n    - name: w\n      tasks: two\n",
      "test.yaml:4: cluster.jobs[0].tasks: ", {"expected a non-negative integer, got \"two\""});
  ExpectInvalidConfig("cluster:\n  jobs:\n    - name: w\n      devices: [CPU]\n",
                      "test.yaml:4: cluster.jobs[0].devices: ", {"expected a map, got a sequence"});
  ExpectInvalidConfig("cluster:\n  transport: {name: mpi}\n",
                      "test.yaml:2: cluster.transport: ", {"expected a transport name, got a map"});
  ExpectInvalidConfig("cluster:\n  transport: \"\"\n", "test.yaml:2: cluster.transport: ",
                      {"expected a transport name, got an empty string"});
  ExpectInvalidConfig("cluster:\n  transport: my/mpi\n", "test.yaml:2: cluster.transport: ",
                      {"letters, digits, '-' and '_'", "got \"my/mpi\""});
  ExpectInvalidConfig(
      "cluster:\n  transport_options: [a]\n",
      "test.yaml:2: cluster.transport_options: ", {"expected a map, got a sequence"});
  ExpectInvalidConfig(
      "cluster:\n  transport_options:\n    chunk: [1]\n",
      "test.yaml:3: cluster.transport_options.chunk: ", {"expected a scalar value"});
  ExpectInvalidConfig("cluster:\n  chief: [worker:0]\n", "test.yaml:2: cluster.chief: ",
                      {"expected a task as job:index (e.g. worker:0), got a sequence"});
  ExpectInvalidConfig("cluster:\n  ranks: worker:0\n",
                      "test.yaml:2: cluster.ranks: ", {"expected a sequence, got \"worker:0\""});
  ExpectInvalidConfig("cluster:\n  ranks:\n    - {job: worker}\n",
                      "test.yaml:3: cluster.ranks[0]: ",
                      {"expected a task as job:index (e.g. worker:0), got a map"});
  ExpectInvalidConfig("cluster:\n  heartbeat: 1s\n",
                      "test.yaml:2: cluster.heartbeat: ", {"expected a map, got \"1s\""});
}

TEST(ClusterConfigErrors, CompressionModes) {
  ExpectInvalidConfig("cluster:\n  jobs: [{name: w}]\n  compression: {mode: halff}\n",
                      "test.yaml:3: cluster.compression.mode: ",
                      {"expected one of none, truncate16, half, got \"halff\"",
                       "did you mean \"half\"?"});
  ExpectInvalidConfig("cluster:\n  jobs: [{name: w}]\n  compression: {edges: [\"\"]}\n",
                      "test.yaml:3: cluster.compression.edges[0]: ", {"a glob pattern"});
}

TEST(ClusterConfigErrors, ReplicationModes) {
  ExpectInvalidConfig("cluster:\n  jobs: [{name: w}]\n  replication: between_graph\n",
                      "test.yaml:3: cluster.replication: ",
                      {"expected one of in-graph, between-graph, got \"between_graph\"",
                       "did you mean \"between-graph\"?"});
}

TEST(ClusterConfigErrors, UnknownKeys) {
  ExpectInvalidConfig("cluster:\n  job:\n    - {name: w}\n", "test.yaml:2: cluster.job: ",
                      {"unknown key (expected one of transport, transport_options, chief, jobs, "
                       "ranks, replication, step_timeout, heartbeat, fusion_bytes, compression)",
                       "did you mean \"jobs\"?"});
  ExpectInvalidConfig("cluster:\n  jobs:\n    - name: w\n      task: 2\n",
                      "test.yaml:4: cluster.jobs[0].task: ", {"did you mean \"tasks\"?"});
  ExpectInvalidConfig("cluster:\n  jobs: [{name: w}]\n  heartbeat: {intervall: 1s}\n",
                      "test.yaml:3: cluster.heartbeat.intervall: ", {"did you mean \"interval\"?"});
  ExpectInvalidConfig("cluster:\n  jobs:\n    - name: w\n      devices:\n        CPU: {cnt: 1}\n",
                      "test.yaml:5: cluster.jobs[0].devices.CPU.cnt: ", {"unknown key"});
}

TEST(ClusterConfigErrors, BadJobName) {
  for (const char* name : {"Worker", "0worker", "work-er", "_w", "wörker"}) {
    ExpectInvalidConfig(
        std::string("cluster:\n  jobs:\n    - tasks: 1\n      name: \"") + name + "\"\n",
        "test.yaml:4: cluster.jobs[0].name: ",
        {"expected a job name of lower-case letters, digits and '_' that starts with "
         "a letter (e.g. worker, ps), got \"" +
         std::string(name) + "\""});
  }
  ExpectInvalidConfig("cluster:\n  jobs:\n    - tasks: 2\n", "test.yaml:3: cluster.jobs[0].name: ",
                      {"expected a name (e.g. name: worker)"});
}

TEST(ClusterConfigErrors, DuplicateJob) {
  ExpectInvalidConfig(
      "cluster:\n  jobs:\n    - {name: worker}\n    - {name: ps}\n"
      "    - {name: worker, tasks: 2}\n",
      "test.yaml:5: cluster.jobs[2].name: ", {"job worker is listed twice (first at test.yaml:3)"});
}

TEST(ClusterConfigErrors, NoJobsOrNoTasks) {
  ExpectInvalidConfig("cluster:\n  transport: mpi\n",
                      "test.yaml:1: cluster.jobs: ", {"expected at least one job"});
  ExpectInvalidConfig("cluster:\n  jobs: []\n",
                      "test.yaml:2: cluster.jobs: ", {"expected at least one job"});
  ExpectInvalidConfig("cluster:\n  jobs:\n    - name: ps\n      tasks: 0\n",
                      "test.yaml:4: cluster.jobs[0].tasks: ", {"expected at least 1 task, got 0"});
  ExpectInvalidConfig(
      "cluster:\n  jobs:\n    - {name: ps, tasks: 24}\n"
      "    - {name: worker, tasks: 2000000000}\n",
      "test.yaml:4: cluster.jobs[1].tasks: ",
      {"expected at most 1048576 tasks in all jobs together, got 2000000000 here "
       "after 24 in the jobs before"});
  ExpectInvalidConfig(
      "cluster:\n  jobs:\n    - name: ps\n      tasks: -1\n",
      "test.yaml:4: cluster.jobs[0].tasks: ", {"expected a non-negative integer, got -1"});
}

TEST(ClusterConfigErrors, UnknownJobOrTaskInChief) {
  ExpectInvalidConfig(std::string("cluster:\n  chief: wrker:0\n") + kTwoJobs,
                      "test.yaml:2: cluster.chief: ",
                      {"expected a task of a job in cluster.jobs (ps, worker), got \"wrker:0\""});
  ExpectInvalidConfig(std::string("cluster:\n  chief: worker:2\n") + kTwoJobs,
                      "test.yaml:2: cluster.chief: ",
                      {"expected a task of job worker (worker:0 to worker:1), got \"worker:2\""});
  for (const char* bad : {"worker", "worker:", "worker:x", "worker:-1", "worker:1x", ":0"}) {
    ExpectInvalidConfig(
        std::string("cluster:\n  chief: \"") + bad + "\"\n" + kTwoJobs,
        "test.yaml:2: cluster.chief: ",
        {"expected a task as job:index (e.g. worker:0), got \"" + std::string(bad) + "\""});
  }
}

TEST(ClusterConfigErrors, UnknownJobOrTaskInRanks) {
  ExpectInvalidConfig(std::string("cluster:\n") + kTwoJobs +
                          "  ranks:\n    - worker:0\n    - ps:0\n"
                          "    - chief:0\n",
                      "test.yaml:8: cluster.ranks[2]: ",
                      {"expected a task of a job in cluster.jobs (ps, worker), got \"chief:0\""});
  ExpectInvalidConfig(
      std::string("cluster:\n") + kTwoJobs + "  ranks: [ps:1, worker:0, worker:1]\n",
      "test.yaml:5: cluster.ranks[0]: ",
      {"expected a task of job ps (ps:0 to ps:0), got \"ps:1\""});
}

TEST(ClusterConfigErrors, TaskListedTwiceInRanks) {
  ExpectInvalidConfig(
      std::string("cluster:\n") + kTwoJobs +
          "  ranks:\n    - worker:1\n    - ps:0\n    - worker:1\n",
      "test.yaml:8: cluster.ranks[2]: ", {"worker:1 is listed twice (first as ranks[0])"});
}

TEST(ClusterConfigErrors, TaskMissingFromRanks) {
  ExpectInvalidConfig(
      std::string("cluster:\n") + kTwoJobs + "  ranks:\n    - worker:1\n    - ps:0\n",
      "test.yaml:5: cluster.ranks: ",
      {"expected every one of the 3 tasks once, but worker:0 is missing"});
}

TEST(ClusterConfigErrors, BadDurations) {
  const std::pair<const char*, const char*> cases[] = {
      {"soon", "expected a duration: an integer number of milliseconds, or a number with a unit"},
      {"5 sec", "expected a duration"},
      {"5S", "expected a duration"},
      {"-1s", "expected a non-negative duration, got \"-1s\""},
      {"0.0001s", "expected a whole number of milliseconds, got \"0.0001s\""},
      {"99999999999999999999", "expected a duration below 2^63 milliseconds"},
      {"[1]", "expected a duration"},
  };
  for (const auto& [text, what] : cases) {
    ExpectInvalidConfig(
        std::string("cluster:\n  jobs: [{name: w}]\n  step_timeout: ") + text + "\n",
        "test.yaml:3: cluster.step_timeout: ", {what});
    ExpectInvalidConfig(
        std::string("cluster:\n  jobs: [{name: w}]\n  heartbeat:\n    timeout: ") + text + "\n",
        "test.yaml:4: cluster.heartbeat.timeout: ", {what});
  }
}

TEST(ClusterConfigErrors, HeartbeatTimeoutNotLongerThanItsInterval) {
  ExpectInvalidConfig("cluster:\n  jobs: [{name: w}]\n  heartbeat: {interval: 2s, timeout: 2s}\n",
                      "test.yaml:3: cluster.heartbeat: ",
                      {"expected a timeout longer than the interval, got timeout 2000 ms and "
                       "interval 2000 ms"});
  // The default timeout (5s) against a longer interval.
  ExpectInvalidConfig(
      "cluster:\n  jobs: [{name: w}]\n  heartbeat:\n    interval: 10s\n",
      "test.yaml:3: cluster.heartbeat: ", {"got timeout 5000 ms and interval 10000 ms"});
  // interval 0: no health checks, whatever the timeout.
  EXPECT_EQ(ParseConfigOk("cluster:\n  jobs: [{name: w}]\n  heartbeat: {interval: 0, timeout: 0}\n")
                .cluster.heartbeat_interval_ms,
            0);
}

TEST(ClusterConfigErrors, TopLevelUnknownKeyListsCluster) {
  ExpectInvalidConfig("clustre:\n  jobs: []\n", "test.yaml:1: clustre: ",
                      {"unknown key", "logging, limits, cluster)", "did you mean \"cluster\"?"});
}

}  // namespace
}  // namespace cfx
