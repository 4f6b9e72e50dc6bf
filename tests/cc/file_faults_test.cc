// Files under failures (tests/testing/fault_injection_env.h): a checkpoint save that fails at any
// one of its file calls, with or without a crash after it, leaves the previous checkpoint
// restorable and the new one complete or absent; the Saver's state file likewise; an events file
// keeps every record flushed before the failure; a full disk is a ResourceExhausted naming the
// file, after which training goes on and saves again once there is space; a process saving in a
// loop and killed (SIGKILL) at random moments always leaves a latest checkpoint that restores.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <thread>

#include "conflux/cc/client_session.h"
#include "conflux/cc/ops/standard_ops.h"
#include "conflux/cc/saver.h"
#include "conflux/cc/variables.h"
#include "conflux/summary_writer.h"
#include "fault_injection_env.h"
#include "kernel_test_util.h"

namespace cfx {
namespace {

namespace fs = std::filesystem;
using test::FaultInjectionEnv;
using test::FileOp;

fs::path TestDir() {
  fs::path d = fs::path(CONFLUX_BINARY_DIR) / "tests" / "file_faults_test" /
               ::testing::UnitTest::GetInstance()->current_test_info()->name();
  fs::remove_all(d);
  return d;
}

// A runtime of its own whose files go through a FaultInjectionEnv, and a model of one variable
// whose value a test sets: a checkpoint of step s holds the value s, so a restore tells which
// checkpoint it read.
class Model {
 public:
  explicit Model(Env* env) {
    auto rt = test::RuntimeWithFixtures({});
    EXPECT_OK(rt.status());
    runtime_ = std::move(rt).value();
    runtime_->set_env(env);
    root_ = std::make_unique<Scope>(Scope::NewRootScope(runtime_.get()));
    var_ = Variable(root_->WithOpName("v"), PartialTensorShape({4}), DT_FLOAT,
                    Input({0.f, 0.f, 0.f, 0.f}, {4}))
               .var;
    value_ = ops::Placeholder(root_->WithOpName("value"), DT_FLOAT);
    assign_ = ops::Assign(*root_, var_, value_).op();
    NewSaver();
    session_ = std::make_unique<ClientSession>(*root_, runtime_.get());
    EXPECT_OK(session_->Run({}, {}, {GlobalVariablesInitializer(*root_)}, nullptr));
  }

  // A Saver as a restarted process makes (it reads the state file when it first saves).
  void NewSaver() { saver_ = std::make_unique<Saver>(*root_, Saver::Options{{}, 1}); }
  Saver& saver() { return *saver_; }
  ClientSession& session() { return *session_; }

  void Set(float v) {
    ASSERT_OK(session_->Run({{value_, test::MakeVector<float>({v, v + 1, v + 2, v + 3})}}, {},
                            {assign_}, nullptr));
  }
  // Sets the variable to `step`'s value and saves it as `prefix`-`step`.
  Status SetAndSave(const std::string& prefix, int step) {
    Set(static_cast<float>(step));
    return saver_->Save(session_.get(), prefix, step).status();
  }
  // The step whose value `checkpoint` restores (the variable is overwritten first).
  StatusOr<int> Restored(const std::string& checkpoint) {
    Set(-100);
    CFX_RETURN_IF_ERROR(saver_->Restore(session_.get(), checkpoint));
    return static_cast<int>(Get());
  }
  // The variable's value, read back as the step it was set to.
  float Get() {
    std::vector<Tensor> out;
    EXPECT_OK(session_->Run({}, {var_}, &out));
    if (out.empty()) return -1;
    for (int i = 1; i < 4; ++i) EXPECT_EQ(out[0].at<float>(i), out[0].at<float>(0) + i);
    return out[0].at<float>(0);
  }

 private:
  std::unique_ptr<Runtime> runtime_;
  std::unique_ptr<Scope> root_;
  Output var_, value_;
  Operation assign_;
  std::unique_ptr<Saver> saver_;
  std::unique_ptr<ClientSession> session_;
};

bool HasTemporaryFiles(const fs::path& dir) {
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(".tmp.") != std::string::npos) return true;
  return false;
}

// Saves step `step` with the fault `k`-th call failing; then, when `crash`, drops what was not
// synced. Checks that the latest checkpoint restores to its own step, that it is the new one when
// the save succeeded, and that the new checkpoint, when present, restores to the new step.
// Returns the latest checkpoint's step.
int SaveWithFault(Model& m, FaultInjectionEnv& env, const fs::path& dir, int previous, int step,
                  int64_t k, bool crash, bool* fault_hit) {
  const std::string prefix = (dir / "model").string();
  m.Set(static_cast<float>(step));
  env.SetFault({std::nullopt, "", k, EIO, false});
  auto saved = m.saver().Save(&m.session(), prefix, step);
  *fault_hit = env.fault_hit();
  env.ClearFault();
  if (!*fault_hit) {
    EXPECT_OK(saved.status());
  }
  if (!saved.ok()) {
    // The error says which file.
    EXPECT_NE(saved.status().message().find(dir.string()), std::string::npos) << saved.status();
    if (!crash) {
      EXPECT_FALSE(HasTemporaryFiles(dir)) << "after " << saved.status();
    }
  }
  if (crash) {
    env.SimulateCrash();
    m.NewSaver();
  }
  auto latest = LatestCheckpoint(dir.string());
  EXPECT_OK(latest.status());
  if (!latest.ok()) return previous;
  const std::string expected_new = prefix + "-" + std::to_string(step);
  if (saved.ok()) {
    EXPECT_EQ(*latest, expected_new);
  } else if (*latest != expected_new) {
    EXPECT_EQ(*latest, prefix + "-" + std::to_string(previous));
  }
  auto restored = m.Restored(*latest);
  EXPECT_OK(restored.status());
  if (!restored.ok()) return previous;
  EXPECT_EQ(*latest, prefix + "-" + std::to_string(*restored));
  if (fs::exists(expected_new + ".index")) {
    auto restored_new = m.Restored(expected_new);
    EXPECT_OK(restored_new.status());
    EXPECT_EQ(restored_new.ok() ? *restored_new : -1, step)
        << "the new checkpoint exists but is not complete";
  }
  return *restored;
}

TEST(CheckpointFaults, EveryFailurePointLeavesARestorableCheckpoint) {
  for (bool crash : {false, true}) {
    SCOPED_TRACE(crash ? "failure, then a crash" : "failure");
    FaultInjectionEnv env;
    Model m(&env);
    const fs::path dir = TestDir() / (crash ? "crash" : "fail");
    ASSERT_OK(m.SetAndSave((dir / "model").string(), 1));
    int latest = 1, step = 1;
    bool hit = true;
    int64_t k = 1;
    // Each save fails at its k-th file call (k = 1, 2, ...) until a save makes fewer calls;
    // with max_to_keep 1 each save also deletes the checkpoint before it.
    for (; hit && k < 200; ++k) {
      SCOPED_TRACE("file call " + std::to_string(k) + " fails");
      latest = SaveWithFault(m, env, dir, latest, ++step, k, crash, &hit);
      if (::testing::Test::HasFailure()) return;
    }
    EXPECT_GT(k, 10) << "a save makes more file calls than that";
    EXPECT_EQ(latest, step);  // the last save had no fault
  }
}

// Every kind of call on the state file alone, failing and then crashing: the state keeps naming
// a checkpoint that exists, and the error names the state file.
TEST(CheckpointFaults, StateFileFailuresKeepThePreviousState) {
  FaultInjectionEnv env;
  Model m(&env);
  const fs::path dir = TestDir();
  const std::string prefix = (dir / "model").string();
  ASSERT_OK(m.SetAndSave(prefix, 1));
  int step = 1;
  for (FileOp op : {FileOp::kOpen, FileOp::kAppend, FileOp::kSync, FileOp::kClose, FileOp::kRename,
                    FileOp::kSyncDir}) {
    SCOPED_TRACE("op " + std::to_string(static_cast<int>(op)));
    m.Set(++step);
    const std::string state = (dir / "checkpoint").string();
    // The folder is synced first for the checkpoint file, then for the state file.
    env.SetFault({op, op == FileOp::kSyncDir ? dir.string() : state, op == FileOp::kSyncDir ? 2 : 1,
                  EIO, false});
    Status s = m.saver().Save(&m.session(), prefix, step).status();
    EXPECT_TRUE(env.fault_hit());
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.message().find(state), std::string::npos) << s;
    env.ClearFault();
    env.SimulateCrash();
    m.NewSaver();
    auto latest = LatestCheckpoint(dir.string());
    ASSERT_OK(latest.status());
    auto restored = m.Restored(*latest);
    ASSERT_OK(restored.status());
    EXPECT_EQ(*latest, prefix + "-" + std::to_string(*restored));
  }
}

// A disk that fills up: Save is ResourceExhausted naming the file; the session goes on training
// (the variable still updates), and once space is back the next save and its restore work.
TEST(CheckpointFaults, FullDiskIsResourceExhaustedAndTrainingGoesOn) {
  FaultInjectionEnv env;
  Model m(&env);
  const fs::path dir = TestDir();
  const std::string prefix = (dir / "model").string();
  ASSERT_OK(m.SetAndSave(prefix, 1));
  env.SetFault({FileOp::kAppend, "", 1, ENOSPC, true});
  m.Set(2);
  Status s = m.saver().Save(&m.session(), prefix, 2).status();
  EXPECT_EQ(s.code(), Code::kResourceExhausted) << s;
  EXPECT_NE(s.message().find(prefix + "-2.data-00000-of-00001"), std::string::npos) << s;
  EXPECT_NE(s.message().find("No space left on device"), std::string::npos) << s;
  EXPECT_FALSE(HasTemporaryFiles(dir));
  EXPECT_EQ(LatestCheckpoint(dir.string()).value(), prefix + "-1");
  m.Set(3);  // training goes on
  EXPECT_EQ(m.Get(), 3);
  env.ClearFault();
  ASSERT_OK(m.saver().Save(&m.session(), prefix, 3).status());
  auto restored = m.Restored(LatestCheckpoint(dir.string()).value());
  ASSERT_OK(restored.status());
  EXPECT_EQ(*restored, 3);
}

// An events file written through failures at every point, then a crash: the reader gets back
// every record of every Flush that succeeded, in order, and nothing that was not written.
TEST(EventsFileFaults, ReaderRecoversEveryFlushedRecord) {
  const fs::path root = TestDir();
  constexpr int kRecords = 6;
  bool hit = true;
  int64_t k = 1;
  for (; hit && k < 100; ++k) {
    SCOPED_TRACE("file call " + std::to_string(k) + " fails");
    FaultInjectionEnv env;
    env.SetFault({std::nullopt, "", k, EIO, false});
    const fs::path dir = root / std::to_string(k);
    auto writer = SummaryWriter::Create(dir.string(), &env);
    int flushed = 0;  // records (after the file_version one) that a successful Flush covers
    std::string path;
    if (writer.ok()) {
      path = (*writer)->path();
      for (int i = 0; i < kRecords; ++i) {
        ASSERT_OK((*writer)->AddScalar("loss", static_cast<float>(i), i));
        Status s = (*writer)->Flush();
        if (!s.ok()) {
          EXPECT_NE(s.message().find(path), std::string::npos) << s;
          EXPECT_FALSE((*writer)->Flush().ok()) << "a failed events file stays failed";
          break;
        }
        flushed = i + 1;
      }
    } else {
      EXPECT_NE(writer.status().message().find(dir.string()), std::string::npos) << writer.status();
    }
    hit = env.fault_hit();
    if (!path.empty()) {
      // Before the crash the file may end in part of a record: the reader drops it.
      auto before = ReadEventFile(path);
      ASSERT_OK(before.status());
      ASSERT_GE(before->size(), static_cast<size_t>(flushed) + 1);
      for (size_t i = 1; i < before->size(); ++i)
        EXPECT_EQ((*before)[i].step, static_cast<int64_t>(i - 1));
    }
    env.SimulateCrash();
    if (writer.ok()) writer->reset();  // its process is gone: the destructor writes nothing more
    if (path.empty()) continue;        // Create failed: there is no file to read
    auto records = ReadEventFile(path);
    ASSERT_OK(records.status());
    ASSERT_GE(records->size(), static_cast<size_t>(flushed) + 1);
    EXPECT_EQ((*records)[0].file_version, "brain.Event:2");
    EXPECT_LE(records->size(), static_cast<size_t>(kRecords) + 1);
    for (size_t i = 1; i < records->size(); ++i) {
      EXPECT_EQ((*records)[i].step, static_cast<int64_t>(i - 1));
      ASSERT_EQ((*records)[i].values.size(), 1u);
      EXPECT_EQ((*records)[i].values[0].scalar, static_cast<float>(i - 1));
    }
    if (!hit) {
      EXPECT_EQ(records->size(), static_cast<size_t>(kRecords) + 1);
    }
  }
  EXPECT_GT(k, 5);
}

TEST(EventsFileFaults, FullDiskIsResourceExhaustedNamingTheFile) {
  FaultInjectionEnv env;
  auto writer = SummaryWriter::Create(TestDir().string(), &env);
  ASSERT_OK(writer.status());
  env.SetFault({FileOp::kAppend, "", 1, ENOSPC, true});
  ASSERT_OK((*writer)->AddScalar("loss", 1.f, 1));
  Status s = (*writer)->Flush();
  EXPECT_EQ(s.code(), Code::kResourceExhausted) << s;
  EXPECT_NE(s.message().find((*writer)->path()), std::string::npos) << s;
}

// Starts checkpoint_loop on `dir`, waits for its first save, lets it run a random while (up to a
// few saves) and kills it with SIGKILL.
void RunAndKill(const std::string& dir, std::mt19937& rng) {
  int out[2];
  ASSERT_EQ(::pipe(out), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  std::string program = CONFLUX_CHECKPOINT_LOOP;
  char* argv[] = {program.data(), const_cast<char*>(dir.c_str()), nullptr};
  pid_t pid;
  ASSERT_EQ(posix_spawn(&pid, program.c_str(), &actions, nullptr, argv, environ), 0);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  char ready[6] = {};
  const ssize_t n = ::read(out[0], ready, 6);
  ::close(out[0]);
  std::this_thread::sleep_for(
      std::chrono::microseconds(std::uniform_int_distribution<int>(0, 3000)(rng)));
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_EQ(n, 6) << "checkpoint_loop exited before its first save (status " << status << ")";
  ASSERT_TRUE(WIFSIGNALED(status)) << "checkpoint_loop stopped by itself (status " << status << ")";
}

TEST(CheckpointKill, LatestCheckpointRestoresAfterEveryKill) {
  const fs::path dir = TestDir();
  Model m(Env::Default());
  std::mt19937 rng(20261126);
  int64_t last = 0;
  for (int round = 0; round < 100; ++round) {
    SCOPED_TRACE("kill " + std::to_string(round + 1));
    RunAndKill(dir.string(), rng);
    if (::testing::Test::HasFatalFailure()) return;
    auto latest = LatestCheckpoint(dir.string());
    ASSERT_OK(latest.status());
    auto restored = m.Restored(*latest);
    ASSERT_OK(restored.status());
    const int64_t step = *restored;
    ASSERT_EQ(*latest, (dir / "model").string() + "-" + std::to_string(step));
    EXPECT_GT(step, last) << "each run resumes from the latest checkpoint and saves a newer one";
    last = step;
  }
}

}  // namespace
}  // namespace cfx
