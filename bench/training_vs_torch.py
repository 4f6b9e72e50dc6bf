#!/usr/bin/python3
"""Training-step time: Conflux's client API against PyTorch eager, same models, in one run.

Models (both trained with Adam, lr 1e-3, on a fixed random batch fed every step):
  cnn: TensorFlow's tutorial CNN of examples/fashion_mnist (conv 5x5x32, max-pool, conv 5x5x64,
       max-pool, dense 1024, dropout 0.5, dense 10), batch 64;
  mlp: 784-512-512-10 with ReLU, batch 128.
Ours:   build/bin/training_bench (milliseconds per step, several repetitions).
Theirs: the same models in PyTorch, on 2 threads, run in a child process once per environment
        variant (defaults; OMP_WAIT_POLICY=passive; OPENBLAS_NUM_THREADS=1; both); the fastest
        variant of each model counts, in NCHW or channels-last, whichever is faster.
Prints milliseconds per step (median of repetitions, best in parentheses) and ours/theirs.

    /usr/bin/python3 bench/training_vs_torch.py [--bench build/bin/training_bench] [--reps 5]

On a GPU (--device cuda; any python3 with a CUDA PyTorch): ours run with --config (a config
with the CUDA plugin, config/examples/cuda.yaml) and the batch resident on the device; PyTorch
with cudnn.benchmark on, its batch on the GPU and no synchronization inside a step (each
repetition ends with one); CNN at batch 64 and 512, MLP at 128.

    python3 bench/training_vs_torch.py --device cuda --config config/examples/cuda.yaml
On the CPU it needs Debian's python3-torch and an optimised BLAS for it (apt-get install python3-torch
libopenblas0-pthread): Debian's torch calls the libblas.so.3 that update-alternatives selects,
and the reference BLAS that it gets otherwise is tens of times slower.
"""
import argparse
import json
import os
import site
import statistics
import subprocess
import sys
import time

VARIANTS = [{}, {"OMP_WAIT_POLICY": "passive"}, {"OPENBLAS_NUM_THREADS": "1"},
            {"OMP_WAIT_POLICY": "passive", "OPENBLAS_NUM_THREADS": "1"}]
BATCH = {"cnn": 64, "mlp": 128}
GPU_RUNS = [("cnn", 64), ("cnn", 512), ("mlp", 128)]


def torch_worker(steps, reps, warmup, device, runs):
    if device == "cpu":
        # Debian's torch is built against Debian's NumPy; a pip NumPy must not shadow it.
        sys.path[:] = [p for p in sys.path
                       if not p.startswith(("/usr/local/lib/python", site.getusersitepackages()))]
    import torch
    from torch import nn
    if device == "cpu":
        torch.set_num_threads(2)
    else:
        torch.backends.cudnn.benchmark = True
    torch.manual_seed(1)

    def sync():
        if device != "cpu":
            torch.cuda.synchronize()

    def cnn():
        return nn.Sequential(
            nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
            nn.Linear(7 * 7 * 64, 1024), nn.ReLU(), nn.Dropout(0.5), nn.Linear(1024, 10))

    def mlp():
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512),
                             nn.ReLU(), nn.Linear(512, 10))

    # Debian's torch calls whatever libblas.so.3 the alternatives system selects: report it.
    torch.mm(torch.rand(64, 64), torch.rand(64, 64))
    with open("/proc/self/maps") as maps:
        blas = sorted({line.split()[-1] for line in maps if "blas" in line.split()[-1]})
    results = {"blas": blas if device == "cpu" else [torch.cuda.get_device_name()]}
    makers = {"cnn": (cnn, (torch.contiguous_format, torch.channels_last)),
              "mlp": (mlp, (torch.contiguous_format,))}
    for name, batch in runs:
        make, layouts = makers[name]
        best = None
        for layout in layouts:
            model = make().to(memory_format=layout) if name == "cnn" else make()
            model = model.to(device)
            model.train()
            opt = torch.optim.Adam(model.parameters(), lr=1e-3)
            loss_fn = nn.CrossEntropyLoss()
            x = torch.rand(batch, 1, 28, 28).contiguous(memory_format=layout).to(device)
            y = torch.randint(0, 10, (batch,)).to(device)

            def step():
                opt.zero_grad(set_to_none=True)
                loss = loss_fn(model(x), y)
                loss.backward()
                opt.step()
                return loss

            for _ in range(warmup):
                step()
            sync()
            ms = []
            for _ in range(reps):
                start = time.perf_counter()
                for _ in range(steps):
                    step()
                sync()
                ms.append((time.perf_counter() - start) * 1e3 / steps)
            if best is None or statistics.median(ms) < statistics.median(best):
                best = ms
        results[f"{name}/{batch}"] = best
    print(json.dumps(results))


def summary(values):
    return f"{statistics.median(values):8.2f} ({min(values):.2f})"


def last_json_line(command, env=None):
    """Runs `command`; its last line of output as JSON (its error output on failure)."""
    run = subprocess.run(command, env=env, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({run.returncode}):\n{run.stderr[-4000:]}")
    return json.loads(run.stdout.splitlines()[-1])


def run_ours(args, model, batch, extra):
    return last_json_line([args.bench, "--model", model, "--batch", str(batch), "--steps",
                           str(args.steps), "--reps", str(args.reps), "--warmup",
                           str(args.warmup)] + extra)


def run_theirs(args, runs, env):
    return last_json_line([sys.executable, __file__, "--torch-worker", "--device", args.device,
                           "--steps", str(args.steps), "--reps", str(args.reps), "--warmup",
                           str(args.warmup), "--runs", json.dumps(runs)], env)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", default="build/bin/training_bench")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--config", help="the config of ours (with --device cuda: required)")
    parser.add_argument("--torch-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--runs", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.torch_worker:
        return torch_worker(args.steps, args.reps, args.warmup, args.device,
                            [tuple(r) for r in json.loads(args.runs)])
    if args.device == "cuda" and not args.config:
        parser.error("--device cuda needs --config (e.g. config/examples/cuda.yaml)")

    runs = list(BATCH.items()) if args.device == "cpu" else GPU_RUNS
    extra = ["--config", args.config] if args.config else []
    if args.device == "cuda":
        extra += ["--resident", "1"]
    ours = {f"{m}/{b}": run_ours(args, m, b, extra) for m, b in runs}
    theirs, chosen = {}, {}
    for variant in (VARIANTS if args.device == "cpu" else [{}]):
        result = run_theirs(args, runs, dict(os.environ, **variant))
        blas = result.pop("blas")
        for name, ms in result.items():
            label = " ".join(f"{k}={v}" for k, v in variant.items()) or "defaults"
            print(f"  torch {name:8} {label:45} {summary(ms)} ms/step")
            if name not in theirs or statistics.median(ms) < statistics.median(theirs[name]):
                theirs[name], chosen[name] = ms, label

    if args.device == "cpu":
        print(f"  torch BLAS: {', '.join(blas) or 'none found'}")
        if not any("openblas" in b or "mkl" in b or "blis" in b for b in blas):
            print("  warning: torch runs on the reference BLAS; install libopenblas0-pthread "
                  "(its best setting here)")
    else:
        print(f"  device: {blas[0]}")
    print(f"\n{'model':5} {'batch':>5} {'conflux ms/step':>18} {'pytorch ms/step':>18} "
          f"{'ratio':>6}  pytorch settings")
    for name in ours:
        ms = ours[name]["ms_per_step"]
        ratio = statistics.median(ms) / statistics.median(theirs[name])
        model, batch = name.split("/")
        print(f"{model:5} {batch:>5} {summary(ms):>18} {summary(theirs[name]):>18} "
              f"{ratio:6.2f}  {chosen[name]}")
    for name, r in ours.items():
        print(f"\n{name} step, {'GPU' if args.device == 'cuda' else 'CPU'} allocator: "
              f"{r['live_bytes_before_step'] / 2**20:.1f} MiB live before the step (variables, "
              f"Adam slots), peak {r['peak_bytes_in_step'] / 2**20:.1f} MiB during it", end="")
    print()


if __name__ == "__main__":
    main()
