// common/kernels/gemm: the packed, register-blocked sgemm against the textbook triple loop
// (chapter 6's reference::sgemm), at shapes that leave ragged edges in every blocking level, with
// transposes, strides, alpha and beta.
#include "chapters/6-cost/reference.h"
#include "common/kernels/exp_fast.h"
#include "common/kernels/gemm.h"
#include "tests/util.h"

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <utility>
#include <vector>

namespace {

struct Case {
    bool ta, tb;
    int M, N, K;
    float alpha, beta;
    int pad = 0;  // extra columns in every leading dimension (a sub-matrix of a wider array)
};

// Runs one case through sgemm and reference::sgemm and compares C.
bool check(const Case& c, std::mt19937& rng) {
    std::uniform_real_distribution<float> U(-1.0f, 1.0f);
    const int lda = (c.ta ? c.M : c.K) + c.pad;
    const int ldb = (c.tb ? c.K : c.N) + c.pad;
    const int ldc = c.N + c.pad;
    std::vector<float> A((size_t)(c.ta ? c.K : c.M) * lda), B((size_t)(c.tb ? c.N : c.K) * ldb);
    std::vector<float> C((size_t)c.M * ldc);
    for (auto& x : A) x = U(rng);
    for (auto& x : B) x = U(rng);
    for (auto& x : C) x = U(rng);
    if (c.beta == 0.0f)  // beta = 0 must ignore C, even NaN
        for (auto& x : C) x = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> ref = C;
    sgemm(c.ta, c.tb, c.M, c.N, c.K, c.alpha, A.data(), lda, B.data(), ldb, c.beta, C.data(), ldc);
    reference::sgemm(c.ta, c.tb, c.M, c.N, c.K, c.alpha, A.data(), lda, B.data(), ldb, c.beta,
                     ref.data(), ldc);
    // Only the M x N window may change; padding columns stay as they were.
    for (int i = 0; i < c.M; i++)
        for (int j = c.N; j < ldc; j++)
            if (!(C[(size_t)i * ldc + j] == ref[(size_t)i * ldc + j]) &&
                !(std::isnan(C[(size_t)i * ldc + j]) && std::isnan(ref[(size_t)i * ldc + j])))
                return false;
    // float32 sums of K products of numbers in [-1, 1]: error grows like sqrt(K) * eps.
    const double atol = 1e-5 * std::sqrt((double)c.K + 1) * 4;
    std::vector<float> got_w, ref_w;
    for (int i = 0; i < c.M; i++)
        for (int j = 0; j < c.N; j++) {
            got_w.push_back(C[(size_t)i * ldc + j]);
            ref_w.push_back(ref[(size_t)i * ldc + j]);
        }
    return testutil::allclose(got_w, ref_w, atol, 1e-5, "C");
}

// The softmax loops' shape: GCC turns this into 8- (or 16-) wide vector code.
__attribute__((noinline)) void exp_loop(const float* x, float* y, int n) {
#pragma omp simd
    for (int i = 0; i < n; i++) y[i] = exp_fast(x[i]);
}

}  // namespace

TEST_CASE("gemm: A read in place, every row count of the micro-kernel, is packed A bit for bit") {
    // sgemm_packed_b reads op(A) where it lies (common/kernels/gemm.cpp, AMode::rows and
    // AMode::cols: a row-major A through row pointers three rows apart, a transposed A through one
    // pointer); sgemm packs A first. Each row count 1..MR (M up to 25: every edge tile, alone and
    // after whole tiles) in both layouts, with K across a KC slice and a ragged last column panel:
    // the same C bit for bit, and the reference's within rounding.
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> U(-1.0f, 1.0f);
    const int NR = sgemm_panel_width(), K = sgemm_k_slice() + 44, N = 5 * NR + 3;
    std::vector<float> B((size_t)K * N);
    for (auto& v : B) v = U(rng);
    std::vector<float> Bp(sgemm_packed_b_floats(K, N));
    sgemm_pack_b(false, K, N, B.data(), N, Bp.data());
    for (int ta = 0; ta < 2; ta++)
        for (int M = 1; M <= 25; M++)
            for (float beta : {0.0f, 1.0f}) {
                CAPTURE(ta);
                CAPTURE(M);
                CAPTURE(beta);
                const int lda = (ta ? M : K) + 3;
                std::vector<float> A((size_t)(ta ? K : M) * lda), C0((size_t)M * N);
                for (auto& v : A) v = U(rng);
                for (auto& v : C0) v = U(rng);
                std::vector<float> packed = C0, in_place = C0, ref = C0;
                sgemm(ta != 0, false, M, N, K, 0.5f, A.data(), lda, B.data(), N, beta,
                      packed.data(), N);
                sgemm_packed_b(ta != 0, M, N, K, 0.5f, A.data(), lda, Bp.data(), (long)K * NR,
                               beta, in_place.data(), N);
                reference::sgemm(ta != 0, false, M, N, K, 0.5f, A.data(), lda, B.data(), N, beta,
                                 ref.data(), N);
                CHECK(std::memcmp(packed.data(), in_place.data(), packed.size() * 4) == 0);
                CHECK(testutil::allclose(in_place, ref, 1e-5 * std::sqrt(K + 1.0) * 4, 1e-5, "C"));
            }
}

TEST_CASE("gemm: every awkward shape combination matches the reference") {
    std::mt19937 rng(1);
    const int sizes[] = {1, 7, 17, 33, 100, 257};
    int index = 0;
    for (int M : sizes)
        for (int N : sizes)
            for (int K : sizes) {
                // Cycle the transposes and the alpha/beta cases through the grid.
                Case c{(index & 1) != 0, (index & 2) != 0, M, N, K, 1.0f, 0.0f};
                if (index % 3 == 1) c.beta = 1.0f;
                if (index % 3 == 2) c.alpha = -0.5f, c.beta = 0.25f;
                c.pad = index % 5 == 0 ? 3 : 0;
                index++;
                CAPTURE(M);
                CAPTURE(N);
                CAPTURE(K);
                CAPTURE(c.ta);
                CAPTURE(c.tb);
                CHECK(check(c, rng));
            }
}

TEST_CASE("gemm: all four transpose combinations with alpha, beta and strides") {
    std::mt19937 rng(2);
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (float beta : {0.0f, 1.0f, -0.75f}) {
                CAPTURE(ta);
                CAPTURE(tb);
                CAPTURE(beta);
                CHECK(check({ta != 0, tb != 0, 100, 257, 33, 1.5f, beta, 5}, rng));
                CHECK(check({ta != 0, tb != 0, 7, 33, 100, -1.0f, beta, 0}, rng));   // few rows
                CHECK(check({ta != 0, tb != 0, 16, 17, 1, 2.0f, beta, 1}, rng));     // K = 1
            }
}

TEST_CASE("gemm: shapes that cross every cache block and use both threads") {
    std::mt19937 rng(3);
    // K > KC (slices accumulate), M > MC (several L2 blocks), N > NC (two L3 blocks), N > NB
    // (two blocks of B where A is read in place), at the blocking of a 1 MB L2 and a 32 MB L3,
    // whatever this CPU's.
    const SgemmBlocking chosen = sgemm_blocking();
    sgemm_set_blocking(144, 4096, 512);
    CHECK(check({false, false, 300, 520, 600, 1.0f, 0.5f}, rng));
    CHECK(check({true, true, 301, 263, 513, 1.0f, 0.0f}, rng));
    CHECK(check({false, true, 9, 4100, 37, 1.0f, 0.0f}, rng));   // wide and short: column split
    CHECK(check({false, false, 9, 4100, 300, 1.0f, 1.0f}, rng));  // B read in place
    CHECK(check({true, false, 40, 4113, 20, 0.5f, 0.0f}, rng));
    CHECK(check({false, false, 100, 1100, 600, 1.0f, 0.5f}, rng));  // A in place, 3 B blocks
    CHECK(check({false, true, 100, 1100, 600, 1.0f, 0.0f}, rng));
    sgemm_set_blocking(chosen.mc, chosen.nc, chosen.nb);
}

// Packing is only copying: op(A) and op(B) read from a transposed array pack into the same
// panels as from a plain one, so all four transpose combinations of the same product give C bit
// for bit alike. The shapes put the transposing packs (16 rows x 8 columns at a time in
// registers with AVX-512) at every edge: M below, at and above MR (12 with AVX-512), N across the
// groups of 16 in a panel of NR (32), K below 8, at ragged ends of 8 and across 16 and KC (256),
// narrow C (A read in place).
TEST_CASE("gemm: the four transpose combinations give the same C bit for bit") {
    std::mt19937 rng(4);
    std::uniform_real_distribution<float> U(-1.0f, 1.0f);
    for (int M : {1, 5, 11, 12, 13, 24, 37, 150})
        for (int N : {1, 15, 16, 17, 31, 33, 129, 161})
            for (int K : {1, 15, 16, 17, 50, 257}) {
                CAPTURE(M);
                CAPTURE(N);
                CAPTURE(K);
                std::vector<float> A((size_t)M * K), At((size_t)K * M);  // (M, K), (K, M)
                std::vector<float> B((size_t)K * N), Bt((size_t)N * K);  // (K, N), (N, K)
                for (int i = 0; i < M; i++)
                    for (int k = 0; k < K; k++)
                        At[(size_t)k * M + i] = A[(size_t)i * K + k] = U(rng);
                for (int k = 0; k < K; k++)
                    for (int j = 0; j < N; j++)
                        Bt[(size_t)j * K + k] = B[(size_t)k * N + j] = U(rng);
                std::vector<float> C0((size_t)M * N);  // (M, N), each transpose combination
                sgemm(false, false, M, N, K, 1.0f, A.data(), K, B.data(), N, 0.0f, C0.data(), N);
                for (int t = 1; t < 4; t++) {
                    const bool ta = t & 1, tb = t & 2;
                    CAPTURE(ta);
                    CAPTURE(tb);
                    std::vector<float> C((size_t)M * N);
                    sgemm(ta, tb, M, N, K, 1.0f, ta ? At.data() : A.data(), ta ? M : K,
                          tb ? Bt.data() : B.data(), tb ? K : N, 0.0f, C.data(), N);
                    CHECK(std::memcmp(C.data(), C0.data(), C.size() * sizeof(float)) == 0);
                }
            }
}

// A transposed A that feeds a narrow C (N <= 4 NR) is read in place (sgemm_a_in_place with
// AMode::cols), on two threads split by rows; a wider C packs it. Either way C is, bit for bit,
// what the same product gives from a row-major copy of A. The shapes: N at one, four and five
// panels and ragged, K across two KC slices, lda padded and lda = 1024 (rows 4 KB apart, as P in
// the naive attention backward's P^T dO), B in place (N floats apart) and transposed (packed).
TEST_CASE("gemm: a transposed A feeding a narrow C, read in place, is row-major A bit for bit") {
    std::mt19937 rng(6);
    std::uniform_real_distribution<float> U(-1.0f, 1.0f);
    const int M = 300, K = 2 * sgemm_k_slice() + 37;
    for (int N : {32, 64, 100, 128, 129})
        for (int lda : {M + 4, 1024})
            for (int tb = 0; tb < 2; tb++) {
                CAPTURE(N);
                CAPTURE(lda);
                CAPTURE(tb);
                std::vector<float> At((size_t)K * lda), A((size_t)M * K);  // (K, lda), (M, K)
                for (int k = 0; k < K; k++)
                    for (int i = 0; i < M; i++)
                        A[(size_t)i * K + k] = At[(size_t)k * lda + i] = U(rng);
                std::vector<float> B((size_t)K * N);  // (K, N) or (N, K)
                for (auto& x : B) x = U(rng);
                const int ldb = tb ? K : N;
                std::vector<float> C0((size_t)M * N), C1((size_t)M * N);  // (M, N)
                for (size_t i = 0; i < C0.size(); i++) C0[i] = C1[i] = U(rng);
                sgemm(false, tb, M, N, K, 0.5f, A.data(), K, B.data(), ldb, 1.0f, C0.data(), N);
                sgemm(true, tb, M, N, K, 0.5f, At.data(), lda, B.data(), ldb, 1.0f, C1.data(), N);
                CHECK(std::memcmp(C0.data(), C1.data(), C0.size() * sizeof(float)) == 0);
            }
}

// The naive attention backward (common/kernels/attention.cpp) builds dV = P^T dO and dK = dS^T Q a
// block of sgemm_k_slice() rows of P and dS at a time, and promises the whole products' bits.
TEST_CASE("gemm: a product split along K at sgemm_k_slice() is the whole product, bit for bit") {
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> U(-1.0f, 1.0f);
    const int KS = sgemm_k_slice();
    auto same = [&](bool ta, bool tb, int M, int N, int K, float alpha) {
        std::vector<float> A((size_t)M * K), B((size_t)K * N);  // op(A) (M, K), op(B) (K, N)
        for (auto& x : A) x = U(rng);
        for (auto& x : B) x = U(rng);
        const int lda = ta ? M : K, ldb = tb ? K : N;
        std::vector<float> whole((size_t)M * N), parts((size_t)M * N);  // (M, N)
        sgemm(ta, tb, M, N, K, alpha, A.data(), lda, B.data(), ldb, 0.0f, whole.data(), N);
        for (int k0 = 0; k0 < K; k0 += KS) {  // op(A)'s columns and op(B)'s rows k0..k0+KS
            const float* a = A.data() + (ta ? (long)k0 * M : k0);
            const float* b = B.data() + (tb ? k0 : (long)k0 * N);
            sgemm(ta, tb, M, N, std::min(KS, K - k0), alpha, a, lda, b, ldb,
                  k0 == 0 ? 0.0f : 1.0f, parts.data(), N);
        }
        return std::memcmp(whole.data(), parts.data(), whole.size() * sizeof(float)) == 0;
    };
    for (int t = 0; t < 4; t++)
        for (int M : {7, 16, 300})  // 16: sgemm's path for few rows and a row-major B
            for (int N : {5, 64, 200})
                for (int K : {KS + 3, 3 * KS})
                    for (float alpha : {1.0f, 0.125f, 0.3f}) {
                        CAPTURE(t);
                        CAPTURE(M);
                        CAPTURE(N);
                        CAPTURE(K);
                        CAPTURE(alpha);
                        CHECK(same(t & 1, t & 2, M, N, K, alpha));
                    }
}

TEST_CASE("gemm: K = 0 or alpha = 0 only scales C") {
    std::vector<float> C = {1, 2, 3, 4}, A = {1, 1}, B = {1, 1};
    sgemm(false, false, 2, 2, 0, 1.0f, A.data(), 1, B.data(), 2, 0.5f, C.data(), 2);
    CHECK(C == std::vector<float>{0.5f, 1.0f, 1.5f, 2.0f});
    sgemm(false, false, 2, 2, 1, 0.0f, A.data(), 1, B.data(), 2, 0.0f, C.data(), 2);
    CHECK(C == std::vector<float>{0, 0, 0, 0});
}

TEST_CASE("gemm: exp_fast is within a few ulp of exp and exact at the edges") {
    double worst = 0;
    for (float x = -87.0f; x <= 88.0f; x += 0.001f) {
        const double ref = std::exp((double)x);
        worst = std::max(worst, std::fabs(exp_fast(x) - ref) / ref);
    }
    CHECK(worst < 3e-7);
    CHECK(exp_fast(0.0f) == 1.0f);
    CHECK(exp_fast(-std::numeric_limits<float>::infinity()) == 0.0f);
    CHECK(exp_fast(-100.0f) == 0.0f);
}

TEST_CASE("gemm: exp_fast in a vectorised loop: accurate, and masked scores give exactly 0") {
    std::vector<float> x, y(4003);
    for (int i = 0; i < 4000; i++) x.push_back(-87.0f + 175.0f * i / 4000);
    x.push_back(-std::numeric_limits<float>::infinity()), x.push_back(-100.0f), x.push_back(0.0f);
    exp_loop(x.data(), y.data(), (int)x.size());
    double worst = 0;
    for (int i = 0; i < 4000; i++) {
        const double ref = std::exp((double)x[i]);
        worst = std::max(worst, std::fabs(y[i] - ref) / ref);
    }
    CHECK(worst < 3e-7);
    CHECK(y[4000] == 0.0f);
    CHECK(y[4001] == 0.0f);
    CHECK(y[4002] == 1.0f);
}

TEST_CASE("gemm: B packed once, then sub-blocks of it multiplied (the FlashAttention tiles)") {
    // Pack op(B) of a (Kt, Nt) operand once; multiply op(A) by the block at rows k0.. and
    // columns j0.. (j0 a multiple of the panel width), as the fused attention does per tile.
    std::mt19937 rng(4);
    std::uniform_real_distribution<float> U(-1.0f, 1.0f);
    const int NR = sgemm_panel_width();
    const int Kt = 300, Nt = 5 * NR + 3;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (int M : {1, 7, 17, 100})
                for (const std::array<int, 4>& block :
                     {std::array<int, 4>{0, 300, 0, 5 * NR + 3},
                      std::array<int, 4>{37, 64, NR, 2 * NR},
                      std::array<int, 4>{5, 257, 2 * NR, 3 * NR + 3},
                      std::array<int, 4>{299, 1, 4 * NR, 7}})
                    for (float beta : {0.0f, 1.0f}) {
                        // plain ints: clang 14 cannot capture a binding
                        const int k0 = block[0], K = block[1], j0 = block[2], N = block[3];
                        CAPTURE(ta);
                        CAPTURE(tb);
                        CAPTURE(M);
                        CAPTURE(k0);
                        CAPTURE(K);
                        CAPTURE(j0);
                        CAPTURE(N);
                        CAPTURE(beta);
                        const int ldb = tb ? Kt : Nt;  // B stored (Kt, Nt), or (Nt, Kt) transposed
                        std::vector<float> Bfull((size_t)Kt * Nt);
                        for (auto& v : Bfull) v = U(rng);
                        std::vector<float> Bp(sgemm_packed_b_floats(Kt, Nt));
                        sgemm_pack_b(tb != 0, Kt, Nt, Bfull.data(), ldb, Bp.data());

                        const int lda = (ta ? M : K) + 2;
                        std::vector<float> A((size_t)(ta ? K : M) * lda), C((size_t)M * N);
                        for (auto& v : A) v = U(rng);
                        for (auto& v : C) v = U(rng);
                        std::vector<float> ref = C;
                        const float* Bblock = tb ? Bfull.data() + (size_t)j0 * ldb + k0
                                                 : Bfull.data() + (size_t)k0 * ldb + j0;
                        reference::sgemm(ta != 0, tb != 0, M, N, K, 0.5f, A.data(), lda, Bblock,
                                         ldb, beta, ref.data(), N);
                        sgemm_packed_b(ta != 0, M, N, K, 0.5f, A.data(), lda,
                                       Bp.data() + (long)(j0 / NR) * Kt * NR + (long)k0 * NR,
                                       (long)Kt * NR, beta, C.data(), N);
                        CHECK(testutil::allclose(C, ref, 1e-5 * std::sqrt(K + 1.0) * 4, 1e-5, "C"));
                    }
}

#if defined(__AVX512F__)
TEST_CASE("gemm: exp_fast16 (and unclamped, to 88) is exp_fast lane for lane, bit for bit") {
    // The softmax's exps go 16 at a time through exp_fast16; the scalar tail and every other
    // build through exp_fast: both must give the same floats for every x, the edges included.
    std::vector<float> x = {-std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::infinity(),
                            -1000.0f, -100.0f, -87.5f, -87.0f, -86.99f, 88.0f, 88.5f, 1000.0f,
                            0.0f, -0.0f, 1e-30f, -1e-30f};
    for (int i = 0; i <= 200000; i++) x.push_back(-104.0f + 200.0f * i / 200000);
    while (x.size() % 16) x.push_back(0.5f);
    for (size_t i = 0; i < x.size(); i += 16) {
        alignas(64) float y[16];
        _mm512_store_ps(y, exp_fast16(_mm512_loadu_ps(x.data() + i)));
        for (int l = 0; l < 16; l++) {
            const float ref = exp_fast(x[i + l]);
            CAPTURE(x[i + l]);
            if (std::memcmp(&y[l], &ref, sizeof ref) != 0) CHECK(y[l] == ref);  // fail shows both
        }
    }
    // Without the clamps, for the softmax's x <= 88 (s - max <= 0): the same floats again.
    for (size_t i = 0; i < x.size(); i += 16) {
        alignas(64) float y[16];
        _mm512_store_ps(y, exp_fast16_unclamped(_mm512_loadu_ps(x.data() + i)));
        for (int l = 0; l < 16; l++) {
            if (!(x[i + l] <= 88.0f)) continue;  // above 88 (and NaN) it is not exp_fast
            const float ref = exp_fast(x[i + l]);
            CAPTURE(x[i + l]);
            if (std::memcmp(&y[l], &ref, sizeof ref) != 0) CHECK(y[l] == ref);
        }
    }
}
#endif

TEST_CASE("gemm: sgemm_small equals sgemm bit for bit (tiny products, every transpose)") {
    // The attention's per-head products take sgemm_small; it must round exactly as sgemm does,
    // with C overwritten (beta = 0) or added to (beta = 1), in a sub-matrix of a wider array.
    std::mt19937 rng(6);
    std::uniform_real_distribution<float> U(-1.0f, 1.0f);
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (const std::array<int, 3>& mnk :
                 {std::array<int, 3>{9, 9, 16}, {10, 16, 10}, {1, 1, 1}, {5, 17, 3},
                  {16, 64, 64}, {64, 33, 7}, {4, 48, 64}, {13, 16, 32}})
                for (int accumulate = 0; accumulate < 2; accumulate++) {
                    const int M = mnk[0], N = mnk[1], K = mnk[2], pad = 3;
                    CAPTURE(ta);
                    CAPTURE(tb);
                    CAPTURE(M);
                    CAPTURE(N);
                    CAPTURE(K);
                    CAPTURE(accumulate);
                    const int lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
                    std::vector<float> A((size_t)(ta ? K : M) * lda),
                        B((size_t)(tb ? N : K) * ldb), C((size_t)M * ldc);
                    for (auto& x : A) x = U(rng);
                    for (auto& x : B) x = U(rng);
                    for (auto& x : C) x = U(rng);
                    std::vector<float> ref = C;
                    sgemm(ta != 0, tb != 0, M, N, K, 1.0f, A.data(), lda, B.data(), ldb,
                          accumulate ? 1.0f : 0.0f, ref.data(), ldc);
                    sgemm_small(ta != 0, tb != 0, M, N, K, A.data(), lda, B.data(), ldb,
                                accumulate != 0, C.data(), ldc);
                    CHECK(std::memcmp(C.data(), ref.data(), C.size() * sizeof(float)) == 0);
                }
}

// The cache blocking (MC, NC, NB) follows the CPU: any choice must give every output's bits,
// since only KC orders the sums. Shapes that cross several MC, NC and NB blocks at the smallest
// blocking, every transpose, both thread counts, the packed-A and the A-in-place paths (N <= 4
// NR, or an A within a 256 KB L2).
TEST_CASE("gemm: every cache blocking gives the same C bit for bit") {
    const SgemmBlocking chosen = sgemm_blocking();
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> U(-1.0f, 1.0f);
    struct Shape {
        int M, N, K;
    };
    for (const Shape s :
         {Shape{300, 700, 600}, Shape{250, 4 * sgemm_panel_width(), 530}, Shape{120, 700, 530}})
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) {
                CAPTURE(s.M);
                CAPTURE(s.N);
                CAPTURE(ta);
                CAPTURE(tb);
                std::vector<float> A((size_t)s.M * s.K), B((size_t)s.K * s.N);
                for (auto& x : A) x = U(rng);
                for (auto& x : B) x = U(rng);
                const int lda = ta ? s.M : s.K, ldb = tb ? s.K : s.N;
                auto product = [&](int mc, int nc, int nb) {
                    sgemm_set_blocking(mc, nc, nb);
                    std::vector<float> C((size_t)s.M * s.N, 0.5f);
                    sgemm(ta, tb, s.M, s.N, s.K, 0.75f, A.data(), lda, B.data(), ldb, 0.25f,
                          C.data(), s.N);
                    return C;
                };
                const std::vector<float> first = product(chosen.mc, chosen.nc, chosen.nb);
                for (const std::array<int, 3> blocking :
                     {std::array{12, 64, 64}, std::array{48, 128, 192}, std::array{132, 512, 256},
                      std::array{1008, 8192, 8192}}) {
                    const int mc = blocking[0], nc = blocking[1], nb = blocking[2];
                    CAPTURE(mc);
                    CAPTURE(nc);
                    CAPTURE(nb);
                    CHECK(product(mc, nc, nb) == first);
                }
            }
    sgemm_set_blocking(chosen.mc, chosen.nc, chosen.nb);
    CHECK_THROWS_AS(sgemm_set_blocking(100, 64, 64), std::invalid_argument);  // not 12 k
    CHECK_THROWS_AS(sgemm_set_blocking(12, 100, 64), std::invalid_argument);
    CHECK_THROWS_AS(sgemm_set_blocking(12, 64, 100), std::invalid_argument);
    CHECK_THROWS_AS(sgemm_set_blocking(1020, 64, 64), std::invalid_argument);
}

// The choice from the cache sizes: multiples that every micro-kernel divides, within bounds,
// growing with the caches, and the common sizes where a CPU does not say.
TEST_CASE("gemm: the cache blocking follows L2 and L3") {
    const SgemmBlocking unknown = sgemm_blocking_for(0, 0), common = sgemm_blocking_for(1 << 20,
                                                                                       32 << 20);
    CHECK(unknown.mc == common.mc);
    CHECK(unknown.nc == common.nc);
    CHECK(unknown.nb == common.nb);
    CHECK(common.nc == 4096);  // Bp = 256 x 4096 floats = 4 MB, an eighth of 32 MB
    CHECK(common.nb == 512);   // with A in place: Bp = 256 x 512 floats = 512 KB, half of 1 MB
    long last_mc = 0, last_nb = 0;
    for (long l2 : {256L << 10, 512L << 10, 1L << 20, 2L << 20, 4L << 20}) {
        const SgemmBlocking b = sgemm_blocking_for(l2, 32 << 20);
        CAPTURE(l2);
        CHECK(b.mc % 12 == 0);
        CHECK(b.mc >= 48);
        CHECK(b.mc <= 1008);
        CHECK(b.mc >= last_mc);
        CHECK(b.nb % 64 == 0);
        CHECK(b.nb >= 64);
        CHECK(b.nb > last_nb);
        last_mc = b.mc, last_nb = b.nb;
    }
    CHECK(sgemm_blocking_for(4L << 20, 32 << 20).mc > sgemm_blocking_for(256L << 10, 32 << 20).mc);
    CHECK(sgemm_blocking_for(1 << 20, 8 << 20).nc == 1024);
    const SgemmBlocking here = sgemm_blocking();
    CHECK(here.l2_bytes > 0);
    CHECK(here.l3_bytes > 0);
}
