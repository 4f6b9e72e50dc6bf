// Summary ops and the events-file writer: a run writes scalars, a histogram, images and the
// graph; ReadEventFile reads them back with both CRCs checked; PNG images decode to the pixels
// (decoded here with zlib); corrupted files are errors and a truncated last record ends the read;
// MergeSummary refuses duplicate tags.
#include <zlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "conflux/cc/client_session.h"
#include "conflux/cc/ops/standard_ops.h"
#include "conflux/summary_writer.h"
#include "kernel_test_util.h"

namespace cfx {
namespace {

using test::TestRuntime;
namespace fs = std::filesystem;

fs::path SummaryDir() {
  fs::path d = fs::path(CONFLUX_BINARY_DIR) / "tests" / "summary_test" /
               ::testing::UnitTest::GetInstance()->current_test_info()->name();
  fs::remove_all(d);
  return d;
}

uint32_t Be32(const std::string& s, size_t at) {
  return (uint32_t(uint8_t(s[at])) << 24) | (uint32_t(uint8_t(s[at + 1])) << 16) |
         (uint32_t(uint8_t(s[at + 2])) << 8) | uint32_t(uint8_t(s[at + 3]));
}

// Decodes an 8-bit, unfiltered PNG of `channels` channels (what ImageSummary writes).
std::vector<uint8_t> DecodePng(const std::string& png, int* w, int* h) {
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  std::string idat;
  int channels = 0;
  for (size_t pos = 8; pos + 12 <= png.size();) {
    const uint32_t len = Be32(png, pos);
    const std::string type = png.substr(pos + 4, 4);
    const std::string body = png.substr(pos + 8, len);
    const uint32_t crc = Be32(png, pos + 8 + len);
    EXPECT_EQ(crc, crc32(0, reinterpret_cast<const Bytef*>(png.data() + pos + 4), len + 4)) << type;
    if (type == "IHDR") {
      *w = static_cast<int>(Be32(body, 0));
      *h = static_cast<int>(Be32(body, 4));
      channels = body[9] == 0 ? 1 : body[9] == 2 ? 3 : body[9] == 6 ? 4 : 2;
    }
    if (type == "IDAT") idat += body;
    pos += 12 + len;
  }
  std::vector<uint8_t> raw((*w * channels + 1) * *h);
  uLongf n = raw.size();
  EXPECT_EQ(uncompress(raw.data(), &n, reinterpret_cast<const Bytef*>(idat.data()), idat.size()),
            Z_OK);
  std::vector<uint8_t> pixels;
  for (int y = 0; y < *h; ++y) {
    EXPECT_EQ(raw[y * (*w * channels + 1)], 0) << "filter byte";
    pixels.insert(pixels.end(), raw.begin() + y * (*w * channels + 1) + 1,
                  raw.begin() + (y + 1) * (*w * channels + 1));
  }
  return pixels;
}

TEST(Summary, ARunWritesEveryKindAndReadsBack) {
  const fs::path dir = SummaryDir();
  Scope root = Scope::NewRootScope(&TestRuntime());
  Output loss = ops::Placeholder(root, DT_FLOAT);
  Output values = ops::Const(root, {-2.f, 0.f, 0.5f, 0.5f, 3.f});
  Output image = ops::Const(root, Input({0.f, 1.f, 2.f, 4.f, 0.f, 8.f}, {1, 2, 3, 1}));
  Output merged = ops::MergeSummary(
      root, {ops::ScalarSummary(root, std::string("loss"), loss),
             ops::HistogramSummary(root, std::string("values"), values),
             ops::ImageSummary(root, std::string("input"), image)});
  ClientSession session(root, &TestRuntime());
  auto writer = SummaryWriter::Create(dir.string());
  ASSERT_OK(writer.status());
  GraphDef g;
  ASSERT_OK(root.ToGraphDef(&g));
  ASSERT_OK((*writer)->AddGraph(g));
  std::vector<Tensor> out;
  for (int step : {1, 2}) {
    ASSERT_OK(session.Run({{loss, 1.5f / step}}, {merged}, &out));
    ASSERT_OK((*writer)->AddSummary(out[0].at<std::string>(0), step));
  }
  ASSERT_OK((*writer)->Flush());
  EXPECT_EQ(fs::path((*writer)->path()).filename().string().rfind("events.out.tfevents.", 0), 0u);
  auto events = ReadEventFile((*writer)->path());
  ASSERT_OK(events.status());
  ASSERT_EQ(events->size(), 4u);
  EXPECT_EQ((*events)[0].file_version, "brain.Event:2");
  EXPECT_TRUE((*events)[1].has_graph);
  const EventRecord& second = (*events)[3];
  EXPECT_EQ(second.step, 2);
  ASSERT_EQ(second.values.size(), 3u);
  EXPECT_EQ(second.values[0].tag, "loss");
  EXPECT_FLOAT_EQ(second.values[0].scalar, 0.75f);
  EXPECT_EQ(second.values[1].kind, EventRecord::Value::kHistogram);
  EXPECT_DOUBLE_EQ(second.values[1].histogram_num, 5);
  EXPECT_DOUBLE_EQ(second.values[1].histogram_sum, 2);
  EXPECT_EQ(second.values[2].tag, "input/image");
  int w = 0, h = 0;
  std::vector<uint8_t> px = DecodePng(second.values[2].image_png, &w, &h);
  EXPECT_EQ(w, 3);
  EXPECT_EQ(h, 2);
  // Non-negative floats scale so that the largest (8) is 255.
  const float in[] = {0, 1, 2, 4, 0, 8};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(px[i], static_cast<uint8_t>(in[i] * 255 / 8)) << i;
}

TEST(Summary, CorruptedFilesAreDataLossTruncatedTailsEndTheRead) {
  const fs::path dir = SummaryDir();
  std::string path;
  {
    auto writer = SummaryWriter::Create(dir.string());
    ASSERT_OK(writer.status());
    ASSERT_OK((*writer)->AddScalar("x", 1.f, 7));
    path = (*writer)->path();
  }
  auto ok = ReadEventFile(path);
  ASSERT_OK(ok.status());
  ASSERT_EQ(ok->size(), 2u);
  EXPECT_EQ((*ok)[1].step, 7);
  std::string bytes;
  {
    std::ifstream f(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(f), {});
  }
  std::string bad = bytes;
  bad[bad.size() - 6] ^= 0x40;  // inside the last record's data
  std::ofstream(dir / "bad", std::ios::binary) << bad;
  Status s = ReadEventFile((dir / "bad").string()).status();
  EXPECT_EQ(s.code(), Code::kDataLoss) << s;
  EXPECT_NE(s.message().find("record 1"), std::string::npos) << s;
  // A last record cut short (a crash mid-append) ends the read after the complete ones.
  std::ofstream(dir / "short", std::ios::binary) << bytes.substr(0, bytes.size() - 3);
  bool truncated = false;
  auto cut = ReadEventFile((dir / "short").string(), &truncated);
  ASSERT_OK(cut.status());
  EXPECT_EQ(cut->size(), 1u);
  EXPECT_EQ((*cut)[0].file_version, "brain.Event:2");
  EXPECT_TRUE(truncated);
  ASSERT_OK(ReadEventFile(path, &truncated).status());
  EXPECT_FALSE(truncated);
}

TEST(Summary, MergeRefusesDuplicateTagsAndHistogramRefusesNan) {
  Scope root = Scope::NewRootScope(&TestRuntime());
  Output a = ops::ScalarSummary(root, std::string("t"), 1.f);
  Output b = ops::ScalarSummary(root, std::string("t"), 2.f);
  Output merged = ops::MergeSummary(root, {a, b});
  Output nan = ops::HistogramSummary(root, std::string("h"), ops::Const(root, {NAN}));
  ClientSession session(root, &TestRuntime());
  std::vector<Tensor> out;
  Status s = session.Run({}, {merged}, &out);
  EXPECT_NE(s.message().find("Duplicate tag t"), std::string::npos) << s;
  s = session.Run({}, {nan}, &out);
  EXPECT_NE(s.message().find("Nan in summary histogram for: h"), std::string::npos) << s;
}

// An events file written by TensorBoard's own writer (tests/fixtures/events/make_events.py):
// same framing, checksums and field numbers.
TEST(Summary, ReadsAFileTensorBoardWrote) {
  auto events = ReadEventFile(std::string(CONFLUX_SOURCE_DIR) +
                              "/tests/fixtures/events/tensorboard.tfevents");
  ASSERT_OK(events.status());
  ASSERT_EQ(events->size(), 3u);
  EXPECT_EQ((*events)[0].file_version, "brain.Event:2");
  EXPECT_DOUBLE_EQ((*events)[0].wall_time, 1700000000.0);
  EXPECT_TRUE((*events)[1].has_graph);
  const EventRecord& e = (*events)[2];
  EXPECT_EQ(e.step, 42);
  ASSERT_EQ(e.values.size(), 3u);
  EXPECT_EQ(e.values[0].tag, "loss");
  EXPECT_EQ(e.values[0].kind, EventRecord::Value::kScalar);
  EXPECT_FLOAT_EQ(e.values[0].scalar, 0.25f);
  EXPECT_EQ(e.values[1].kind, EventRecord::Value::kHistogram);
  EXPECT_DOUBLE_EQ(e.values[1].histogram_num, 3);
  EXPECT_DOUBLE_EQ(e.values[1].histogram_sum, 1.5);
  EXPECT_EQ(e.values[2].kind, EventRecord::Value::kImage);
  EXPECT_EQ(e.values[2].image_height, 2);
  EXPECT_EQ(e.values[2].image_width, 3);
  EXPECT_EQ(e.values[2].image_png, "not-a-png");
}

}  // namespace
}  // namespace cfx
