#!/usr/bin/python3
"""Data-parallel scaling: Conflux against PyTorch DistributedDataParallel, in one run.

The same weak-scaling measurement on both sides: examples/s of one process against two
data-parallel processes, each with one thread and a core of its own, each on its own batch,
Adam (lr 1e-3), gradients averaged every step.
  ours:   build/bin/scaling_bench --mode single, and --mode dp-between under
          mpirun -n 2 --bind-to core (the shared-memory all-reduce of transport-mpi);
  theirs: the same model in PyTorch, one process, and two processes in
          DistributedDataParallel over gloo (PyTorch's all-reduce for CPU tensors), each pinned
          to a core, with torch.set_num_threads(1).
Models: the MLP 784-512-512-10 and the CNN of examples/fashion_mnist, batch 64 (--batch).
Every round runs the four measurements of a model one after the other, and each ratio is taken
within its round, as bench/scaling.sh does. Prints examples/s, the ratios two/one of each side
and their medians.

    /usr/bin/python3 bench/scaling_vs_torch.py [--build build] [--rounds 3] [--models mlp,cnn]

Needs Debian's python3-torch (its gloo backend) and an optimised BLAS for it
(apt-get install python3-torch libopenblas0-pthread), Open MPI's mpirun, and a build with
scaling_bench.
"""
import argparse
import os
import site
import socket
import statistics
import subprocess
import sys
import time

STEPS = {"mlp": 1500, "cnn": 150}  # about 5 s (MLP) and 10 s (CNN) per run, as scaling.sh


def torch_worker(args):
    # Debian's torch is built against Debian's NumPy; a pip NumPy must not shadow it.
    sys.path[:] = [p for p in sys.path
                   if not p.startswith(("/usr/local/lib/python", site.getusersitepackages()))]
    import torch
    import torch.distributed as dist
    from torch import nn
    os.sched_setaffinity(0, {args.core})
    torch.set_num_threads(1)
    torch.manual_seed(1)
    if args.world > 1:
        dist.init_process_group("gloo", rank=args.rank, world_size=args.world,
                                init_method=f"tcp://127.0.0.1:{args.port}")
    if args.model == "mlp":
        model = nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512),
                              nn.ReLU(), nn.Linear(512, 10))
    else:
        model = nn.Sequential(
            nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
            nn.Linear(7 * 7 * 64, 1024), nn.ReLU(), nn.Dropout(0.5), nn.Linear(1024, 10))
    model.train()
    if args.world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    x = torch.rand(args.batch, 1, 28, 28)
    y = torch.randint(0, 10, (args.batch,))

    def run(steps):
        for _ in range(steps):
            opt.zero_grad(set_to_none=True)
            loss_fn(model(x), y).backward()
            opt.step()
        if args.world > 1:
            dist.barrier()

    run(20)
    start = time.perf_counter()
    run(args.steps)
    seconds = time.perf_counter() - start
    if args.rank == 0:
        print(f"examples/s {args.steps * args.batch * args.world / seconds:.1f}")
    if args.world > 1:
        dist.destroy_process_group()


def rate(outputs):
    """The examples/s a run printed (rank 0's line)."""
    for out in outputs:
        for line in out.splitlines():
            if "examples/s" in line:
                return float(line.split()[-1])
    sys.exit("no examples/s line in:\n" + "\n".join(outputs))


def run_all(commands, env=None):
    """Runs the commands at once; their outputs (exits on a failure)."""
    procs = [subprocess.Popen(c, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for c in commands]
    outputs = []
    for c, p in zip(commands, procs):
        out, err = p.communicate()
        if p.returncode != 0:
            sys.exit(f"{' '.join(c)} failed ({p.returncode}):\n{err[-4000:]}")
        outputs.append(out)
    return outputs


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def theirs(model, world, batch):
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    port = free_port()
    return rate(run_all([[sys.executable, __file__, "--torch-worker", "--model", model,
                          "--batch", str(batch), "--steps", str(STEPS[model]), "--rank", str(r),
                          "--world", str(world), "--core", str(r), "--port", str(port)]
                         for r in range(world)], env))


def ours(build, model, mode, batch):
    bench = [os.path.join(build, "bin", "scaling_bench"), "--model", model, "--mode", mode,
             "--steps", str(STEPS[model]), "--batch", str(batch)]
    if mode == "single":
        return rate(run_all([["taskset", "-c", "0"] + bench]))
    mpirun = ["mpirun", "--oversubscribe", "--bind-to", "core", "-n", "2"]
    env = dict(os.environ)
    if os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return rate(run_all([mpirun + bench], env))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--models", default="mlp,cnn")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--torch-worker", action="store_true", help=argparse.SUPPRESS)
    for hidden in ("--model", "--steps", "--rank", "--world", "--core", "--port"):
        parser.add_argument(hidden, help=argparse.SUPPRESS,
                            type=str if hidden == "--model" else int)
    args = parser.parse_args()
    if args.torch_worker:
        return torch_worker(args)
    if os.cpu_count() < 2:
        sys.exit("needs 2 cores")
    models = args.models.split(",")
    for m in models:
        if m not in STEPS:
            parser.error(f"--models takes mlp and cnn, not {m}")
    print(f"{'model':5} {'round':>5} {'ours 1':>9} {'ours 2':>9} {'torch 1':>9} {'torch 2':>9}"
          f" {'ours 2/1':>9} {'torch 2/1':>9}   (examples/s)")
    ratios = {m: ([], []) for m in models}
    for rnd in range(1, args.rounds + 1):
        for m in models:
            o1 = ours(args.build, m, "single", args.batch)
            o2 = ours(args.build, m, "dp-between", args.batch)
            t1 = theirs(m, 1, args.batch)
            t2 = theirs(m, 2, args.batch)
            ratios[m][0].append(o2 / o1)
            ratios[m][1].append(t2 / t1)
            print(f"{m:5} {rnd:5} {o1:9.1f} {o2:9.1f} {t1:9.1f} {t2:9.1f} {o2 / o1:9.2f}"
                  f" {t2 / t1:9.2f}", flush=True)
    print("medians of the rounds' ratios:")
    for m in models:
        print(f"{m:5} ours {statistics.median(ratios[m][0]):.2f}"
              f"  torch {statistics.median(ratios[m][1]):.2f}")


if __name__ == "__main__":
    main()
