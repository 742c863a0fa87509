// The CUDA kernels of cuda/*.cu against CPU references, at awkward shapes (n = 1, 17, 33, 100,
// 130; d_k = 24, 37, 40, 64, 100, 128; causal and not), every version of sgemm and FlashAttention.
//
// One source, two builds:
//   make test          g++ compiles the .cu files against cuda/emu/emulator.h (cuda/cuda.mk) and
//                      the suite links them: the "cuda emulator:" cases.
//   cuda-tests (nvcc)  with CUDA_DEVICE_BUILD the kernels come from nvcc objects: the
//                      "cuda device:" cases, and only those. They run when a GPU is visible and
//                      are skipped otherwise, unless CUDA_TESTS_NEED_DEVICE=1 (gpu-check sets
//                      it): then they run anyway, and the first, "a CUDA device is visible",
//                      fails with the runtime's reason. After every case the device is
//                      synchronized and checked, so that a kernel's fault is reported by the
//                      case that launched it, not at the next case's first copy.
// Under the emulator every kernel also runs twice, threads forward and in reverse between
// barriers, and must give the same bits (a missing __syncthreads makes them differ).
#include <doctest.h>

#include "chapters/6-cost/reference.h"
#include "common/kernels/attention.h"
#include "common/kernels/gemm.h"
#include "common/kernels/lstm.h"
#include "cuda/kernels.h"
#include "cuda/launch.h"
#include "tests/util.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <tuple>
#include <utility>
#include <vector>

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

#if defined(CUDA_DEVICE_BUILD)
constexpr bool EMULATOR = false;
bool device_required() {
    const char* v = std::getenv("CUDA_TESTS_NEED_DEVICE");
    return v && *v && std::strcmp(v, "0") != 0;
}
bool gpu_visible() {
    int count = 0;
    return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}
bool run_device_cases() { return device_required() || gpu_visible(); }

// The kernels a case launched have finished, without a fault.
void check_device_after(const char* name) {
    const cudaError_t sync = cudaDeviceSynchronize(), last = cudaGetLastError();
    REQUIRE_MESSAGE(sync == cudaSuccess, "cudaDeviceSynchronize after \""
                                             << name
                                             << "\": " << std::string(cudaGetErrorString(sync))
                                             << " (a kernel of this case faulted; run it under "
                                                "compute-sanitizer to see which)");
    REQUIRE_MESSAGE(last == cudaSuccess, "cudaGetLastError after \""
                                             << name
                                             << "\": " << std::string(cudaGetErrorString(last)));
}

// The body of a CUDA_TEST as a device case (this build registers no emulator cases).
#define CUDA_TEST(name, body)                                             \
    TEST_CASE("cuda device: " name* doctest::skip(!run_device_cases())) { \
        body();                                                           \
        check_device_after(name);                                         \
    }

TEST_CASE("cuda device: a CUDA device is visible" * doctest::skip(!run_device_cases())) {
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    REQUIRE_MESSAGE(e == cudaSuccess,
                    "cudaGetDeviceCount: " << std::string(cudaGetErrorString(e)) << " ("
                                           << std::string(cudaGetErrorName(e)) << ")");
    REQUIRE_MESSAGE(count > 0, "cudaGetDeviceCount: no device");
    cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    MESSAGE("device 0: " << std::string(prop.name) << ", sm_" << prop.major << prop.minor << ", "
                         << prop.multiProcessorCount << " SMs");
}
#else
constexpr bool EMULATOR = true;
// The body of a CUDA_TEST as an emulator case.
#define CUDA_TEST(name, body) \
    TEST_CASE("cuda emulator: " name) { body(); }
#endif

std::vector<float> random_vector(size_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
    std::vector<float> v(n);
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (auto& x : v) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x = lo + (hi - lo) * float((s >> 40) * (1.0 / 16777216.0));
    }
    return v;
}

gpu::Buffer<float> upload(const std::vector<float>& v) {
    gpu::Buffer<float> d(v.size());
    if (!v.empty())
        CUDA_CHECK(
            cudaMemcpy(d.data(), v.data(), v.size() * sizeof(float), cudaMemcpyHostToDevice));
    return d;
}
std::vector<float> download(const float* p, size_t n) {
    std::vector<float> v(n);
    if (n) CUDA_CHECK(cudaMemcpy(v.data(), p, n * sizeof(float), cudaMemcpyDeviceToHost));
    return v;
}
std::vector<float> download(const gpu::Buffer<float>& b) { return download(b.data(), b.size()); }

// Emulator only: the result must not depend on the order of threads between barriers. The
// caller has just called run() (the default schedule: threads in forward order), so read() now
// returns its result, which a run with threads and blocks in reverse order must repeat.
template <class Run, class Read>
void check_schedule_independent(Run run, Read read, const char* what) {
#if !defined(CUDA_DEVICE_BUILD)
    CHECK_MESSAGE(emu::same_in_reverse(run, read, read()),
                  what << ": the result depends on the thread order (a missing __syncthreads?)");
#else
    (void)run, (void)read, (void)what;
#endif
}

// ---- sgemm ---------------------------------------------------------------------------------
void sgemm_case() {
    struct Shape { int M, N, K; };
    // The fewest shapes, each as small as it can be, that take every kernel down every path
    // (each one runs under every version, tile, layout and transpose below, and the emulator's
    // cost grows with the tiles a shape covers):
    //   {1, 1, 1}       one element: one block, one thread with work.
    //   {3, 40, 5}      few rows (M <= 16: the few-rows kernels under the automatic choice);
    //                   K under one 8-deep slice, so that 3 of the nn kernel's 8 warps get none.
    //   {8, 70, 37}     few rows; N ragged against both few-rows kernels' column blocks (8, 32).
    //   {16, 100, 130}  few rows at the limit; K split unevenly over the nn kernel's 8 warps.
    //   {17, 33, 40}    just past few rows: the warp-tiled 128x64 tile (N <= 64), one ragged
    //                   block (rows and columns not multiples of 4: the element-wise groups).
    //   {100, 17, 33}   tall and thin; K ragged against the 8-deep slices and the float4 groups.
    //   {130, 129, 24}  crosses the 128x128 and 128x64 tiles by 2 rows and 1 column, whose
    //                   block (0, 0) lies wholly inside with K a multiple of 8: the unchecked
    //                   loop of those tiles.
    //   {262, 257, 16}  crosses the 256-row and 256-column tiles too (rows and columns ragged
    //                   against the float4 groups), each with a block wholly inside: the
    //                   unchecked loop of every warp-tile shape; K of two slices, so the double
    //                   buffering swaps once.
    // Batched (2) throughout. Larger shapes would take the same paths at several times the work.
    const Shape shapes[] = {{1, 1, 1},    {3, 40, 5},    {8, 70, 37},    {16, 100, 130},
                            {17, 33, 40}, {100, 17, 33}, {130, 129, 24}, {262, 257, 16}};
    // Every version, and version 4 with each of its block-tile shapes.
    const std::pair<SgemmVersion, SgemmTile> versions[] = {
        {SgemmVersion::naive, SgemmTile::automatic},
        {SgemmVersion::tiled, SgemmTile::automatic},
        {SgemmVersion::register_tiled, SgemmTile::automatic},
        {SgemmVersion::warp_tiled, SgemmTile::automatic},
        {SgemmVersion::warp_tiled, SgemmTile::b128x128t8x8},
        {SgemmVersion::warp_tiled, SgemmTile::b128x64t8x8},
        {SgemmVersion::warp_tiled, SgemmTile::b128x128t8x16},
        {SgemmVersion::warp_tiled, SgemmTile::b128x256t8x16},
        {SgemmVersion::warp_tiled, SgemmTile::b256x128t16x8},
        {SgemmVersion::warp_tiled, SgemmTile::few_rows_one_pass}};
    const int batch = 2;
    // Layouts: 0  leading dimensions wider than the matrix by odd amounts (no float4 path)
    //          1  leading dimensions multiples of 4 (version 4's float4 path)
    //          2  as 1, but every base pointer 4 bytes past a 16-byte boundary (scalar again)
    auto leading = [](int layout, int cols, int odd) {
        return layout == 0 ? cols + odd : (cols + 3) / 4 * 4 + 4;
    };
    for (const Shape& shape : shapes)
        for (int layout = 0; layout < 3; layout++)
            for (int ta = 0; ta < 2; ta++)
                for (int tb = 0; tb < 2; tb++) {
                    // plain ints: clang 14 cannot capture a binding
                    const int M = shape.M, N = shape.N, K = shape.K;
                    // Leading dimensions wider than the matrix, to catch lda/ldb/ldc mix-ups.
                    int lda = leading(layout, ta ? M : K, 3), ldb = leading(layout, tb ? K : N, 2),
                        ldc = leading(layout, N, 1);
                    const int off = layout == 2 ? 1 : 0;  // floats before each operand
                    long sa = long(ta ? K : M) * lda, sb = long(tb ? N : K) * ldb,
                         sc = long(M) * ldc;
                    auto A = random_vector(off + batch * sa, 1),
                         B = random_vector(off + batch * sb, 2);
                    auto C0 = random_vector(off + batch * sc, 3);
                    std::vector<float> ref = C0;
                    for (int b = 0; b < batch; b++)
                        reference::sgemm(ta, tb, M, N, K, 0.5f, A.data() + off + b * sa, lda,
                                         B.data() + off + b * sb, ldb, 0.25f,
                                         ref.data() + off + b * sc, ldc);
                    auto dA = upload(A), dB = upload(B);
                    for (const auto& version : versions) {
                        const SgemmVersion v = version.first;
                        const SgemmTile tile = version.second;
                        INFO("M=" << M << " N=" << N << " K=" << K << " ta=" << ta
                                  << " tb=" << tb << " layout=" << layout
                                  << " version=" << int(v) << " tile=" << int(tile));
                        auto dC = upload(C0);
                        auto run = [&] {
                            CUDA_CHECK(cudaMemcpy(dC.data(), C0.data(), C0.size() * 4,
                                                  cudaMemcpyHostToDevice));
                            sgemm_cuda(ta, tb, M, N, K, 0.5f, dA.data() + off, lda,
                                       dB.data() + off, ldb, 0.25f, dC.data() + off, ldc, batch,
                                       sa, sb, sc, v, tile);
                        };
                        run();
                        CHECK(testutil::allclose(download(dC), ref, 1e-5, 1e-5, "C"));
                        // Once more, threads and blocks in reverse order. Not for layout 2: its
                        // kernels are layout 0's (the scalar loads, VEC false), at other
                        // leading dimensions. Layouts 0 and 1 share what goes to shared memory
                        // between which barriers (and every run above is under the race check,
                        // which finds a race between warps whatever the order), but they store
                        // C differently (scalar or float4): a store into a neighbour block's
                        // tile that the neighbour overwrites in one block order shows in the
                        // other.
                        if (M > 1 && v != SgemmVersion::naive && layout != 2)
                            check_schedule_independent(run, [&] { return download(dC); }, "sgemm");
                    }
                }
    // beta = 0 must not read C: it starts as NaN, which any read would carry into the result.
    // {17, 33, 40}: one ragged block of every tile; {130, 129, 24}: several blocks of the 128
    // tiles, and in every tile shape both stores of C (a float4 where 4 columns lie inside C,
    // one element at a time at the ragged edge). The store is the same code in a block wholly
    // inside and at the edges.
    for (const Shape& shape : {Shape{17, 33, 40}, Shape{130, 129, 24}})
        for (int layout = 0; layout < 2; layout++)
            for (int ta = 0; ta < 2; ta++)
                for (int tb = 0; tb < 2; tb++) {
                    // plain ints: clang 14 cannot capture a binding
                    const int M = shape.M, N = shape.N, K = shape.K;
                    int lda = leading(layout, ta ? M : K, 3), ldb = leading(layout, tb ? K : N, 2),
                        ldc = leading(layout, N, 1);
                    long sa = long(ta ? K : M) * lda, sb = long(tb ? N : K) * ldb,
                         sc = long(M) * ldc;
                    auto A = random_vector(batch * sa, 4), B = random_vector(batch * sb, 5);
                    std::vector<float> ref(batch * sc, 0.0f);
                    for (int b = 0; b < batch; b++)
                        reference::sgemm(ta, tb, M, N, K, 0.5f, A.data() + b * sa, lda,
                                         B.data() + b * sb, ldb, 0.0f, ref.data() + b * sc, ldc);
                    auto inside = [&](const std::vector<float>& C) {  // the M x N elements
                        std::vector<float> in;
                        for (int b = 0; b < batch; b++)
                            for (int i = 0; i < M; i++)
                                for (int j = 0; j < N; j++) in.push_back(C[b * sc + i * ldc + j]);
                        return in;
                    };
                    auto dA = upload(A), dB = upload(B);
                    for (const auto& version : versions) {
                        const SgemmVersion v = version.first;
                        const SgemmTile tile = version.second;
                        INFO("beta=0 M=" << M << " N=" << N << " K=" << K << " ta=" << ta
                                         << " tb=" << tb << " layout=" << layout
                                         << " version=" << int(v) << " tile=" << int(tile));
                        auto dC = upload(std::vector<float>(batch * sc, NAN));
                        sgemm_cuda(ta, tb, M, N, K, 0.5f, dA.data(), lda, dB.data(), ldb, 0.0f,
                                   dC.data(), ldc, batch, sa, sb, sc, v, tile);
                        CHECK(testutil::allclose(inside(download(dC)), inside(ref), 1e-5, 1e-5,
                                                 "C"));
                    }
                }
}
CUDA_TEST(
    "sgemm naive, tiled, register-tiled and warp-tiled (every tile shape), batched, all transposes",
    sgemm_case)

// Split-K: shapes whose tiles are fewer blocks than the SMs, with K deep enough to cut, in
// slices that end ragged and K not a multiple of the 8-deep slices of the tiles; the few-rows
// kernel's split (M <= 16, !trans_b); batched; the slices' sum with beta and with beta = 0 (C
// starts as NaN). Against the same reference and tolerance as above. The entries are eighths
// (-1, -7/8, ..., 1): every product and partial sum is exact in float at these K, so any order
// of the additions (slices or not) gives the reference's value, and a wrong slice shows.
std::vector<float> random_eighths(size_t n, uint64_t seed) {
    std::vector<float> v = random_vector(n, seed);
    for (float& x : v)
        x = std::round(x * 8) / 8;
    return v;
}
void sgemm_split_k_case() {
    struct Shape {
        int M, N, K, batch;
    };
    // The emulator's cost is the tiles' blocks times K, so each shape is the fewest blocks and
    // about the least K (two slices of at least 512, for the warp tiles) that split:
    //   {17, 33, 1030, 1}  the 128x64 tile (N <= 64), one block; slices of 520 and 510.
    //   {20, 65, 1030, 2}  the 128x128 tile (N > 64), batched: slices of every batch element
    //                      in one grid; ragged against the tile and the float4 groups.
    //   {8, 70, 2051, 2}   the few-rows nn kernel's split (slices of 256 or more), batched:
    //                      8 slices, the last one shorter.
    //   {16, 100, 1030, 1} the few-rows kernels at M = 16 (the nn one in 4 slices).
    // (These replace {17, 33, 2999}, {130, 129, 1100} and {257, 70, 1500}: the same paths at
    // 5 times the work.)
    const Shape shapes[] = {{17, 33, 1030, 1},
                            {20, 65, 1030, 2},
                            {8, 70, 2051, 2},
                            {16, 100, 1030, 1}};
    for (const Shape& shape : shapes)
        for (int layout = 0; layout < 2; layout++)
            for (int ta = 0; ta < 2; ta++)
                for (int tb = 0; tb < 2; tb++) {
                    // plain ints: clang 14 cannot capture a binding
                    const int M = shape.M, N = shape.N, K = shape.K, batch = shape.batch;
                    INFO("M=" << M << " N=" << N << " K=" << K << " batch=" << batch << " ta=" << ta
                              << " tb=" << tb << " layout=" << layout);
                    const int splits = sgemm_k_splits(ta, tb, M, N, K, batch);
                    const bool few_rows_nt = M <= 16 && !ta && tb;      // one pass: N warps
                    if (EMULATOR) CHECK((splits > 1) == !few_rows_nt);  // an H200's 132 SMs
                    auto ld = [&](int cols) { return layout == 0 ? cols + 3 : (cols + 3) / 4 * 4; };
                    const int lda = ld(ta ? M : K), ldb = ld(tb ? K : N), ldc = ld(N);
                    const long sa = long(ta ? K : M) * lda, sb = long(tb ? N : K) * ldb,
                               sc = long(M) * ldc;
                    auto A = random_eighths(batch * sa, 6), B = random_eighths(batch * sb, 7);
                    for (float beta : {0.25f, 0.0f}) {
                        CAPTURE(beta);
                        auto C0 = beta == 0.0f ? std::vector<float>(batch * sc, NAN)
                                               : random_eighths(batch * sc, 8);
                        std::vector<float> ref =
                            beta == 0.0f ? std::vector<float>(C0.size(), 0) : C0;
                        for (int b = 0; b < batch; b++)
                            reference::sgemm(ta, tb, M, N, K, 0.5f, A.data() + b * sa, lda,
                                             B.data() + b * sb, ldb, beta, ref.data() + b * sc,
                                             ldc);
                        auto dA = upload(A), dB = upload(B), dC = upload(C0);
                        auto run = [&] {
                            CUDA_CHECK(cudaMemcpy(dC.data(), C0.data(), C0.size() * 4,
                                                  cudaMemcpyHostToDevice));
                            sgemm_cuda(ta, tb, M, N, K, 0.5f, dA.data(), lda, dB.data(), ldb, beta,
                                       dC.data(), ldc, batch, sa, sb, sc);
                        };
                        run();
                        auto got = download(dC);
                        // Only the M x N elements: the padding of each row is not C's.
                        std::vector<float> in, ref_in;
                        for (int b = 0; b < batch; b++)
                            for (int i = 0; i < M; i++)
                                for (int j = 0; j < N; j++) {
                                    in.push_back(got[b * sc + i * ldc + j]);
                                    ref_in.push_back(ref[b * sc + i * ldc + j]);
                                }
                        CHECK(testutil::allclose(in, ref_in, 1e-5, 1e-5, "C"));
                        if (layout == 1 && beta != 0.0f)
                            check_schedule_independent(
                                run, [&] { return download(dC); }, "split-K sgemm");
                    }
                }
}
CUDA_TEST("sgemm split-K and the few-rows kernel's split of K, at ragged slices",
          sgemm_split_k_case)

// The warp-tiled kernel runs blocks wholly inside C without bounds checks, which is right only
// when K is a multiple of its 8-deep slices; the shapes above never have such a block with a
// ragged K. Here K = 12 (a second slice that ends 4 past K), C is 256 x 256 so that every tile
// shape has blocks wholly inside, and the operands take the float4 path (aligned, leading
// dimensions multiples of 4). The padding of each row and the 8 rows after each operand hold
// random numbers, so a slice read past K adds wrong products, not zeros or a fault.
void sgemm_ragged_k_inside_case() {
    const int M = 256, N = 256, K = 12, batch = 2;
    const SgemmTile tiles[] = {SgemmTile::automatic,     SgemmTile::b128x128t8x8,
                               SgemmTile::b128x64t8x8,   SgemmTile::b128x128t8x16,
                               SgemmTile::b128x256t8x16, SgemmTile::b256x128t16x8};
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            const int lda = (ta ? M : K) + 4, ldb = (tb ? K : N) + 4, ldc = N + 4;
            const long sa = long(ta ? K : M) * lda, sb = long(tb ? N : K) * ldb,
                       sc = long(M) * ldc;
            const long slack = 8L * (lda > ldb ? lda : ldb);  // past the last batch element
            auto A = random_vector(batch * sa + slack, 14),
                 B = random_vector(batch * sb + slack, 15);
            auto C0 = random_vector(batch * sc, 16);
            std::vector<float> ref = C0;
            for (int b = 0; b < batch; b++)
                reference::sgemm(ta, tb, M, N, K, 0.5f, A.data() + b * sa, lda, B.data() + b * sb,
                                 ldb, 0.25f, ref.data() + b * sc, ldc);
            auto dA = upload(A), dB = upload(B);
            for (SgemmTile tile : tiles) {
                INFO("ta=" << ta << " tb=" << tb << " tile=" << int(tile));
                auto dC = upload(C0);
                sgemm_cuda(ta, tb, M, N, K, 0.5f, dA.data(), lda, dB.data(), ldb, 0.25f,
                           dC.data(), ldc, batch, sa, sb, sc, SgemmVersion::warp_tiled, tile);
                CHECK(testutil::allclose(download(dC), ref, 1e-5, 1e-5, "C"));
            }
        }
}
CUDA_TEST("sgemm warp-tiled: blocks wholly inside C with K not a multiple of the slices",
          sgemm_ragged_k_inside_case)

// K = 0: C = beta C, for every version and tile (beta = 0 writes zeros over NaN).
void sgemm_empty_k_case() {
    const int M = 20, N = 70, batch = 2;
    const long sc = long(M) * N;
    auto C0 = random_vector(batch * sc, 9);
    gpu::Buffer<float> A(16), B(16);
    for (auto version_tile : {std::pair{SgemmVersion::naive, SgemmTile::automatic},
                              {SgemmVersion::tiled, SgemmTile::automatic},
                              {SgemmVersion::register_tiled, SgemmTile::automatic},
                              {SgemmVersion::warp_tiled, SgemmTile::automatic},
                              {SgemmVersion::warp_tiled, SgemmTile::b256x128t16x8}})
        for (float beta : {0.5f, 0.0f}) {
            // plain names: clang 14 cannot capture a binding
            const SgemmVersion v = version_tile.first;
            const SgemmTile tile = version_tile.second;
            INFO("version=" << int(v) << " tile=" << int(tile) << " beta=" << beta);
            auto dC = upload(beta == 0.0f ? std::vector<float>(C0.size(), NAN) : C0);
            sgemm_cuda(false, false, M, N, 0, 1.0f, A.data(), 4, B.data(), N, beta, dC.data(), N,
                       batch, 0, 0, sc, v, tile);
            std::vector<float> want(C0.size(), 0.0f);
            if (beta != 0.0f)
                for (size_t i = 0; i < C0.size(); i++)
                    want[i] = beta * C0[i];
            CHECK(download(dC) == want);
        }
}
CUDA_TEST("sgemm with K = 0 sets C = beta C", sgemm_empty_k_case)

#if !defined(CUDA_DEVICE_BUILD)
// K = 0 must not read A or B at all: with aligned operands the warp-tiled kernel could take its
// unguarded path, whose prologue loads one float4 of each. Here both point at a page that
// faults on any access, in a forked child (the fault would end it).
TEST_CASE("cuda emulator: sgemm with K = 0 reads neither A nor B") {
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        void* page = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        const float* none = static_cast<const float*>(page);
        gpu::Buffer<float> C(128 * 128);
        for (SgemmVersion v : {SgemmVersion::naive, SgemmVersion::tiled,
                               SgemmVersion::register_tiled, SgemmVersion::warp_tiled})
            for (int ta = 0; ta < 2; ta++)
                sgemm_cuda(ta, false, 128, 128, 0, 1.0f, none, 128, none, 128, 0.0f, C.data(), 128,
                           1, 0, 0, 0, v);
        _exit(download(C) == std::vector<float>(128 * 128, 0.0f) ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK_MESSAGE(WIFEXITED(status),
                  "the child died by signal " << WTERMSIG(status) << ": A or B was read");
    CHECK((WIFEXITED(status) ? WEXITSTATUS(status) : -1) == 0);
}

// Where the default splits K, at an H200's 132 SMs (the emulator's): chapter 6's weight
// gradients and the LSTM's backward step split, the big products do not.
TEST_CASE("cuda emulator: split-K takes the small grids with deep K") {
    CHECK(sgemm_k_splits(true, false, 512, 512, 131072) == 16);   // dW_proj, B n = 8 x 16384
    CHECK(sgemm_k_splits(true, false, 1536, 512, 131072) == 5);   // dW_qkv
    CHECK(sgemm_k_splits(true, false, 2048, 512, 2048) == 4);     // LSTM dW_ih, n B = 256 x 8
    CHECK(sgemm_k_splits(false, false, 8, 512, 2048) == 8);       // LSTM dG W_hh, 16 blocks
    CHECK(sgemm_k_splits(false, true, 8, 2048, 512) == 1);        // h W_hh^T: 2048 warps
    CHECK(sgemm_k_splits(false, false, 4096, 4096, 4096) == 1);   // 1024 blocks
    CHECK(sgemm_k_splits(true, false, 2048, 64, 2048, 64) == 1);  // attention's dV, batched
    CHECK(sgemm_k_splits(true, false, 512, 512, 800) == 1);       // too shallow to cut
    CHECK(sgemm_k_splits(true, false, 512, 512, 131072, 1, SgemmVersion::warp_tiled,
                         SgemmTile::b128x128t8x8) == 1);  // explicit tiles never split
    CHECK(sgemm_k_splits(false, false, 8, 512, 2048, 1, SgemmVersion::warp_tiled,
                         SgemmTile::few_rows_one_pass) == 1);
}
#endif

// ---- tracked device memory ------------------------------------------------------------------
void device_memory_case() {
    gpu::empty_cache();
    const size_t base = gpu::current_bytes();
    gpu::reset_peak();
    const float* first = nullptr;
    {
        gpu::Buffer<float> a(1000), b(3000);
        CHECK(gpu::current_bytes() == base + 16000);
        first = a.data();
        CUDA_CHECK(cudaMemset(a.data(), 0, 4000));
    }
    CHECK(gpu::current_bytes() == base);
    CHECK(gpu::peak_bytes() == base + 16000);
    {
        gpu::Buffer<float> c(1000);  // the same rounded size: the cached block comes back
        CHECK(c.data() == first);
        CHECK(gpu::current_bytes() == base + 4000);
        if (EMULATOR)  // and reads as garbage (NaN) again, not as the zeros written before
            CHECK(std::isnan(download(c)[0]));
    }
    gpu::reset_peak();
    CHECK(gpu::peak_bytes() == base);
    gpu::empty_cache();
}
CUDA_TEST("tracked device memory: counts, peak, and the cache hands freed blocks back",
          device_memory_case)

// ---- softmax -------------------------------------------------------------------------------
void softmax_case() {
    for (int n : {1, 17, 33, 100})
        for (bool causal : {false, true}) {
            INFO("n=" << n << " " << "causal=" << causal << " ");
            const int rows = 3 * n;  // three (n, n) blocks, like B*h = 3
            auto S = random_vector(size_t(rows) * n, 10 + n, -4, 4);
            auto dP = random_vector(size_t(rows) * n, 20 + n);
            std::vector<float> P_ref(S.size()), dS_ref(S.size());
            for (int r = 0; r < rows; r++) {
                int visible = causal ? r % n + 1 : n;
                double m = -INFINITY, sum = 0, dot = 0;
                for (int j = 0; j < visible; j++) m = std::max(m, double(S[r * n + j]));
                for (int j = 0; j < visible; j++) sum += std::exp(S[r * n + j] - m);
                for (int j = 0; j < n; j++)
                    P_ref[r * n + j] = j < visible ? float(std::exp(S[r * n + j] - m) / sum) : 0;
                for (int j = 0; j < n; j++) dot += double(dP[r * n + j]) * P_ref[r * n + j];
                for (int j = 0; j < n; j++)
                    dS_ref[r * n + j] = float(P_ref[r * n + j] * (dP[r * n + j] - dot));
            }
            auto dS_ = upload(S), dP_ = upload(dP);
            gpu::Buffer<float> P(S.size()), dS(S.size());
            softmax_forward_cuda(dS_.data(), P.data(), rows, n, causal);
            CHECK(testutil::allclose(download(P), P_ref, 1e-6, 1e-5, "P"));
            softmax_backward_cuda(P.data(), dP_.data(), dS.data(), rows, n);
            CHECK(testutil::allclose(download(dS), dS_ref, 1e-6, 1e-4, "dS"));
        }
}
CUDA_TEST("softmax forward and backward over rows, causal and not", softmax_case)

// ---- reductions and permutes -------------------------------------------------------------------
void reduce_case() {
    for (const std::pair<int, int>& shape : {std::pair{1, 1}, {17, 40}, {100, 33}, {3, 1000}}) {
        // plain ints: clang 14 cannot capture a binding
        const int rows = shape.first, cols = shape.second;
        INFO("rows=" << rows << " " << "cols=" << cols << " ");
        auto a = random_vector(size_t(rows) * cols, 30), b = random_vector(size_t(rows) * cols, 31);
        std::vector<float> dot_ref(rows), col_ref(cols);
        double sum = 0, max_abs = 0;
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < cols; c++) {
                float x = a[r * cols + c];
                dot_ref[r] += x * b[r * cols + c];
                col_ref[c] += x;
                sum += x;
                max_abs = std::max(max_abs, double(std::fabs(x)));
            }
        auto da = upload(a), db = upload(b);
        gpu::Buffer<float> dot(rows), col(cols), scalar(1);
        row_dot_cuda(da.data(), db.data(), dot.data(), rows, cols);
        CHECK(testutil::allclose(download(dot), dot_ref, 1e-4, 1e-4, "row_dot"));
        column_sum_cuda(da.data(), col.data(), rows, cols);
        CHECK(testutil::allclose(download(col), col_ref, 1e-4, 1e-4, "column_sum"));
        sum_cuda(da.data(), scalar.data(), long(a.size()));
        CHECK(download(scalar)[0] == doctest::Approx(sum).epsilon(1e-4));
        max_abs_cuda(da.data(), scalar.data(), long(a.size()));
        CHECK(download(scalar)[0] == float(max_abs));
        auto sum_run = [&] { sum_cuda(da.data(), scalar.data(), long(a.size())); };
        sum_run();  // (max_abs_cuda wrote scalar since)
        check_schedule_independent(sum_run, [&] { return download(scalar); }, "sum");
    }
}
CUDA_TEST("reductions: row dot, column sum, sum, max |x|", reduce_case)

void permute_case() {
    const int B = 2, n = 17, h = 3, d_k = 40;
    auto x = random_vector(size_t(B) * n * h * d_k, 40);  // (B, n, h, d_k)
    std::vector<float> y_ref(x.size());                     // (B, h, n, d_k)
    for (int b = 0; b < B; b++)
        for (int t = 0; t < n; t++)
            for (int hd = 0; hd < h; hd++)
                for (int e = 0; e < d_k; e++)
                    y_ref[((size_t(b) * h + hd) * n + t) * d_k + e] =
                        x[((size_t(b) * n + t) * h + hd) * d_k + e];
    auto dx = upload(x);
    gpu::Buffer<float> y(x.size()), back(x.size());
    split_heads_cuda(dx.data(), y.data(), B, n, h, d_k);
    CHECK(download(y) == y_ref);
    merge_heads_cuda(y.data(), back.data(), B, n, h, d_k);
    CHECK(download(back) == x);

    auto qkv = random_vector(size_t(B) * n * 3 * h * d_k, 41);  // (B, n, 3, h, d_k)
    std::vector<float> Q_ref(x.size()), V_ref(x.size());
    for (int b = 0; b < B; b++)
        for (int t = 0; t < n; t++)
            for (int hd = 0; hd < h; hd++)
                for (int e = 0; e < d_k; e++) {
                    size_t dst = ((size_t(b) * h + hd) * n + t) * d_k + e;
                    size_t src = (((size_t(b) * n + t) * 3 + 0) * h + hd) * d_k + e;
                    Q_ref[dst] = qkv[src];
                    V_ref[dst] = qkv[src + 2 * size_t(h) * d_k];
                }
    auto dqkv = upload(qkv);
    gpu::Buffer<float> Q(x.size()), K(x.size()), V(x.size()), qkv_back(qkv.size());
    split_qkv_cuda(dqkv.data(), Q.data(), K.data(), V.data(), B, n, h, d_k);
    CHECK(download(Q) == Q_ref);
    CHECK(download(V) == V_ref);
    merge_qkv_cuda(Q.data(), K.data(), V.data(), qkv_back.data(), B, n, h, d_k);
    CHECK(download(qkv_back) == qkv);
}
CUDA_TEST("permute (B, n, h, d_k) <-> (B, h, n, d_k) and qkv split/merge", permute_case)

// ---- attention -------------------------------------------------------------------------------
struct AttentionRef {
    std::vector<float> O, L, dQ, dK, dV, P;
};

// The article's scaled_dot_product_attention and its gradients: chapters/6-cost/reference.h's
// plain loops (its sums in double), the naive algorithm for O, P and the gradients and
// FlashAttention-2's forward for L, each row's logsumexp.
AttentionRef attention_reference(const std::vector<float>& Q, const std::vector<float>& K,
                                 const std::vector<float>& V, const std::vector<float>& dO,
                                 int B, int h, int n, int d_k, bool causal) {
    AttentionRef r;
    const size_t sz = size_t(B) * h * n * d_k;
    r.O.resize(sz), r.dQ.resize(sz), r.dK.resize(sz), r.dV.resize(sz);
    r.L.resize(size_t(B) * h * n), r.P.resize(size_t(B) * h * n * n);
    std::vector<float> O_fused(sz);  // (B, h, n, d_k), r.O again
    reference::attention_naive_forward(Q.data(), K.data(), V.data(), r.O.data(), r.P.data(), B, h,
                                       n, d_k, causal);
    reference::attention_naive_backward(Q.data(), K.data(), V.data(), r.P.data(), dO.data(),
                                        r.dQ.data(), r.dK.data(), r.dV.data(), B, h, n, d_k,
                                        causal);
    reference::attention_fused_forward(Q.data(), K.data(), V.data(), O_fused.data(), r.L.data(), B,
                                       h, n, d_k, causal);
    return r;
}

struct AttentionShape { int B, h, n, d_k; };
const AttentionShape ATTENTION_SHAPES[] = {
    {1, 1, 1, 24}, {2, 2, 17, 40}, {1, 2, 33, 64}, {2, 1, 100, 24}, {1, 1, 70, 100}};
// FlashAttention, both versions: those shapes and each n below with three d_k. Against version
// 1's 32-row tiles and version 2's 64-row ones, n = 1 is one row, 17 and 33 end ragged, 100 ends
// in a ragged fourth or second tile and 130 in a ragged fifth or third. The kernels are compiled
// for D = 32, 64, 128, and every n meets each of them: d_k = 24 pads to 32; 37 or 64 take D = 64
// (37, not a multiple of 4, takes version 2's guarded scalar loads instead of float4); 100 or 128
// take 128 (100 padded). Each of 37, 64, 100 and 128 meets at least two n, ragged ones among
// them. (Every n with every d_k, 25 pairs, would take the same paths at twice the work.)
const std::pair<int, int> FLASH_N_D_KS[] = {{1, 24},   {1, 37},   {1, 128},  {17, 24},
                                            {17, 64},  {17, 100}, {33, 24},  {33, 37},
                                            {33, 128}, {100, 24}, {100, 64}, {100, 100},
                                            {130, 24}, {130, 37}, {130, 128}};

void attention_case(bool fused, FlashVersion version = FlashVersion::register_tiled) {
    std::vector<AttentionShape> shapes(std::begin(ATTENTION_SHAPES), std::end(ATTENTION_SHAPES));
    if (fused)
        for (const auto& [n, d_k] : FLASH_N_D_KS) {
            const int odd = int(shapes.size()) % 2;  // B = 2, h = 1 or B = 1, h = 2
            shapes.push_back({1 + odd, 2 - odd, n, d_k});
        }
    for (const AttentionShape& shape : shapes)
        for (bool causal : {false, true}) {
            // plain ints: clang 14 cannot capture a binding
            const int B = shape.B, h = shape.h, n = shape.n, d_k = shape.d_k;
            INFO("B=" << B << " "
                      << "h=" << h << " "
                      << "n=" << n << " "
                      << "d_k=" << d_k << " "
                      << "causal=" << causal << " "
                      << "version=" << (fused ? int(version) : 0) << " ");
            size_t sz = size_t(B) * h * n * d_k;
            auto Q = random_vector(sz, 50 + n, -2, 2), K = random_vector(sz, 51 + n, -2, 2);
            auto V = random_vector(sz, 52 + n), dO = random_vector(sz, 53 + n);
            AttentionRef ref = attention_reference(Q, K, V, dO, B, h, n, d_k, causal);
            // The CPU implementation in common/kernels/attention.cpp of the same algorithm.
            std::vector<float> cO(sz), cdQ(sz), cdK(sz), cdV(sz);
            std::vector<float> csaved(fused ? size_t(B) * h * n : size_t(B) * h * n * n);
            if (fused) {
                attention_fused_forward(Q.data(), K.data(), V.data(), cO.data(), csaved.data(), B,
                                        h, n, d_k, causal);
                attention_fused_backward(Q.data(), K.data(), V.data(), cO.data(), csaved.data(),
                                         dO.data(), cdQ.data(), cdK.data(), cdV.data(), B, h, n,
                                         d_k, causal);
            } else {
                attention_naive_forward(Q.data(), K.data(), V.data(), cO.data(), csaved.data(), B,
                                        h, n, d_k, causal);
                attention_naive_backward(Q.data(), K.data(), V.data(), csaved.data(), dO.data(),
                                         cdQ.data(), cdK.data(), cdV.data(), B, h, n, d_k, causal);
            }
            auto dQ_ = upload(Q), dK_ = upload(K), dV_ = upload(V), ddO = upload(dO);
            gpu::Buffer<float> O(sz), dQ(sz), dK(sz), dV(sz);
            gpu::Buffer<float> saved(fused ? size_t(B) * h * n : size_t(B) * h * n * n);  // L or P
            auto forward = [&] {
                if (fused)
                    attention_fused_forward_cuda(dQ_.data(), dK_.data(), dV_.data(), O.data(),
                                                 saved.data(), B, h, n, d_k, causal, version);
                else
                    attention_naive_forward_cuda(dQ_.data(), dK_.data(), dV_.data(), O.data(),
                                                 saved.data(), B, h, n, d_k, causal);
            };
            auto backward = [&] {
                if (fused)
                    attention_fused_backward_cuda(dQ_.data(), dK_.data(), dV_.data(), O.data(),
                                                  saved.data(), ddO.data(), dQ.data(), dK.data(),
                                                  dV.data(), B, h, n, d_k, causal, version);
                else
                    attention_naive_backward_cuda(dQ_.data(), dK_.data(), dV_.data(),
                                                  saved.data(), ddO.data(), dQ.data(), dK.data(),
                                                  dV.data(), B, h, n, d_k, causal);
            };
            forward();
            CHECK(testutil::allclose(download(O), ref.O, 1e-5, 1e-4, "O"));
            if (fused) CHECK(testutil::allclose(download(saved), ref.L, 1e-5, 1e-5, "L"));
            else CHECK(testutil::allclose(download(saved), ref.P, 1e-6, 1e-4, "P"));
            backward();
            CHECK(testutil::allclose(download(dQ), ref.dQ, 1e-5, 1e-3, "dQ"));
            CHECK(testutil::allclose(download(dK), ref.dK, 1e-5, 1e-3, "dK"));
            CHECK(testutil::allclose(download(dV), ref.dV, 1e-5, 1e-4, "dV"));
            CHECK(testutil::allclose(download(O), cO, 1e-5, 1e-4, "O vs common/kernels/attention"));
            CHECK(testutil::allclose(download(saved), csaved, 1e-5, 1e-4,
                                     "L or P vs common/kernels/attention"));
            CHECK(testutil::allclose(download(dQ), cdQ, 1e-5, 1e-3,
                                     "dQ vs common/kernels/attention"));
            CHECK(testutil::allclose(download(dK), cdK, 1e-5, 1e-3,
                                     "dK vs common/kernels/attention"));
            CHECK(testutil::allclose(download(dV), cdV, 1e-5, 1e-4,
                                     "dV vs common/kernels/attention"));
            if (fused && n >= 33) {
                check_schedule_independent(forward, [&] { return download(O); }, "fused forward");
                // Version 2 adds dQ with atomics in the order the blocks run, which the reverse
                // schedule reverses: its bits may differ there (its values are checked above).
                check_schedule_independent(backward, [&] {
                    auto g = download(dK), v = download(dV);
                    g.insert(g.end(), v.begin(), v.end());
                    if (version == FlashVersion::simple) {
                        auto q = download(dQ);
                        g.insert(g.end(), q.begin(), q.end());
                    }
                    return g;
                }, "fused backward");
            }
        }
}
void attention_naive_case() { attention_case(false); }
void attention_flash_v1_case() { attention_case(true, FlashVersion::simple); }
void attention_flash_v2_case() { attention_case(true, FlashVersion::register_tiled); }
CUDA_TEST("naive attention forward/backward vs the double reference", attention_naive_case)
CUDA_TEST(
    "FlashAttention version 1 (one thread per row) forward/backward vs the double "
    "reference and common/kernels/attention",
    attention_flash_v1_case)
CUDA_TEST(
    "FlashAttention version 2 (register tiles) forward/backward vs the double reference "
    "and common/kernels/attention",
    attention_flash_v2_case)

void attention_fused_rejects_wide_heads() {
    gpu::Buffer<float> buf(4 * 129);
    float* p = buf.data();
    for (FlashVersion v : {FlashVersion::simple, FlashVersion::register_tiled}) {
        CHECK_THROWS_WITH_AS(attention_fused_forward_cuda(p, p, p, p, p, 1, 1, 4, 129, false, v),
                             doctest::Contains("d_k = 129"), std::invalid_argument);
        CHECK_THROWS_WITH_AS(
            attention_fused_backward_cuda(p, p, p, p, p, p, p, p, p, 1, 1, 4, 129, false, v),
            doctest::Contains("d_k = 129"), std::invalid_argument);
    }
}
CUDA_TEST("fused attention names the problem when d_k > 128", attention_fused_rejects_wide_heads)

// Views one float into their buffers are not 16-byte aligned although d_k % 4 == 0: version 2
// (the default) must see that and take the scalar path (a float4 access there faults on a device),
// with the same results as aligned buffers. Only dQ may differ in its last bits: its atomic
// additions from different key tiles may land in another order.
void attention_fused_unaligned_views() {
    const int B = 1, h = 2, n = 70, d_k = 64;
    const size_t sz = size_t(B) * h * n * d_k;
    auto Qh = random_vector(sz, 70, -2, 2), Kh = random_vector(sz, 71, -2, 2);
    auto Vh = random_vector(sz, 72), dOh = random_vector(sz, 73);
    std::vector<float> got[2][5];  // [offset]: O, L, dK, dV, dQ
    for (int offset : {0, 1}) {
        auto at = [&](const std::vector<float>& v) {
            std::vector<float> w(offset, 0.0f);
            w.insert(w.end(), v.begin(), v.end());
            return upload(w);
        };
        auto Q = at(Qh), K = at(Kh), V = at(Vh), dO = at(dOh);
        gpu::Buffer<float> O(sz + offset), L(size_t(B) * h * n), dQ(sz + offset),
            dK(sz + offset), dV(sz + offset);
        attention_fused_forward_cuda(Q.data() + offset, K.data() + offset, V.data() + offset,
                                     O.data() + offset, L.data(), B, h, n, d_k, true);
        attention_fused_backward_cuda(Q.data() + offset, K.data() + offset, V.data() + offset,
                                      O.data() + offset, L.data(), dO.data() + offset,
                                      dQ.data() + offset, dK.data() + offset,
                                      dV.data() + offset, B, h, n, d_k, true);
        got[offset][0] = download(O.data() + offset, sz), got[offset][1] = download(L);
        got[offset][2] = download(dK.data() + offset, sz);
        got[offset][3] = download(dV.data() + offset, sz);
        got[offset][4] = download(dQ.data() + offset, sz);
    }
    CHECK(got[1][0] == got[0][0]);
    CHECK(got[1][1] == got[0][1]);
    CHECK(got[1][2] == got[0][2]);
    CHECK(got[1][3] == got[0][3]);
    CHECK(testutil::allclose(got[1][4], got[0][4], 1e-6, 1e-5, "dQ"));
}
CUDA_TEST("fused attention on unaligned views: the scalar path, same results",
          attention_fused_unaligned_views)

// ---- LSTM ------------------------------------------------------------------------------------
struct LstmRef {
    std::vector<float> h, c, gates, dx, dW_ih, dW_hh, db;
};
// torch's nn.LSTM forward and backward through time: chapters/6-cost/reference.h's plain loops
// (its sums in double).
LstmRef lstm_reference(const std::vector<float>& x, const std::vector<float>& W_ih,
                       const std::vector<float>& W_hh, const std::vector<float>& b,
                       const std::vector<float>& dh_out, int n, int B, int d) {
    LstmRef r;
    const size_t Bd = size_t(B) * d;
    r.h.resize((n + 1) * Bd), r.c.resize((n + 1) * Bd), r.gates.resize(n * 4 * Bd);
    r.dx.resize(n * Bd), r.dW_ih.resize(W_ih.size()), r.dW_hh.resize(W_hh.size());
    r.db.resize(b.size());
    reference::lstm_forward(x.data(), W_ih.data(), W_hh.data(), b.data(), n, B, d, r.h.data(),
                            r.c.data(), r.gates.data());
    reference::lstm_backward(x.data(), W_ih.data(), W_hh.data(), r.h.data(), r.c.data(),
                             r.gates.data(), dh_out.data(), n, B, d, r.dx.data(), r.dW_ih.data(),
                             r.dW_hh.data(), r.db.data());
    return r;
}

void lstm_case() {
    // (n, B, d). The first three fit B d and 2 B d (the unfused i, f launch) in one block of
    // 256 threads; {2, 4, 100} spreads every gate kernel over several blocks (B d = 400), so a
    // launch with too few of them, or an index that forgets the block, shows.
    for (const std::array<int, 3>& shape :
         {std::array{1, 1, 24}, {17, 3, 40}, {33, 2, 17}, {2, 4, 100}}) {
        // plain ints: clang 14 cannot capture a binding
        const int n = shape[0], B = shape[1], d = shape[2];
        INFO("n=" << n << " " << "B=" << B << " " << "d=" << d << " ");
        auto x = random_vector(size_t(n) * B * d, 60),
             W_ih = random_vector(size_t(4) * d * d, 61, -0.3f, 0.3f);
        auto W_hh = random_vector(size_t(4) * d * d, 62, -0.3f, 0.3f), b = random_vector(4 * d, 63);
        auto dh_out = random_vector(size_t(n) * B * d, 64);
        LstmRef ref = lstm_reference(x, W_ih, W_hh, b, dh_out, n, B, d);
        auto dx_ = upload(x), dWi = upload(W_ih), dWh = upload(W_hh), db_ = upload(b),
             ddh = upload(dh_out);
        gpu::Buffer<float> h(size_t(n + 1) * B * d), c(h.size()), gates(size_t(n) * B * 4 * d);
        for (bool fused : {true, false}) {
            INFO("fused=" << fused << " ");
            lstm_forward_cuda(dx_.data(), dWi.data(), dWh.data(), db_.data(), n, B, d, h.data(),
                              c.data(), gates.data(), fused);
            CHECK(testutil::allclose(download(h), ref.h, 1e-5, 1e-4, "h"));
            CHECK(testutil::allclose(download(c), ref.c, 1e-5, 1e-4, "c"));
            CHECK(testutil::allclose(download(gates), ref.gates, 1e-5, 1e-4, "gates"));
        }
        gpu::Buffer<float> dx(x.size()), dW_ih(W_ih.size()), dW_hh(W_hh.size()), db(b.size());
        lstm_backward_cuda(dx_.data(), dWi.data(), dWh.data(), h.data(), c.data(), gates.data(),
                           ddh.data(), n, B, d, dx.data(), dW_ih.data(), dW_hh.data(), db.data());
        CHECK(testutil::allclose(download(dx), ref.dx, 1e-5, 1e-4, "dx"));
        CHECK(testutil::allclose(download(dW_ih), ref.dW_ih, 1e-5, 1e-4, "dW_ih"));
        CHECK(testutil::allclose(download(dW_hh), ref.dW_hh, 1e-5, 1e-4, "dW_hh"));
        CHECK(testutil::allclose(download(db), ref.db, 1e-5, 1e-4, "db"));
        // And against the CPU implementation in common/kernels/lstm.cpp.
        std::vector<float> ch(h.size()), cc(h.size()), cg(gates.size()), cdx(x.size()),
            cWi(W_ih.size()), cWh(W_hh.size()), cb(b.size());
        lstm_forward(x.data(), W_ih.data(), W_hh.data(), b.data(), n, B, d, ch.data(), cc.data(),
                     cg.data());
        lstm_backward(x.data(), W_ih.data(), W_hh.data(), ch.data(), cc.data(), cg.data(),
                      dh_out.data(), n, B, d, cdx.data(), cWi.data(), cWh.data(), cb.data());
        CHECK(testutil::allclose(download(h), ch, 1e-5, 1e-4, "h vs common/kernels/lstm"));
        CHECK(testutil::allclose(download(dx), cdx, 1e-5, 1e-4, "dx vs common/kernels/lstm"));
        CHECK(testutil::allclose(download(dW_ih), cWi, 1e-5, 1e-4, "dW_ih vs common/kernels/lstm"));
        CHECK(testutil::allclose(download(dW_hh), cWh, 1e-5, 1e-4, "dW_hh vs common/kernels/lstm"));
        CHECK(testutil::allclose(download(db), cb, 1e-5, 1e-4, "db vs common/kernels/lstm"));
    }
}
CUDA_TEST("LSTM fused and unfused gates forward, backward, vs the double reference", lstm_case)

}  // namespace
