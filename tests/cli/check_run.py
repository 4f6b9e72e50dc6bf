#!/usr/bin/env python3
"""Checks `conflux run` end to end: feeds and fetches as .npy files, the summary lines, the
Chrome trace, and the errors. Fails when numpy is missing (cmake/install-deps.sh installs it).

usage: check_run.py CONFLUX SOURCE_DIR WORK_DIR CHECK
  CHECK is one of: affine, tf_matmul_add, tf_functions, errors
"""
import json
import os
import shutil
import subprocess
import sys



def run(conflux, *args):
    p = subprocess.run([conflux, "run", *args], capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def run_ok(conflux, *args):
    rc, out, err = run(conflux, *args)
    if rc != 0:
        sys.exit("conflux run %s failed (%d):\n%s%s" % (" ".join(args), rc, out, err))
    return out


def fresh_dir(path):
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def check_affine(conflux, src, work):
    """examples/graphs/affine.pbtxt with x fed: y = relu(x @ w + b), total = sum(y)."""
    np = import_numpy()
    graph = os.path.join(src, "examples", "graphs", "affine.pbtxt")
    work = fresh_dir(work)
    x = np.array([[0.5, -1.0, 2.0], [3.0, 0.25, -4.0]], dtype=np.float32)
    np.save(os.path.join(work, "x.npy"), x)
    out_dir = os.path.join(work, "out")
    trace = os.path.join(work, "trace.json")
    stdout = run_ok(conflux, graph, "--feed", "x:0=" + os.path.join(work, "x.npy"),
                    "--fetch", "y:0", "--fetch", "total:0", "--out", out_dir, "--trace", trace)

    w = np.array([[0.5, -1], [0.25, 0.5], [-0.5, 1]], dtype=np.float32)
    b = np.array([0.1, -2], dtype=np.float32)
    y = np.maximum(x @ w + b, 0)
    total = y.sum()
    got_y = np.load(os.path.join(out_dir, "y_0.npy"))
    got_total = np.load(os.path.join(out_dir, "total_0.npy"))
    assert got_y.dtype == np.float32 and got_y.shape == (2, 2), got_y
    assert got_total.dtype == np.float32 and got_total.shape == (), got_total
    np.testing.assert_allclose(got_y, y, rtol=1e-6)
    np.testing.assert_allclose(got_total, total, rtol=1e-6)

    lines = stdout.splitlines()
    y_line = next(l for l in lines if l.startswith("y:0 "))
    assert y_line.startswith("y:0 float [2,2] min=%g max=%g mean=%g values={"
                             % (y.min(), y.max(), y.mean())), y_line
    assert any(l.startswith("total:0 float [] min=") for l in lines), stdout

    with open(trace) as f:
        events = json.load(f)["traceEvents"]
    names = {e["name"] for e in events if e["ph"] == "X"}
    # The remapper fused xw (MatMul), xw_b (AddV2 of a Const vector) and y (Relu) into y.
    missing = {"y", "total"} - names
    assert not missing, "trace lacks %s; has %s" % (missing, names)
    ops = {e["name"]: e.get("args", {}).get("op") for e in events if e["ph"] == "X"}
    assert ops["y"] == "_FusedMatMul", ops
    assert "x" not in names, "the fed node x ran: %s" % names
    processes = [e["args"]["name"] for e in events
                 if e["ph"] == "M" and e["name"] == "process_name"]
    assert any("CPU:0" in p for p in processes), processes
    for e in events:
        if e["ph"] == "X":
            assert e["ts"] >= 0 and e["dur"] >= 0 and e["args"]["op"], e


def check_tf_matmul_add(conflux, src, work):
    """A graph TensorFlow froze, fed and compared with what TensorFlow computed."""
    np = import_numpy()
    fixtures = os.path.join(src, "tests", "fixtures", "graphs")
    work = fresh_dir(work)
    for graph in ("matmul_add.pb", "matmul_add.pbtxt"):
        out_dir = os.path.join(work, graph)
        run_ok(conflux, os.path.join(fixtures, graph),
               "--feed", "x:0=" + os.path.join(fixtures, "matmul_add.input.npy"),
               "--fetch", "Identity:0", "--fetch", "Identity_1", "--out", out_dir)
        for fetch, name in (("Identity_0", "Identity"), ("Identity_1", "Identity_1")):
            want = np.load(os.path.join(fixtures, "matmul_add.%s.npy" % name))
            got = np.load(os.path.join(out_dir, fetch + ".npy"))
            assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def check_tf_functions(conflux, src, work):
    """Graphs with functional control flow and calls (inlined and lowered when loaded), fed and
    compared with what TensorFlow computed (tests/fixtures/functions)."""
    np = import_numpy()
    fixtures = os.path.join(src, "tests", "fixtures", "functions")
    work = fresh_dir(work)
    cases = [("function_call", "function_call", ["x"], ["Identity", "Identity_1", "Identity_2"]),
             ("while_in_cond_taken", "while_in_cond", ["x", "n", "p"],
              ["Identity", "Identity_1"])]
    for case, graph, feeds, fetches in cases:
        out_dir = os.path.join(work, case)
        args = [os.path.join(fixtures, graph + ".pb"), "--out", out_dir]
        for feed in feeds:
            args += ["--feed", "%s:0=%s" % (feed, os.path.join(fixtures, "%s.%s.npy" % (case, feed)))]
        for fetch in fetches:
            args += ["--fetch", fetch + ":0"]
        run_ok(conflux, *args)
        for fetch in fetches:
            want = np.load(os.path.join(fixtures, "%s.%s_0.npy" % (case, fetch)))
            got = np.load(os.path.join(out_dir, fetch + "_0.npy"))
            assert got.dtype == want.dtype and got.shape == want.shape, (case, got, want)
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    # `conflux graph show` lists the graph as it runs: the StatelessWhile as a loop frame.
    p = subprocess.run([conflux, "graph", "show", os.path.join(fixtures, "while_loop.pb")],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "= LoopCond(" in p.stdout and "= StatelessWhile(" not in p.stdout, p.stdout


def check_errors(conflux, src, work):
    """Each mistake gives exit code 1 and one line on stderr that says what was wrong."""
    graph = os.path.join(src, "examples", "graphs", "affine.pbtxt")
    npy = os.path.join(src, "tests", "fixtures", "npy", "float32.npy")
    work = fresh_dir(work)
    cases = [
        (["/nonexistent/g.pbtxt", "--fetch", "y:0"], "/nonexistent/g.pbtxt"),
        ([graph, "--feed", "x:0", "--fetch", "y:0"], "bad --feed 'x:0'"),
        ([graph, "--feed", "x:0=", "--fetch", "y:0"], "no file after '='"),
        ([graph, "--feed", "x:0=/nonexistent/x.npy", "--fetch", "y:0"], "/nonexistent/x.npy"),
        ([graph, "--feed", "x:0=" + graph, "--fetch", "y:0"], "bad magic"),
        ([graph, "--feed", "x:0=" + npy, "--feed", "x=" + npy, "--fetch", "y:0"], "twice"),
        ([graph, "--fetch", "no_such_node:0"], "no_such_node"),
        ([graph, "--fetch", "^y"], "--target"),
        ([graph], "at least one --fetch or --target"),
        ([graph, "--fetch", "y:0", "--timeout-ms", "soon"], "bad --timeout-ms 'soon'"),
    ]
    failures = []
    for args, want in cases:
        rc, out, err = run(conflux, *args)
        lines = err.strip().splitlines()
        if rc != 1 or len(lines) != 1 or want not in lines[0]:
            failures.append("conflux run %s: exit %d, stderr %r; expected exit 1 and one line "
                            "with %r" % (" ".join(args), rc, err, want))
    if failures:
        sys.exit("\n".join(failures))


def import_numpy():
    try:
        import numpy
    except ImportError:
        sys.exit(f"numpy is not installed for {sys.executable} (Debian's python3-numpy is "
                 "installed by cmake/install-deps.sh for /usr/bin/python3)")
    return numpy


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    conflux, src, work, check = sys.argv[1:]
    {"affine": check_affine, "tf_matmul_add": check_tf_matmul_add,
     "tf_functions": check_tf_functions,
     "errors": check_errors}[check](conflux, src, work)
    print("ok")


if __name__ == "__main__":
    main()
