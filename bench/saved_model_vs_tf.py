"""Loading a MobileNet-sized SavedModel and its first result: Conflux against TensorFlow.

TensorFlow (a reference, never a dependency: install it in a virtual environment outside the
repository, `python3 -m venv /tmp/tfvenv && /tmp/tfvenv/bin/pip install tensorflow-cpu`) exports
Keras' MobileNetV2 (random weights, 224x224x3, 3.5 M parameters) with `model.export`, then, each
in a fresh process so that nothing is warm:
  - TensorFlow: `tf.saved_model.load(dir)` and the first call of `serve` (the time after
    `import tensorflow`, which is not counted);
  - Conflux: `conflux bench DIR --runs 1 --warmup 0 --json`, its `load_ms` (SavedModel::Load:
    parse, session, restore, init) and `first_call_ms` (the first Run, which builds the
    executors), and the whole process's wall time.
Both take one 1x224x224x3 input (Conflux's bench draws it from the signature's shape). Prints each
time and the ratio (Conflux / TensorFlow), then checks the numbers: `conflux run` on the same
input against TensorFlow's output (the largest difference of the 1000 probabilities).

  /tmp/tfvenv/bin/python bench/saved_model_vs_tf.py [--conflux build/bin/conflux] [--repeat 3]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

TF_TIMER = r"""
import sys, time
import numpy as np
import tensorflow as tf
x = np.load(sys.argv[2])
t0 = time.perf_counter()
m = tf.saved_model.load(sys.argv[1])
t1 = time.perf_counter()
y = m.serve(tf.constant(x))
np.asarray(y)
t2 = time.perf_counter()
print((t1 - t0) * 1e3, (t2 - t1) * 1e3)
"""


def main():
    p = argparse.ArgumentParser()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p.add_argument("--conflux", default=os.path.join(root, "build", "bin", "conflux"))
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    import numpy as np
    import tensorflow as tf
    import keras

    work = tempfile.mkdtemp(prefix="cfx_savedmodel_bench_")
    model_dir = os.path.join(work, "mobilenetv2")
    keras.utils.set_random_seed(0)
    model = keras.applications.MobileNetV2(weights=None, input_shape=(224, 224, 3))
    model.export(model_dir)
    x = np.random.default_rng(0).random((1, 224, 224, 3), dtype=np.float32)
    x_path = os.path.join(work, "x.npy")
    np.save(x_path, x)
    env = dict(os.environ)
    env.setdefault("CONFLUX_PLUGIN_PATH", os.path.join(os.path.dirname(os.path.dirname(args.conflux)), "lib", "conflux", "plugins"))
    rows = []
    for _ in range(args.repeat):
        out = subprocess.run([sys.executable, "-c", TF_TIMER, model_dir, x_path], check=True,
                             capture_output=True, text=True, env=env).stdout.split()
        tf_load, tf_first = float(out[-2]), float(out[-1])
        t0 = time.perf_counter()
        res = subprocess.run([args.conflux, "bench", model_dir, "--signature", "serve",
                              "--runs", "1", "--warmup", "0", "--json"],
                             capture_output=True, text=True, env=env)
        wall = (time.perf_counter() - t0) * 1e3
        if res.returncode != 0:
            sys.exit("conflux failed: " + res.stderr.strip())
        j = json.loads(res.stdout.strip().splitlines()[-1])
        rows.append((tf_load, tf_first, j["load_ms"], j["first_call_ms"], wall))
    print(f"MobileNetV2 SavedModel ({model_dir}), batch 1, {args.repeat} fresh processes each")
    print("   TF load  TF first | Conflux load  first  (process wall) | ratio load+first")
    for tl, tfirst, cl, cfirst, wall in rows:
        print(f"  {tl:8.1f} {tfirst:9.1f} | {cl:12.1f} {cfirst:6.1f} ({wall:8.1f})     | "
              f"{(cl + cfirst) / (tl + tfirst):.2f}x")
    best = min(rows, key=lambda r: r[2] + r[3])
    best_tf = min(rows, key=lambda r: r[0] + r[1])
    print(f"best: Conflux {best[2] + best[3]:.1f} ms, TensorFlow {best_tf[0] + best_tf[1]:.1f} ms: "
          f"{(best[2] + best[3]) / (best_tf[0] + best_tf[1]):.2f}x TensorFlow's time")

    # The same numbers as TensorFlow's.
    loaded = tf.saved_model.load(model_dir)
    fn = loaded.signatures["serve"] if "serve" in loaded.signatures else loaded.serve
    key = sorted(fn.structured_input_signature[1].keys())[0]
    want = np.asarray(list(fn(**{key: tf.constant(x)}).values())[0])
    out_dir = os.path.join(work, "out")
    res = subprocess.run([args.conflux, "run", model_dir, "--signature", "serve", "--feed",
                          f"{key}={x_path}", "--out", out_dir], capture_output=True, text=True,
                         env=env)
    if res.returncode != 0:
        sys.exit("conflux run failed: " + res.stderr.strip())
    got = np.load(os.path.join(out_dir, os.listdir(out_dir)[0]))
    print(f"outputs: max |Conflux - TensorFlow| = {np.max(np.abs(got - want)):.3g} "
          f"(largest probability {want.max():.4f})")


if __name__ == "__main__":
    main()
