#!/usr/bin/env bash
# Builds everything with AddressSanitizer and UndefinedBehaviorSanitizer and runs the whole test
# suite (ctest) under them, LeakSanitizer included. Any report fails the run: ASan and LSan end
# the process on their first report, and the build makes UBSan's reports fatal too
# (-fno-sanitize-recover=undefined, CMakeLists.txt).
#
#   cmake/asan-check.sh [ctest flags...]        e.g. -R 'RemoteRendezvous|distributed'
#
# Build folder: build-asan/ (CONFLUX_ASAN_BUILD_DIR); parallel jobs: CONFLUX_JOBS (default: all
# cores). Not part of ctest: it is a second full build, without the benchmarks and the CUDA
# plugin (no GPU to run it on here). The product is compiled at -O1 (instrumented, -O2 takes up to
# twice as long to compile; the suite runs somewhat slower at -O1) and the tests' own code at
# -O0 (tests/CMakeLists.txt); -g1 gives reports their source lines at a fraction of
# the cost of full debug information. Tests run 2-4 times slower than in a release build, so each
# gets three times the release build's ctest TIMEOUT (a hang still fails by name).
#
# Two passes. The tests under mpirun (transport.mpi_*, distributed.*) run with full stack
# unwinding, so that tests/lsan.supp can recognise the allocations Open MPI keeps past
# MPI_Finalize (its libraries have no frame pointers); everything else runs with the fast
# unwinder. intercept_tls_get_addr=0: GCC 12's LeakSanitizer misreads glibc 2.36's dynamic TLS
# of dlopen'd libraries (the CPU plugin's oneDNN and OpenMP threads) and crashes in its leak
# check ("Tracer caught signal 11", google/sanitizers#1322); without the interceptor it scans
# static TLS only. use_sigaltstack=0: a process that starts MPI without mpirun (a singleton,
# as distributed.cluster_without_mpirun does) gets Open MPI's stack-trace handler, which puts a
# malloc'd alternate signal stack on the thread that called MPI_Init (the transport's progress
# thread); when that thread ends, ASan takes the stack for its own and fails to unmap it
# ("unable to unmap", a CHECK failure). ASan's overflow reports lose their alternate stack.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${CONFLUX_ASAN_BUILD_DIR:-$root/build-asan}"
jobs="${CONFLUX_JOBS:-$(nproc)}"

# Also while building: gtest_discover_tests runs each test binary to list its tests.
export ASAN_OPTIONS="detect_leaks=1:intercept_tls_get_addr=0:check_initialization_order=1:use_sigaltstack=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export LSAN_OPTIONS="suppressions=$root/tests/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DCONFLUX_SANITIZE=address,undefined -DCONFLUX_BUILD_BENCH=OFF -DCONFLUX_WITH_CUDA=OFF \
  -DCONFLUX_GTEST_TIMEOUT=180 -DCONFLUX_SCRIPT_TIMEOUT=360
cmake --build "$build" -j "$jobs"

mpi_tests='^(transport\.mpi_|distributed\.)'
ctest --test-dir "$build" --output-on-failure -j "$jobs" -E "$mpi_tests" "$@"
ASAN_OPTIONS="$ASAN_OPTIONS:fast_unwind_on_malloc=0" \
  ctest --test-dir "$build" --output-on-failure -j "$jobs" -R "$mpi_tests" "$@"
echo "asan-check: the test suite is clean under AddressSanitizer, LeakSanitizer and" \
  "UndefinedBehaviorSanitizer"
