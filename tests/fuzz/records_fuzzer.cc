// libFuzzer target: a file of fixed-length records read as a session reads it (whitepaper §4.5,
// core/src/kernels/reader_kernels.cc): a FIFO queue of file names, FixedLengthRecordReaderV2,
// ReaderReadUpToV2 until the input ends, DecodeRaw of the records. Every input must end in
// records or an error status: never a crash, a hang past the step timeout, or an allocation
// beyond the device's memory_limit.
//
// Input: a mode byte, four attr bytes, then the file.
//  - mode bits 0-1: the reader's encoding ("", "ZLIB", "GZIP"; 3 is "" too); bit 2: compress the
//    file with that encoding before it is written, so that mutations reach the record logic
//    past the decompression; bits 3-4: DecodeRaw's out_type (uint8, int16, float, double).
//  - header_bytes, record_bytes, footer_bytes and hop_bytes, one byte each: 0x00-0x7f is the
//    value itself, 0x80-0xbf (b & 0x3f) * 2^24 (sizes past the file and the memory limit),
//    0xc0-0xff a negative value, -(b & 0x3f) - 1.
// Seeds (corpus/records/, written by hand): plain files with header, footer and hop, ZLIB and
// GZIP streams, a ZLIB reader on bytes that are no stream, a record larger than the file, a
// negative header and a zero record size.
#include <google/protobuf/stubs/logging.h>
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "conflux/graph_def.h"
#include "conflux/runtime.h"
#include "conflux/session.h"
#include "fuzz_runtime.h"
#include "graph_builder.h"
#include "scratch_dir.h"
#include "state/resource_mgr.h"

namespace cfx::fuzz {
namespace {

constexpr int64_t kStepTimeoutMs = 2000;
constexpr int kMaxReads = 8;
constexpr const char* kContainer = "records_fuzz";

int64_t AttrFromByte(uint8_t b) {
  if (b < 0x80) return b;
  if (b < 0xc0) return int64_t{b & 0x3f} << 24;
  return -int64_t{b & 0x3f} - 1;
}

// `data` as a zlib stream (or a gzip file with `gzip`); empty when zlib fails.
std::string Compress(const std::string& data, bool gzip) {
  z_stream z{};
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, gzip ? 16 + MAX_WBITS : MAX_WBITS, 8,
                   Z_DEFAULT_STRATEGY) != Z_OK)
    return "";
  std::string out(deflateBound(&z, data.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return rc == Z_STREAM_END ? out : "";
}

// The queue of file names holding `path`, the reader (its four sizes from `size_bytes`), and the
// read and decode.
GraphDef ReaderGraph(const std::string& path, const uint8_t* size_bytes, const char* encoding,
                     DataType out_type) {
  Tensor name(DT_STRING, TensorShape());
  name.at<std::string>(0) = path;
  Tensor batch(DT_INT64, TensorShape());
  batch.at<int64_t>(0) = 16;
  const AttrValue container = AttrValue::String(kContainer);
  test::GraphBuilder b;
  b.Op("queue", "FIFOQueueV2", {},
       {{"component_types", AttrValue::TypeList({DT_STRING})},
        {"capacity", AttrValue::Int(2)},
        {"container", container},
        {"shared_name", AttrValue::String("queue")}});
  b.Const("name", name);
  b.Op("enqueue", "QueueEnqueueV2", {"queue", "name"},
       {{"Tcomponents", AttrValue::TypeList({DT_STRING})}});
  b.Op("close", "QueueCloseV2", {"queue", "^enqueue"});
  b.Op("reader", "FixedLengthRecordReaderV2", {},
       {{"header_bytes", AttrValue::Int(AttrFromByte(size_bytes[0]))},
        {"record_bytes", AttrValue::Int(AttrFromByte(size_bytes[1]))},
        {"footer_bytes", AttrValue::Int(AttrFromByte(size_bytes[2]))},
        {"hop_bytes", AttrValue::Int(AttrFromByte(size_bytes[3]))},
        {"encoding", AttrValue::String(encoding)},
        {"container", container},
        {"shared_name", AttrValue::String("reader")}});
  b.Const("batch", batch);
  b.Op("read", "ReaderReadUpToV2", {"reader", "queue", "batch"});
  b.Op("decode", "DecodeRaw", {"read:1"}, {{"out_type", AttrValue::Type(out_type)}});
  return b.graph();
}

struct Harness {
  std::unique_ptr<Runtime> runtime;
  std::unique_ptr<ScratchDir> dir;
};

Harness& TheHarness() {
  static Harness* harness = [] {
    google::protobuf::SetLogHandler(nullptr);
    auto* h = new Harness;
    // The CPU device; the reader, queue and DecodeRaw kernels are the core's.
    h->runtime = CreateRuntimeOrDie(CpuOnlyFuzzConfig(), "records_fuzzer");
    h->dir = std::make_unique<ScratchDir>("records");
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
  using namespace cfx::fuzz;
  if (size < 5) return 0;
  Harness& h = TheHarness();
  // CONFLUX_FUZZ_VERBOSE=1 prints how each input ended, for replaying one by hand.
  static const bool verbose = std::getenv("CONFLUX_FUZZ_VERBOSE") != nullptr;
  const int encoding = data[0] & 3;
  const char* encodings[] = {"", "ZLIB", "GZIP", ""};
  const DataType out_types[] = {DT_UINT8, DT_INT16, DT_FLOAT, DT_DOUBLE};
  std::string file(reinterpret_cast<const char*>(data) + 5, size - 5);
  if ((data[0] & 4) && (encoding == 1 || encoding == 2)) file = Compress(file, encoding == 2);
  const std::string path = h.dir->Write("records.bin", file);
  const GraphDef graph =
      ReaderGraph(path, data + 1, encodings[encoding], out_types[(data[0] >> 3) & 3]);
  Status status;
  {  // the session closes before its resources go
    auto session = Session::Create(h.runtime.get(), graph);
    status = session.status();
    RunOptions options;
    options.timeout_ms = kStepTimeoutMs;
    std::vector<Tensor> outputs;
    if (session.ok()) status = (*session)->Run(options, {}, {}, {"close"}, &outputs, nullptr);
    for (int i = 0; i < kMaxReads && status.ok(); ++i)
      status = (*session)->Run(options, {}, {"read:0", "decode:0"}, {}, &outputs, nullptr);
  }
  for (const auto& device : h.runtime->devices()) device->resource_mgr()->Cleanup(kContainer);
  if (verbose) std::fprintf(stderr, "records: %s\n", status.ToString().c_str());
  return 0;
}
