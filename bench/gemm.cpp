// bench-gemm: our sgemm's GFLOP/s at square sizes 256..2048, side by side with OpenBLAS when
// libopenblas is installed (loaded at run time with dlopen, so the build never needs it).
// Both run in the same process, alternating, so a busy machine slows both alike; the ratio is
// the number to read.
#include "common/cli.h"
#include "common/gemm.h"
#include "common/memory.h"
#include "common/parallel.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <dlfcn.h>
#include <random>
#include <vector>

namespace {

// cblas_sgemm(order, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)
using CblasSgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*,
                            int, float, float*, int);
constexpr int CblasRowMajor = 101, CblasNoTrans = 111, CblasTrans = 112;

double seconds_now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<int> sizes = {256, 512, 1024, 2048};
    int repeat = 5;
    cli::Parser cli("bench-gemm", "sgemm GFLOP/s, ours beside OpenBLAS (best of --repeat runs)");
    cli.option("--sizes", sizes, "square sizes M = N = K");
    cli.option("--repeat", repeat,
               "timed blocks of calls per size and library (the best is reported)")
        .range(1, 1'000'000);
    cli.parse(argc, argv);
    for (int s : sizes)  // n * n floats per matrix, n^3 multiply-adds: n is kept to 2^16
        if (s < 1 || s > 65536) cli.fail("--sizes must be between 1 and 65536");

    CblasSgemm openblas = nullptr;
    if (void* lib = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL)) {
        openblas = reinterpret_cast<CblasSgemm>(dlsym(lib, "cblas_sgemm"));
        // Give OpenBLAS the same number of threads as our OpenMP.
        if (auto set = reinterpret_cast<void (*)(int)>(dlsym(lib, "openblas_set_num_threads")))
            set(omp_get_max_threads());
    }

    std::printf("sgemm, row-major, %d thread(s), best of %d\n", omp_get_max_threads(), repeat);
    if (openblas)
        std::printf("%6s %6s | %12s | %12s | %6s\n", "size", "op", "ours GFLOP/s", "OpenBLAS",
                    "ratio");
    else
        std::printf("%6s %6s | %12s   (libopenblas.so.0 not found: apt-get install "
                    "libopenblas-dev for the comparison)\n",
                    "size", "op", "ours GFLOP/s");

    std::mt19937 rng(0);
    std::uniform_real_distribution<float> U(-1.0f, 1.0f);
    for (int n : sizes) {
        mem::Buffer<float> A((size_t)n * n), B((size_t)n * n), C((size_t)n * n);
        for (size_t i = 0; i < A.size(); i++) A[i] = U(rng), B[i] = U(rng);
        const double flops = 2.0 * n * n * n;
        for (int variant = 0; variant < 2; variant++) {
            // A @ B, and A @ B^T (the Q K^T shape attention uses).
            const bool tb = variant == 1;
            auto ours = [&] {
                sgemm(false, tb, n, n, n, 1.0f, A.data(), n, B.data(), n, 0.0f, C.data(), n);
            };
            auto theirs = [&] {
                openblas(CblasRowMajor, CblasNoTrans, tb ? CblasTrans : CblasNoTrans, n, n, n,
                         1.0f, A.data(), n, B.data(), n, 0.0f, C.data(), n);
            };
            // Each timing is a block of calls lasting ~50 ms: a single small call (0.3 ms at
            // 256) is at the mercy of one interruption and of the other library's threads
            // still spinning from its last call.
            const auto block_seconds = [](auto&& f, int calls) {
                const double t0 = seconds_now();
                for (int c = 0; c < calls; c++) f();
                return (seconds_now() - t0) / calls;
            };
            const int calls = std::max(1, (int)(0.05 / block_seconds(ours, 1)));  // + warm-up
            if (openblas) block_seconds(theirs, 1);
            double best_ours = 1e30, best_theirs = 1e30;
            for (int r = 0; r < repeat; r++) {
                best_ours = std::min(best_ours, block_seconds(ours, calls));
                if (openblas) best_theirs = std::min(best_theirs, block_seconds(theirs, calls));
            }
            const double g_ours = flops / best_ours * 1e-9;
            if (openblas) {
                const double g_theirs = flops / best_theirs * 1e-9;
                std::printf("%6d %6s | %12.1f | %12.1f | %5.2fx\n", n, tb ? "A@B^T" : "A@B",
                            g_ours, g_theirs, g_ours / g_theirs);
            } else {
                std::printf("%6d %6s | %12.1f\n", n, tb ? "A@B^T" : "A@B", g_ours);
            }
            std::fflush(stdout);
        }
    }
    return 0;
}
