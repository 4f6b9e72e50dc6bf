#!/bin/bash
# The shared-memory all-reduce when a rank dies: rank 1 kills itself (SIGKILL) between two
# all-reduces, and rank 0's second all-reduce must fail within 5 s naming it (the test's own
# assertions) instead of waiting for ever.
#   peer_dies.sh MPIEXEC TRANSPORT_TEST
set -u
mpiexec=$1
binary=$2
out=$("$mpiexec" --enable-recovery --oversubscribe --allow-run-as-root --timeout 60 -n 2 \
  "$binary" --peer-dies 2>&1)
echo "$out"
if ! grep -q "rank 0 saw rank 1 die within" <<<"$out"; then
  echo "FAIL: rank 0 did not report the dead rank" >&2
  exit 1
fi
if grep -q "\[  FAILED  \]" <<<"$out"; then
  echo "FAIL: rank 0's test failed" >&2
  exit 1
fi
echo "PASS: rank 0's all-reduce failed naming the dead rank"
