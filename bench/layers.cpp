// bench-layers: forward+backward of one attention layer (naive and fused) and of an LSTM of the
// same width at a few sequence lengths, with the measured peak memory beside the predicted one,
// and the naive layer's time beside what its FLOPs need at the sgemm rate measured in the same
// run. Chapter 6 prints the article's table; this shows where the time goes.
#include "bench/median.h"
#include "chapters/6-cost/layers.h"
#include "common/cli.h"
#include "common/gemm.h"
#include "common/memory.h"
#include "common/random.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <unistd.h>
#include <vector>

namespace {

double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// Fills buf from U(-bound, bound) with the project's torch-like generator.
void fill_uniform(mem::Buffer<float>& buf, float bound, torch_rng::Generator& rng) {
    rng.uniform_(buf.data(), buf.size(), -bound, bound);
}

struct Cell {
    double ms, peak_mb, predicted_mb;
};

// 1 warm-up, then the mean of `repeat` timed runs; peak memory of the last run.
Cell measure(const std::function<void()>& step, int repeat, double predicted) {
    step();
    double total = 0;
    for (int r = 0; r < repeat; r++) {
        mem::reset_peak();
        const double t0 = now_s();
        step();
        total += now_s() - t0;
    }
    return {total / repeat * 1e3, mem::peak_bytes() / 1e6, predicted / 1e6};
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<int> seq_lens = {256, 512, 1024};
    int batch = 8, d_model = 512, heads = 8, repeat = 3, runs = 3;
    cli::Parser cli("bench-layers", "attention (naive, fused) and LSTM forward+backward");
    cli.option("--seq-lens", seq_lens, "sequence lengths n");
    // Bounds that keep the int products below (batch * 512, 3 * d_model) inside an int.
    cli.option("--batch", batch, "batch size B").range(1, 65536);
    cli.option("--d-model", d_model, "model width (LSTM input and hidden width too)")
        .range(1, 65536);
    cli.option("--heads", heads, "attention heads");
    cli.option("--repeat", repeat, "timed runs per cell after one warm-up (the mean is shown)")
        .range(1, 1'000'000);
    cli.option("--runs", runs,
               "times the whole table is measured; each cell shows the median of the runs")
        .range(1, 1000);
    cli.parse(argc, argv);
    if (batch < 1 || d_model < 1 || heads < 1 || repeat < 1) cli.fail("sizes must be positive");
    if (d_model % heads != 0) cli.fail("--d-model must be a multiple of --heads");
    for (int n : seq_lens)
        if (n < 1) cli.fail("--seq-lens must be positive");

    torch_rng::Generator rng(0);
    // The sgemm rate on the layer's biggest product shape at n = 512, measured again right
    // before every cell: the machine is shared and its speed drifts over a run.
    const int rate_M = batch * 512, rate_N = 3 * d_model, rate_K = d_model;
    const auto gemm_gflops_now = [&] {  // its buffers are gone before the cell's peak is taken
        mem::Buffer<float> A((size_t)rate_M * rate_K), W((size_t)rate_N * rate_K),
            C((size_t)rate_M * rate_N);
        fill_uniform(A, 1, rng), fill_uniform(W, 1, rng);
        Cell c = measure([&] { sgemm(false, true, rate_M, rate_N, rate_K, 1, A.data(), rate_K,
                                     W.data(), rate_K, 0, C.data(), rate_N); },
                         5, 0);
        return 2.0 * rate_M * rate_N * rate_K / (c.ms * 1e-3) * 1e-9;
    };
    std::printf("batch = %d, d_model = %d, heads = %d; forward+backward; each cell the median of "
                "%d runs, a run the mean of %d after 1 warm-up\n",
                batch, d_model, heads, runs, repeat);
    std::printf("FLOP ms: the cell's FLOPs at the sgemm rate measured just before it "
                "(M=%d N=%d K=%d); ratio: the median of the runs' ms / FLOP ms\n",
                rate_M, rate_N, rate_K);

    // The table is measured `runs` times over (rounds over every cell, so a drift of the machine
    // touches every cell alike); each cell shows the median of its rounds.
    struct Round {
        Cell cell;
        double gemm_gflops, flop_ms;
    };
    const Method methods[] = {Method::naive, Method::fused, Method::lstm};
    std::vector<std::vector<Round>> rounds(seq_lens.size() * 3);  // (n, method) -> one per run
    const bool tty = isatty(STDERR_FILENO);
    for (int run = 0; run < runs; run++) {
        for (size_t i = 0; i < seq_lens.size(); i++) {
            const int n = seq_lens[i];
            if (tty)
                std::fprintf(stderr, "\rbench-layers: run %d of %d, n = %d ", run + 1, runs, n);
            const size_t u = (size_t)batch * n * d_model;
            mem::Buffer<float> x(u), dy(u);
            fill_uniform(x, 1, rng), fill_uniform(dy, 1, rng);
            for (int k = 0; k < 3; k++) {
                const Method m = methods[k];
                const double gemm_gflops = gemm_gflops_now();
                Cell c;
                double flops = 0;
                if (m != Method::lstm) {
                    const bool fused = m == Method::fused;
                    AttentionLayer layer(d_model, heads, fused);
                    const float bound = 1.0f / std::sqrt((float)d_model);  // nn.Linear's init
                    fill_uniform(layer.W_qkv, bound, rng), fill_uniform(layer.W_o, bound, rng);
                    c = measure(
                        [&] {
                            { mem::Buffer<float> y = layer.forward(x.data(), batch, n); }
                            mem::Buffer<float> dx = layer.backward(dy.data());
                        },
                        repeat,
                        AttentionLayer::predicted_peak_bytes(fused, batch, n, d_model, heads));
                    // projections 8 B n D^2 forward, twice that backward; attention 4 B n^2 D
                    // forward, twice that backward
                    flops = 24.0 * batch * n * d_model * d_model +
                            12.0 * batch * (double)n * n * d_model;
                } else {
                    LstmLayer layer(d_model);
                    const float bound = 1.0f / std::sqrt((float)d_model);
                    fill_uniform(layer.W_ih, bound, rng), fill_uniform(layer.W_hh, bound, rng),
                        fill_uniform(layer.b, bound, rng);
                    c = measure([&] { layer.forward(x.data(), n, batch);
                                      mem::Buffer<float> dx = layer.backward(dy.data()); },
                                repeat, LstmLayer::predicted_peak_bytes(batch, n, d_model));
                    // input and recurrent products and their backward: 3 x 2 GEMMs of 8 n B d^2
                    flops = 3.0 * 2 * 8.0 * n * batch * (double)d_model * d_model;
                }
                rounds[i * 3 + k].push_back({c, gemm_gflops, flops / (gemm_gflops * 1e9) * 1e3});
            }
        }
    }
    if (tty) std::fprintf(stderr, "\r\033[K");

    std::printf("%6s | %-8s | %9s | %9s %9s | %7s %9s %6s\n", "n", "layer", "ms", "peak MB",
                "pred. MB", "GFLOP/s", "FLOP ms", "ratio");
    for (size_t i = 0; i < seq_lens.size(); i++)
        for (int k = 0; k < 3; k++) {
            const Method m = methods[k];
            const char* name = m == Method::naive ? "naive" : m == Method::fused ? "fused" : "LSTM";
            std::vector<double> ms, peak, gflops, flop_ms, ratio;
            for (const Round& r : rounds[i * 3 + k]) {
                ms.push_back(r.cell.ms), peak.push_back(r.cell.peak_mb);
                gflops.push_back(r.gemm_gflops), flop_ms.push_back(r.flop_ms);
                ratio.push_back(r.cell.ms / r.flop_ms);
            }
            std::printf("%6d | %-8s | %9.1f | %9.1f %9.1f | %7.1f %9.1f %5.2fx\n", seq_lens[i],
                        name, bench::median(ms), bench::median(peak),
                        rounds[i * 3 + k][0].cell.predicted_mb, bench::median(gflops),
                        bench::median(flop_ms), bench::median(ratio));
        }
    return 0;
}
