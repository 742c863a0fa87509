// The ceiling under every sgemm figure: how many multiply-adds a second this CPU's cores do when
// nothing but multiply-adds runs. Each thread keeps CHAINS independent accumulators of one vector
// register each (the width sgemm's micro-kernel uses) and updates them `iters` times, touching no
// memory: acc = acc * a + b, with a just below 1 so the values settle near b / (1 - a) and never
// reach a subnormal. CHAINS is enough to hide the multiply-add's latency (4 cycles at 2 a cycle:
// 8 in flight) and leaves the registers for nothing else. No GEMM can pass this rate; bench-gemm
// prints both libraries as a share of it, so a reader can tell "1.0x" at 60% of the machine from
// "1.0x" at 95%, where nothing is left for either to win.
//
// On the portable path (no AVX2+FMA, AVX-512 or NEON) the loop is a multiply and an add, rounded
// twice, as the portable micro-kernel's is where it has no FMA (SGEMM_FUSED in
// common/kernels/gemm.h).
#pragma once

#include "common/kernels/parallel.h"

#include <chrono>
#include <vector>

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace bench {

#if defined(__AVX512F__)
struct PeakSimd {
    using V = __m512;
    static constexpr int W = 16, CHAINS = 24;  // of 32 zmm registers
    static constexpr bool FUSED = true;        // one rounding per multiply-add
    static V set(float x) { return _mm512_set1_ps(x); }
    static V madd(V acc, V a, V b) { return _mm512_fmadd_ps(acc, a, b); }
    static float sum(V v) {  // (GCC's _mm512_reduce_add_ps warns of an uninitialised value)
        alignas(64) float f[16];
        _mm512_store_ps(f, v);
        float s = 0;
        for (float x : f)
            s += x;
        return s;
    }
};
#elif defined(__AVX2__) && defined(__FMA__)
struct PeakSimd {
    using V = __m256;
    static constexpr int W = 8, CHAINS = 12;  // of 16 ymm registers
    static constexpr bool FUSED = true;
    static V set(float x) { return _mm256_set1_ps(x); }
    static V madd(V acc, V a, V b) { return _mm256_fmadd_ps(acc, a, b); }
    static float sum(V v) {
        alignas(32) float f[8];
        _mm256_store_ps(f, v);
        float s = 0;
        for (float x : f)
            s += x;
        return s;
    }
};
#elif defined(__aarch64__)
struct PeakSimd {
    using V = float32x4_t;
    static constexpr int W = 4, CHAINS = 24;  // of 32 q registers
    static constexpr bool FUSED = true;
    static V set(float x) { return vdupq_n_f32(x); }
    static V madd(V acc, V a, V b) { return vfmaq_f32(b, acc, a); }  // b + acc * a, one rounding
    static float sum(V v) { return vaddvq_f32(v); }
};
#else
struct PeakSimd {
    typedef float V __attribute__((vector_size(16)));
    static constexpr int W = 4, CHAINS = 12;  // of 16 xmm registers
    static constexpr bool FUSED = false;
    static V set(float x) { return V{x, x, x, x}; }
    static V madd(V acc, V a, V b) { return acc * a + b; }  // rounded twice, like the kernel
    static float sum(V v) { return v[0] + v[1] + v[2] + v[3]; }
};
#endif

// The constants of the loop: chain c starts at START * (c + 1).
constexpr float PEAK_A = 0.999999f, PEAK_B = 1e-7f, PEAK_START = 1e-3f;

// ITERS updates of the chains on one thread; returns the sum of all their lanes (which a test
// compares with the same recurrence done one float at a time, so the loop cannot have been
// optimised away or miscompiled unnoticed).
inline float peak_chains(long iters) {
    using V = PeakSimd::V;
    constexpr int CHAINS = PeakSimd::CHAINS;
    V acc[CHAINS];
#pragma GCC unroll 24
    for (int c = 0; c < CHAINS; c++)
        acc[c] = PeakSimd::set(PEAK_START * (c + 1));
    const V a = PeakSimd::set(PEAK_A), b = PeakSimd::set(PEAK_B);
    for (long it = 0; it < iters; it++) {
#pragma GCC unroll 24
        for (int c = 0; c < CHAINS; c++)
            acc[c] = PeakSimd::madd(acc[c], a, b);
    }
    float total = 0;
    for (int c = 0; c < CHAINS; c++)
        total += PeakSimd::sum(acc[c]);
    return total;
}

// FLOPs of peak_chains(iters): two per lane per update.
inline double peak_flops(long iters) {
    return 2.0 * PeakSimd::W * PeakSimd::CHAINS * (double)iters;
}

// GFLOP/s of `threads` threads running the chains at once for about `seconds` (the wall time of
// the whole region, so a thread the OS delays counts against the rate, as it would against a
// GEMM's): the best of `repeat` tries.
inline double peak_gflops(int threads, double seconds = 0.1, int repeat = 3) {
    auto now = [] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
            .count();
    };
    // Calibrated on one thread: iterations for `seconds`.
    long iters = 1 << 16;
    for (;;) {
        const double t0 = now();
        volatile float sink = peak_chains(iters);
        (void)sink;
        const double t = now() - t0;
        if (t > seconds / 8 || iters > (1L << 40)) {
            iters = (long)(iters * (seconds / (t > 0 ? t : 1e-9)));
            break;
        }
        iters *= 4;
    }
    double best = 0;
    std::vector<float> sums(threads);
    for (int r = 0; r < repeat; r++) {
        const double t0 = now();
#pragma omp parallel for num_threads(threads) schedule(static, 1)
        for (int t = 0; t < threads; t++)
            sums[t] = peak_chains(iters);
        const double t = now() - t0;
        const double rate = threads * peak_flops(iters) / t * 1e-9;
        if (rate > best) best = rate;
    }
    volatile float sink = sums[0];
    (void)sink;
    return best;
}

}  // namespace bench
