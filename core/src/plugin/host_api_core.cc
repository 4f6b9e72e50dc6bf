// The core table of the host API (cfx_host_core_api): status objects and logging.
#include "plugin/abi_types.h"
#include "plugin/host_api_tables.h"
#include "util/log.h"

namespace cfx::internal {
namespace {

void StatusSet(cfx_status* s, cfx_code code, const char* message) {
  s->status = Status(static_cast<Code>(code), message ? message : "");
}
cfx_code StatusCode(const cfx_status* s) { return static_cast<cfx_code>(s->status.code()); }
const char* StatusMessage(const cfx_status* s) { return s->status.message().c_str(); }
// Plugins make a status object for many calls that succeed (a kernel's output allocation, a
// variable's lookup): each thread keeps a few deleted ones, OK again, for its next ones.
// After the thread's spares are destroyed (a thread_local destroyed after them may still use
// status objects) count_ is -1 and objects are plain new and delete.
class StatusSpares {
 public:
  ~StatusSpares() {
    for (int i = 0; i < count_; ++i) delete spares_[i];
    count_ = -1;
  }
  cfx_status* Take() { return count_ > 0 ? spares_[--count_] : new cfx_status(); }
  void Give(cfx_status* s) {
    if (count_ < 0 || count_ == kMax) {
      delete s;
      return;
    }
    s->status = Status();
    spares_[count_++] = s;
  }

 private:
  static constexpr int kMax = 8;
  cfx_status* spares_[kMax] = {};
  int count_ = 0;
};
thread_local StatusSpares status_spares;

cfx_status* StatusNew() { return status_spares.Take(); }
void StatusDelete(cfx_status* s) {
  if (s != nullptr) status_spares.Give(s);
}

void Log(cfx_log_level level, const char* message) {
  LogMessage(static_cast<LogLevel>(level), message ? message : "");
}

}  // namespace

void SetError(cfx_status* s, Status error) {
  if (s != nullptr) s->status = std::move(error);
}

const cfx_host_core_api* HostCoreApi() {
  return StaticTable<cfx_host_core_api>([](cfx_host_core_api* a) {
    a->status_set = StatusSet;
    a->status_code = StatusCode;
    a->status_message = StatusMessage;
    a->status_new = StatusNew;
    a->status_delete = StatusDelete;
    a->log = Log;
  });
}

}  // namespace cfx::internal
