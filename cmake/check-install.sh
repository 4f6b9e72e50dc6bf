#!/usr/bin/env bash
# Installs a build into a temporary prefix, builds the out-of-tree examples against the installed
# package (not the build tree) and runs them with the installed CLI:
#   plugin  examples/out-of-tree-plugin: the CLI loads the op pack and runs its op;
#   device  examples/out-of-tree-device: the TOYDEV device runs a graph, reports "no device" when
#           configured with none, and fails cleanly when its memory is exhausted;
#   transport  examples/out-of-tree-transport: the CLI lists its transport and collectives, and
#           the installed mpi transport plugin's (when the build has it);
#   serve   examples/serve_savedmodel: serves a SavedModel TensorFlow exported from 4 threads.
# usage: check-install.sh BUILD_DIR [plugin|device|transport|serve]...   (default: all)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:?usage: check-install.sh BUILD_DIR [plugin|device]...}"
shift
examples=("$@")
[ ${#examples[@]} -gt 0 ] || examples=(plugin device transport serve)
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
conflux="$work/prefix/bin/conflux"

# build_example SOURCE_DIR BINARY_DIR: configure and build against the installed package.
build_example() {
  if ! cmake -S "$1" -B "$2" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
      -DCMAKE_BUILD_TYPE=Release > "$work/configure.log" 2>&1; then
    cat "$work/configure.log"; echo "FAIL: configuring $1 against the install"; exit 1
  fi
  if ! cmake --build "$2" > "$work/build.log" 2>&1; then
    cat "$work/build.log"; echo "FAIL: building $1 against the install"; exit 1
  fi
}

# expect OUTPUT TEXT WHAT: fails with WHAT unless OUTPUT contains the line fragment TEXT.
expect() {
  # A here-string, not a pipe: grep -q stops reading at the first match, and under pipefail
  # an echo of a long text (the plugins listing) that it cut off would fail the check.
  grep -qF -- "$2" <<< "$1" || { echo "$1"; echo "FAIL: $3 (expected: $2)"; exit 1; }
}

check_plugin() {
  build_example "$root/examples/out-of-tree-plugin" "$work/oot"
  local plugin="$work/oot/libconflux_example_clamp.so"
  local listing result
  listing="$("$conflux" plugins --plugin "$plugin")"
  expect "$listing" "example_clamp 1.0.0" "plugin not listed"
  expect "$listing" "ExampleClamp  [example_clamp]  CPU(double,float)" "op/kernels not listed"
  result="$("$conflux" graph eval "$root/examples/out-of-tree-plugin/clamp.pbtxt" --fetch y \
    --plugin "$plugin")"
  echo "$result"
  expect "$result" "y = float [4] {-1, -0.5, 0.25, 1}" "wrong result"
}

check_device() {
  local example="$root/examples/out-of-tree-device"
  build_example "$example" "$work/oot-device"
  # The example's config finds the plugin by name; here it is in the build folder.
  export CONFLUX_PLUGIN_PATH="$work/oot-device"
  local listing result log
  listing="$("$conflux" plugins --config "$example/toydev.yaml")"
  expect "$listing" "example_toydev 1.0.0" "device plugin not listed"
  expect "$listing" "device:TOYDEV:0  [example_toydev] toy device, 16 MiB of device memory" \
    "TOYDEV:0 not created with arena_mb: 16"
  expect "$listing" "AddV2  [core]  CPU(double,float,int32,int64)  TOYDEV(float)" \
    "AddV2 kernel not listed"
  expect "$listing" "Relu  [core]  CPU(double,float,int32,int64)  TOYDEV(float)" \
    "Relu kernel not listed"

  # Copies to TOYDEV:0, AddV2 and Relu on its stream, copies back.
  result="$("$conflux" run "$example/toydev.pbtxt" --config "$example/toydev.yaml" \
    --fetch sum --fetch relu)"
  echo "$result"
  expect "$result" "sum float [2,3] min=-3 max=2 mean=-0.666667 values={-2.5, -1, -3, 0.5, 2, 0}" \
    "wrong sum"
  expect "$result" "relu float [2,3] min=0 max=2 mean=0.416667 values={0, 0, 0, 0.5, 2, 0}" \
    "wrong relu"

  # `devices: 0`: no TOYDEV device, one log line saying why, and the rest of the runtime works.
  printf '%s\n' 'plugins:' '  - name: cpu' '  - name: example_toydev' \
    '    options: {devices: 0}' 'logging: {level: info}' > "$work/no-device.yaml"
  listing="$("$conflux" plugins --config "$work/no-device.yaml" 2> "$work/no-device.log")"
  expect "$listing" "no TOYDEV device: the plugin option devices is 0" "no-device reason not listed"
  log="$(cat "$work/no-device.log")"
  [ "$(grep -c "TOYDEV" "$work/no-device.log")" = 1 ] ||
    { echo "$log"; echo "FAIL: expected one log line about TOYDEV"; exit 1; }
  expect "$log" "plugin example_toydev: no TOYDEV device: the plugin option devices is 0" \
    "no-device log line"

  # 512 bytes of device memory: the second tensor does not fit; the step fails with
  # RESOURCE_EXHAUSTED and the device logs why.
  printf '%s\n' 'plugins:' '  - name: cpu' '  - name: example_toydev' 'devices:' \
    '  TOYDEV: {memory_limit: 512}' 'optimizer: {constant_folding: false}' > "$work/small.yaml"
  if "$conflux" run "$example/toydev.pbtxt" --config "$work/small.yaml" --fetch relu \
    > "$work/small.out" 2> "$work/small.log"; then
    cat "$work/small.out"; echo "FAIL: a step that exhausts TOYDEV memory succeeded"; exit 1
  fi
  log="$(cat "$work/small.log")"
  expect "$log" "TOYDEV:0: out of device memory" "no exhaustion message from the device"
  expect "$log" "RESOURCE_EXHAUSTED" "exhaustion is not RESOURCE_EXHAUSTED"
}

check_transport() {
  build_example "$root/examples/out-of-tree-transport" "$work/oot-transport"
  local listing
  listing="$("$conflux" plugins --plugin "$work/oot-transport/libconflux_example_loopback.so")"
  expect "$listing" "example_loopback 1.0.0" "transport plugin not listed"
  expect "$listing" "transports: loopback; collectives: loopback (CPU)" \
    "transport or collectives not listed"
  if [ -e "$build/lib/conflux/plugins/libconflux_transport-mpi.so" ]; then
    listing="$("$conflux" plugins --plugin transport-mpi)"
    expect "$listing" "transports: mpi; collectives: mpi (CPU)" "installed mpi transport not listed"
  fi
}

check_serve() {
  build_example "$root/examples/serve_savedmodel" "$work/serve"
  local result
  result="$(CONFLUX_PLUGIN_PATH="$work/prefix/lib/conflux/plugins" "$work/serve/serve_savedmodel" \
    "$root/tests/fixtures/savedmodel/keras_mlp" --threads 4 --requests 200)"
  echo "$result"
  expect "$result" "signature serving_default: 1 inputs, 1 outputs" "model not loaded"
  expect "$result" "200 requests on 4 threads" "requests not served"
  expect "$result" "latency us: p50" "no latency percentiles"
}

for example in "${examples[@]}"; do
  case "$example" in
    plugin) check_plugin ;;
    device) check_device ;;
    transport) check_transport ;;
    serve) check_serve ;;
    *) echo "unknown example '$example' (expected plugin, device or transport)"; exit 2 ;;
  esac
  echo "install check passed: $example"
done
