// Process-wide logging to stderr with a level threshold (set from the config's logging.level).
// Thread-safe.
#ifndef CONFLUX_CORE_SRC_PLUGIN_LOG_H_
#define CONFLUX_CORE_SRC_PLUGIN_LOG_H_

#include <string>

namespace cfx::internal {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

void SetLogLevel(LogLevel level);
// Parses "debug", "info", "warning", "error"; false when unknown.
bool ParseLogLevel(const std::string& name, LogLevel* out);
void LogMessage(LogLevel level, const std::string& message);

}  // namespace cfx::internal

#endif  // CONFLUX_CORE_SRC_PLUGIN_LOG_H_
