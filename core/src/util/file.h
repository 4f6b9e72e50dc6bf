// Whole-file reads and writes with errors that name the file (internal).
#ifndef CONFLUX_CORE_SRC_UTIL_FILE_H_
#define CONFLUX_CORE_SRC_UTIL_FILE_H_

#include <string>
#include <string_view>

#include "conflux/status.h"

namespace cfx::internal {

// The status for a failed system call: NotFound for a missing file, PermissionDenied for
// access, ResourceExhausted for a full disk or quota, Unavailable otherwise; the message is
// "what: strerror(err)".
Status ErrnoStatus(int err, const std::string& what);

// The bytes of `path`. InvalidArgument for a directory, an errno status when it cannot be
// opened, DataLoss on a read error; messages start with the path.
StatusOr<std::string> ReadFileToString(const std::string& path);
// Replaces `path` with `data` through Env::Default() (not atomically: for exports a reader
// does not depend on). Errors name the path.
Status WriteStringToFile(const std::string& path, std::string_view data);

}  // namespace cfx::internal

#endif  // CONFLUX_CORE_SRC_UTIL_FILE_H_
