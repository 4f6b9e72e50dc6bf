// SaveV2 and RestoreV2 through the kernel harness: bit-identical round trips of every storable
// dtype, the documented file layout, clear errors for missing, truncated and corrupted files,
// and atomic replacement that keeps the old checkpoint when a save fails.
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "conflux/kernel_runner.h"
#include "kernel_test_util.h"

namespace cfx {
namespace {

namespace fs = std::filesystem;
using test::MakeStringScalar;
using test::MakeStringVector;
using test::RunNode;

// A fresh directory under the test temp dir; removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = ::testing::TempDir() + "/cfx_ckpt_XXXXXX";
    path_ = ::mkdtemp(tmpl.data()) ? tmpl : std::string();
    EXPECT_FALSE(path_.empty()) << "mkdtemp failed";
  }
  ~TempDir() {
    std::error_code ec;
    fs::permissions(path_, fs::perms::owner_all, ec);
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::vector<std::string> Names(const std::vector<std::pair<std::string, Tensor>>& items) {
  std::vector<std::string> out;
  for (const auto& [name, t] : items) out.push_back(name);
  return out;
}

Status Save(const std::string& prefix, const std::vector<std::pair<std::string, Tensor>>& items) {
  std::vector<DataType> dtypes;
  std::vector<Tensor> inputs = {MakeStringScalar(prefix), MakeStringVector(Names(items)),
                                MakeStringVector(std::vector<std::string>(items.size()))};
  for (const auto& [name, t] : items) {
    dtypes.push_back(t.dtype());
    inputs.push_back(t);
  }
  NodeDef n = test::MakeNode("SaveV2", static_cast<int>(inputs.size()),
                             {{"dtypes", AttrValue::TypeList(dtypes)}});
  auto out = RunNode(n, inputs);
  return out.status();
}

StatusOr<std::vector<Tensor>> Restore(const std::string& prefix,
                                      const std::vector<std::string>& names,
                                      const std::vector<DataType>& dtypes) {
  NodeDef n = test::MakeNode("RestoreV2", 3, {{"dtypes", AttrValue::TypeList(dtypes)}});
  return RunNode(n, {MakeStringScalar(prefix), MakeStringVector(names),
                     MakeStringVector(std::vector<std::string>(names.size()))});
}

// Same dtype, shape and bytes (strings element by element).
void ExpectBitIdentical(const Tensor& expected, const Tensor& actual, const std::string& what) {
  ASSERT_EQ(expected.dtype(), actual.dtype()) << what;
  ASSERT_EQ(expected.shape(), actual.shape()) << what;
  if (expected.dtype() == DT_STRING) {
    EXPECT_EQ(test::StringValues(expected), test::StringValues(actual)) << what;
    return;
  }
  const size_t bytes = expected.num_elements() * DataTypeSize(expected.dtype());
  ASSERT_EQ(bytes, actual.num_elements() * DataTypeSize(actual.dtype()));
  EXPECT_TRUE(bytes == 0 || std::memcmp(expected.raw_data(), actual.raw_data(), bytes) == 0)
      << what << ": contents differ";
}

// A tensor of random bits (0/1 for bool, random bytes including NUL for strings).
Tensor RandomTensor(DataType dtype, const TensorShape& shape, std::mt19937_64& rng) {
  Tensor t(dtype, shape);
  if (dtype == DT_STRING) {
    for (int64_t i = 0; i < t.num_elements(); ++i) {
      std::string s(rng() % 20, '\0');
      for (char& c : s) c = static_cast<char>(rng() & 0xFF);
      t.at<std::string>(i) = s;
    }
  } else if (dtype == DT_BOOL) {
    for (int64_t i = 0; i < t.num_elements(); ++i) t.at<bool>(i) = (rng() & 1) != 0;
  } else {
    auto* p = static_cast<unsigned char*>(t.raw_data());
    for (size_t i = 0; i < t.num_elements() * DataTypeSize(dtype); ++i) p[i] = rng() & 0xFF;
  }
  return t;
}

const std::vector<DataType> kStorableTypes = {
    DT_FLOAT,     DT_DOUBLE,  DT_INT32,  DT_UINT8,      DT_INT16,  DT_INT8,   DT_STRING,
    DT_COMPLEX64, DT_INT64,   DT_BOOL,   DT_QINT8,      DT_QUINT8, DT_QINT32, DT_BFLOAT16,
    DT_QINT16,    DT_QUINT16, DT_UINT16, DT_COMPLEX128, DT_HALF,   DT_UINT32, DT_UINT64};

// Every storable dtype in shapes from scalar to rank 3, empty ones included; deterministic.
std::vector<std::pair<std::string, Tensor>> SampleTensors(uint64_t seed) {
  std::mt19937_64 rng(seed);
  const std::vector<TensorShape> shapes = {TensorShape(), TensorShape({0}), TensorShape({7}),
                                           TensorShape({3, 0, 2}), TensorShape({4, 5, 3})};
  std::vector<std::pair<std::string, Tensor>> out;
  for (DataType d : kStorableTypes)
    for (size_t s = 0; s < shapes.size(); ++s)
      out.emplace_back(DataTypeString(d) + "/shape" + std::to_string(s),
                       RandomTensor(d, shapes[s], rng));
  return out;
}

void ExpectRestoresAll(const std::string& prefix,
                       const std::vector<std::pair<std::string, Tensor>>& items) {
  std::vector<DataType> dtypes;
  for (const auto& [name, t] : items) dtypes.push_back(t.dtype());
  auto out = Restore(prefix, Names(items), dtypes);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), items.size());
  for (size_t i = 0; i < items.size(); ++i)
    ExpectBitIdentical(items[i].second, (*out)[i], items[i].first);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}
uint64_t LoadU64(const std::string& s, size_t at) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(s[at + i]);
  return v;
}
uint32_t LoadU32(const std::string& s, size_t at) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(s[at + i]);
  return v;
}
// Bit-at-a-time CRC-32C, independent of the plugin's table-driven one.
uint32_t ReferenceCrc32c(const std::string& s, size_t begin, size_t end) {
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = begin; i < end; ++i) {
    crc ^= static_cast<unsigned char>(s[i]);
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
  }
  return ~crc;
}

std::vector<std::string> FilesIn(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(Checkpoint, RoundTripOfEveryDtypeAndShapeIsBitIdentical) {
  TempDir dir;
  const std::string prefix = dir.path() + "/model";
  auto items = SampleTensors(1);
  ASSERT_OK(Save(prefix, items));
  EXPECT_EQ(FilesIn(dir.path()), std::vector<std::string>{"model.cfxckpt"});
  ExpectRestoresAll(prefix, items);
}

TEST(Checkpoint, RestoresASubsetInAnyOrder) {
  TempDir dir;
  const std::string prefix = dir.path() + "/sub/dir/ckpt";  // parents are created
  auto items = SampleTensors(2);
  ASSERT_OK(Save(prefix, items));
  std::vector<std::pair<std::string, Tensor>> subset = {items[40], items[3], items[33]};
  ExpectRestoresAll(prefix, subset);
}

TEST(Checkpoint, SavingAgainReplacesTheFileAndLeavesNoTemporaries) {
  TempDir dir;
  const std::string prefix = dir.path() + "/ckpt";
  ASSERT_OK(Save(prefix, {{"w", test::MakeVector<float>({1, 2})}}));
  std::vector<std::pair<std::string, Tensor>> second = {{"w", test::MakeVector<float>({3})},
                                                        {"step", test::MakeScalar<int64_t>(9)}};
  ASSERT_OK(Save(prefix, second));
  ExpectRestoresAll(prefix, second);
  EXPECT_EQ(FilesIn(dir.path()), std::vector<std::string>{"ckpt.cfxckpt"});
}

TEST(Checkpoint, FileLayoutMatchesTheDocumentedFormat) {
  TempDir dir;
  const std::string prefix = dir.path() + "/ckpt";
  Tensor v = test::MakeVector<int32_t>({1, -2, 3});
  ASSERT_OK(Save(prefix, {{"v", v}}));
  ASSERT_EQ(ReferenceCrc32c("123456789", 0, 9), 0xE3069283u);  // the CRC-32C check value
  const std::string f = ReadFile(prefix + ".cfxckpt");
  ASSERT_GE(f.size(), 64u + 12u);
  EXPECT_EQ(f.substr(0, 8), std::string("CFXCKPT\0", 8));
  EXPECT_EQ(LoadU32(f, 8), 1u);    // format version
  EXPECT_EQ(LoadU32(f, 12), 1u);   // oldest reader version
  EXPECT_EQ(LoadU32(f, 16), 32u);  // header size
  EXPECT_EQ(LoadU32(f, 28), ReferenceCrc32c(f, 0, 28));
  // The payload follows the header: the raw little-endian int32 values.
  EXPECT_EQ(std::memcmp(f.data() + 32, v.raw_data(), 12), 0);
  const size_t footer = f.size() - 32;
  EXPECT_EQ(f.substr(footer + 24), "CFXCKEND");
  EXPECT_EQ(LoadU32(f, footer + 20), ReferenceCrc32c(f, footer, footer + 20));
  const uint64_t index_offset = LoadU64(f, footer), index_length = LoadU64(f, footer + 8);
  EXPECT_EQ(index_offset, 44u);
  EXPECT_EQ(index_offset + index_length, footer);
  EXPECT_EQ(LoadU32(f, footer + 16), ReferenceCrc32c(f, index_offset, footer));
  // Index: count, then name length, name, dtype, rank, dims, offset, length, payload CRC.
  size_t at = index_offset;
  EXPECT_EQ(LoadU64(f, at), 1u);
  EXPECT_EQ(LoadU32(f, at + 8), 1u);
  EXPECT_EQ(f[at + 12], 'v');
  EXPECT_EQ(LoadU32(f, at + 13), static_cast<uint32_t>(DT_INT32));
  EXPECT_EQ(LoadU32(f, at + 17), 1u);
  EXPECT_EQ(LoadU64(f, at + 21), 3u);
  EXPECT_EQ(LoadU64(f, at + 29), 32u);
  EXPECT_EQ(LoadU64(f, at + 37), 12u);
  EXPECT_EQ(LoadU32(f, at + 45), ReferenceCrc32c(f, 32, 44));
  EXPECT_EQ(at + 49, footer);
}

TEST(Checkpoint, MissingFileIsNotFound) {
  TempDir dir;
  auto out = Restore(dir.path() + "/absent", {"x"}, {DT_FLOAT});
  test::ExpectError(out, Code::kNotFound, dir.path() + "/absent.cfxckpt");
}

TEST(Checkpoint, UnknownNameIsNotFoundAndListsNamesPresent) {
  TempDir dir;
  const std::string prefix = dir.path() + "/ckpt";
  ASSERT_OK(Save(
      prefix, {{"bias", test::MakeVector<float>({1})}, {"kernel", test::MakeVector<float>({2})}}));
  auto out = Restore(prefix, {"kernal"}, {DT_FLOAT});
  test::ExpectError(out, Code::kNotFound, "tensor 'kernal' not found in checkpoint " + prefix);
  test::ExpectError(out, Code::kNotFound, "'bias', 'kernel'");
}

TEST(Checkpoint, DtypeMismatchIsInvalidArgument) {
  TempDir dir;
  const std::string prefix = dir.path() + "/ckpt";
  ASSERT_OK(Save(prefix, {{"w", test::MakeVector<double>({1})}}));
  test::ExpectError(Restore(prefix, {"w"}, {DT_FLOAT}), Code::kInvalidArgument,
                    "tensor 'w' in checkpoint " + prefix +
                        ".cfxckpt has dtype double but "
                        "dtypes[0] is float");
}

TEST(Checkpoint, BadArgumentsAreClearErrors) {
  TempDir dir;
  const std::string prefix = dir.path() + "/ckpt";
  Tensor x = test::MakeVector<float>({1});
  NodeDef save =
      test::MakeNode("SaveV2", 5, {{"dtypes", AttrValue::TypeList({DT_FLOAT, DT_FLOAT})}});
  test::ExpectError(RunNode(save, {MakeStringScalar(prefix), MakeStringVector({"a", "a"}),
                                   MakeStringVector({"", ""}), x, x}),
                    Code::kInvalidArgument, "two tensors under the name 'a'");
  NodeDef save1 = test::MakeNode("SaveV2", 4, {{"dtypes", AttrValue::TypeList({DT_FLOAT})}});
  test::ExpectError(RunNode(save1, {MakeStringScalar(prefix), MakeStringVector({"a"}),
                                    MakeStringVector({"4 0,2"}), x}),
                    Code::kUnimplemented, "shape_and_slices[0] is \"4 0,2\" for tensor 'a'");
  test::ExpectError(
      test::RunKernelOnly(save1, {MakeStringScalar(prefix), MakeStringVector({"a", "b"}),
                                  MakeStringVector({"", ""}), x}),
      Code::kInvalidArgument, "got 2 tensor names and 2 shape_and_slices for 1");
  test::ExpectError(
      test::RunKernelOnly(save1, {MakeStringVector({prefix, prefix}), MakeStringVector({"a"}),
                                  MakeStringVector({""}), x}),
      Code::kInvalidArgument, "prefix should have a single element");
  EXPECT_TRUE(FilesIn(dir.path()).empty());
}

// Saves two tensors and returns the file's bytes; `a` comes first in the data section.
std::string SaveTwo(const std::string& prefix) {
  std::vector<float> a(256);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i) * 0.5f;
  EXPECT_OK(Save(prefix, {{"a", test::MakeVector<float>(a)},
                          {"b", test::MakeStringVector({"hello", "world"})}}));
  return ReadFile(prefix + ".cfxckpt");
}

TEST(Checkpoint, TruncatedFilesAreDataLossAtEveryCut) {
  TempDir dir;
  const std::string prefix = dir.path() + "/ckpt";
  const std::string file = prefix + ".cfxckpt";
  const std::string bytes = SaveTwo(prefix);
  for (size_t cut : {size_t{0}, size_t{7}, size_t{31}, size_t{32}, size_t{63}, size_t{500},
                     size_t{1024 + 32}, bytes.size() - 40, bytes.size() - 32, bytes.size() - 1}) {
    SCOPED_TRACE("truncated to " + std::to_string(cut) + " of " + std::to_string(bytes.size()));
    WriteFile(file, bytes.substr(0, cut));
    auto out = Restore(prefix, {"a"}, {DT_FLOAT});
    test::ExpectError(out, Code::kDataLoss, file);
  }
}

TEST(Checkpoint, FlippedBytesAreDetectedWhereTheyHappen) {
  TempDir dir;
  const std::string prefix = dir.path() + "/ckpt";
  const std::string file = prefix + ".cfxckpt";
  const std::string bytes = SaveTwo(prefix);
  struct Case {
    size_t offset;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {9, "checksum mismatch in the header of checkpoint " + file},
      {32 + 100, "checksum mismatch for tensor 'a' in checkpoint " + file},
      {bytes.size() - 32 - 10, "checksum mismatch in the index of checkpoint " + file},
      {bytes.size() - 30, "checksum mismatch in the footer of checkpoint " + file},
      {2, "is not a Conflux checkpoint"},
      {bytes.size() - 2, "is truncated or incomplete"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("byte " + std::to_string(c.offset));
    std::string corrupt = bytes;
    corrupt[c.offset] = static_cast<char>(corrupt[c.offset] ^ 0x10);
    WriteFile(file, corrupt);
    test::ExpectError(Restore(prefix, {"a", "b"}, {DT_FLOAT, DT_STRING}), Code::kDataLoss,
                      c.expected);
  }
  // A damaged payload spoils only its own tensor: the reader seeks past it to restore "b".
  std::string corrupt = bytes;
  corrupt[32 + 100] ^= 0x01;
  WriteFile(file, corrupt);
  auto b = Restore(prefix, {"b"}, {DT_STRING});
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(test::StringValues((*b)[0]), (std::vector<std::string>{"hello", "world"}));
}

// Every byte of the file is covered by a magic number or a checksum.
TEST(Checkpoint, EveryByteFlipIsDetected) {
  TempDir dir;
  const std::string prefix = dir.path() + "/ckpt";
  const std::string file = prefix + ".cfxckpt";
  ASSERT_OK(Save(prefix,
                 {{"s", test::MakeStringVector({"ab", ""})}, {"t", test::MakeScalar<bool>(true)}}));
  const std::string bytes = ReadFile(file);
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string corrupt = bytes;
    corrupt[i] = static_cast<char>(corrupt[i] ^ 0x41);
    WriteFile(file, corrupt);
    auto out = Restore(prefix, {"s", "t"}, {DT_STRING, DT_BOOL});
    ASSERT_FALSE(out.ok()) << "flipping byte " << i << " went unnoticed";
    EXPECT_EQ(out.status().code(), Code::kDataLoss) << "byte " << i << ": " << out.status();
  }
}

void StoreU32(std::string* s, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) (*s)[at + i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}
// Recomputes the index and footer checksums, as a forger (or a buggy writer) would: what fails
// then must be the reader's checks of the index's contents, not its checksums.
void ResealIndex(std::string* f) {
  const size_t footer = f->size() - 32;
  StoreU32(f, footer + 16, ReferenceCrc32c(*f, LoadU64(*f, footer), footer));
  StoreU32(f, footer + 20, ReferenceCrc32c(*f, footer, footer + 20));
}

// An index with correct checksums and a dtype code that is not a storable dtype, far outside the
// enum included, is DataLoss naming the code (the checkpoint fuzzer found the reader converting
// such a code to the dtype enum before checking it: undefined behaviour).
TEST(Checkpoint, ResealedIndexWithABadDtypeCodeIsDataLoss) {
  TempDir dir;
  const std::string prefix = dir.path() + "/ckpt";
  ASSERT_OK(Save(prefix, {{"v", test::MakeVector<int32_t>({1, -2, 3})}}));
  const std::string bytes = ReadFile(prefix + ".cfxckpt");
  const size_t dtype_at = 44 + 13;  // FileLayoutMatchesTheDocumentedFormat: the record of "v"
  ASSERT_EQ(LoadU32(bytes, dtype_at), static_cast<uint32_t>(DT_INT32));
  for (uint32_t code : {0u, 20u, 21u, 24u, 32u, 0xAABBCCCFu, 0xFFFFFFFFu}) {
    SCOPED_TRACE("dtype code " + std::to_string(code));
    std::string forged = bytes;
    StoreU32(&forged, dtype_at, code);
    ResealIndex(&forged);
    WriteFile(prefix + ".cfxckpt", forged);
    test::ExpectError(Restore(prefix, {"v"}, {DT_INT32}), Code::kDataLoss,
                      "tensor 'v' has an unknown dtype code " + std::to_string(code));
  }
}

// A save that fails part-way (the file-size limit stops its writes) keeps the old checkpoint.
TEST(Checkpoint, FailedSaveLeavesThePreviousCheckpointIntact) {
  TempDir dir;
  const std::string prefix = dir.path() + "/ckpt";
  std::vector<std::pair<std::string, Tensor>> old = {{"w", test::MakeVector<int32_t>({4, 5, 6})}};
  ASSERT_OK(Save(prefix, old));
  const std::string old_bytes = ReadFile(prefix + ".cfxckpt");

  rlimit saved;
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  rlimit small = saved;
  small.rlim_cur = 4096;
  auto* previous_handler = ::signal(SIGXFSZ, SIG_IGN);
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  Tensor big(DT_FLOAT, TensorShape({1 << 18}));
  std::memset(big.raw_data(), 0, big.TotalBytes());
  Status s = Save(prefix, {{"w", big}});
  ::setrlimit(RLIMIT_FSIZE, &saved);
  ::signal(SIGXFSZ, previous_handler);

  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Code::kResourceExhausted) << s;
  EXPECT_NE(s.message().find(".cfxckpt.tmp."), std::string::npos) << s;
  EXPECT_EQ(FilesIn(dir.path()), std::vector<std::string>{"ckpt.cfxckpt"});
  EXPECT_EQ(ReadFile(prefix + ".cfxckpt"), old_bytes);
  ExpectRestoresAll(prefix, old);
}

TEST(Checkpoint, UnwritableDirectoryFailsAndKeepsTheOldFile) {
  if (::geteuid() == 0) GTEST_SKIP() << "root ignores directory permissions";
  TempDir dir;
  const std::string prefix = dir.path() + "/ckpt";
  std::vector<std::pair<std::string, Tensor>> old = {{"w", test::MakeScalar<double>(2.5)}};
  ASSERT_OK(Save(prefix, old));
  ASSERT_EQ(::chmod(dir.path().c_str(), 0555), 0);
  Status s = Save(prefix, {{"w", test::MakeScalar<double>(7)}});
  ::chmod(dir.path().c_str(), 0755);
  EXPECT_EQ(s.code(), Code::kPermissionDenied) << s;
  ExpectRestoresAll(prefix, old);
}

TEST(Checkpoint, ShapeFunctionsCheckTheFixedInputs) {
  Runtime& rt = test::TestRuntime();
  NodeDef restore =
      test::MakeNode("RestoreV2", 3, {{"dtypes", AttrValue::TypeList({DT_FLOAT, DT_INT32})}});
  auto shapes = InferNodeShapes(
      rt, restore, {PartialTensorShape({}), PartialTensorShape({2}), PartialTensorShape({-1})}, {});
  ASSERT_TRUE(shapes.ok()) << shapes.status();
  ASSERT_EQ(shapes->size(), 2u);
  EXPECT_TRUE((*shapes)[0].unknown_rank());
  auto bad = InferNodeShapes(
      rt, restore, {PartialTensorShape({}), PartialTensorShape({3}), PartialTensorShape({2})}, {});
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("tensor_names has 3 elements but dtypes has 2"),
            std::string::npos)
      << bad.status();
  NodeDef save = test::MakeNode("SaveV2", 4, {{"dtypes", AttrValue::TypeList({DT_FLOAT})}});
  EXPECT_FALSE(InferNodeShapes(rt, save,
                               {PartialTensorShape({2}), PartialTensorShape({1}),
                                PartialTensorShape({1}), PartialTensorShape({5})},
                               {})
                   .ok());
  EXPECT_TRUE(InferNodeShapes(rt, save,
                              {PartialTensorShape({}), PartialTensorShape({1}),
                               PartialTensorShape({1}), PartialTensorShape({5})},
                              {})
                  .ok());
}

// Run in sequence by ctest (checkpoint.cross_process_*) with CONFLUX_CHECKPOINT_DIR set: one
// process writes, a later one reads the same values back.
const char* CrossProcessDir() { return std::getenv("CONFLUX_CHECKPOINT_DIR"); }

TEST(CheckpointCrossProcess, Write) {
  if (CrossProcessDir() == nullptr) GTEST_SKIP() << "run by ctest with CONFLUX_CHECKPOINT_DIR";
  ASSERT_OK(Save(std::string(CrossProcessDir()) + "/cross", SampleTensors(77)));
}

TEST(CheckpointCrossProcess, Read) {
  if (CrossProcessDir() == nullptr) GTEST_SKIP() << "run by ctest with CONFLUX_CHECKPOINT_DIR";
  ExpectRestoresAll(std::string(CrossProcessDir()) + "/cross", SampleTensors(77));
}

}  // namespace
}  // namespace cfx
