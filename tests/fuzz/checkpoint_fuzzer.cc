// libFuzzer target: a checkpoint file (docs/checkpoint-format.md) restored through RestoreV2 on
// the CPU plugin, the kernel Saver::Restore runs. Every input must end in tensors or an error
// status: never a crash, a hang or an allocation beyond the device's memory_limit.
//
// Input: one mode byte, then the file. With the mode's low bit set, the checksums the file's own
// footer and index point at (header, footer, index, every payload the index locates) are
// recomputed before the file is written, so that mutations get past the checksums to the index
// and payload checks; with it clear the bytes are written as they are. The tensors are those the
// index names (its records walked leniently, at most kMaxTensors), each with the dtype it
// declares: first all in one RestoreV2, as Saver::Restore asks, then each alone, so that one bad
// tensor does not hide the others.
#include <google/protobuf/stubs/logging.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "conflux/kernel_runner.h"
#include "conflux/runtime.h"
#include "conflux/sdk/crc32c.h"
#include "fuzz_runtime.h"
#include "kernels/checkpoint_format.h"
#include "scratch_dir.h"

namespace cfx::fuzz {
namespace {

namespace format = cpu::checkpoint;

constexpr size_t kMaxTensors = 16;

struct Wanted {
  std::string name;
  DataType dtype = DT_FLOAT;
};

void PutU32At(std::string* file, size_t at, uint32_t v) {
  std::string bytes;
  format::PutU32(&bytes, v);
  file->replace(at, 4, bytes);
}

// The names and dtypes of the index records in file[begin, end), read as far as they are whole
// (a reader of the format would stop at the first bad one; this walk only picks what to ask for).
// With `repair`, each record's payload checksum becomes that of the bytes it locates, when they
// lie inside the file.
std::vector<Wanted> WalkIndex(std::string* file, size_t begin, size_t end, bool repair) {
  std::vector<Wanted> wanted;
  size_t pos = begin + 8;  // the record count: the walk goes by the bytes instead
  auto has = [&](uint64_t n) { return pos <= end && n <= end - pos; };
  while (wanted.size() < kMaxTensors && has(4)) {
    const uint32_t name_length = format::GetU32(file->data() + pos);
    pos += 4;
    if (!has(uint64_t{name_length} + 8)) break;
    Wanted w;
    w.name = file->substr(pos, name_length);
    pos += name_length;
    const uint32_t dtype = format::GetU32(file->data() + pos);
    const uint32_t rank = format::GetU32(file->data() + pos + 4);
    pos += 8;
    if (!has(uint64_t{rank} * 8 + 20)) break;
    pos += size_t{rank} * 8;
    const uint64_t offset = format::GetU64(file->data() + pos);
    const uint64_t length = format::GetU64(file->data() + pos + 8);
    if (repair && offset <= file->size() && length <= file->size() - offset)
      PutU32At(file, pos + 16, sdk::Crc32c(file->data() + offset, length));
    pos += 20;
    // A dtype the enum lacks cannot be an attr value; the reader refuses it as the file's anyway.
    w.dtype = IsValidDataType(static_cast<int>(dtype)) ? static_cast<DataType>(dtype) : DT_FLOAT;
    wanted.push_back(std::move(w));
  }
  return wanted;
}

// Picks the tensors to restore and, with `repair`, recomputes the checksums (payloads and index
// first: the footer's checksum covers the index's).
std::vector<Wanted> Prepare(std::string* file, bool repair) {
  const size_t size = file->size();
  if (size < format::kHeaderSize + format::kFooterSize) return {};
  if (repair) PutU32At(file, 28, sdk::Crc32c(file->data(), 28));
  const size_t footer = size - format::kFooterSize;
  const uint64_t index_offset = format::GetU64(file->data() + footer);
  const uint64_t index_length = format::GetU64(file->data() + footer + 8);
  if (index_offset > footer || index_length > footer - index_offset) return {};
  std::vector<Wanted> wanted = WalkIndex(file, index_offset, index_offset + index_length, repair);
  if (repair) {
    PutU32At(file, footer + 16, sdk::Crc32c(file->data() + index_offset, index_length));
    PutU32At(file, footer + 20, sdk::Crc32c(file->data() + footer, 20));
  }
  return wanted;
}

Tensor StringVector(const std::vector<std::string>& values) {
  Tensor t(DT_STRING, TensorShape({static_cast<int64_t>(values.size())}));
  for (size_t i = 0; i < values.size(); ++i) t.at<std::string>(i) = values[i];
  return t;
}

// Runs one RestoreV2 of `wanted` from `prefix`; its outputs and status are dropped.
void Restore(const Runtime& runtime, Device* cpu, const std::string& prefix,
             const std::vector<Wanted>& wanted) {
  NodeDef node;
  node.name = "restore";
  node.op = "RestoreV2";
  node.input = {"prefix", "tensor_names", "shape_and_slices"};
  std::vector<std::string> names;
  std::vector<DataType> dtypes;
  for (const Wanted& w : wanted) {
    names.push_back(w.name);
    dtypes.push_back(w.dtype);
  }
  node.attr["dtypes"] = AttrValue::TypeList(dtypes);
  Tensor prefix_tensor(DT_STRING, TensorShape());
  prefix_tensor.at<std::string>(0) = prefix;
  (void)RunKernelOnce(
      runtime, cpu, node,
      {prefix_tensor, StringVector(names), StringVector(std::vector<std::string>(names.size()))});
}

struct Harness {
  std::unique_ptr<Runtime> runtime;
  Device* cpu = nullptr;
};

Harness& TheHarness() {
  static Harness* harness = [] {
    google::protobuf::SetLogHandler(nullptr);
    auto* h = new Harness;
    h->runtime = CreateRuntimeOrDie(CpuOnlyFuzzConfig(), "checkpoint_fuzzer");
    h->cpu = h->runtime->FindDevice("CPU:0").value();
    return h;
  }();
  return *harness;
}

}  // namespace
}  // namespace cfx::fuzz

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)cfx::fuzz::TheHarness();  // loads the plugin before coverage is counted
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cfx::fuzz;
  if (size == 0) return 0;
  Harness& h = TheHarness();
  static const ScratchDir dir("checkpoint");
  std::string file(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::vector<Wanted> wanted = Prepare(&file, (data[0] & 1) != 0);
  dir.Write(std::string("ckpt") + format::kFileSuffix, file);
  const std::string prefix = dir.File("ckpt");
  if (wanted.empty()) wanted.push_back({"tensor", cfx::DT_FLOAT});
  Restore(*h.runtime, h.cpu, prefix, wanted);
  if (wanted.size() > 1)
    for (const Wanted& w : wanted) Restore(*h.runtime, h.cpu, prefix, {w});
  return 0;
}
