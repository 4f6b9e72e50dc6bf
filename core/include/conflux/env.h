// Env: the one seam through which the runtime writes files — checkpoints (SaveV2, the Saver's
// index and state file), TensorBoard events files, traces and exported graphs. Env::Default() is
// the POSIX file system; a test wraps it (EnvWrapper) to fail writes, syncs and renames at
// chosen points or to drop what was never synced, as after a power loss.
//
//   Env* env = runtime->env();
//   CFX_RETURN_IF_ERROR(WriteFileAtomically(env, "ckpt/checkpoint", text));
//
// Every error names the file. A full disk (ENOSPC, EDQUOT, EFBIG) is ResourceExhausted.
// Thread-safety: an Env's methods may run concurrently; one WritableFile is used by one thread
// at a time.
#ifndef CONFLUX_ENV_H_
#define CONFLUX_ENV_H_

#include <memory>
#include <string>
#include <string_view>

#include "conflux/status.h"

namespace cfx {

// A file open for sequential writing. Close (or the destructor, which ignores errors) releases
// it; after a failed call the file's contents past the last successful Sync are unspecified.
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  // Appends `data` (possibly only to a buffer of the process).
  virtual Status Append(std::string_view data) = 0;
  // Hands what was appended to the operating system: it survives the process, not the machine.
  virtual Status Flush() = 0;
  // Flushes, then makes the contents durable (fsync).
  virtual Status Sync() = 0;
  // Flushes and closes; later calls fail.
  virtual Status Close() = 0;
  const std::string& path() const { return path_; }

 protected:
  explicit WritableFile(std::string path) : path_(std::move(path)) {}

 private:
  std::string path_;
};

class Env {
 public:
  virtual ~Env() = default;
  // The process's POSIX file system; never deleted.
  static Env* Default();

  // Creates `path`, or truncates it when it exists.
  virtual StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) = 0;
  // Opens `path` for appending, creating it when missing.
  virtual StatusOr<std::unique_ptr<WritableFile>> NewAppendableFile(const std::string& path) = 0;
  // Renames `from` over `to` atomically (rename(2)); durable once the folder is synced.
  virtual Status RenameFile(const std::string& from, const std::string& to) = 0;
  // NotFound when `path` does not exist.
  virtual Status DeleteFile(const std::string& path) = 0;
  // Creates `dir` and its missing parents; OK when it exists.
  virtual Status CreateDir(const std::string& dir) = 0;
  // Makes the folder's entries (files created, renamed or deleted in it) durable.
  virtual Status SyncDir(const std::string& dir) = 0;
};

// An Env that forwards every call to another (which must outlive it): tests override the calls
// they intercept.
class EnvWrapper : public Env {
 public:
  explicit EnvWrapper(Env* target) : target_(target) {}
  Env* target() const { return target_; }
  StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    return target_->NewWritableFile(path);
  }
  StatusOr<std::unique_ptr<WritableFile>> NewAppendableFile(const std::string& path) override {
    return target_->NewAppendableFile(path);
  }
  Status RenameFile(const std::string& from, const std::string& to) override {
    return target_->RenameFile(from, to);
  }
  Status DeleteFile(const std::string& path) override { return target_->DeleteFile(path); }
  Status CreateDir(const std::string& dir) override { return target_->CreateDir(dir); }
  Status SyncDir(const std::string& dir) override { return target_->SyncDir(dir); }

 private:
  Env* target_;
};

// The folder of `path` ("." when it names none).
std::string DirName(const std::string& path);

// Replaces `path` with `data` so that a crash at any moment leaves either the old file or the
// new one, complete: writes `path.tmp.<unique>` in the same folder, syncs and closes it, renames
// it over `path`, then syncs the folder. On failure the temporary file is deleted (best effort)
// and the old file is untouched; the error names the file and the step that failed.
Status WriteFileAtomically(Env* env, const std::string& path, std::string_view data);

// A name for a temporary file beside `path`, unique in the process and across processes.
std::string TemporaryFileName(const std::string& path);

}  // namespace cfx

#endif  // CONFLUX_ENV_H_
