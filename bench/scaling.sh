#!/usr/bin/env bash
# Training throughput with 1 process against 2 data-parallel workers (in graph and between
# graphs) and against the asynchronous parameter server (1 ps task + 2 workers), for the MLP
# 784-512-512-10 and the Fashion-MNIST CNN, one intra-op thread per process; and two
# independent single processes at once, the machine's ceiling for two ranks. Prints examples/s
# and the ratios against one process, per round and their medians.
#   bash bench/scaling.sh [build folder] [extra scaling_bench options, e.g. --batch 128]
# SCALING_ROUNDS=R (default 3): every mode runs once per round, the rounds one after the other,
# and each ratio is taken within its round, so that a machine whose speed drifts between rounds
# (a shared virtual machine's does, by up to a third) affects both sides of a ratio alike.
set -euo pipefail
build="${1:-build}"
shift || true
bin="$build/bin/scaling_bench"
rounds="${SCALING_ROUNDS:-3}"
mpi=(mpirun --oversubscribe)
[ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)
# Data-parallel ranks each get a core of their own (their collective and progress threads then
# compete with their own rank's computation, not the other rank's): on 2 cores this gave steadier
# and about 5 % better figures than --bind-to none. The parameter-server run has more ranks than
# cores and stays unbound.
rate() { "$@" | awk '/examples\/s/ {print $NF}'; }
# The machine's own ceiling: two single-process runs at once, each on a core of its own, share
# nothing but the hardware (memory bandwidth, caches, clocks); their summed rate against one
# run's is the most any 2-rank mode can reach here.
pair() {
  local a b
  a=$(mktemp) b=$(mktemp)
  taskset -c 0 "$bin" "$@" >"$a" &
  taskset -c 1 "$bin" "$@" >"$b"
  wait
  cat "$a" "$b" | awk '/examples\/s/ {s += $NF} END {print s}'
  rm -f "$a" "$b"
}
results=$(mktemp)
trap 'rm -f "$results"' EXIT
printf '%-5s %5s %10s %10s %10s %10s %10s %9s %9s %9s %9s\n' model round single 2-singles \
  dp-2 dp-between-2 ps-async-2 2s/single dp/single dpb/single ps/single
for round in $(seq 1 "$rounds"); do
  for model in mlp cnn; do
    # About 5 s (MLP) and 10 s (CNN) per run: shorter ones varied by up to 30 % here.
    steps=1500
    [ "$model" = cnn ] && steps=150
    one=$(rate taskset -c 0 "$bin" --model "$model" --mode single --steps "$steps" "$@")
    two=$(pair --model "$model" --mode single --steps "$steps" "$@")
    dp=$(rate "${mpi[@]}" --bind-to core -n 2 "$bin" --model "$model" --mode dp --steps "$steps" "$@")
    dpb=$(rate "${mpi[@]}" --bind-to core -n 2 "$bin" --model "$model" --mode dp-between \
      --steps "$steps" "$@")
    ps=$(rate "${mpi[@]}" --bind-to none -n 3 "$bin" --model "$model" --mode ps --steps "$steps" "$@")
    awk -v m="$model" -v r="$round" -v a="$one" -v t="$two" -v b="$dp" -v d="$dpb" -v c="$ps" \
      'BEGIN { printf "%-5s %5s %10.1f %10.1f %10.1f %10.1f %10.1f %9.2f %9.2f %9.2f %9.2f\n",
               m, r, a, t, b, d, c, t / a, b / a, d / a, c / a }' | tee -a "$results"
  done
done
echo "medians of the rounds' ratios:"
printf '%-5s %9s %9s %9s %9s\n' model 2s/single dp/single dpb/single ps/single
for model in mlp cnn; do
  line="$model"
  for col in 8 9 10 11; do
    line+=" $(awk -v m="$model" -v c="$col" '$1 == m {print $c}' "$results" | sort -g |
      awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}')"
  done
  echo "$line" | awk '{printf "%-5s %9.2f %9.2f %9.2f %9.2f\n", $1, $2, $3, $4, $5}'
done
