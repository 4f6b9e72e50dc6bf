#include "bench_command.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <sstream>

#include "conflux/allocator.h"
#include "conflux/graph_def.h"
#include "conflux/session.h"
#include "run_command.h"

namespace cfx {
namespace {

// A whole number of at least `min` from --`flag`.
StatusOr<int64_t> ParseCount(const std::string& text, const char* flag, int64_t min) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || v < min)
    return errors::InvalidArgument("bad ", flag, " '", text, "': expected a whole number >= ", min);
  return v;
}

// Random values of `dtype` and `shape` for a placeholder (see BenchCommand).
StatusOr<Tensor> RandomInput(const std::string& spec, DataType dtype, const TensorShape& shape) {
  Tensor t(dtype, shape);
  std::mt19937 gen(1);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const int64_t n = t.num_elements();
  auto fill = [&](auto* p, auto make) {
    for (int64_t i = 0; i < n; ++i) p[i] = make();
  };
  switch (dtype) {
    case DT_FLOAT:
      fill(t.data<float>(), [&] { return static_cast<float>(unit(gen)); });
      break;
    case DT_DOUBLE:
      fill(t.data<double>(), [&] { return unit(gen); });
      break;
    case DT_INT32:
      fill(t.data<int32_t>(), [&] { return static_cast<int32_t>(gen() % 10); });
      break;
    case DT_INT64:
      fill(t.data<int64_t>(), [&] { return static_cast<int64_t>(gen() % 10); });
      break;
    case DT_UINT8:
      fill(t.data<uint8_t>(), [&] { return static_cast<uint8_t>(gen() % 10); });
      break;
    case DT_BOOL:
      fill(t.data<bool>(), [&] { return (gen() & 1) != 0; });
      break;
    default:
      return errors::InvalidArgument("--input-shape ", spec, ": the placeholder holds ",
                                     DataTypeString(dtype),
                                     ", for which no random values are made; use --feed");
  }
  return t;
}

// "NODE[:PORT]:D1,D2,..." for a placeholder of `graph`: its feed name and random values.
StatusOr<std::pair<std::string, Tensor>> ParseInputShape(const std::string& spec,
                                                         const GraphDef& graph) {
  auto bad = [&](const std::string& why) {
    return errors::InvalidArgument("bad --input-shape '", spec, "': ", why,
                                   " (expected NODE[:PORT]:D1,D2,... e.g. x:1,224,224,3)");
  };
  const size_t colon = spec.rfind(':');
  if (colon == std::string::npos || colon == 0) return bad("no ':' before the dimensions");
  const std::string name = spec.substr(0, colon), dims_text = spec.substr(colon + 1);
  std::vector<int64_t> dims;
  size_t start = 0;
  while (!dims_text.empty() && start <= dims_text.size()) {
    size_t comma = dims_text.find(',', start);
    if (comma == std::string::npos) comma = dims_text.size();
    const std::string d = dims_text.substr(start, comma - start);
    int64_t v = 0;
    auto [end, ec] = std::from_chars(d.data(), d.data() + d.size(), v);
    if (d.empty() || ec != std::errc() || end != d.data() + d.size() || v < 0 || v > (1 << 30))
      return bad("dimension '" + d + "' is not a whole number in [0, 2^30]");
    dims.push_back(v);
    start = comma + 1;
  }
  int64_t elements = 1;
  for (int64_t d : dims)
    if (__builtin_mul_overflow(elements, d, &elements) || elements > (int64_t{1} << 31))
      return bad("more than 2^31 elements");
  const TensorShape shape(dims);
  StatusOr<TensorId> id = ParseTensorName(name);
  if (!id.ok()) return bad(id.status().message());
  const NodeDef* node = nullptr;
  for (const NodeDef& n : graph.node)
    if (n.name == id->node) node = &n;
  if (node == nullptr) return bad("the graph has no node '" + id->node + "'");
  auto dtype = node->attr.find("dtype");
  if (dtype == node->attr.end() || dtype->second.kind != AttrValue::Kind::kType)
    return bad("node '" + id->node + "' (op " + node->op + ") has no dtype attr; use --feed");
  CFX_ASSIGN_OR_RETURN(Tensor t, RandomInput(spec, dtype->second.type, shape));
  return std::make_pair(name, std::move(t));
}

// The value at fraction `q` of the sorted `v` (nearest rank).
double Percentile(const std::vector<double>& sorted, double q) {
  const size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

struct OpTime {
  std::string op;
  double ms = 0;
  int nodes = 0;
};

Status Bench(Runtime* runtime, const BenchRequest& r) {
  CFX_RETURN_IF_ERROR(CheckFetchSpecs(r.fetches, r.targets));
  CFX_ASSIGN_OR_RETURN(const int64_t runs, ParseCount(r.runs, "--runs", 1));
  CFX_ASSIGN_OR_RETURN(const int64_t warmup, ParseCount(r.warmup, "--warmup", 0));
  CFX_ASSIGN_OR_RETURN(const int64_t top, ParseCount(r.top, "--top", 0));
  CFX_ASSIGN_OR_RETURN(GraphDef graph, ReadGraphDefFile(r.graph_path, runtime->config().limits));
  std::vector<std::pair<std::string, Tensor>> feeds;
  CFX_RETURN_IF_ERROR(ParseFeedSpecs(r.feeds, &feeds));
  for (const std::string& spec : r.input_shapes) {
    CFX_ASSIGN_OR_RETURN(auto feed, ParseInputShape(spec, graph));
    feeds.push_back(std::move(feed));
  }
  auto session = Session::Create(runtime, graph);
  if (!session.ok()) return session.status().WithPrefix(r.graph_path + ": ");
  Session& s = **session;
  std::vector<Tensor> outputs;
  for (int64_t i = 0; i < warmup; ++i)
    CFX_RETURN_IF_ERROR(s.Run(feeds, r.fetches, r.targets, &outputs));

  for (const auto& d : runtime->devices()) d->allocator()->ResetPeak();
  std::vector<double> ms;
  for (int64_t i = 0; i < runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    CFX_RETURN_IF_ERROR(s.Run(feeds, r.fetches, r.targets, &outputs));
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::vector<std::pair<std::string, int64_t>> peaks;
  for (const auto& d : runtime->devices())
    peaks.emplace_back(d->full_name(), d->allocator()->stats().peak_bytes_in_use);

  RunOptions traced;
  traced.trace = true;
  RunMetadata metadata;
  CFX_RETURN_IF_ERROR(s.Run(traced, feeds, r.fetches, r.targets, &outputs, &metadata));
  std::map<std::string, OpTime> by_op;
  double all_ms = 0;
  for (const auto& device : metadata.step_stats.devices)
    for (const auto& n : device.nodes) {
      OpTime& t = by_op[n.op];
      t.op = n.op;
      t.ms += static_cast<double>(n.end_us - n.start_us) / 1e3;
      t.nodes += 1;
      all_ms += static_cast<double>(n.end_us - n.start_us) / 1e3;
    }
  std::vector<OpTime> ops;
  for (auto& [op, t] : by_op) ops.push_back(t);
  std::sort(ops.begin(), ops.end(), [](const OpTime& a, const OpTime& b) { return a.ms > b.ms; });
  if (static_cast<int64_t>(ops.size()) > top) ops.resize(static_cast<size_t>(top));

  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  double mean = 0;
  for (double v : ms) mean += v / static_cast<double>(ms.size());
  const double median = Percentile(sorted, 0.5), p90 = Percentile(sorted, 0.9),
               p99 = Percentile(sorted, 0.99);
  std::ostringstream out;
  out.precision(4);
  if (r.json) {
    out << "{\"graph\": \"" << r.graph_path << "\", \"runs\": " << runs
        << ", \"warmup\": " << warmup << ", \"latency_ms\": {\"min\": " << sorted.front()
        << ", \"median\": " << median << ", \"p90\": " << p90 << ", \"p99\": " << p99
        << ", \"mean\": " << mean << "}, \"steps_per_second\": " << 1e3 / mean
        << ", \"peak_bytes\": {";
    for (size_t i = 0; i < peaks.size(); ++i)
      out << (i ? ", " : "") << "\"" << peaks[i].first << "\": " << peaks[i].second;
    out << "}, \"top_ops\": [";
    for (size_t i = 0; i < ops.size(); ++i)
      out << (i ? ", " : "") << "{\"op\": \"" << ops[i].op << "\", \"ms\": " << ops[i].ms
          << ", \"nodes\": " << ops[i].nodes << "}";
    out << "]}\n";
  } else {
    out << r.graph_path << ": " << runs << " steps after " << warmup << " warm-up steps\n"
        << "latency ms: min " << sorted.front() << "  median " << median << "  p90 " << p90
        << "  p99 " << p99 << "  mean " << mean << "\n"
        << "throughput: " << 1e3 / mean << " steps/s\n";
    for (const auto& [device, bytes] : peaks)
      out << "peak allocator bytes: " << bytes << "  " << device << "\n";
    out << "top ops by time (one traced step, " << all_ms << " ms in nodes):\n";
    for (const OpTime& t : ops) {
      char line[160];
      std::snprintf(line, sizeof(line), "  %-36s %9.3f ms %5.1f%%  %d node%s\n", t.op.c_str(), t.ms,
                    all_ms > 0 ? 100.0 * t.ms / all_ms : 0.0, t.nodes, t.nodes == 1 ? "" : "s");
      out << line;
    }
  }
  std::fputs(out.str().c_str(), stdout);
  return s.Close();
}

}  // namespace

Status BenchCommand(Runtime* runtime, const BenchRequest& request) {
  return OnOneLine(Bench(runtime, request));
}

}  // namespace cfx
