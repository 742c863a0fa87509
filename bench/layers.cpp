// bench-layers: forward+backward of one attention layer (naive and fused) and of an LSTM of the
// same width at a few sequence lengths, with the measured peak memory beside the predicted one,
// and the naive layer's time beside what its FLOPs need at the sgemm rate measured in the same
// run. Chapter 6 prints the article's table; this shows where the time goes.
#include "bench/median.h"
#include "bench/peak.h"
#include "chapters/6-cost/layers.h"
#include "common/kernels/gemm.h"
#include "common/memory.h"
#include "common/program/cli.h"
#include "common/program/terminal.h"
#include "common/random.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
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

// The yardstick: sgemm on the layer's biggest product shape at n = 512, (B*512, d_model) x
// (d_model, 3 d_model), on buffers held for the whole run and taken from the same allocator as
// the layers' own (so on the same kind of pages).
struct Yardstick {
    int M, N, K;
    mem::Buffer<float> A, W, C;
    Yardstick(int M_, int N_, int K_, torch_rng::Generator& rng)
        : M(M_), N(N_), K(K_), A((size_t)M_ * K_), W((size_t)N_ * K_), C((size_t)M_ * N_) {
        fill_uniform(A, 1, rng), fill_uniform(W, 1, rng);
        call_s();  // the first call's page faults
    }
    size_t bytes() const { return (A.size() + W.size() + C.size()) * sizeof(float); }
    double flops() const { return 2.0 * M * N * K; }
    double call_s() {  // one call, in seconds
        const double t0 = now_s();
        sgemm(false, true, M, N, K, 1, A.data(), K, W.data(), K, 0, C.data(), N);
        return now_s() - t0;
    }
    // After a step has had the caches, one call untimed (the first is slower), then the
    // mean of `calls` calls.
    double mean_call_s(int calls) {
        call_s();
        double total = 0;
        for (int c = 0; c < calls; c++) total += call_s();
        return total / calls;
    }
};

// Timed yardstick calls on each side of a timed step. The machine is shared and its speed drifts
// within seconds: a rate taken on both sides of every step follows the drift, where one taken
// once before a cell would be set against steps seconds later.
constexpr int RATE_CALLS = 3;

struct Cell {
    double ms;       // the mean of the timed steps
    double peak_mb;  // the last step's peak, less the yardstick's buffers
    double predicted_mb;
    double gflops;   // the median over the steps of the rate around each
    double flop_ms;  // the cell's FLOPs at that rate
    double ratio;    // the median over the steps of (step time) / (FLOP time at its rate)
};

// 1 warm-up, then `repeat` timed steps, each between two batches of RATE_CALLS yardstick calls
// (the batch after one step is the batch before the next) and set against the rate of the
// mean call time of its two batches.
Cell measure(const std::function<void()>& step, int repeat, double predicted, double flops,
             Yardstick& yardstick) {
    step();
    double before = yardstick.mean_call_s(RATE_CALLS);
    double total = 0, peak = 0;
    std::vector<double> gflops, ratio;
    for (int r = 0; r < repeat; r++) {
        mem::reset_peak();
        const double t0 = now_s();
        step();
        const double t = now_s() - t0;
        peak = (double)(mem::peak_bytes() - yardstick.bytes());
        const double after = yardstick.mean_call_s(RATE_CALLS);
        const double rate = yardstick.flops() / ((before + after) / 2);  // FLOP/s
        total += t;
        gflops.push_back(rate * 1e-9);
        ratio.push_back(t / (flops / rate));
        before = after;
    }
    const double median_gflops = bench::median(gflops);
    return {total / repeat * 1e3, peak / 1e6, predicted / 1e6, median_gflops,
            flops / (median_gflops * 1e9) * 1e3, bench::median(ratio)};
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
    if (heads < 1) cli.fail("--heads must be at least 1");
    if (d_model % heads != 0) cli.fail("--d-model must be a multiple of --heads");
    for (int n : seq_lens) {
        if (n < 1 || n > (1 << 20)) cli.fail("--seq-lens entries must be between 1 and 1048576");
        // The naive layer holds the most (its n x n matrices), the LSTM the most per step: the
        // memory models chapter 6 skips cells by, checked before any cell runs.
        const double peak =
            std::max({AttentionLayer::predicted_peak_bytes(false, batch, n, d_model, heads),
                      AttentionLayer::predicted_peak_bytes(true, batch, n, d_model, heads),
                      LstmLayer::predicted_peak_bytes(batch, n, d_model)});
        cli.require_memory(peak, "--seq-lens " + std::to_string(n) + " --batch " +
                                     std::to_string(batch) + " --d-model " +
                                     std::to_string(d_model));
    }

    torch_rng::Generator rng(0);
    Yardstick yardstick(batch * 512, 3 * d_model, d_model, rng);
    std::printf("batch = %d, d_model = %d, heads = %d; forward+backward; each cell the median of "
                "%d runs, a run the mean of %d after 1 warm-up\n",
                batch, d_model, heads, runs, repeat);
    std::printf("GFLOP/s: sgemm M=%d N=%d K=%d, %d calls (after 1 untimed) before and after "
                "every timed step; FLOP ms: the cell's FLOPs at that rate; ratio: a step's ms "
                "over its FLOP ms at the rate around it, the median of a run's steps, then of the "
                "runs\n",
                yardstick.M, yardstick.N, yardstick.K, RATE_CALLS);

    // The table is measured `runs` times over (rounds over every cell, so a drift of the machine
    // touches every cell alike); each cell shows the median of its rounds.
    const Method methods[] = {Method::naive, Method::fused, Method::lstm};
    std::vector<std::vector<Cell>> rounds(seq_lens.size() * 3);  // (n, method) -> one per run
    term::ProgressLine progress;  // on a terminal only
    std::vector<double> peaks;  // the multiply-add peak at the start of each run (bench/peak.h)
    for (int run = 0; run < runs; run++) {
        peaks.push_back(bench::peak_gflops(omp_get_max_threads()));
        for (size_t i = 0; i < seq_lens.size(); i++) {
            const int n = seq_lens[i];
            progress.show("bench-layers: run " + std::to_string(run + 1) + " of " +
                          std::to_string(runs) + ", n = " + std::to_string(n));
            const size_t u = (size_t)batch * n * d_model;
            mem::Buffer<float> x(u), dy(u);
            fill_uniform(x, 1, rng), fill_uniform(dy, 1, rng);
            for (int k = 0; k < 3; k++) {
                const Method m = methods[k];
                Cell c;
                if (m != Method::lstm) {
                    const bool fused = m == Method::fused;
                    AttentionLayer layer(d_model, heads, fused);
                    const float bound = 1.0f / std::sqrt((float)d_model);  // nn.Linear's init
                    fill_uniform(layer.W_qkv, bound, rng), fill_uniform(layer.W_o, bound, rng);
                    // projections 8 B n D^2 forward, twice that backward; attention 4 B n^2 D
                    // forward, twice that backward
                    const double flops = 24.0 * batch * n * d_model * d_model +
                                         12.0 * batch * (double)n * n * d_model;
                    c = measure(
                        [&] {
                            { mem::Buffer<float> y = layer.forward(x.data(), batch, n); }
                            mem::Buffer<float> dx = layer.backward(dy.data());
                        },
                        repeat,
                        AttentionLayer::predicted_peak_bytes(fused, batch, n, d_model, heads),
                        flops, yardstick);
                } else {
                    LstmLayer layer(d_model);
                    const float bound = 1.0f / std::sqrt((float)d_model);
                    fill_uniform(layer.W_ih, bound, rng), fill_uniform(layer.W_hh, bound, rng),
                        fill_uniform(layer.b, bound, rng);
                    // input and recurrent products and their backward: 3 x 2 GEMMs of 8 n B d^2
                    const double flops = 3.0 * 2 * 8.0 * n * batch * (double)d_model * d_model;
                    c = measure([&] { layer.forward(x.data(), n, batch);
                                      mem::Buffer<float> dx = layer.backward(dy.data()); },
                                repeat, LstmLayer::predicted_peak_bytes(batch, n, d_model), flops,
                                yardstick);
                }
                rounds[i * 3 + k].push_back(c);
            }
        }
    }
    progress.clear();

    // The machine's speed drifts from one run to the next, and the median of a few runs can land
    // on either side of a target that the runs straddle: after the table, a line with each
    // cell's lowest and highest ratio (with two runs or more).
    std::string ranges = "ratio, lowest and highest of the " + std::to_string(runs) + " runs:";
    std::printf("%6s | %-8s | %9s | %9s %9s | %7s %9s %6s\n", "n", "layer", "ms", "peak MB",
                "pred. MB", "GFLOP/s", "FLOP ms", "ratio");
    for (size_t i = 0; i < seq_lens.size(); i++)
        for (int k = 0; k < 3; k++) {
            const Method m = methods[k];
            const char* name = m == Method::naive ? "naive" : m == Method::fused ? "fused" : "LSTM";
            std::vector<double> ms, peak, gflops, flop_ms, ratio;
            for (const Cell& c : rounds[i * 3 + k]) {
                ms.push_back(c.ms), peak.push_back(c.peak_mb), gflops.push_back(c.gflops);
                flop_ms.push_back(c.flop_ms), ratio.push_back(c.ratio);
            }
            std::printf("%6d | %-8s | %9.1f | %9.1f %9.1f | %7.1f %9.1f %5.2fx\n", seq_lens[i],
                        name, bench::median(ms), bench::median(peak),
                        rounds[i * 3 + k][0].predicted_mb, bench::median(gflops),
                        bench::median(flop_ms), bench::median(ratio));
            if (k == 0) ranges += (i ? "; n = " : " n = ") + std::to_string(seq_lens[i]);
            char range[64];
            std::snprintf(range, sizeof range, "%s %s %.2f-%.2f", k ? "," : "", name,
                          *std::min_element(ratio.begin(), ratio.end()),
                          *std::max_element(ratio.begin(), ratio.end()));
            ranges += range;
        }
    if (runs > 1) std::printf("%s\n", ranges.c_str());
    // The FLOPs counted are the same for both attention layers: what the article's module
    // computes. The fused backward also recomputes P = softmax(Q K^T / sqrt(d_k)) tile by tile
    // (FlashAttention's trade of FLOPs for memory): 2 B n^2 D more, 14 B n^2 D of attention
    // where the naive layer does 12 (FlashAttention's own benchmark counts these 14: its
    // backward 2.5 times its forward). Its ratio against the FLOPs it does tells how much of its
    // distance from the FLOP time is that trade.
    std::printf(
        "fused, against the FLOPs it does (P recomputed: 14 B n^2 D for the attention, "
        "not 12):");
    for (size_t i = 0; i < seq_lens.size(); i++) {
        const double n = seq_lens[i], D = d_model;
        const double counted = 24.0 * n * D * D + 12.0 * n * n * D;
        const double done = counted + 2.0 * n * n * D;
        std::vector<double> ratio;
        for (const Cell& c : rounds[i * 3 + 1])
            ratio.push_back(c.ratio * counted / done);
        std::printf("%s %.2fx at n = %d", i ? "," : "", bench::median(ratio), seq_lens[i]);
    }
    std::printf("\n");
    double lo = 1e30, hi = 0;  // the yardstick's cells, as a share of the peak
    for (const std::vector<Cell>& cells : rounds)
        for (const Cell& c : cells)
            lo = std::min(lo, c.gflops), hi = std::max(hi, c.gflops);
    const double peak = bench::median(peaks);
    std::printf(
        "multiply-add peak, %d thread(s): %.1f GFLOP/s (bench/peak.h, the median of the "
        "runs); the GFLOP/s column is %.0f%% to %.0f%% of it\n",
        omp_get_max_threads(), peak, 100 * lo / peak, 100 * hi / peak);
    return 0;
}
