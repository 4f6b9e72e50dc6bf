#!/usr/bin/env bash
# Fault tolerance of the data-parallel main job (ctest distributed.kill_and_resume):
#  1. trains under `mpirun --enable-recovery -n 2` with a checkpoint every 20 steps;
#  2. once a checkpoint exists, kills the worker's process (rank 1) with SIGKILL;
#  3. the chief must fail the running step with an error naming the dead task and exit, and
#     mpirun must end (no hang); the time from the kill to the end is printed (with
#     --enable-recovery, mpirun's own status is 0 whatever the ranks did: the chief's error
#     message is what shows the failure);
#  4. the same command again must resume from the latest checkpoint, its first loss near the
#     last one before the kill (not the ~2.3 of a fresh model);
#  5. once more, killing the chief (rank 0) instead: the worker must see its chief's end on the
#     liveness link and exit, and mpirun must end.
# Ends are noticed by the liveness links (the error says so), not by the heartbeat timeout.
#
#   kill_and_resume.sh MPIEXEC FASHION_MNIST CONFIG WORKDIR
set -euo pipefail
mpiexec=$1 exe=$2 config=$3 work=$4
rm -rf "$work"
mkdir -p "$work"
logdir=$work/logs
run() {
  "$mpiexec" --oversubscribe --allow-run-as-root --enable-recovery -n 2 "$exe" \
    --config "$config" --logdir "$logdir" --save-every 20 "$@"
}

run --steps 100000 >"$work/first.out" 2>"$work/first.err" &
launcher=$!
# Wait for a checkpoint (at most 120 s).
for _ in $(seq 1200); do
  [ -f "$logdir/checkpoint" ] && break
  kill -0 $launcher 2>/dev/null || { cat "$work/first.out" "$work/first.err"; exit 1; }
  sleep 0.1
done
[ -f "$logdir/checkpoint" ] || { echo "no checkpoint after 120 s"; exit 1; }
sleep 2
# pid_of_rank R: the fashion_mnist child of this mpirun whose environment says rank R.
pid_of_rank() {
  for pid in $(pgrep -f -- "$exe --config $config --logdir $logdir"); do
    if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1"; then
      echo "$pid"
      return
    fi
  done
}
worker=$(pid_of_rank 1)
[ -n "$worker" ] || { echo "rank 1 not found"; exit 1; }
killed_at=$(date +%s.%N)
kill -9 "$worker"
status=0
wait $launcher || status=$?
ended_at=$(date +%s.%N)
echo "killed rank 1 (pid $worker); the job ended" \
  "$(awk -v a="$killed_at" -v b="$ended_at" 'BEGIN { printf "%.2f", b - a }') s later" \
  "with status $status"
cat "$work/first.err" | tr '\r' '\n' | tail -5
grep -q "^fashion_mnist: UNAVAILABLE: .*task /job:worker/replica:0/task:1 .*taken for dead" \
  "$work/first.err" || { echo "the chief did not fail naming the dead task"; exit 1; }
grep -q "task:1 .*ended: its liveness link closed" "$work/first.err" || {
  echo "the worker's end was not noticed by its liveness link"; exit 1; }
saved=$(sed -n 's/^model_checkpoint_path: ".*model.ckpt-\([0-9]*\)"$/\1/p' "$logdir/checkpoint")
echo "latest checkpoint: step $saved"

run --steps 10 >"$work/second.out" 2>"$work/second.err" || {
  cat "$work/second.out" "$work/second.err"; exit 1; }
cat "$work/second.out"
grep -q "resuming from .*model.ckpt-$saved (step $saved)" "$work/second.out" || {
  echo "the second run did not resume from step $saved"; exit 1; }
first=$(sed -n "s/^step $((saved + 1)): loss \([0-9.]*\)$/\1/p" "$work/second.out")
[ -n "$first" ] || { echo "no loss for step $((saved + 1))"; exit 1; }
# A fresh model starts at about 2.3; after 20+ steps the loss is below 2.
awk -v l="$first" 'BEGIN { exit !(l < 2.0) }' || {
  echo "the loss after resuming ($first) is a fresh model's"; exit 1; }
echo "resumed at step $((saved + 1)) with loss $first"

run --steps 100000 >"$work/third.out" 2>"$work/third.err" &
launcher=$!
for _ in $(seq 1200); do
  grep -q "^resuming from" "$work/third.out" && break
  kill -0 $launcher 2>/dev/null || { cat "$work/third.out" "$work/third.err"; exit 1; }
  sleep 0.1
done
sleep 2
chief=$(pid_of_rank 0)
[ -n "$chief" ] || { echo "rank 0 not found"; exit 1; }
killed_at=$(date +%s.%N)
kill -9 "$chief"
wait $launcher || true
ended_at=$(date +%s.%N)
echo "killed rank 0 (pid $chief); the job ended" \
  "$(awk -v a="$killed_at" -v b="$ended_at" 'BEGIN { printf "%.2f", b - a }') s later"
grep -q "the chief /job:worker/replica:0/task:0 .*ended: its liveness link closed.*this worker exits" \
  "$work/third.err" || { tr '\r' '\n' <"$work/third.err" | tail -5
  echo "the worker did not notice its chief's end"; exit 1; }
