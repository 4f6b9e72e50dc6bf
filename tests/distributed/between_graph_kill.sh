#!/bin/bash
# Between-graph replication: the last of three ranks kills itself (SIGKILL) after three steps;
# each of the two others must report that its next step failed with an error naming the dead
# task, within 5 s (the test's own assertions), and the job must end.
#   between_graph_kill.sh MPIEXEC BETWEEN_GRAPH_TEST
set -u
mpiexec=$1
binary=$2
out=$("$mpiexec" --enable-recovery --oversubscribe --allow-run-as-root --timeout 100 -n 3 \
  "$binary" --kill-test 2>&1)
echo "$out"
seen=$(grep -c "saw the dead task within" <<<"$out")
if [[ $seen -ne 2 ]]; then
  echo "FAIL: $seen of the 2 surviving ranks reported the dead task" >&2
  exit 1
fi
if grep -q "\[  FAILED  \]" <<<"$out"; then
  echo "FAIL: a surviving rank's test failed" >&2
  exit 1
fi
echo "PASS: both surviving ranks saw the dead task"
