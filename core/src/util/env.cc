// Env::Default (POSIX), DirName, TemporaryFileName and WriteFileAtomically (see conflux/env.h).
#include "conflux/env.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <random>

#include "util/file.h"

namespace cfx {
namespace {

using internal::ErrnoStatus;

// A file descriptor with a buffer of the process; large appends go straight to write(2).
class PosixWritableFile : public WritableFile {
 public:
  PosixWritableFile(std::string path, int fd) : WritableFile(std::move(path)), fd_(fd) {}
  ~PosixWritableFile() override { (void)Close(); }

  Status Append(std::string_view data) override {
    if (fd_ < 0) return Closed();
    if (buffer_.size() + data.size() <= kBufferSize) {
      buffer_.append(data);
      return Status();
    }
    CFX_RETURN_IF_ERROR(Flush());
    if (data.size() <= kBufferSize) {
      buffer_.assign(data);
      return Status();
    }
    return WriteAll(data);
  }

  Status Flush() override {
    if (fd_ < 0) return Closed();
    Status s = WriteAll(buffer_);
    buffer_.clear();
    return s;
  }

  Status Sync() override {
    CFX_RETURN_IF_ERROR(Flush());
    if (::fsync(fd_) != 0) return ErrnoStatus(errno, "cannot sync " + path());
    return Status();
  }

  Status Close() override {
    if (fd_ < 0) return Status();
    Status s = Flush();
    if (::close(fd_) != 0 && s.ok()) s = ErrnoStatus(errno, "cannot close " + path());
    fd_ = -1;
    return s;
  }

 private:
  static constexpr size_t kBufferSize = 1 << 16;

  Status Closed() const { return errors::FailedPrecondition(path(), " is closed"); }

  Status WriteAll(std::string_view data) {
    const char* p = data.data();
    size_t n = data.size();
    while (n > 0) {
      ssize_t w = ::write(fd_, p, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus(errno, "cannot write " + path());
      }
      p += w;
      n -= static_cast<size_t>(w);
    }
    return Status();
  }

  int fd_;
  std::string buffer_;
};

class PosixEnv : public Env {
 public:
  StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    return Open(path, O_TRUNC);
  }
  StatusOr<std::unique_ptr<WritableFile>> NewAppendableFile(const std::string& path) override {
    return Open(path, O_APPEND);
  }

  Status RenameFile(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0)
      return ErrnoStatus(errno, "cannot rename " + from + " to " + to);
    return Status();
  }

  Status DeleteFile(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return ErrnoStatus(errno, "cannot delete " + path);
    return Status();
  }

  Status CreateDir(const std::string& dir) override {
    for (size_t i = 1; i <= dir.size(); ++i) {
      if (i != dir.size() && dir[i] != '/') continue;
      const std::string part = dir.substr(0, i);
      if (::mkdir(part.c_str(), 0777) == 0 || errno == EEXIST) continue;
      return ErrnoStatus(errno, "cannot create directory " + part);
    }
    return Status();
  }

  Status SyncDir(const std::string& dir) override {
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return ErrnoStatus(errno, "cannot open directory " + dir);
    const int rc = ::fsync(fd);
    const int err = errno;
    ::close(fd);
    if (rc != 0) return ErrnoStatus(err, "cannot sync directory " + dir);
    return Status();
  }

 private:
  static StatusOr<std::unique_ptr<WritableFile>> Open(const std::string& path, int mode) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | mode, 0666);
    if (fd < 0) return ErrnoStatus(errno, "cannot open " + path + " for writing");
    return std::unique_ptr<WritableFile>(new PosixWritableFile(path, fd));
  }
};

}  // namespace

Env* Env::Default() {
  static Env* env = new PosixEnv;
  return env;
}

std::string DirName(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string TemporaryFileName(const std::string& path) {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t process_id = [] {
    std::random_device rd;
    return (static_cast<uint64_t>(rd()) << 32) ^ rd() ^ static_cast<uint64_t>(::getpid());
  }();
  char tail[48];
  std::snprintf(tail, sizeof(tail), ".tmp.%016llx.%llu",
                static_cast<unsigned long long>(process_id),
                static_cast<unsigned long long>(counter.fetch_add(1)));
  return path + tail;
}

Status WriteFileAtomically(Env* env, const std::string& path, std::string_view data) {
  const std::string tmp = TemporaryFileName(path);
  auto written = [&]() -> Status {
    CFX_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, env->NewWritableFile(tmp));
    CFX_RETURN_IF_ERROR(file->Append(data));
    CFX_RETURN_IF_ERROR(file->Sync());
    CFX_RETURN_IF_ERROR(file->Close());
    return env->RenameFile(tmp, path);
  }();
  if (!written.ok()) {
    (void)env->DeleteFile(tmp);
    return written.WithPrefix("writing " + path + ": ");
  }
  Status synced = env->SyncDir(DirName(path));
  if (!synced.ok()) return synced.WithPrefix("writing " + path + ": ");
  return Status();
}

}  // namespace cfx
