#!/usr/bin/env python3
"""Single ops at the sizes models use: TensorFlow's CPU kernel against Conflux's, in one run.

Each case is a one-op graph over a placeholder (image resizing as tf.image.resize, Keras'
Resizing and UpSampling2D issue it), written as a GraphDef by TensorFlow; the script times
TensorFlow running it (tf.compat.v1.Session, the same threads), then `conflux bench` on the same
file and input, checks that both give the same output, and prints median latencies and the
ratio Conflux / TensorFlow (below 1: Conflux is faster).

A reference tool: it needs TensorFlow (pip's tensorflow-cpu in a virtual environment outside the
repository), never part of the build or the tests.

    /tmp/tfvenv/bin/python bench/ops_vs_tf.py [--conflux build/bin/conflux] [--cases a,b]
        [--runs 20] [--threads 2] [--work /tmp/ops_vs_tf]
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from inference_vs_tf import time_tf  # noqa: E402


def cases():
    """name -> (input shape, numpy dtype name, function of the placeholder)."""
    import tensorflow as tf
    raw = tf.raw_ops

    def size(h, w):
        return tf.constant([h, w], tf.int32)

    return {
        # A camera frame to a classifier's input (tf.image.resize, bilinear, half-pixel).
        "resize_bilinear_uint8_480x640_to_224": (
            (1, 480, 640, 3), "uint8",
            lambda x: raw.ResizeBilinear(images=x, size=size(224, 224), half_pixel_centers=True)),
        "resize_bilinear_batch32_224_to_299": (
            (32, 224, 224, 3), "float32",
            lambda x: raw.ResizeBilinear(images=x, size=size(299, 299), half_pixel_centers=True)),
        # UpSampling2D(interpolation="bilinear") in a U-Net decoder.
        "resize_bilinear_16x56x56x64_up2": (
            (16, 56, 56, 64), "float32",
            lambda x: raw.ResizeBilinear(images=x, size=size(112, 112), half_pixel_centers=True)),
        "resize_bilinear_grad_16x56x56x64_up2": (
            (16, 112, 112, 64), "float32",
            lambda g: raw.ResizeBilinearGrad(grads=g, original_image=tf.zeros((16, 56, 56, 64)),
                                             half_pixel_centers=True)),
        "resize_nearest_16x56x56x64_up2": (
            (16, 56, 56, 64), "float32",
            lambda x: raw.ResizeNearestNeighbor(images=x, size=size(112, 112),
                                                half_pixel_centers=True)),
        "resize_bicubic_8x224_to_299": (
            (8, 224, 224, 3), "float32",
            lambda x: raw.ResizeBicubic(images=x, size=size(299, 299), half_pixel_centers=True)),
        "resize_area_8x448_to_224": (
            (8, 448, 448, 3), "float32", lambda x: raw.ResizeArea(images=x, size=size(224, 224))),
        # tf.image.resize(..., antialias=True) of a downscale.
        "scale_and_translate_triangle_8x448_to_224": (
            (8, 448, 448, 3), "float32",
            lambda x: raw.ScaleAndTranslate(images=x, size=size(224, 224),
                                            scale=tf.constant([0.5, 0.5]),
                                            translation=tf.constant([0.0, 0.0]),
                                            kernel_type="triangle", antialias=True)),
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--conflux", default="build/bin/conflux")
    p.add_argument("--cases", default="")
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--work", default="/tmp/ops_vs_tf")
    args = p.parse_args()
    import numpy as np
    import tensorflow as tf
    os.makedirs(args.work, exist_ok=True)
    table = cases()
    names = args.cases.split(",") if args.cases else list(table)
    rows = []
    for name in names:
        shape, dtype, fn = table[name]
        with tf.Graph().as_default() as g:
            x = tf.compat.v1.placeholder(dtype, shape, name="x")
            y = tf.identity(fn(x), name="y")
        path = os.path.join(args.work, name + ".pb")
        with open(path, "wb") as f:
            f.write(g.as_graph_def().SerializeToString())
        rng = np.random.default_rng(1)
        value = (rng.integers(0, 256, shape) if dtype == "uint8" else rng.random(shape))
        value = value.astype(dtype)
        x_path = os.path.join(args.work, name + ".input.npy")
        np.save(x_path, value)
        tf_ms, tf_out = time_tf(path, "x:0", "y:0", value, args.runs, args.warmup, args.threads)
        out_dir = os.path.join(args.work, name + ".out")
        run = subprocess.run([args.conflux, "run", path, "--feed", f"x={x_path}", "--fetch", "y",
                              "--out", out_dir], capture_output=True, text=True)
        if run.returncode != 0:
            rows.append((name, tf_ms, None, "conflux run: " + run.stderr.strip()[:300]))
            continue
        ours = np.load(os.path.join(out_dir, "y.npy"))
        diff = float(np.max(np.abs(ours.astype(np.float64) - tf_out)))
        bench = subprocess.run([args.conflux, "bench", path, "--feed", f"x={x_path}", "--fetch",
                                "y", "--runs", str(args.runs), "--warmup", str(args.warmup),
                                "--threads", str(args.threads), "--json"],
                               capture_output=True, text=True)
        if bench.returncode != 0:
            rows.append((name, tf_ms, None, "conflux bench: " + bench.stderr.strip()[:300]))
            continue
        ms = json.loads(bench.stdout)["latency_ms"]["median"]
        rows.append((name, tf_ms, ms, f"max |diff| = {diff:.1e}"))
        print(rows[-1], flush=True)
    print(f"\n{'case':44} {'tensorflow ms':>14} {'conflux ms':>11} {'ratio':>6}")
    for name, tf_ms, ours, note in rows:
        ratio = f"{ours / tf_ms:6.2f}" if ours else "     -"
        ours_s = f"{ours:11.2f}" if ours else f"{'-':>11}"
        print(f"{name:44} {tf_ms:14.2f} {ours_s} {ratio}  {note}")


if __name__ == "__main__":
    sys.exit(main())
