// bench-gemm: our sgemm's GFLOP/s at square sizes 256..2048, side by side with OpenBLAS when
// libopenblas is installed (loaded at run time with dlopen, so the build never needs it).
// Both run in the same process, alternating, so a busy machine slows both alike; the ratio is
// the number to read. The yardstick is named: the OpenBLAS core that ran (bench/openblas.h),
// and where that core is below what this CPU supports, OpenBLAS runs again in a child process
// with OPENBLAS_CORETYPE set to the best one, and the ratio is taken against the faster. Beside
// them, each round measures the CPU's multiply-add peak on the same threads (bench/peak.h), and
// each library's rate is shown as a share of it.
//
//   bench-gemm                     the table
//   bench-gemm --openblas-best     prints this CPU's best OpenBLAS cores (for the torch peers)
#include "bench/child.h"
#include "bench/median.h"
#include "bench/openblas.h"
#include "bench/peak.h"
#include "common/kernels/gemm.h"
#include "common/kernels/parallel.h"
#include "common/memory.h"
#include "common/program/cli.h"
#include "common/program/terminal.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <unistd.h>
#include <utility>
#include <vector>

namespace {

double seconds_now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// Each timing is a block of calls lasting ~50 ms: a single small call (0.3 ms at 256) is at the
// mercy of one interruption and of the other library's threads still spinning from its last call.
template <class F> double block_seconds(F&& f, int calls) {
    const double t0 = seconds_now();
    for (int c = 0; c < calls; c++) f();
    return (seconds_now() - t0) / calls;
}

// OpenBLAS alone in a child process (with OPENBLAS_CORETYPE=core, unless core is empty):
// GFLOP/s per (size, A@B^T?), read from the child's "gflops N TB G" lines. Empty where the child
// failed. Each library runs where the other's threads are not: after a call, both spin for a
// while before they sleep (our OpenMP threads a few ms, OpenBLAS's 0.1 s), and in one process,
// their calls in turn on the same cores, each takes the other's cycles: the ratio would then
// say more about which library ran last than about either.
std::map<std::pair<int, int>, double> openblas_in_child(const std::string& core,
                                                     const std::vector<int>& sizes, int repeat,
                                                     std::string& child_core) {
    std::map<std::pair<int, int>, double> out;
    char self[4096];
    const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) return out;
    self[len] = 0;
    std::string list;
    for (size_t i = 0; i < sizes.size(); i++)
        list += (i ? "," : "") + std::to_string(sizes[i]);
    std::vector<std::pair<std::string, std::string>> env;
    if (!core.empty()) env.push_back({"OPENBLAS_CORETYPE", core});
    const int rc =
        bench::run_child({self, "--openblas-only", "--runs", "1", "--repeat",
                          std::to_string(repeat), "--sizes", list},
                         env, [&](const std::string& line) {
                             int n = 0, tb = 0;
                             double g = 0;
                             char name[128];
                             if (std::sscanf(line.c_str(), "gflops %d %d %lf", &n, &tb, &g) == 3)
                                 out[{n, tb}] = g;
                             else if (std::sscanf(line.c_str(), "core %127s", name) == 1)
                                 child_core = name;
                         });
    if (rc != 0) out.clear();
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<int> sizes = {256, 512, 1024, 2048};
    int repeat = 5, runs = 3;
    bool openblas_only = false, print_best = false;
    cli::Parser cli("bench-gemm", "sgemm GFLOP/s, ours beside OpenBLAS (best of --repeat runs)");
    cli.option("--sizes", sizes, "square sizes M = N = K");
    cli.option("--repeat", repeat,
               "timed blocks of calls per size and library (the best is reported)")
        .range(1, 1'000'000);
    cli.option("--runs", runs,
               "times the whole table is measured; each cell shows the median of the runs")
        .range(1, 1000);
    cli.flag("--openblas-best", print_best,
             "print this CPU's best OpenBLAS cores, the one to set first, and exit");
    cli.flag("--openblas-only", openblas_only,
             "time OpenBLAS alone, one 'gflops N TRANSB G' line each (the rerun's child)");
    cli.parse(argc, argv);
    for (int s : sizes) {  // n * n floats per matrix, n^3 multiply-adds: n is kept to 2^16
        if (s < 1 || s > 65536) cli.fail("--sizes must be between 1 and 65536");
        // A, B and C of the largest size, here and (one after the other) in OpenBLAS's child:
        // refused up front, not three times over as each process runs out of memory.
        cli.require_memory(3.0 * 4 * s * s, "--sizes " + std::to_string(s));
    }

    const openblas::Best best = openblas::best_for_this_cpu();
    if (print_best) {
        for (size_t i = 0; i < best.cores.size(); i++)
            std::printf("%s%s", i ? " " : "", best.cores[i].c_str());
        std::printf("\n");
        return 0;
    }

    const openblas::Library blas = openblas::load();
    // Give OpenBLAS the same number of threads as our OpenMP.
    if (blas.set_num_threads) blas.set_num_threads(omp_get_max_threads());
    if (openblas_only && !blas.sgemm) cli.fail("--openblas-only: libopenblas.so.0 not found");
    const std::string rerun = blas.sgemm ? openblas::rerun_core(blas.core, best) : "";
    std::string rerun_reported;
    bool rerun_failed = false, alone_failed = false;

    if (openblas_only) {
        std::printf("core %s\n", blas.core.c_str());
    } else {
        std::printf("sgemm, row-major, %d thread(s); each cell the median of %d runs, a run the "
                    "best of %d%s\n", omp_get_max_threads(), runs, repeat,
                    blas.sgemm ? "; OpenBLAS alone in a child process beside ours, size by size, "
                                     "in alternating order" : "");
        if (blas.sgemm)
            std::printf("yardstick: %s; core %s (this CPU's best: %s)\n", blas.config.c_str(),
                        blas.core.c_str(), openblas::list(best.cores).c_str());
    }

    // The table is measured `runs` times over (rounds over every cell, so a drift of the machine
    // touches every cell alike) and each cell shows its median: GFLOP/s, and the median of the
    // rounds' ratios. Within a round each size is measured on its own, OpenBLAS alone in a child
    // process (see openblas_in_child for why not in turn in one process) right beside ours, and
    // the order alternates from one size to the next and, for each size, from one round to the
    // next: OpenBLAS's cores, then ours; ours, then OpenBLAS's best core, then its own. A
    // machine's speed drifts within seconds (and may fall after a stretch of AVX-512 work): in
    // one fixed order, the library measured last would meet a different machine.
    struct Cell {
        double ours = 0, theirs = 0, rerun = 0;  // GFLOP/s; rerun 0 where there was none
        double peak = 0;                         // the round's multiply-add peak, GFLOP/s
    };
    std::vector<double> peaks;                               // one per round
    std::map<std::pair<int, int>, std::vector<Cell>> cells;  // (n, A@B^T?) -> one per round
    term::ProgressLine progress;  // on a terminal only
    std::mt19937 rng(0);
    std::uniform_real_distribution<float> U(-1.0f, 1.0f);
    // Our GFLOP/s for A @ B and A @ B^T (the Q K^T shape attention uses) at size n; with
    // openblas_only, OpenBLAS's, printed as "gflops" lines for the parent.
    auto measure = [&](int n) {
        std::array<double, 2> gflops{};
        mem::Buffer<float> A((size_t)n * n), B((size_t)n * n), C((size_t)n * n);  // (n, n)
        for (size_t i = 0; i < A.size(); i++) A[i] = U(rng), B[i] = U(rng);
        const double flops = 2.0 * n * n * n;
        for (int variant = 0; variant < 2; variant++) {
            const bool tb = variant == 1;
            std::function<void()> call = [&] {
                sgemm(false, tb, n, n, n, 1.0f, A.data(), n, B.data(), n, 0.0f, C.data(), n);
            };
            if (openblas_only)
                call = [&] {
                    blas.sgemm(openblas::CblasRowMajor, openblas::CblasNoTrans,
                               tb ? openblas::CblasTrans : openblas::CblasNoTrans, n, n, n, 1.0f,
                               A.data(), n, B.data(), n, 0.0f, C.data(), n);
                };
            const int calls = std::max(1, (int)(0.05 / block_seconds(call, 1)));  // + warm-up
            double best = 1e30;
            for (int r = 0; r < repeat; r++) best = std::min(best, block_seconds(call, calls));
            gflops[variant] = flops / best * 1e-9;
            if (openblas_only) {
                std::printf("gflops %d %d %.3f\n", n, variant, gflops[variant]);
                std::fflush(stdout);
            }
        }
        return gflops;
    };
    if (openblas_only) {
        for (int n : sizes) measure(n);
        return 0;
    }
    for (int round = 0; round < runs; round++) {
        progress.show("bench-gemm: run " + std::to_string(round + 1) + " of " +
                      std::to_string(runs));
        peaks.push_back(bench::peak_gflops(omp_get_max_threads()));
        for (size_t s = 0; s < sizes.size(); s++) {
            const int n = sizes[s];
            // (a count of the (round, size) pairs would keep each size's order in every round
            // wherever the number of sizes is even)
            const bool ours_first = (round + s) % 2 == 1;
            std::map<std::pair<int, int>, double> theirs, reruns;
            std::array<double, 2> ours{};
            auto run_theirs = [&] {
                if (!blas.sgemm) return;
                std::string core;
                theirs = openblas_in_child("", {n}, repeat, core);
                if (theirs.empty()) alone_failed = true;
            };
            auto run_rerun = [&] {
                if (rerun == "") return;
                reruns = openblas_in_child(rerun, {n}, repeat, rerun_reported);
                if (reruns.empty()) rerun_failed = true;
            };
            if (ours_first) {
                ours = measure(n), run_rerun(), run_theirs();
            } else {
                run_theirs(), run_rerun(), ours = measure(n);
            }
            for (int variant = 0; variant < 2; variant++) {
                Cell c;
                c.ours = ours[variant];
                c.peak = peaks.back();
                if (theirs.count({n, variant})) c.theirs = theirs[{n, variant}];
                if (reruns.count({n, variant})) c.rerun = reruns[{n, variant}];
                cells[{n, variant}].push_back(c);
            }
        }
    }
    progress.clear();

    if (alone_failed)
        std::printf("  OpenBLAS's child process failed in a run: its cells there have no "
                    "OpenBLAS figure and no ratio\n");
    if (rerun != "" && rerun_failed)
        std::printf("  the rerun with OPENBLAS_CORETYPE=%s failed in a run: the ratio is against "
                    "%s alone there\n", rerun.c_str(), blas.core.c_str());
    else if (rerun != "")
        std::printf("  %s is below this CPU: OpenBLAS ran again in a child process with "
                    "OPENBLAS_CORETYPE=%s (it reported %s); the ratio is against the "
                    "faster\n", blas.core.c_str(), rerun.c_str(), rerun_reported.c_str());
    const bool rerun_column = rerun != "" && !rerun_failed;
    std::printf(
        "multiply-add peak, %d thread(s): %.1f GFLOP/s (bench/peak.h: %d chains of %d-float "
        "%s a thread on registers alone, the most any sgemm here can reach; the median "
        "of the %d runs); %% of peak: ours%s\n",
        omp_get_max_threads(), bench::median(peaks), bench::PeakSimd::CHAINS, bench::PeakSimd::W,
        bench::PeakSimd::FUSED ? "FMAs" : "multiplies and adds", runs,
        blas.sgemm ? " / OpenBLAS's faster core" : "");
    if (rerun_column)
        std::printf("%6s %6s | %12s | %18s | %18s | %9s | %6s\n", "size", "op", "ours GFLOP/s",
                    ("OpenBLAS " + blas.core).c_str(), ("OpenBLAS " + rerun).c_str(), "% of peak",
                    "ratio");
    else if (blas.sgemm)
        std::printf("%6s %6s | %12s | %18s | %9s | %6s\n", "size", "op", "ours GFLOP/s",
                    ("OpenBLAS " + blas.core).c_str(), "% of peak", "ratio");
    else
        std::printf(
            "%6s %6s | %12s | %9s   (libopenblas.so.0 not found: apt-get install "
            "libopenblas-dev for the comparison)\n",
            "size", "op", "ours GFLOP/s", "% of peak");
    for (int n : sizes)
        for (int variant = 0; variant < 2; variant++) {
            const std::vector<Cell>& rounds = cells[{n, variant}];
            std::vector<double> ours, theirs, reruns, ratios, ours_pct, theirs_pct;
            for (const Cell& c : rounds) {
                ours.push_back(c.ours), theirs.push_back(c.theirs), reruns.push_back(c.rerun);
                ours_pct.push_back(100 * c.ours / c.peak);
                if (std::max(c.theirs, c.rerun) > 0) {
                    ratios.push_back(c.ours / std::max(c.theirs, c.rerun));
                    theirs_pct.push_back(100 * std::max(c.theirs, c.rerun) / c.peak);
                }
            }
            const char* op = variant ? "A@B^T" : "A@B";
            char pct[32];
            if (theirs_pct.empty())
                std::snprintf(pct, sizeof pct, "%.0f%%", bench::median(ours_pct));
            else
                std::snprintf(pct, sizeof pct, "%.0f / %.0f", bench::median(ours_pct),
                              bench::median(theirs_pct));
            if (!blas.sgemm)
                std::printf("%6d %6s | %12.1f | %9s\n", n, op, bench::median(ours), pct);
            else if (rerun_column)
                std::printf("%6d %6s | %12.1f | %18.1f | %18.1f | %9s | %5.2fx\n", n, op,
                            bench::median(ours), bench::median(theirs), bench::median(reruns), pct,
                            bench::median(ratios));
            else
                std::printf("%6d %6s | %12.1f | %18.1f | %9s | %5.2fx\n", n, op,
                            bench::median(ours), bench::median(theirs), pct, bench::median(ratios));
        }
    return 0;
}
