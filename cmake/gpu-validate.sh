#!/usr/bin/env bash
# Builds the CUDA plugin with its tests on a GPU machine and runs them: the plugin's unit and
# device tests (tests/cuda) and the kernel conformance suite, which runs every GPU kernel against
# the CPU; then MatMul against raw cuBLAS (bench/cuda_matmul_bench.cc), training steps against
# PyTorch (bench/training_vs_torch.py --device cuda, where python3 has a CUDA PyTorch) and the
# main job with config/examples/cuda.yaml. Fails when a test fails, and when a GPU test skipped
# although the machine has a GPU.
#
#   cmake/gpu-validate.sh [DEPS]
#
# DEPS: the deps/ prefix that cmake/gpu-bundle.sh packed (Debian's packages unpacked), for a
# machine without them; omit it where the packages of cmake/install-deps.sh are installed.
# Environment: CONFLUX_GPU_BUILD (build folder, default <src>/build-gpu), CUDA_ARCH (CMake
# CUDA architectures, default 90), JOBS (default: all cores), FASHION_MNIST (the data of the main
# job, default /usr/share/datasets/fashion-mnist) and FASHION_MNIST_EPOCHS (default 1).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
deps=${1:-}
build=${CONFLUX_GPU_BUILD:-$src/build-gpu}
args=()
if [ -n "$deps" ]; then
  deps=$(cd "$deps" && pwd)
  arch=x86_64-linux-gnu
  lib=$deps/usr/lib/$arch
  boost_dir=$(ls -d "$lib"/cmake/Boost-* | head -1)
  boost_version=${boost_dir##*/Boost-}
  # zlib lives in lib/, the rest in usr/lib/ (protoc runs during the build and needs both).
  export LD_LIBRARY_PATH=$lib:$deps/lib/$arch${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  args=(-DCMAKE_PREFIX_PATH="$deps/usr" -DCMAKE_LIBRARY_ARCHITECTURE=$arch
        -DBoost_DIR="$boost_dir"
        -Dboost_headers_DIR="$lib/cmake/boost_headers-$boost_version"
        -Dboost_filesystem_DIR="$lib/cmake/boost_filesystem-$boost_version"
        -DGTest_DIR="$lib/cmake/GTest" -Ddnnl_DIR="$lib/cmake/dnnl" -Dbenchmark_DIR="$lib/cmake/benchmark"
        -Dyaml-cpp_DIR="$lib/cmake/yaml-cpp" -DEigen3_DIR="$deps/usr/share/eigen3/cmake"
        -DProtobuf_INCLUDE_DIR="$deps/usr/include" -DProtobuf_LIBRARY="$lib/libprotobuf.so"
        -DProtobuf_PROTOC_LIBRARY="$lib/libprotoc.so"
        -DProtobuf_PROTOC_EXECUTABLE="$deps/usr/bin/protoc"
        -DZLIB_INCLUDE_DIR="$deps/usr/include" -DZLIB_LIBRARY="$lib/libz.so"
        -DOpenCL_INCLUDE_DIR="$deps/usr/include" -DOpenCL_LIBRARY="$lib/libOpenCL.so")
fi

echo "gpu-validate: GPUs: $(nvidia-smi -L 2>/dev/null || echo 'nvidia-smi not found')"
# The CUDA plugin opens cuDNN 9 at run time: where the loader does not find it, look where CUDA
# and PyTorch's wheels keep it.
if ! grep -q 'libcudnn.so.9 ' <<< "$(ldconfig -p 2>/dev/null)"; then
  for dir in /usr/local/cuda/lib64 /usr/local/cuda/lib \
      $(python3 -c 'import nvidia.cudnn as m; print(m.__path__[0] + "/lib")' 2>/dev/null); do
    if [ -e "$dir/libcudnn.so.9" ]; then
      export LD_LIBRARY_PATH=$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
      break
    fi
  done
fi
echo "gpu-validate: cuDNN: $( (ldconfig -p | grep -o '/[^ ]*libcudnn.so.9$'; \
  for d in ${LD_LIBRARY_PATH//:/ }; do ls "$d"/libcudnn.so.9 2>/dev/null; done) | head -1)"
cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCONFLUX_WITH_CUDA=ON \
  -DCONFLUX_WITH_MPI=OFF -DCONFLUX_WITH_OPENCL=OFF -DCONFLUX_BUILD_BENCH=ON \
  -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}" "${args[@]}"
cmake --build "$build" -j"${JOBS:-$(nproc)}" --target conflux_cuda cuda_test conformance_test conflux_cli \
  cuda_matmul_bench training_bench fashion_mnist dynamic_rnn
test -f "$build/lib/conflux/plugins/libconflux_cuda.so" || {
  echo "gpu-validate: the CUDA plugin was not built (is nvcc on PATH?)" >&2
  exit 1
}

CONFLUX_PLUGIN_PATH="$build/lib/conflux/plugins" \
  "$build/bin/conflux" plugins --config "$src/config/examples/cuda.yaml" | tee "$build/gpu-plugins.txt"
has_gpu=0
grep -q "device:GPU:0" "$build/gpu-plugins.txt" && has_gpu=1

status=0
# cuda.no_gpu (the plugin with every GPU hidden) and the conformance suite, through ctest.
ctest --test-dir "$build" --output-on-failure -R '^(cuda\.|Devices/KernelConformance)' || status=1
if [ "$has_gpu" = 1 ]; then
  # Every test of tests/cuda; with a GPU present nothing may skip but the tests of a machine
  # without one: look.
  for run in "cuda_test -CudaNoGpu.*" "conformance_test Devices/*GPU*"; do
    binary=${run%% *}
    filter=${run#* }
    log="$build/$binary.log"
    "$build/bin/$binary" "--gtest_filter=$filter" > "$log" 2>&1 || status=1
    { grep -E -B2 -A10 "Failure" "$log" | head -200; grep -E "^\[  (PASSED|FAILED|SKIPPED) " "$log"; } \
      || true
    if grep -q "SKIPPED" "$log"; then
      echo "gpu-validate: $binary --gtest_filter=$filter skipped tests on a machine with a GPU" >&2
      status=1
    fi
  done
else
  echo "gpu-validate: no GPU device was created (see the plugin listing above): GPU tests skipped" >&2
  status=1
fi
if [ "$has_gpu" = 1 ]; then
  # MatMul 4096^2 through a session against raw cuBLAS in the same process, float32 and TF32.
  "$build/bin/cuda_matmul_bench" || status=1
  "$build/bin/cuda_matmul_bench" --tf32 || status=1
  # Training steps of the CNN (batch 64 and 512) and the MLP against PyTorch on this GPU.
  if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
    CONFLUX_PLUGIN_PATH="$build/lib/conflux/plugins" python3 "$src/bench/training_vs_torch.py" \
      --device cuda --config "$src/config/examples/cuda.yaml" --bench "$build/bin/training_bench" \
      --steps 10 --reps 3 --warmup 3 \
      || status=1
  else
    echo "gpu-validate: no PyTorch with CUDA here: the training comparison is left out"
  fi
  # The dynamic LSTM (a WhileLoop over TensorArrays, gradients through the loop) on the GPU.
  CONFLUX_PLUGIN_PATH="$build/lib/conflux/plugins" "$build/bin/dynamic_rnn" \
    --config "$src/config/examples/cuda.yaml" --steps 300 --expect-loss-drop 0.3 || status=1
  # Long sequences with the gradient's stacks swapped to host memory.
  CONFLUX_PLUGIN_PATH="$build/lib/conflux/plugins" "$build/bin/dynamic_rnn" \
    --config "$src/config/examples/cuda.yaml" --steps 100 --min-len 300 --max-len 400 \
    --swap-memory 1 --expect-loss-drop 0.05 || status=1
  # The main job on the GPU: Fashion-MNIST from /usr/share/datasets/fashion-mnist or
  # $FASHION_MNIST (a folder with the four IDX files), FASHION_MNIST_EPOCHS epochs (default 1).
  data=${FASHION_MNIST:-/usr/share/datasets/fashion-mnist}
  if [ -e "$data/train-images-idx3-ubyte.gz" ]; then
    CONFLUX_PLUGIN_PATH="$build/lib/conflux/plugins" "$build/bin/fashion_mnist" \
      --config "$src/config/examples/cuda.yaml" --data "$data" --fresh \
      --epochs "${FASHION_MNIST_EPOCHS:-1}" --logdir "$build/fashion_mnist_logs" || status=1
  else
    echo "gpu-validate: no Fashion-MNIST in $data: the main job is left out"
  fi
fi
[ "$status" = 0 ] && echo "gpu-validate: all CUDA tests passed on $(nvidia-smi -L 2>/dev/null | head -1)"
exit "$status"
