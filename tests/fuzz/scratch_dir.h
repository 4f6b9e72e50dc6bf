// ScratchDir: a private directory for the files a fuzz target hands to a reader (a checkpoint, an
// events file) or that a fuzzed graph writes (SaveV2). Created under $TMPDIR (else /tmp) when the
// target starts, emptied between inputs, removed when the process exits normally. One thread.
#ifndef CONFLUX_TESTS_FUZZ_SCRATCH_DIR_H_
#define CONFLUX_TESTS_FUZZ_SCRATCH_DIR_H_

#include <stdlib.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace cfx::fuzz {

class ScratchDir {
 public:
  // Aborts when the directory cannot be made: a fuzz target without one cannot run at all.
  explicit ScratchDir(const std::string& tag) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") +
                          "/conflux-fuzz-" + tag + "-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
      std::perror(("cannot create " + pattern).c_str());
      std::abort();
    }
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

  // Writes `bytes` to File(name), replacing it; aborts when the write fails (a full disk is not
  // a finding of the reader under test).
  std::string Write(const std::string& name, std::string_view bytes) const {
    const std::string file = File(name);
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      std::perror(("cannot write " + file).c_str());
      std::abort();
    }
    return file;
  }

  // Removes everything inside the directory, keeping the directory.
  void Clear() const {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(path_, ec))
      std::filesystem::remove_all(entry.path(), ec);
  }

 private:
  std::string path_;
};

}  // namespace cfx::fuzz

#endif  // CONFLUX_TESTS_FUZZ_SCRATCH_DIR_H_
