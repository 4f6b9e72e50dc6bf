// MatMul on a GPU through a Conflux session against raw cuBLAS in the same process.
//
//   build/bin/cuda_matmul_bench [--size N] [--chain K] [--reps R] [--tf32]
//
// Both sides do the same work per step: K products of N x N float matrices in a chain
// (c = c * b, inputs resident on the GPU), one [1, N] x [N, N] product of the result, and the
// copy of that row to the host, which waits for everything before it. Conflux runs it as one
// Session::Run of a graph pinned to GPU:0 (Const inputs uploaded at the first step); cuBLAS as
// the same calls on one stream. Prints the median step time of each, TFLOP/s, the ratio
// Conflux / cuBLAS, and the relative difference of the two results. --tf32 runs both in TF32
// (the device option allow_tf32; CUBLAS_TF32_TENSOR_OP_MATH for cuBLAS).
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "conflux/runtime.h"
#include "conflux/session.h"

namespace {

struct Args {
  int64_t size = 4096;
  int chain = 10;
  int reps = 20;
  bool tf32 = false;
};

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "cuda_matmul_bench: %s\n", what.c_str());
  std::exit(1);
}

void Check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) Die(std::string(what) + ": " + cudaGetErrorString(err));
}
void Check(cublasStatus_t st, const char* what) {
  if (st != CUBLAS_STATUS_SUCCESS) Die(std::string(what) + ": cuBLAS status " + std::to_string(st));
}
void Check(const cfx::Status& s, const char* what) {
  if (!s.ok()) Die(std::string(what) + ": " + s.ToString());
}

Args Parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> long {
      if (i + 1 >= argc) Die(arg + " needs a value");
      char* end = nullptr;
      const long v = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || v <= 0) Die(arg + ": expected a positive integer, got " + argv[i]);
      return v;
    };
    if (arg == "--size")
      a.size = value();
    else if (arg == "--chain")
      a.chain = static_cast<int>(value());
    else if (arg == "--reps")
      a.reps = static_cast<int>(value());
    else if (arg == "--tf32")
      a.tf32 = true;
    else
      Die("unknown argument " + arg + " (expected --size, --chain, --reps or --tf32)");
  }
  return a;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <typename F>
double MedianSeconds(int reps, F&& step) {
  for (int i = 0; i < 3; ++i) step();  // warm-up: uploads, handles, cuBLAS heuristics
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    step();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return Median(times);
}

cfx::NodeDef Node(const std::string& name, const std::string& op, std::vector<std::string> inputs,
                  std::vector<std::pair<std::string, cfx::AttrValue>> attrs) {
  cfx::NodeDef n;
  n.name = name;
  n.op = op;
  n.input = std::move(inputs);
  n.device = "/device:GPU:0";
  for (auto& [k, v] : attrs) n.attr[k] = std::move(v);
  return n;
}

cfx::Tensor HostTensor(const std::vector<float>& v, std::vector<int64_t> dims) {
  cfx::Tensor t(cfx::DT_FLOAT, cfx::TensorShape(std::move(dims)));
  std::memcpy(t.data<float>(), v.data(), v.size() * sizeof(float));
  return t;
}

// The Conflux side: median seconds per step; the fetched row in *row.
double RunConflux(const Args& a, const std::vector<float>& ha, const std::vector<float>& hb,
                  const std::vector<float>& hr, std::vector<float>* row) {
  const char* dir = std::getenv("CONFLUX_PLUGIN_PATH");
  std::string yaml =
      "plugins:\n  - name: cpu\n  - name: cuda\ndevices:\n  CPU:\n    count: 1\n"
      "  GPU:\n    count: 1\n    required: true\n    options:\n      allow_tf32: " +
      std::string(a.tf32 ? "true" : "false") + "\n";
  auto config = cfx::Config::FromString(yaml, "cuda_matmul_bench");
  Check(config.status(), "config");
  config->plugin_paths.insert(config->plugin_paths.begin(),
                              dir != nullptr ? dir : CONFLUX_BUILD_PLUGIN_DIR);
  auto rt = cfx::Runtime::Create(*config);
  Check(rt.status(), "runtime");
  const int64_t n = a.size;
  const cfx::AttrValue f = cfx::AttrValue::Type(cfx::DT_FLOAT);
  cfx::GraphDef g;
  g.node.push_back(
      Node("a", "Const", {},
           {{"dtype", f}, {"value", cfx::AttrValue::TensorValue(HostTensor(ha, {n, n}))}}));
  g.node.push_back(
      Node("b", "Const", {},
           {{"dtype", f}, {"value", cfx::AttrValue::TensorValue(HostTensor(hb, {n, n}))}}));
  g.node.push_back(
      Node("r", "Const", {},
           {{"dtype", f}, {"value", cfx::AttrValue::TensorValue(HostTensor(hr, {1, n}))}}));
  std::string prev = "a";
  for (int i = 0; i < a.chain; ++i) {
    const std::string name = "c" + std::to_string(i);
    g.node.push_back(Node(name, "MatMul", {prev, "b"}, {{"T", f}}));
    prev = name;
  }
  g.node.push_back(Node("y", "MatMul", {"r", prev}, {{"T", f}}));
  auto session = cfx::Session::Create(rt->get(), g);
  Check(session.status(), "session");
  std::vector<cfx::Tensor> out;
  const double t =
      MedianSeconds(a.reps, [&] { Check((*session)->Run({}, {"y:0"}, {}, &out), "run"); });
  row->assign(out[0].data<float>(), out[0].data<float>() + n);
  return t;
}

// The same work with raw cuBLAS calls on one stream.
double RunCublas(const Args& a, const std::vector<float>& ha, const std::vector<float>& hb,
                 const std::vector<float>& hr, std::vector<float>* row) {
  const int n = static_cast<int>(a.size);
  const size_t bytes = sizeof(float) * a.size * a.size;
  auto device_floats = [](size_t count) {
    void* p = nullptr;
    Check(cudaMalloc(&p, sizeof(float) * count), "cudaMalloc");
    return static_cast<float*>(p);
  };
  float* da = device_floats(a.size * a.size);
  float* db = device_floats(a.size * a.size);
  float* dc[2] = {device_floats(a.size * a.size), device_floats(a.size * a.size)};
  float* dr = device_floats(n);
  float* dy = device_floats(n);
  void* pinned = nullptr;
  Check(cudaMallocHost(&pinned, sizeof(float) * n), "cudaMallocHost");
  float* hy = static_cast<float*>(pinned);
  Check(cudaMemcpy(da, ha.data(), bytes, cudaMemcpyHostToDevice), "upload");
  Check(cudaMemcpy(db, hb.data(), bytes, cudaMemcpyHostToDevice), "upload");
  Check(cudaMemcpy(dr, hr.data(), sizeof(float) * n, cudaMemcpyHostToDevice), "upload");
  cudaStream_t stream;
  Check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  cublasHandle_t h;
  Check(cublasCreate(&h), "cublasCreate");
  Check(cublasSetStream(h, stream), "cublasSetStream");
  if (a.tf32) Check(cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH), "cublasSetMathMode");
  const float one = 1.0f, zero = 0.0f;
  // Row-major C = A * B is column-major C^T = B^T * A^T: cublasSgemm(B, A).
  auto step = [&] {
    const float* prev = da;
    for (int i = 0; i < a.chain; ++i) {
      float* out = dc[i % 2];
      Check(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, db, n, prev, n, &zero, out, n),
            "cublasSgemm");
      prev = out;
    }
    Check(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, 1, n, &one, prev, n, dr, n, &zero, dy, n),
          "cublasSgemm");
    Check(cudaMemcpyAsync(hy, dy, sizeof(float) * n, cudaMemcpyDeviceToHost, stream), "download");
    Check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  };
  const double t = MedianSeconds(a.reps, step);
  row->assign(hy, hy + n);
  cublasDestroy(h);
  cudaStreamDestroy(stream);
  for (float* p : {da, db, dc[0], dc[1], dr, dy}) cudaFree(p);
  cudaFreeHost(hy);
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = Parse(argc, argv);
  const int64_t n = a.size;
  std::mt19937 gen(42);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  // b's entries have variance 1/n, so the chain neither grows nor vanishes.
  const float scale = std::sqrt(3.0f / static_cast<float>(n));
  std::vector<float> ha(n * n), hb(n * n), hr(n);
  for (float& v : ha) v = u(gen);
  for (float& v : hb) v = u(gen) * scale;
  for (float& v : hr) v = u(gen);

  std::vector<float> row_cublas, row_conflux;
  const double t_cublas = RunCublas(a, ha, hb, hr, &row_cublas);
  const double t_conflux = RunConflux(a, ha, hb, hr, &row_conflux);
  double diff = 0, norm = 0;
  for (int64_t i = 0; i < n; ++i) {
    diff += std::pow(double{row_conflux[i]} - row_cublas[i], 2);
    norm += std::pow(double{row_cublas[i]}, 2);
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  const double flops = 2.0 * n * n * n * a.chain + 2.0 * n * n;
  std::printf("%s, %s MatMul %lldx%lld, %d per step, median of %d steps\n", prop.name,
              a.tf32 ? "TF32" : "float32", static_cast<long long>(n), static_cast<long long>(n),
              a.chain, a.reps);
  std::printf("  cuBLAS   %9.3f ms/step  %7.2f TFLOP/s\n", t_cublas * 1e3, flops / t_cublas / 1e12);
  std::printf("  Conflux  %9.3f ms/step  %7.2f TFLOP/s\n", t_conflux * 1e3,
              flops / t_conflux / 1e12);
  std::printf("  Conflux / cuBLAS time: %.3f   relative difference of results: %.2e\n",
              t_conflux / t_cublas, std::sqrt(diff / norm));
  return 0;
}
