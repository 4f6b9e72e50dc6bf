// libFuzzer target: a SavedModel from fuzzed bytes, loaded. The bytes are written as
// `saved_model.pb` into a scratch folder and SavedModel::Load reads them on a Runtime with the
// CPU and ops-nn plugins, a device memory_limit and the config's graph limits: the MetaGraphDef
// chosen by tags ({"serve"}, or the tags of the first MetaGraphDef the bytes hold), its graph and
// function library, its signatures, the restore op (no variables: the folder holds none) and the
// init op, each step under a timeout; then each signature is asked for with no inputs. Every
// input must end in a model or an error status: never a crash, a hang past the timeout, or an
// allocation beyond the limits. The seeds are SavedModels TensorFlow 2.21 exported
// (tests/fixtures/savedmodel/).
#include <google/protobuf/stubs/logging.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <set>
#include <string>

#include "conflux/runtime.h"
#include "conflux/saved_model.h"
#include "fuzz_runtime.h"
#include "scratch_dir.h"

namespace cfx::fuzz {
namespace {

constexpr int64_t kStepTimeoutMs = 2000;

struct Harness {
  std::unique_ptr<ScratchDir> dir;
  std::unique_ptr<Runtime> runtime;
};

Harness& TheHarness() {
  static Harness* harness = [] {
    google::protobuf::SetLogHandler(nullptr);
    auto* h = new Harness;
    h->dir = std::make_unique<ScratchDir>("saved_model");
    Config config = FuzzConfig();
    SetGraphLimits(&config, int64_t{4} << 20, 20000);
    h->runtime = CreateRuntimeOrDie(config, "saved_model_fuzzer");
    return h;
  }();
  return *harness;
}

}  // namespace
}  // namespace cfx::fuzz

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)cfx::fuzz::TheHarness();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cfx;
  fuzz::Harness& h = fuzz::TheHarness();
  h.dir->Write("saved_model.pb",
               std::string_view(reinterpret_cast<const char*>(data), size));
  SavedModel::Options options;
  options.run_options.timeout_ms = fuzz::kStepTimeoutMs;
  std::set<std::string> tags = {SavedModel::kServe};
  auto sets = SavedModelTagSets(h.dir->path());
  if (sets.ok() && !sets->empty() && !sets->front().count(SavedModel::kServe)) tags = sets->front();
  auto model = SavedModel::Load(h.runtime.get(), h.dir->path(), tags, options);
  if (!model.ok()) return 0;
  for (const auto& [key, sig] : (*model)->signatures()) (void)(*model)->Run(key, {});
  return 0;
}
