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
cfx_status* StatusNew() { return new cfx_status(); }
void StatusDelete(cfx_status* s) { delete s; }

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
