// sdk::WritableFile: a file a kernel writes through the host's file system (the runtime's Env),
// opened with KernelContext::OpenFile. Owns its host handle: the destructor closes it, ignoring
// errors; call Close to see them. Used by one thread at a time.
#ifndef CONFLUX_SDK_FILE_H_
#define CONFLUX_SDK_FILE_H_

#include <string_view>
#include <utility>

#include "conflux/sdk/status.h"

namespace cfx::sdk {

class WritableFile {
 public:
  explicit WritableFile(cfx_file* f) : f_(f) {}
  WritableFile(WritableFile&& o) noexcept : f_(std::exchange(o.f_, nullptr)) {}
  WritableFile& operator=(WritableFile&& o) noexcept {
    if (this != &o) {
      (void)Close();
      f_ = std::exchange(o.f_, nullptr);
    }
    return *this;
  }
  WritableFile(const WritableFile&) = delete;
  WritableFile& operator=(const WritableFile&) = delete;
  ~WritableFile() { (void)Close(); }

  Status Append(std::string_view data) {
    if (f_ == nullptr) return Status(CFX_FAILED_PRECONDITION, "the file is closed");
    HostStatus s;
    Host().kernel->file_append(f_, data.data(), data.size(), s.get());
    return s.ToStatus();
  }
  // Makes what was appended durable (fsync).
  Status Sync() {
    if (f_ == nullptr) return Status(CFX_FAILED_PRECONDITION, "the file is closed");
    HostStatus s;
    Host().kernel->file_sync(f_, s.get());
    return s.ToStatus();
  }
  // Closes the file (once; later calls return OK).
  Status Close() {
    if (f_ == nullptr) return Status();
    HostStatus s;
    Host().kernel->file_close(std::exchange(f_, nullptr), s.get());
    return s.ToStatus();
  }

 private:
  cfx_file* f_;
};

}  // namespace cfx::sdk

#endif  // CONFLUX_SDK_FILE_H_
