// bench-gemm's child processes (`bench-gemm --peer NAME`): ours, OpenBLAS, BLIS or oneDNN's
// matmul, each alone in its process, timed and checked by bench/peer_child.h. The libraries are
// loaded at run time (bench/openblas.h, bench/blis.h, bench/onednn.h); the Eigen peer is a
// program of its own (bench/peers/eigen_gemm.cpp).
//
// With --describe a child prints only what it is ("name", "kernel": the kernel it picks, and for
// BLIS an "arch NAME" line for each arch the library has, in the order of their numbers) and
// exits; a library that is not installed prints "missing WHAT" and exits with MISSING_EXIT.
#pragma once

#include "bench/blis.h"
#include "bench/onednn.h"
#include "bench/openblas.h"
#include "bench/peer_child.h"
#include "common/kernels/gemm.h"
#include "common/kernels/parallel.h"

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace bench::peer {

// The child's main: `key` one of "ours", "openblas", "blis", "onednn"; the library runs on
// `threads` threads (the parent also sets the libraries' environment variables for them).
// Returns the exit status.
inline int library_main(const std::string& key, const std::vector<int>& sizes, int repeat,
                        int threads, bool describe) {
    auto missing = [](const char* what) {
        std::printf("missing %s\n", what);
        return MISSING_EXIT;
    };
    auto done = [&](const std::string& name, const std::string& kernel, const Prepare& prepare) {
        if (!describe) return run(name, prepare, sizes, repeat);
        std::printf("name %s\n", name.c_str());
        if (!kernel.empty()) std::printf("kernel %s\n", kernel.c_str());
        return 0;
    };
    if (key == "ours") {
        omp_set_num_threads(threads);
        const SgemmBlocking b = sgemm_blocking();
        // (the blocking it chose from this CPU's caches, named as a peer's kernel is)
        const std::string kernel = "blocking MC " + std::to_string(b.mc) + ", NC " +
                                   std::to_string(b.nc) + ", NB " + std::to_string(b.nb) +
                                   " (L2 " +
                                   std::to_string(b.l2_bytes >> 10) + " KB, L3 " +
                                   std::to_string(b.l3_bytes >> 20) + " MB)";
        return done("ours (common/kernels/gemm.cpp)", kernel,
                    [kernel](bool tb, int n, const float* A, const float* B, float* C) {
                        return Prepared{
                            [=] { sgemm(false, tb, n, n, n, 1.0f, A, n, B, n, 0.0f, C, n); },
                            kernel};
                    });
    }
    if (key == "openblas") {
        static const openblas::Library lib = openblas::load();
        if (!lib.sgemm) return missing("libopenblas.so.0");
        if (lib.set_num_threads) lib.set_num_threads(threads);
        return done(lib.config.empty() ? "OpenBLAS" : lib.config, lib.core,
                    [](bool tb, int n, const float* A, const float* B, float* C) {
                        return Prepared{[=] {
                                            lib.sgemm(
                                                openblas::CblasRowMajor, openblas::CblasNoTrans,
                                                tb ? openblas::CblasTrans : openblas::CblasNoTrans,
                                                n, n, n, 1.0f, A, n, B, n, 0.0f, C, n);
                                        },
                                        lib.core};
                    });
    }
    if (key == "blis") {
        static const blis::Library lib = blis::load();
        if (!lib.sgemm) return missing("libblis.so.4");
        if (lib.set_num_threads) lib.set_num_threads(threads);
        const std::string arch = lib.arch_string(lib.arch_query_id());
        if (describe)
            for (const std::string& a : blis::archs(lib))
                std::printf("arch %s\n", a.c_str());
        return done("BLIS " + lib.version, arch,
                    [arch](bool tb, int n, const float* A, const float* B, float* C) {
                        // Row-major through the strides: op(B) (k, j) is B[k][j] or B[j][k].
                        const int64_t rsb = tb ? 1 : n, csb = tb ? n : 1;
                        return Prepared{[=] {
                                            static const float one = 1.0f, zero = 0.0f;
                                            lib.sgemm(blis::NO_TRANSPOSE, blis::NO_TRANSPOSE, n, n,
                                                      n, &one, A, n, 1, B, rsb, csb, &zero, C, n,
                                                      1);
                                        },
                                        arch};
                    });
    }
    if (key == "onednn") {
        static const onednn::Library lib = onednn::load();
        if (!lib.ok) return missing("libdnnl.so.2 (oneDNN 2.x)");
        // oneDNN's threads are its OpenMP runtime's (OMP_NUM_THREADS, set by the parent).
        omp_set_num_threads(threads);
        return done("oneDNN " + lib.version + " matmul", "",
                    [](bool tb, int n, const float* A, const float* B, float* C) {
                        auto m = std::make_shared<onednn::Matmul>(lib, tb, n, A, B, C);
                        if (!m->error.empty()) {
                            std::fprintf(stderr, "oneDNN: %s\n", m->error.c_str());
                            std::exit(1);
                        }
                        return Prepared{[m] {
                                            const std::string e = m->run();
                                            if (e.empty()) return;
                                            std::fprintf(stderr, "oneDNN: %s\n", e.c_str());
                                            std::exit(1);
                                        },
                                        m->impl};
                    });
    }
    std::fprintf(stderr, "--peer %s: expected ours, openblas, blis or onednn\n", key.c_str());
    return 2;
}

}  // namespace bench::peer
