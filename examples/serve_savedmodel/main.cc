// Serves a SavedModel that TensorFlow exported: loads it (variables restored, init op run),
// then answers requests from several threads at once through one prepared call of a signature,
// and prints the latency percentiles and the throughput.
//
//   serve_savedmodel MODEL_DIR [--signature serving_default] [--threads 4] [--requests 400]
//                    [--batch 1]
//
// Each request feeds every input of the signature random values of its shape (unknown
// dimensions take --batch; string inputs get short words). The plugins come from the default
// config (config/local.yaml): set CONFLUX_PLUGIN_PATH when they are not installed beside the
// library.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "conflux/config.h"
#include "conflux/runtime.h"
#include "conflux/saved_model.h"

namespace {

int Fail(const cfx::Status& s) {
  std::fprintf(stderr, "serve_savedmodel: %s\n", s.ToString().c_str());
  return 1;
}

// A request's input for `spec`: random values of its shape, unknown dims `batch`.
cfx::StatusOr<cfx::Tensor> MakeInput(const std::string& key, const cfx::SignatureTensor& spec,
                                     int64_t batch, std::mt19937* rng) {
  if (spec.shape.unknown_rank())
    return cfx::errors::InvalidArgument("input '", key, "' has an unknown rank");
  std::vector<int64_t> dims;
  for (int64_t d : spec.shape.dims()) dims.push_back(d < 0 ? batch : d);
  cfx::Tensor t(spec.dtype, cfx::TensorShape(dims));
  std::uniform_real_distribution<float> u(0, 1);
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    switch (spec.dtype) {
      case cfx::DT_FLOAT: t.data<float>()[i] = u(*rng); break;
      case cfx::DT_INT32: t.data<int32_t>()[i] = static_cast<int32_t>((*rng)() % 10); break;
      case cfx::DT_INT64: t.data<int64_t>()[i] = static_cast<int64_t>((*rng)() % 10); break;
      case cfx::DT_STRING: t.at<std::string>(i) = ((*rng)() & 1) ? "hello" : "world"; break;
      default:
        return cfx::errors::Unimplemented("input '", key, "' has dtype ",
                                          cfx::DataTypeString(spec.dtype));
    }
  }
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: serve_savedmodel MODEL_DIR [--signature S] [--threads N] "
                 "[--requests N] [--batch N]\n");
    return 2;
  }
  std::string dir = argv[1], signature = cfx::SavedModel::kDefaultSignature;
  int threads = 4, requests = 400;
  int64_t batch = 1;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--signature") signature = value;
    else if (flag == "--threads") threads = std::max(1, std::atoi(value.c_str()));
    else if (flag == "--requests") requests = std::max(1, std::atoi(value.c_str()));
    else if (flag == "--batch") batch = std::max(1, std::atoi(value.c_str()));
    else {
      std::fprintf(stderr, "serve_savedmodel: unknown option %s\n", flag.c_str());
      return 2;
    }
  }
  auto runtime = cfx::Runtime::Create(cfx::Config::Default());
  if (!runtime.ok()) return Fail(runtime.status());

  const auto t0 = std::chrono::steady_clock::now();
  auto model = cfx::SavedModel::Load(runtime->get(), dir);
  if (!model.ok()) return Fail(model.status());
  const double load_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  auto sig = (*model)->GetSignature(signature);
  if (!sig.ok()) return Fail(sig.status());
  auto call = (*model)->Prepare(signature);
  if (!call.ok()) return Fail(call.status());
  std::printf("loaded %s in %.1f ms; signature %s: %zu inputs, %zu outputs\n", dir.c_str(),
              load_ms, signature.c_str(), (*sig)->inputs.size(), (*sig)->outputs.size());

  // One request's inputs per thread, made before the clock starts.
  std::vector<std::vector<cfx::Tensor>> inputs(threads);
  std::mt19937 rng(7);
  for (int t = 0; t < threads; ++t)
    for (const std::string& key : call->input_keys()) {
      auto in = MakeInput(key, (*sig)->inputs.at(key), batch, &rng);
      if (!in.ok()) return Fail(in.status());
      inputs[t].push_back(std::move(*in));
    }
  if (auto warm = call->Run(inputs[0]); !warm.ok()) return Fail(warm.status());

  std::atomic<int> next{0};
  std::vector<std::vector<double>> latencies(threads);
  std::vector<cfx::Status> errors(threads);
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      while (next.fetch_add(1) < requests) {
        const auto s = std::chrono::steady_clock::now();
        auto out = call->Run(inputs[t]);
        if (!out.ok()) {
          errors[t] = out.status();
          return;
        }
        latencies[t].push_back(
            std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - s).count());
      }
    });
  for (auto& th : pool) th.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const cfx::Status& s : errors)
    if (!s.ok()) return Fail(s);
  std::vector<double> all;
  for (const auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  std::sort(all.begin(), all.end());
  auto pct = [&](double p) { return all[std::min(all.size() - 1, static_cast<size_t>(p * all.size()))]; };
  std::printf("%zu requests on %d threads in %.3f s: %.1f requests/s\n", all.size(), threads,
              seconds, all.size() / seconds);
  std::printf("latency us: p50 %.1f  p90 %.1f  p99 %.1f  max %.1f\n", pct(0.5), pct(0.9),
              pct(0.99), all.back());
  return 0;
}
