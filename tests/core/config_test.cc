// Config: the shipped configs, a config that sets every key, sizes, and one test per kind of
// error (each checks the code, file:line and key path of the message).
#include "conflux/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "config_test_util.h"
#include "conflux/runtime.h"
#include "kernel_test_util.h"

namespace cfx {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using Options = std::vector<std::pair<std::string, std::string>>;
using test::ExpectInvalidConfig;
using test::kConfigSource;
using test::ParseConfigOk;

std::string SourcePath(const std::string& relative) {
  return std::string(CONFLUX_SOURCE_DIR) + "/" + relative;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Writes `text` to `relative` under a fresh directory of this test; returns the file's path.
std::string WriteTempFile(const std::string& relative, const std::string& text) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  fs::path path = fs::path(::testing::TempDir()) / "conflux_config_test" /
                  (std::string(info->test_suite_name()) + "." + info->name()) / relative;
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
  return path.string();
}

// --- The shipped configs.

TEST(ConfigDefault, SaysWhatLocalYamlSays) {
  Config c = Config::Default();
  EXPECT_EQ(c.source, "<embedded config/local.yaml>");
  EXPECT_TRUE(c.plugin_paths.empty());
  ASSERT_EQ(c.plugins.size(), 2u);
  EXPECT_EQ(c.plugins[0].name, "cpu");
  EXPECT_EQ(c.plugins[1].name, "ops-nn");
  for (const PluginSpec& p : c.plugins) {
    EXPECT_EQ(p.path, "");
    EXPECT_TRUE(p.required) << p.name;
    EXPECT_TRUE(p.options.empty()) << p.name;
    EXPECT_THAT(p.source, StartsWith("<embedded config/local.yaml>:"));
  }
  ASSERT_EQ(c.devices.size(), 1u);
  ASSERT_EQ(c.devices.count("CPU"), 1u);
  EXPECT_EQ(c.devices["CPU"].count, 1);
  EXPECT_EQ(c.devices["CPU"].memory_limit, 0);
  EXPECT_FALSE(c.devices["CPU"].required);
  EXPECT_EQ(c.intra_op_threads, 0);
  EXPECT_EQ(c.log_level, "warning");
}

TEST(ConfigDefault, EmbeddedTextIsConfigLocalYaml) {
  EXPECT_EQ(std::string(DefaultConfigYaml()), ReadFile(SourcePath("config/local.yaml")));
}

TEST(ConfigDefault, LocalYamlFileParsesLikeTheEmbeddedCopy) {
  const std::string path = SourcePath("config/local.yaml");
  StatusOr<Config> file = Config::FromFile(path);
  ASSERT_OK(file.status());
  Config embedded = Config::Default();
  EXPECT_EQ(file->source, path);
  ASSERT_EQ(file->plugins.size(), embedded.plugins.size());
  // Same line, other file name.
  EXPECT_EQ(file->plugins[0].source.substr(path.size()),
            embedded.plugins[0].source.substr(embedded.source.size()));
  EXPECT_EQ(file->plugins[0].name, embedded.plugins[0].name);
  EXPECT_EQ(file->devices.size(), embedded.devices.size());
  EXPECT_EQ(file->intra_op_threads, embedded.intra_op_threads);
  EXPECT_EQ(file->log_level, embedded.log_level);
}

TEST(ConfigExamples, TwoCpusDeclaresTwoCpuDevices) {
  StatusOr<Config> c = Config::FromFile(SourcePath("config/examples/two-cpus.yaml"));
  ASSERT_OK(c.status());
  ASSERT_EQ(c->plugins.size(), 2u);
  EXPECT_EQ(c->plugins[0].name, "cpu");
  EXPECT_EQ(c->plugins[1].name, "ops-nn");
  ASSERT_EQ(c->devices.count("CPU"), 1u);
  EXPECT_EQ(c->devices.at("CPU").count, 2);
}

TEST(ConfigExamples, TwoCpusRuntimeHasCpu0AndCpu1) {
  StatusOr<Config> c = Config::FromFile(SourcePath("config/examples/two-cpus.yaml"));
  ASSERT_OK(c.status());
  c->plugin_paths.insert(c->plugin_paths.begin(), test::BuildPluginDir());
  auto rt = Runtime::Create(*c);
  ASSERT_OK(rt.status());
  EXPECT_OK((*rt)->FindDevice("CPU:0").status());
  EXPECT_OK((*rt)->FindDevice("CPU:1").status());
  EXPECT_FALSE((*rt)->FindDevice("CPU:2").ok());
}

// Every file in config/examples/ parses (cluster_config_test.cc checks the cluster ones further).
TEST(ConfigExamples, EveryExampleParses) {
  int count = 0;
  for (const auto& entry : fs::directory_iterator(SourcePath("config/examples"))) {
    if (entry.path().extension() != ".yaml") continue;
    ++count;
    SCOPED_TRACE(entry.path().string());
    EXPECT_OK(Config::FromFile(entry.path().string()).status());
  }
  EXPECT_GE(count, 5);  // two-cpus, opencl, cluster-2, cluster-3, cluster-4
}

// --- Parsing what is valid.

constexpr char kFullConfig[] = R"(# every key
plugin_paths: [lib, /opt/conflux/plugins]
plugins:
  - name: cpu
    required: false
    options: {zeta: 1, alpha: "two words", mid: 2.5}
  - path: plugins/libconflux_extra.so
  - path: /abs/libconflux_abs.so
    required: true
devices:
  CPU:
    count: 3
    memory_limit: 512MiB
    required: true
    options:
      numa: interleave
  GPU:
    count: 0
    memory_limit: 1000000
threads:
  intra_op: 4
logging:
  level: debug
cluster:
  transport: mpi
  transport_options: {chunk_bytes: 64MiB}
  chief: worker:0
  jobs:
    - name: ps
      tasks: 1
    - name: worker
      tasks: 2
      devices:
        CPU: {count: 1}
  ranks: [worker:0, ps:0, worker:1]
  step_timeout: 30s
  heartbeat: {interval: 1s, timeout: 5s}
)";

TEST(ConfigFull, EveryKeyRoundTrips) {
  const std::string path = WriteTempFile("dir/full.yaml", kFullConfig);
  const std::string dir = fs::path(path).parent_path().string();
  StatusOr<Config> c = Config::FromFile(path);
  ASSERT_OK(c.status());
  EXPECT_EQ(c->source, path);
  // Relative paths are relative to the config file's directory.
  EXPECT_EQ(c->plugin_paths, (std::vector<std::string>{dir + "/lib", "/opt/conflux/plugins"}));

  ASSERT_EQ(c->plugins.size(), 3u);
  EXPECT_EQ(c->plugins[0].name, "cpu");
  EXPECT_EQ(c->plugins[0].path, "");
  EXPECT_FALSE(c->plugins[0].required);
  // Strings, in file order.
  EXPECT_EQ(c->plugins[0].options,
            (Options{{"zeta", "1"}, {"alpha", "two words"}, {"mid", "2.5"}}));
  EXPECT_EQ(c->plugins[0].source, path + ":4");
  EXPECT_EQ(c->plugins[1].name, "");
  EXPECT_EQ(c->plugins[1].path, dir + "/plugins/libconflux_extra.so");
  EXPECT_TRUE(c->plugins[1].required);  // the default
  EXPECT_TRUE(c->plugins[1].options.empty());
  EXPECT_EQ(c->plugins[1].source, path + ":7");
  EXPECT_EQ(c->plugins[2].path, "/abs/libconflux_abs.so");
  EXPECT_TRUE(c->plugins[2].required);
  EXPECT_EQ(c->plugins[2].source, path + ":8");

  ASSERT_EQ(c->devices.size(), 2u);
  const DeviceTypeConfig& cpu = c->devices.at("CPU");
  EXPECT_EQ(cpu.count, 3);
  EXPECT_EQ(cpu.memory_limit, 512 * 1024 * 1024);
  EXPECT_TRUE(cpu.required);
  EXPECT_EQ(cpu.options, (Options{{"numa", "interleave"}}));
  const DeviceTypeConfig& gpu = c->devices.at("GPU");
  EXPECT_EQ(gpu.count, 0);
  EXPECT_EQ(gpu.memory_limit, 1000000);
  EXPECT_FALSE(gpu.required);
  EXPECT_TRUE(gpu.options.empty());

  EXPECT_EQ(c->intra_op_threads, 4);
  EXPECT_EQ(c->log_level, "debug");
  // cluster_config_test.cc checks the section key by key.
  EXPECT_TRUE(c->cluster.enabled);
  EXPECT_EQ(c->cluster.num_tasks(), 3);
  EXPECT_EQ(c->cluster.source, path + ":24");
}

TEST(ConfigFull, FromStringKeepsRelativePathsAsWritten) {
  Config c = ParseConfigOk("plugin_paths: [lib]\nplugins:\n  - path: sub/libx.so\n");
  EXPECT_EQ(c.plugin_paths, std::vector<std::string>{"lib"});
  ASSERT_EQ(c.plugins.size(), 1u);
  EXPECT_EQ(c.plugins[0].path, "sub/libx.so");
  EXPECT_EQ(c.plugins[0].source, "test.yaml:3");
}

TEST(ConfigFull, EmptyTextAndEmptySectionsGiveDefaults) {
  for (const char* text : {"", "# only a comment\n", "---\n", "plugins:\ndevices:\nthreads:\n"}) {
    Config c = ParseConfigOk(text);
    EXPECT_EQ(c.source, kConfigSource);
    EXPECT_TRUE(c.plugins.empty()) << text;
    EXPECT_TRUE(c.devices.empty()) << text;
    EXPECT_EQ(c.intra_op_threads, 0) << text;
    EXPECT_EQ(c.log_level, "warning") << text;
  }
  Config c = ParseConfigOk("devices:\n  CPU:\n");
  ASSERT_EQ(c.devices.count("CPU"), 1u);
  EXPECT_EQ(c.devices["CPU"].count, 1);
  EXPECT_EQ(c.devices["CPU"].memory_limit, 0);
  EXPECT_FALSE(c.devices["CPU"].required);
}

TEST(ConfigFull, BooleansAndQuotedNumbers) {
  Config c = ParseConfigOk(
      "plugins:\n  - {name: a, required: False}\n  - {name: b, required: TRUE}\n"
      "devices:\n  CPU: {count: \"2\", required: True}\n");
  ASSERT_EQ(c.plugins.size(), 2u);
  EXPECT_FALSE(c.plugins[0].required);
  EXPECT_TRUE(c.plugins[1].required);
  EXPECT_EQ(c.devices["CPU"].count, 2);
  EXPECT_TRUE(c.devices["CPU"].required);
}

TEST(ConfigSizes, UnitsAndPlainBytes) {
  const std::pair<const char*, int64_t> cases[] = {
      {"0", 0},
      {"4096", 4096},
      {"\"4096\"", 4096},
      {"100B", 100},
      {"2KB", 2000},
      {"2kB", 2000},
      {"1.5GB", 1500000000},
      {"3MB", 3000000},
      {"1TB", 1000000000000},
      {"1KiB", 1024},
      {"512MiB", 512ll << 20},
      {"2GiB", 2ll << 30},
      {"1.5KiB", 1536},
      {"0.5 MiB", 512 << 10},
      {"2.000 GiB", 2ll << 30},
      {"1TiB", 1ll << 40},
      {"9223372036854775807", 9223372036854775807},
  };
  for (const auto& [text, bytes] : cases) {
    Config c = ParseConfigOk(std::string("devices:\n  CPU:\n    memory_limit: ") + text + "\n");
    EXPECT_EQ(c.devices["CPU"].memory_limit, bytes) << text;
  }
}

// --- Errors: one test per kind.

TEST(ConfigErrors, YamlSyntaxNamesTheLine) {
  // The line is where yaml-cpp notices: an unclosed "[" on line 3 is found out on line 4.
  ExpectInvalidConfig("plugins:\n  - name: cpu\ndevices: [CPU\nthreads:\n  intra_op: 1\n",
                      "test.yaml:4: invalid YAML",
                      {"end of sequence flow not found", "(column 8)"});
  ExpectInvalidConfig("logging:\n\tlevel: info\n", "test.yaml:2: invalid YAML");
  ExpectInvalidConfig("threads: {intra_op: 1\n", "test.yaml:2: invalid YAML", {"column"});
  ExpectInvalidConfig("plugins:\n  - name: cpu\n  name: x\n", "test.yaml:3: invalid YAML");
  // yaml-cpp 0.7 reads this as endless empty documents (jbeder/yaml-cpp#1040): an error, not an
  // empty config and not a hang.
  ExpectInvalidConfig(", every key\nplugins: []\n", "test.yaml:1: invalid YAML");
  ExpectInvalidConfig(",", "test.yaml:1: invalid YAML");
}

TEST(ConfigErrors, SecondDocument) {
  // The second document starts at its "---".
  ExpectInvalidConfig("plugins: []\n---\nlogging: {level: info}\n",
                      "test.yaml:2: ", {"one YAML document"});
  // An empty document after the config (a trailing "---") is not a second config.
  EXPECT_EQ(ParseConfigOk("logging: {level: info}\n---\n").log_level, "info");
}

TEST(ConfigErrors, WrongNodeKinds) {
  ExpectInvalidConfig("- plugins\n",
                      "test.yaml:1: ", {"expected a map", "top level", "a sequence"});
  ExpectInvalidConfig("just text\n", "test.yaml:1: ", {"expected a map", "\"just text\""});
  ExpectInvalidConfig("plugins:\n  name: cpu\n",
                      "test.yaml:1: plugins: ", {"expected a sequence, got a map"});
  ExpectInvalidConfig("plugins:\n  - cpu\n", "test.yaml:2: plugins[0]: ",
                      {"expected a map with a name or a path", "got \"cpu\""});
  ExpectInvalidConfig("plugin_paths: /opt/lib\n",
                      "test.yaml:1: plugin_paths: ", {"expected a sequence, got \"/opt/lib\""});
  ExpectInvalidConfig("plugin_paths:\n  - [a]\n",
                      "test.yaml:2: plugin_paths[0]: ", {"expected a directory, got a sequence"});
  ExpectInvalidConfig("devices:\n  - CPU\n",
                      "test.yaml:1: devices: ", {"expected a map, got a sequence"});
  ExpectInvalidConfig("devices:\n  CPU: 2\n",
                      "test.yaml:2: devices.CPU: ", {"expected a map, got \"2\""});
  ExpectInvalidConfig("threads: 4\n", "test.yaml:1: threads: ", {"expected a map, got \"4\""});
  ExpectInvalidConfig("logging:\n  level: [info]\n",
                      "test.yaml:2: logging.level: ", {"expected a log level, got a sequence"});
  ExpectInvalidConfig("plugins:\n  - name: cpu\n    options: [a, b]\n",
                      "test.yaml:3: plugins[0].options: ", {"expected a map, got a sequence"});
}

TEST(ConfigErrors, UnknownTopLevelKeySuggestsTheClosest) {
  ExpectInvalidConfig(
      "devices: {}\nplugns:\n  - name: cpu\n", "test.yaml:2: plugns: ",
      {"unknown key", "did you mean \"plugins\"?", "plugin_paths, plugins, devices"});
  ExpectInvalidConfig("Logging: {level: info}\n",
                      "test.yaml:1: Logging: ", {"did you mean \"logging\"?"});
}

TEST(ConfigErrors, UnknownKeysAtEveryLevel) {
  ExpectInvalidConfig(
      "plugins:\n  - name: cpu\n    requried: false\n",
      "test.yaml:3: plugins[0].requried: ", {"unknown key", "did you mean \"required\"?"});
  ExpectInvalidConfig(
      "devices:\n  CPU:\n    count: 1\n    cont: 2\n",
      "test.yaml:4: devices.CPU.cont: ", {"unknown key", "did you mean \"count\"?"});
  ExpectInvalidConfig("devices:\n  CPU: {memory_limt: 1}\n",
                      "test.yaml:2: devices.CPU.memory_limt: ", {"did you mean \"memory_limit\"?"});
  ExpectInvalidConfig("threads:\n  intra_ops: 2\n",
                      "test.yaml:2: threads.intra_ops: ", {"did you mean \"intra_op\"?"});
  ExpectInvalidConfig(
      "optimizer:\n  constant_foldng: false\n",
      "test.yaml:2: optimizer.constant_foldng: ", {"did you mean \"constant_folding\"?"});
  ExpectInvalidConfig("placement:\n  cost_model: measureed\n",
                      "test.yaml:2: placement.cost_model: ", {"did you mean \"measured\"?"});
  ExpectInvalidConfig("logging:\n  lvel: info\n",
                      "test.yaml:2: logging.lvel: ", {"did you mean \"level\"?"});
}

TEST(ConfigTest, ThreadsOptimizerAndPlacement) {
  StatusOr<Config> c = Config::FromString(
      "threads: {intra_op: 3, inter_op: 5}\n"
      "optimizer: {common_subexpression_elimination: false, constant_folding: false}\n"
      "placement: {cost_model: static}\n",
      kConfigSource);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->intra_op_threads, 3);
  EXPECT_EQ(c->inter_op_threads, 5);
  EXPECT_FALSE(c->common_subexpression_elimination);
  EXPECT_FALSE(c->constant_folding);
  EXPECT_EQ(c->placement_cost_model, "static");
}

TEST(ConfigErrors, UnknownKeyFarFromEveryKnownKeyHasNoSuggestion) {
  StatusOr<Config> c = Config::FromString("checkpoints:\n  every: 100\n", kConfigSource);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(c.status().message(), StartsWith("test.yaml:1: checkpoints: unknown key"));
  EXPECT_THAT(c.status().message(), ::testing::Not(HasSubstr("did you mean")));
}

TEST(ConfigErrors, DuplicateKey) {
  ExpectInvalidConfig("threads:\n  intra_op: 1\nlogging: {level: info}\nthreads:\n  intra_op: 2\n",
                      "test.yaml:4: threads: ", {"duplicate key (first at line 1)"});
  ExpectInvalidConfig("devices:\n  CPU: {count: 1, count: 2}\n",
                      "test.yaml:2: devices.CPU.count: ", {"duplicate key"});
}

TEST(ConfigErrors, PluginWithBothNameAndPath) {
  ExpectInvalidConfig("plugins:\n  - name: cpu\n  - name: x\n    path: libx.so\n",
                      "test.yaml:3: plugins[1]: ", {"either name or path, not both"});
}

TEST(ConfigErrors, PluginWithNeitherNameNorPath) {
  ExpectInvalidConfig("plugins:\n  - required: false\n",
                      "test.yaml:2: plugins[0]: ", {"expected a name", "or a path"});
  ExpectInvalidConfig("plugins:\n  - name: \"\"\n", "test.yaml:2: plugins[0].name: ",
                      {"expected a plugin name, got an empty string"});
}

TEST(ConfigErrors, PluginListedTwice) {
  ExpectInvalidConfig("plugins:\n  - name: cpu\n  - name: cpu\n    required: false\n",
                      "test.yaml:3: plugins[1]: ", {"cpu is listed twice", "test.yaml:2"});
}

TEST(ConfigErrors, BadPluginName) {
  ExpectInvalidConfig("plugins:\n  - name: lib/cpu.so\n",
                      "test.yaml:2: plugins[0].name: ", {"expected a plugin name", "use path"});
}

TEST(ConfigErrors, BadDeviceTypeName) {
  ExpectInvalidConfig("devices:\n  CPU: {}\n  cpu: {count: 2}\n",
                      "test.yaml:3: devices.cpu: ", {"upper case", "did you mean \"CPU\"?"});
  ExpectInvalidConfig("devices:\n  GPU-0:\n    count: 1\n",
                      "test.yaml:2: devices.GPU-0: ", {"upper case"});
  ExpectInvalidConfig("devices:\n  \"\": {}\n", "test.yaml:2: devices.: ", {"upper case"});
}

TEST(ConfigErrors, BadSizes) {
  const std::pair<const char*, const char*> cases[] = {
      {"12XB", "expected a size in bytes"},
      {"two", "expected a size in bytes"},
      {"1e9", "expected a size in bytes"},
      {"GiB", "expected a size in bytes"},
      {"1.GiB", "expected a size in bytes"},
      {"1gib", "expected a size in bytes"},
      {"1.5", "expected a whole number of bytes, got"},
      {"0.1KiB", "expected a whole number of bytes, got"},
      {"-1", "expected a non-negative size, got"},
      {"-2GiB", "expected a non-negative size, got"},
      {"9223372036854775808", "expected a size below 2^63 bytes, got"},
      {"8388608TiB", "expected a size below 2^63 bytes, got"},
      {"99999999999999999999", "expected a size below 2^63 bytes, got"},
      {"{a: 1}", "expected a size in bytes"},
  };
  for (const auto& [text, what] : cases) {
    ExpectInvalidConfig(
        std::string("devices:\n  CPU:\n    count: 1\n    memory_limit: ") + text + "\n",
        "test.yaml:4: devices.CPU.memory_limit: ", {what});
  }
}

TEST(ConfigErrors, NegativeNumbers) {
  ExpectInvalidConfig("devices:\n  CPU:\n    count: -1\n", "test.yaml:3: devices.CPU.count: ",
                      {"expected a non-negative integer, got -1"});
  ExpectInvalidConfig("threads: {intra_op: -4}\n", "test.yaml:1: threads.intra_op: ",
                      {"expected a non-negative integer, got -4"});
}

TEST(ConfigErrors, NotAnInteger) {
  // The example message from the config reference, exactly.
  StatusOr<Config> c = Config::FromString(
      "# line 1\nplugins:\n  - name: cpu\n\ndevices:\n  CPU:\n    count: two\n", "config/x.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(
      c.status(),
      errors::InvalidArgument(
          "config/x.yaml:7: devices.CPU.count: expected a non-negative integer, got \"two\""));
  ExpectInvalidConfig("threads:\n  intra_op: 1.5\n", "test.yaml:2: threads.intra_op: ",
                      {"expected a non-negative integer, got \"1.5\""});
  ExpectInvalidConfig("threads:\n  intra_op:\n", "test.yaml:2: threads.intra_op: ",
                      {"expected a non-negative integer, got nothing"});
  ExpectInvalidConfig("devices:\n  CPU: {count: 3000000000}\n",
                      "test.yaml:2: devices.CPU.count: ", {"no larger than 2147483647"});
}

TEST(ConfigErrors, BadBooleans) {
  ExpectInvalidConfig(
      "plugins:\n  - name: cpu\n    required: yes\n",
      "test.yaml:3: plugins[0].required: ", {"expected true or false, got \"yes\""});
  ExpectInvalidConfig("devices:\n  CPU:\n    required: 1\n",
                      "test.yaml:3: devices.CPU.required: ", {"expected true or false, got \"1\""});
  ExpectInvalidConfig("devices:\n  CPU:\n    required:\n", "test.yaml:3: devices.CPU.required: ",
                      {"expected true or false, got nothing"});
}

TEST(ConfigErrors, BadLogLevel) {
  ExpectInvalidConfig(
      "logging:\n  level: warnig\n", "test.yaml:2: logging.level: ",
      {"expected one of debug, info, warning, error, got \"warnig\"", "did you mean \"warning\"?"});
  ExpectInvalidConfig("logging:\n  level: INFO\n",
                      "test.yaml:2: logging.level: ", {"did you mean \"info\"?"});
}

TEST(ConfigErrors, OptionValuesMustBeScalars) {
  ExpectInvalidConfig("plugins:\n  - name: cpu\n    options:\n      pool: [1, 2]\n",
                      "test.yaml:4: plugins[0].options.pool: ", {"expected a scalar value"});
  ExpectInvalidConfig(
      "devices:\n  CPU:\n    options: {numa:}\n",
      "test.yaml:3: devices.CPU.options.numa: ", {"expected a scalar value", "got nothing"});
}

TEST(ConfigErrors, MissingFileIsNotFound) {
  const std::string path = ::testing::TempDir() + "/conflux_config_test_no_such_file.yaml";
  StatusOr<Config> c = Config::FromFile(path);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Code::kNotFound);
  EXPECT_THAT(c.status().message(), HasSubstr(path));
}

TEST(ConfigErrors, DirectoryIsNotAConfigFile) {
  const std::string dir = fs::path(WriteTempFile("placeholder", "")).parent_path().string();
  StatusOr<Config> c = Config::FromFile(dir);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(c.status().message(), HasSubstr(dir));
}

TEST(ConfigErrors, ErrorsInAFileNameTheFile) {
  const std::string path = WriteTempFile("bad.yaml", "plugins:\n  - name: cpu\nthreds: {}\n");
  StatusOr<Config> c = Config::FromFile(path);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(c.status().message(), StartsWith(path + ":3: threds: unknown key"));
  EXPECT_THAT(c.status().message(), HasSubstr("did you mean \"threads\"?"));
}

// yaml-cpp reports errors by throwing: damaged input of every sort must come back as a Status.
TEST(ConfigRobustness, DamagedInputNeverThrows) {
  const std::string original = kFullConfig;
  const std::string alphabet = ":-[]{}\"'#&*!|>%@`, \n\t?x0.\\<=~";
  std::mt19937 rng(12345);
  int failures = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string text = original;
    int edits = 1 + static_cast<int>(rng() % 8);
    for (int e = 0; e < edits; ++e) {
      size_t at = rng() % (text.size() + 1);
      char c = alphabet[rng() % alphabet.size()];
      switch (rng() % 3) {
        case 0:
          text.insert(at, 1, c);
          break;
        case 1:
          if (at < text.size()) text.erase(at, 1);
          break;
        default:
          if (at < text.size()) text[at] = c;
          break;
      }
    }
    StatusOr<Config> c = Config::FromString(text, "damaged.yaml");
    if (c.ok()) continue;
    ++failures;
    ASSERT_EQ(c.status().code(), Code::kInvalidArgument) << c.status() << "\ninput:\n" << text;
    ASSERT_THAT(c.status().message(), StartsWith("damaged.yaml")) << "input:\n" << text;
  }
  EXPECT_GT(failures, 0);  // the damage did reach the parser's error paths
}

TEST(ConfigDevices, SwapThresholdIsAFractionOfTheMemoryLimit) {
  EXPECT_EQ(ParseConfigOk("devices:\n  GPU: {count: 1}\n").devices.at("GPU").swap_threshold, 0.7);
  Config c = ParseConfigOk(
      "devices:\n  GPU:\n    swap_threshold: 0.25\n  OPENCL:\n"
      "    swap_threshold: 0\n");
  EXPECT_EQ(c.devices.at("GPU").swap_threshold, 0.25);
  EXPECT_EQ(c.devices.at("OPENCL").swap_threshold, 0.0);
  for (const char* bad : {"1.5", "-0.1", "half", "\"\"", "nan"}) {
    SCOPED_TRACE(bad);
    auto r = Config::FromString(std::string("devices:\n  GPU:\n    swap_threshold: ") + bad + "\n",
                                "test.yaml");
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.status().message(), HasSubstr("test.yaml:3: "));
    EXPECT_THAT(r.status().message(), HasSubstr("expected a number from 0 to 1"));
  }
}

}  // namespace
}  // namespace cfx
