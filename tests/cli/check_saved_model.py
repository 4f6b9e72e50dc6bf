#!/usr/bin/env python3
"""`conflux show`, `conflux run` and `conflux bench` on SavedModels TensorFlow exported.

    check_saved_model.py CONFLUX SRC OUT

With the fixtures of tests/fixtures/savedmodel/ (TensorFlow 2.21's exports and its outputs):
`show` lists the tag set, the signatures with their keys, dtypes and shapes, and the variables;
`run` feeds signature inputs by key from .npy files (float, int32 and fixed-width byte strings)
and writes OUT/<key>.npy for every output, which match TensorFlow's; `bench` reports its load
time, first call and latency as JSON; an unknown signature, an unknown input key, an input of
the wrong dtype and a NumPy object array are errors that name what was wrong.
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np


def conflux(binary, *args):
    return subprocess.run([binary, *args], capture_output=True, text=True, timeout=300)


def check(cond, what, p=None):
    if not cond:
        detail = "" if p is None else "\nstdout:\n%s\nstderr:\n%s" % (p.stdout, p.stderr)
        raise SystemExit("FAILED: %s%s" % (what, detail))


def expect_outputs(out, io, keys):
    for k in keys:
        got = np.load(os.path.join(out, k + ".npy"))
        want = np.load(os.path.join(io, k + ".npy"))
        check(got.shape == want.shape, "%s: shape %s, TensorFlow's %s" % (k, got.shape, want.shape))
        if want.dtype.kind in "SU":
            check(got.dtype.kind == "S", "%s: a byte-string array, got %s" % (k, got.dtype))
            check([bytes(v) for v in got.ravel()] == [bytes(v) for v in want.ravel()],
                  "%s: %s, TensorFlow's %s" % (k, got, want))
        elif want.dtype.kind == "f":
            check(got.dtype == want.dtype and np.allclose(got, want, rtol=1e-5, atol=1e-5),
                  "%s: %s, TensorFlow's %s" % (k, got, want))
        else:
            check(got.dtype == want.dtype and np.array_equal(got, want),
                  "%s: %s, TensorFlow's %s" % (k, got, want))


def main():
    binary, src, work = sys.argv[1], sys.argv[2], sys.argv[3]
    fixtures = os.path.join(src, "tests", "fixtures", "savedmodel")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    two = os.path.join(fixtures, "module_two_sigs")

    p = conflux(binary, "show", two)
    check(p.returncode == 0, "show", p)
    for text in ("MetaGraphDef with tag-set: 'serve'", "signature_def['loop']",
                 "signature_def['scale']", "inputs['n'] tensor_info:\n        dtype: DT_INT32\n"
                 "        shape: ()", "outputs['y'] tensor_info:\n        dtype: DT_FLOAT\n"
                 "        shape: (-1, 3)", "Variables ("):
        check(text in p.stdout, "show prints %r" % text, p)

    # Float inputs, two signatures, a while loop.
    io = os.path.join(fixtures, "module_two_sigs.io")
    out = os.path.join(work, "scale")
    p = conflux(binary, "run", two, "--signature", "scale", "--feed",
                "x=" + os.path.join(io, "scale", "x.npy"), "--out", out)
    check(p.returncode == 0, "run scale", p)
    expect_outputs(out, os.path.join(io, "scale", "scale"), ["y", "total"])
    out = os.path.join(work, "loop")
    p = conflux(binary, "run", two, "--signature", "loop", "--feed",
                "n=" + os.path.join(io, "loop_n7", "n.npy"), "--feed",
                "x=" + os.path.join(io, "loop_n7", "x.npy"), "--out", out)
    check(p.returncode == 0, "run loop", p)
    expect_outputs(out, os.path.join(io, "loop_n7", "loop"), ["out", "steps", "count"])

    # Byte strings in and out, tables from an asset, the default signature.
    text = os.path.join(fixtures, "text_vocab")
    io = os.path.join(fixtures, "text_vocab.io")
    out = os.path.join(work, "text")
    p = conflux(binary, "run", text, "--feed", "text=" + os.path.join(io, "text.npy"), "--out", out)
    check(p.returncode == 0, "run text_vocab", p)
    expect_outputs(out, os.path.join(io, "serving_default"), ["ids", "emb", "size", "mut"])
    out = os.path.join(work, "join")
    unicode_a = os.path.join(work, "a_unicode.npy")
    np.save(unicode_a, np.load(os.path.join(io, "a.npy")).astype(np.str_))  # U: UTF-8 strings
    p = conflux(binary, "run", text, "--signature", "join", "--feed", "a=" + unicode_a,
                "--feed", "b=" + os.path.join(io, "b.npy"), "--out", out)
    check(p.returncode == 0, "run join", p)
    expect_outputs(out, os.path.join(io, "join"), ["joined", "len"])

    # bench: JSON with the load, the first call and the latency of the runs.
    p = conflux(binary, "bench", two, "--signature", "scale", "--input-shape", "x:4,3",
                "--runs", "5", "--warmup", "1", "--json")
    check(p.returncode == 0, "bench", p)
    r = json.loads(p.stdout)
    check(r["signature"] == "scale" and r["load_ms"] > 0 and r["first_call_ms"] > 0, "bench json", p)

    # Errors name what was wrong.
    x = os.path.join(io, "text.npy")
    for args, message in (
            (["--signature", "predict"], "no signature 'predict'; its signatures are 'join', "
                                         "'serving_default'"),
            (["--feed", "words=" + x], "has no input 'words'"),
            (["--feed", "text=" + os.path.join(fixtures, "module_two_sigs.io", "scale", "x.npy")],
             "input 'text' takes string, got float")):
        p = conflux(binary, "run", text, *args)
        check(p.returncode != 0 and message in p.stderr, "error %r" % message, p)
    objects = os.path.join(work, "objects.npy")
    np.save(objects, np.array([b"a", "b"], dtype=object), allow_pickle=True)
    p = conflux(binary, "run", text, "--feed", "text=" + objects)
    check(p.returncode != 0 and "object" in p.stderr and objects in p.stderr,
          "an object array is an error naming the file", p)
    print("ok")


if __name__ == "__main__":
    main()
