// bench-gemm: our sgemm's GFLOP/s at square sizes 256..2048, A @ B and A @ B^T, on 1 and 2
// threads, beside the strongest CPU libraries: oneDNN's matmul, BLIS, OpenBLAS and Eigen, each
// where it is installed (`make bench` installs them; a missing one is named and skipped).
//
// Every library, ours included, runs alone in a child process of its own (bench/peer_libs.h,
// bench/peers/eigen_gemm.cpp), one size at a time, the libraries in alternating order: a
// library's threads spin for a while after its last call, and in one process they would take
// the next library's cycles. Each child checks its library's product against double-precision
// arithmetic (bench/peer_child.h); a wrong product is reported and fails the run. A child that
// crashes or hangs (past --timeout) is reported in one line, and its library left out from
// there on. The peers are named with the kernel they ran: OpenBLAS and BLIS pick theirs from
// the CPU's model number and may pick one below the CPU (bench/openblas.h, bench/blis.h); there
// OpenBLAS runs a second time with the best kernel forced, and the faster of the two counts, and
// BLIS runs with the best kernel forced.
//
// Two tables: OpenBLAS alone beside ours on the most threads (the yardstick the README's
// numbers name, bench/readme-numbers.sh), with the CPU's multiply-add peak (bench/peak.h); then
// ours / the best peer in every cell, naming it (bench/peers.h).
//
//   bench-gemm                     the tables
//   bench-gemm --openblas-best     prints this CPU's best OpenBLAS cores (for the torch peers)
#include "bench/blis.h"
#include "bench/child.h"
#include "bench/median.h"
#include "bench/openblas.h"
#include "bench/peak.h"
#include "bench/peer_libs.h"
#include "bench/peer_run.h"
#include "bench/peers.h"
#include "common/kernels/parallel.h"
#include "common/program/cli.h"
#include "common/program/terminal.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <unistd.h>
#include <utility>
#include <vector>

int main(int argc, char** argv) {
    std::vector<int> sizes = {256, 512, 1024, 2048}, threads = {1, 2};
    int repeat = 5, runs = 3;
    double timeout_s = 300;
    std::string peer_list = "onednn,blis,openblas,eigen", eigen_program, peer;
    bool print_best = false, describe = false;
    cli::Parser cli("bench-gemm", "sgemm GFLOP/s, ours beside oneDNN, BLIS, OpenBLAS and Eigen");
    cli.option("--sizes", sizes, "square sizes M = N = K");
    cli.option("--threads", threads, "thread counts, each library timed on each");
    cli.option("--repeat", repeat,
               "timed blocks of calls per size and library (the best is reported)")
        .range(1, 1'000'000);
    cli.option("--runs", runs,
               "times the whole table is measured; each cell shows the median of the runs")
        .range(1, 1000);
    cli.option("--peers", peer_list,
               "the peers to compare with, a comma-separated list of "
               "onednn, blis, openblas and eigen",
               "LIST");
    cli.path("--eigen", eigen_program,
             "the Eigen peer's program (default: peer-eigen-gemm beside bench-gemm)", "PROGRAM");
    cli.option("--timeout", timeout_s,
               "seconds a child process may take (one library, one size) before it is killed", "S");
    cli.flag("--openblas-best", print_best,
             "print this CPU's best OpenBLAS cores, the one to set first, and exit");
    cli.option("--peer", peer,
               "run as a child process: time one library (ours, openblas, blis "
               "or onednn) and print its lines",
               "NAME");
    cli.flag("--describe", describe, "with --peer: print the library's name and kernel only");
    cli.parse(argc, argv);
    for (int s : sizes) {  // n * n floats per matrix, n^3 multiply-adds: n is kept to 2^16
        if (s < 1 || s > 65536) cli.fail("--sizes must be between 1 and 65536");
        // A, B and C of the largest size, in one child process at a time: refused up front.
        cli.require_memory(3.0 * 4 * s * s, "--sizes " + std::to_string(s));
    }
    for (int t : threads)
        if (t < 1 || t > 4096) cli.fail("--threads must be between 1 and 4096");
    if (!(timeout_s > 0)) cli.fail("--timeout must be a positive number of seconds");
    std::vector<std::string> keys = bench::split_words(peer_list);
    for (const std::string& k : keys)
        if (std::none_of(bench::peers::families().begin(), bench::peers::families().end(),
                         [&](const bench::peers::Family& f) { return f.key == k; }))
            cli.fail("--peers: '" + k + "' is not one of onednn, blis, openblas, eigen");

    const openblas::Best best = openblas::best_for_this_cpu();
    if (print_best) {
        for (size_t i = 0; i < best.cores.size(); i++)
            std::printf("%s%s", i ? " " : "", best.cores[i].c_str());
        std::printf("\n");
        return 0;
    }
    if (!peer.empty()) {
        if (peer != "ours" && peer != "openblas" && peer != "blis" && peer != "onednn")
            cli.fail("--peer takes ours, openblas, blis or onednn");
        return bench::peer::library_main(peer, sizes, repeat, threads[0], describe);
    }

    const std::string self = bench::self_path();
    if (self.empty()) cli.fail("cannot read /proc/self/exe to start the child processes");
    if (eigen_program.empty())
        eigen_program = self.substr(0, self.rfind('/') + 1) + "peer-eigen-gemm";

    // The variants: ours, then each peer as it picks its kernel, and forced where that is below
    // the CPU (OpenBLAS both ways, BLIS forced alone). Each peer first describes itself in a
    // child of its own (a library that crashes as it loads is reported like one that crashes as
    // it runs).
    std::vector<bench::Variant> variants = {
        {"ours", "", {self, "--peer", "ours"}, {}, "", {}, "", false}};
    std::vector<std::string> labels, notes;
    std::string blas_config, blas_core, rerun;  // the yardstick's OpenBLAS, for its table
    for (const bench::peers::Family& f : bench::peers::families()) {
        if (std::find(keys.begin(), keys.end(), f.key) == keys.end()) continue;
        labels.push_back(f.label);
        bench::Variant v{f.label, "", {self, "--peer", f.key}, {}, "", {}, "", false};
        if (f.key == "eigen") {
            v.argv = {eigen_program};
            if (::access(eigen_program.c_str(), X_OK) != 0) {
                notes.push_back(bench::peers::skipped_line(f));
                continue;
            }
        }
        const bench::ChildSaid said = bench::run_variant(v, {"--describe", "--sizes", "1"}, 1, 60);
        if (said.status == bench::peer::MISSING_EXIT) {
            notes.push_back(bench::peers::skipped_line(f));
            continue;
        }
        if (said.status != 0) {
            notes.push_back("  " + f.label + ": its child process " +
                            bench::failure_words(said, 60) + " as it described itself; skipped");
            continue;
        }
        variants.push_back(v);
        const std::string picked = said.kernels.empty() ? "" : said.kernels[0];
        if (f.key == "openblas") {
            blas_config = said.name;
            blas_core = picked;
            rerun = openblas::rerun_core(picked, best);
            if (!rerun.empty()) {
                v.forced = "OPENBLAS_CORETYPE=" + rerun;
                v.env = {{"OPENBLAS_CORETYPE", rerun}};
                variants.push_back(v);
            }
        } else if (f.key == "blis") {
            const std::string arch =
                blis::force_arch(picked, blis::best_for_this_cpu(), said.archs);
            const auto at = std::find(said.archs.begin(), said.archs.end(), arch);
            if (!arch.empty()) {
                const std::string id = std::to_string(at - said.archs.begin());
                variants.back().forced = "BLIS_ARCH_TYPE=" + id + " (it picked " + picked + ")";
                variants.back().env = {{"BLIS_ARCH_TYPE", id}};
            }
        }
    }

    // The measurement: the whole table `runs` times over (a drift of the machine touches every
    // cell alike); within a run, each thread count and size in turn, every variant's child
    // right after the other's, in an order that reverses from one size to the next and, for
    // each cell, from one run to the next: in one fixed order, the library measured last would
    // meet a different machine (its speed drifts within seconds, and may fall after a stretch
    // of AVX-512 work).
    // gflops[variant][(threads, n, A@B^T?)]: one figure per run, 0 where there is none.
    std::vector<std::map<std::tuple<int, int, int>, std::vector<double>>> gflops(variants.size());
    std::map<int, std::vector<double>> peaks;  // per thread count, one per run
    term::ProgressLine progress;               // on a terminal only
    for (int round = 0; round < runs; round++) {
        progress.show("bench-gemm: run " + std::to_string(round + 1) + " of " +
                      std::to_string(runs));
        for (size_t ti = 0; ti < threads.size(); ti++) {
            const int t = threads[ti];
            peaks[t].push_back(bench::peak_gflops(t));
            for (size_t si = 0; si < sizes.size(); si++) {
                const int n = sizes[si];
                std::vector<size_t> order(variants.size());
                for (size_t i = 0; i < order.size(); i++)
                    order[i] = i;
                if ((round + ti + si) % 2) std::reverse(order.begin(), order.end());
                for (size_t i : order) {
                    bench::Variant& v = variants[i];
                    for (int tb = 0; tb < 2; tb++)
                        gflops[i][{t, n, tb}].push_back(0);
                    if (!v.failure.empty()) continue;
                    const bench::ChildSaid said = bench::run_variant(
                        v, {"--sizes", std::to_string(n), "--repeat", std::to_string(repeat)}, t,
                        timeout_s);
                    for (const std::string& k : said.kernels)
                        if (std::find(v.kernels.begin(), v.kernels.end(), k) == v.kernels.end())
                            v.kernels.push_back(k);
                    if (!said.name.empty()) v.name = said.name;
                    if (said.status != 0) {
                        v.failure = "its child process " + bench::failure_words(said, timeout_s) +
                                    " (n = " + std::to_string(n) + ", " + std::to_string(t) +
                                    " thread(s)); left out from there on";
                        v.wrong = said.status == bench::peer::WRONG_EXIT;
                        continue;
                    }
                    for (int tb = 0; tb < 2; tb++)
                        if (said.gflops.count({n, tb}))
                            gflops[i][{t, n, tb}].back() = said.gflops.at({n, tb});
                }
            }
        }
    }
    progress.clear();

    // The yardstick table: ours beside OpenBLAS (as it picks its core, and forced) on the most
    // threads, with the share of the CPU's multiply-add peak.
    const int most = *std::max_element(threads.begin(), threads.end());
    auto figures = [&](const std::string& family, const std::string& forced, int t, int n,
                       int tb) -> std::vector<double> {
        for (size_t i = 0; i < variants.size(); i++)
            if (variants[i].family == family && (variants[i].forced == "") == (forced == ""))
                return gflops[i][{t, n, tb}];
        return std::vector<double>(runs, 0.0);
    };
    const bool blas = !blas_core.empty();
    std::printf(
        "sgemm, row-major, %d thread(s); each cell the median of %d runs, a run the "
        "best of %d%s\n",
        most, runs, repeat,
        blas ? "; OpenBLAS alone in a child process beside ours, size by size, in "
               "alternating order"
             : "");
    if (blas)
        std::printf("yardstick: %s; core %s (this CPU's best: %s)\n", blas_config.c_str(),
                    blas_core.c_str(), openblas::list(best.cores).c_str());
    const bench::Variant* blas_rerun = nullptr;
    for (const bench::Variant& v : variants)
        if (v.family == "OpenBLAS" && !v.forced.empty()) blas_rerun = &v;
    if (blas_rerun && !blas_rerun->failure.empty())
        std::printf(
            "  the rerun with OPENBLAS_CORETYPE=%s failed in a run: the ratio is against "
            "%s alone there\n",
            rerun.c_str(), blas_core.c_str());
    else if (blas_rerun)
        std::printf(
            "  %s is below this CPU: OpenBLAS ran again in a child process with "
            "OPENBLAS_CORETYPE=%s (it reported %s); the ratio is against the "
            "faster\n",
            blas_core.c_str(), rerun.c_str(),
            blas_rerun->kernels.empty() ? "nothing" : blas_rerun->kernels[0].c_str());
    const bool rerun_column = blas_rerun && blas_rerun->failure.empty();
    std::printf(
        "multiply-add peak, %d thread(s): %.1f GFLOP/s (bench/peak.h: %d chains of %d-float "
        "%s a thread on registers alone, the most any sgemm here can reach; the median "
        "of the %d runs); %% of peak: ours%s\n",
        most, bench::median(peaks[most]), bench::PeakSimd::CHAINS, bench::PeakSimd::W,
        bench::PeakSimd::FUSED ? "FMAs" : "multiplies and adds", runs,
        blas ? " / OpenBLAS's faster core" : "");
    if (rerun_column)
        std::printf("%6s %6s | %12s | %18s | %18s | %9s | %6s\n", "size", "op", "ours GFLOP/s",
                    ("OpenBLAS " + blas_core).c_str(), ("OpenBLAS " + rerun).c_str(), "% of peak",
                    "ratio");
    else if (blas)
        std::printf("%6s %6s | %12s | %18s | %9s | %6s\n", "size", "op", "ours GFLOP/s",
                    ("OpenBLAS " + blas_core).c_str(), "% of peak", "ratio");
    else
        std::printf(
            "%6s %6s | %12s | %9s   (libopenblas.so.0 not found: apt-get install "
            "libopenblas0-pthread for the comparison)\n",
            "size", "op", "ours GFLOP/s", "% of peak");
    for (int n : sizes)
        for (int tb = 0; tb < 2; tb++) {
            const std::vector<double> ours = figures("ours", "", most, n, tb),
                                      theirs = figures("OpenBLAS", "", most, n, tb),
                                      reruns = figures("OpenBLAS", "forced", most, n, tb);
            std::vector<double> ratios, ours_pct, theirs_pct;
            for (int r = 0; r < runs; r++) {
                const double peak = peaks[most][r], faster = std::max(theirs[r], reruns[r]);
                if (ours[r] > 0) ours_pct.push_back(100 * ours[r] / peak);
                if (faster > 0) theirs_pct.push_back(100 * faster / peak);
                if (ours[r] > 0 && faster > 0) ratios.push_back(ours[r] / faster);
            }
            const char* op = tb ? "A@B^T" : "A@B";
            char pct[32];
            if (theirs_pct.empty())
                std::snprintf(pct, sizeof pct, "%.0f%%", bench::median(ours_pct));
            else
                std::snprintf(pct, sizeof pct, "%.0f / %.0f", bench::median(ours_pct),
                              bench::median(theirs_pct));
            const double o = bench::peers::median_present(ours);
            if (!blas)
                std::printf("%6d %6s | %12.1f | %9s\n", n, op, o, pct);
            else if (rerun_column)
                std::printf("%6d %6s | %12.1f | %18.1f | %18.1f | %9s | %5.2fx\n", n, op, o,
                            bench::peers::median_present(theirs),
                            bench::peers::median_present(reruns), pct, bench::median(ratios));
            else
                std::printf("%6d %6s | %12.1f | %18.1f | %9s | %5.2fx\n", n, op, o,
                            bench::peers::median_present(theirs), pct, bench::median(ratios));
        }

    // The peers' table: each family's figure in a run is the faster of its variants there.
    std::printf(
        "\nours / the best peer, each library alone in a child process, its product "
        "checked; GFLOP/s, each the median of %d runs:\n",
        runs);
    for (const bench::Variant& v : variants) {
        std::string kernels;
        for (const std::string& k : v.kernels)
            kernels += (kernels.empty() ? "" : ", ") + k;
        std::printf("  %s: %s%s%s%s%s\n", v.family.c_str(), v.name.c_str(),
                    kernels.empty() ? "" : ", kernel ", kernels.c_str(),
                    v.forced.empty() ? "" : ", forced with ", v.forced.c_str());
    }
    for (const std::string& note : notes)
        std::printf("%s\n", note.c_str());
    for (const bench::Variant& v : variants)
        if (!v.failure.empty())
            std::printf("  %s%s%s: %s\n", v.family.c_str(), v.forced.empty() ? "" : " with ",
                        v.forced.c_str(), v.failure.c_str());
    std::vector<bench::peers::Row> rows;
    for (int t : threads)
        for (int n : sizes)
            for (int tb = 0; tb < 2; tb++) {
                bench::peers::Row row{n, tb == 1, t, {}};
                row.cell.ours = figures("ours", "", t, n, tb);
                for (size_t i = 1; i < variants.size(); i++) {
                    std::vector<double>& f = row.cell.peers[variants[i].family];
                    f.resize(runs, 0.0);
                    for (int r = 0; r < runs; r++)
                        f[r] = std::max(f[r], gflops[i][{t, n, tb}][r]);
                }
                rows.push_back(row);
            }
    std::fputs(bench::peers::format_table(labels, rows).c_str(), stdout);

    // A wrong product, ours or a peer's, fails the run (after the tables, which leave it out).
    bool wrong = false;
    for (const bench::Variant& v : variants)
        if (v.wrong || (v.family == "ours" && !v.failure.empty())) {
            std::fprintf(stderr, "bench-gemm: error: %s%s%s: %s\n", v.family.c_str(),
                         v.forced.empty() ? "" : " with ", v.forced.c_str(), v.failure.c_str());
            wrong = true;
        }
    return wrong ? 1 : 0;
}
