// Saver, LatestCheckpoint, PeriodicSaver (see conflux/cc/saver.h).
#include "conflux/cc/saver.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "conflux/cc/ops/standard_ops.h"
#include "conflux/cc/variables.h"
#include "conflux/device.h"
#include "conflux/env.h"
#include "conflux/runtime.h"
#include "conflux/session.h"

namespace cfx {
namespace {

namespace fs = std::filesystem;

constexpr const char kStateFile[] = "checkpoint";
constexpr const char kLegacySuffix[] = ".cfxckpt";  // Conflux's earlier single-file format
constexpr const char kBundleIndex[] = ".index";      // a tensor bundle's index
constexpr const char kIndexSuffix[] = ".cfxindex";   // a sharded checkpoint's shard list
constexpr const char kIndexMagic[] = "conflux-checkpoint-index 1";

std::string DirOf(const std::string& prefix) {
  fs::path p(prefix);
  return p.has_parent_path() ? p.parent_path().string() : ".";
}

// Quotes a path for the text format (backslashes and quotes escaped).
std::string Quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// Reads the quoted value of `line` after "key: ".
bool ParseValue(const std::string& line, const std::string& key, std::string* value) {
  if (line.rfind(key + ": \"", 0) != 0 || line.back() != '"') return false;
  std::string v = line.substr(key.size() + 3, line.size() - key.size() - 4);
  value->clear();
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] == '\\' && i + 1 < v.size()) ++i;
    *value += v[i];
  }
  return true;
}

struct State {
  std::string latest;
  std::vector<std::string> all;
};

// True when a single-file checkpoint (a tensor bundle, or the earlier format) is at `prefix`.
bool SingleCheckpointExists(const std::string& prefix) {
  return fs::exists(prefix + kBundleIndex) || fs::exists(prefix + kLegacySuffix);
}

// A path of the state file as TensorFlow's Saver resolves it: relative to the file's folder.
// State files written before Conflux followed that named paths relative to where the program
// ran; such a path is kept when only it names an existing checkpoint.
std::string ResolveStatePath(const std::string& dir, const std::string& p) {
  if (fs::path(p).is_absolute()) return p;
  const std::string joined = (fs::path(dir) / p).string();
  auto exists = [](const std::string& c) {
    return SingleCheckpointExists(c) || fs::exists(c + kIndexSuffix);
  };
  if (!exists(joined) && exists(p)) return p;
  return joined;
}

// `p` as the state file names it: relative to `dir` when it lies inside it.
std::string StatePath(const std::string& dir, const std::string& p) {
  const fs::path full = fs::path(p).lexically_normal(), base = fs::path(dir).lexically_normal();
  if (full.is_absolute() != base.is_absolute()) return p;
  const fs::path rel = full.lexically_relative(base);
  if (rel.empty() || *rel.begin() == "..") return p;
  return rel.string();
}

// Deletes the files of the single-file checkpoint at `prefix` (either format).
void DeleteCheckpointFiles(Env* env, const std::string& prefix) {
  // The index first: a bundle without its index is no checkpoint.
  (void)env->DeleteFile(prefix + kBundleIndex);
  std::error_code ec;
  const fs::path base(prefix);
  const std::string stem = base.filename().string() + ".data-";
  for (const auto& entry : fs::directory_iterator(DirOf(prefix), ec))
    if (entry.path().filename().string().rfind(stem, 0) == 0)
      (void)env->DeleteFile(entry.path().string());
  (void)env->DeleteFile(prefix + kLegacySuffix);
}

StatusOr<State> ReadState(const std::string& dir) {
  const std::string path = (fs::path(dir) / kStateFile).string();
  std::ifstream in(path);
  if (!in) return errors::NotFound("no checkpoint state file ", path);
  State st;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    std::string v;
    if (ParseValue(line, "model_checkpoint_path", &v)) {
      st.latest = ResolveStatePath(dir, v);
    } else if (ParseValue(line, "all_model_checkpoint_paths", &v)) {
      st.all.push_back(ResolveStatePath(dir, v));
    } else {
      return errors::DataLoss(path, ":", n, ": expected model_checkpoint_path or ",
                              "all_model_checkpoint_paths with a quoted path");
    }
  }
  if (st.latest.empty()) return errors::NotFound(path, " names no checkpoint");
  return st;
}

// The task whose device a variable asks for ("/job:ps/replica:0/task:1"), or "" when it names
// none (it then lives with the chief).
std::string TaskOf(const Output& var) {
  auto name = DeviceName::Parse(var.node()->def().device);
  if (!name.ok() || name->job.empty() || name->task < 0) return "";
  return StrCat("/job:", name->job, "/replica:", std::max(name->replica, 0), "/task:", name->task);
}

std::string ShardPrefix(const std::string& checkpoint, size_t k, size_t n) {
  char tail[64];
  std::snprintf(tail, sizeof(tail), "-shard-%05zu-of-%05zu", k, n);
  return checkpoint + tail;
}

// A sharded checkpoint's index: per shard its task, its file (relative to the index's folder)
// and the variables it holds.
struct Index {
  struct Entry {
    std::string task, file;
    std::set<std::string> names;
  };
  std::vector<Entry> shards;
};

Status WriteIndex(Env* env, const std::string& path, const Index& index) {
  std::ostringstream out;
  out << kIndexMagic << "\n" << "shards " << index.shards.size() << "\n";
  for (size_t k = 0; k < index.shards.size(); ++k) {
    const Index::Entry& e = index.shards[k];
    out << "shard " << k << " " << (e.task.empty() ? "chief" : e.task) << " " << e.file << "\n";
    for (const std::string& name : e.names) out << "variable " << k << " " << name << "\n";
  }
  return WriteFileAtomically(env, path, out.str());
}

StatusOr<Index> ReadIndex(const std::string& path) {
  std::ifstream in(path);
  if (!in) return errors::NotFound("cannot read ", path);
  std::string line;
  int n = 0;
  auto bad = [&](const std::string& what) {
    return errors::DataLoss(path, ":", n, ": ", what, " (a Conflux checkpoint index)");
  };
  Index index;
  size_t count = 0;
  while (std::getline(in, line)) {
    ++n;
    std::istringstream fields(line);
    std::string kind;
    fields >> kind;
    if (n == 1) {
      if (line != kIndexMagic) return bad(StrCat("expected '", kIndexMagic, "'"));
      continue;
    }
    if (kind == "shards") {
      if (!(fields >> count) || count == 0 || count > 100000) return bad("expected shards <n>");
      index.shards.resize(count);
    } else if (kind == "shard" || kind == "variable") {
      size_t k;
      std::string a, b;
      if (!(fields >> k >> a) || k >= index.shards.size()) return bad("shard number out of range");
      if (kind == "variable") {
        index.shards[k].names.insert(a);
        continue;
      }
      if (!(fields >> b) || b.find('/') != std::string::npos) return bad("expected shard <k> <task> <file>");
      index.shards[k].task = a == "chief" ? "" : a;
      index.shards[k].file = b;
    } else if (!line.empty()) {
      return bad("unknown line");
    }
  }
  if (index.shards.empty()) return bad("no shards");
  for (size_t k = 0; k < index.shards.size(); ++k)
    if (index.shards[k].file.empty()) return bad(StrCat("shard ", k, " has no file"));
  return index;
}

}  // namespace

Saver::Saver(const Scope& scope, Options options) : options_(std::move(options)) {
  if (options_.vars.empty()) options_.vars = scope.GetCollection(kGlobalVariables);
  Scope s = scope.NewSubScope("save").WithNoControlDependencies();
  std::map<std::string, std::vector<size_t>> by_task;  // sorted: the shards' order
  for (size_t i = 0; i < options_.vars.size(); ++i)
    by_task[TaskOf(options_.vars[i])].push_back(i);
  const bool sharded = options_.sharded && by_task.size() > 1;
  if (!sharded) {  // one shard of every variable (none, possibly), saved where placed
    by_task.clear();
    std::vector<size_t>& all = by_task[""];
    for (size_t i = 0; i < options_.vars.size(); ++i) all.push_back(i);
  }
  std::vector<Operation> saves, assigns;
  for (const auto& [task, members] : by_task) {
    Shard shard;
    shard.task = task;
    // Each shard's ops run on its task (the prefix is fed on the chief and sent there).
    Scope at = sharded ? s.NewSubScope("shard_" + std::to_string(shards_.size())).WithDevice(task)
                       : s;
    shard.prefix = ops::Placeholder(
        s.WithOpName(sharded ? "prefix_" + std::to_string(shards_.size()) : "prefix"), DT_STRING);
    std::vector<DataType> dtypes;
    InputList values;
    for (size_t i : members) {
      shard.names.push_back(options_.vars[i].node()->name());
      dtypes.push_back(BaseType(options_.vars[i].type()));
      values.push_back(options_.vars[i]);
    }
    const int64_t count = static_cast<int64_t>(members.size());
    Tensor names_t(DT_STRING, TensorShape({count}));
    Tensor slices_t(DT_STRING, TensorShape({count}));
    for (int64_t i = 0; i < count; ++i) {
      names_t.at<std::string>(i) = shard.names[i];
      slices_t.at<std::string>(i) = "";
    }
    Output names_c = ops::Const(at, names_t), slices_c = ops::Const(at, slices_t);
    saves.push_back(ops::SaveV2(at, shard.prefix, names_c, slices_c, values));
    auto restored = ops::RestoreV2(at, shard.prefix, names_c, slices_c, dtypes);
    for (size_t j = 0; j < members.size() && restored.operation.valid(); ++j)
      assigns.push_back(ops::Assign(at, options_.vars[members[j]], restored.tensors[j]).op());
    shards_.push_back(std::move(shard));
  }
  save_ = sharded ? ops::NoOp(s.WithOpName("save_all").WithControlDependencies(saves)) : saves[0];
  restore_ = ops::NoOp(s.WithOpName("restore_all").WithControlDependencies(assigns));
}

StatusOr<std::string> Saver::Save(ClientSession* session, const std::string& prefix,
                                  int64_t step) {
  const std::string written = StrCat(prefix, "-", step);
  const size_t n = shards_.size();
  ClientSession::FeedType feeds;
  for (size_t k = 0; k < n; ++k)
    feeds.emplace_back(shards_[k].prefix, n == 1 ? written : ShardPrefix(written, k, n));
  CFX_RETURN_IF_ERROR(session->Run(feeds, {}, {save_}, nullptr));
  // SaveV2 made the folder where it ran; the chief's index and state may need it here.
  Env* env = session->session()->runtime()->env();
  CFX_RETURN_IF_ERROR(env->CreateDir(DirOf(prefix)));
  if (n > 1) {
    // Written last: the checkpoint exists once every shard does.
    Index index;
    for (size_t k = 0; k < n; ++k)
      index.shards.push_back({shards_[k].task,
                              fs::path(ShardPrefix(written, k, n)).filename().string(),
                              {shards_[k].names.begin(), shards_[k].names.end()}});
    CFX_RETURN_IF_ERROR(WriteIndex(env, written + kIndexSuffix, index));
  }
  CFX_RETURN_IF_ERROR(UpdateState(env, written));
  return written;
}

StatusOr<std::vector<std::string>> Saver::ShardPrefixes(const std::string& checkpoint) const {
  const size_t n = shards_.size();
  if (SingleCheckpointExists(checkpoint)) return std::vector<std::string>(n, checkpoint);
  if (!fs::exists(checkpoint + kIndexSuffix))
    return errors::NotFound("no checkpoint ", checkpoint, ": none of ", checkpoint, kBundleIndex,
                            ", ", checkpoint, kIndexSuffix, " (sharded) or ", checkpoint,
                            kLegacySuffix, " exists");
  CFX_ASSIGN_OR_RETURN(Index index, ReadIndex(checkpoint + kIndexSuffix));
  if (index.shards.size() != n)
    return errors::FailedPrecondition(
        checkpoint, " has ", index.shards.size(), " shards (one per task that held variables), "
        "but this Saver's variables are on ", n, n == 1 ? " task" : " tasks",
        ": restore it onto a cluster of the same shape");
  std::vector<std::string> prefixes;
  const fs::path dir = fs::path(checkpoint).parent_path();
  for (size_t k = 0; k < n; ++k) {
    const Index::Entry& e = index.shards[k];
    for (const std::string& name : shards_[k].names) {
      if (e.names.count(name)) continue;
      std::string where = "is in none of its shards";
      for (size_t j = 0; j < n; ++j)
        if (index.shards[j].names.count(name))
          where = StrCat("was saved by ", index.shards[j].task.empty() ? "the chief" : index.shards[j].task);
      return errors::FailedPrecondition(
          "variable ", name, " lives on ", shards_[k].task.empty() ? "the chief" : shards_[k].task,
          " here, but in ", checkpoint, " it ", where,
          ": restore it onto a cluster of the same shape");
    }
    std::string file = e.file;  // a shard's prefix (earlier indexes named its .cfxckpt file)
    if (file.size() > sizeof(kLegacySuffix) - 1 &&
        file.compare(file.size() - (sizeof(kLegacySuffix) - 1), sizeof(kLegacySuffix) - 1,
                     kLegacySuffix) == 0)
      file.resize(file.size() - (sizeof(kLegacySuffix) - 1));
    prefixes.push_back((dir / file).string());
  }
  return prefixes;
}

Status Saver::UpdateState(Env* env, const std::string& written) {
  const std::string dir = DirOf(written);
  if (kept_.empty()) {
    // A resumed run keeps managing the checkpoints that earlier runs recorded.
    auto earlier = ReadState(dir);
    if (earlier.ok()) kept_ = earlier->all;
  }
  std::vector<std::string> kept = kept_;
  std::erase(kept, written);
  kept.push_back(written);
  std::vector<std::string> dropped;
  while (options_.max_to_keep > 0 && static_cast<int>(kept.size()) > options_.max_to_keep) {
    dropped.push_back(kept.front());
    kept.erase(kept.begin());
  }
  std::ostringstream out;
  out << "model_checkpoint_path: " << Quoted(StatePath(dir, written)) << "\n";
  for (const std::string& k : kept)
    out << "all_model_checkpoint_paths: " << Quoted(StatePath(dir, k)) << "\n";
  // The state names the new checkpoint before the old ones go: a crash in between leaves
  // files that nothing names, never a state that names a deleted checkpoint.
  CFX_RETURN_IF_ERROR(WriteFileAtomically(env, (fs::path(dir) / kStateFile).string(), out.str()));
  kept_ = std::move(kept);
  for (const std::string& old : dropped) {
    DeleteCheckpointFiles(env, old);
    if (auto index = ReadIndex(old + kIndexSuffix); index.ok()) {
      // The index first: a checkpoint without all its shards is gone.
      (void)env->DeleteFile(old + kIndexSuffix);
      for (const Index::Entry& e : index->shards) {
        std::string file = (fs::path(old).parent_path() / e.file).string();
        if (file.size() > 8 && file.compare(file.size() - 8, 8, kLegacySuffix) == 0)
          file.resize(file.size() - 8);
        DeleteCheckpointFiles(env, file);
      }
    }
  }
  return Status();
}

Status Saver::Restore(ClientSession* session, const std::string& checkpoint) {
  auto prefixes = ShardPrefixes(checkpoint);
  if (!prefixes.ok()) return prefixes.status().WithPrefix("restoring " + checkpoint + ": ");
  ClientSession::FeedType feeds;
  for (size_t k = 0; k < shards_.size(); ++k) feeds.emplace_back(shards_[k].prefix, (*prefixes)[k]);
  Status s = session->Run(feeds, {}, {restore_}, nullptr);
  if (!s.ok()) return s.WithPrefix("restoring " + checkpoint + ": ");
  return Status();
}

StatusOr<std::string> LatestCheckpoint(const std::string& dir) {
  CFX_ASSIGN_OR_RETURN(State st, ReadState(dir));
  if (!SingleCheckpointExists(st.latest) && !fs::exists(st.latest + kIndexSuffix))
    return errors::NotFound("the checkpoint state in ", dir, " names ", st.latest, ", but ",
                            st.latest, kBundleIndex, " (or ", kIndexSuffix, ", sharded) does not "
                            "exist");
  return st.latest;
}

PeriodicSaver::PeriodicSaver(Saver* saver, std::string prefix, int64_t every_steps,
                             double every_seconds)
    : saver_(saver), prefix_(std::move(prefix)), every_steps_(every_steps),
      every_seconds_(every_seconds), last_time_(std::chrono::steady_clock::now()) {}

StatusOr<bool> PeriodicSaver::MaybeSave(ClientSession* session, int64_t step) {
  if (last_step_ < 0) last_step_ = step;
  const auto now = std::chrono::steady_clock::now();
  const bool by_steps = every_steps_ > 0 && step - last_step_ >= every_steps_;
  const bool by_time =
      every_seconds_ > 0 && std::chrono::duration<double>(now - last_time_).count() >= every_seconds_;
  if (!by_steps && !by_time) return false;
  CFX_RETURN_IF_ERROR(saver_->Save(session, prefix_, step).status());
  last_step_ = step;
  last_time_ = now;
  return true;
}

}  // namespace cfx
