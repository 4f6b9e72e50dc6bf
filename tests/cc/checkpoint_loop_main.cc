// checkpoint_loop DIR: saves checkpoints of a small model into DIR until killed, for the test that
// kills it at random moments (file_faults_test.cc, CheckpointKill). Resumes from DIR's latest
// checkpoint when there is one; the variable "v" of a checkpoint of step s holds {s, s+1, s+2,
// s+3}. Prints "ready" once its first checkpoint of this run is saved.
#include <cstdio>
#include <string>

#include "conflux/cc/client_session.h"
#include "conflux/cc/ops/standard_ops.h"
#include "conflux/cc/saver.h"
#include "conflux/cc/variables.h"
#include "kernel_test_util.h"

int main(int argc, char** argv) {
  using namespace cfx;
  if (argc != 2) {
    std::fprintf(stderr, "usage: checkpoint_loop DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  auto runtime = test::RuntimeWithFixtures({});
  if (!runtime.ok()) {
    std::fprintf(stderr, "%s\n", runtime.status().ToString().c_str());
    return 1;
  }
  Scope root = Scope::NewRootScope(runtime->get());
  Output v = Variable(root.WithOpName("v"), PartialTensorShape({4}), DT_FLOAT,
                      Input({0.f, 0.f, 0.f, 0.f}, {4}))
                 .var;
  Output value = ops::Placeholder(root.WithOpName("value"), DT_FLOAT);
  Operation assign = ops::Assign(root, v, value).op();
  Saver saver(root, Saver::Options{{}, 3});
  ClientSession session(root, runtime->get());
  int64_t step = 1;
  Status s = session.Run({}, {}, {GlobalVariablesInitializer(root)}, nullptr);
  if (auto latest = LatestCheckpoint(dir); s.ok() && latest.ok()) {
    s = saver.Restore(&session, *latest);
    std::vector<Tensor> out;
    if (s.ok()) s = session.Run({}, {v}, &out);
    if (s.ok()) step = static_cast<int64_t>(out[0].at<float>(0)) + 1;
  }
  for (bool first = true; s.ok(); first = false, ++step) {
    const float x = static_cast<float>(step);
    s = session.Run({{value, test::MakeVector<float>({x, x + 1, x + 2, x + 3})}}, {}, {assign},
                    nullptr);
    if (s.ok()) s = saver.Save(&session, dir + "/model", step).status();
    if (s.ok() && first) {
      std::printf("ready\n");
      std::fflush(stdout);
    }
  }
  std::fprintf(stderr, "%s\n", s.ToString().c_str());
  return 1;
}
