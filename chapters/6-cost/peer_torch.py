#!/usr/bin/env python3
"""The chapter-6 benchmark in PyTorch on the CPU: the same cells, for a side-by-side ratio.

Runs the article's naive attention module (MultiHeadAttention with its
scaled_dot_product_attention), the same module with F.scaled_dot_product_attention (torch >= 2.0;
torch 1.13 has it as F._scaled_dot_product_attention, a math fallback on the CPU), and nn.LSTM
of the same width; forward + backward (x.grad included, like the C++ layers); 2 warm-ups then
the mean of 5. Times only: torch has no peak-memory counter for the CPU allocator.

Optional: neither `make` nor the tests need it.
    /usr/bin/python3 chapters/6-cost/peer_torch.py --seq-lens 128,256,512 --threads 2
"""
import argparse
import sys
import time

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:
    sys.exit("peer_torch.py: torch is not importable by this interpreter; "
             "run it with /usr/bin/python3 (Debian's python3-torch)")


def scaled_dot_product_attention(Q, K, V, mask=None):  # the article's function
    d_k = Q.shape[-1]
    scores = Q @ K.transpose(-2, -1) / (d_k ** 0.5)
    if mask is not None:
        scores = scores.masked_fill(mask, float('-inf'))
    attn = torch.softmax(scores, dim=-1)
    return attn @ V, attn


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


def time_cell(model, x, dy, warmup, repeat):
    def step():
        x.grad = None
        model.zero_grad(set_to_none=True)
        model(x).backward(dy)
    for _ in range(warmup):
        step()
    t0 = time.perf_counter()
    for _ in range(repeat):
        step()
    return (time.perf_counter() - t0) / repeat * 1e3


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seq-lens", default="128,256,512")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--d-model", type=int, default=512)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--threads", type=int, default=2, help="torch.set_num_threads")
    p.add_argument("--only", default="naive,fused,lstm", help="which columns to run")
    a = p.parse_args()
    try:
        seq_lens = [int(s) for s in a.seq_lens.split(",")]
    except ValueError:
        p.error("--seq-lens must be a comma-separated list of integers, e.g. 128,256,512")
    if a.d_model % a.heads:
        p.error("--d-model must be a multiple of --heads")
    only = set(a.only.split(","))
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)

    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s); "
          f"device = cpu, batch = {a.batch}, d_model = {a.d_model}")
    print(f"{'n':>6} | {'naive ms':>12} | {'fused ms':>12} | {'LSTM ms':>12}", flush=True)
    for n in seq_lens:
        cells = []
        for name in ("naive", "fused", "lstm"):
            if name not in only:
                cells.append(f"{'-':>12}")
                continue
            if name == "lstm":
                model = Lstm(a.d_model)
                x = torch.randn(n, a.batch, a.d_model, requires_grad=True)
            else:
                model = MultiHeadAttention(a.d_model, a.heads, fused=(name == "fused"))
                x = torch.randn(a.batch, n, a.d_model, requires_grad=True)
            dy = torch.randn_like(x)
            print(f"  n = {n}, {name} ...", file=sys.stderr, flush=True)
            cells.append(f"{time_cell(model, x, dy, a.warmup, a.repeat):12.1f}")
        print(f"{n:6d} | " + " | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
