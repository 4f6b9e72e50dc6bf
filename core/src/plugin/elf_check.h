// The plugin loader's checks of a file before the dynamic loader maps it: an ELF shared object
// of this process's class, byte order and machine, whose header tables and segments lie inside
// the file. The dynamic loader maps a segment without comparing it with the file's size, and a
// page past the end of the file raises SIGBUS when read: a plugin truncated by an interrupted
// copy would kill the process instead of failing to load. Stateless; thread-safe.
#ifndef CONFLUX_CORE_SRC_PLUGIN_ELF_CHECK_H_
#define CONFLUX_CORE_SRC_PLUGIN_ELF_CHECK_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "conflux/status.h"

namespace cfx::internal {

// Reads `n` bytes at `offset` into `out`; false when they are not all there.
using ReadAt = std::function<bool(uint64_t offset, size_t n, char* out)>;

// Checks the file of `file_size` bytes that `read` reads. OK, or InvalidArgument prefixed with
// `who`: no ELF header; another class, byte order or machine (naming it and this process's);
// not a shared object (a relocatable object, an executable, a core file); header tables or a
// segment past the end of the file (naming the segment, its bytes and the file's size).
Status CheckSharedObject(const ReadAt& read, uint64_t file_size, const std::string& who);

// The same for bytes in memory (the whole file).
Status CheckSharedObjectBytes(std::string_view bytes, const std::string& who);

// The same for the file at `path`: NotFound when it does not exist, InvalidArgument when it is
// not a regular file or cannot be read.
Status CheckSharedObjectFile(const std::string& path, const std::string& who);

}  // namespace cfx::internal

#endif  // CONFLUX_CORE_SRC_PLUGIN_ELF_CHECK_H_
