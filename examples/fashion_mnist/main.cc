// Trains the TensorFlow tutorial CNN on Fashion-MNIST with the C++ client API and the default
// config (the main job of the README).
//
//   build/bin/fashion_mnist [--epochs 15] [--steps N] [--batch 64] [--lr 0.001] [--seed 0]
//                           [--constant-lr]
//                           [--data /usr/share/datasets/fashion-mnist]
//                           [--logdir fashion_mnist_logs]
//                           [--config FILE] [--fresh] [--expect-loss-drop F] [--save-every 500]
//
// Input runs in the graph (whitepaper §4.5, §4.6): the gzipped IDX files are read by
// FixedLengthRecordReaderV2 from filename queues, decoded with DecodeRaw and enqueued into a
// RandomShuffleQueue by a background thread (a queue runner); each training step dequeues a batch.
// A progress bar shows epoch, step, loss, accuracy, examples/s and ETA. Checkpoints go to the log
// directory every 500 steps and at the end, and a later run resumes from the latest one (--fresh
// starts over). TensorBoard event files go there too (`tensorboard --logdir fashion_mnist_logs`):
// loss, accuracy, histograms, input images and the graph. At the end it reports the test-set
// accuracy. --steps stops after that many steps (for tests). Adam's learning rate follows a cosine
// decay from --lr to 0 over the epochs (--constant-lr keeps it). --seed picks other initial
// values, dropout masks and shuffling.
//
// With a cluster config (`mpirun -n 2 build/bin/fashion_mnist --config
// config/examples/cluster-2.yaml`) it trains data-parallel: one replica of the model per task of
// job "worker", each on its share of every batch (--batch is the global batch), gradients averaged
// by all-reduce (DistributedOptimizer), the same variables on every task. At the end it prints
// the bytes of tensors sent to the other task, and on the wire (cluster.compression). With
// between-graph replication (`--config config/examples/cluster-2-between.yaml`) every rank runs
// this program on its own replica, reading and shuffling the training set on its own (each rank
// its own shuffle seed), and only the chief saves checkpoints, writes summaries, shows progress
// and measures the test accuracy.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "../common/console.h"
#include "conflux/cc/client_session.h"
#include "conflux/cc/distributed.h"
#include "conflux/cc/layers.h"
#include "conflux/cc/ops/nn_ops.h"
#include "conflux/cc/ops/standard_ops.h"
#include "conflux/cc/optimizers.h"
#include "conflux/cc/saver.h"
#include "conflux/cc/variables.h"
#include "conflux/summary_writer.h"
#include "model.h"

namespace fashion {
namespace {

using cfx::Output;
using cfx::Status;
namespace ops = cfx::ops;

constexpr int64_t kTrainExamples = 60000;
constexpr int64_t kTestExamples = 10000;
constexpr int64_t kSummaryEvery = 100;  // steps between TensorBoard summaries
constexpr int64_t kReadChunk = 500;  // records per queue-runner step; divides both set sizes

struct Flags {
  int epochs = 15;
  int64_t steps = 0;  // 0: run the epochs
  int batch = 64;
  float lr = 1e-3f;
  std::string data = "/usr/share/datasets/fashion-mnist";
  std::string logdir = "fashion_mnist_logs";
  std::string config;
  bool fresh = false;
  double expect_loss_drop = 0;  // > 0: fail unless the loss fell by this fraction
  int64_t save_every = 500;     // steps between checkpoints
  int64_t seed = 0;
  bool constant_lr = false;
};

bool ParseFlags(int argc, char** argv, Flags* f) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (a == "--fresh" || a == "--constant-lr") {
      (a == "--fresh" ? f->fresh : f->constant_lr) = true;
      continue;
    }
    if ((v = value()) == nullptr) {
      std::fprintf(stderr, "fashion_mnist: %s needs a value\n", a.c_str());
      return false;
    }
    if (a == "--epochs") f->epochs = std::atoi(v);
    else if (a == "--steps") f->steps = std::atoll(v);
    else if (a == "--batch") f->batch = std::atoi(v);
    else if (a == "--lr") f->lr = static_cast<float>(std::atof(v));
    else if (a == "--data") f->data = v;
    else if (a == "--logdir") f->logdir = v;
    else if (a == "--config") f->config = v;
    else if (a == "--expect-loss-drop") f->expect_loss_drop = std::atof(v);
    else if (a == "--save-every") f->save_every = std::atoll(v);
    else if (a == "--seed") f->seed = std::atoll(v);
    else {
      std::fprintf(stderr, "fashion_mnist: unknown flag %s\n", a.c_str());
      return false;
    }
  }
  if (f->epochs <= 0 || f->batch <= 0 || f->steps < 0 || !(f->lr > 0) || f->save_every <= 0) {
    std::fprintf(stderr,
                 "fashion_mnist: --epochs, --batch, --lr and --save-every must be positive\n");
    return false;
  }
  return true;
}

// Records of one IDX file pair (images, labels) decoded to float images in [0, 1] and int32
// labels, `chunk` records per run.
struct IdxReader {
  Output images, labels;
  cfx::Operation close_files;
};

IdxReader ReadIdx(const cfx::Scope& scope, const std::string& images_file,
                  const std::string& labels_file, int epochs, int64_t chunk) {
  IdxReader r;
  auto file_queue = [&](const std::string& name, const std::string& file) {
    cfx::Scope s = scope.NewSubScope(name);
    Output q = ops::FIFOQueueV2(s, {cfx::DT_STRING},
                                ops::FIFOQueueV2Attrs().Capacity(epochs));
    std::vector<std::string> names(epochs, file);
    cfx::Tensor t(cfx::DT_STRING, cfx::TensorShape({epochs}));
    for (int i = 0; i < epochs; ++i) t.at<std::string>(i) = names[i];
    // Filled once when the graph first runs it; closed so that readers end after the epochs.
    Output fill = ops::QueueEnqueueManyV2(s, q, {ops::Const(s, t)});
    Output close = ops::QueueCloseV2(s.WithControlDependencies({fill.op()}), q);
    return std::make_pair(q, close.op());
  };
  auto [image_files, close_images] = file_queue("image_files", images_file);
  auto [label_files, close_labels] = file_queue("label_files", labels_file);
  cfx::Scope s = scope.NewSubScope("read");
  Output image_reader = ops::FixedLengthRecordReaderV2(
      s, 28 * 28, ops::FixedLengthRecordReaderV2Attrs().HeaderBytes(16).Encoding("GZIP"));
  Output label_reader = ops::FixedLengthRecordReaderV2(
      s, 1, ops::FixedLengthRecordReaderV2Attrs().HeaderBytes(8).Encoding("GZIP"));
  auto images = ops::ReaderReadUpToV2(s, image_reader, image_files, chunk);
  auto labels = ops::ReaderReadUpToV2(s, label_reader, label_files, chunk);
  Output pixels = ops::Cast(s, ops::DecodeRaw(s, images.values, cfx::DT_UINT8), cfx::DT_FLOAT);
  r.images = ops::Reshape(s, ops::Mul(s, pixels, 1.0f / 255), {-1, 28, 28, 1});
  r.labels = ops::Cast(s, ops::Reshape(s, ops::DecodeRaw(s, labels.values, cfx::DT_UINT8), {-1}),
                       cfx::DT_INT32);
  r.close_files = ops::NoOp(s.WithControlDependencies({close_images, close_labels}));
  return r;
}

using examples::Bar;
using examples::Duration;

int Fail(const Status& s) {
  std::fprintf(stderr, "\nfashion_mnist: %s\n", s.ToString().c_str());
  return 1;
}

int Run(const Flags& flags) {
  auto runtime = examples::RuntimeFromConfig(flags.config);
  if (!runtime.ok()) return Fail(runtime.status());
  cfx::Runtime* rt = runtime->get();
  const std::string data = flags.data + "/";
  for (const char* f : {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                        "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"})
    if (!std::filesystem::exists(data + f))
      return Fail(cfx::errors::NotFound("Fashion-MNIST file ", data + f, " is missing (Debian ",
                                        "package dataset-fashion-mnist, or --data DIR)"));

  cfx::Scope root = cfx::Scope::NewRootScope(rt);
  cfx::layers::SetGraphSeed(root, flags.seed);
  // One replica per worker task (one without a cluster; between graphs, this task's).
  cfx::DataParallel dp(root);
  const int replicas = dp.num_replicas(), members = dp.group_size();
  const bool chief = dp.is_chief();
  // Between graphs each rank shuffles the training set with a seed of its own.
  const int shuffle_offset = replicas < members ? examples::TaskIndex(*rt) : 0;
  // Input: train files -> shuffle queue -> batches.
  cfx::Scope input = root.NewSubScope("input");
  IdxReader train = ReadIdx(input, data + "train-images-idx3-ubyte.gz",
                            data + "train-labels-idx1-ubyte.gz", flags.epochs, kReadChunk);
  Output shuffle = ops::RandomShuffleQueueV2(
      input, {cfx::DT_FLOAT, cfx::DT_INT32},
      ops::RandomShuffleQueueV2Attrs()
          .Shapes({cfx::PartialTensorShape({28, 28, 1}), cfx::PartialTensorShape({})})
          .Capacity(20000)
          .MinAfterDequeue(10000)
          .Seed(1 + flags.seed + 7919 * shuffle_offset)
          .Seed2(2));
  cfx::Operation enqueue = ops::QueueEnqueueManyV2(input, shuffle, {train.images, train.labels});
  // Closing with cancel_pending_enqueues releases the runner when training stops early.
  cfx::Operation close_shuffle =
      ops::QueueCloseV2(input, shuffle, ops::QueueCloseV2Attrs().CancelPendingEnqueues(true));
  Output training = ops::Placeholder(root.WithOpName("training"), cfx::DT_BOOL);
  // Each replica dequeues its share of the batch.
  if (flags.batch % members != 0)
    return Fail(cfx::errors::InvalidArgument("--batch ", flags.batch, " is not a multiple of the ",
                                             members, " replicas"));
  std::vector<Model> models;
  std::vector<Output> replica_losses, batch_images;
  for (int r = 0; r < replicas; ++r) {
    auto batch = ops::QueueDequeueManyV2(input, shuffle, flags.batch / members,
                                         {cfx::DT_FLOAT, cfx::DT_INT32});
    // The dequeued batch has the queue's element shapes; saying so here gives the layers static
    // shapes (Reshape shares the buffer).
    batch_images.push_back(ops::Reshape(input, batch.components[0], {-1, 28, 28, 1}));
    Output labels = ops::Reshape(input, batch.components[1], {-1});
    models.push_back(BuildModel(dp.ReplicaScope(r), batch_images.back(), labels, training, 0.5f));
    replica_losses.push_back(models.back().loss);
  }
  const Model& model = models[0];
  Output step = cfx::GlobalStep(root);
  const int64_t steps_per_epoch = kTrainExamples / flags.batch;
  Output lr = flags.constant_lr ? ops::Const(root, flags.lr)
                                : cfx::CosineDecay(root, flags.lr, step,
                                                   steps_per_epoch * flags.epochs);
  cfx::AdamOptimizer adam(lr);
  cfx::DistributedOptimizer optimizer(&adam, dp);
  cfx::Operation train_op = optimizer.Minimize(root, replica_losses, step);
  // The step's loss and accuracy: means over the replicas' shares.
  cfx::InputList loss_list, accuracy_list;
  for (const Model& m : models) {
    loss_list.push_back(m.loss);
    accuracy_list.push_back(m.accuracy);
  }
  Output mean_loss = ops::Mean(root, ops::Pack(root, loss_list), 0);
  Output mean_accuracy = ops::Mean(root, ops::Pack(root, accuracy_list), 0);
  IdxReader test = ReadIdx(root.NewSubScope("test_input"), data + "t10k-images-idx3-ubyte.gz",
                           data + "t10k-labels-idx1-ubyte.gz", 1, kTestExamples);
  // TensorBoard: loss and accuracy, histograms of the logits and of every weight, and a few
  // input images, written every kSummaryEvery steps with the graph.
  cfx::Scope sums = root.NewSubScope("summaries");
  cfx::InputList summaries = {
      ops::ScalarSummary(sums, std::string("loss"), mean_loss),
      ops::ScalarSummary(sums, std::string("accuracy"), mean_accuracy),
      ops::HistogramSummary(sums, std::string("logits"), model.logits),
      ops::ImageSummary(sums, std::string("input"), batch_images[0],
                        ops::ImageSummaryAttrs().MaxImages(3))};
  for (const Output& w : dp.Variables(0))
    summaries.push_back(ops::HistogramSummary(sums, w.node()->name(), w));
  Output merged_summary = ops::MergeSummary(sums, summaries);
  cfx::Operation init = cfx::GlobalVariablesInitializer(root);
  cfx::Operation sync = dp.BroadcastVariables(root);
  cfx::Saver saver(root);
  if (!root.ok()) return Fail(root.status());

  cfx::ClientSession session(root, rt);
  Status s;
  // Between graphs the other ranks train quietly: the chief reports, saves and summarizes.
  std::unique_ptr<cfx::SummaryWriter> writer;
  if (chief) {
    auto created = cfx::SummaryWriter::Create(flags.logdir);
    if (!created.ok()) return Fail(created.status());
    writer = std::move(*created);
    cfx::GraphDef graph_def;
    if (!(s = root.ToGraphDef(&graph_def)).ok() || !(s = writer->AddGraph(graph_def)).ok())
      return Fail(s);
  }
  int64_t start_step = 0;
  auto latest = flags.fresh || !chief ? cfx::StatusOr<std::string>(cfx::errors::NotFound(""))
                                      : cfx::LatestCheckpoint(flags.logdir);
  if (!(s = session.Run({}, {}, {init}, nullptr)).ok()) return Fail(s);
  if (latest.ok() && !(s = saver.Restore(&session, *latest)).ok()) return Fail(s);
  // Every replica starts from replica 0's (the chief's) values, the global step included.
  if (!(s = session.Run({}, {}, {sync}, nullptr)).ok()) return Fail(s);
  {
    std::vector<cfx::Tensor> out;
    if (!(s = session.Run({}, {step}, &out)).ok()) return Fail(s);
    start_step = out[0].at<int64_t>(0);
    if (latest.ok())
      std::printf("resuming from %s (step %lld)\n", latest->c_str(),
                  static_cast<long long>(start_step));
  }
  if (replicas > 1)
    std::printf("data-parallel over %d replicas (%s ... %s), %d examples each per step\n",
                replicas, dp.device(0).c_str(), dp.device(replicas - 1).c_str(),
                flags.batch / replicas);
  if (replicas < members && chief)
    std::printf("data-parallel between graphs over %d tasks, %d examples each per step\n", members,
                flags.batch / members);
  // The queue runner: fills the shuffle queue until the files run out, then closes it.
  if (!(s = session.Run({}, {}, {train.close_files}, nullptr)).ok()) return Fail(s);
  std::thread runner([&] {
    Status r = session.Run({}, {}, {enqueue}, nullptr);
    while (r.ok()) r = session.Run({}, {}, {enqueue}, nullptr);
    (void)session.Run({}, {}, {close_shuffle}, nullptr);
  });

  int64_t total = flags.steps > 0 ? start_step + flags.steps : steps_per_epoch * flags.epochs;
  cfx::PeriodicSaver periodic(&saver, flags.logdir + "/model.ckpt", flags.save_every, 0);
  const auto t0 = std::chrono::steady_clock::now();
  double loss_avg = 0, acc_avg = 0, first_losses = 0, last_losses = 0;
  std::vector<double> losses;
  int64_t done = 0, cur = start_step;
  std::vector<cfx::Tensor> out;
  for (cur = start_step; cur < total; ++cur) {
    const bool summarize = cur % kSummaryEvery == 0;
    std::vector<Output> fetches = {mean_loss, mean_accuracy};
    if (summarize) fetches.push_back(merged_summary);
    s = session.Run({{training, true}}, fetches, {train_op}, &out);
    if (s.code() == cfx::Code::kOutOfRange) break;  // the input ran out: the epochs are done
    if (!s.ok()) break;
    if (summarize && chief && !(s = writer->AddSummary(out[2].at<std::string>(0), cur)).ok()) break;
    ++done;
    losses.push_back(out[0].at<float>(0));
    if (done == 1 && chief) {
      std::printf("step %lld: loss %.4f\n", static_cast<long long>(cur + 1), losses[0]);
      std::fflush(stdout);
    }
    const double a = 0.98;
    loss_avg = done == 1 ? out[0].at<float>(0) : a * loss_avg + (1 - a) * out[0].at<float>(0);
    acc_avg = done == 1 ? out[1].at<float>(0) : a * acc_avg + (1 - a) * out[1].at<float>(0);
    auto saved = chief ? periodic.MaybeSave(&session, cur + 1) : cfx::StatusOr<bool>(false);
    if (!saved.ok()) {
      s = saved.status();
      break;
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double rate = done * flags.batch / std::max(secs, 1e-9);
    if (chief && (done % 10 == 0 || cur + 1 == total)) {
      const double eta = (total - cur - 1) * flags.batch / std::max(rate, 1e-9);
      std::fprintf(stderr, "\repoch %lld/%lld [%s] step %lld/%lld loss %.4f acc %.3f %.0f ex/s ETA %s ",
                   static_cast<long long>(cur / steps_per_epoch + 1),
                   static_cast<long long>((total + steps_per_epoch - 1) / steps_per_epoch),
                   Bar(static_cast<double>(cur + 1) / total, 24).c_str(),
                   static_cast<long long>(cur + 1), static_cast<long long>(total), loss_avg,
                   acc_avg, rate, Duration(eta).c_str());
    }
  }
  if (chief) std::fprintf(stderr, "\n");
  (void)session.Run({}, {}, {close_shuffle}, nullptr);
  runner.join();
  if (!s.ok() && s.code() != cfx::Code::kOutOfRange) return Fail(s);
  if (!chief) return 0;
  const double train_secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("trained %lld steps (to step %lld) in %s\n", static_cast<long long>(done),
              static_cast<long long>(cur), Duration(train_secs).c_str());
  auto saved = saver.Save(&session, flags.logdir + "/model.ckpt", cur);
  if (!saved.ok()) return Fail(saved.status());
  std::printf("checkpoint %s\n", saved->c_str());

  // Test accuracy: the test set is read once, then fed to the model in batches (the feeds
  // replace the dequeued batch: the input queue does not run).
  if (!(s = session.Run({}, {}, {test.close_files}, nullptr)).ok()) return Fail(s);
  if (!(s = session.Run({}, {test.images, test.labels}, &out)).ok()) return Fail(s);
  const cfx::Tensor images = out[0], labels = out[1];
  constexpr int64_t kEvalBatch = 1000;
  int64_t correct = 0;
  for (int64_t b = 0; b < kTestExamples; b += kEvalBatch) {
    cfx::Tensor x(cfx::DT_FLOAT, cfx::TensorShape({kEvalBatch, 28, 28, 1}));
    cfx::Tensor y(cfx::DT_INT32, cfx::TensorShape({kEvalBatch}));
    std::copy_n(images.data<float>() + b * 784, kEvalBatch * 784, x.data<float>());
    std::copy_n(labels.data<int32_t>() + b, kEvalBatch, y.data<int32_t>());
    s = session.Run({{model.images, x}, {model.labels, y}, {training, false}}, {model.correct},
                    &out);
    if (!s.ok()) return Fail(s);
    correct += out[0].at<int32_t>(0);
  }
  const double accuracy = static_cast<double>(correct) / kTestExamples;
  std::printf("test accuracy %.4f (%lld/%lld)\n", accuracy, static_cast<long long>(correct),
              static_cast<long long>(kTestExamples));
  if (!(s = writer->AddScalar("test_accuracy", static_cast<float>(accuracy), cur)).ok() ||
      !(s = writer->Flush()).ok())
    return Fail(s);
  std::printf("TensorBoard log %s\n", writer->path().c_str());
  if (rt->cluster() != nullptr) {
    const cfx::Runtime::TransferStats sent = cfx::Runtime::SentToOtherTasks();
    std::printf("sent to other tasks: %.1f MB of tensors as %.1f MB on the wire\n",
                sent.tensor_bytes / 1e6, sent.wire_bytes / 1e6);
  }
  if (flags.expect_loss_drop > 0) {
    const size_t k = std::min<size_t>(10, losses.size() / 2);
    for (size_t i = 0; i < k; ++i) {
      first_losses += losses[i] / k;
      last_losses += losses[losses.size() - 1 - i] / k;
    }
    std::printf("mean loss: first %zu steps %.4f, last %zu steps %.4f\n", k, first_losses, k,
                last_losses);
    if (k == 0 || !(last_losses < (1 - flags.expect_loss_drop) * first_losses)) {
      std::fprintf(stderr, "fashion_mnist: the loss did not fall by %.0f%%\n",
                   100 * flags.expect_loss_drop);
      return 3;
    }
  }
  return 0;
}

}  // namespace
}  // namespace fashion

int main(int argc, char** argv) {
  fashion::Flags flags;
  if (!fashion::ParseFlags(argc, argv, &flags)) return 2;
  return fashion::Run(flags);
}
