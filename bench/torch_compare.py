#!/usr/bin/env python3
"""simdnorm against PyTorch's own norms, in one command:

    python3 bench/torch_compare.py [--plot torch_compare.png]

LayerNorm: simdnorm.torch.layer_norm against ATen's F.layer_norm.
RMSNorm: simdnorm.torch.rms_norm against Hugging Face's eager LlamaRMSNorm
(the same rounding order). Rows {1, 64, 4096}, hidden {896, 4096}, float32
and bfloat16, one thread and all (torch.set_num_threads; simdnorm follows
it). Also the C library called directly on the same tensors (the
`_core.normalize` entry with a preallocated output), so that the cost of the
torch layer itself (argument checks, the output's allocation, the call) is
shown: `layer` = simdnorm.torch's time per call minus the library's.

Times are medians of interleaved batches (each implementation in turn, ~10 ms
per batch), in ns per row; ratios are torch's time over simdnorm's (above 1:
simdnorm faster). One-thread rows are timed with the calling thread's CPU
time (time.thread_time: everything runs on that thread, and other processes
on a shared machine then cost little), rows with more threads with wall
time. Prints a Markdown table and writes a PNG bar chart of the
ratios. Runs under torch.inference_mode(). Uses the simdnorm package found
on sys.path, else the newest build tree's (build/*/python or
build/python).

--backward instead times the backward passes (float32 and the given
dtypes, one thread): torch.autograd.grad of F.layer_norm (ATen's
native_layer_norm_backward) and of the eager HF RMSNorm against the same
call through simdnorm.torch's autograd, the C library's simdnorm_backward
on preallocated buffers, and a copy of the bytes the backward moves (x and
dy read, dx written: a copy of 1.5x x's bytes).

--group instead times GroupNorm, one thread: F.group_norm against
simdnorm.torch.group_norm on (1, 320, 64, 64) and (1, 1280, 8, 8)
(--group-shapes), 32 groups (--groups), float32 and bfloat16 (--dtypes),
contiguous and channels_last tensors; also the C library's
simdnorm_group_norm alone on a preallocated output (`C library`), so that
`layer` (simdnorm.torch's time minus it) shows what the Python layer costs.
16-bit outputs are correctly rounded in both (simdnorm.torch's default).
Times are us per call.

--batch instead times BatchNorm inference (running statistics), one thread:
F.batch_norm against simdnorm.torch.batch_norm on (8, 64, 56, 56)
(--batch-shapes), contiguous and channels_last, beside a copy of x's bytes.

--channel-backward instead times, one thread, the backward passes of
GroupNorm (the --group-shapes, --groups) and of BatchNorm in training (the
--batch-shapes): torch.autograd.grad of F.group_norm and F.batch_norm
(ATen's native_group_norm_backward, native_batch_norm_backward) against the
same call through simdnorm.torch's autograd (dx, dweight, dbias), beside a
copy of the bytes a backward moves (x and dy read, dx written).
"""

import argparse
import glob
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

try:
    import simdnorm
except ImportError:
    here = os.path.dirname(os.path.abspath(__file__))
    # build/<preset>/python (the presets) or build/python (cmake -B build).
    trees = sorted(glob.glob(os.path.join(here, "..", "build", "*", "python",
                                          "simdnorm", "_core*.so")) +
                   glob.glob(os.path.join(here, "..", "build", "python",
                                          "simdnorm", "_core*.so")),
                   key=os.path.getmtime)
    if not trees:
        sys.exit("simdnorm is not importable and no build tree has it: "
                 "build with cmake, or set PYTHONPATH")
    sys.path.insert(0, os.path.dirname(os.path.dirname(trees[-1])))
    import simdnorm
import simdnorm.torch as st  # noqa: E402
from simdnorm import _core  # noqa: E402

_CODES = {torch.float32: _core.F32, torch.bfloat16: _core.BF16,
          torch.float16: _core.F16}


def hf_rms_norm(x, weight, eps):
    """Hugging Face's LlamaRMSNorm.forward (transformers), verbatim."""
    input_dtype = x.dtype
    h = x.to(torch.float32)
    variance = h.pow(2).mean(-1, keepdim=True)
    h = h * torch.rsqrt(variance + eps)
    return weight * h.to(input_dtype)


def cases(kind, x, w, b, eps):
    """The callables of one shape: torch's, simdnorm.torch's, the C
    library's on a preallocated output, and (16-bit x) simdnorm.torch's
    with fast_rounding."""
    n = x.shape[-1]
    y = torch.empty_like(x)
    types = _CODES[x.dtype] * 0x111  # x, y and the weights of x's dtype
    if kind == "layernorm":
        def ref():
            return F.layer_norm(x, (n,), w, b, eps)

        def mine():
            return st.layer_norm(x, (n,), w, b, eps)

        def fast():
            return st.layer_norm(x, (n,), w, b, eps, fast_rounding=True)
        flags, beta = 0, b.data_ptr()
    else:
        def ref():
            return hf_rms_norm(x, w, eps)

        def mine():
            return st.rms_norm(x, (n,), w, eps)

        def fast():
            return st.rms_norm(x, (n,), w, eps, fast_rounding=True)
        flags, beta = _core.ROUND_NORMALIZED, 0
    args = (_core.LAYERNORM if kind == "layernorm" else _core.RMSNORM,
            x.shape[0], n, x.data_ptr(), n, y.data_ptr(), n, w.data_ptr(),
            beta, types, eps, 0.0, flags)

    def library(y=y):  # y (and x, w, b) kept alive by the closures
        return _core.normalize(*args, torch.get_num_threads())
    if x.dtype == torch.float32:
        return ref, mine, library  # fast_rounding changes 16-bit y only
    return ref, mine, library, fast


def measure(calls, batches, batch_s, clock):
    """Median seconds per call of each callable, from interleaved batches."""
    counts = []
    for f in calls:  # calibrate: calls per batch of ~batch_s
        f()
        n, t = 1, 0.0
        while True:
            t0 = clock()
            for _ in range(n):
                f()
            t = clock() - t0
            if t >= batch_s / 4 or n >= 1 << 20:
                break
            n *= 2
        counts.append(max(1, int(n * batch_s / max(t, 1e-9))))
    times = [[] for _ in calls]
    for _ in range(batches):
        for i, (f, n) in enumerate(zip(calls, counts)):
            t0 = clock()
            for _ in range(n):
                f()
            times[i].append((clock() - t0) / n)
    return [statistics.median(t) for t in times]


def backward_cases(kind, x, w, b, eps):
    """torch's backward, simdnorm.torch's, the C library's, and a copy of
    the same bytes: callables of one shape (dx, dweight, dbias wanted)."""
    n = x.shape[-1]
    leaves = [t.clone().requires_grad_() for t in (x, w, b)]
    if kind == "layernorm":
        ref_y = F.layer_norm(*leaves[:1], (n,), *leaves[1:], eps)
        our_y = st.layer_norm(*leaves[:1], (n,), *leaves[1:], eps)
        wanted = leaves
    else:
        ref_y = hf_rms_norm(leaves[0], leaves[1], eps)
        our_y = st.rms_norm(leaves[0], (n,), leaves[1], eps)
        wanted = leaves[:2]
    dy = torch.randn_like(x)
    dx = torch.empty_like(x)
    dw, db = torch.empty(n), torch.empty(n)
    types = _CODES[x.dtype] * 0x111 | _CODES[w.dtype] << 12
    code = _core.LAYERNORM if kind == "layernorm" else _core.RMSNORM
    src = torch.empty(x.numel() * x.element_size() * 3 // 2, dtype=torch.uint8)
    dst = torch.empty_like(src)

    def ref():
        return torch.autograd.grad(ref_y, wanted, dy, retain_graph=True)

    def mine():
        return torch.autograd.grad(our_y, wanted, dy, retain_graph=True)

    def library():
        return _core.backward(code, x.shape[0], n, x.data_ptr(),
                              dy.data_ptr(), dx.data_ptr(), types,
                              w.data_ptr(), 0.0, eps, dw.data_ptr(),
                              db.data_ptr() if kind == "layernorm" else 0, 1,
                              0, 0)

    def copy():
        return dst.copy_(src)
    return ref, mine, library, copy


def group_cases(x, groups, w, b, eps):
    """F.group_norm, simdnorm.torch.group_norm and the C library alone on a
    preallocated output of x's layout."""
    n, c = x.shape[:2]
    hw = x.numel() // (n * c)
    nhwc = not x.is_contiguous()
    y = torch.empty_like(x)  # x's memory format
    code = _CODES[x.dtype]

    def ref():
        return F.group_norm(x, groups, w, b, eps)

    def mine():
        return st.group_norm(x, groups, w, b, eps)

    def library(y=y):
        return _core.group_norm(n, c, hw, groups,
                                _core.NHWC if nhwc else _core.NCHW,
                                x.data_ptr(), y.data_ptr(), code * 0x111,
                                w.data_ptr(), b.data_ptr(), eps, 0, 1)
    return ref, mine, library


def channel_cases(op, x, groups, w, b, eps, backward):
    """torch's call and simdnorm.torch's (through autograd when backward:
    dx, dweight, dbias), and a copy of the bytes the call moves."""
    c = x.shape[1]
    # Running statistics of x's dtype, as a model cast to it holds them
    # (torch 1.13 refuses float32 ones with 16-bit input in training).
    rm = (torch.randn(c) * 0.1).to(x.dtype)
    rv = (torch.rand(c) + 0.5).to(x.dtype)
    leaves = [t.clone().requires_grad_(backward) for t in (x, w, b)]
    if op == "groupnorm":
        ys = [f(*leaves[:1], groups, *leaves[1:], 1e-5)
              for f in (F.group_norm, st.group_norm)]
    else:
        ys = [f(leaves[0], rm.clone(), rv.clone(), *leaves[1:],
                training=backward, eps=eps)
              for f in (F.batch_norm, st.batch_norm)]
    dy = torch.randn_like(x)
    src = torch.empty(x.numel() * x.element_size() * (3 if backward else 2)
                      // 2, dtype=torch.uint8)
    dst = torch.empty_like(src)
    if backward:
        calls = [lambda y=y: torch.autograd.grad(y, leaves, dy,
                                                 retain_graph=True)
                 for y in ys]
    elif op == "groupnorm":
        calls = [lambda: F.group_norm(x, groups, w, b, eps),
                 lambda: st.group_norm(x, groups, w, b, eps)]
    else:
        calls = [lambda: F.batch_norm(x, rm, rv, w, b, False, 0.1, eps),
                 lambda: st.batch_norm(x, rm, rv, w, b, False, 0.1, eps)]
    return calls + [lambda: dst.copy_(src)]


def channel_table(opt, dtypes, jobs, backward):
    """us per call of torch, simdnorm.torch and a copy, one thread, for each
    (op, shape) of jobs, both memory formats."""
    print(f"simdnorm {simdnorm.__version__} (ISA {simdnorm.active_isa()}), "
          f"torch {torch.__version__}; 1 thread; load average "
          f"{os.getloadavg()[0]:.2f} at start")
    print("\nus per call (lower is better); ratio = torch / simdnorm.torch"
          + (" (both through torch.autograd.grad: dx, dweight, dbias)"
             if backward else "") + "; copy = a copy of the bytes the call "
          "moves; simdnorm / copy\n")
    print("| op | shape | dtype | layout | torch | simdnorm.torch | ratio | "
          "copy | simdnorm / copy |")
    print("|---|---|---|---|---:|---:|---:|---:|---:|")
    torch.set_num_threads(1)
    torch.manual_seed(0)
    for op, shape in jobs:
        for dtype in dtypes:
            for layout in ("contiguous", "channels_last"):
                x = torch.randn(shape).to(dtype)
                if layout == "channels_last":
                    x = x.to(memory_format=torch.channels_last)
                c = shape[1]
                w = (torch.rand(c) + 0.5).to(dtype)
                b = (torch.rand(c) - 0.5).to(dtype)
                with torch.inference_mode(not backward):
                    ref, mine, copy = measure(
                        channel_cases(op, x, opt.groups, w, b, 1e-5,
                                      backward),
                        opt.batches, opt.batch_ms / 1e3, time.thread_time)
                print(f"| {op}{'' if op != 'batchnorm' or backward else ' inference'}"
                      f" | {'x'.join(map(str, shape))} | {str(dtype)[6:]} | "
                      f"{layout} | {ref * 1e6:.1f} | {mine * 1e6:.1f} | "
                      f"{ref / mine:.2f}x | {copy * 1e6:.1f} | "
                      f"{mine / copy:.2f} |", flush=True)


def group_table(opt, dtypes):
    shapes = [tuple(int(v) for v in s.split("x"))
              for s in opt.group_shapes.split(",")]
    print(f"simdnorm {simdnorm.__version__} (ISA {simdnorm.active_isa()}), "
          f"torch {torch.__version__}; GroupNorm, {opt.groups} groups, 1 "
          f"thread; load average {os.getloadavg()[0]:.2f} at start")
    print("\nus per call (lower is better); ratio = F.group_norm / "
          "simdnorm.torch.group_norm; C library = simdnorm_group_norm alone "
          "(preallocated output); layer = simdnorm.torch minus C library\n")
    print("| shape | dtype | layout | F.group_norm | simdnorm.torch | ratio | "
          "C library | torch / library | layer us |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    torch.set_num_threads(1)
    torch.manual_seed(0)
    with torch.inference_mode():
        for shape in shapes:
            for dtype in dtypes:
                for layout in ("contiguous", "channels_last"):
                    x = torch.randn(shape).to(dtype)
                    if layout == "channels_last":
                        x = x.to(memory_format=torch.channels_last)
                    c = shape[1]
                    w = (torch.rand(c) + 0.5).to(dtype)
                    b = (torch.rand(c) - 0.5).to(dtype)
                    ref, mine, lib = measure(
                        group_cases(x, opt.groups, w, b, 1e-5), opt.batches,
                        opt.batch_ms / 1e3, time.thread_time)
                    print(f"| {'x'.join(map(str, shape))} | "
                          f"{str(dtype)[6:]} | {layout} | {ref * 1e6:.1f} | "
                          f"{mine * 1e6:.1f} | {ref / mine:.2f}x | "
                          f"{lib * 1e6:.1f} | {ref / lib:.2f}x | "
                          f"{(mine - lib) * 1e6:.2f} |", flush=True)


def backward_table(opt, rows_list, hiddens, dtypes):
    print(f"simdnorm {simdnorm.__version__} (ISA {simdnorm.active_isa()}), "
          f"torch {torch.__version__}; backward passes, 1 thread; load "
          f"average {os.getloadavg()[0]:.2f} at start")
    print("\nns per row; ratio = torch / simdnorm.torch (both through "
          "torch.autograd.grad: dx, dweight, dbias); C library = "
          "simdnorm_backward alone; copy = a copy of the bytes it moves; "
          "library / copy\n")
    print("| kind | dtype | hidden | rows | torch | simdnorm.torch | ratio | "
          "C library | copy | library / copy |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    torch.set_num_threads(1)
    torch.manual_seed(0)
    peer = {"layernorm": "F.layer_norm", "rmsnorm": "HF RMSNorm"}
    for kind in opt.kinds.split(","):
        for dtype in dtypes:
            for hidden in hiddens:
                for rows in rows_list:
                    x = torch.randn(rows, hidden).to(dtype)
                    w = (torch.rand(hidden) + 0.5).to(dtype)
                    b = (torch.rand(hidden) - 0.5).to(dtype)
                    ref, mine, lib, copy = measure(
                        backward_cases(kind, x, w, b, 1e-5), opt.batches,
                        opt.batch_ms / 1e3, time.thread_time)
                    per = 1e9 / rows
                    print(f"| {kind} | {str(dtype)[6:]} | {hidden} | {rows} | "
                          f"{peer[kind]} {ref * per:.0f} | {mine * per:.0f} | "
                          f"{ref / mine:.2f}x | {lib * per:.0f} | "
                          f"{copy * per:.0f} | {lib / copy:.2f} |",
                          flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", default="1,64,4096")
    parser.add_argument("--hidden", default="896,4096")
    parser.add_argument("--dtypes", default="float32,bfloat16")
    parser.add_argument("--threads", default="1,all",
                        help="thread counts; all = os.cpu_count()")
    parser.add_argument("--kinds", default="layernorm,rmsnorm",
                        help="comma-separated: layernorm, rmsnorm")
    parser.add_argument("--batches", type=int, default=15)
    parser.add_argument("--batch-ms", type=float, default=10.0)
    parser.add_argument("--plot", default="torch_compare.png",
                        help="PNG to write ('' for none)")
    parser.add_argument("--backward", action="store_true",
                        help="time the backward passes instead")
    parser.add_argument("--group", action="store_true",
                        help="time GroupNorm instead (1 thread)")
    parser.add_argument("--group-shapes", default="1x320x64x64,1x1280x8x8")
    parser.add_argument("--groups", type=int, default=32)
    parser.add_argument("--batch", action="store_true",
                        help="time BatchNorm inference instead (1 thread)")
    parser.add_argument("--batch-shapes", default="8x64x56x56")
    parser.add_argument("--channel-backward", action="store_true",
                        help="time GroupNorm's and BatchNorm training's "
                        "backward passes instead (1 thread)")
    opt = parser.parse_args()
    unknown = set(opt.kinds.split(",")) - {"layernorm", "rmsnorm"}
    if unknown:
        parser.error(f"--kinds: unknown {','.join(sorted(unknown))} "
                     "(layernorm, rmsnorm)")
    cpus = os.cpu_count()
    threads = [cpus if t == "all" else int(t) for t in opt.threads.split(",")]
    threads = list(dict.fromkeys(threads))
    rows_list = [int(r) for r in opt.rows.split(",")]
    hiddens = [int(h) for h in opt.hidden.split(",")]
    dtypes = [getattr(torch, d) for d in opt.dtypes.split(",")]
    kinds = opt.kinds.split(",")
    if opt.backward:
        backward_table(opt, rows_list, hiddens, dtypes)
        return
    if opt.group:
        group_table(opt, dtypes)
        return
    def shapes(text):
        return [tuple(int(v) for v in t.split("x")) for t in text.split(",")]
    batch_jobs = [("batchnorm", s) for s in shapes(opt.batch_shapes)]
    if opt.batch:
        channel_table(opt, dtypes, batch_jobs, False)
        return
    if opt.channel_backward:
        channel_table(opt, dtypes, [("groupnorm", s) for s in
                                    shapes(opt.group_shapes)] + batch_jobs,
                      True)
        return

    print(f"simdnorm {simdnorm.__version__} (ISA {simdnorm.active_isa()}), "
          f"torch {torch.__version__}, {cpus} CPUs; load average "
          f"{os.getloadavg()[0]:.2f} at start")
    peer = {"layernorm": "F.layer_norm", "rmsnorm": "HF RMSNorm"}
    print("\nns per row (lower is better); ratio = torch / simdnorm.torch "
          "(correctly rounded, the default); fast = simdnorm.torch with "
          "fast_rounding=True (16-bit only) and its ratio; layer = "
          "simdnorm.torch's time per call minus the C library's (us)\n")
    print("| kind | dtype | hidden | rows | threads | torch | simdnorm.torch "
          "| C library | ratio | layer us | fast | fast ratio |")
    print("|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    results = []
    torch.manual_seed(0)
    start = time.time()
    with torch.inference_mode():
        for kind in kinds:
            for dtype in dtypes:
                for hidden in hiddens:
                    for rows in rows_list:
                        x = torch.randn(rows, hidden).to(dtype)
                        w = (torch.rand(hidden) + 0.5).to(dtype)
                        b = (torch.rand(hidden) - 0.5).to(dtype)
                        calls = cases(kind, x, w, b, 1e-5)
                        for n in threads:
                            torch.set_num_threads(n)
                            clock = (time.thread_time if n == 1 else
                                     time.perf_counter)
                            ref, mine, lib, *fast = measure(
                                calls, opt.batches, opt.batch_ms / 1e3, clock)
                            ratio = ref / mine
                            results.append((kind, str(dtype)[6:], hidden,
                                            rows, n, ratio))
                            extra = "| - | - |"
                            if fast:
                                results.append((kind, str(dtype)[6:] +
                                                " fast", hidden, rows, n,
                                                ref / fast[0]))
                                extra = (f"| {fast[0] / rows * 1e9:.0f} | "
                                         f"{ref / fast[0]:.2f}x |")
                            print(f"| {kind} | {str(dtype)[6:]} | {hidden} | "
                                  f"{rows} | {n} | {peer[kind]} "
                                  f"{ref / rows * 1e9:.0f} | "
                                  f"{mine / rows * 1e9:.0f} | "
                                  f"{lib / rows * 1e9:.0f} | "
                                  f"{ratio:.2f}x | "
                                  f"{(mine - lib) * 1e6:.2f} {extra}",
                                  flush=True)
    torch.set_num_threads(cpus)
    print(f"\n{time.time() - start:.0f} s; load average "
          f"{os.getloadavg()[0]:.2f} at the end")
    if opt.plot:
        plot(results, opt.plot)
        print(f"wrote {opt.plot}")


def plot(results, path):
    """One panel per kind and thread count; bars per dtype over shapes."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kinds = sorted({r[0] for r in results})
    threads = sorted({r[4] for r in results})
    dtypes = sorted({r[1] for r in results})
    shapes = sorted({(r[2], r[3]) for r in results})
    peer = {"layernorm": "F.layer_norm", "rmsnorm": "eager HF RMSNorm"}
    fig, axes = plt.subplots(len(kinds), len(threads), squeeze=False,
                             sharey=True,
                             figsize=(4 + 1.1 * len(shapes) * len(threads),
                                      3.2 * len(kinds)))
    width = 0.8 / len(dtypes)
    for (i, kind), (j, n) in ((a, b) for a in enumerate(kinds)
                              for b in enumerate(threads)):
        ax = axes[i][j]
        for k, dtype in enumerate(dtypes):
            ratios = {(r[2], r[3]): r[5] for r in results
                      if (r[0], r[1], r[4]) == (kind, dtype, n)}
            ax.bar([x + k * width for x in range(len(shapes))],
                   [ratios.get(shape, 0) for shape in shapes], width,
                   label=dtype, color=f"C{k}")
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_yscale("log")
        ax.set_xticks([x + 0.4 - width / 2 for x in range(len(shapes))])
        ax.set_xticklabels([f"{h}\n{r} rows" for h, r in shapes],
                           fontsize=7)
        ax.set_title(f"{kind} vs {peer[kind]}, {n} thread(s)", fontsize=9)
        if j == 0:
            ax.set_ylabel("torch time / simdnorm time")
    axes[0][0].legend(fontsize=7)
    fig.suptitle("simdnorm.torch speed-up over PyTorch (above 1: faster; "
                 "hidden size, rows)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
