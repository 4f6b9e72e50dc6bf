#include "run_command.h"

#include <charconv>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <set>
#include <sstream>

#include "conflux/graph_def.h"
#include "conflux/half.h"
#include "conflux/npy.h"
#include "conflux/session.h"
#include "conflux/trace.h"
#include "util/file.h"

namespace cfx {
namespace {

// Appends " min=.. max=.. mean=.. values={..}" for elements get(0..n-1) of a real type.
template <typename T, typename Get>
void AppendRealSummary(int64_t n, Get get, int max_values, std::ostringstream& out) {
  bool any = false;
  T lo{}, hi{};
  long double sum = 0;
  int64_t nans = 0;
  for (int64_t i = 0; i < n; ++i) {
    const T v = get(i);
    if constexpr (std::numeric_limits<T>::has_quiet_NaN) {
      if (std::isnan(v)) {
        ++nans;
        continue;
      }
    }
    if (!any || v < lo) lo = v;
    if (!any || v > hi) hi = v;
    any = true;
    sum += v;
  }
  if (any) {
    // Unary + prints 8-bit integers as numbers.
    out << " min=" << +lo << " max=" << +hi
        << " mean=" << static_cast<double>(sum / static_cast<long double>(n - nans));
  }
  if (nans > 0) out << " nan=" << nans;
  out << " values={";
  for (int64_t i = 0; i < n && i < max_values; ++i) out << (i ? ", " : "") << +get(i);
  out << (n > max_values ? ", ...}" : "}");
}

template <typename T>
void AppendSummary(const Tensor& t, int max_values, std::ostringstream& out) {
  const T* p = t.data<T>();
  AppendRealSummary<T>(
      t.num_elements(), [p](int64_t i) { return p[i]; }, max_values, out);
}

// "y:0 float [2,2] min=0 max=2.5 mean=0.9625 values={0, 1, 0.35, 2.5}": for real numbers the
// minimum, maximum and mean (NaNs left out and counted), then the first `max_values` values.
std::string SummarizeTensor(const std::string& name, const Tensor& t, int max_values = 6) {
  std::ostringstream out;
  out << name << " " << DataTypeString(t.dtype()) << " " << t.shape().ToString();
  const int64_t n = t.num_elements();
  const auto* bits = t.data<uint16_t>();
  switch (t.dtype()) {
    case DT_FLOAT:
      AppendSummary<float>(t, max_values, out);
      break;
    case DT_DOUBLE:
      AppendSummary<double>(t, max_values, out);
      break;
    case DT_HALF:
      AppendRealSummary<float>(
          n, [bits](int64_t i) { return HalfToFloat(bits[i]); }, max_values, out);
      break;
    case DT_BFLOAT16:
      AppendRealSummary<float>(
          n, [bits](int64_t i) { return Bfloat16ToFloat(bits[i]); }, max_values, out);
      break;
    case DT_INT8:
      AppendSummary<int8_t>(t, max_values, out);
      break;
    case DT_INT16:
      AppendSummary<int16_t>(t, max_values, out);
      break;
    case DT_INT32:
      AppendSummary<int32_t>(t, max_values, out);
      break;
    case DT_INT64:
      AppendSummary<int64_t>(t, max_values, out);
      break;
    case DT_UINT8:
      AppendSummary<uint8_t>(t, max_values, out);
      break;
    case DT_UINT16:
      AppendSummary<uint16_t>(t, max_values, out);
      break;
    case DT_UINT32:
      AppendSummary<uint32_t>(t, max_values, out);
      break;
    case DT_UINT64:
      AppendSummary<uint64_t>(t, max_values, out);
      break;
    case DT_BOOL: {
      int64_t trues = 0;
      for (int64_t i = 0; i < n; ++i) trues += t.at<bool>(i);
      out << " true=" << trues << " values={";
      for (int64_t i = 0; i < n && i < max_values; ++i)
        out << (i ? ", " : "") << (t.at<bool>(i) ? "true" : "false");
      out << (n > max_values ? ", ...}" : "}");
      break;
    }
    case DT_COMPLEX64:
    case DT_COMPLEX128: {
      std::complex<double> sum = 0;
      auto get = [&](int64_t i) {
        return t.dtype() == DT_COMPLEX64 ? std::complex<double>(t.at<std::complex<float>>(i))
                                         : t.at<std::complex<double>>(i);
      };
      for (int64_t i = 0; i < n; ++i) sum += get(i);
      if (n > 0) out << " mean=" << sum / static_cast<double>(n);
      out << " values={";
      for (int64_t i = 0; i < n && i < max_values; ++i) out << (i ? ", " : "") << get(i);
      out << (n > max_values ? ", ...}" : "}");
      break;
    }
    default: {
      // Strings and the rest: what Tensor::DebugString shows, after the dtype and shape.
      std::string s = t.DebugString(max_values);
      const size_t brace = s.find(" {");
      out << " values=" << (brace == std::string::npos ? "?" : s.substr(brace + 1));
      break;
    }
  }
  return out.str();
}

// The name of a fetch's output file: ':' (and '/', which would need folders) become '_'.
std::string FetchFileName(const std::string& fetch) {
  std::string name = fetch;
  for (char& c : name)
    if (c == ':' || c == '/') c = '_';
  return name + ".npy";
}

StatusOr<int64_t> ParseTimeout(const std::string& text) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || v < 0)
    return errors::InvalidArgument("bad --timeout-ms '", text,
                                   "': expected a whole number of milliseconds (0 = no limit)");
  return v;
}

}  // namespace

Status ParseFeedSpecs(const std::vector<std::string>& specs,
                      std::vector<std::pair<std::string, Tensor>>* feeds) {
  std::set<std::pair<std::string, int>> seen;
  for (const std::string& spec : specs) {
    const size_t eq = spec.find('=');
    auto bad = [&](const std::string& why) {
      return errors::InvalidArgument("bad --feed '", spec, "': ", why,
                                     " (expected NODE[:PORT]=FILE.npy)");
    };
    if (eq == std::string::npos) return bad("no '='");
    const std::string name = spec.substr(0, eq), path = spec.substr(eq + 1);
    if (path.empty()) return bad("no file after '='");
    StatusOr<TensorId> id = ParseTensorName(name);
    if (!id.ok()) return bad(id.status().message());
    if (id->port < 0) return bad("a control input cannot be fed");
    if (!seen.insert({id->node, id->port}).second)
      return errors::InvalidArgument("--feed ", id->node, ":", id->port, " is given twice");
    CFX_ASSIGN_OR_RETURN(Tensor value, ReadNpy(path));
    feeds->emplace_back(name, std::move(value));
  }
  return Status::OK();
}

Status CheckFetchSpecs(const std::vector<std::string>& fetches,
                       const std::vector<std::string>& targets) {
  if (fetches.empty() && targets.empty())
    return errors::InvalidArgument("at least one --fetch or --target is needed");
  for (const std::string& f : fetches) {
    StatusOr<TensorId> id = ParseTensorName(f);
    if (!id.ok()) return errors::InvalidArgument("bad --fetch: ", id.status().message());
    if (id->port < 0)
      return errors::InvalidArgument("bad --fetch '", f,
                                     "': use --target NODE to run a node for its effect");
  }
  for (const std::string& t : targets) {
    StatusOr<TensorId> id = ParseTensorName(t);
    if (!id.ok() || id->port != 0 || t.find(':') != std::string::npos)
      return errors::InvalidArgument("bad --target '", t, "': expected a node name");
  }
  return Status::OK();
}

namespace {

Status Run(Runtime* runtime, const RunRequest& r) {
  CFX_RETURN_IF_ERROR(CheckFetchSpecs(r.fetches, r.targets));
  RunOptions options;
  options.trace = !r.trace_path.empty();
  if (!r.timeout_ms.empty()) {
    CFX_ASSIGN_OR_RETURN(options.timeout_ms, ParseTimeout(r.timeout_ms));
  }
  std::vector<std::pair<std::string, Tensor>> feeds;
  CFX_RETURN_IF_ERROR(ParseFeedSpecs(r.feeds, &feeds));
  CFX_ASSIGN_OR_RETURN(GraphDef graph, ReadGraphDefFile(r.graph_path, runtime->config().limits));
  auto session = Session::Create(runtime, graph);
  if (!session.ok()) return session.status().WithPrefix(r.graph_path + ": ");

  std::vector<Tensor> outputs;
  RunMetadata metadata;
  CFX_RETURN_IF_ERROR((*session)->Run(options, feeds, r.fetches, r.targets, &outputs, &metadata));
  if (outputs.size() != r.fetches.size())
    return errors::Internal("the session returned ", outputs.size(), " outputs for ",
                            r.fetches.size(), " fetches");
  for (size_t i = 0; i < outputs.size(); ++i)
    std::printf("%s\n", SummarizeTensor(r.fetches[i], outputs[i]).c_str());

  if (!r.out_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(r.out_dir, ec);
    if (ec) return errors::Unavailable(r.out_dir, ": cannot create the folder: ", ec.message());
    for (size_t i = 0; i < outputs.size(); ++i) {
      const std::string path =
          (std::filesystem::path(r.out_dir) / FetchFileName(r.fetches[i])).string();
      CFX_RETURN_IF_ERROR(WriteNpy(path, outputs[i]));
      std::printf("wrote %s\n", path.c_str());
    }
  }
  if (!r.trace_path.empty()) {
    CFX_RETURN_IF_ERROR(
        internal::WriteStringToFile(r.trace_path, StepStatsToChromeTrace(metadata.step_stats)));
    std::printf("wrote %s\n", r.trace_path.c_str());
  }
  return (*session)->Close();
}

}  // namespace

Status OnOneLine(const Status& s) {
  if (s.ok()) return s;
  // One line on the terminal, whatever the error's origin.
  std::string message = s.message();
  for (char& c : message)
    if (c == '\n') c = ' ';
  return Status(s.code(), message);
}

Status RunCommand(Runtime* runtime, const RunRequest& request) {
  return OnOneLine(Run(runtime, request));
}

}  // namespace cfx
