#!/usr/bin/env bash
# The README's entry points. `main` builds and runs the main job (training on Fashion-MNIST);
# `test` builds and runs the tests.
# Both install dependencies first (cmake/install-deps.sh) and reuse the build folder `build/`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${CONFLUX_BUILD_DIR:-$root/build}"
"$root/cmake/install-deps.sh"
jobs="$(nproc)"
configure() {
  if [ ! -f "$build/build.ninja" ]; then
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
  fi
}
case "${1:-}" in
  main)
    configure
    cmake --build "$build" --target fashion_mnist conflux_cpu conflux_ops-nn -j "$jobs"
    # Trains the tutorial CNN on Fashion-MNIST; logs and checkpoints in fashion_mnist_logs/ (a
    # second run resumes from the latest checkpoint). Extra arguments go to the program.
    shift
    CONFLUX_PLUGIN_PATH="$build/lib/conflux/plugins" "$build/bin/fashion_mnist" "$@"
    ;;
  test)
    configure
    cmake --build "$build" -j "$jobs"
    ctest --test-dir "$build" --output-on-failure -j "$jobs"
    ;;
  *)
    echo "usage: cmake/dev.sh main|test" >&2
    exit 2
    ;;
esac
