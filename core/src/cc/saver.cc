// Saver, LatestCheckpoint, PeriodicSaver (see conflux/cc/saver.h).
#include "conflux/cc/saver.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "conflux/cc/ops/standard_ops.h"
#include "conflux/cc/variables.h"

namespace cfx {
namespace {

namespace fs = std::filesystem;

constexpr const char kStateFile[] = "checkpoint";
constexpr const char kSuffix[] = ".cfxckpt";

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
      st.latest = v;
    } else if (ParseValue(line, "all_model_checkpoint_paths", &v)) {
      st.all.push_back(v);
    } else {
      return errors::DataLoss(path, ":", n, ": expected model_checkpoint_path or ",
                              "all_model_checkpoint_paths with a quoted path");
    }
  }
  if (st.latest.empty()) return errors::NotFound(path, " names no checkpoint");
  return st;
}

}  // namespace

Saver::Saver(const Scope& scope, Options options) : options_(std::move(options)) {
  if (options_.vars.empty()) options_.vars = scope.GetCollection(kGlobalVariables);
  Scope s = scope.NewSubScope("save").WithNoControlDependencies();
  prefix_ = ops::Placeholder(s.WithOpName("prefix"), DT_STRING);
  std::vector<std::string> names;
  std::vector<DataType> dtypes;
  InputList values;
  for (const Output& v : options_.vars) {
    names.push_back(v.node()->name());
    dtypes.push_back(BaseType(v.type()));
    values.push_back(v);
  }
  Tensor names_t(DT_STRING, TensorShape({static_cast<int64_t>(names.size())}));
  Tensor slices_t(DT_STRING, TensorShape({static_cast<int64_t>(names.size())}));
  for (size_t i = 0; i < names.size(); ++i) {
    names_t.at<std::string>(i) = names[i];
    slices_t.at<std::string>(i) = "";
  }
  Output names_c = ops::Const(s, names_t), slices_c = ops::Const(s, slices_t);
  save_ = ops::SaveV2(s, prefix_, names_c, slices_c, values);
  auto restored = ops::RestoreV2(s, prefix_, names_c, slices_c, dtypes);
  std::vector<Operation> assigns;
  for (size_t i = 0; i < options_.vars.size() && restored.operation.valid(); ++i)
    assigns.push_back(ops::Assign(s, options_.vars[i], restored.tensors[i]).op());
  restore_ = ops::NoOp(s.WithOpName("restore_all").WithControlDependencies(assigns));
}

StatusOr<std::string> Saver::Save(ClientSession* session, const std::string& prefix,
                                  int64_t step) {
  const std::string written = StrCat(prefix, "-", step);
  std::error_code ec;
  fs::create_directories(DirOf(prefix), ec);
  CFX_RETURN_IF_ERROR(session->Run({{prefix_, written}}, {}, {save_}, nullptr));
  CFX_RETURN_IF_ERROR(UpdateState(written));
  return written;
}

Status Saver::UpdateState(const std::string& written) {
  const std::string dir = DirOf(written);
  if (kept_.empty()) {
    // A resumed run keeps managing the checkpoints that earlier runs recorded.
    auto earlier = ReadState(dir);
    if (earlier.ok()) kept_ = earlier->all;
  }
  std::erase(kept_, written);
  kept_.push_back(written);
  while (options_.max_to_keep > 0 && static_cast<int>(kept_.size()) > options_.max_to_keep) {
    std::error_code ec;
    fs::remove(kept_.front() + kSuffix, ec);
    kept_.erase(kept_.begin());
  }
  // Written to a temporary file and renamed, so a crash leaves the old state.
  const std::string path = (fs::path(dir) / kStateFile).string();
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << "model_checkpoint_path: " << Quoted(written) << "\n";
    for (const std::string& k : kept_) out << "all_model_checkpoint_paths: " << Quoted(k) << "\n";
    out.flush();
    if (!out) return errors::Unavailable("cannot write ", tmp);
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return errors::Unavailable("cannot rename ", tmp, " to ", path, ": ", ec.message());
  return Status();
}

Status Saver::Restore(ClientSession* session, const std::string& checkpoint) {
  Status s = session->Run({{prefix_, checkpoint}}, {}, {restore_}, nullptr);
  if (!s.ok()) return s.WithPrefix("restoring " + checkpoint + ": ");
  return Status();
}

StatusOr<std::string> LatestCheckpoint(const std::string& dir) {
  CFX_ASSIGN_OR_RETURN(State st, ReadState(dir));
  if (!fs::exists(st.latest + kSuffix))
    return errors::NotFound("the checkpoint state in ", dir, " names ", st.latest,
                            ", but ", st.latest, kSuffix, " does not exist");
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
