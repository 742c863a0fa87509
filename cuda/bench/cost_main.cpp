// cuda-cost: chapter 6's table on the GPU from the command line (gpu-check runs it; chapter 6
// itself calls run_cost_table_cuda for --device cuda).
#include "common/cli.h"
#include "cuda/bench/cost_bench.h"

#include <cstdio>
#include <exception>

int main(int argc, char** argv) {
    std::vector<int> seq_lens = {128, 256, 512, 1024, 2048, 4096};
    int batch = 8, d_model = 512, n_heads = 8, warmups = 2, repeats = 5;
    cli::Parser p("cuda-cost",
                  "chapter 6's cost table on the GPU (CUDA events, tracked peak memory)");
    p.option("--seq-lens", seq_lens, "sequence lengths n");
    p.option("--batch", batch, "batch size");
    p.option("--d-model", d_model, "model width");
    p.option("--heads", n_heads, "attention heads (d_k = d_model / heads <= 128)");
    p.option("--warmups", warmups, "untimed runs first");
    p.option("--repeats", repeats, "timed runs averaged");
    p.parse(argc, argv);
    if (batch < 1 || d_model < 1 || n_heads < 1 || d_model % n_heads != 0 ||
        d_model / n_heads > 128)
        p.fail("need batch >= 1 and d_model divisible by heads with d_model / heads <= 128");
    try {
        CudaCostTable t = run_cost_table_cuda(seq_lens, batch, d_model, n_heads, warmups, repeats);
        std::printf("device = cuda (%s, %.0f MB), batch = %d, d_model = %d\n", t.device.c_str(),
                    t.physical_mb, batch, d_model);
        std::printf("%6s | %26s | %26s | %26s\n", "n", "naive attention", "fused attention",
                    "LSTM");
        auto cell = [](const CudaCostCell& c) {
            static char buf[4][64];
            static int k = 0;
            char* s = buf[k++ % 4];
            if (c.skipped) std::snprintf(s, 64, "%26s", "skipped");
            else std::snprintf(s, 64, "%9.1f ms / %7.0f MB", c.ms, c.peak_mb);
            return s;
        };
        for (const auto& r : t.rows)
            std::printf("%6d | %s | %s | %s\n", r.n, cell(r.naive), cell(r.fused), cell(r.lstm));
    } catch (const std::exception& e) {
        std::fprintf(stderr, "cuda-cost: %s\n", e.what());
        return 1;
    }
}
