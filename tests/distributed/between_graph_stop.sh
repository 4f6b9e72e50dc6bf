#!/bin/bash
# Between-graph replication: rank RANK of three stops itself (SIGSTOP) after three steps, which
# only heartbeats can notice; each of the two others must report that its next step failed with
# an error naming the stopped task, within 5 s (the test's own assertions). Five seconds after
# the stop this script kills the stopped process, and the job must then end.
#   between_graph_stop.sh MPIEXEC BETWEEN_GRAPH_TEST RANK
set -u
mpiexec=$1
binary=$2
rank=$3
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$mpiexec" --enable-recovery --oversubscribe --allow-run-as-root --timeout 100 -n 3 \
  "$binary" --stop-test="$rank" >"$log" 2>&1 &
job=$!
pid=
for _ in $(seq 600); do
  pid=$(sed -n "s/^rank $rank pid \([0-9]*\) stops$/\1/p" "$log")
  [[ -n $pid ]] && break
  kill -0 "$job" 2>/dev/null || break
  sleep 0.1
done
if [[ -n $pid ]]; then
  sleep 5
  kill -9 "$pid" 2>/dev/null
fi
wait "$job"
cat "$log"
if [[ -z $pid ]]; then
  echo "FAIL: rank $rank did not stop" >&2
  exit 1
fi
seen=$(grep -c "saw the stopped task within" "$log")
if [[ $seen -ne 2 ]]; then
  echo "FAIL: $seen of the 2 other ranks reported the stopped task" >&2
  exit 1
fi
if grep -q "\[  FAILED  \]" "$log"; then
  echo "FAIL: a surviving rank's test failed" >&2
  exit 1
fi
echo "PASS: both other ranks saw the stopped task"
