#!/usr/bin/env python3
"""Chapter 7's training step in PyTorch: the peer bench-translate times ours beside.

The same model as chapters/7-translate/train.h builds: 2 encoder + 2 decoder blocks, Pre-LN,
d_model 64, 4 heads, the article's MultiHeadAttention (one qkv Linear without bias, W_O without
bias), encoder-decoder attention (W_Q, then W_K and W_V stacked, W_O), the feed-forward net
d -> 4d -> d, token embeddings times sqrt(d_model) plus section 4's sinusoids, a final LayerNorm
on each side, the output head; cross-entropy over the real target tokens (ignore_index -100);
Adam(0.9, 0.98, eps 1e-9) with the paper's learning-rate schedule. It reads the batches
bench-translate drew (--batches FILE: "batch B S T" then src, tgt_in and tgt_out ids) and times
one step per batch, as the C++ does: loss, backward, the update, zero_grad. One thread.
Prints its BLAS, then "median_ms X" (the median of the steps after --warmup).

    build/bin/bench-translate          (make bench runs it; it runs this script)
"""
import argparse
import math
import os
import re
import stat
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import torch_blas  # noqa: E402  (bench/torch_blas.py: the BLAS under torch, named)

# One thread, as ours: torch.set_num_threads(1) (below) does not reach the system's OpenBLAS
# under Debian's torch (BLAS_INFO=generic), which starts a thread per core unless told before
# it loads.
os.environ["OPENBLAS_NUM_THREADS"] = "1"

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:
    sys.exit("peer_torch.py: torch is not importable by this interpreter; "
             "run it with /usr/bin/python3 (Debian's python3-torch) or a python with torch")

SRC_VOCAB, TGT_VOCAB, IGNORE = 14, 13, -100


def attention(Q, K, V, mask=None):  # the article's scaled_dot_product_attention
    scores = Q @ K.transpose(-2, -1) / (Q.shape[-1] ** 0.5)
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ V


class MultiHeadAttention(nn.Module):  # section 3's module
    def __init__(self, d, h):
        super().__init__()
        self.h, self.dh = h, d // h
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.proj = nn.Linear(d, d, bias=False)

    def forward(self, x, mask=None):
        B, N, D = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.h, self.dh).permute(2, 0, 3, 1, 4)
        o = attention(qkv[0], qkv[1], qkv[2], mask)
        return self.proj(o.transpose(1, 2).reshape(B, N, D))


class CrossAttention(nn.Module):  # chapters/5-blocks/decoder.h
    def __init__(self, d, h):
        super().__init__()
        self.h, self.dh = h, d // h
        self.q = nn.Linear(d, d, bias=False)
        self.kv = nn.Linear(d, 2 * d, bias=False)
        self.proj = nn.Linear(d, d, bias=False)

    def forward(self, x, memory, mask=None):
        B, T, D = x.shape
        S = memory.shape[1]
        q = self.q(x).reshape(B, T, self.h, self.dh).transpose(1, 2)
        kv = self.kv(memory).reshape(B, S, 2, self.h, self.dh).permute(2, 0, 3, 1, 4)
        o = attention(q, kv[0], kv[1], mask)
        return self.proj(o.transpose(1, 2).reshape(B, T, D))


def feed_forward(d):
    return nn.Sequential(nn.Linear(d, 4 * d), nn.ReLU(), nn.Linear(4 * d, d))


class Block(nn.Module):  # Pre-LN: x = x + Sublayer(LayerNorm(x))
    def __init__(self, d, h):
        super().__init__()
        self.attn, self.ff = MultiHeadAttention(d, h), feed_forward(d)
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)

    def forward(self, x, mask):
        x = x + self.attn(self.ln1(x), mask)
        return x + self.ff(self.ln2(x))


class DecoderBlock(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.self_attn, self.cross_attn = MultiHeadAttention(d, h), CrossAttention(d, h)
        self.ff = feed_forward(d)
        self.ln1, self.ln2, self.ln3 = nn.LayerNorm(d), nn.LayerNorm(d), nn.LayerNorm(d)

    def forward(self, x, memory, self_mask, memory_mask):
        x = x + self.self_attn(self.ln1(x), self_mask)
        x = x + self.cross_attn(self.ln2(x), memory, memory_mask)
        return x + self.ff(self.ln3(x))


def sinusoids(n, d):  # section 4's positional encoding
    pos = torch.arange(n, dtype=torch.float32)[:, None]
    i = torch.arange(0, d, 2, dtype=torch.float32)
    angle = pos / (10000 ** (i / d))
    pe = torch.zeros(n, d)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(angle), torch.cos(angle)
    return pe


class EncoderDecoder(nn.Module):
    def __init__(self, d=64, h=4, layers=2):
        super().__init__()
        self.d = d
        self.src_embed, self.tgt_embed = nn.Embedding(SRC_VOCAB, d), nn.Embedding(TGT_VOCAB, d)
        self.encoder = nn.ModuleList([Block(d, h) for _ in range(layers)])
        self.decoder = nn.ModuleList([DecoderBlock(d, h) for _ in range(layers)])
        self.enc_norm, self.dec_norm = nn.LayerNorm(d), nn.LayerNorm(d)
        self.head = nn.Linear(d, TGT_VOCAB)
        with torch.no_grad():  # N(0, 1/d_model), as chapter 7's make_model draws them
            for e in (self.src_embed, self.tgt_embed):
                e.weight /= math.sqrt(d)

    def embed(self, table, ids):
        return table(ids) * math.sqrt(self.d) + sinusoids(ids.shape[1], self.d)

    def forward(self, src, tgt_in, src_pad):
        x = self.embed(self.src_embed, src)
        for b in self.encoder:
            x = b(x, src_pad)
        memory = self.enc_norm(x)
        T = tgt_in.shape[1]
        causal = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        y = self.embed(self.tgt_embed, tgt_in)
        for b in self.decoder:
            y = b(y, memory, causal, src_pad)
        return self.head(self.dec_norm(y))


# The batches file's limits: bench-translate writes at most 200,000 batches (--steps and
# --warmup up to 100,000 each) of 64 numbers, about 3 KB each (0.7 GB); a file beyond
# MAX_BATCH_BYTES is refused before it is read, and a batch's B, S and T beyond MAX_BATCH_DIM.
MAX_BATCH_BYTES = 2 << 30
MAX_BATCH_DIM = 4096
IDS = re.compile(rb"-?[0-9]{1,9}( -?[0-9]{1,9})*")


def batches_error(path, what, line=None):
    """Ends the peer with one line naming the file (and the line) and what is wrong, exit 1."""
    where = f"{path!r}, line {line}" if line is not None else repr(path)
    sys.exit(f"peer_torch.py: error: {where}: {what}; --batches takes the file bench-translate "
             "writes")


def read_batches(path):
    """The batches of `path`, as bench-translate writes them: groups of four lines, "batch B S
    T", then the B*S source ids, the B*T target inputs and the B*T target outputs. Anything else
    ends the peer with one line naming the file and the line (batches_error)."""
    try:  # O_NONBLOCK: a FIFO opens without waiting for a writer, and is refused below
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as e:
        batches_error(path, f"cannot open it: {e.strerror}")
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            batches_error(path, "not a regular file")
        if st.st_size > MAX_BATCH_BYTES:
            batches_error(path, f"{st.st_size} bytes, more than the {MAX_BATCH_BYTES} a batches "
                                "file can hold")
        os.set_blocking(fd, True)
        lines, read = [], 0
        for raw in f:
            read += len(raw)
            if read > MAX_BATCH_BYTES:
                batches_error(path, f"more than {MAX_BATCH_BYTES} bytes (it grew while read)")
            lines.append(raw)
    if lines and not lines[-1].endswith(b"\n"):
        batches_error(path, "the last line has no line end (the file is cut short)", len(lines))

    def ids(k, count, lo, hi, extra=None):
        line = lines[k].rstrip(b"\n")
        if not IDS.fullmatch(line):
            batches_error(path, "expected token ids: integers separated by single spaces", k + 1)
        values = [int(v) for v in line.split(b" ")]
        if len(values) != count:
            batches_error(path, f"{len(values)} token ids, but its batch line says {count}", k + 1)
        for v in values:
            if not (lo <= v < hi or v == extra):
                allowed = f"{lo} to {hi - 1}" + (f" or {extra}" if extra is not None else "")
                batches_error(path, f"token id {v} is outside {allowed}", k + 1)
        return values

    batches = []
    for k in range(0, len(lines), 4):
        head = lines[k].rstrip(b"\n").split(b" ")
        if (len(head) != 4 or head[0] != b"batch"
                or not all(re.fullmatch(rb"[0-9]{1,9}", v) for v in head[1:])):
            batches_error(path, "expected a batch line, 'batch B S T' (three positive integers)",
                          k + 1)
        B, S, T = (int(v) for v in head[1:])
        if not all(1 <= v <= MAX_BATCH_DIM for v in (B, S, T)):
            batches_error(path, f"B, S and T must be 1 to {MAX_BATCH_DIM}", k + 1)
        if k + 3 >= len(lines):
            batches_error(path, "the batch's lines of ids end early (the file is cut short)",
                          len(lines))
        src = ids(k + 1, B * S, 0, SRC_VOCAB)
        tin = ids(k + 2, B * T, 0, TGT_VOCAB)
        tout = ids(k + 3, B * T, 0, TGT_VOCAB, IGNORE)
        batches.append((B, S, T, src, tin, tout))
    if not batches:
        batches_error(path, "it holds no batches")
    out = []
    for B, S, T, src, tin, tout in batches:
        src = torch.tensor(src).reshape(B, S)
        out.append((src, torch.tensor(tin).reshape(B, T), torch.tensor(tout).reshape(B * T),
                    (src == 0).reshape(B, 1, 1, S)))
    return out


def noam_lr(step, d_model, warmup=200):
    return d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)


def median_step_ms(batches, warmup, seed, d_model=64, heads=4, layers=2):
    torch.manual_seed(seed)
    model = EncoderDecoder(d_model, heads, layers)
    adam = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    ms = []
    for s, (src, tin, tout, pad) in enumerate(batches):
        t0 = time.perf_counter()
        for group in adam.param_groups:
            group["lr"] = noam_lr(s + 1, model.d)
        logits = model(src, tin, pad)
        loss = F.cross_entropy(logits.reshape(-1, TGT_VOCAB), tout, ignore_index=IGNORE)
        loss.backward()
        adam.step()
        adam.zero_grad(set_to_none=False)  # ours sets every gradient to 0, as this does
        if s >= warmup:
            ms.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ms)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batches", required=True, help="the file bench-translate wrote")
    p.add_argument("--warmup", type=int, default=20, help="untimed steps first")
    p.add_argument("--seed", type=int, default=0, help="torch.manual_seed before the model")
    p.add_argument("--d-model", type=int, default=64, help="d_model (chapter 7: 64)")
    p.add_argument("--heads", type=int, default=4, help="attention heads (chapter 7: 4)")
    p.add_argument("--layers", type=int, default=2, help="encoder = decoder blocks (chapter 7: 2)")
    p.add_argument("--openblas-best", default="",
                   help="this CPU's best OpenBLAS cores, comma-separated; where torch's OpenBLAS "
                        "runs another core, the steps are timed again with OPENBLAS_CORETYPE set "
                        "to the first, and the faster counts")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)  # the rerun
    a = p.parse_args()
    if a.d_model < 2 or a.d_model % 2 or a.heads < 1 or a.d_model % a.heads or a.layers < 1:
        p.error(f"--d-model {a.d_model}, --heads {a.heads}, --layers {a.layers}: d_model must be "
                "even and divisible by heads, heads and layers at least 1")
    torch.set_num_threads(1)
    batches = read_batches(a.batches)
    if a.warmup < 0 or a.warmup >= len(batches):
        p.error(f"--warmup must be 0 to {len(batches) - 1} (the file holds {len(batches)} batches)")
    ms = median_step_ms(batches, a.warmup, a.seed, a.d_model, a.heads, a.layers)
    if a.child:
        print(f"median_ms {ms:.4f}")
        return
    print(torch_blas.describe(torch))
    core = torch_blas.openblas_core()[0]
    best = [c for c in a.openblas_best.split(",") if c]
    rerun = torch_blas.rerun_core(best)
    if rerun:
        argv = [sys.argv[0], "--batches", a.batches, "--warmup", str(a.warmup),
                "--seed", str(a.seed), "--d-model", str(a.d_model), "--heads", str(a.heads),
                "--layers", str(a.layers), "--child"]
        out = torch_blas.run_child(rerun, argv) or ""
        other = [float(line.split()[1]) for line in out.splitlines()
                 if line.startswith("median_ms ")]
        if other:
            print(f"  PyTorch with OpenBLAS core {core}: {ms:.1f} ms, rerun with "
                  f"OPENBLAS_CORETYPE={rerun}: {other[0]:.1f} ms; the faster counts")
            ms = min(ms, other[0])
        else:
            print(f"  the rerun with OPENBLAS_CORETYPE={rerun} failed; {core} alone counts")
    print(f"median_ms {ms:.4f}")


if __name__ == "__main__":
    main()
