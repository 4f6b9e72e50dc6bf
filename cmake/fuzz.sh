#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang, AddressSanitizer and
# UndefinedBehaviorSanitizer, and runs each for SECONDS (default 60) on a copy of its seed corpus
# (tests/fuzz/corpus/<target>/, small inputs made from tests/fixtures). A crash, a sanitizer
# report, a leak or an input slower than 10 s ends the run with the input saved as
# build-fuzz/artifacts/<target>/crash-... (replay: build-fuzz/bin/<target>_fuzzer FILE).
#
#   cmake/fuzz.sh [SECONDS] [TARGET...]     targets: graphdef tensor_proto config npy
#
# Build folder: build-fuzz/ (CONFLUX_FUZZ_BUILD_DIR); jobs: CONFLUX_JOBS (default: all cores).
# Only libconflux and the fuzzers are built (the plugins are configured, not built).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${CONFLUX_FUZZ_BUILD_DIR:-$root/build-fuzz}"
jobs="${CONFLUX_JOBS:-$(nproc)}"
seconds="${1:-60}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then targets=(graphdef tensor_proto config npy); fi

export ASAN_OPTIONS="detect_leaks=1:intercept_tls_get_addr=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DCONFLUX_SANITIZE=fuzzer-no-link,address,undefined -DCONFLUX_BUILD_FUZZERS=ON \
  -DCONFLUX_BUILD_TESTS=OFF -DCONFLUX_BUILD_BENCH=OFF -DCONFLUX_WITH_CPU=ON \
  -DCONFLUX_WITH_CUDA=OFF -DCONFLUX_WITH_OPENCL=OFF -DCONFLUX_WITH_MPI=OFF
cmake --build "$build" -j "$jobs" --target "${targets[@]/%/_fuzzer}"

for t in "${targets[@]}"; do
  corpus="$build/corpus/$t" artifacts="$build/artifacts/$t"
  mkdir -p "$corpus" "$artifacts"
  echo "fuzz: $t for ${seconds}s"
  "$build/bin/${t}_fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
    -artifact_prefix="$artifacts/" -print_final_stats=1 "$corpus" "$root/tests/fuzz/corpus/$t"
done
echo "fuzz: no crash, sanitizer report or timeout in ${targets[*]}"
