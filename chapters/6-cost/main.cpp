// Section 6 of the article: 무엇을 대가로 치렀는가 -- what attention paid for dropping recurrence.
//
// Part 1 prints the article's complexity table (RNN vs self-attention), measures the prose
// right after it (the gradient's path from the last position to the first: n steps through
// the LSTM, one through attention) and computes where the per-layer costs n*d^2 and n^2*d
// cross (n = d_model) and how much heavier attention is at n = 4096.
// Part 2 measures it: one attention layer (QKV projection, attention, output projection) with
// the naive algorithm (the n x n matrix in memory) and the fused one (FlashAttention-2 tiles,
// no n x n matrix), and an LSTM of the same width; forward + backward; 2 warm-ups then the mean
// of 5, as the article's script does; time and peak tracked memory per cell; a cell whose
// predicted peak does not fit in memory is skipped, not crashed into. Then where the measured
// memory curves cross, as the prose after the article's table says, and figure 3.
//
// Read in this order:
//   reference.h/cpp  the section's algorithms in plain loops, in the paper's names: naive
//                 attention (S, P, O and back through dS = P * (dP - D)), FlashAttention-2 (Br x
//                 Bc tiles, the online softmax's m and l, the saved logsumexp L, P recomputed in
//                 the backward), one LSTM step (gates i, f, g, o) and its n steps, the
//                 triple-loop GEMM
//   main.cpp      part 1 (the complexity table), part 2 (one benchmark cell, the table), figure 3
//   layers.h/cpp  the layers being timed: AttentionLayer, section 3's MultiHeadAttention with
//                 an explicit backward, naive or fused; LstmLayer, torch's nn.LSTM(d, d)
//   claims.h/cpp  the prose around the tables, computed: the path length |dy_n/dx_1| (after
//                 the complexity table) and where the memory crossover falls (after the
//                 measured one)
// The table times not reference.h but the tuned kernels in common/kernels/, the same algorithms
// with packing, vector instructions, exp_fast and threads, which the layers call:
//   common/kernels/attention.cpp  attention_naive_forward / _backward (S and P in memory) and
//                                 attention_fused_forward / _backward (FlashAttention-2 tiles)
//   common/kernels/lstm.cpp       lstm_forward / lstm_backward (the fused gates, the chain of
//                                 n steps)
//   common/kernels/gemm.cpp       sgemm, which every product above goes through
// tests/test_chapter6_reference.cpp holds every tuned kernel to reference.h on the same buffers,
// at ragged shapes, causal and not, within what float32 sums and exp_fast's rounding leave.
// With --device cuda (build/bin/6-cost-cuda) the same table is measured on the GPU by
// cuda/bench/cost_bench.cu. peer_torch.py times the same cells in PyTorch, on the CPU
// (`make bench`) or the GPU (`make gpu-check`).
#include "chapters/6-cost/claims.h"
#include "chapters/6-cost/layers.h"
#include "common/memory.h"
#include "common/plot/plot.h"
#include "common/program/cli.h"
#include "common/program/terminal.h"
#include "common/random.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <new>
#include <string>
#include <unistd.h>
#include <vector>

#ifdef WITH_CUDA
#include "cuda/bench/cost_bench.h"  // run_cost_table_cuda: the same table measured on the GPU
#endif

namespace {

constexpr Method METHODS[3] = {Method::naive, Method::fused, Method::lstm};
constexpr double MIB = 1024.0 * 1024.0;  // the article's MB: torch's bytes / 1024**2

// ---- part 1: the complexity table --------------------------------------------------------

void print_complexity_table() {
    const char* rows[4][3] = {{"항목", "RNN", "Self-attention"},
                              {"층당 연산량", "O(n·d²)", "O(n²·d)"},
                              {"순차적 연산 횟수", "O(n)", "O(1)"},
                              {"최장 의존 경로", "O(n)", "O(1)"}};
    for (auto& r : rows)
        std::printf("%s%s%s\n", term::pad_right(r[0], 18).c_str(),
                    term::pad_right(r[1], 10).c_str(), r[2]);
    std::printf("\n");
}

// "대가는 첫 번째 줄입니다": where the table's first row crosses, and how far apart it is at
// n = 4096.
void print_cost_crossover(int d_model) {
    // Per-layer cost: RNN n*d^2, self-attention n^2*d. They are equal where n = d.
    const double d = d_model;
    auto rnn = [&](double n) { return n * d * d; };
    auto attention = [&](double n) { return n * n * d; };
    long crossover = 1;
    while (attention((double)crossover) < rnn((double)crossover)) crossover++;
    const double n_long = 4096;
    std::printf("d_model = %d: 두 항(n·d², n²·d)이 같아지는 지점 n = %ld\n", d_model, crossover);
    std::printf("n = %.0f: Self-attention / RNN = %.0f²·%d / (%.0f·%d²) = %g배\n\n", n_long,
                n_long, d_model, n_long, d_model, attention(n_long) / rnn(n_long));
}

// ---- part 2: the benchmark --------------------------------------------------------------

// The run's configuration: the command line, parsed and checked below main.
struct Config {
    std::string device = "cpu";
    std::vector<int> seq_lens = {128, 256, 512, 1024};
    int batch = 8, d_model = 512, heads = 8, warmup = 2, repeat = 5;
    double limit_bytes = 0;  // a cell predicted to need more is skipped
    std::string figure_dir = "figures";
    bool no_figures = false, no_claims = false;
    std::vector<int> path_lens = {16, 32, 64, 128, 256, 512};
    Config(int argc, char** argv);
};

struct Cell {
    bool skipped = false;
    double predicted_mb = 0;
    double ms = 0, mb = 0;  // mean time of the timed runs, peak over them
};

// Fills buf from U(-bound, bound) with the project's torch-like generator.
void fill_uniform(mem::Buffer<float>& buf, float bound, torch_rng::Generator& rng) {
    rng.uniform_(buf.data(), buf.size(), -bound, bound);
}

// Bytes the kernel would still hand out now (MemAvailable): another limit on a shared machine.
double available_bytes() {
    std::ifstream f("/proc/meminfo");
    std::string key;
    double kb;
    std::string unit;
    while (f >> key >> kb >> unit)
        if (key == "MemAvailable:") return kb * 1024.0;
    return 1e300;
}

// One cell: build the layer and its input, 2 warm-ups, then `repeat` timed forward+backward
// runs; the peak tracked memory is taken over the timed runs (reset before each, like
// torch.cuda.reset_peak_memory_stats), with the weights, x and dy counted as present.
Cell run_cell(Method method, int n, const Config& cfg) {
    const int B = cfg.batch, D = cfg.d_model;
    mem::empty_cache();  // the previous cell's cached blocks go back before this one is judged
    Cell cell;
    const bool fused = method == Method::fused;
    const double predicted = method == Method::lstm
                                 ? LstmLayer::predicted_peak_bytes(B, n, D)
                                 : AttentionLayer::predicted_peak_bytes(fused, B, n, D, cfg.heads);
    cell.predicted_mb = predicted / MIB;
    if (predicted > cfg.limit_bytes || predicted > available_bytes()) {
        cell.skipped = true;
        return cell;
    }
    term::ProgressLine progress;  // one line on a terminal, nothing at all in a log
    try {
        torch_rng::Generator rng(uint64_t(n) * 3 + uint64_t(method));
        const float bound = 1.0f / std::sqrt((float)D);  // nn.Linear's init range
        mem::Buffer<float> x((size_t)B * n * D), dy((size_t)B * n * D);  // (B, n, D) or (n, B, D)
        fill_uniform(x, 1.0f, rng);
        fill_uniform(dy, 1.0f, rng);

        std::function<void()> step;
        std::unique_ptr<AttentionLayer> attn;
        std::unique_ptr<LstmLayer> lstm;
        if (method != Method::lstm) {
            attn = std::make_unique<AttentionLayer>(D, cfg.heads, fused);
            fill_uniform(attn->W_qkv, bound, rng);
            fill_uniform(attn->W_o, bound, rng);
            step = [&] {
                { mem::Buffer<float> y = attn->forward(x.data(), B, n); }  // the loss consumes y
                mem::Buffer<float> dx = attn->backward(dy.data());         // (B, n, d_model)
            };
        } else {
            lstm = std::make_unique<LstmLayer>(D);
            fill_uniform(lstm->W_ih, bound, rng);
            fill_uniform(lstm->W_hh, bound, rng);
            fill_uniform(lstm->b, bound, rng);
            step = [&] {
                lstm->forward(x.data(), n, B);
                mem::Buffer<float> dx = lstm->backward(dy.data());  // (n, B, d_model)
            };
        }

        const int total = cfg.warmup + cfg.repeat;
        double seconds = 0, peak = 0;
        for (int r = 0; r < total; r++) {
            if (progress.active()) {
                char line[160];
                std::snprintf(line, sizeof line, "  n = %d, %s: %s %d/%d", n, method_name(method),
                              r < cfg.warmup ? "워밍업" : "측정",
                              r < cfg.warmup ? r + 1 : r - cfg.warmup + 1,
                              r < cfg.warmup ? cfg.warmup : cfg.repeat);
                progress.show(line);
            }
            mem::reset_peak();
            const auto t0 = std::chrono::steady_clock::now();
            step();
            const double dt =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            if (r >= cfg.warmup) {
                seconds += dt;
                peak = std::max(peak, (double)mem::peak_bytes());
            }
        }
        cell.ms = seconds / cfg.repeat * 1e3;
        cell.mb = peak / MIB;
    } catch (const std::bad_alloc&) {  // the prediction fit but the allocator said no
        cell.skipped = true;
    }
    progress.clear();
    return cell;
}

std::string format_cell(const Cell& c) {
    char buf[64];
    if (c.skipped) {  // the GPU path reports no prediction, only that it did not fit
        if (c.predicted_mb > 0)
            std::snprintf(buf, sizeof buf, "건너뜀(예상 %.0f MB)", c.predicted_mb);
        else std::snprintf(buf, sizeof buf, "건너뜀(메모리 부족)");
        return term::pad_left(buf, 24);
    }
    std::snprintf(buf, sizeof buf, "%8.1f ms / %7.0f MB", c.ms, c.mb);
    return buf;
}

// Figure 3, drawn after main().
void draw_figure(const std::vector<int>& seq_lens, const std::vector<std::vector<Cell>>& cells,
                 double memory_mb, const char* memory_name, const std::string& path);

}  // namespace

int main(int argc, char** argv) {
    const Config cfg(argc, argv);

    print_complexity_table();
    // Written at once and checked: with stdout on a full disk (`6-cost > /dev/full`) the run
    // stops here with the exit check's line, not after measuring for nowhere.
    cli::flush_stdout_or_exit();
    // The prose right after the table (CPU only): the gradient's path from the last position
    // to the first, one step through attention and n through the LSTM.
    PathLengths paths;
    if (!cfg.no_claims && cfg.device == "cpu") {
        paths = path_lengths(cfg.path_lens, cfg.d_model, cfg.heads);
        print_path_lengths(paths, cfg.d_model);
    }
    print_cost_crossover(cfg.d_model);

    std::printf("device = %s, batch = %d, d_model = %d\n", cfg.device.c_str(), cfg.batch,
                cfg.d_model);
    cli::flush_stdout_or_exit();
    double memory_mb = mem::physical_bytes() / MIB;
    std::vector<std::vector<Cell>> cuda_cells;  // the GPU measures the whole table in one go
#ifdef WITH_CUDA
    if (cfg.device == "cuda") {
        try {
            CudaCostTable t = run_cost_table_cuda(cfg.seq_lens, cfg.batch, cfg.d_model, cfg.heads,
                                                  cfg.warmup, cfg.repeat);
            std::fprintf(stderr, "6-cost: %s, %.0f MB\n", t.device.c_str(), t.physical_mb);
            memory_mb = t.physical_mb;
            for (const CudaCostRow& r : t.rows) {
                std::vector<Cell> row;
                for (const CudaCostCell* c : {&r.naive, &r.fused, &r.lstm})
                    row.push_back(Cell{c->skipped, 0, c->ms, c->peak_mb});
                cuda_cells.push_back(row);
            }
        } catch (const std::exception& e) {  // a CUDA error, or a kernel refusing its input
            std::fprintf(stderr, "6-cost: error: %s\n", cli::error_text(e));
            return 1;
        }
    }
#endif
    std::printf("     n |         어텐션(단순 구현) |        어텐션(퓨전 커널) |           LSTM\n");
    cli::flush_stdout_or_exit();
    std::vector<std::vector<Cell>> cells;
    bool any_skipped = false;
    for (size_t k = 0; k < cfg.seq_lens.size(); k++) {
        const int n = cfg.seq_lens[k];
        std::vector<Cell> row;
        for (int m = 0; m < 3; m++) {
            row.push_back(cfg.device == "cuda" ? cuda_cells[k][size_t(m)]
                                               : run_cell(METHODS[m], n, cfg));
            any_skipped |= row.back().skipped;
        }
        std::printf("%6d | %s | %s | %s\n", n, format_cell(row[0]).c_str(),
                    format_cell(row[1]).c_str(), format_cell(row[2]).c_str());
        cli::flush_stdout_or_exit();
        cells.push_back(row);
    }
    if (any_skipped && cfg.device == "cpu")
        std::printf(
            "(건너뜀: 예상 최대 메모리가 한도 %.0f MB 또는 지금 쓸 수 있는 메모리를 넘는 항목)\n",
            cfg.limit_bytes / MIB);
    if (any_skipped && cfg.device == "cuda")
        std::printf("(건너뜀: GPU 메모리 %.0f MB에 들어가지 않는 항목)\n", memory_mb);

    // The prose after the measured table (CPU only): where the memory curves cross.
    if (!cfg.no_claims && cfg.device == "cpu") {
        std::vector<double> naive_mb, lstm_mb;
        for (const std::vector<Cell>& row : cells) {
            naive_mb.push_back(row[0].skipped ? -1 : row[0].mb);
            lstm_mb.push_back(row[2].skipped ? -1 : row[2].mb);
        }
        print_memory_crossover(cfg.seq_lens, naive_mb, lstm_mb, cfg.batch, cfg.d_model, cfg.heads);
    }

    if (!cfg.no_figures) {
        try {
            if (!paths.n.empty())
                draw_path_lengths(paths, cfg.d_model, cfg.figure_dir + "/6-path-length.png");
            draw_figure(
                cfg.seq_lens, cells, memory_mb, cfg.device == "cuda" ? "GPU" : "CPU",
                cfg.figure_dir + (cfg.device == "cuda" ? "/6-cost-cuda.png" : "/6-cost.png"));
        } catch (const std::exception& e) {
            std::fprintf(stderr, "6-cost: error: %s\n", cli::error_text(e));
            return 1;
        }
    }
    return 0;
}

namespace {

Config::Config(int argc, char** argv) {
    cli::Parser cli("6-cost",
                    "Section 6: the cost of attention (complexity table, benchmark, figure 3)");
    double mem_limit_mb = 0;
    cli.choice("--device", device, {"cpu", "cuda"},
               "cuda: in build/bin/6-cost-cuda, built when nvcc is present");
    cli.option("--seq-lens", seq_lens,
               "sequence lengths n (the article: 128,256,512,1024,2048,4096)");
    cli.option("--batch", batch, "batch size");
    cli.option("--d-model", d_model, "model width (the LSTM's input and hidden width too)");
    cli.option("--heads", heads, "attention heads");
    // warmup + repeat runs are counted in one int: each is held to a million.
    cli.option("--warmup", warmup, "untimed runs per cell").range(0, 1'000'000);
    cli.option("--repeat", repeat, "timed runs per cell (the mean is printed)").range(1, 1'000'000);
    cli.option("--mem-limit", mem_limit_mb, "MB a cell may need (0: the physical memory)", "MB");
    cli.figures(figure_dir, no_figures, "6-cost.png (figure 3) and 6-path-length.png");
    cli.option("--path-lens", path_lens, "n for the path-length measurement after the table",
               "LIST");
    cli.flag("--no-claims", no_claims,
             "print only the article's tables (no path length, crossover)");
    cli.parse(argc, argv);
#ifndef WITH_CUDA
    if (device == "cuda")
        cli.fail(
            "--device cuda: this binary has no CUDA path; run build/bin/6-cost-cuda (built by "
            "make build when nvcc is present)");
#endif
    if (seq_lens.empty()) cli.fail("--seq-lens needs at least one length");
    for (int n : seq_lens)
        if (n < 1 || n > (1 << 20)) cli.fail("--seq-lens entries must be between 1 and 1048576");
    for (int n : path_lens)
        if (n < 2 || n > 8192) cli.fail("--path-lens entries must be between 2 and 8192");
    // The crossover ("between n = 128 and 256") and the path length's zeros ("from n = 256")
    // read the lengths in order, and the figures draw them as lines: smallest first, once each.
    for (const auto& [name, lens] :
         {std::pair{"--seq-lens", &seq_lens}, {"--path-lens", &path_lens}})
        for (size_t k = 1; k < lens->size(); k++)
            if ((*lens)[k] <= (*lens)[k - 1])
                cli.fail(std::string(name) +
                         " entries must increase, each once (e.g. 128,256,512)");
    if (batch < 1) cli.fail("--batch must be at least 1");
    if (d_model < 1 || heads < 1 || d_model % heads != 0)
        cli.fail("--d-model must be a positive multiple of --heads");
    if (device == "cuda" && d_model / heads > 128)
        cli.fail(
            "--device cuda: the fused kernels take heads up to 128 wide, and d_model / heads = " +
            std::to_string(d_model / heads) + "; use more --heads");
    if (mem_limit_mb < 0)
        cli.fail("--mem-limit must be 0 (physical memory) or a positive number of MB");
    limit_bytes = mem_limit_mb > 0 ? mem_limit_mb * MIB : mem::physical_bytes();
    {
        // The smallest cell holds at least its layer's weights and gradients, x and dy. When
        // that is more than the machine has, no cell can run: say so now, as chapter 3 does,
        // rather than print a table of skipped cells.
        const int n0 = *std::min_element(seq_lens.begin(), seq_lens.end());
        const double D = d_model, io = 2.0 * batch * n0 * D * sizeof(float);
        const double attention = 8 * D * D * sizeof(float) + io;           // W_qkv, W_o
        const double lstm = 2 * (8 * D * D + 4 * D) * sizeof(float) + io;  // W_ih, W_hh, b
        cli.require_memory(std::min(attention, lstm),
                           "--batch " + std::to_string(batch) + " --d-model " +
                               std::to_string(d_model) + " at n = " + std::to_string(n0));
    }
    // The path length runs the naive attention layer and the LSTM at each --path-lens n before
    // the table (a cell of the table that cannot fit is skipped; this measurement has no skip).
    if (!no_claims && device == "cpu")
        cli.require_memory(path_lengths_peak_bytes(path_lens, d_model, heads),
                           "--path-lens " + std::to_string(path_lens.back()) + " --d-model " +
                               std::to_string(d_model) + " --heads " + std::to_string(heads));
    // The figures this run draws, checked before the measurement, not after it.
    std::vector<std::string> figures = {device == "cuda" ? "6-cost-cuda.png" : "6-cost.png"};
    if (!no_claims && device == "cpu") figures.push_back("6-path-length.png");
    cli.check_figure_dir(figures);
}

// ---- figure 3 ---------------------------------------------------------------------------

// Figure 3: time and peak memory against n, log-log, with the machine's physical memory dashed.
// memory_mb: the device's physical memory, drawn as the dashed limit; memory_name: "CPU" or "GPU".
void draw_figure(const std::vector<int>& seq_lens, const std::vector<std::vector<Cell>>& cells,
                 double memory_mb, const char* memory_name, const std::string& path) {
    plot::Figure fig(11, 4, 150);
    plot::Axes& left = fig.subplot(1, 2, 0);
    plot::Axes& right = fig.subplot(1, 2, 1);
    const char* fmts[3] = {"o-", "s-", "^-"};
    for (int m = 0; m < 3; m++) {
        std::vector<double> n, ms, mb;  // skipped cells leave a gap at the end of the line
        for (size_t k = 0; k < seq_lens.size(); k++)
            if (!cells[k][m].skipped) {
                n.push_back(seq_lens[k]);
                ms.push_back(cells[k][m].ms);
                mb.push_back(cells[k][m].mb);
            }
        left.plot(n, ms, fmts[m], method_name(METHODS[m]));
        right.plot(n, mb, fmts[m], method_name(METHODS[m]));
    }
    // The data's range on each panel (time, memory).
    double ms_lo = INFINITY, ms_hi = -INFINITY, lo = INFINITY, hi = -INFINITY;
    for (const std::vector<Cell>& row : cells)
        for (const Cell& c : row) {
            if (c.skipped) continue;
            if (c.ms > 0) ms_lo = std::min(ms_lo, c.ms), ms_hi = std::max(ms_hi, c.ms);
            if (c.mb > 0) lo = std::min(lo, c.mb), hi = std::max(hi, c.mb);
        }
    // The machine's memory, dashed, where it lies within a decade of the highest point. Further
    // up it would squeeze the data into the bottom of the panel: then the axis keeps to the data
    // and the line, above the view, is in the legend with how far above it lies.
    char label[128];
    std::snprintf(label, sizeof label, "%s 물리 메모리 (%.0f GB)", memory_name, memory_mb / 1024.0);
    if (hi > 0 && memory_mb > 10 * hi) {
        const double span = std::max(std::log10(hi / lo), 0.3), margin = 0.05 * span;
        right.set_ylim(lo / std::pow(10.0, margin), hi * std::pow(10.0, margin));
        std::snprintf(label, sizeof label, "%s 물리 메모리 %.0f GB: 그림 위쪽 밖, 최대값의 %.0f배",
                      memory_name, memory_mb / 1024.0, memory_mb / hi);
    }
    right.axhline(memory_mb, {.fmt = "--", .color = plot::gray, .lw = 1, .label = label});
    left.set_title("시간");
    left.set_ylabel("순전파+역전파 시간 (ms)");
    right.set_title("메모리");
    right.set_ylabel("최대 메모리 (MB)");
    for (plot::Axes* ax : {&left, &right}) {
        ax->set_xscale("log", 2);
        ax->set_yscale("log");
        // A log axis labels only the powers of ten: over two decades or less that may be one
        // label (10^2 over 30 to 900 ms). There, label 1, 2 and 5 of each decade as numbers.
        const bool time = ax == &left;
        if ((time ? ms_hi / ms_lo : hi / lo) <= 100) ax->use_plain_log_labels('y', {1, 2, 5});
        ax->set_xlabel("시퀀스 길이 n");
        ax->grid(0.3);
        ax->legend({.loc = "upper left"});
    }
    fig.tight_layout();
    fig.save_png(path);
}

}  // namespace
