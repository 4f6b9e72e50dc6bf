// libFuzzer target: the plugin loader's checks of a file before the dynamic loader maps it
// (core/src/plugin/elf_check.h: ELF identification, class, byte order, type, machine, the
// program and section header tables and every segment inside the file). The bytes are checked
// in memory and, written to a file, as the loader checks a plugin's path; both must end in the
// same status, and neither in a crash, a hang or a read past the bytes.
//
// The dynamic loader itself is not run: a file that passes is mapped and its initialisers run
// by glibc, which trusts it as code (docs/security.md, "Plugins: native code, full trust").
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "plugin/elf_check.h"
#include "scratch_dir.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const cfx::fuzz::ScratchDir scratch("plugin_file");
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const std::string who = "plugin 'fuzz'";
  const cfx::Status in_memory = cfx::internal::CheckSharedObjectBytes(bytes, who);
  const cfx::Status on_disk =
      cfx::internal::CheckSharedObjectFile(scratch.Write("libconflux_fuzz.so", bytes), who);
  if (in_memory.ToString() != on_disk.ToString()) {
    std::fprintf(stderr, "in memory: %s\non disk:   %s\n", in_memory.ToString().c_str(),
                 on_disk.ToString().c_str());
    std::abort();
  }
  return 0;
}
