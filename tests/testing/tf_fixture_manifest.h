// Fixtures made by TensorFlow that a Session runs: a folder of GraphDefs, .npy feeds and
// expected fetches, and a manifest.txt listing the cases (format in
// tests/fixtures/control_flow/README.md). Shared by the fixture tests of each folder.
#ifndef CONFLUX_TESTS_TESTING_TF_FIXTURE_MANIFEST_H_
#define CONFLUX_TESTS_TESTING_TF_FIXTURE_MANIFEST_H_

#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "conflux/graph_def.h"
#include "conflux/npy.h"
#include "conflux/session.h"
#include "kernel_test_util.h"

namespace cfx::test {

struct TensorFile {
  std::string tensor;  // "node:port"
  std::string file;    // .npy file in the fixture folder
};

struct FixtureCase {
  std::string name;
  std::string graph;  // .pb file in the fixture folder
  std::vector<TensorFile> feeds;
  std::vector<TensorFile> fetches;
  // Ops the case needs that Conflux lacks: from a line "#needs OP,OP NAME graph=..." (such
  // lines are cases that must fail with an error naming one of them).
  std::vector<std::string> needs;
  std::string error;  // what was wrong with the manifest line; empty when it parsed
};

// "TENSOR=FILE" (TENSOR holds no '='): {TENSOR, FILE}.
inline bool SplitTensorFile(const std::string& value, TensorFile* out) {
  size_t eq = value.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == value.size()) return false;
  out->tensor = value.substr(0, eq);
  out->file = value.substr(eq + 1);
  return true;
}

// One case per manifest line: NAME graph=FILE.pb feed=NODE:PORT=FILE.npy...
// fetch=NODE:PORT=FILE.npy... Blank lines and other lines starting with '#' are skipped.
inline std::vector<FixtureCase> ReadFixtureManifest(const std::string& dir) {
  std::vector<FixtureCase> cases;
  std::ifstream in(dir + "/manifest.txt");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream tokens(line);
    FixtureCase c;
    std::string first;
    if (!(tokens >> first)) continue;
    if (first == "#needs") {
      std::string ops;
      tokens >> ops;
      std::istringstream list(ops);
      for (std::string op; std::getline(list, op, ',');) c.needs.push_back(op);
      if (!(tokens >> first)) continue;
    } else if (first[0] == '#') {
      continue;
    }
    c.name = first;
    std::string token;
    while (tokens >> token) {
      TensorFile file;
      if (token.rfind("graph=", 0) == 0) {
        c.graph = token.substr(6);
      } else if (token.rfind("feed=", 0) == 0 && SplitTensorFile(token.substr(5), &file)) {
        c.feeds.push_back(file);
      } else if (token.rfind("fetch=", 0) == 0 && SplitTensorFile(token.substr(6), &file)) {
        c.fetches.push_back(file);
      } else {
        c.error += "bad token '" + token + "'; ";
      }
    }
    if (c.graph.empty()) c.error += "no graph= token; ";
    if (c.fetches.empty()) c.error += "no fetch= token; ";
    cases.push_back(std::move(c));
  }
  return cases;
}

// Loaded feeds, fetch names and expected values of one case.
struct LoadedCase {
  GraphDef graph;
  std::vector<std::pair<std::string, Tensor>> feeds;
  std::vector<std::string> fetches;
  std::vector<Tensor> expected;
};

inline void LoadFixtureCase(const std::string& dir, const FixtureCase& c, LoadedCase* out) {
  ASSERT_TRUE(c.error.empty()) << c.name << ": " << c.error;
  StatusOr<GraphDef> graph = ReadGraphDefFile(dir + "/" + c.graph);
  ASSERT_TRUE(graph.ok()) << graph.status();
  out->graph = *std::move(graph);
  for (const TensorFile& feed : c.feeds) {
    StatusOr<Tensor> value = ReadNpy(dir + "/" + feed.file);
    ASSERT_TRUE(value.ok()) << value.status();
    out->feeds.emplace_back(feed.tensor, *value);
  }
  for (const TensorFile& fetch : c.fetches) {
    StatusOr<Tensor> value = ReadNpy(dir + "/" + fetch.file);
    ASSERT_TRUE(value.ok()) << value.status();
    out->fetches.push_back(fetch.tensor);
    out->expected.push_back(*value);
  }
}

// Runs the case through a Session twice (the second run reuses the cached executors and must
// start from fresh loop frames, stacks and tensor arrays) and compares every fetch with
// TensorFlow's value: floats within atol + rtol * |expected|, integers and bools exactly.
inline void RunFixtureCase(const std::string& dir, const FixtureCase& c, double atol, double rtol) {
  LoadedCase loaded;
  ASSERT_NO_FATAL_FAILURE(LoadFixtureCase(dir, c, &loaded));
  StatusOr<std::unique_ptr<Session>> session = Session::Create(&TestRuntime(), loaded.graph);
  ASSERT_TRUE(session.ok()) << session.status();
  for (int run = 0; run < 2; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    std::vector<Tensor> outputs;
    ASSERT_OK((*session)->Run(loaded.feeds, loaded.fetches, {}, &outputs));
    ASSERT_EQ(outputs.size(), loaded.fetches.size());
    for (size_t i = 0; i < loaded.fetches.size(); ++i) {
      SCOPED_TRACE("fetch " + loaded.fetches[i] + " vs " + c.fetches[i].file);
      ExpectTensorNear(loaded.expected[i], outputs[i], atol, rtol);
    }
  }
}

}  // namespace cfx::test

#endif  // CONFLUX_TESTS_TESTING_TF_FIXTURE_MANIFEST_H_
