// Replays inputs through a fuzz target's LLVMFuzzerTestOneInput without libFuzzer, so that the
// ordinary test build (any compiler, with or without sanitizers) runs the seed and regression
// corpora: `<target>_replay PATH...`, where each PATH is a file or a directory whose regular
// files are all replayed (sorted by name, so that runs are repeatable). A crash or a sanitizer
// report fails the process on the input that caused it, which is printed before it runs.
//
// Exit status: 0 when every input returned, 2 for a usage error or a path that cannot be read.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
// Targets that load plugins first define it; the others leave it undefined (a null address).
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);

namespace {

namespace fs = std::filesystem;

// Appends the inputs that `path` names to `out`; false (with a message) when it cannot be read.
bool CollectInputs(const fs::path& path, std::vector<fs::path>* out) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    std::vector<fs::path> files;
    for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec))
      if (it->is_regular_file(ec)) files.push_back(it->path());
    if (ec) {
      std::fprintf(stderr, "replay: cannot list %s: %s\n", path.c_str(), ec.message().c_str());
      return false;
    }
    std::sort(files.begin(), files.end());
    out->insert(out->end(), files.begin(), files.end());
    return true;
  }
  if (fs::is_regular_file(path, ec)) {
    out->push_back(path);
    return true;
  }
  std::fprintf(stderr, "replay: %s is neither a file nor a directory\n", path.c_str());
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE_OR_DIRECTORY...\n", argv[0]);
    return 2;
  }
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i)
    if (!CollectInputs(argv[i], &inputs)) return 2;
  if (LLVMFuzzerInitialize != nullptr) LLVMFuzzerInitialize(&argc, &argv);
  for (const fs::path& input : inputs) {
    std::ifstream file(input, std::ios::binary);
    const std::vector<char> bytes{std::istreambuf_iterator<char>(file),
                                  std::istreambuf_iterator<char>()};
    if (!file.good() && !file.eof()) {
      std::fprintf(stderr, "replay: cannot read %s\n", input.c_str());
      return 2;
    }
    std::fprintf(stderr, "replay: %s (%zu bytes)\n", input.c_str(), bytes.size());
    // Like libFuzzer, hand the target a heap buffer of exactly the input's size (a valid pointer
    // even when empty), so that a read past the end is a sanitizer report.
    const std::unique_ptr<uint8_t[]> data(new uint8_t[bytes.size()]);
    std::copy(bytes.begin(), bytes.end(), data.get());
    LLVMFuzzerTestOneInput(data.get(), bytes.size());
  }
  std::fprintf(stderr, "replay: %zu inputs, all returned\n", inputs.size());
  return 0;
}
