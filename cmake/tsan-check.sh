#!/usr/bin/env bash
# Builds session_test (executor, rendezvous, session), control_flow_test (loops, conditionals,
# TensorArrays and stacks under parallel iterations), runtime_test (the rendezvous,
# cancellation, thread pool and resource manager on their own, from many threads),
# async_test (a device with streams: pipelined kernels, ready events, stream-ordered frees,
# concurrent steps) and, where MPI is found, transport_test (the MPI transport's progress
# thread, receiver, staging area and collectives lanes, under mpirun with 2, 3 and 4 ranks, as
# ctest runs it) with ThreadSanitizer and runs them.
#
#   cmake/tsan-check.sh [gtest flags...]       e.g. --gtest_filter='RandomDag*' (session_test)
#
# Build folder: build-tsan/ (CONFLUX_TSAN_BUILD_DIR); parallel jobs: CONFLUX_JOBS (default: all
# cores). Not part of ctest: it is a second full build of the core and the CPU plugin at -O1 (the
# tests' own code at -O0), with line tables only (-g1), which compiles faster than full debug
# information.
#
# OpenMP: Debian's libgomp is not built with TSan, so TSan cannot see the synchronisation of its
# fork, barriers and join and reports races between an OpenMP team's threads (false positives).
# The run sets OMP_NUM_THREADS=1 (the executor's pool threads then run kernels without a team;
# the thread that created the CPU device keeps the plugin's threads.intra_op) and
# tests/tsan.supp drops reports with a libgomp frame in either stack.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${CONFLUX_TSAN_BUILD_DIR:-$root/build-tsan}"
jobs="${CONFLUX_JOBS:-$(nproc)}"

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DCONFLUX_SANITIZE=thread -DCONFLUX_BUILD_BENCH=OFF -DCONFLUX_WITH_CUDA=OFF
targets=(session_test control_flow_test runtime_test async_test conflux_cpu conflux_async_device)
mpirun="$(command -v mpirun || true)"
if [[ -n "$mpirun" ]] && grep -q '^build transport_test:' "$build/build.ninja"; then
  targets+=(transport_test conflux_transport-mpi)
else
  mpirun=""
fi
cmake --build "$build" -j "$jobs" --target "${targets[@]}"

export OMP_NUM_THREADS=1
export TSAN_OPTIONS="suppressions=$root/tests/tsan.supp halt_on_error=1 second_deadlock_stack=1 ${TSAN_OPTIONS:-}"
"$build/bin/session_test" "$@"
"$build/bin/control_flow_test" \
  --gtest_filter='ControlFlowExecutor*:*RandomLoops*:TensorArray*:Stack*:WhileLoop*:Functional*'
"$build/bin/runtime_test"
"$build/bin/async_test"
checked="session_test, control_flow_test, runtime_test and async_test are"
if [[ -n "$mpirun" ]]; then
  # Open MPI's own threads and locks are not instrumented: tests/tsan.supp drops reports with an
  # Open MPI frame. -x passes the options to every rank.
  mpi=("$mpirun" --oversubscribe --allow-run-as-root --timeout 280 -x TSAN_OPTIONS -x OMP_NUM_THREADS)
  "${mpi[@]}" -n 2 "$build/bin/transport_test"
  "${mpi[@]}" -n 3 "$build/bin/transport_test"
  "${mpi[@]}" -n 2 "$build/bin/transport_test" --shared-memory=off
  "${mpi[@]}" -n 2 "$build/bin/transport_test" --funnel
  "${mpi[@]}" -n 4 "$build/bin/transport_test" --ranks-per-host=2
  checked="session_test, control_flow_test, runtime_test, async_test and transport_test are"
fi
echo "tsan-check: $checked clean under ThreadSanitizer"
