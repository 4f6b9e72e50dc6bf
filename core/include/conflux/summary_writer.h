// SummaryWriter: TensorBoard event files (TensorFlow's format: TFRecord framing with masked
// CRC-32C, Event protobufs with TensorFlow's field numbers), so that TensorBoard shows scalars,
// histograms, images and the graph of a run.
//
//   auto writer = SummaryWriter::Create("logs").value();
//   writer->AddGraph(graph_def);
//   writer->AddSummary(summary_tensor.at<std::string>(0), step);  // from a *Summary op
//   writer->AddScalar("loss", 0.25f, step);
//
// The file is "<logdir>/events.out.tfevents.<seconds>.<host>", first record an Event with
// file_version "brain.Event:2". Records are buffered; Flush writes them; the destructor flushes
// and closes. Thread-safe.
#ifndef CONFLUX_SUMMARY_WRITER_H_
#define CONFLUX_SUMMARY_WRITER_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "conflux/graph_def.h"
#include "conflux/status.h"

namespace cfx {

class SummaryWriter {
 public:
  // Creates `logdir` (and parents) and a new events file in it.
  static StatusOr<std::unique_ptr<SummaryWriter>> Create(const std::string& logdir);
  ~SummaryWriter();
  SummaryWriter(const SummaryWriter&) = delete;
  SummaryWriter& operator=(const SummaryWriter&) = delete;

  // `summary`: a serialized Summary (the output of ScalarSummary, MergeSummary, ...).
  Status AddSummary(const std::string& summary, int64_t step);
  Status AddScalar(const std::string& tag, float value, int64_t step);
  Status AddGraph(const GraphDef& graph);
  Status Flush();
  const std::string& path() const { return path_; }

 private:
  explicit SummaryWriter(std::string path);
  Status Append(const std::string& event);  // a serialized Event

  std::mutex mu_;
  std::string path_;
  std::string buffer_;
};

// One record of an events file, decoded (for tools and tests).
struct EventRecord {
  double wall_time = 0;
  int64_t step = 0;
  std::string file_version;
  bool has_graph = false;
  struct Value {
    std::string tag;
    enum Kind { kScalar, kHistogram, kImage, kOther } kind = kOther;
    float scalar = 0;
    double histogram_num = 0, histogram_sum = 0;
    int image_height = 0, image_width = 0;
    std::string image_png;
  };
  std::vector<Value> values;
};

// Reads an events file, checking both CRCs of every record. DataLoss names the file and the
// record on truncation or corruption.
StatusOr<std::vector<EventRecord>> ReadEventFile(const std::string& path);

}  // namespace cfx

#endif  // CONFLUX_SUMMARY_WRITER_H_
