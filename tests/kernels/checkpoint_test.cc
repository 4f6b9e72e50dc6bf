// SaveV2, RestoreV2 and MergeV2Checkpoints through the kernel harness: bit-identical round trips
// of every storable dtype, TensorFlow's bundle layout, slices, clear errors for missing,
// truncated and corrupted files, atomic replacement that keeps the old checkpoint when a save
// fails, and the earlier Conflux format still read.
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
#include <map>
#include <random>
#include <string>
#include <vector>

#include "checkpoint/tensor_bundle.h"
#include "conflux/kernel_runner.h"
#include "kernel_test_util.h"
#include "proto/tensor_bundle.pb.h"

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

const std::vector<std::string> kBundleFiles = {"ckpt.data-00000-of-00001", "ckpt.index"};

uint32_t MaskedCrc(const std::string& s, size_t begin, size_t end) {
  const uint32_t crc = ReferenceCrc32c(s, begin, end);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

// The entries of a bundle's index, through the table reader.
std::map<std::string, conflux::BundleEntryProto> IndexEntries(const std::string& prefix) {
  std::map<std::string, conflux::BundleEntryProto> out;
  auto table = internal::bundle::ParseTable(ReadFile(prefix + ".index"), prefix + ".index");
  EXPECT_TRUE(table.ok()) << table.status();
  if (!table.ok()) return out;
  for (const auto& [k, v] : *table) {
    if (k.empty()) continue;
    EXPECT_TRUE(out[k].ParseFromString(v)) << k;
  }
  return out;
}

TEST(Checkpoint, RoundTripOfEveryDtypeAndShapeIsBitIdentical) {
  TempDir dir;
  const std::string prefix = dir.path() + "/ckpt";
  auto items = SampleTensors(1);
  ASSERT_OK(Save(prefix, items));
  EXPECT_EQ(FilesIn(dir.path()), kBundleFiles);
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

TEST(Checkpoint, SavingAgainReplacesTheFilesAndLeavesNoTemporaries) {
  TempDir dir;
  const std::string prefix = dir.path() + "/ckpt";
  ASSERT_OK(Save(prefix, {{"w", test::MakeVector<float>({1, 2})}}));
  std::vector<std::pair<std::string, Tensor>> second = {{"w", test::MakeVector<float>({3})},
                                                        {"step", test::MakeScalar<int64_t>(9)}};
  ASSERT_OK(Save(prefix, second));
  ExpectRestoresAll(prefix, second);
  EXPECT_EQ(FilesIn(dir.path()), kBundleFiles);
}

// TensorFlow's layout: the data file is the tensors' bytes back to back (strings as varint
// lengths, their masked checksum, the bytes); the index is a table whose footer ends in the
// table magic, whose first key "" is the header and whose entries locate and checksum each tensor.
TEST(Checkpoint, FilesHaveTensorFlowsLayout) {
  TempDir dir;
  const std::string prefix = dir.path() + "/ckpt";
  Tensor v = test::MakeVector<int32_t>({1, -2, 3});
  ASSERT_OK(Save(prefix, {{"v", v}, {"s", test::MakeStringVector({"ab", ""})}}));
  ASSERT_EQ(ReferenceCrc32c("123456789", 0, 9), 0xE3069283u);  // the CRC-32C check value
  const std::string data = ReadFile(prefix + ".data-00000-of-00001");
  // Sorted by name: "s" first (lengths 2 and 0, a 4-byte masked checksum, "ab"), then "v".
  ASSERT_EQ(data.size(), 2u + 4u + 2u + 12u);
  EXPECT_EQ(data[0], 2);
  EXPECT_EQ(data[1], 0);
  EXPECT_EQ(data.substr(6, 2), "ab");
  EXPECT_EQ(std::memcmp(data.data() + 8, v.raw_data(), 12), 0);
  const std::string index = ReadFile(prefix + ".index");
  ASSERT_GE(index.size(), 48u);
  EXPECT_EQ(LoadU64(index, index.size() - 8), 0xdb4775248b80fb57ull);
  auto table = internal::bundle::ParseTable(index, "index");
  ASSERT_OK(table.status());
  ASSERT_EQ(table->size(), 3u);
  EXPECT_EQ((*table)[0].first, "");
  conflux::BundleHeaderProto header;
  ASSERT_TRUE(header.ParseFromString((*table)[0].second));
  EXPECT_EQ(header.num_shards(), 1);
  EXPECT_EQ(header.version().producer(), 1);
  auto entries = IndexEntries(prefix);
  const conflux::BundleEntryProto& e = entries["v"];
  EXPECT_EQ(e.dtype(), conflux::DT_INT32);
  ASSERT_EQ(e.shape().dim_size(), 1);
  EXPECT_EQ(e.shape().dim(0).size(), 3);
  EXPECT_EQ(e.offset(), 8);
  EXPECT_EQ(e.size(), 12);
  EXPECT_EQ(e.crc32c(), MaskedCrc(data, 8, 20));
  EXPECT_EQ(entries["s"].offset(), 0);
  EXPECT_EQ(entries["s"].size(), 8);
}

TEST(Checkpoint, SlicesSaveAndRestoreAsTensorFlowsPartitionedVariables) {
  TempDir dir;
  const std::string prefix = dir.path() + "/ckpt";
  // A 4x3 tensor saved as rows 0-1 and rows 2-3, as two partitions of a variable are.
  std::vector<float> all(12);
  for (int i = 0; i < 12; ++i) all[i] = static_cast<float>(i);
  Tensor top = test::MakeTensor<float>({2, 3}, {0, 1, 2, 3, 4, 5});
  Tensor bottom = test::MakeTensor<float>({2, 3}, {6, 7, 8, 9, 10, 11});
  NodeDef save = test::MakeNode("SaveV2", 5, {{"dtypes", AttrValue::TypeList({DT_FLOAT, DT_FLOAT})}});
  ASSERT_OK(RunNode(save, {MakeStringScalar(prefix), MakeStringVector({"p", "p"}),
                           MakeStringVector({"4 3 0,2:-", "4 3 2,2:-"}), top, bottom})
                .status());
  auto entries = IndexEntries(prefix);
  EXPECT_EQ(entries.size(), 3u);  // the full tensor's entry and one per slice
  EXPECT_EQ(entries["p"].slices_size(), 2);
  // Whole, and a slice across both parts.
  auto whole = Restore(prefix, {"p"}, {DT_FLOAT});
  ASSERT_OK(whole.status());
  ExpectBitIdentical(test::MakeTensor<float>({4, 3}, all), (*whole)[0], "whole");
  NodeDef restore = test::MakeNode("RestoreV2", 3, {{"dtypes", AttrValue::TypeList({DT_FLOAT})}});
  auto mid = RunNode(restore, {MakeStringScalar(prefix), MakeStringVector({"p"}),
                               MakeStringVector({"4 3 1,2:1,2"})});
  ASSERT_OK(mid.status());
  ExpectBitIdentical(test::MakeTensor<float>({2, 2}, {4, 5, 7, 8}), (*mid)[0], "rows 1-2, cols 1-2");
  // A slice of a tensor saved whole.
  ASSERT_OK(Save(dir.path() + "/whole", {{"w", test::MakeTensor<float>({4, 3}, all)}}));
  auto part = RunNode(restore, {MakeStringScalar(dir.path() + "/whole"), MakeStringVector({"w"}),
                                MakeStringVector({"4 3 3,1:-"})});
  ASSERT_OK(part.status());
  ExpectBitIdentical(test::MakeTensor<float>({1, 3}, {9, 10, 11}), (*part)[0], "last row");
  // The wrong full shape is named.
  test::ExpectError(RunNode(restore, {MakeStringScalar(prefix), MakeStringVector({"p"}),
                                      MakeStringVector({"5 3 0,1:-"})}),
                    Code::kInvalidArgument, "has shape [4,3], not [5,3]");
}

TEST(Checkpoint, MissingFileIsNotFound) {
  TempDir dir;
  auto out = Restore(dir.path() + "/absent", {"x"}, {DT_FLOAT});
  test::ExpectError(out, Code::kNotFound, dir.path() + "/absent.index");
}

TEST(Checkpoint, UnknownNameIsNotFoundAndListsNamesPresent) {
  TempDir dir;
  const std::string prefix = dir.path() + "/ckpt";
  ASSERT_OK(Save(
      prefix, {{"bias", test::MakeVector<float>({1})}, {"kernel", test::MakeVector<float>({2})}}));
  auto out = Restore(prefix, {"kernal"}, {DT_FLOAT});
  test::ExpectError(out, Code::kNotFound, "tensor 'kernal' is not in checkpoint " + prefix);
  test::ExpectError(out, Code::kNotFound, "'bias', 'kernel'");
}

TEST(Checkpoint, DtypeMismatchIsInvalidArgument) {
  TempDir dir;
  const std::string prefix = dir.path() + "/ckpt";
  ASSERT_OK(Save(prefix, {{"w", test::MakeVector<double>({1})}}));
  test::ExpectError(Restore(prefix, {"w"}, {DT_FLOAT}), Code::kInvalidArgument,
                    "tensor 'w' in checkpoint " + prefix + " has dtype double but dtypes[0] is float");
}

TEST(Checkpoint, BadArgumentsAreClearErrors) {
  TempDir dir;
  const std::string prefix = dir.path() + "/ckpt";
  Tensor x = test::MakeVector<float>({1});
  NodeDef save =
      test::MakeNode("SaveV2", 5, {{"dtypes", AttrValue::TypeList({DT_FLOAT, DT_FLOAT})}});
  test::ExpectError(RunNode(save, {MakeStringScalar(prefix), MakeStringVector({"a", "a"}),
                                   MakeStringVector({"", ""}), x, x}),
                    Code::kInvalidArgument, "tensor name 'a' given twice");
  NodeDef save1 = test::MakeNode("SaveV2", 4, {{"dtypes", AttrValue::TypeList({DT_FLOAT})}});
  test::ExpectError(RunNode(save1, {MakeStringScalar(prefix), MakeStringVector({"a"}),
                                    MakeStringVector({"4 0,x"}), x}),
                    Code::kInvalidArgument, "extent '0,x' is neither '-' nor 'start,length'");
  test::ExpectError(RunNode(save1, {MakeStringScalar(prefix), MakeStringVector({"a"}),
                                    MakeStringVector({"4 0,2"}), x}),
                    Code::kInvalidArgument, "needs values of shape [2], got [1]");
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

// Saves two tensors ("a": 256 floats, then "b": two strings).
void SaveTwo(const std::string& prefix) {
  std::vector<float> a(256);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i) * 0.5f;
  EXPECT_OK(Save(prefix, {{"a", test::MakeVector<float>(a)},
                          {"b", test::MakeStringVector({"hello", "world"})}}));
}

TEST(Checkpoint, TruncatedFilesAreDataLossAtEveryCut) {
  TempDir dir;
  const std::string prefix = dir.path() + "/ckpt";
  SaveTwo(prefix);
  for (const std::string file : {prefix + ".index", prefix + ".data-00000-of-00001"}) {
    const std::string bytes = ReadFile(file);
    for (size_t cut : {size_t{0}, size_t{7}, size_t{31}, bytes.size() / 2, bytes.size() - 1}) {
      SCOPED_TRACE(file + " truncated to " + std::to_string(cut) + " of " +
                   std::to_string(bytes.size()));
      WriteFile(file, bytes.substr(0, cut));
      test::ExpectError(Restore(prefix, {"a", "b"}, {DT_FLOAT, DT_STRING}), Code::kDataLoss, file);
    }
    WriteFile(file, bytes);
  }
}

TEST(Checkpoint, FlippedBytesAreDetectedWhereTheyHappen) {
  TempDir dir;
  const std::string prefix = dir.path() + "/ckpt";
  SaveTwo(prefix);
  const std::string data_file = prefix + ".data-00000-of-00001", index_file = prefix + ".index";
  const std::string data = ReadFile(data_file), index = ReadFile(index_file);
  struct Case {
    std::string file;
    size_t offset;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {data_file, 100, "checksum mismatch for tensor 'a' in " + data_file},
      {data_file, 1024 + 1, "tensor 'b'"},
      {index_file, 3, "checksum mismatch in the data block"},
      {index_file, index.size() - 3, "is not a tensor-bundle index"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file + " byte " + std::to_string(c.offset));
    std::string corrupt = c.file == data_file ? data : index;
    corrupt[c.offset] = static_cast<char>(corrupt[c.offset] ^ 0x10);
    WriteFile(c.file, corrupt);
    test::ExpectError(Restore(prefix, {"a", "b"}, {DT_FLOAT, DT_STRING}), Code::kDataLoss,
                      c.expected);
    WriteFile(c.file, c.file == data_file ? data : index);
  }
  // A damaged tensor spoils only itself: "b" still restores.
  std::string corrupt = data;
  corrupt[100] ^= 0x01;
  WriteFile(data_file, corrupt);
  auto b = Restore(prefix, {"b"}, {DT_STRING});
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(test::StringValues((*b)[0]), (std::vector<std::string>{"hello", "world"}));
}

// No flipped byte of either file gives a wrong value: each is an error (DataLoss), or, for the
// bytes TensorFlow's format leaves unchecked (the footer's padding), the same values.
TEST(Checkpoint, NoByteFlipGivesWrongValues) {
  TempDir dir;
  const std::string prefix = dir.path() + "/ckpt";
  std::vector<std::pair<std::string, Tensor>> items = {
      {"s", test::MakeStringVector({"ab", ""})}, {"t", test::MakeScalar<bool>(true)},
      {"w", test::MakeVector<float>({1.5f, -2})}};
  ASSERT_OK(Save(prefix, items));
  for (const std::string file : {prefix + ".index", prefix + ".data-00000-of-00001"}) {
    const std::string bytes = ReadFile(file);
    int detected = 0;
    for (size_t i = 0; i < bytes.size(); ++i) {
      std::string corrupt = bytes;
      corrupt[i] = static_cast<char>(corrupt[i] ^ 0x41);
      WriteFile(file, corrupt);
      auto out = Restore(prefix, {"s", "t", "w"}, {DT_STRING, DT_BOOL, DT_FLOAT});
      if (!out.ok()) {
        ++detected;
        EXPECT_EQ(out.status().code(), Code::kDataLoss) << file << " byte " << i << ": " << out.status();
        continue;
      }
      for (size_t k = 0; k < items.size(); ++k)
        ExpectBitIdentical(items[k].second, (*out)[k], file + " byte " + std::to_string(i));
    }
    WriteFile(file, bytes);
    EXPECT_GT(detected, static_cast<int>(bytes.size()) / 2) << file;
  }
}

// An index whose checksums are right but whose entry holds a dtype code outside the DataType
// enum is DataLoss naming the code (never an out-of-range enum: undefined behaviour).
TEST(Checkpoint, ResealedIndexWithABadDtypeCodeIsDataLoss) {
  TempDir dir;
  const std::string prefix = dir.path() + "/ckpt";
  ASSERT_OK(Save(prefix, {{"v", test::MakeVector<int32_t>({1, -2, 3})}}));
  auto table = internal::bundle::ParseTable(ReadFile(prefix + ".index"), "index");
  ASSERT_OK(table.status());
  for (int code : {0, 24, 32, 101, 0x7FFFFFFF}) {
    SCOPED_TRACE("dtype code " + std::to_string(code));
    auto forged = *table;
    conflux::BundleEntryProto e;
    ASSERT_TRUE(e.ParseFromString(forged[1].second));
    e.set_dtype(static_cast<conflux::DataType>(code));
    forged[1].second = e.SerializeAsString();
    WriteFile(prefix + ".index", internal::bundle::BuildTable(forged));
    test::ExpectError(Restore(prefix, {"v"}, {DT_INT32}), Code::kDataLoss,
                      "tensor 'v' has dtype code " + std::to_string(code));
  }
}

// The earlier Conflux format (`<prefix>.cfxckpt`) stays readable: the fuzz corpus keeps files
// written by its writer (a mode byte, then the file).
TEST(Checkpoint, EarlierConfluxCheckpointsStayReadable) {
  TempDir dir;
  const std::string seed =
      ReadFile(std::string(CONFLUX_SOURCE_DIR) + "/tests/fuzz/corpus/checkpoint/model.cfxckpt");
  ASSERT_GT(seed.size(), 65u);
  WriteFile(dir.path() + "/old.cfxckpt", seed.substr(1));
  auto out = Restore(dir.path() + "/old", {"dense/kernel", "global_step"}, {DT_FLOAT, DT_INT64});
  ASSERT_OK(out.status());
  EXPECT_EQ((*out)[0].shape(), TensorShape({4, 3}));
  EXPECT_EQ((*out)[1].shape(), TensorShape());
}

// A save that fails part-way (the file-size limit stops its writes) keeps the old checkpoint.
TEST(Checkpoint, FailedSaveLeavesThePreviousCheckpointIntact) {
  TempDir dir;
  const std::string prefix = dir.path() + "/ckpt";
  std::vector<std::pair<std::string, Tensor>> old = {{"w", test::MakeVector<int32_t>({4, 5, 6})}};
  ASSERT_OK(Save(prefix, old));
  const std::string old_index = ReadFile(prefix + ".index");

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
  EXPECT_NE(s.message().find(".data-00000-of-00001.tmp."), std::string::npos) << s;
  EXPECT_EQ(FilesIn(dir.path()), kBundleFiles);
  EXPECT_EQ(ReadFile(prefix + ".index"), old_index);
  ExpectRestoresAll(prefix, old);
}

TEST(Checkpoint, MergeV2CheckpointsJoinsShardsIntoOneBundle) {
  TempDir dir;
  const std::string a = dir.path() + "/tmp/part-0", b = dir.path() + "/tmp/part-1";
  ASSERT_OK(Save(a, {{"x", test::MakeVector<float>({1, 2})}}));
  ASSERT_OK(Save(b, {{"y", test::MakeScalar<int64_t>(7)}, {"z", test::MakeStringVector({"q"})}}));
  const std::string merged = dir.path() + "/model";
  NodeDef merge = test::MakeNode("MergeV2Checkpoints", 2, {});
  ASSERT_OK(RunNode(merge, {MakeStringVector({a, b}), MakeStringScalar(merged)}).status());
  EXPECT_FALSE(fs::exists(dir.path() + "/tmp"));  // delete_old_dirs
  EXPECT_TRUE(fs::exists(merged + ".data-00000-of-00002"));
  EXPECT_TRUE(fs::exists(merged + ".data-00001-of-00002"));
  ExpectRestoresAll(merged, {{"x", test::MakeVector<float>({1, 2})},
                             {"y", test::MakeScalar<int64_t>(7)},
                             {"z", test::MakeStringVector({"q"})}});
  // The same tensor in two shards is an error naming it.
  ASSERT_OK(Save(a, {{"x", test::MakeVector<float>({1})}}));
  ASSERT_OK(Save(b, {{"x", test::MakeVector<float>({2})}}));
  test::ExpectError(RunNode(merge, {MakeStringVector({a, b}), MakeStringScalar(merged + "2")}),
                    Code::kInvalidArgument, "tensor 'x' is in " + b);
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
