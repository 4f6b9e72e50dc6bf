// SummaryWriter and ReadEventFile (see conflux/summary_writer.h).
#include "conflux/summary_writer.h"

#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>

#include "conflux/sdk/crc32c.h"
#include "proto/event.pb.h"

namespace cfx {
namespace {

// TFRecord stores CRC-32C masked: rotated right by 15 bits plus a constant.
uint32_t MaskedCrc(const char* data, size_t n) {
  const uint32_t crc = sdk::Crc32c(data, n);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

template <typename T>
void PutLE(std::string* out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));  // little-endian hosts
  out->append(b, sizeof(T));
}

}  // namespace

SummaryWriter::SummaryWriter(std::string path, std::unique_ptr<WritableFile> file)
    : path_(std::move(path)), file_(std::move(file)) {}

SummaryWriter::~SummaryWriter() {
  (void)Flush();
  (void)file_->Close();
}

StatusOr<std::unique_ptr<SummaryWriter>> SummaryWriter::Create(const std::string& logdir,
                                                               Env* env) {
  Status made = env->CreateDir(logdir);
  if (!made.ok()) return made.WithPrefix("cannot create log directory " + logdir + ": ");
  char host[256] = "localhost";
  gethostname(host, sizeof host - 1);
  const std::string path = StrCat(logdir, "/events.out.tfevents.",
                                  static_cast<int64_t>(Now()), ".", host);
  auto file = env->NewWritableFile(path);
  if (!file.ok()) return file.status().WithPrefix("cannot create events file: ");
  std::unique_ptr<SummaryWriter> w(new SummaryWriter(path, std::move(*file)));
  conflux::Event e;
  e.set_wall_time(Now());
  e.set_file_version("brain.Event:2");
  CFX_RETURN_IF_ERROR(w->Append(e.SerializeAsString()));
  CFX_RETURN_IF_ERROR(w->Flush());
  // The new file's name is durable too: a later Flush syncs only its contents.
  CFX_RETURN_IF_ERROR(env->SyncDir(logdir));
  return w;
}

Status SummaryWriter::Append(const std::string& event) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string header;
  PutLE<uint64_t>(&header, event.size());
  buffer_ += header;
  PutLE<uint32_t>(&buffer_, MaskedCrc(header.data(), header.size()));
  buffer_ += event;
  PutLE<uint32_t>(&buffer_, MaskedCrc(event.data(), event.size()));
  return Status();
}

Status SummaryWriter::AddSummary(const std::string& summary, int64_t step) {
  conflux::Event e;
  e.set_wall_time(Now());
  e.set_step(step);
  if (!e.mutable_summary()->ParseFromString(summary))
    return errors::InvalidArgument("AddSummary: not a serialized Summary");
  return Append(e.SerializeAsString());
}

Status SummaryWriter::AddScalar(const std::string& tag, float value, int64_t step) {
  conflux::Event e;
  e.set_wall_time(Now());
  e.set_step(step);
  auto* v = e.mutable_summary()->add_value();
  v->set_tag(tag);
  v->set_simple_value(value);
  return Append(e.SerializeAsString());
}

Status SummaryWriter::AddGraph(const GraphDef& graph) {
  conflux::Event e;
  e.set_wall_time(Now());
  e.set_graph_def(SerializeGraphDef(graph, GraphFormat::kBinary));
  return Append(e.SerializeAsString());
}

Status SummaryWriter::Flush() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!failed_.ok()) return failed_;
  if (buffer_.empty()) return Status();
  Status s = file_->Append(buffer_);
  if (s.ok()) s = file_->Sync();
  if (!s.ok()) {
    // What follows a partly written record could not be read: stop here for good.
    failed_ = s.WithPrefix("events file " + path_ + " stopped at its last complete flush: ");
    return failed_;
  }
  buffer_.clear();
  return Status();
}

StatusOr<std::vector<EventRecord>> ReadEventFile(const std::string& path, bool* truncated_tail) {
  if (truncated_tail != nullptr) *truncated_tail = false;
  auto tail = [&] {
    if (truncated_tail != nullptr) *truncated_tail = true;
  };
  std::ifstream f(path, std::ios::binary);
  if (!f) return errors::NotFound("cannot open events file ", path);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string data = ss.str();
  std::vector<EventRecord> out;
  size_t pos = 0;
  while (pos < data.size()) {
    const size_t record = out.size();
    if (data.size() - pos < 12) {
      tail();
      break;
    }
    uint64_t len;
    uint32_t len_crc;
    std::memcpy(&len, data.data() + pos, 8);
    std::memcpy(&len_crc, data.data() + pos + 8, 4);
    if (len_crc != MaskedCrc(data.data() + pos, 8))
      return errors::DataLoss(path, ": record ", record, " has a bad length checksum");
    pos += 12;
    if (data.size() - pos < 4 || data.size() - pos - 4 < len) {
      tail();
      break;
    }
    uint32_t crc;
    std::memcpy(&crc, data.data() + pos + len, 4);
    if (crc != MaskedCrc(data.data() + pos, len))
      return errors::DataLoss(path, ": record ", record, " has a bad data checksum");
    conflux::Event e;
    if (!e.ParseFromArray(data.data() + pos, static_cast<int>(len)))
      return errors::DataLoss(path, ": record ", record, " is not an Event");
    pos += len + 4;
    EventRecord r;
    r.wall_time = e.wall_time();
    r.step = e.step();
    r.file_version = e.file_version();
    r.has_graph = e.has_graph_def();
    for (const auto& v : e.summary().value()) {
      EventRecord::Value x;
      x.tag = v.tag();
      if (v.has_simple_value()) {
        x.kind = EventRecord::Value::kScalar;
        x.scalar = v.simple_value();
      } else if (v.has_histo()) {
        x.kind = EventRecord::Value::kHistogram;
        x.histogram_num = v.histo().num();
        x.histogram_sum = v.histo().sum();
      } else if (v.has_image()) {
        x.kind = EventRecord::Value::kImage;
        x.image_height = v.image().height();
        x.image_width = v.image().width();
        x.image_png = v.image().encoded_image_string();
      }
      r.values.push_back(std::move(x));
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace cfx
