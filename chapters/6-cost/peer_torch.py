#!/usr/bin/env python3
"""Chapter 6's benchmark in PyTorch, on the CPU or a GPU: the peer its table is read beside.

The same three cells as the chapter: the article's MultiHeadAttention with its
scaled_dot_product_attention (naive), the same module with F.scaled_dot_product_attention (fused;
torch >= 2.0, and on torch 1.13's CPU its math fallback F._scaled_dot_product_attention), and
nn.LSTM of the same width; forward + backward with x.grad, like the C++ layers; --warmup untimed
runs, then the mean of --repeat.
  --device cpu   wall-clock time, no memory column (torch counts no peak for the CPU allocator);
                 `make bench` runs it where /usr/bin/python3 has torch (Debian's python3-torch)
  --device cuda  CUDA-event time and torch.cuda.max_memory_allocated, TF32 off; a cell that does
                 not fit says so; `make gpu-check` runs it beside build/bin/6-cost-cuda

Neither `make` nor the tests need it:
    /usr/bin/python3 chapters/6-cost/peer_torch.py --device cpu --seq-lens 128,256,512
    python3 chapters/6-cost/peer_torch.py --device cuda --seq-lens 128,256,512,1024,2048,4096
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import torch_blas  # noqa: E402  (bench/torch_blas.py: the BLAS under torch, named)

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:
    sys.exit("peer_torch.py: torch is not importable by this interpreter; "
             "run it with /usr/bin/python3 (Debian's python3-torch) or a python with torch")


def scaled_dot_product_attention(Q, K, V, mask=None):  # the article's function
    d_k = Q.shape[-1]
    scores = Q @ K.transpose(-2, -1) / (d_k ** 0.5)
    if mask is not None:
        scores = scores.masked_fill(mask, float('-inf'))
    attn = torch.softmax(scores, dim=-1)
    return attn @ V, attn


def fused_attention_available(device):
    if hasattr(F, "scaled_dot_product_attention"):
        return True
    return device == "cpu" and hasattr(F, "_scaled_dot_product_attention")


def fused_attention(q, k, v):
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v)
    return F._scaled_dot_product_attention(q, k, v, need_attn_weights=False)[0]


class MultiHeadAttention(nn.Module):  # the article's module; `fused` swaps the attention call
    def __init__(self, d_model, n_heads, fused=False):
        super().__init__()
        self.h = n_heads
        self.d_head = d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.proj = nn.Linear(d_model, d_model, bias=False)
        self.fused = fused

    def forward(self, x, mask=None):
        B, N, D = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.h, self.d_head)
        qkv = qkv.permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        if self.fused:
            o = fused_attention(q, k, v)
        else:
            o, a = scaled_dot_product_attention(q, k, v, mask)
        o = o.transpose(1, 2).reshape(B, N, D)
        return self.proj(o)


class Lstm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.lstm = nn.LSTM(d, d)  # time-major (n, B, d), like the C++ LstmLayer

    def forward(self, x):
        return self.lstm(x)[0]


def out_of_memory(e):
    return isinstance(e, getattr(torch.cuda, "OutOfMemoryError", ())) or (
        isinstance(e, RuntimeError) and "out of memory" in str(e).lower())


def measure(name, n, a):
    """One cell: (milliseconds, peak MB or None), or None when it does not fit (cuda)."""
    cuda = a.device == "cuda"
    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    try:
        if name == "lstm":
            model = Lstm(a.d_model)
            shape = (n, a.batch, a.d_model)
        else:
            model = MultiHeadAttention(a.d_model, a.heads, fused=(name == "fused"))
            shape = (a.batch, n, a.d_model)
        model = model.to(a.device)
        x = torch.randn(*shape, device=a.device, requires_grad=True)
        dy = torch.randn_like(x)

        def step():
            x.grad = None
            model.zero_grad(set_to_none=True)
            model(x).backward(dy)

        for _ in range(a.warmup):
            step()
        if not cuda:
            t0 = time.perf_counter()
            for _ in range(a.repeat):
                step()
            return (time.perf_counter() - t0) / a.repeat * 1e3, None
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        for _ in range(a.repeat):
            step()
        stop.record()
        torch.cuda.synchronize()
        return start.elapsed_time(stop) / a.repeat, torch.cuda.max_memory_allocated() / 2**20
    except RuntimeError as e:
        if not (cuda and out_of_memory(e)):
            raise
        return None


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--seq-lens", default="128,256,512",
                   help="comma-separated sequence lengths n")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--d-model", type=int, default=512)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--warmup", type=int, default=2, help="untimed runs per cell")
    p.add_argument("--repeat", type=int, default=5, help="timed runs per cell (the mean)")
    p.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)),
                   help="torch.set_num_threads (default: the CPUs this process may use, "
                        "as OpenMP's default in the C++ programs)")
    p.add_argument("--only", default="naive,fused,lstm", help="which columns to run")
    p.add_argument("--openblas-best", default="",
                   help="this CPU's best OpenBLAS cores, comma-separated (bench-gemm "
                        "--openblas-best); on the CPU, where torch's OpenBLAS runs another core, "
                        "the table is measured again with OPENBLAS_CORETYPE set to the first")
    p.add_argument("--cells-only", action="store_true", help=argparse.SUPPRESS)  # the rerun
    a = p.parse_args()
    try:
        seq_lens = [int(s) for s in a.seq_lens.split(",")]
    except ValueError:
        p.error("--seq-lens must be a comma-separated list of integers, e.g. 128,256,512")
    if any(n < 1 for n in seq_lens):
        p.error("--seq-lens entries must be at least 1")
    if a.batch < 1 or a.d_model < 1 or a.heads < 1 or a.d_model % a.heads:
        p.error("--batch, --d-model and --heads must be positive, --d-model a multiple of --heads")
    if a.warmup < 0 or a.repeat < 1 or a.threads < 1:
        p.error("--warmup must be 0 or more, --repeat and --threads at least 1")
    only = set(a.only.split(","))
    if not only <= {"naive", "fused", "lstm"}:
        p.error("--only takes naive, fused and lstm, comma-separated")
    if a.device == "cuda" and not torch.cuda.is_available():
        sys.exit(f"peer_torch.py: --device cuda: torch {torch.__version__} sees no CUDA device "
                 "(torch.cuda.is_available() is False); use --device cpu")
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    if a.device == "cuda":  # fp32 products, as the C++ kernels compute them
        # torch 2.9+ (fp32_precision; allow_tf32 is deprecated there). Asked of torch.backends:
        # torch 1.13's matmul object raises AssertionError, not AttributeError, for hasattr.
        if hasattr(torch.backends, "fp32_precision"):
            torch.backends.cuda.matmul.fp32_precision = "ieee"
            torch.backends.cudnn.conv.fp32_precision = "ieee"
            torch.backends.cudnn.rnn.fp32_precision = "ieee"  # nn.LSTM runs on cuDNN
        else:
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
        where = torch.cuda.get_device_name()
    else:
        where = f"the CPU, {torch.get_num_threads()} thread(s)"

    rerun = None
    if a.device == "cpu":
        blas_line = torch_blas.describe(torch)
        best = [c for c in a.openblas_best.replace(" ", ",").split(",") if c]
        rerun = None if a.cells_only else torch_blas.rerun_core(best)
    names = ("naive", "fused", "lstm")
    cells = {}  # (name, n) -> (ms, MB or None), None when it does not fit, a str when skipped
    tty = sys.stderr.isatty() and not a.cells_only
    for n in seq_lens:
        for name in names:
            if name not in only:
                cells[name, n] = "-"
            elif name == "fused" and not fused_attention_available(a.device):
                cells[name, n] = "n/a (torch < 2.0)"
            else:
                if tty:  # progress: one line, rewritten; nothing when stderr is a file
                    print(f"\r\033[K  n = {n}, {name} ...", end="", file=sys.stderr, flush=True)
                cells[name, n] = measure(name, n, a)
    if tty:
        print("\r\033[K", end="", file=sys.stderr, flush=True)
    if a.cells_only:  # the rerun's child: machine-readable, for its parent
        print(f"core {torch_blas.openblas_core()[0]}")
        for (name, n), c in cells.items():
            if isinstance(c, tuple):
                print(f"cell {name} {n} {c[0]:.3f}")
        return

    rerun_ms = {}
    if rerun:
        argv = [a for a in sys.argv if not a.startswith("--openblas-best")]
        if "--openblas-best" in sys.argv:  # the value given as a separate word
            i = sys.argv.index("--openblas-best")
            argv = sys.argv[:i] + sys.argv[i + 2:]
        out = torch_blas.run_child(rerun, argv + ["--cells-only"])
        for line in (out or "").splitlines():
            f = line.split()
            if len(f) == 4 and f[0] == "cell":
                rerun_ms[f[1], int(f[2])] = float(f[3])
    print(f"torch {torch.__version__} on {where}; batch = {a.batch}, d_model = {a.d_model}, "
          f"heads = {a.heads}; forward+backward, mean of {a.repeat} after {a.warmup} warm-up(s)")
    if a.device == "cpu":
        print(blas_line)
    loaded = torch_blas.openblas_core()[0] if a.device == "cpu" else None
    if rerun and rerun_ms:
        print(f"  {loaded} is below this CPU: measured again in a child process with "
              f"OPENBLAS_CORETYPE={rerun}; each cell shows {loaded} / {rerun}, read the faster")
    elif rerun:
        print(f"  {loaded} is below this CPU, and the rerun with OPENBLAS_CORETYPE={rerun} failed")
    width = 26  # the longest column title
    print(f"{'n':>6} | {'naive (article module)':>{width}} | {'F.scaled_dot_product_attn':>{width}}"
          f" | {'nn.LSTM':>{width}}", flush=True)
    for n in seq_lens:
        row = []
        for name in names:
            c = cells[name, n]
            if isinstance(c, str):
                row.append(f"{c:>{width}}")
            elif c is None:
                row.append(f"{'out of memory':>{width}}")
            elif (name, n) in rerun_ms:
                row.append(f"{c[0]:8.1f} / {rerun_ms[name, n]:.1f} ms".rjust(width))
            elif c[1] is None:
                row.append(f"{c[0]:9.1f} ms".rjust(width))
            else:
                row.append(f"{c[0]:9.1f} ms / {c[1]:7.0f} MB".rjust(width))
        print(f"{n:6d} | " + " | ".join(row), flush=True)

if __name__ == "__main__":
    main()
