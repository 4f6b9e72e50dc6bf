// FaultInjectionEnv (see fault_injection_env.h).
#include "fault_injection_env.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "util/file.h"

namespace cfx::test {
namespace {

namespace fs = std::filesystem;

std::optional<std::string> ContentsOf(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void Restore(const std::string& path, const std::optional<std::string>& contents) {
  std::error_code ec;
  if (!contents) {
    fs::remove(path, ec);
    return;
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << *contents;
}

// A file of the wrapped Env whose calls pass the fault first.
class FaultyFile : public WritableFile {
 public:
  FaultyFile(FaultInjectionEnv* env, std::unique_ptr<WritableFile> file, int64_t generation)
      : WritableFile(file->path()), env_(env), file_(std::move(file)), generation_(generation) {}

  Status Append(std::string_view data) override {
    CFX_RETURN_IF_ERROR(env_->CheckAlive(generation_, path()));
    Status fail = env_->MaybeFail(FileOp::kAppend, path());
    if (!fail.ok()) {
      // A write cut short: half of it reaches the file.
      const std::string_view half = data.substr(0, data.size() / 2);
      if (file_->Append(half).ok() && file_->Flush().ok()) env_->RecordAppend(path(), half.size());
      return fail;
    }
    CFX_RETURN_IF_ERROR(file_->Append(data));
    env_->RecordAppend(path(), data.size());
    return Status();
  }
  Status Flush() override {
    CFX_RETURN_IF_ERROR(env_->CheckAlive(generation_, path()));
    return file_->Flush();
  }
  Status Sync() override {
    CFX_RETURN_IF_ERROR(env_->CheckAlive(generation_, path()));
    CFX_RETURN_IF_ERROR(file_->Flush());  // what reached the OS stays there even if fsync fails
    CFX_RETURN_IF_ERROR(env_->MaybeFail(FileOp::kSync, path()));
    CFX_RETURN_IF_ERROR(file_->Sync());
    env_->RecordSync(path());
    return Status();
  }
  Status Close() override {
    if (closed_) return Status();
    closed_ = true;
    Status alive = env_->CheckAlive(generation_, path());
    Status fail = alive.ok() ? env_->MaybeFail(FileOp::kClose, path()) : Status();
    Status closed = file_->Close();
    if (!alive.ok()) return alive;
    return !fail.ok() ? fail : closed;
  }

 private:
  FaultInjectionEnv* env_;
  std::unique_ptr<WritableFile> file_;
  int64_t generation_;
  bool closed_ = false;
};

}  // namespace

void FaultInjectionEnv::SetFault(const Fault& fault) {
  std::lock_guard<std::mutex> lock(mu_);
  fault_ = fault;
  matched_ = 0;
  hit_ = false;
}

void FaultInjectionEnv::ClearFault() {
  std::lock_guard<std::mutex> lock(mu_);
  fault_.reset();
}

bool FaultInjectionEnv::fault_hit() const {
  std::lock_guard<std::mutex> lock(mu_);
  return hit_;
}

int64_t FaultInjectionEnv::calls() const {
  std::lock_guard<std::mutex> lock(mu_);
  return calls_;
}

Status FaultInjectionEnv::MaybeFail(FileOp op, const std::string& path, const std::string& other) {
  std::lock_guard<std::mutex> lock(mu_);
  ++calls_;
  if (!fault_) return Status();
  if (fault_->op && *fault_->op != op) return Status();
  const std::string& pattern = fault_->path_contains;
  if (!pattern.empty() && path.find(pattern) == std::string::npos &&
      other.find(pattern) == std::string::npos)
    return Status();
  ++matched_;
  if (matched_ < fault_->nth || (matched_ > fault_->nth && !fault_->sticky)) return Status();
  hit_ = true;
  return internal::ErrnoStatus(fault_->error, "injected fault on " + path);
}

Status FaultInjectionEnv::CheckAlive(int64_t generation, const std::string& path) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (generation == generation_) return Status();
  return errors::Aborted(path, " was open when the machine crashed");
}

void FaultInjectionEnv::RecordAppend(const std::string& path, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  written_[path].size += bytes;
}

void FaultInjectionEnv::RecordSync(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  Written& w = written_[path];
  w.synced = w.size;
}

StatusOr<std::unique_ptr<WritableFile>> FaultInjectionEnv::Open(const std::string& path,
                                                                bool append) {
  CFX_RETURN_IF_ERROR(MaybeFail(FileOp::kOpen, path));
  std::error_code ec;
  const bool existed = fs::exists(path, ec);
  auto file = append ? target()->NewAppendableFile(path) : target()->NewWritableFile(path);
  if (!file.ok()) return file.status();
  std::lock_guard<std::mutex> lock(mu_);
  Written& w = written_[path];
  w.size = w.synced = append && existed ? fs::file_size(path, ec) : 0;
  if (!existed) unsynced_[DirName(path)].push_back({Undo::kCreated, path, std::nullopt});
  // An existing file truncated here keeps nothing through a crash until synced (the harsher of
  // what a file system may show).
  return std::unique_ptr<WritableFile>(new FaultyFile(this, std::move(*file), generation_));
}

StatusOr<std::unique_ptr<WritableFile>> FaultInjectionEnv::NewWritableFile(
    const std::string& path) {
  return Open(path, false);
}

StatusOr<std::unique_ptr<WritableFile>> FaultInjectionEnv::NewAppendableFile(
    const std::string& path) {
  return Open(path, true);
}

Status FaultInjectionEnv::RenameFile(const std::string& from, const std::string& to) {
  CFX_RETURN_IF_ERROR(MaybeFail(FileOp::kRename, from, to));
  std::optional<std::string> old_to = ContentsOf(to);
  CFX_RETURN_IF_ERROR(target()->RenameFile(from, to));
  std::lock_guard<std::mutex> lock(mu_);
  auto it = written_.find(from);
  if (it != written_.end()) {
    written_[to] = it->second;
    written_.erase(from);
  } else {
    written_.erase(to);
  }
  unsynced_[DirName(to)].push_back({Undo::kReplaced, to, std::move(old_to)});
  return Status();
}

Status FaultInjectionEnv::DeleteFile(const std::string& path) {
  CFX_RETURN_IF_ERROR(MaybeFail(FileOp::kDelete, path));
  std::optional<std::string> old = ContentsOf(path);
  CFX_RETURN_IF_ERROR(target()->DeleteFile(path));
  std::lock_guard<std::mutex> lock(mu_);
  written_.erase(path);
  unsynced_[DirName(path)].push_back({Undo::kDeleted, path, std::move(old)});
  return Status();
}

Status FaultInjectionEnv::CreateDir(const std::string& dir) {
  CFX_RETURN_IF_ERROR(MaybeFail(FileOp::kCreateDir, dir));
  return target()->CreateDir(dir);
}

Status FaultInjectionEnv::SyncDir(const std::string& dir) {
  CFX_RETURN_IF_ERROR(MaybeFail(FileOp::kSyncDir, dir));
  CFX_RETURN_IF_ERROR(target()->SyncDir(dir));
  std::lock_guard<std::mutex> lock(mu_);
  unsynced_.erase(dir);
  return Status();
}

void FaultInjectionEnv::SimulateCrash() {
  std::lock_guard<std::mutex> lock(mu_);
  ++generation_;
  std::error_code ec;
  for (const auto& [path, w] : written_) {
    const auto size = fs::file_size(path, ec);
    if (!ec && size > w.synced) fs::resize_file(path, w.synced, ec);
  }
  written_.clear();
  for (auto& [dir, undos] : unsynced_) {
    for (auto it = undos.rbegin(); it != undos.rend(); ++it)
      Restore(it->path, it->kind == Undo::kCreated ? std::nullopt : it->old_contents);
  }
  unsynced_.clear();
}

}  // namespace cfx::test
