// chapters/6-cost/reference.h, the plain-loop tier, holds every tuned kernel in common/kernels/:
// both are called on the same buffers at ragged shapes (n = 1, 17, 33, 100, 130, 300, 512; d_k
// not a power of two; M, N, K across the micro-kernel's, the panels' and the K slices' edges),
// causal and not, and agree within what float32 summation and exp_fast's rounding explain. The
// tier's FlashAttention-2 is held to its own naive algorithm at every tile size.
#include "chapters/6-cost/reference.h"
#include "common/kernels/attention.h"
#include "common/kernels/gemm.h"
#include "common/kernels/lstm.h"
#include "tests/util.h"

#include <array>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace {

using Vec = std::vector<float>;

Vec uniform(size_t size, std::mt19937& rng, float bound = 1.0f) {
    std::uniform_real_distribution<float> U(-bound, bound);
    Vec v(size);
    for (auto& x : v)
        x = U(rng);
    return v;
}

Vec normal(size_t size, std::mt19937& rng, float scale = 1.0f) {
    std::normal_distribution<float> N(0.0f, scale);
    Vec v(size);
    for (auto& x : v)
        x = N(rng);
    return v;
}

// One product C = alpha op(A) op(B) + beta C with entries from U(-1, 1), every leading dimension
// `pad` wider than the matrix (C's padding must come back untouched), through `tuned` (called
// as tuned(A, lda, B, ldb, C, ldc)) and through the tier's sgemm; beta = 0 puts NaN in C, which
// both must ignore. sgemm sums K products in float32, each step rounded (eps = 6e-8): the error
// grows like sqrt(K) eps times the terms, which |alpha| and |beta| (up to 1.5 here) scale, and
// the tier's double sum has none to speak of. 4e-5 sqrt(K + 1) and 1e-5 relative: the bound
// tests/test_gemm.cpp holds sgemm to, times 1.5.
template <class Tuned>
void check_gemm(std::mt19937& rng, bool ta, bool tb, int M, int N, int K, float alpha, float beta,
                int pad, Tuned tuned) {
    CAPTURE(ta);
    CAPTURE(tb);
    CAPTURE(M);
    CAPTURE(N);
    CAPTURE(K);
    CAPTURE(alpha);
    CAPTURE(beta);
    const int lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
    const Vec A = uniform((size_t)(ta ? K : M) * lda, rng);  // op(A) (M, K)
    const Vec B = uniform((size_t)(tb ? N : K) * ldb, rng);  // op(B) (K, N)
    Vec C = uniform((size_t)M * ldc, rng);                   // (M, N), rows ldc apart
    if (beta == 0.0f)
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++)
                C[(size_t)i * ldc + j] = std::numeric_limits<float>::quiet_NaN();
    Vec ref = C;
    tuned(A.data(), lda, B.data(), ldb, C.data(), ldc);
    reference::sgemm(ta, tb, M, N, K, alpha, A.data(), lda, B.data(), ldb, beta, ref.data(), ldc);
    CHECK(testutil::allclose(C, ref, 1.5 * 4e-5 * std::sqrt(K + 1.0), 1e-5, "C"));
}

}  // namespace

TEST_CASE("chapter 6 reference: sgemm, every transpose, alpha and beta, ragged shapes") {
    std::mt19937 rng(61);
    // K 300 crosses a K slice (KC 256); M and N are no multiples of the micro-kernel's tile.
    for (const std::array<int, 3>& mnk : {std::array<int, 3>{1, 1, 1},
                                          {17, 33, 100},
                                          {100, 17, 33},
                                          {33, 100, 1},
                                          {257, 129, 300},
                                          {13, 300, 257}})
        for (int t = 0; t < 4; t++)
            for (const std::array<float, 2>& ab :
                 {std::array<float, 2>{1.0f, 0.0f}, {0.5f, 1.0f}, {-1.5f, -0.75f}}) {
                const int M = mnk[0], N = mnk[1], K = mnk[2];
                const bool ta = t & 1, tb = t & 2;
                const float alpha = ab[0], beta = ab[1];
                check_gemm(
                    rng, ta, tb, M, N, K, alpha, beta, 3,
                    [&](const float* A, int lda, const float* B, int ldb, float* C, int ldc) {
                        sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
                    });
            }
}

TEST_CASE("chapter 6 reference: sgemm_packed_b, op(B) packed once, op(A) read in place") {
    std::mt19937 rng(62);
    const int NR = sgemm_panel_width();
    for (int t = 0; t < 4; t++)
        for (int M : {1, 17, 33, 100})
            for (const std::array<int, 2>& kn :
                 {std::array<int, 2>{1, 1}, {33, 17}, {300, 5 * NR + 3}, {100, NR}})
                for (float beta : {0.0f, 1.0f}) {
                    const int K = kn[0], N = kn[1];
                    const bool ta = t & 1, tb = t & 2;
                    check_gemm(
                        rng, ta, tb, M, N, K, 0.5f, beta, 2,
                        [&](const float* A, int lda, const float* B, int ldb, float* C, int ldc) {
                            Vec Bp(sgemm_packed_b_floats(K, N));  // panels of NR columns
                            sgemm_pack_b(tb, K, N, B, ldb, Bp.data());
                            sgemm_packed_b(ta, M, N, K, 0.5f, A, lda, Bp.data(), (long)K * NR, beta,
                                           C, ldc);
                        });
                }
}

TEST_CASE("chapter 6 reference: sgemm_small, tiny products in every transpose") {
    std::mt19937 rng(63);
    for (int t = 0; t < 4; t++)
        for (const std::array<int, 3>& mnk : {std::array<int, 3>{1, 1, 1},
                                              {17, 33, 7},
                                              {33, 17, 64},
                                              {64, 64, 64},
                                              {5, 63, 17},
                                              {9, 9, 33}})
            for (int accumulate = 0; accumulate < 2; accumulate++) {
                const int M = mnk[0], N = mnk[1], K = mnk[2];
                const bool ta = t & 1, tb = t & 2;
                check_gemm(
                    rng, ta, tb, M, N, K, 1.0f, accumulate ? 1.0f : 0.0f, 3,
                    [&](const float* A, int lda, const float* B, int ldb, float* C, int ldc) {
                        sgemm_small(ta, tb, M, N, K, A, lda, B, ldb, accumulate != 0, C, ldc);
                    });
            }
}

namespace {

// Q and K scaled by 1.5, so that the scores spread and the softmax is far from uniform.
struct AttentionInputs {
    Vec Q, K, V, dO;  // (B, h, n, d_k)
    AttentionInputs(size_t size, std::mt19937& rng)
        : Q(normal(size, rng, 1.5f)),
          K(normal(size, rng, 1.5f)),
          V(normal(size, rng)),
          dO(normal(size, rng)) {}
};

// What one algorithm gives on them: O, its saved P (naive, (B, h, n, n)) or L (fused, (B, h, n)),
// and the gradients; outputs start as garbage, which the kernels must overwrite, not add to.
struct AttentionOutputs {
    Vec O, saved, dQ, dK, dV;  // (B, h, n, d_k) but saved
    AttentionOutputs(size_t size, size_t saved_size)
        : O(size, 9.0f), saved(saved_size, 9.0f), dQ(size, 9.0f), dK(size, 9.0f), dV(size, 9.0f) {}
};

// The tolerance of every attention output against the tier. The tuned kernels form S from
// float32 sums of d_k products, P from exp_fast (1-2 ulp) and float32 row sums, and O, dV, dQ
// and dK from float32 sums of n products: each step adds a few 1e-7 relative, dS = P (dP - D)
// enlarges it where dP and D nearly cancel, and 1e-4 relative (1e-5 absolute near 0) holds all
// of that with room.
constexpr double ATOL = 1e-5, RTOL = 1e-4;

void check_gradients(const AttentionOutputs& got, const AttentionOutputs& ref, const char* what) {
    CAPTURE(what);
    CHECK(testutil::allclose(got.O, ref.O, ATOL, RTOL, "O"));
    CHECK(testutil::allclose(got.dQ, ref.dQ, ATOL, RTOL, "dQ"));
    CHECK(testutil::allclose(got.dK, ref.dK, ATOL, RTOL, "dK"));
    CHECK(testutil::allclose(got.dV, ref.dV, ATOL, RTOL, "dV"));
}

}  // namespace

TEST_CASE("chapter 6 reference: attention naive and fused, forward and backward, causal and not") {
    std::mt19937 rng(64);
    const int B = 2, h = 3;
    // n = 1, 17, 33, 100, 130 lie inside one of the tuned kernels' 256-row tiles; 300 spans two,
    // the second ragged, and 512 exactly two. d_k 7, 24 and 9 are no powers of two.
    std::vector<std::array<int, 2>> shapes;
    for (int n : {1, 17, 33, 100, 130})
        for (int d_k : {7, 24, 64})
            shapes.push_back({n, d_k});
    shapes.push_back({300, 24});
    shapes.push_back({512, 9});
    for (const std::array<int, 2>& shape : shapes)
        for (bool causal : {false, true}) {
            const int n = shape[0], d_k = shape[1];
            CAPTURE(n);
            CAPTURE(d_k);
            CAPTURE(causal);
            const size_t size = (size_t)B * h * n * d_k, rows = (size_t)B * h * n;
            const AttentionInputs in(size, rng);
            const float *Q = in.Q.data(), *K = in.K.data(), *V = in.V.data(), *dO = in.dO.data();
            AttentionOutputs naive(size, rows * n), naive_(size, rows * n);  // tuned, tier
            AttentionOutputs fused(size, rows), fused_(size, rows);          // tuned, tier

            attention_naive_forward(Q, K, V, naive.O.data(), naive.saved.data(), B, h, n, d_k,
                                    causal);
            attention_naive_backward(Q, K, V, naive.saved.data(), dO, naive.dQ.data(),
                                     naive.dK.data(), naive.dV.data(), B, h, n, d_k, causal);
            reference::attention_naive_forward(Q, K, V, naive_.O.data(), naive_.saved.data(), B, h,
                                               n, d_k, causal);
            reference::attention_naive_backward(Q, K, V, naive_.saved.data(), dO, naive_.dQ.data(),
                                                naive_.dK.data(), naive_.dV.data(), B, h, n, d_k,
                                                causal);
            attention_fused_forward(Q, K, V, fused.O.data(), fused.saved.data(), B, h, n, d_k,
                                    causal);
            attention_fused_backward(Q, K, V, fused.O.data(), fused.saved.data(), dO,
                                     fused.dQ.data(), fused.dK.data(), fused.dV.data(), B, h, n,
                                     d_k, causal);
            reference::attention_fused_forward(Q, K, V, fused_.O.data(), fused_.saved.data(), B, h,
                                               n, d_k, causal);
            reference::attention_fused_backward(Q, K, V, fused_.O.data(), fused_.saved.data(), dO,
                                                fused_.dQ.data(), fused_.dK.data(),
                                                fused_.dV.data(), B, h, n, d_k, causal);

            check_gradients(naive, naive_, "naive");
            check_gradients(fused, fused_, "fused");
            check_gradients(fused, naive, "tuned fused against tuned naive");
            // P = exp(S - m) / l: an absolute error e in S (float32 sums of d_k products of
            // 1.5-scaled normals, |S| up to ~10: e ~ 1e-6) is a relative error e in P, and
            // exp_fast adds 1-2 ulp; P <= 1.
            CHECK(testutil::allclose(naive.saved, naive_.saved, 1e-6, 1e-5, "P"));
            // L = m + log(l): the error of S (~1e-6 absolute, as for P) plus the relative error
            // of l (a float32 sum of exp_fast's), |L| up to ~10.
            CHECK(testutil::allclose(fused.saved, fused_.saved, 1e-5, 1e-6, "L"));
        }
}

TEST_CASE("chapter 6 reference: the tier's FlashAttention-2 is its naive algorithm, any tiles") {
    // Tiles of one row or key, tiles that do not divide n, and one tile larger than n: the online
    // softmax must give what softmax over the whole row gives. Both sides add up in double and
    // store float32, so what differs is the rounding of the stored O and L (half an ulp) that
    // the fused backward reads: at |L| ~ 10 that is 5e-7, a relative error as large in the
    // recomputed P, and so in dQ, dK and dV.
    std::mt19937 rng(66);
    const int B = 1, h = 2, d_k = 7;
    for (int n : {1, 17, 33})
        for (const std::array<int, 2>& tile : {std::array<int, 2>{1, 1}, {4, 7}, {16, 5}, {64, 64}})
            for (bool causal : {false, true}) {
                const int Br = tile[0], Bc = tile[1];
                CAPTURE(n);
                CAPTURE(Br);
                CAPTURE(Bc);
                CAPTURE(causal);
                const size_t size = (size_t)B * h * n * d_k, rows = (size_t)B * h * n;
                const AttentionInputs in(size, rng);
                const float *Q = in.Q.data(), *K = in.K.data(), *V = in.V.data(),
                            *dO = in.dO.data();
                AttentionOutputs naive(size, rows * n), fused(size, rows);
                reference::attention_naive_forward(Q, K, V, naive.O.data(), naive.saved.data(), B,
                                                   h, n, d_k, causal);
                reference::attention_naive_backward(Q, K, V, naive.saved.data(), dO,
                                                    naive.dQ.data(), naive.dK.data(),
                                                    naive.dV.data(), B, h, n, d_k, causal);
                reference::attention_fused_forward(Q, K, V, fused.O.data(), fused.saved.data(), B,
                                                   h, n, d_k, causal, Br, Bc);
                reference::attention_fused_backward(Q, K, V, fused.O.data(), fused.saved.data(), dO,
                                                    fused.dQ.data(), fused.dK.data(),
                                                    fused.dV.data(), B, h, n, d_k, causal, Br, Bc);
                CHECK(testutil::allclose(fused.O, naive.O, 1e-7, 1e-6, "O"));
                CHECK(testutil::allclose(fused.dQ, naive.dQ, 1e-6, 1e-5, "dQ"));
                CHECK(testutil::allclose(fused.dK, naive.dK, 1e-6, 1e-5, "dK"));
                CHECK(testutil::allclose(fused.dV, naive.dV, 1e-6, 1e-5, "dV"));
            }
}

TEST_CASE("chapter 6 reference: lstm_forward and lstm_backward, n steps of the reference step") {
    std::mt19937 rng(67);
    struct Shape {
        int n, B, d;
        float scale;  // of the weights: pre-activations of a few units, gates not all saturated
    };
    // d 260 with B 8 is big enough that the tuned chain splits its units between two threads
    // (130 each, no whole K slice of sgemm).
    for (const Shape& shape : {Shape{1, 1, 1, 0.5f}, Shape{5, 3, 7, 0.5f}, Shape{17, 2, 33, 0.5f},
                               Shape{9, 18, 20, 0.5f}, Shape{3, 8, 260, 0.1f}}) {
        const int n = shape.n, B = shape.B, d = shape.d;
        CAPTURE(n);
        CAPTURE(B);
        CAPTURE(d);
        const size_t Bd = (size_t)B * d;
        const Vec x = normal(n * Bd, rng);                             // (n, B, d)
        const Vec W_ih = normal((size_t)4 * d * d, rng, shape.scale);  // (4d, d)
        const Vec W_hh = normal((size_t)4 * d * d, rng, shape.scale);  // (4d, d)
        const Vec b = normal((size_t)4 * d, rng, shape.scale);         // (4d)
        const Vec dh_out = normal(n * Bd, rng);                        // (n, B, d)
        // Garbage everywhere: h[0] = c[0] = 0 and every gradient are the kernels' to write.
        struct Run {
            Vec h, c, gates, dx, dW_ih, dW_hh, db;
        };
        Run tuned, tier;
        for (Run* r : {&tuned, &tier}) {
            r->h.assign((n + 1) * Bd, 7.0f), r->c.assign((n + 1) * Bd, 7.0f);  // (n + 1, B, d)
            r->gates.assign(n * 4 * Bd, 7.0f);                                 // (n, B, 4d)
            r->dx.assign(n * Bd, 5.0f), r->dW_ih.assign(W_ih.size(), 5.0f);
            r->dW_hh.assign(W_hh.size(), 5.0f), r->db.assign(b.size(), 5.0f);
        }
        lstm_forward(x.data(), W_ih.data(), W_hh.data(), b.data(), n, B, d, tuned.h.data(),
                     tuned.c.data(), tuned.gates.data());
        lstm_backward(x.data(), W_ih.data(), W_hh.data(), tuned.h.data(), tuned.c.data(),
                      tuned.gates.data(), dh_out.data(), n, B, d, tuned.dx.data(),
                      tuned.dW_ih.data(), tuned.dW_hh.data(), tuned.db.data());
        reference::lstm_forward(x.data(), W_ih.data(), W_hh.data(), b.data(), n, B, d,
                                tier.h.data(), tier.c.data(), tier.gates.data());
        reference::lstm_backward(x.data(), W_ih.data(), W_hh.data(), tier.h.data(), tier.c.data(),
                                 tier.gates.data(), dh_out.data(), n, B, d, tier.dx.data(),
                                 tier.dW_ih.data(), tier.dW_hh.data(), tier.db.data());
        // exp_fast's 1-2 ulp in every sigmoid and tanh, float32 sums of 2d products in each
        // pre-activation, carried through n steps of c: a few 1e-6 relative, held by 2e-5 +
        // 1e-4 |ref|. The gradients are sgemm's float32 sums over 4d, d or n B products of
        // values that carry that error: the same tolerance holds them.
        const std::pair<const Vec*, const Vec*> pairs[] = {
            {&tuned.h, &tier.h},   {&tuned.c, &tier.c},         {&tuned.gates, &tier.gates},
            {&tuned.dx, &tier.dx}, {&tuned.dW_ih, &tier.dW_ih}, {&tuned.dW_hh, &tier.dW_hh},
            {&tuned.db, &tier.db}};
        const char* names[] = {"h", "c", "gates", "dx", "dW_ih", "dW_hh", "db"};
        for (int k = 0; k < 7; k++)
            CHECK(testutil::allclose(*pairs[k].first, *pairs[k].second, 2e-5, 1e-4, names[k]));
    }
}
