// Record readers and DecodeRaw, driven through the client API: records and keys in order across
// files, header/footer/hop, GZIP, the end of input, bad files, and the real Fashion-MNIST files.
#include <zlib.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "conflux/cc/client_session.h"
#include "conflux/cc/ops/standard_ops.h"
#include "kernel_test_util.h"

namespace cfx {
namespace {

using test::TestRuntime;
namespace fs = std::filesystem;

fs::path ReaderDir() {
  fs::path d = fs::path(CONFLUX_BINARY_DIR) / "tests" / "reader_test" /
               ::testing::UnitTest::GetInstance()->current_test_info()->name();
  fs::create_directories(d);
  return d;
}

void WriteFile(const fs::path& p, const std::string& bytes, bool gzip = false) {
  if (!gzip) {
    std::ofstream(p, std::ios::binary) << bytes;
    return;
  }
  gzFile f = gzopen(p.c_str(), "wb");
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
}

struct Pipeline {
  Scope root;
  Output files, keys, values;
  Operation fill_and_close;
};

// A filename queue holding `names` (then closed) and a reader of `record` bytes per record.
Pipeline MakePipeline(const std::string& prefix, const std::vector<std::string>& names,
                      int64_t record, int64_t n, ops::FixedLengthRecordReaderV2Attrs attrs = {}) {
  Pipeline p{Scope::NewRootScope(&TestRuntime()).NewSubScope(prefix), {}, {}, {}, {}};
  Scope& s = p.root;
  p.files = ops::FIFOQueueV2(s, {DT_STRING});
  Tensor t(DT_STRING, TensorShape({static_cast<int64_t>(names.size())}));
  for (size_t i = 0; i < names.size(); ++i) t.at<std::string>(i) = names[i];
  Operation fill = ops::QueueEnqueueManyV2(s, p.files, {ops::Const(s, t)});
  p.fill_and_close = ops::QueueCloseV2(s.WithControlDependencies({fill}), p.files);
  Output reader = ops::FixedLengthRecordReaderV2(s, record, attrs);
  auto read = ops::ReaderReadUpToV2(s, reader, p.files, int64_t{n});
  p.keys = read.keys;
  p.values = read.values;
  return p;
}

TEST(Reader, ReadsRecordsInOrderAcrossFilesWithHeaderAndFooter) {
  fs::path d = ReaderDir();
  WriteFile(d / "a", "HHabcdefFF");     // header 2, records "abc" "def", footer 2
  WriteFile(d / "b", "HHghiFF", true);  // gzip
  Pipeline p = MakePipeline("plain", {(d / "a").string()}, 3, 10,
                            ops::FixedLengthRecordReaderV2Attrs().HeaderBytes(2).FooterBytes(2));
  ClientSession s(p.root, &TestRuntime());
  std::vector<Tensor> out;
  ASSERT_OK(s.Run({}, {}, {p.fill_and_close}, nullptr));
  ASSERT_OK(s.Run({}, {p.keys, p.values}, &out));
  ASSERT_EQ(out[1].num_elements(), 2);  // the queue is closed: fewer than 10
  EXPECT_EQ(out[1].at<std::string>(0), "abc");
  EXPECT_EQ(out[1].at<std::string>(1), "def");
  EXPECT_EQ(out[0].at<std::string>(1), (d / "a").string() + ":1");
  Status end = s.Run({}, {p.values}, &out);
  EXPECT_EQ(end.code(), Code::kOutOfRange) << end;

  Pipeline z = MakePipeline("gzip_only", {(d / "b").string()}, 3, 5,
                            ops::FixedLengthRecordReaderV2Attrs()
                                .HeaderBytes(2).FooterBytes(2).Encoding("GZIP"));
  ClientSession zs(z.root, &TestRuntime());
  ASSERT_OK(zs.Run({}, {}, {z.fill_and_close}, nullptr));
  ASSERT_OK(zs.Run({}, {z.values}, &out));
  ASSERT_EQ(out[0].num_elements(), 1);
  EXPECT_EQ(out[0].at<std::string>(0), "ghi");
}

TEST(Reader, BatchesSpanFilesAndHopBytesOverlapRecords) {
  fs::path d = ReaderDir();
  WriteFile(d / "x", "0123456789");
  WriteFile(d / "y", "abcdef");
  Pipeline p = MakePipeline("spans", {(d / "x").string(), (d / "y").string()}, 4, 3,
                            ops::FixedLengthRecordReaderV2Attrs().HopBytes(3));
  ClientSession s(p.root, &TestRuntime());
  std::vector<Tensor> out;
  ASSERT_OK(s.Run({}, {}, {p.fill_and_close}, nullptr));
  // x: "0123" "3456" "6789"; y: "abcd" (hop 3: "def" is too short).
  ASSERT_OK(s.Run({}, {p.values}, &out));
  ASSERT_EQ(out[0].num_elements(), 3);
  EXPECT_EQ(out[0].at<std::string>(1), "3456");
  ASSERT_OK(s.Run({}, {p.values}, &out));
  ASSERT_EQ(out[0].num_elements(), 1);
  EXPECT_EQ(out[0].at<std::string>(0), "abcd");
}

TEST(Reader, BadFilesAreErrorsNamingTheFile) {
  fs::path d = ReaderDir();
  WriteFile(d / "odd", "12345");
  Pipeline p = MakePipeline("bad", {(d / "odd").string()}, 2, 1);
  ClientSession s(p.root, &TestRuntime());
  ASSERT_OK(s.Run({}, {}, {p.fill_and_close}, nullptr));
  Status st = s.Run({}, {p.values}, nullptr);
  EXPECT_EQ(st.code(), Code::kDataLoss) << st;
  EXPECT_NE(st.message().find("not a multiple of record_bytes"), std::string::npos) << st;
  Pipeline m = MakePipeline("missing", {(d / "nope").string()}, 2, 1);
  ClientSession ms(m.root, &TestRuntime());
  ASSERT_OK(ms.Run({}, {}, {m.fill_and_close}, nullptr));
  st = ms.Run({}, {m.values}, nullptr);
  EXPECT_EQ(st.code(), Code::kNotFound) << st;
  EXPECT_NE(st.message().find("nope"), std::string::npos) << st;
}

TEST(Reader, BlockedReadIsReleasedByTheStepTimeout) {
  Pipeline p = MakePipeline("blocked", {}, 2, 1);  // never filled: the read waits
  ClientSession s(p.root, &TestRuntime());
  RunOptions opts;
  opts.timeout_ms = 100;
  std::vector<Tensor> out;
  Status st = s.Run(opts, {}, {p.values}, {}, &out, nullptr);
  EXPECT_EQ(st.code(), Code::kDeadlineExceeded) << st;
}

TEST(DecodeRaw, DecodesBytesWithEitherEndianness) {
  Scope root = Scope::NewRootScope(&TestRuntime());
  Tensor bytes(DT_STRING, TensorShape({2}));
  bytes.at<std::string>(0) = std::string("\x01\x00\x00\x00\x02\x00\x00\x00", 8);
  bytes.at<std::string>(1) = std::string("\x00\x00\x00\x03\xff\xff\xff\xff", 8);
  Output le = ops::DecodeRaw(root, ops::Const(root, bytes), DT_INT32);
  Output be = ops::DecodeRaw(root, ops::Const(root, bytes), DT_INT32,
                             ops::DecodeRawAttrs().LittleEndian(false));
  Tensor ragged(DT_STRING, TensorShape({2}));
  ragged.at<std::string>(0) = "ab";
  ragged.at<std::string>(1) = "abcd";
  Output bad = ops::DecodeRaw(root, ops::Const(root, ragged), DT_UINT8);
  ClientSession s(root, &TestRuntime());
  std::vector<Tensor> out;
  ASSERT_OK(s.Run({}, {le, be}, &out));
  EXPECT_EQ(out[0].shape(), TensorShape({2, 2}));
  EXPECT_EQ(out[0].at<int32_t>(1), 2);
  EXPECT_EQ(out[0].at<int32_t>(3), -1);
  EXPECT_EQ(out[1].at<int32_t>(0), 0x01000000);
  EXPECT_EQ(out[1].at<int32_t>(2), 3);
  Status st = s.Run({}, {bad}, &out);
  EXPECT_NE(st.message().find("same length"), std::string::npos) << st;
}

TEST(Reader, ReadsTheFashionMnistTestSet) {
  const std::string dir = "/usr/share/datasets/fashion-mnist/";
  if (!fs::exists(dir + "t10k-labels-idx1-ubyte.gz"))
    GTEST_SKIP() << "Fashion-MNIST is not installed (Debian package dataset-fashion-mnist)";
  // The label file: header 8 bytes (magic 0x00000801, count 10000), then one byte per label.
  Pipeline p = MakePipeline("fashion", {dir + "t10k-labels-idx1-ubyte.gz"}, 1, 20000,
                            ops::FixedLengthRecordReaderV2Attrs().HeaderBytes(8).Encoding("GZIP"));
  Pipeline h = MakePipeline("fashion_header", {dir + "t10k-images-idx3-ubyte.gz"}, 16, 1,
                            ops::FixedLengthRecordReaderV2Attrs().Encoding("GZIP"));
  Output labels = ops::DecodeRaw(p.root, p.values, DT_UINT8);
  Output header = ops::DecodeRaw(h.root, h.values, DT_INT32,
                                 ops::DecodeRawAttrs().LittleEndian(false));
  ClientSession s(p.root, &TestRuntime());
  ClientSession sh(h.root, &TestRuntime());
  std::vector<Tensor> out;
  ASSERT_OK(s.Run({}, {}, {p.fill_and_close}, nullptr));
  ASSERT_OK(s.Run({}, {labels}, &out));
  EXPECT_EQ(out[0].shape(), TensorShape({10000, 1}));
  for (int64_t i = 0; i < 10000; ++i) ASSERT_LT(out[0].at<uint8_t>(i), 10);
  ASSERT_OK(sh.Run({}, {}, {h.fill_and_close}, nullptr));
  ASSERT_OK(sh.Run({}, {header}, &out));
  EXPECT_EQ(out[0].at<int32_t>(0), 0x803);  // magic: unsigned bytes, 3 dims
  EXPECT_EQ(out[0].at<int32_t>(1), 10000);
  EXPECT_EQ(out[0].at<int32_t>(2), 28);
  EXPECT_EQ(out[0].at<int32_t>(3), 28);
}

}  // namespace
}  // namespace cfx
