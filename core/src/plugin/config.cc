// Config: YAML text -> cfx::Config, checked against the schema in config/README.md.
//
// Every error is InvalidArgument "<source>:<line>: <key path>: <what was expected>" (NotFound
// for a missing file). yaml-cpp reports errors by throwing; every exception is caught here and
// none leaves this file. Parsing keeps no state between calls; all functions are thread-safe.
#include "conflux/config.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <limits>
#include <map>
#include <numeric>
#include <span>
#include <sstream>
#include <string_view>
#include <utility>
#include <vector>

#include "plugin/cluster_config.h"
#include "util/log.h"

namespace cfx {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kMaxInt = std::numeric_limits<int>::max();

// A YAML node, the key path that leads to it ("devices.CPU.count", "plugins[0]") and the
// 1-based line that messages about it name.
struct Located {
  YAML::Node node;
  std::string path;
  int line = 0;
};

// One entry of a map: the key as written, the line of the key, and the value.
struct Entry {
  std::string key;
  int key_line = 0;
  Located value;
};

std::string JoinPath(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

// A scalar points at itself; a map, a sequence or a missing value points at the key that holds
// it, because a block collection starts on the line after its key and a missing value has no
// position of its own.
int LineOf(const YAML::Node& value, int holder_line) {
  if (value.IsScalar() && !value.Mark().is_null()) return value.Mark().line + 1;
  return holder_line;
}

// How a node is named after "got": `"two"`, "a map", "a sequence", "nothing".
std::string Describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Scalar: {
      constexpr size_t kMaxShown = 40;
      const std::string& s = node.Scalar();
      std::string quoted = "\"";
      for (char c : s.substr(0, kMaxShown)) {
        if (c == '"' || c == '\\') quoted += '\\';
        quoted += c;
      }
      return quoted + (s.size() > kMaxShown ? "...\"" : "\"");
    }
    case YAML::NodeType::Sequence:
      return "a sequence";
    case YAML::NodeType::Map:
      return "a map";
    case YAML::NodeType::Null:
      return "nothing";
    case YAML::NodeType::Undefined:
      break;
  }
  return "an undefined node";
}

// Levenshtein distance: the number of one-character edits that turn `a` into `b`.
size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), 0);
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string WithAsciiCase(std::string_view s, bool upper) {
  std::string out(s);
  for (char& c : out) {
    const unsigned char u = static_cast<unsigned char>(c);
    c = static_cast<char>(upper ? std::toupper(u) : std::tolower(u));
  }
  return out;
}

// `; did you mean "x"?` naming the candidate closest to `word` (ignoring case; the first on a
// tie) when it is within two edits, else "".
std::string DidYouMean(std::string_view word, std::initializer_list<std::string_view> candidates) {
  const std::string lower = WithAsciiCase(word, /*upper=*/false);
  std::string_view best;
  size_t best_distance = 3;
  for (std::string_view candidate : candidates) {
    size_t d = EditDistance(lower, WithAsciiCase(candidate, /*upper=*/false));
    if (d < best_distance) {
      best = candidate;
      best_distance = d;
    }
  }
  return best.empty() ? "" : StrCat("; did you mean \"", best, "\"?");
}

std::string JoinWords(std::initializer_list<std::string_view> words) {
  std::string out;
  for (std::string_view w : words) out += (out.empty() ? "" : ", ") + std::string(w);
  return out;
}

bool IsDeviceTypeName(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

bool IsPluginName(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
}

// A number with an optional unit that the config reads exactly, as an int64 count of its
// smallest unit: a size (bytes) or a duration (milliseconds).
struct QuantityUnit {
  std::string_view name;  // "" = no unit: the smallest
  uint64_t multiplier;    // how many of the smallest unit one of this unit is
};
struct Quantity {
  std::string_view noun;      // "size"
  std::string_view smallest;  // "bytes"
  std::string_view expected;  // what a valid value looks like, for messages
  std::span<const QuantityUnit> units;
};

constexpr QuantityUnit kSizeUnits[] = {{"", 1},
                                       {"B", 1},
                                       {"KB", 1000},
                                       {"kB", 1000},
                                       {"MB", 1000000},
                                       {"GB", 1000000000},
                                       {"TB", 1000000000000},
                                       {"KiB", 1ull << 10},
                                       {"MiB", 1ull << 20},
                                       {"GiB", 1ull << 30},
                                       {"TiB", 1ull << 40}};
constexpr Quantity kSize = {
    "size", "bytes",
    "a size in bytes: an integer, or a number with a unit (B, KB, MB, GB, TB, KiB, MiB, GiB, "
    "TiB) such as \"512MiB\" or \"1.5GB\"; 0 = unlimited",
    kSizeUnits};

constexpr QuantityUnit kDurationUnits[] = {
    {"", 1}, {"ms", 1}, {"s", 1000}, {"m", 60 * 1000}, {"h", 60 * 60 * 1000}};
constexpr Quantity kDuration = {
    "duration", "milliseconds",
    "a duration: an integer number of milliseconds, or a number with a unit (ms, s, m, h) such "
    "as \"500ms\", \"30s\" or \"1.5m\"",
    kDurationUnits};

// Parses a quantity such as "4096", "512MiB", "1.5GB", "2 KiB" or "30s" into its smallest unit,
// exactly (no floating point). On failure the message says what was expected: a quantity at
// all, a non-negative one, a whole number of the smallest unit, or one that fits in int64.
StatusOr<int64_t> ParseQuantity(std::string_view text, const Quantity& kind) {
  const Status too_large =
      errors::InvalidArgument("expected a ", kind.noun, " below 2^63 ", kind.smallest);
  if (!text.empty() && text[0] == '-')
    return errors::InvalidArgument("expected a non-negative ", kind.noun);
  const char* p = text.data();
  const char* end = text.data() + text.size();
  uint64_t whole = 0;
  auto [after_whole, ec] = std::from_chars(p, end, whole);
  if (ec == std::errc::result_out_of_range) return too_large;
  if (ec != std::errc()) return errors::InvalidArgument("expected ", kind.expected);
  p = after_whole;
  // The fraction as numerator / denominator (a power of 10), trailing zeros dropped.
  uint64_t numerator = 0, denominator = 1;
  if (p != end && *p == '.') {
    const char* digits = ++p;
    while (p != end && *p >= '0' && *p <= '9') ++p;
    const char* last = p;
    while (last != digits && last[-1] == '0') --last;
    if (p == digits || last - digits > 18)
      return errors::InvalidArgument("expected ", kind.expected);
    for (const char* d = digits; d != last; ++d) {
      numerator = numerator * 10 + static_cast<uint64_t>(*d - '0');
      denominator *= 10;
    }
  }
  while (p != end && *p == ' ') ++p;
  std::string_view unit_name(p, static_cast<size_t>(end - p));
  auto unit = std::find_if(kind.units.begin(), kind.units.end(),
                           [&](const QuantityUnit& u) { return u.name == unit_name; });
  if (unit == kind.units.end()) return errors::InvalidArgument("expected ", kind.expected);
  // whole * multiplier + numerator * multiplier / denominator, where the second term must be a
  // whole number: reduce the fraction, then the denominator must divide the multiplier.
  const uint64_t multiplier = unit->multiplier;
  const uint64_t g = std::gcd(numerator, denominator);
  numerator /= g;
  denominator /= g;
  if (multiplier % denominator != 0)
    return errors::InvalidArgument("expected a whole number of ", kind.smallest);
  const uint64_t limit = std::numeric_limits<int64_t>::max();
  const uint64_t per_numerator = multiplier / denominator;
  if (whole > limit / multiplier || numerator > limit / per_numerator ||
      whole * multiplier > limit - numerator * per_numerator)
    return too_large;
  return static_cast<int64_t>(whole * multiplier + numerator * per_numerator);
}

// Resolves a path written in the config against the directory of the config file ("" when the
// text did not come from a file: the path stays relative to the working directory).
std::string ResolvePath(const std::string& base_dir, const std::string& path) {
  fs::path p(path);
  if (base_dir.empty() || p.is_absolute()) return path;
  return (fs::path(base_dir) / p).lexically_normal().string();
}

// Sees the start of each YAML document and whether its root is empty; builds nothing.
class DocumentWatcher : public YAML::EventHandler {
 public:
  YAML::Mark start;
  bool empty = true;

  void OnDocumentStart(const YAML::Mark& mark) override {
    start = mark;
    empty = true;
    root_seen_ = false;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override { Root(false); }
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override { Root(true); }
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {
    Root(true);
  }
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    Root(true);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    Root(true);
  }
  void OnMapEnd() override {}

 private:
  void Root(bool has_content) {
    if (!root_seen_) empty = !has_content;
    root_seen_ = true;
  }
  bool root_seen_ = false;
};

// One parse of one text. `source` names the text in messages; `base_dir` is what relative
// paths in it are relative to.
class Parser {
 public:
  Parser(std::string source, std::string base_dir)
      : source_(std::move(source)), base_dir_(std::move(base_dir)) {}

  StatusOr<Config> Parse(const std::string& text) const {
    try {
      return ParseOrThrow(text);
    } catch (const YAML::DeepRecursion& e) {
      // yaml-cpp's own bound on its recursion (its message says only "bad file").
      return errors::InvalidArgument(source_, ":", e.mark.line + 1, ": YAML nested too deeply (",
                                     e.depth(), " nested calls of the YAML parser at column ",
                                     e.mark.column + 1, "; a config nests a few levels)");
    } catch (const YAML::ParserException& e) {
      if (e.mark.is_null()) return errors::InvalidArgument(source_, ": invalid YAML: ", e.msg);
      return errors::InvalidArgument(source_, ":", e.mark.line + 1, ": invalid YAML: ", e.msg,
                                     " (column ", e.mark.column + 1, ")");
    } catch (const std::exception& e) {
      // Only syntax errors are expected; anything else thrown is a bug here.
      return errors::Internal(source_, ": unexpected error while reading the config: ", e.what());
    } catch (...) {
      return errors::Internal(source_, ": unexpected error while reading the config");
    }
  }

 private:
  StatusOr<Config> ParseOrThrow(const std::string& text) const {
    CFX_RETURN_IF_ERROR(CheckOneDocument(text));
    YAML::Node document = YAML::Load(text);
    Config config;
    config.source = source_;
    if (document.IsNull()) return config;
    Located root{document, "", document.Mark().line + 1};
    if (!root.node.IsMap())
      return Error(root,
                   "expected a map of sections (plugin_paths, plugins, devices, threads, "
                   "optimizer, placement, logging, limits, cluster) at the top level, got " +
                       Describe(root.node));
    CFX_RETURN_IF_ERROR(ForEachEntry(root,
                                     {"plugin_paths", "plugins", "devices", "threads", "optimizer",
                                      "placement", "logging", "limits", "cluster"},
                                     [&](const Entry& e) -> Status {
                                       if (e.key == "plugin_paths")
                                         return ParsePluginPaths(e.value, &config.plugin_paths);
                                       if (e.key == "plugins")
                                         return ParsePlugins(e.value, &config.plugins);
                                       if (e.key == "devices")
                                         return ParseDevices(e.value, &config.devices);
                                       if (e.key == "threads")
                                         return ParseThreads(e.value, &config);
                                       if (e.key == "optimizer")
                                         return ParseOptimizer(e.value, &config);
                                       if (e.key == "placement")
                                         return ParsePlacement(e.value, &config);
                                       if (e.key == "cluster")
                                         return ParseCluster(e.value, &config.cluster);
                                       if (e.key == "limits")
                                         return ParseLimits(e.value, &config.limits);
                                       return ParseLogging(e.value,
                                                           &config.log_level);  // "logging"
                                     }));
    return config;
  }

  // A config is one YAML document; empty documents after it (a trailing "---") are allowed.
  // The documents are walked here rather than with YAML::LoadAll because yaml-cpp 0.7 stops
  // making progress on some malformed input (a leading ',', jbeder/yaml-cpp#1040) and hands out
  // the same empty document forever: LoadAll then never returns and eats all memory, and
  // YAML::Load returns an empty config as if nothing were wrong.
  Status CheckOneDocument(const std::string& text) const {
    std::istringstream in(text);
    YAML::Parser parser(in);
    DocumentWatcher watcher;
    int previous_pos = -1;
    for (int index = 0; parser.HandleNextDocument(watcher); ++index) {
      const int line = watcher.start.line + 1;
      if (watcher.start.pos <= previous_pos)
        return errors::InvalidArgument(source_, ":", line,
                                       ": invalid YAML: cannot read on from column ",
                                       watcher.start.column + 1);
      if (index > 0 && !watcher.empty)
        return errors::InvalidArgument(
            source_, ":", line, ": a config is one YAML document, but a second one starts here");
      previous_pos = watcher.start.pos;
    }
    return Status();
  }

  Status ParsePluginPaths(const Located& at, std::vector<std::string>* out) const {
    return ForEachItem(at, [&](const Located& item) -> Status {
      CFX_ASSIGN_OR_RETURN(std::string dir, NonEmptyString(item, "a directory"));
      out->push_back(ResolvePath(base_dir_, dir));
      return Status();
    });
  }

  Status ParsePlugins(const Located& at, std::vector<PluginSpec>* out) const {
    std::map<std::string, std::string> seen;  // "name cpu" / "path /x.so" -> where
    return ForEachItem(at, [&](const Located& item) -> Status {
      if (!item.node.IsMap())
        return Error(item, "expected a map with a name or a path (e.g. {name: cpu}), got " +
                               Describe(item.node));
      PluginSpec spec;
      spec.source = StrCat(source_, ":", item.line);
      bool has_name = false, has_path = false;
      CFX_RETURN_IF_ERROR(ForEachEntry(
          item, {"name", "path", "required", "options"}, [&](const Entry& e) -> Status {
            if (e.key == "name") {
              CFX_ASSIGN_OR_RETURN(spec.name, NonEmptyString(e.value, "a plugin name"));
              has_name = true;
              if (!IsPluginName(spec.name))
                return Error(e.value,
                             "expected a plugin name of letters, digits, '-' and '_' (the "
                             "loader looks for libconflux_<name>.so), got " +
                                 Describe(e.value.node) + "; to load a file, use path");
              return Status();
            }
            if (e.key == "path") {
              CFX_ASSIGN_OR_RETURN(std::string path, NonEmptyString(e.value, "a file path"));
              spec.path = ResolvePath(base_dir_, path);
              has_path = true;
              return Status();
            }
            if (e.key == "required") return Bool(e.value, &spec.required);
            return Options(e.value, &spec.options);  // "options"
          }));
      if (has_name == has_path)
        return Error(item, has_name ? "give either name or path, not both"
                                    : "expected a name (e.g. name: cpu) or a path to a .so file");
      std::string identity = has_name ? "name " + spec.name : "path " + spec.path;
      auto [it, inserted] = seen.emplace(identity, spec.source);
      if (!inserted)
        return Error(item, StrCat("plugin ", has_name ? spec.name : spec.path,
                                  " is listed twice (first at ", it->second, ")"));
      out->push_back(std::move(spec));
      return Status();
    });
  }

  Status ParseDevices(const Located& at, std::map<std::string, DeviceTypeConfig>* out) const {
    return ForEachEntry(at, {}, [&](const Entry& type) -> Status {
      if (!IsDeviceTypeName(type.key)) {
        const std::string upper = WithAsciiCase(type.key, /*upper=*/true);
        return Error(Located{type.value.node, type.value.path, type.key_line},
                     "expected a device type in upper case ([A-Z0-9_]+, e.g. CPU or GPU)" +
                         (IsDeviceTypeName(upper) ? "; did you mean \"" + upper + "\"?" : ""));
      }
      return ParseDevice(type.value, &(*out)[type.key]);
    });
  }

  Status ParseDevice(const Located& at, DeviceTypeConfig* device) const {
    return ForEachEntry(at, {"count", "memory_limit", "required", "swap_threshold", "options"},
                        [&](const Entry& e) -> Status {
                          if (e.key == "count") {
                            CFX_ASSIGN_OR_RETURN(int64_t count, NonNegativeInt(e.value));
                            device->count = static_cast<int>(count);
                            return Status();
                          }
                          if (e.key == "memory_limit")
                            return QuantityOf(e.value, kSize, &device->memory_limit);
                          if (e.key == "required") return Bool(e.value, &device->required);
                          if (e.key == "swap_threshold")
                            return UnitFraction(e.value, &device->swap_threshold);
                          return Options(e.value, &device->options);  // "options"
                        });
  }

  Status ParseThreads(const Located& at, Config* config) const {
    return ForEachEntry(at, {"intra_op", "inter_op"}, [&](const Entry& e) -> Status {
      CFX_ASSIGN_OR_RETURN(int64_t threads, NonNegativeInt(e.value));
      (e.key == "intra_op" ? config->intra_op_threads : config->inter_op_threads) =
          static_cast<int>(threads);
      return Status();
    });
  }

  Status ParseOptimizer(const Located& at, Config* config) const {
    return ForEachEntry(at, {"common_subexpression_elimination", "constant_folding", "remapping"},
                        [&](const Entry& e) -> Status {
                          if (e.key == "constant_folding")
                            return Bool(e.value, &config->constant_folding);
                          if (e.key == "remapping") return Bool(e.value, &config->remapping);
                          return Bool(e.value, &config->common_subexpression_elimination);
                        });
  }

  Status ParsePlacement(const Located& at, Config* config) const {
    return ForEachEntry(at, {"cost_model"}, [&](const Entry& e) -> Status {
      CFX_ASSIGN_OR_RETURN(config->placement_cost_model, String(e.value, "a cost model"));
      if (config->placement_cost_model == "static" || config->placement_cost_model == "measured")
        return Status();
      return Error(e.value, "expected static or measured, got " + Describe(e.value.node) +
                                DidYouMean(config->placement_cost_model, {"static", "measured"}));
    });
  }

  Status ParseLimits(const Located& at, GraphLimits* limits) const {
    return ForEachEntry(at,
                        {"graph_bytes", "nodes", "nesting_depth", "attr_list_length",
                         "constant_bytes"},
                        [&](const Entry& e) -> Status {
                          if (e.key == "graph_bytes")
                            return QuantityOf(e.value, kSize, &limits->max_graph_bytes);
                          if (e.key == "constant_bytes")
                            return QuantityOf(e.value, kSize, &limits->max_constant_bytes);
                          CFX_ASSIGN_OR_RETURN(int64_t n, NonNegativeInt(e.value));
                          if (n == 0) return Error(e.value, "expected a positive number, got 0");
                          if (e.key == "nodes") {
                            limits->max_nodes = n;
                          } else if (e.key == "attr_list_length") {
                            limits->max_attr_list_length = n;
                          } else {  // "nesting_depth": protobuf's recursion limit, an int
                            if (n > 10000)
                              return Error(e.value,
                                           "expected at most 10000, got " + std::to_string(n));
                            limits->max_nesting_depth = static_cast<int>(n);
                          }
                          return Status();
                        });
  }

  Status ParseLogging(const Located& at, std::string* level) const {
    return ForEachEntry(at, {"level"}, [&](const Entry& e) -> Status {
      CFX_ASSIGN_OR_RETURN(*level, String(e.value, "a log level"));
      internal::LogLevel parsed;
      if (internal::ParseLogLevel(*level, &parsed)) return Status();
      return Error(e.value, "expected one of debug, info, warning, error, got " +
                                Describe(e.value.node) +
                                DidYouMean(*level, {"debug", "info", "warning", "error"}));
    });
  }

  // The lines that messages about a `cluster:` section name, by internal::ClusterSpot.
  struct ClusterLines {
    int jobs = 0, chief = 0, ranks = 0;
    std::vector<int> job_names, job_tasks, rank_entries;

    int Of(const internal::ClusterSpot& spot) const {
      switch (spot.kind) {
        case internal::ClusterSpot::kJobs:
          return jobs;
        case internal::ClusterSpot::kJobName:
          return job_names[spot.index];
        case internal::ClusterSpot::kJobTasks:
          return job_tasks[spot.index];
        case internal::ClusterSpot::kChief:
          return chief;
        case internal::ClusterSpot::kRanks:
          return ranks;
        case internal::ClusterSpot::kRank:
          return rank_entries[spot.index];
      }
      return jobs;
    }
  };

  // `cluster:`. Its jobs, chief and ranks are checked together once the section is read (keys
  // come in any order), by the resolution ClusterConfig::Resolve uses.
  Status ParseCluster(const Located& at, ClusterConfig* cluster) const {
    if (at.node.IsNull()) return Status();  // `cluster:` alone: one process, as when absent
    ClusterLines lines;
    lines.jobs = lines.chief = lines.ranks = at.line;
    CFX_RETURN_IF_ERROR(ForEachEntry(
        at,
        {"transport", "transport_options", "chief", "jobs", "ranks", "replication", "step_timeout",
         "heartbeat", "fusion_bytes", "compression"},
        [&](const Entry& e) -> Status {
          if (e.key == "transport") {
            CFX_ASSIGN_OR_RETURN(cluster->transport, NonEmptyString(e.value, "a transport name"));
            if (IsPluginName(cluster->transport)) return Status();
            return Error(e.value, StrCat("expected a transport name of letters, digits, '-' "
                                         "and '_' (e.g. mpi), got ",
                                         Describe(e.value.node)));
          }
          if (e.key == "transport_options") return Options(e.value, &cluster->transport_options);
          if (e.key == "chief") {
            lines.chief = e.value.line;
            CFX_ASSIGN_OR_RETURN(cluster->chief,
                                 NonEmptyString(e.value, "a task as job:index (e.g. worker:0)"));
            return Status();
          }
          if (e.key == "jobs") {
            lines.jobs = e.value.line;
            return ForEachItem(e.value, [&](const Located& item) -> Status {
              lines.job_names.push_back(item.line);
              lines.job_tasks.push_back(item.line);
              cluster->jobs.emplace_back();
              return ParseJob(item, &cluster->jobs.back(), &lines.job_names.back(),
                              &lines.job_tasks.back());
            });
          }
          if (e.key == "ranks") {
            lines.ranks = e.value.line;
            return ForEachItem(e.value, [&](const Located& item) -> Status {
              lines.rank_entries.push_back(item.line);
              CFX_ASSIGN_OR_RETURN(std::string task,
                                   String(item, "a task as job:index (e.g. worker:0)"));
              cluster->ranks.push_back(std::move(task));
              return Status();
            });
          }
          if (e.key == "replication") {
            CFX_ASSIGN_OR_RETURN(cluster->replication, String(e.value, "a replication mode"));
            const std::string& mode = cluster->replication;
            if (mode == "in-graph" || mode == "between-graph") return Status();
            return Error(e.value, "expected one of in-graph, between-graph, got " +
                                      Describe(e.value.node) +
                                      DidYouMean(mode, {"in-graph", "between-graph"}));
          }
          if (e.key == "step_timeout")
            return QuantityOf(e.value, kDuration, &cluster->step_timeout_ms);
          if (e.key == "fusion_bytes") return QuantityOf(e.value, kSize, &cluster->fusion_bytes);
          if (e.key == "compression") return ParseCompression(e.value, cluster);
          return ParseHeartbeat(e.value, cluster);  // "heartbeat"
        }));
    cluster->enabled = true;
    cluster->source = StrCat(source_, ":", at.line);
    internal::ClusterSpot spot;
    StatusOr<internal::ResolvedCluster> resolved = internal::ResolveCluster(*cluster, &spot);
    if (!resolved.ok())
      return Error(Located{at.node, spot.Path(), lines.Of(spot)}, resolved.status().message());
    return Status();
  }

  // One item of `cluster.jobs`; sets the lines of its name and its task count where given.
  Status ParseJob(const Located& at, ClusterJob* job, int* name_line, int* tasks_line) const {
    if (!at.node.IsMap())
      return Error(at, StrCat("expected a map with a name and tasks (e.g. {name: worker, "
                              "tasks: 2}), got ",
                              Describe(at.node)));
    job->source = StrCat(source_, ":", at.line);
    return ForEachEntry(at, {"name", "tasks", "devices"}, [&](const Entry& e) -> Status {
      if (e.key == "name") {
        *name_line = e.value.line;
        CFX_ASSIGN_OR_RETURN(job->name, String(e.value, "a job name"));
        return Status();
      }
      if (e.key == "tasks") {
        *tasks_line = e.value.line;
        CFX_ASSIGN_OR_RETURN(int64_t tasks, NonNegativeInt(e.value));
        job->tasks = static_cast<int>(tasks);
        return Status();
      }
      return ParseDevices(e.value, &job->devices);  // "devices"
    });
  }

  // `cluster.compression`: {mode: none|truncate16|half, edges: [glob, ...], min_bytes: size}.
  Status ParseCompression(const Located& at, ClusterConfig* cluster) const {
    return ForEachEntry(at, {"mode", "edges", "min_bytes"}, [&](const Entry& e) -> Status {
      if (e.key == "min_bytes") return QuantityOf(e.value, kSize, &cluster->compression_min_bytes);
      if (e.key == "edges") {
        return ForEachItem(e.value, [&](const Located& item) -> Status {
          CFX_ASSIGN_OR_RETURN(std::string pattern,
                               NonEmptyString(item, "a glob pattern on tensor names (node:port)"));
          cluster->compression_edges.push_back(std::move(pattern));
          return Status();
        });
      }
      CFX_ASSIGN_OR_RETURN(cluster->compression, String(e.value, "a compression mode"));
      const std::string& mode = cluster->compression;
      if (mode == "none" || mode == "truncate16" || mode == "half") return Status();
      return Error(e.value, "expected one of none, truncate16, half, got " +
                                Describe(e.value.node) +
                                DidYouMean(mode, {"none", "truncate16", "half"}));
    });
  }

  Status ParseHeartbeat(const Located& at, ClusterConfig* cluster) const {
    CFX_RETURN_IF_ERROR(ForEachEntry(at, {"interval", "timeout"}, [&](const Entry& e) -> Status {
      int64_t* ms =
          e.key == "interval" ? &cluster->heartbeat_interval_ms : &cluster->heartbeat_timeout_ms;
      return QuantityOf(e.value, kDuration, ms);
    }));
    if (cluster->heartbeat_interval_ms == 0 ||
        cluster->heartbeat_timeout_ms > cluster->heartbeat_interval_ms)
      return Status();
    return Error(at, StrCat("expected a timeout longer than the interval, got timeout ",
                            cluster->heartbeat_timeout_ms, " ms and interval ",
                            cluster->heartbeat_interval_ms, " ms"));
  }

  // --- Node kinds and scalars. Each returns an error naming `at` when the node is not the
  // expected kind.

  Status Error(const Located& at, const std::string& what) const {
    if (at.path.empty()) return errors::InvalidArgument(source_, ":", at.line, ": ", what);
    return errors::InvalidArgument(source_, ":", at.line, ": ", at.path, ": ", what);
  }

  // Checks that `at` is a map (nothing counts as an empty map) whose keys are strings, appear
  // once, and are among `known` (any key when `known` is empty); then calls `visit` on each
  // entry in file order, stopping at the first error.
  Status ForEachEntry(const Located& at, std::initializer_list<std::string_view> known,
                      const std::function<Status(const Entry&)>& visit) const {
    if (at.node.IsNull()) return Status();
    if (!at.node.IsMap()) return Error(at, "expected a map, got " + Describe(at.node));
    std::map<std::string, int> lines;  // key -> line of its first occurrence
    for (const auto& pair : at.node) {
      Entry e;
      e.key_line = pair.first.Mark().is_null() ? at.line : pair.first.Mark().line + 1;
      if (!pair.first.IsScalar())
        return Error(Located{pair.first, at.path, e.key_line},
                     "expected a string key, got " + Describe(pair.first));
      e.key = pair.first.Scalar();
      e.value = Located{pair.second, JoinPath(at.path, e.key), LineOf(pair.second, e.key_line)};
      Located key_at{pair.first, e.value.path, e.key_line};
      if (known.size() != 0 && std::find(known.begin(), known.end(), e.key) == known.end())
        return Error(key_at, StrCat("unknown key (expected one of ", JoinWords(known), ")",
                                    DidYouMean(e.key, known)));
      auto [first, inserted] = lines.emplace(e.key, e.key_line);
      if (!inserted)
        return Error(key_at, StrCat("duplicate key (first at line ", first->second, ")"));
      CFX_RETURN_IF_ERROR(visit(e));
    }
    return Status();
  }

  // Checks that `at` is a sequence (nothing counts as empty); calls `visit` on each item.
  Status ForEachItem(const Located& at, const std::function<Status(const Located&)>& visit) const {
    if (at.node.IsNull()) return Status();
    if (!at.node.IsSequence()) return Error(at, "expected a sequence, got " + Describe(at.node));
    size_t index = 0;
    for (const YAML::Node& item : at.node) {
      int line = item.Mark().is_null() ? at.line : item.Mark().line + 1;
      CFX_RETURN_IF_ERROR(
          visit(Located{item, StrCat(at.path, "[", index++, "]"), LineOf(item, line)}));
    }
    return Status();
  }

  StatusOr<std::string> String(const Located& at, std::string_view expected) const {
    if (!at.node.IsScalar())
      return Error(at, StrCat("expected ", expected, ", got ", Describe(at.node)));
    return at.node.Scalar();
  }

  StatusOr<std::string> NonEmptyString(const Located& at, std::string_view expected) const {
    CFX_ASSIGN_OR_RETURN(std::string s, String(at, expected));
    if (s.empty()) return Error(at, StrCat("expected ", expected, ", got an empty string"));
    return s;
  }

  // An integer in [0, INT_MAX], written in decimal.
  StatusOr<int64_t> NonNegativeInt(const Located& at) const {
    constexpr std::string_view kExpected = "a non-negative integer";
    CFX_ASSIGN_OR_RETURN(std::string s, String(at, kExpected));
    int64_t value = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (end != s.data() + s.size() || (ec != std::errc() && ec != std::errc::result_out_of_range))
      return Error(at, StrCat("expected ", kExpected, ", got ", Describe(at.node)));
    if (s[0] == '-') return Error(at, StrCat("expected ", kExpected, ", got ", s));
    if (ec == std::errc::result_out_of_range || value > kMaxInt)
      return Error(at, StrCat("expected ", kExpected, " no larger than ", kMaxInt, ", got ", s));
    return value;
  }

  // A decimal number in [0, 1].
  Status UnitFraction(const Located& at, double* out) const {
    constexpr std::string_view kExpected = "a number from 0 to 1";
    CFX_ASSIGN_OR_RETURN(std::string s, String(at, kExpected));
    double value = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (s.empty() || end != s.data() + s.size() || ec != std::errc() || !(value >= 0 && value <= 1))
      return Error(at, StrCat("expected ", kExpected, ", got ", Describe(at.node)));
    *out = value;
    return Status();
  }

  // YAML 1.2 booleans only: yes/no/on/off are errors rather than a guess.
  Status Bool(const Located& at, bool* out) const {
    CFX_ASSIGN_OR_RETURN(std::string s, String(at, "true or false"));
    if (s == "true" || s == "True" || s == "TRUE") {
      *out = true;
    } else if (s == "false" || s == "False" || s == "FALSE") {
      *out = false;
    } else {
      return Error(at, "expected true or false, got " + Describe(at.node));
    }
    return Status();
  }

  // A size in bytes or a duration in milliseconds (kSize, kDuration).
  Status QuantityOf(const Located& at, const Quantity& kind, int64_t* out) const {
    CFX_ASSIGN_OR_RETURN(std::string s, String(at, kind.expected));
    StatusOr<int64_t> value = ParseQuantity(s, kind);
    if (!value.ok())
      return Error(at, StrCat(value.status().message(), ", got ", Describe(at.node)));
    *out = *value;
    return Status();
  }

  // A map of scalars, kept in file order as strings.
  Status Options(const Located& at, std::vector<std::pair<std::string, std::string>>* out) const {
    return ForEachEntry(at, {}, [&](const Entry& e) -> Status {
      CFX_ASSIGN_OR_RETURN(std::string value,
                           String(e.value, "a scalar value (options are strings)"));
      out->emplace_back(e.key, std::move(value));
      return Status();
    });
  }

  std::string source_;
  std::string base_dir_;
};

}  // namespace

StatusOr<Config> Config::FromString(const std::string& yaml, const std::string& source) {
  CFX_ASSIGN_OR_RETURN(Config config, Parser(source, "").Parse(yaml));
  config.text = yaml;
  return config;
}

StatusOr<Config> Config::FromFile(const std::string& path) {
  std::error_code ec;
  fs::file_status status = fs::status(path, ec);
  if (status.type() == fs::file_type::not_found)
    return errors::NotFound(path, ": no such config file");
  if (ec) return errors::InvalidArgument(path, ": cannot read the config file: ", ec.message());
  if (fs::is_directory(status))
    return errors::InvalidArgument(path, ": is a directory, not a config file");
  std::ifstream in(path, std::ios::binary);
  if (!in.is_open()) return errors::InvalidArgument(path, ": cannot open the config file");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return errors::InvalidArgument(path, ": cannot read the config file");
  CFX_ASSIGN_OR_RETURN(Config config,
                       Parser(path, fs::path(path).parent_path().string()).Parse(text.str()));
  config.text = text.str();
  return config;
}

Config Config::Default() {
  // Parsed once; never destroyed, so it stays usable during static destruction.
  static const Config* const kDefault = [] {
    StatusOr<Config> config = FromString(DefaultConfigYaml(), "<embedded config/local.yaml>");
    if (!config.ok())
      std::fprintf(stderr, "conflux: the embedded default config is broken: %s\n",
                   config.status().ToString().c_str());
    CFX_CHECK(config.ok());
    return new Config(std::move(config).value());
  }();
  return *kDefault;
}

}  // namespace cfx
