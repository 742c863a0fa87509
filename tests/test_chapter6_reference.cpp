// chapters/6-cost/reference.h, the plain-loop tier, holds every tuned kernel in common/kernels/:
// both are called on the same buffers at ragged shapes (n = 1, 17, 33, 100, 300; d_k not a power
// of two; M, N, K across the micro-kernel's, the panels' and the K slices' edges), causal and
// not, and agree within what float32 summation and exp_fast's rounding explain. The tier's
// FlashAttention-2 is held to its own naive algorithm at every tile size.
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

// sgemm sums K products of numbers in [-1, 1] in float32, each step rounded (eps = 6e-8): the
// error of a sum grows like sqrt(K) eps times its terms, and the tier's double sum has none to
// speak of. The bound tests/test_gemm.cpp holds sgemm to.
double gemm_atol(int K) { return 1e-5 * std::sqrt(K + 1.0) * 4; }
constexpr double GEMM_RTOL = 1e-5;

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
                const int M = mnk[0], N = mnk[1], K = mnk[2], pad = 3;
                const bool ta = t & 1, tb = t & 2;
                const float alpha = ab[0], beta = ab[1];
                CAPTURE(M);
                CAPTURE(N);
                CAPTURE(K);
                CAPTURE(ta);
                CAPTURE(tb);
                CAPTURE(beta);
                const int lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
                const Vec A = uniform((size_t)(ta ? K : M) * lda, rng);  // op(A) (M, K)
                const Vec B = uniform((size_t)(tb ? N : K) * ldb, rng);  // op(B) (K, N)
                Vec C = uniform((size_t)M * ldc, rng);                   // (M, N), ldc apart
                if (beta == 0.0f)  // beta = 0 ignores C, even NaN
                    for (int i = 0; i < M; i++)
                        for (int j = 0; j < N; j++)
                            C[(size_t)i * ldc + j] = std::numeric_limits<float>::quiet_NaN();
                Vec ref = C;
                sgemm(ta, tb, M, N, K, alpha, A.data(), lda, B.data(), ldb, beta, C.data(), ldc);
                reference::sgemm(ta, tb, M, N, K, alpha, A.data(), lda, B.data(), ldb, beta,
                                 ref.data(), ldc);
                // |alpha| and |beta| up to 1.5 scale the terms, and so the error, by as much
                CHECK(testutil::allclose(C, ref, 1.5 * gemm_atol(K), GEMM_RTOL, "C"));
            }
}

TEST_CASE("chapter 6 reference: sgemm_packed_b, op(B) packed once, op(A) read in place") {
    std::mt19937 rng(62);
    const int NR = sgemm_panel_width();
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (int M : {1, 17, 33, 100})
                for (const std::array<int, 2>& kn :
                     {std::array<int, 2>{1, 1}, {33, 17}, {300, 5 * NR + 3}, {100, NR}})
                    for (float beta : {0.0f, 1.0f}) {
                        const int K = kn[0], N = kn[1];
                        CAPTURE(ta);
                        CAPTURE(tb);
                        CAPTURE(M);
                        CAPTURE(K);
                        CAPTURE(N);
                        CAPTURE(beta);
                        const int lda = (ta ? M : K) + 2, ldb = tb ? K : N;
                        const Vec A = uniform((size_t)(ta ? K : M) * lda, rng);  // op(A) (M, K)
                        const Vec B = uniform((size_t)K * N, rng);               // op(B) (K, N)
                        Vec Bp(sgemm_packed_b_floats(K, N));  // op(B) in panels of NR
                        sgemm_pack_b(tb != 0, K, N, B.data(), ldb, Bp.data());
                        Vec C = uniform((size_t)M * N, rng), ref = C;  // (M, N)
                        sgemm_packed_b(ta != 0, M, N, K, 0.5f, A.data(), lda, Bp.data(),
                                       (long)K * NR, beta, C.data(), N);
                        reference::sgemm(ta != 0, tb != 0, M, N, K, 0.5f, A.data(), lda, B.data(),
                                         ldb, beta, ref.data(), N);
                        CHECK(testutil::allclose(C, ref, gemm_atol(K), GEMM_RTOL, "C"));
                    }
}

TEST_CASE("chapter 6 reference: sgemm_small, tiny products in every transpose") {
    std::mt19937 rng(63);
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (const std::array<int, 3>& mnk : {std::array<int, 3>{1, 1, 1},
                                                  {17, 33, 7},
                                                  {33, 17, 64},
                                                  {64, 64, 64},
                                                  {5, 63, 17},
                                                  {9, 9, 33}})
                for (int accumulate = 0; accumulate < 2; accumulate++) {
                    const int M = mnk[0], N = mnk[1], K = mnk[2], pad = 3;
                    CAPTURE(ta);
                    CAPTURE(tb);
                    CAPTURE(M);
                    CAPTURE(N);
                    CAPTURE(K);
                    CAPTURE(accumulate);
                    const int lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
                    const Vec A = uniform((size_t)(ta ? K : M) * lda, rng);  // op(A) (M, K)
                    const Vec B = uniform((size_t)(tb ? N : K) * ldb, rng);  // op(B) (K, N)
                    Vec C = uniform((size_t)M * ldc, rng), ref = C;          // (M, N), ldc apart
                    sgemm_small(ta != 0, tb != 0, M, N, K, A.data(), lda, B.data(), ldb,
                                accumulate != 0, C.data(), ldc);
                    reference::sgemm(ta != 0, tb != 0, M, N, K, 1.0f, A.data(), lda, B.data(), ldb,
                                     accumulate ? 1.0f : 0.0f, ref.data(), ldc);
                    CHECK(testutil::allclose(C, ref, gemm_atol(K), GEMM_RTOL, "C"));
                }
}

namespace {

struct AttentionShape {
    int n, d_k;
};
// n = 1, 17, 33, 100 (inside one of the tuned kernels' 256-row tiles) and 300 (two, the second
// ragged); d_k 7 and 24 are no powers of two, 64 is the article's.
std::vector<AttentionShape> attention_shapes() {
    std::vector<AttentionShape> shapes;
    for (int n : {1, 17, 33, 100})
        for (int d_k : {7, 24, 64})
            shapes.push_back({n, d_k});
    shapes.push_back({300, 24});
    return shapes;
}

// Q and K scaled by 1.5, so that the scores spread and the softmax is far from uniform.
struct AttentionInputs {
    Vec Q, K, V, dO;  // (B, h, n, d_k)
    AttentionInputs(size_t size, std::mt19937& rng)
        : Q(normal(size, rng, 1.5f)),
          K(normal(size, rng, 1.5f)),
          V(normal(size, rng)),
          dO(normal(size, rng)) {}
};

// The tolerance of every attention output, the one tests/test_attention.cpp holds O and dV to
// against its double oracle. The tuned kernels form S from float32 sums of d_k products, P from
// exp_fast (1-2 ulp) and float32 row sums, and O, dV, dQ and dK from float32 sums of n products:
// each step adds a few 1e-7 relative, dS = P (dP - D) enlarges it where dP and D nearly cancel,
// and 1e-4 relative (1e-5 absolute near 0) holds all of that with room.
constexpr double ATOL = 1e-5, RTOL = 1e-4;

}  // namespace

TEST_CASE("chapter 6 reference: attention_naive_forward and _backward, causal and not") {
    std::mt19937 rng(64);
    const int B = 2, h = 3;
    for (const AttentionShape& shape : attention_shapes())
        for (bool causal : {false, true}) {
            const int n = shape.n, d_k = shape.d_k;
            CAPTURE(n);
            CAPTURE(d_k);
            CAPTURE(causal);
            const size_t size = (size_t)B * h * n * d_k, nn = (size_t)B * h * n * n;
            const AttentionInputs in(size, rng);
            Vec O(size), P(nn), dQ(size), dK(size), dV(size);       // the tuned kernels'
            Vec O_(size), P_(nn), dQ_(size), dK_(size), dV_(size);  // the tier's
            attention_naive_forward(in.Q.data(), in.K.data(), in.V.data(), O.data(), P.data(), B, h,
                                    n, d_k, causal);
            reference::attention_naive_forward(in.Q.data(), in.K.data(), in.V.data(), O_.data(),
                                               P_.data(), B, h, n, d_k, causal);
            attention_naive_backward(in.Q.data(), in.K.data(), in.V.data(), P.data(), in.dO.data(),
                                     dQ.data(), dK.data(), dV.data(), B, h, n, d_k, causal);
            reference::attention_naive_backward(in.Q.data(), in.K.data(), in.V.data(), P_.data(),
                                                in.dO.data(), dQ_.data(), dK_.data(), dV_.data(), B,
                                                h, n, d_k, causal);
            CHECK(testutil::allclose(O, O_, ATOL, RTOL, "O"));
            // P = exp(S - m) / l: an absolute error e in S (float32 sums of d_k products of
            // 1.5-scaled normals, |S| up to ~10: e ~ 1e-6) is a relative error e in P, and
            // exp_fast adds 1-2 ulp; P <= 1.
            CHECK(testutil::allclose(P, P_, 1e-6, 1e-5, "P"));
            CHECK(testutil::allclose(dQ, dQ_, ATOL, RTOL, "dQ"));
            CHECK(testutil::allclose(dK, dK_, ATOL, RTOL, "dK"));
            CHECK(testutil::allclose(dV, dV_, ATOL, RTOL, "dV"));
        }
}

TEST_CASE("chapter 6 reference: attention_fused_forward and _backward, causal and not") {
    std::mt19937 rng(65);
    const int B = 2, h = 3;
    for (const AttentionShape& shape : attention_shapes())
        for (bool causal : {false, true}) {
            const int n = shape.n, d_k = shape.d_k;
            CAPTURE(n);
            CAPTURE(d_k);
            CAPTURE(causal);
            const size_t size = (size_t)B * h * n * d_k, rows = (size_t)B * h * n;
            const AttentionInputs in(size, rng);
            // The tuned kernels' outputs start as garbage: they must overwrite, not add.
            Vec O(size, 9.0f), L(rows, 9.0f), dQ(size, 9.0f), dK(size, 9.0f), dV(size, 9.0f);
            Vec O_(size), L_(rows), dQ_(size), dK_(size), dV_(size);  // the tier's
            attention_fused_forward(in.Q.data(), in.K.data(), in.V.data(), O.data(), L.data(), B, h,
                                    n, d_k, causal);
            reference::attention_fused_forward(in.Q.data(), in.K.data(), in.V.data(), O_.data(),
                                               L_.data(), B, h, n, d_k, causal);
            attention_fused_backward(in.Q.data(), in.K.data(), in.V.data(), O.data(), L.data(),
                                     in.dO.data(), dQ.data(), dK.data(), dV.data(), B, h, n, d_k,
                                     causal);
            reference::attention_fused_backward(in.Q.data(), in.K.data(), in.V.data(), O_.data(),
                                                L_.data(), in.dO.data(), dQ_.data(), dK_.data(),
                                                dV_.data(), B, h, n, d_k, causal);
            CHECK(testutil::allclose(O, O_, ATOL, RTOL, "O"));
            // L = m + log(l): the error of S (~1e-6 absolute, see the naive case's P) plus
            // the relative error of l (a float32 sum of exp_fast's), |L| up to ~10.
            CHECK(testutil::allclose(L, L_, 1e-5, 1e-6, "L"));
            CHECK(testutil::allclose(dQ, dQ_, ATOL, RTOL, "dQ"));
            CHECK(testutil::allclose(dK, dK_, ATOL, RTOL, "dK"));
            CHECK(testutil::allclose(dV, dV_, ATOL, RTOL, "dV"));
        }
}

TEST_CASE("chapter 6 reference: the tier's FlashAttention-2 is its naive algorithm, any tiles") {
    // Tiles of one row or key, tiles that do not divide n, and one tile larger than n: the online
    // softmax must give what softmax over the whole row gives. Both sides add up in double and
    // store float32, so what differs is the rounding of the stored O and L (half an ulp) that
    // the fused backward reads: at |L| ~ 10 that is 5e-7, a relative error as large in the
    // recomputed P, and so in dQ, dK and dV.
    std::mt19937 rng(66);
    const int B = 1, h = 2;
    for (int n : {1, 17, 33})
        for (const std::array<int, 2>& tile : {std::array<int, 2>{1, 1}, {4, 7}, {16, 5}, {64, 64}})
            for (bool causal : {false, true}) {
                const int d_k = 7, Br = tile[0], Bc = tile[1];
                CAPTURE(n);
                CAPTURE(Br);
                CAPTURE(Bc);
                CAPTURE(causal);
                const size_t size = (size_t)B * h * n * d_k;
                const AttentionInputs in(size, rng);
                Vec O(size), P((size_t)B * h * n * n), dQ(size), dK(size), dV(size);   // naive
                Vec O_(size), L_((size_t)B * h * n), dQ_(size), dK_(size), dV_(size);  // fused
                reference::attention_naive_forward(in.Q.data(), in.K.data(), in.V.data(), O.data(),
                                                   P.data(), B, h, n, d_k, causal);
                reference::attention_naive_backward(in.Q.data(), in.K.data(), in.V.data(), P.data(),
                                                    in.dO.data(), dQ.data(), dK.data(), dV.data(),
                                                    B, h, n, d_k, causal);
                reference::attention_fused_forward(in.Q.data(), in.K.data(), in.V.data(), O_.data(),
                                                   L_.data(), B, h, n, d_k, causal, Br, Bc);
                reference::attention_fused_backward(
                    in.Q.data(), in.K.data(), in.V.data(), O_.data(), L_.data(), in.dO.data(),
                    dQ_.data(), dK_.data(), dV_.data(), B, h, n, d_k, causal, Br, Bc);
                CHECK(testutil::allclose(O_, O, 1e-7, 1e-6, "O"));
                CHECK(testutil::allclose(dQ_, dQ, 1e-6, 1e-5, "dQ"));
                CHECK(testutil::allclose(dK_, dK, 1e-6, 1e-5, "dK"));
                CHECK(testutil::allclose(dV_, dV, 1e-6, 1e-5, "dV"));
            }
}

TEST_CASE("chapter 6 reference: lstm_forward and lstm_backward are n reference steps") {
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
        const long Bd = (long)B * d;
        const Vec x = normal((size_t)n * Bd, rng);                     // (n, B, d)
        const Vec W_ih = normal((size_t)4 * d * d, rng, shape.scale);  // (4d, d)
        const Vec W_hh = normal((size_t)4 * d * d, rng, shape.scale);  // (4d, d)
        const Vec b = normal((size_t)4 * d, rng, shape.scale);         // (4d)
        const Vec dh_out = normal((size_t)n * Bd, rng);                // (n, B, d)

        // Garbage in h and c: h[0] = c[0] = 0 is the kernel's to write.
        Vec h((n + 1) * Bd, 7.0f), c((n + 1) * Bd, 7.0f), gates(n * 4 * Bd);     // the tuned
        Vec h_((n + 1) * Bd, 0.0f), c_((n + 1) * Bd, 0.0f), gates_(n * 4 * Bd);  // the tier's
        lstm_forward(x.data(), W_ih.data(), W_hh.data(), b.data(), n, B, d, h.data(), c.data(),
                     gates.data());
        for (int t = 0; t < n; t++)
            reference::lstm_step_forward(x.data() + t * Bd, h_.data() + t * Bd, c_.data() + t * Bd,
                                         W_ih.data(), W_hh.data(), b.data(), B, d,
                                         h_.data() + (t + 1) * Bd, c_.data() + (t + 1) * Bd,
                                         gates_.data() + t * 4 * Bd);
        // The tolerance tests/test_lstm.cpp holds h to against torch's equations in double:
        // exp_fast's 1-2 ulp in every sigmoid and tanh, float32 sums of 2d products in each
        // pre-activation, carried through n steps of c.
        CHECK(testutil::allclose(h, h_, 2e-5, 1e-4, "h"));
        CHECK(testutil::allclose(c, c_, 2e-5, 1e-4, "c"));
        CHECK(testutil::allclose(gates, gates_, 2e-5, 1e-4, "gates"));

        Vec dx(n * Bd, 5.0f), dW_ih(W_ih.size(), 5.0f), dW_hh(W_hh.size(), 5.0f),
            db(b.size(), 5.0f);  // garbage: the tuned kernel overwrites
        lstm_backward(x.data(), W_ih.data(), W_hh.data(), h.data(), c.data(), gates.data(),
                      dh_out.data(), n, B, d, dx.data(), dW_ih.data(), dW_hh.data(), db.data());
        // The tier walks the steps back, each one's dW and db added up.
        Vec dx_(n * Bd), dW_ih_(W_ih.size(), 0.0f), dW_hh_(W_hh.size(), 0.0f), db_(b.size(), 0.0f);
        Vec dh(Bd), dh_next(Bd, 0.0f), dc_next(Bd, 0.0f), dc_prev(Bd);  // (B, d) each
        for (int t = n - 1; t >= 0; t--) {
            for (long k = 0; k < Bd; k++)
                dh[k] = dh_out[t * Bd + k] + dh_next[k];
            reference::lstm_step_backward(x.data() + t * Bd, h_.data() + t * Bd, c_.data() + t * Bd,
                                          c_.data() + (t + 1) * Bd, gates_.data() + t * 4 * Bd,
                                          W_ih.data(), W_hh.data(), dh.data(), dc_next.data(), B, d,
                                          dx_.data() + t * Bd, dh_next.data(), dc_prev.data(),
                                          dW_ih_.data(), dW_hh_.data(), db_.data());
            dc_next = dc_prev;
        }
        // The gradients: sgemm's float32 sums over 4d, d or n B products of values that carry
        // the forward's error (the tolerance of h above), and tanh_fast's 1-2 ulp again: h's
        // tolerance holds them too.
        CHECK(testutil::allclose(dx, dx_, 2e-5, 1e-4, "dx"));
        CHECK(testutil::allclose(dW_ih, dW_ih_, 2e-5, 1e-4, "dW_ih"));
        CHECK(testutil::allclose(dW_hh, dW_hh_, 2e-5, 1e-4, "dW_hh"));
        CHECK(testutil::allclose(db, db_, 2e-5, 1e-4, "db"));
    }
}
