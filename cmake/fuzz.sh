#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang, AddressSanitizer and
# UndefinedBehaviorSanitizer, and runs each for SECONDS (default 60) on a copy of its seed corpus
# (tests/fuzz/corpus/<target>/, small inputs made from tests/fixtures and by the project's own
# writers: tests/fuzz/seed_corpus.cc). A crash, a sanitizer report, a leak or an input slower
# than 10 s ends the run with the input saved as build-fuzz/artifacts/<target>/crash-...
# (replay: build-fuzz/bin/<target>_fuzzer FILE).
#
#   cmake/fuzz.sh [SECONDS] [TARGET...]
#     targets: graphdef tensor_proto config npy checkpoint records events graph_run plugin_file saved_model
#
# Build folder: build-fuzz/ (CONFLUX_FUZZ_BUILD_DIR); jobs: CONFLUX_JOBS (default: all cores);
# CONFLUX_FUZZ_SEED: libFuzzer's -seed (default 0: a new one each run; CI fixes it, so that a
# run explores the same inputs every time, as far as its seconds reach).
# Only libconflux, the fuzzers and the plugins they load are built: checkpoint loads the CPU
# plugin, graph_run the CPU and ops-nn plugins, from build-fuzz/lib/conflux/plugins, built with
# the same sanitizers and coverage instrumentation as the rest.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${CONFLUX_FUZZ_BUILD_DIR:-$root/build-fuzz}"
jobs="${CONFLUX_JOBS:-$(nproc)}"
seconds="${1:-60}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(graphdef tensor_proto config npy checkpoint records events graph_run plugin_file saved_model)
fi

# clang and its sanitizer and libFuzzer runtimes, with the project's other dependencies.
bash "$root/cmake/install-deps.sh" clang libclang-rt-dev

export ASAN_OPTIONS="detect_leaks=1:intercept_tls_get_addr=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"

# clang links the sanitizer runtimes into the executable only; a plugin leaves their symbols to
# it, which the plugins' -Wl,--no-undefined (cmake/ConfluxPlugin.cmake) refuses. `-z undefs` at
# the end of every link line (after the plugin's own options) lets them resolve at load time,
# as libconflux's do.
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_CXX_STANDARD_LIBRARIES="-Wl,-z,undefs" \
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
    -seed="${CONFLUX_FUZZ_SEED:-0}" -artifact_prefix="$artifacts/" -print_final_stats=1 \
    "$corpus" "$root/tests/fuzz/corpus/$t"
done
echo "fuzz: no crash, sanitizer report or timeout in ${targets[*]}"
