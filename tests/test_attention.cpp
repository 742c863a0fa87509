// common/kernels/attention: the heads' layouts, causal masking, the naive backward's products
// and finite differences, the fused kernel's memory. The kernels against the plain algorithms
// (chapters/6-cost/reference.h) at awkward shapes: tests/test_chapter6_reference.cpp.
#include "common/kernels/attention.h"
#include "common/kernels/gemm.h"
#include "common/memory.h"
#include "tests/util.h"

#include <cmath>
#include <random>
#include <vector>

namespace {

using Vec = std::vector<float>;

Vec random_vec(size_t size, std::mt19937& rng, float scale = 1.0f) {
    std::normal_distribution<float> N(0.0f, scale);
    Vec v(size);
    for (auto& x : v) x = N(rng);
    return v;
}

}  // namespace

TEST_CASE("attention: heads read inside qkv and written into the concat give the same bits") {
    // Section 6's layer hands the kernels q, k, v where they lie in qkv (B, n, 3, h, d_k) and
    // takes O (and gives dO) in the concat's layout (B, n, h, d_k): every output must be bit for
    // bit what the contiguous (B, h, n, d_k) call gives, with K, V, Q and dO read in place
    // (d_k = 64) or packed (24, 7), over one tile and several.
    std::mt19937 rng(11);
    const int B = 2, h = 3;
    struct Shape {
        int n, d_k;
    };
    for (Shape shape : {Shape{33, 64}, Shape{300, 64}, Shape{300, 24}, Shape{17, 7}})
        for (int variant = 0; variant < 4; variant++) {
            const bool fused = variant & 1, causal = variant & 2;
            const int n = shape.n, d_k = shape.d_k, D = h * d_k;
            INFO("n = " << n << ", d_k = " << d_k << ", fused " << fused << ", causal " << causal);
            // random numbers in the layer's layouts, and the same gathered per head
            const size_t size = (size_t)B * h * n * d_k;
            Vec qkv = random_vec(3 * size, rng, 1.5f), dO_rows = random_vec(size, rng);
            // f(at, in_qkv, in_concat): element c of row i of head hh of batch b, where it lies
            // in (B, h, n, d_k), in qkv (q's; k's and v's are D and 2 D on) and in the concat
            const auto each = [&](auto f) {
                for (int b = 0; b < B; b++)
                    for (int hh = 0; hh < h; hh++)
                        for (int i = 0; i < n; i++)
                            for (int c = 0; c < d_k; c++) {
                                const size_t row = (size_t)b * n + i, col = (size_t)hh * d_k + c;
                                f((((size_t)b * h + hh) * n + i) * d_k + c, row * 3 * D + col,
                                  row * D + col);
                            }
            };
            Vec Q(size), K(size), V(size), dO(size);
            each([&](size_t at, size_t in_qkv, size_t in_concat) {
                Q[at] = qkv[in_qkv], K[at] = qkv[in_qkv + D], V[at] = qkv[in_qkv + 2 * D];
                dO[at] = dO_rows[in_concat];
            });
            const HeadsLayout lq = heads_in_rows(n, d_k, 3 * D), lo = heads_in_rows(n, d_k, D);
            Vec O(size), dQ(size), dK(size), dV(size), O_rows(size), dqkv(3 * size, 9.0f);
            Vec saved(fused ? (size_t)B * h * n : (size_t)B * h * n * n), saved2 = saved;
            const float* q = qkv.data();
            float* dq = dqkv.data();
            if (fused) {
                attention_fused_forward(Q.data(), K.data(), V.data(), O.data(), saved.data(), B, h,
                                        n, d_k, causal);
                attention_fused_backward(Q.data(), K.data(), V.data(), O.data(), saved.data(),
                                         dO.data(), dQ.data(), dK.data(), dV.data(), B, h, n, d_k,
                                         causal);
                attention_fused_forward(q, q + D, q + 2 * D, O_rows.data(), saved2.data(), B, h, n,
                                        d_k, causal, lq, lo);
                attention_fused_backward(q, q + D, q + 2 * D, O_rows.data(), saved2.data(),
                                         dO_rows.data(), dq, dq + D, dq + 2 * D, B, h, n, d_k,
                                         causal, lq, lo);
            } else {
                attention_naive_forward(Q.data(), K.data(), V.data(), O.data(), saved.data(), B, h,
                                        n, d_k, causal);
                attention_naive_backward(Q.data(), K.data(), V.data(), saved.data(), dO.data(),
                                         dQ.data(), dK.data(), dV.data(), B, h, n, d_k, causal);
                attention_naive_forward(q, q + D, q + 2 * D, O_rows.data(), saved2.data(), B, h, n,
                                        d_k, causal, lq, lo);
                attention_naive_backward(q, q + D, q + 2 * D, saved2.data(), dO_rows.data(), dq,
                                         dq + D, dq + 2 * D, B, h, n, d_k, causal, lq, lo);
            }
            CHECK(saved2 == saved);  // L or P
            size_t differ = 0;
            each([&](size_t at, size_t in_qkv, size_t in_concat) {
                differ += (O_rows[in_concat] != O[at]) + (dqkv[in_qkv] != dQ[at]) +
                          (dqkv[in_qkv + D] != dK[at]) + (dqkv[in_qkv + 2 * D] != dV[at]);
            });
            CHECK(differ == 0);
        }
}

TEST_CASE("attention: causal rows put exactly zero probability on future keys") {
    std::mt19937 rng(8);
    const int n = 33, d_k = 5;
    Vec Q = random_vec(n * d_k, rng), K = random_vec(n * d_k, rng), V = random_vec(n * d_k, rng);
    Vec O(n * d_k), P((size_t)n * n);
    attention_naive_forward(Q.data(), K.data(), V.data(), O.data(), P.data(), 1, 1, n, d_k, true);
    for (int i = 0; i < n; i++) {
        double row = 0;
        for (int j = 0; j < n; j++) {
            if (j > i) CHECK(P[(size_t)i * n + j] == 0.0f);
            row += P[(size_t)i * n + j];
        }
        CHECK(row == doctest::Approx(1.0).epsilon(1e-5));
    }
}

TEST_CASE("attention: the naive backward is bit for bit its four whole-matrix products") {
    // It runs them a block of rows at a time (common/kernels/attention.cpp); the result must be
    // what dV = P^T dO, dP = dO V^T, dS = P * (dP - D), dQ = dS K / sqrt(d_k), dK = dS^T Q /
    // sqrt(d_k) over all n rows give, at n across several blocks and d_k read in place (64) or
    // packed (24).
    std::mt19937 rng(12);
    const int B = 1, h = 2;
    for (int d_k : {64, 24})
        for (int n : {300, 530}) {
            INFO("n = " << n << ", d_k = " << d_k);
            const size_t size = (size_t)B * h * n * d_k, nn = (size_t)n * n;
            Vec Q = random_vec(size, rng), K = random_vec(size, rng), V = random_vec(size, rng);
            Vec dO = random_vec(size, rng), O(size), P(B * h * nn);
            attention_naive_forward(Q.data(), K.data(), V.data(), O.data(), P.data(), B, h, n, d_k,
                                    false);
            Vec dQ(size), dK(size), dV(size);
            attention_naive_backward(Q.data(), K.data(), V.data(), P.data(), dO.data(), dQ.data(),
                                     dK.data(), dV.data(), B, h, n, d_k, false);
            const float scale = 1.0f / std::sqrt((float)d_k);
            Vec dP(nn), dS(nn), want(size);  // dP, dS: (n, n) of one slice
            size_t differ = 0;
            for (int bh = 0; bh < B * h; bh++) {
                const size_t x = (size_t)bh * n * d_k;  // slice bh of Q, K, V, dO, ...: (n, d_k)
                const float* P_ = P.data() + bh * nn;
                auto count = [&](const Vec& got) {
                    for (size_t i = 0; i < (size_t)n * d_k; i++) differ += got[x + i] != want[i];
                };
                sgemm(true, false, n, d_k, n, 1.0f, P_, n, &dO[x], d_k, 0.0f, want.data(), d_k);
                count(dV);
                sgemm(false, true, n, n, d_k, 1.0f, &dO[x], d_k, &V[x], d_k, 0.0f, dP.data(), n);
                for (int i = 0; i < n; i++) {  // as the backward's loop adds D up
                    const float* p = P_ + (size_t)i * n;
                    const float* dp = dP.data() + (size_t)i * n;
                    float D = 0.0f;
#pragma omp simd reduction(+ : D)
                    for (int j = 0; j < n; j++) D += p[j] * dp[j];
                    for (int j = 0; j < n; j++) dS[(size_t)i * n + j] = p[j] * (dp[j] - D);
                }
                sgemm(false, false, n, d_k, n, scale, dS.data(), n, &K[x], d_k, 0.0f, want.data(),
                      d_k);
                count(dQ);
                sgemm(true, false, n, d_k, n, scale, dS.data(), n, &Q[x], d_k, 0.0f, want.data(),
                      d_k);
                count(dK);
            }
            CHECK(differ == 0);
        }
}

TEST_CASE("attention: naive backward agrees with finite differences") {
    // loss = sum(O * G); d loss / d X estimated by central differences, X in {Q, K, V}.
    std::mt19937 rng(9);
    const int B = 1, h = 2, n = 5, d_k = 3;
    const size_t size = (size_t)B * h * n * d_k;
    for (bool causal : {false, true}) {
        CAPTURE(causal);
        Vec Q = random_vec(size, rng), K = random_vec(size, rng), V = random_vec(size, rng);
        Vec G = random_vec(size, rng);
        Vec P((size_t)B * h * n * n), O(size);
        auto loss = [&]() {
            attention_naive_forward(Q.data(), K.data(), V.data(), O.data(), P.data(), B, h, n, d_k,
                                    causal);
            double s = 0;
            for (size_t i = 0; i < size; i++) s += (double)O[i] * G[i];
            return s;
        };
        loss();
        Vec dQ(size), dK(size), dV(size);
        attention_naive_backward(Q.data(), K.data(), V.data(), P.data(), G.data(), dQ.data(),
                                 dK.data(), dV.data(), B, h, n, d_k, causal);
        const float eps = 1e-2f;
        struct Wrt {
            Vec* X;
            const Vec* dX;
            const char* name;
        };
        for (auto [X, dX, name] : {Wrt{&Q, &dQ, "dQ"}, Wrt{&K, &dK, "dK"}, Wrt{&V, &dV, "dV"}}) {
            Vec numeric(size);
            for (size_t i = 0; i < size; i++) {
                const float keep = (*X)[i];
                (*X)[i] = keep + eps;
                const double up = loss();
                (*X)[i] = keep - eps;
                const double down = loss();
                (*X)[i] = keep;
                numeric[i] = (float)((up - down) / (2 * eps));
            }
            // float32 forward, eps = 1e-2: truncation ~eps^2 and rounding ~1e-7/eps.
            CHECK(testutil::allclose(*dX, numeric, 2e-3, 2e-3, name));
        }
    }
}

TEST_CASE("attention: the fused kernel's extra memory does not grow with n*n") {
    std::mt19937 rng(10);
    const int B = 1, h = 2, d_k = 16;
    size_t extra[2];
    for (int k = 0; k < 2; k++) {
        const int n = k == 0 ? 256 : 1024;
        const size_t size = (size_t)B * h * n * d_k;
        mem::Buffer<float> Q(size), K(size), V(size), O(size), L((size_t)B * h * n), dO(size),
            dQ(size), dK(size), dV(size);
        const size_t before = mem::current_bytes();
        mem::reset_peak();
        attention_fused_forward(Q.data(), K.data(), V.data(), O.data(), L.data(), B, h, n, d_k,
                                false);
        attention_fused_backward(Q.data(), K.data(), V.data(), O.data(), L.data(), dO.data(),
                                 dQ.data(), dK.data(), dV.data(), B, h, n, d_k, false);
        extra[k] = mem::peak_bytes() - before;
    }
    // 4x longer sequence: the n*n matrix would be 16x; the fused extras (D and the per-thread
    // tiles) grow at most linearly.
    CHECK(extra[1] <= 4 * extra[0] + 64);
}
