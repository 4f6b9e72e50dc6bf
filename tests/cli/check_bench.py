#!/usr/bin/env python3
"""`conflux bench` on a graph TensorFlow froze: the JSON report is complete and consistent.

    check_bench.py CONFLUX SRC

Runs `conflux bench` with --input-shape and --json on tests/fixtures/graphs/matmul_add.pb and
checks that it reports the runs asked for, ordered latency statistics, a positive throughput that
agrees with the mean, the CPU's peak allocator bytes, the top ops ordered by time, and the graph's
ops among them; then
that --feed with the fixture's input works and that a bad --input-shape fails naming the flag.
"""
import json
import os
import subprocess
import sys


def bench(conflux, *args):
    return subprocess.run([conflux, "bench", *args], capture_output=True, text=True, timeout=120)


def main():
    conflux, src = sys.argv[1], sys.argv[2]
    graph = os.path.join(src, "tests", "fixtures", "graphs", "matmul_add.pb")
    p = bench(conflux, graph, "--input-shape", "x:2,3", "--fetch", "Identity:0", "--fetch",
              "Identity_1", "--runs", "20", "--warmup", "2", "--top", "3", "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["runs"] == 20 and r["warmup"] == 2, r
    lat = r["latency_ms"]
    assert 0 < lat["min"] <= lat["median"] <= lat["p90"] <= lat["p99"], lat
    assert lat["min"] <= lat["mean"] <= lat["p99"] * 20, lat
    assert abs(r["steps_per_second"] * lat["mean"] / 1e3 - 1) < 0.01, r
    cpu = "/job:localhost/replica:0/task:0/device:CPU:0"
    assert r["peak_bytes"].get(cpu, 0) > 0, r["peak_bytes"]
    top = r["top_ops"]
    assert len(top) == 3, top
    assert all(t["nodes"] >= 1 and t["ms"] >= 0 for t in top), top
    assert all(a["ms"] >= b["ms"] for a, b in zip(top, top[1:])), top
    # Every op of the graph with a larger --top: which three take longest on a 2x3 matmul is
    # up to the machine's noise.
    p = bench(conflux, graph, "--input-shape", "x:2,3", "--fetch", "Identity:0", "--runs", "3",
              "--top", "50", "--json")
    assert p.returncode == 0, p.stderr
    ops = [t["op"] for t in json.loads(p.stdout)["top_ops"]]
    assert "_FusedMatMul" in ops and 3 < len(ops) < 50, ops  # MatMul + bias, remapped

    fed = bench(conflux, graph, "--feed",
                "x:0=" + os.path.join(src, "tests", "fixtures", "graphs", "matmul_add.input.npy"),
                "--fetch", "Identity:0", "--runs", "3")
    assert fed.returncode == 0, fed.stderr
    assert "latency ms: min" in fed.stdout and "top ops by time" in fed.stdout, fed.stdout

    bad = bench(conflux, graph, "--input-shape", "x:2,-3", "--fetch", "Identity:0")
    assert bad.returncode != 0 and "bad --input-shape 'x:2,-3'" in bad.stderr, bad.stderr
    print("conflux bench: ok")


if __name__ == "__main__":
    main()
