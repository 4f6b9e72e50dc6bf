// Saver: checkpoints of a model's variables (whitepaper §3.3) through SaveV2 / RestoreV2.
//
//   Saver saver(scope);                                    // every variable built so far
//   CFX_RETURN_IF_ERROR(saver.Save(&session, "logs/model.ckpt", step).status());
//   auto latest = LatestCheckpoint("logs");                // "logs/model.ckpt-1200"
//   if (latest.ok()) CFX_RETURN_IF_ERROR(saver.Restore(&session, *latest));
//
// Save writes the tensor bundle "<prefix>-<step>" (.index and .data-00000-of-00001, TensorFlow's
// format, which tf.train.load_checkpoint reads; docs/checkpoint-format.md: written atomically,
// with checksums), then records it in the directory's "checkpoint" file (TensorFlow's
// CheckpointState text format: model_checkpoint_path and all_model_checkpoint_paths, newest
// last, relative to the folder, so tf.train.latest_checkpoint finds it), and deletes
// the oldest checkpoints beyond max_to_keep. Every file goes through the runtime's Env
// (Runtime::env): the index and the state file are replaced atomically (written aside, synced,
// renamed, the folder synced), so a crash or a failed write at any point leaves the previous
// checkpoint restorable and the new one complete or absent; an error (ResourceExhausted for a
// full disk) names the file, and the session stays usable, so a training loop may go on and
// save again later. PeriodicSaver saves every N steps and/or seconds.
// A Saver's methods may not run concurrently with each other.
//
// Sharded (variables on several tasks of a cluster, e.g. parameter servers or data-parallel
// replicas): each task saves its own variables, on its own file system, to
// the bundle "<prefix>-<step>-shard-<k>-of-<n>" (shard k = the k-th task in the order of the tasks'
// names), and the chief then writes the index "<prefix>-<step>.cfxindex" naming the shards and
// the variables in each (docs/checkpoint-format.md); a checkpoint is complete once its index
// exists. Restore puts each variable back from the shard of its task, and requires a cluster of
// the same shape (the same tasks holding the same variables); a single-file checkpoint restores
// onto a cluster too, when every task sees the file.
#ifndef CONFLUX_CC_SAVER_H_
#define CONFLUX_CC_SAVER_H_

#include <chrono>
#include <string>
#include <vector>

#include "conflux/cc/client_session.h"

namespace cfx {

class Env;

class Saver {
 public:
  struct Options {
    std::vector<Output> vars;  // default: every variable of the scope's graph (kGlobalVariables)
    int max_to_keep = 5;       // 0 keeps all
    bool sharded = true;       // one file per task when the variables are on several tasks
  };
  // Builds the save and restore ops; errors go to the scope.
  explicit Saver(const Scope& scope) : Saver(scope, Options()) {}
  Saver(const Scope& scope, Options options);

  // The prefix written ("<prefix>-<step>").
  StatusOr<std::string> Save(ClientSession* session, const std::string& prefix, int64_t step);
  // Assigns every variable its value from `checkpoint` (a prefix Save returned). An error names
  // a variable missing from the file or of another dtype or shape.
  Status Restore(ClientSession* session, const std::string& checkpoint);

 private:
  // The variables of one task (all of them when unsharded): its save and restore read and
  // write the file its prefix placeholder names.
  struct Shard {
    std::string task;  // "/job:ps/replica:0/task:0"; "" for the chief's (or unsharded)
    Output prefix;
    std::vector<std::string> names;
  };
  // Records `written` in the state file, then deletes checkpoints beyond max_to_keep.
  Status UpdateState(Env* env, const std::string& written);
  // The prefix of each shard's file for the checkpoint `checkpoint` (as Save names them, or as
  // its index lists them); an error when the checkpoint's shards do not fit this Saver's.
  StatusOr<std::vector<std::string>> ShardPrefixes(const std::string& checkpoint) const;

  Options options_;
  std::vector<Shard> shards_;
  Operation save_;
  Operation restore_;
  std::vector<std::string> kept_;  // checkpoints written by this saver, oldest first
};

// The newest checkpoint recorded in `dir`'s "checkpoint" file; NotFound when there is none.
StatusOr<std::string> LatestCheckpoint(const std::string& dir);

// Saves every `every_steps` steps (0: never by steps) or `every_seconds` seconds (0: never by
// time), whichever comes first.
class PeriodicSaver {
 public:
  PeriodicSaver(Saver* saver, std::string prefix, int64_t every_steps, double every_seconds);
  // Saves when due; returns whether it saved.
  StatusOr<bool> MaybeSave(ClientSession* session, int64_t step);

 private:
  Saver* saver_;
  std::string prefix_;
  int64_t every_steps_;
  double every_seconds_;
  int64_t last_step_ = -1;
  std::chrono::steady_clock::time_point last_time_;
};

}  // namespace cfx

#endif  // CONFLUX_CC_SAVER_H_
