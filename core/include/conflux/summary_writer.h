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
// file_version "brain.Event:2". Records are buffered; Flush appends them and syncs the file, so
// a crash loses at most what was added since the last Flush; the destructor flushes and closes.
// The file goes through an Env (conflux/env.h; Env::Default() unless given). A failed write
// (ResourceExhausted for a full disk) is returned by that Flush and by every later one: the file
// then ends in the records of the last successful Flush, perhaps followed by part of one record,
// which ReadEventFile (and TensorBoard) drop. Thread-safe.
#ifndef CONFLUX_SUMMARY_WRITER_H_
#define CONFLUX_SUMMARY_WRITER_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "conflux/env.h"
#include "conflux/graph_def.h"
#include "conflux/status.h"

namespace cfx {

class SummaryWriter {
 public:
  // Creates `logdir` (and parents) and a new events file in it, through `env`.
  static StatusOr<std::unique_ptr<SummaryWriter>> Create(const std::string& logdir,
                                                         Env* env = Env::Default());
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
  SummaryWriter(std::string path, std::unique_ptr<WritableFile> file);
  Status Append(const std::string& event);  // a serialized Event

  std::mutex mu_;
  std::string path_;
  std::unique_ptr<WritableFile> file_;
  std::string buffer_;
  Status failed_;  // the first failed write: later Flushes return it
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

// Reads an events file, checking both CRCs of every record. A last record cut short by the end
// of the file (its writer crashed or ran out of space while appending it) ends the read, as in
// TensorBoard: the complete records come back and `*truncated_tail` (when given) says so.
// DataLoss names the file and the record when a record is corrupted.
StatusOr<std::vector<EventRecord>> ReadEventFile(const std::string& path,
                                                 bool* truncated_tail = nullptr);

}  // namespace cfx

#endif  // CONFLUX_SUMMARY_WRITER_H_
