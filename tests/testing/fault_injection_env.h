// FaultInjectionEnv: an Env over the real file system that fails chosen calls and simulates a
// machine crash (after LevelDB's fault-injection test Env).
//
// Faults: the n-th call (counted from when the fault is set) of a kind, on a path containing a
// pattern, fails with an errno (EIO, ENOSPC, ...); a failing Append first writes half of its data,
// as a write(2) cut short by a full disk does. A sticky fault fails every matching call from then
// on (a disk that stays full).
//
// Crash: SimulateCrash() drops what a power loss drops — each file's bytes after its last Sync,
// and every file creation, rename and deletion not followed by a SyncDir of its folder (the
// overwritten or deleted file comes back) — and makes the files opened before it fail.
//
// Thread-safe.
#ifndef CONFLUX_TESTS_TESTING_FAULT_INJECTION_ENV_H_
#define CONFLUX_TESTS_TESTING_FAULT_INJECTION_ENV_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "conflux/env.h"

namespace cfx::test {

enum class FileOp { kOpen, kAppend, kSync, kClose, kRename, kDelete, kCreateDir, kSyncDir };

struct Fault {
  std::optional<FileOp> op;   // none: every kind of call counts
  std::string path_contains;  // "" matches every path (a rename matches on either path)
  int64_t nth = 1;            // the n-th matching call fails (1: the next one)
  int error = 5;              // errno; 5 is EIO
  bool sticky = false;        // every matching call from the n-th on fails
};

class FaultInjectionEnv : public EnvWrapper {
 public:
  FaultInjectionEnv() : EnvWrapper(Env::Default()) {}

  // Replaces the fault (one at a time); ClearFault removes it.
  void SetFault(const Fault& fault);
  void ClearFault();
  // True once the current fault has failed a call.
  bool fault_hit() const;
  // Calls made through this Env so far (of every kind).
  int64_t calls() const;

  // Drops what was not made durable (see the file comment); files opened before fail after.
  void SimulateCrash();

  StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override;
  StatusOr<std::unique_ptr<WritableFile>> NewAppendableFile(const std::string& path) override;
  Status RenameFile(const std::string& from, const std::string& to) override;
  Status DeleteFile(const std::string& path) override;
  Status CreateDir(const std::string& dir) override;
  Status SyncDir(const std::string& dir) override;

  // For the files' wrappers: a failure when the fault picks this call.
  Status MaybeFail(FileOp op, const std::string& path, const std::string& other = "");
  // What a file opened in `generation` may still do; a crash ends a generation.
  Status CheckAlive(int64_t generation, const std::string& path) const;
  void RecordAppend(const std::string& path, uint64_t bytes);
  void RecordSync(const std::string& path);

 private:
  // A change to a folder's entries that a crash undoes until the folder is synced.
  struct Undo {
    enum Kind { kCreated, kReplaced, kDeleted } kind;
    std::string path;
    std::optional<std::string> old_contents;  // kReplaced, kDeleted: what `path` held
  };
  // Bytes of a file written through this Env: appended so far and made durable.
  struct Written {
    uint64_t size = 0, synced = 0;
  };
  StatusOr<std::unique_ptr<WritableFile>> Open(const std::string& path, bool append);

  mutable std::mutex mu_;
  std::optional<Fault> fault_;
  int64_t matched_ = 0;
  bool hit_ = false;
  int64_t calls_ = 0;
  int64_t generation_ = 0;
  std::map<std::string, Written> written_;
  std::map<std::string, std::vector<Undo>> unsynced_;  // by folder, oldest first
};

}  // namespace cfx::test

#endif  // CONFLUX_TESTS_TESTING_FAULT_INJECTION_ENV_H_
