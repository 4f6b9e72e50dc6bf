#include "saved_model_command.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "conflux/npy.h"
#include "conflux/saved_model.h"
#include "saved_model/describe.h"

namespace cfx {
namespace {

std::set<std::string> ParseTags(const std::string& text) {
  std::set<std::string> tags;
  std::stringstream in(text);
  for (std::string t; std::getline(in, t, ',');)
    if (!t.empty()) tags.insert(t);
  return tags;
}

// "KEY=FILE.npy" -> inputs; each file read.
Status ReadFeeds(const std::vector<std::string>& specs, std::map<std::string, Tensor>* inputs) {
  for (const std::string& spec : specs) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      return errors::InvalidArgument("bad --feed '", spec, "': expected KEY=FILE.npy, KEY being ",
                                     "a signature input key");
    const std::string key = spec.substr(0, eq);
    if (inputs->count(key)) return errors::InvalidArgument("--feed ", key, " given twice");
    CFX_ASSIGN_OR_RETURN(Tensor t, ReadNpy(spec.substr(eq + 1)));
    inputs->emplace(key, std::move(t));
  }
  return Status();
}

std::string Summary(const std::string& key, const Tensor& t) {
  std::ostringstream out;
  out << key << " " << DataTypeString(t.dtype()) << " " << t.shape().ToString();
  out << " " << t.DebugString(6);
  return out.str();
}

// A random input of `spec`'s dtype: numbers in [0, 1) (integers 0..9), strings "a".."j". An
// unknown dim is 1 unless `shape` gives the dims.
StatusOr<Tensor> RandomInput(const std::string& key, const SignatureTensor& spec,
                             const std::vector<int64_t>* dims, std::mt19937* rng) {
  std::vector<int64_t> shape;
  if (dims != nullptr) {
    shape = *dims;
  } else if (spec.shape.unknown_rank()) {
    return errors::InvalidArgument("input '", key, "' has an unknown rank: give its shape with ",
                                   "--input-shape ", key, ":D1,D2,... or a --feed");
  } else {
    for (int64_t d : spec.shape.dims()) shape.push_back(d < 0 ? 1 : d);
  }
  Tensor t(spec.dtype, TensorShape(shape));
  std::uniform_real_distribution<float> u(0, 1);
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    switch (spec.dtype) {
      case DT_FLOAT: t.data<float>()[i] = u(*rng); break;
      case DT_DOUBLE: t.data<double>()[i] = u(*rng); break;
      case DT_INT32: t.data<int32_t>()[i] = static_cast<int32_t>((*rng)() % 10); break;
      case DT_INT64: t.data<int64_t>()[i] = static_cast<int64_t>((*rng)() % 10); break;
      case DT_BOOL: t.data<bool>()[i] = ((*rng)() & 1) != 0; break;
      case DT_STRING: t.at<std::string>(i) = std::string(1, static_cast<char>('a' + (*rng)() % 10)); break;
      default:
        return errors::Unimplemented("input '", key, "' of dtype ", DataTypeString(spec.dtype),
                                     ": give it with --feed ", key, "=FILE.npy");
    }
  }
  return t;
}

}  // namespace

Status ShowSavedModel(const std::string& dir) {
  CFX_ASSIGN_OR_RETURN(std::string report, internal::DescribeSavedModel(dir));
  std::printf("%s", report.c_str());
  return Status();
}

Status RunSavedModel(Runtime* runtime, const SavedModelRequest& r) {
  std::map<std::string, Tensor> inputs;
  CFX_RETURN_IF_ERROR(ReadFeeds(r.feeds, &inputs));
  CFX_ASSIGN_OR_RETURN(auto model, SavedModel::Load(runtime, r.dir, ParseTags(r.tags)));
  CFX_ASSIGN_OR_RETURN(auto outputs, model->Run(r.signature, inputs));
  if (!r.out_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(r.out_dir, ec);
    for (const auto& [key, t] : outputs) {
      Tensor host = t;
      if (t.dtype() == DT_BFLOAT16) {
        std::fprintf(stderr, "conflux: output %s is bfloat16, which NumPy lacks: not written\n",
                     key.c_str());
        continue;
      }
      CFX_RETURN_IF_ERROR(WriteNpy((std::filesystem::path(r.out_dir) / (key + ".npy")).string(), host));
    }
  }
  for (const auto& [key, t] : outputs) std::printf("%s\n", Summary(key, t).c_str());
  return Status();
}

Status BenchSavedModel(Runtime* runtime, const SavedModelRequest& r) {
  std::map<std::string, Tensor> inputs;
  CFX_RETURN_IF_ERROR(ReadFeeds(r.feeds, &inputs));
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const std::string& s : r.input_shapes) {
    const size_t colon = s.rfind(':');
    if (colon == std::string::npos || colon == 0)
      return errors::InvalidArgument("bad --input-shape '", s, "': expected KEY:D1,D2,...");
    std::vector<int64_t> dims;
    std::stringstream in(s.substr(colon + 1));
    for (std::string d; std::getline(in, d, ',');) {
      char* end = nullptr;
      const long long v = std::strtoll(d.c_str(), &end, 10);
      if (d.empty() || *end != '\0' || v < 0)
        return errors::InvalidArgument("bad --input-shape '", s, "': '", d, "' is not a size");
      dims.push_back(v);
    }
    shapes[s.substr(0, colon)] = dims;
  }
  const auto t0 = std::chrono::steady_clock::now();
  CFX_ASSIGN_OR_RETURN(auto model, SavedModel::Load(runtime, r.dir, ParseTags(r.tags)));
  const double load_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  CFX_ASSIGN_OR_RETURN(const Signature* sig, model->GetSignature(r.signature));
  std::mt19937 rng(1);
  std::vector<std::string> keys;
  std::vector<Tensor> values;
  for (const auto& [key, spec] : sig->inputs) {
    keys.push_back(key);
    auto given = inputs.find(key);
    if (given != inputs.end()) {
      values.push_back(given->second);
      continue;
    }
    auto it = shapes.find(key);
    CFX_ASSIGN_OR_RETURN(Tensor t, RandomInput(key, spec, it == shapes.end() ? nullptr : &it->second, &rng));
    values.push_back(std::move(t));
  }
  CFX_ASSIGN_OR_RETURN(SavedModel::Callable call, model->Prepare(r.signature, keys));
  const auto t1 = std::chrono::steady_clock::now();
  CFX_RETURN_IF_ERROR(call.Run(values).status());
  const double first_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();
  for (int i = 0; i < r.warmup; ++i) CFX_RETURN_IF_ERROR(call.Run(values).status());
  std::vector<double> us;
  for (int i = 0; i < r.runs; ++i) {
    const auto s = std::chrono::steady_clock::now();
    CFX_RETURN_IF_ERROR(call.Run(values).status());
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - s).count());
  }
  std::sort(us.begin(), us.end());
  auto pct = [&](double p) {
    return us.empty() ? 0.0 : us[std::min(us.size() - 1, static_cast<size_t>(p * us.size()))];
  };
  double total = 0;
  for (double u : us) total += u;
  const double mean = us.empty() ? 0 : total / us.size();
  if (r.json) {
    std::printf("{\"model\": \"%s\", \"signature\": \"%s\", \"load_ms\": %.3f, \"first_call_ms\": "
                "%.3f, \"runs\": %d, \"min_us\": %.1f, \"median_us\": %.1f, \"p90_us\": %.1f, "
                "\"p99_us\": %.1f, \"mean_us\": %.1f, \"calls_per_s\": %.1f}\n",
                r.dir.c_str(), r.signature.c_str(), load_ms, first_ms, r.runs, pct(0), pct(0.5),
                pct(0.9), pct(0.99), mean, mean > 0 ? 1e6 / mean : 0.0);
  } else {
    std::printf("%s, signature %s: load %.1f ms, first call %.2f ms\n", r.dir.c_str(),
                r.signature.c_str(), load_ms, first_ms);
    std::printf("%d calls: min %.1f us, median %.1f us, p90 %.1f us, p99 %.1f us, mean %.1f us, "
                "%.1f calls/s\n",
                r.runs, pct(0), pct(0.5), pct(0.9), pct(0.99), mean, mean > 0 ? 1e6 / mean : 0.0);
  }
  return Status();
}

}  // namespace cfx
