// Logging to stderr.
#include "util/log.h"

#include <atomic>
#include <cstdio>
#include <mutex>

namespace cfx::internal {
namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::kWarning)};
std::mutex g_mu;
}  // namespace

void SetLogLevel(LogLevel level) { g_level.store(static_cast<int>(level)); }

bool ParseLogLevel(const std::string& name, LogLevel* out) {
  static const char* kNames[] = {"debug", "info", "warning", "error"};
  for (int i = 0; i < 4; ++i)
    if (name == kNames[i]) {
      *out = static_cast<LogLevel>(i);
      return true;
    }
  return false;
}

void LogMessage(LogLevel level, const std::string& message) {
  if (static_cast<int>(level) < g_level.load()) return;
  static const char* kTags[] = {"D", "I", "W", "E"};
  std::lock_guard<std::mutex> lock(g_mu);
  std::fprintf(stderr, "conflux %s: %s\n", kTags[static_cast<int>(level)], message.c_str());
}

}  // namespace cfx::internal
