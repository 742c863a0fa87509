"""gpu-check's PyTorch peer: the same layer as chapter 6 on the GPU, side by side.

The article's naive MultiHeadAttention, the same module with F.scaled_dot_product_attention,
and nn.LSTM; forward + backward, 2 warm-ups then the mean of 5, torch.cuda.max_memory_allocated.
Usage: python3 cuda/torch_peer.py 128 256 ... (sequence lengths); batch 8, d_model 512, 8 heads.
       python3 cuda/torch_peer.py --cpu 16 32: the same on the CPU (wall-clock time, no memory
       column), to check the script where there is no GPU.
"""
import sys
import time
import torch
import torch.nn as nn
import torch.nn.functional as F

B, D, H = 8, 512, 8


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, n_heads, fused):
        super().__init__()
        self.h, self.d_head, self.fused = n_heads, d_model // n_heads, fused
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.proj = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.h, self.d_head).permute(2, 0, 3, 1, 4)
        if self.fused:
            o = F.scaled_dot_product_attention(q, k, v)  # torch >= 2.0
        else:
            attn = torch.softmax(q @ k.transpose(-2, -1) / self.d_head ** 0.5, dim=-1)
            o = attn @ v
        return self.proj(o.transpose(1, 2).reshape(b, n, d))


def measure(make, n, dev):
    if dev == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    oom = getattr(torch.cuda, "OutOfMemoryError", RuntimeError)  # torch < 1.13: RuntimeError
    try:
        model, x = make(n)
        def step():
            out = model(x)
            out = out[0] if isinstance(out, tuple) else out
            out.sum().backward()
        for _ in range(2):
            step()
        if dev != "cuda":
            t0 = time.perf_counter()
            for _ in range(5):
                step()
            return f"{(time.perf_counter() - t0) / 5 * 1e3:9.1f} ms /       - MB"
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(5):
            step()
        stop.record()
        torch.cuda.synchronize()
        return f"{start.elapsed_time(stop) / 5:9.1f} ms / {torch.cuda.max_memory_allocated() / 2**20:7.0f} MB"
    except oom as e:
        if "out of memory" not in str(e).lower():
            raise
        return f"{'out of memory':>26}"


def main():
    args = sys.argv[1:]
    dev = "cpu" if "--cpu" in args else "cuda"
    seq_lens = [int(a) for a in args if a != "--cpu"]
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    attn = lambda fused: lambda n: (MultiHeadAttention(D, H, fused).to(dev),
                                    torch.randn(B, n, D, device=dev, requires_grad=True))
    lstm = lambda n: (nn.LSTM(D, D).to(dev), torch.randn(n, B, D, device=dev, requires_grad=True))
    name = torch.cuda.get_device_name() if dev == "cuda" else "the CPU"
    print(f"torch {torch.__version__} on {name}, batch = {B}, d_model = {D}")
    print(f"{'n':>6} | {'naive (article module)':>26} | {'F.scaled_dot_product_attn':>26} | {'nn.LSTM':>26}")
    has_sdpa = hasattr(F, "scaled_dot_product_attention")
    for n in seq_lens:
        fused = measure(attn(True), n, dev) if has_sdpa else f"{'n/a (torch < 2.0)':>26}"
        print(f"{n:6d} | {measure(attn(False), n, dev)} | {fused} | {measure(lstm, n, dev)}", flush=True)


if __name__ == "__main__":
    main()
