// What the example programs share: the progress bar's pieces, the runtime from --config and
// the task a process runs.
#ifndef CONFLUX_EXAMPLES_COMMON_CONSOLE_H_
#define CONFLUX_EXAMPLES_COMMON_CONSOLE_H_

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "conflux/config.h"
#include "conflux/runtime.h"

namespace examples {

// "#####....." for `fraction` (0..1) of `width` characters.
inline std::string Bar(double fraction, int width) {
  const int full = static_cast<int>(fraction * width);
  return std::string(full, '#') + std::string(width - full, '.');
}

// h:mm:ss.
inline std::string Duration(double seconds) {
  const int s = static_cast<int>(seconds);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60);
  return buf;
}

// The runtime of the config file `path`, or of the built-in default config when it is empty.
inline cfx::StatusOr<std::unique_ptr<cfx::Runtime>> RuntimeFromConfig(const std::string& path) {
  auto config = path.empty() ? cfx::StatusOr<cfx::Config>(cfx::Config::Default())
                             : cfx::Config::FromFile(path);
  if (!config.ok()) return config.status();
  return cfx::Runtime::Create(*config);
}

// The index of the task this process runs ("/job:worker/replica:0/task:1" -> 1; 0 without a
// cluster).
inline int TaskIndex(const cfx::Runtime& runtime) {
  const std::string& task = runtime.task_name();
  return std::atoi(task.substr(task.rfind(':') + 1).c_str());
}

}  // namespace examples

#endif  // CONFLUX_EXAMPLES_COMMON_CONSOLE_H_
