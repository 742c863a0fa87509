// Chapter 6 on the GPU: the article's cost table (forward + backward of one layer) for the
// naive attention, the fused attention and the LSTM, timed with CUDA events (2 warm-ups, then
// the mean of 5) with the peak of the tracked device allocator (gpu::peak_bytes).
#pragma once
#include <string>
#include <vector>

struct CudaCostCell {
    bool skipped = true;  // would not fit in device memory (or the allocation failed)
    double ms = 0;        // mean time of one forward + backward
    double peak_mb = 0;   // peak tracked device memory during it, MB = 2^20 bytes
};
struct CudaCostRow {
    int n = 0;
    CudaCostCell naive, fused, lstm;
};
struct CudaCostTable {
    std::string device;        // e.g. "NVIDIA H200"
    double physical_mb = 0;    // the device's memory: the figure's dashed line
    std::vector<CudaCostRow> rows;
};

// The layer: the article's MultiHeadAttention (qkv and proj Linear without bias, d_model,
// n_heads) on x (batch, n, d_model) through the naive or the fused kernels; the LSTM is
// nn.LSTM(d_model, d_model) on (n, batch, d_model). Throws std::runtime_error on a CUDA error.
CudaCostTable run_cost_table_cuda(const std::vector<int>& seq_lens, int batch, int d_model,
                                  int n_heads, int warmups = 2, int repeats = 5);
