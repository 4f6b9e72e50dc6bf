// libFuzzer target: a checkpoint (docs/checkpoint-format.md) restored through RestoreV2 on the
// CPU, the kernel Saver::Restore runs. Every input must end in tensors or an error status: never
// a crash, a hang or an allocation beyond the device's memory_limit.
//
// Input: one mode byte, then the checkpoint. With the mode's bit 1 set it is a tensor bundle: a
// little-endian u32 n, n bytes of `<prefix>.index`, and the rest is `<prefix>.data-00000-of-00001`;
// with the low bit also set, the checksums of the index's blocks (found through its footer and
// index block) and of every numeric tensor are recomputed, and the table rebuilt, so that
// mutations reach the entries' checks. With bit 1 clear it is one earlier-format file
// `<prefix>.cfxckpt`. With the mode's low bit set, the checksums the file's own
// footer and index point at (header, footer, index, every payload the index locates) are
// recomputed before the file is written, so that mutations get past the checksums to the index
// and payload checks; with it clear the bytes are written as they are. The tensors are those the
// index names (its records walked leniently, at most kMaxTensors), each with the dtype it
// declares: first all in one RestoreV2, as Saver::Restore asks, then each alone, so that one bad
// tensor does not hide the others.
#include <google/protobuf/stubs/logging.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "conflux/kernel_runner.h"
#include "conflux/runtime.h"
#include "conflux/sdk/crc32c.h"
#include "fuzz_runtime.h"
#include "proto/tensor_bundle.pb.h"
#include "checkpoint/tensor_bundle.h"
#include "scratch_dir.h"

namespace cfx::fuzz {
namespace {

// The earlier format's layout (docs/checkpoint-format.md, "The earlier format").
namespace format {
constexpr char kFileSuffix[] = ".cfxckpt";
constexpr size_t kHeaderSize = 32, kFooterSize = 32;
void PutU32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
uint32_t GetU32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}
uint64_t GetU64(const char* p) {
  return GetU32(p) | static_cast<uint64_t>(GetU32(p + 4)) << 32;
}
}  // namespace format

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

uint32_t MaskCrc(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

bool ReadVarint(const std::string& s, size_t* pos, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift < 64 && *pos < s.size(); shift += 7) {
    const uint64_t b = static_cast<uint8_t>(s[(*pos)++]);
    *v |= (b & 0x7F) << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

// Recomputes the trailer of the block at (offset, size) of `index`, when it lies inside.
void RepairBlock(std::string* index, uint64_t offset, uint64_t size) {
  if (offset > index->size() || size > index->size() - offset || index->size() - offset - size < 5)
    return;
  uint32_t crc = sdk::Crc32c(index->data() + offset, size + 1);  // contents + type byte
  PutU32At(index, offset + size + 1, MaskCrc(crc));
}

// Picks the tensors of a bundle to restore and, with `repair`, recomputes its checksums.
std::vector<Wanted> PrepareBundle(std::string* index, const std::string& data, bool repair) {
  std::vector<Wanted> wanted;
  if (repair && index->size() >= 48) {
    size_t pos = index->size() - 48;
    uint64_t mo, ms, io, is;
    if (ReadVarint(*index, &pos, &mo) && ReadVarint(*index, &pos, &ms) &&
        ReadVarint(*index, &pos, &io) && ReadVarint(*index, &pos, &is)) {
      RepairBlock(index, io, is);
      // The data blocks: the index block's values are their handles.
      if (io <= index->size() && is <= index->size() - io && is >= 4) {
        const uint32_t restarts = format::GetU32(index->data() + io + is - 4);
        size_t p = io;
        const size_t end = io + is - 4 - std::min<size_t>(is - 4, size_t{restarts} * 4);
        while (p < end) {
          uint64_t shared, non_shared, len;
          if (!ReadVarint(*index, &p, &shared) || !ReadVarint(*index, &p, &non_shared) ||
              !ReadVarint(*index, &p, &len) || non_shared > end - p || len > end - p - non_shared)
            break;
          p += non_shared;
          size_t h = p;
          uint64_t bo, bs;
          if (ReadVarint(*index, &h, &bo) && ReadVarint(*index, &h, &bs)) RepairBlock(index, bo, bs);
          p += len;
        }
      }
    }
  }
  auto table = internal::bundle::ParseTable(*index, "fuzz");
  if (!table.ok()) return wanted;
  bool changed = false;
  for (auto& [key, value] : *table) {
    if (key.empty()) continue;
    conflux::BundleEntryProto e;
    if (!e.ParseFromString(value)) continue;
    if (wanted.size() < kMaxTensors && (key[0] != '\0'))
      wanted.push_back({key, IsValidDataType(e.dtype()) ? static_cast<DataType>(e.dtype()) : DT_FLOAT});
    if (repair && e.dtype() != conflux::DT_STRING && e.offset() >= 0 && e.size() >= 0 &&
        static_cast<uint64_t>(e.offset()) <= data.size() &&
        static_cast<uint64_t>(e.size()) <= data.size() - e.offset()) {
      e.set_crc32c(MaskCrc(sdk::Crc32c(data.data() + e.offset(), e.size())));
      value = e.SerializeAsString();
      changed = true;
    }
  }
  if (changed) *index = internal::bundle::BuildTable(*table);
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
  const bool repair = (data[0] & 1) != 0;
  std::vector<Wanted> wanted;
  const std::string prefix = dir.File("ckpt");
  if ((data[0] & 2) != 0) {
    const uint32_t n = file.size() >= 4 ? format::GetU32(file.data()) : 0;
    std::string index = file.substr(std::min<size_t>(4, file.size()), n);
    const std::string bytes = file.size() >= 4 + size_t{n} ? file.substr(4 + size_t{n}) : "";
    wanted = PrepareBundle(&index, bytes, repair);
    std::remove(dir.File("ckpt.cfxckpt").c_str());
    dir.Write("ckpt.index", index);
    dir.Write("ckpt.data-00000-of-00001", bytes);
  } else {
    wanted = Prepare(&file, repair);
    std::remove(dir.File("ckpt.index").c_str());
    dir.Write(std::string("ckpt") + format::kFileSuffix, file);
  }
  if (wanted.empty()) wanted.push_back({"tensor", cfx::DT_FLOAT});
  Restore(*h.runtime, h.cpu, prefix, wanted);
  if (wanted.size() > 1)
    for (const Wanted& w : wanted) Restore(*h.runtime, h.cpu, prefix, {w});
  return 0;
}
