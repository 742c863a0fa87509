// One side of bench-gemm's comparison: one library's sgemm, timed alone in a child process of
// bench-gemm (`bench-gemm --peer NAME`, or bench/peers/eigen_gemm.cpp's own program), its result
// checked, reported to the parent in lines on stdout:
//
//   name LIBRARY VERSION     once, first
//   kernel NAME              the kernel family it ran (after each size and layout)
//   gflops N TRANSB G        GFLOP/s of C = A @ B (TRANSB 0) or A @ B^T (1), n x n, row-major
//   wrong N TRANSB WHAT      its result is wrong (the child then exits with WRONG_EXIT)
//
// Header-only, and needing nothing of the project's library: the Eigen peer is a program of its
// own, compiled where Eigen's headers are.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace bench::peer {

// The exit status of a child whose library computed a wrong product, and of one whose library
// is not installed (it prints "missing WHAT" first).
constexpr int WRONG_EXIT = 3, MISSING_EXIT = 4;

// Checks C = A @ op(B) (n x n, row-major, op(B) = B^T where trans_b) against double-precision
// arithmetic, allowing each entry what a float sum of n products can be off by in any order of
// summation, fused or not: (n + 2) units of float rounding (2^-24) times the sum of the
// products' magnitudes. Three checks, O(n^2) together:
//   - every entry is finite (the inputs are, so a NaN or an infinity is wrong: the child fills
//     C with NaN before the call, so an entry left unwritten shows here);
//   - every row, through a random vector x (Freivalds): C x against A (op(B) x), within the
//     row's allowances added up with |x|'s weights: an entry off by about its own size (a tile
//     from the wrong operand, a slice of k left out) shows wherever it is;
//   - every entry of the first and last rows and columns and of two random ones (where blocked
//     code has its edges), and `samples` random entries besides, against their own dot
//     products, each within its own allowance.
// Returns "" when C passes, else what is wrong with it, in words.
inline std::string check_product(bool trans_b, int n, const float* A, const float* B,
                                 const float* C, int samples = 64, unsigned seed = 1) {
    const double unit = std::ldexp(1.0, -24), allowance = (n + 2) * unit;
    auto a = [&](int i, int k) { return double(A[(size_t)i * n + k]); };
    auto b = [&](int k, int j) {
        return double(trans_b ? B[(size_t)j * n + k] : B[(size_t)k * n + j]);
    };
    auto c = [&](int i, int j) { return double(C[(size_t)i * n + j]); };
    char what[256];
    for (size_t i = 0; i < (size_t)n * n; i++)
        if (!std::isfinite(C[i])) {
            std::snprintf(what, sizeof what, "C[%zu][%zu] is %g, not a finite number", i / n, i % n,
                          (double)C[i]);
            return what;
        }
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> U(-1.0, 1.0);
    std::vector<double> x(n), y(n), y_abs(n);
    for (double& v : x)
        v = U(rng);
    for (int k = 0; k < n; k++) {  // y = op(B) x, y_abs = |op(B)| |x|
        double s = 0, s_abs = 0;
        for (int j = 0; j < n; j++)
            s += b(k, j) * x[j], s_abs += std::fabs(b(k, j) * x[j]);
        y[k] = s, y_abs[k] = s_abs;
    }
    for (int i = 0; i < n; i++) {
        double cx = 0, cx_abs = 0, ref = 0, bound = 0;
        for (int j = 0; j < n; j++)
            cx += c(i, j) * x[j], cx_abs += std::fabs(c(i, j) * x[j]);
        for (int k = 0; k < n; k++)
            ref += a(i, k) * y[k], bound += std::fabs(a(i, k)) * y_abs[k];
        // The double sums' own rounding is far below the allowance; 1e-9 covers it.
        if (std::fabs(cx - ref) > allowance * bound + 1e-9 * (bound + cx_abs)) {
            std::snprintf(what, sizeof what,
                          "row %d of C is off: C x = %.9g where A (op(B) x) = %.9g in double "
                          "precision, beyond the rounding allowance %.3g (x random)",
                          i, cx, ref, allowance * bound);
            return what;
        }
    }
    std::uniform_int_distribution<int> pick(0, n - 1);
    std::vector<std::pair<int, int>> entries;
    for (int line : {0, n - 1, pick(rng), pick(rng)})
        for (int m = 0; m < n; m++)
            entries.push_back({line, m}), entries.push_back({m, line});
    for (int s = 0; s < samples; s++)
        entries.push_back({pick(rng), pick(rng)});
    for (const auto& [i, j] : entries) {
        double ref = 0, bound = 0;
        for (int k = 0; k < n; k++)
            ref += a(i, k) * b(k, j), bound += std::fabs(a(i, k) * b(k, j));
        if (std::fabs(c(i, j) - ref) > allowance * bound + 1e-9 * bound) {
            std::snprintf(what, sizeof what,
                          "C[%d][%d] = %.9g where the double-precision dot product is %.9g, "
                          "beyond the rounding allowance %.3g",
                          i, j, c(i, j), ref, allowance * bound);
            return what;
        }
    }
    return "";
}

// What a library gives the timing loop for one size and layout: the call that computes
// C = A @ op(B), and the name of the kernel family it runs ("" where the library names none).
struct Prepared {
    std::function<void()> call;
    std::string kernel;
};
using Prepare =
    std::function<Prepared(bool trans_b, int n, const float* A, const float* B, float* C)>;

// The child's whole run: for each size, both layouts, each timed as the best of `repeat` blocks
// of calls lasting ~50 ms each (after one call that sets the block's length), the first call's
// result checked (C is filled with NaN before it, so an entry it leaves unwritten fails).
// Prints the lines above; returns the exit status: 0, or WRONG_EXIT.
inline int run(const std::string& name, const Prepare& prepare, const std::vector<int>& sizes,
               int repeat) {
    auto now = [] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
            .count();
    };
    std::printf("name %s\n", name.c_str());
    std::fflush(stdout);
    struct Free {
        void operator()(float* p) const { std::free(p); }
    };
    for (int n : sizes) {
        const size_t count = (size_t)n * n;
        const size_t bytes = (count * sizeof(float) + 63) / 64 * 64;  // aligned_alloc's rule
        std::unique_ptr<float, Free> A((float*)std::aligned_alloc(64, bytes)),
            B((float*)std::aligned_alloc(64, bytes)), C((float*)std::aligned_alloc(64, bytes));
        if (!A || !B || !C) {
            std::fprintf(stderr, "%s: out of memory for n = %d\n", name.c_str(), n);
            return 1;
        }
        std::mt19937 rng(n);
        std::uniform_real_distribution<float> U(-1.0f, 1.0f);
        for (size_t i = 0; i < count; i++)
            A.get()[i] = U(rng), B.get()[i] = U(rng);
        for (int tb = 0; tb < 2; tb++) {
            const Prepared p = prepare(tb == 1, n, A.get(), B.get(), C.get());
            std::fill(C.get(), C.get() + count, std::numeric_limits<float>::quiet_NaN());
            double t0 = now();
            p.call();
            const double first = now() - t0;
            const std::string wrong = check_product(tb == 1, n, A.get(), B.get(), C.get());
            if (!p.kernel.empty()) std::printf("kernel %s\n", p.kernel.c_str());
            if (!wrong.empty()) {
                std::printf("wrong %d %d %s\n", n, tb, wrong.c_str());
                std::fflush(stdout);
                return WRONG_EXIT;
            }
            // A single small call is at the mercy of one interruption: a block
            // of calls is timed instead.
            const int calls = std::max(1, (int)(0.05 / std::max(first, 1e-9)));
            double best = 1e30;
            for (int r = 0; r < repeat; r++) {
                t0 = now();
                for (int c = 0; c < calls; c++)
                    p.call();
                best = std::min(best, (now() - t0) / calls);
            }
            std::printf("gflops %d %d %.3f\n", n, tb, 2.0 * n * n * n / best * 1e-9);
            std::fflush(stdout);
        }
    }
    return 0;
}

}  // namespace bench::peer
