#!/usr/bin/env python3
"""Inference latency of models frozen by TensorFlow: TensorFlow against Conflux, in one run.

For each model (keras.applications ResNet50, MobileNetV2, EfficientNetB0, DenseNet121,
InceptionV3, VGG16, ConvNeXtTiny; a small Keras transformer encoder, with exact or
tanh-approximated GELU; Keras LSTM and GRU layers)
and batch size, the script builds the model with random weights, freezes it with
convert_variables_to_constants_v2 into a GraphDef, times TensorFlow running that frozen graph
(tf.compat.v1.Session, the same threads), then `conflux bench` on the same file, checks that both
give the same outputs on the same input, and prints median latencies and the ratio
Conflux / TensorFlow (below 1: Conflux is faster).

A reference tool: it needs TensorFlow (pip's tensorflow-cpu in a virtual environment outside the
repository), never part of the build or the tests.

    python3 -m venv /tmp/tfvenv && /tmp/tfvenv/bin/pip install tensorflow-cpu==2.21.0
    /tmp/tfvenv/bin/python bench/inference_vs_tf.py [--conflux build/bin/conflux]
        [--models resnet50,mobilenetv2,transformer,transformer-tanh,efficientnetb0,densenet121,
                  inceptionv3,vgg16,convnexttiny,lstm,gru] [--batches 1,16] [--runs 20] [--threads 2]
        [--rounds 1] [--work /tmp/inference_vs_tf]

With --rounds N each model is timed N times, TensorFlow then Conflux in turn: the table gives the
median times and the median of the N ratios, the note the ratios' range.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def build(name):
    """The Keras model `name` and its input shape without the batch dimension."""
    import tensorflow as tf
    keras = tf.keras
    if name == "resnet50":
        return keras.applications.ResNet50(weights=None), (224, 224, 3)
    if name == "mobilenetv2":
        return keras.applications.MobileNetV2(weights=None), (224, 224, 3)
    apps = {"efficientnetb0": ("EfficientNetB0", 224), "densenet121": ("DenseNet121", 224),
            "inceptionv3": ("InceptionV3", 299), "vgg16": ("VGG16", 224),
            "convnexttiny": ("ConvNeXtTiny", 224)}
    if name in apps:
        cls, side = apps[name]
        return getattr(keras.applications, cls)(weights=None), (side, side, 3)
    if name in ("lstm", "gru"):
        # A recurrent layer over 32 steps of 16 features, then a classifier.
        x = keras.Input((32, 16))
        layer = keras.layers.LSTM(64) if name == "lstm" else keras.layers.GRU(64)
        return keras.Model(x, keras.layers.Dense(10)(layer(x))), (32, 16)
    if name in ("transformer", "transformer-tanh"):
        # One encoder block over 64 tokens of width 128 (4 heads), then a classifier; the
        # feed-forward GELU exact (erf), or tanh-approximated as BERT and GPT-2 write it.
        gelu = "gelu"
        if name == "transformer-tanh":
            gelu = lambda t: tf.nn.gelu(t, approximate=True)  # noqa: E731
        x = keras.Input((64, 128))
        a = keras.layers.MultiHeadAttention(num_heads=4, key_dim=32)(x, x)
        h = keras.layers.LayerNormalization()(x + a)
        f = keras.layers.Dense(512, activation=gelu)(h)
        f = keras.layers.Dense(128)(f)
        h = keras.layers.LayerNormalization()(h + f)
        y = keras.layers.Dense(10)(keras.layers.GlobalAveragePooling1D()(h))
        return keras.Model(x, y), (64, 128)
    raise SystemExit(f"unknown model {name}")


def freeze(model, shape, batch, path):
    """Writes the frozen GraphDef of `model` at `batch` to `path`; its input and output names."""
    import tensorflow as tf
    from tensorflow.python.framework.convert_to_constants import (
        convert_variables_to_constants_v2)
    fn = tf.function(lambda x: model(x, training=False))
    concrete = fn.get_concrete_function(tf.TensorSpec((batch,) + shape, tf.float32))
    frozen = convert_variables_to_constants_v2(concrete)
    graph = frozen.graph.as_graph_def()
    with open(path, "wb") as f:
        f.write(graph.SerializeToString())
    return frozen.inputs[0].name, frozen.outputs[0].name


def time_tf(path, feed, fetch, x, runs, warmup, threads):
    import tensorflow as tf
    graph_def = tf.compat.v1.GraphDef()
    with open(path, "rb") as f:
        graph_def.ParseFromString(f.read())
    with tf.Graph().as_default() as g:
        tf.compat.v1.import_graph_def(graph_def, name="")
        config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=threads,
                                          inter_op_parallelism_threads=threads)
        with tf.compat.v1.Session(graph=g, config=config) as s:
            out = None
            for _ in range(warmup):
                out = s.run(fetch, {feed: x})
            ms = []
            for _ in range(runs):
                t0 = time.perf_counter()
                s.run(fetch, {feed: x})
                ms.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ms), out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--conflux", default="build/bin/conflux")
    p.add_argument("--models", default="resnet50,mobilenetv2,transformer")
    p.add_argument("--batches", default="1,16")
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--work", default="/tmp/inference_vs_tf")
    args = p.parse_args()
    import numpy as np
    os.makedirs(args.work, exist_ok=True)
    rows = []
    for name in args.models.split(","):
        model, shape = build(name)
        for batch in map(int, args.batches.split(",")):
            path = os.path.join(args.work, f"{name}_b{batch}.pb")
            feed, fetch = freeze(model, shape, batch, path)
            x = np.random.default_rng(1).random((batch,) + shape, dtype=np.float32)
            x_path = os.path.join(args.work, f"{name}_b{batch}.input.npy")
            np.save(x_path, x)
            tf_ms, tf_out = time_tf(path, feed, fetch, x, args.runs, args.warmup, args.threads)
            tf_times = [tf_ms]
            out_dir = os.path.join(args.work, f"{name}_b{batch}.out")
            run = subprocess.run([args.conflux, "run", path, "--feed", f"{feed}={x_path}",
                                  "--fetch", fetch, "--out", out_dir],
                                 capture_output=True, text=True)
            if run.returncode != 0:
                rows.append((name, batch, tf_ms, None, "conflux run: " + run.stderr.strip()[:300]))
                continue
            ours_out = np.load(os.path.join(out_dir, fetch.replace(":", "_") + ".npy"))
            diff = float(np.max(np.abs(ours_out - tf_out)) / (np.max(np.abs(tf_out)) + 1e-30))
            # Each round times TensorFlow, then Conflux: a machine whose speed drifts then moves
            # both sides of a round's ratio alike, and the rounds show how far it drifted.
            ours_times, report = [], None
            for r in range(args.rounds):
                if r > 0:
                    tf_times.append(time_tf(path, feed, fetch, x, args.runs, args.warmup,
                                            args.threads)[0])
                bench = subprocess.run([args.conflux, "bench", path, "--feed", f"{feed}={x_path}",
                                        "--fetch", fetch, "--runs", str(args.runs), "--warmup",
                                        str(args.warmup), "--threads", str(args.threads),
                                        "--json"], capture_output=True, text=True)
                if bench.returncode != 0:
                    break
                report = json.loads(bench.stdout)
                ours_times.append(report["latency_ms"]["median"])
            if len(ours_times) < args.rounds:
                rows.append((name, batch, tf_ms, None, "conflux bench: " + bench.stderr[:300]))
                continue
            ratios = sorted(o / t for o, t in zip(ours_times, tf_times))
            top = ", ".join(f"{t['op']} {t['ms']:.1f}" for t in report["top_ops"][:4])
            spread = (f"; ratio per round {ratios[0]:.2f}-{ratios[-1]:.2f}"
                      if args.rounds > 1 else "")
            rows.append((name, batch, statistics.median(tf_times), statistics.median(ours_times),
                         f"max |diff| / max |tf| = {diff:.1e}{spread}; top ops (ms): {top}",
                         statistics.median(ratios)))
            print(rows[-1], flush=True)
    print(f"\n{'model':12} {'batch':>5} {'tensorflow ms':>14} {'conflux ms':>11} {'ratio':>6}")
    for name, batch, tf_ms, ours, note, *median_ratio in rows:
        ratio = f"{median_ratio[0] if median_ratio else ours / tf_ms:6.2f}" if ours else "     -"
        ours_s = f"{ours:11.2f}" if ours else f"{'-':>11}"
        print(f"{name:12} {batch:5} {tf_ms:14.2f} {ours_s} {ratio}  {note}")


if __name__ == "__main__":
    sys.exit(main())
