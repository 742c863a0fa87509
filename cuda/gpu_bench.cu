// gpu-bench: the issue's speed targets on a GPU (cuda/gpu-check.sh builds it with nvcc and runs
// it; `make` builds it for the emulator as gpu-bench-emu, which the tests run with --quick).
//   1. sgemm 4096^3: the warp-tiled kernel (the default) and the register-tiled one vs cuBLAS
//      in fp32 with TF32 off (cuBLAS is only the yardstick here; it is never in the measured
//      path of chapter 6); then every block-tile shape of the warp-tiled kernel at every
//      transpose, each result checked against cuBLAS's
//   2. fused attention fwd+bwd, B = 8, h = 8, d_k = 64, n = 2048, 4096: TFLOP/s (4 B h n^2 d_k
//      forward, 2.5x that backward), speed-up over the naive path, peak memory ratio, and the
//      two paths' O, dQ, dK against each other
//   3. LSTM forward with fused vs unfused (per-op) gate kernels, and their h against each other
// and at the end one line per target, "met" or "NOT MET" (gpu-check copies them to its summary).
#include "cuda/kernels.h"
#include "cuda/launch.h"

#if defined(__CUDACC__)
#include <cublas_v2.h>
#else
#include "cuda/cublas_emulated.h"  // the emulator build, which the tests run with --quick
#endif
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace {

float time_ms(const std::function<void()>& f, int warmups = 2, int repeats = 5) {
    for (int i = 0; i < warmups; i++) f();
    cudaEvent_t a, b;
    CUDA_CHECK(cudaEventCreate(&a));
    CUDA_CHECK(cudaEventCreate(&b));
    CUDA_CHECK(cudaEventRecord(a));
    for (int i = 0; i < repeats; i++) f();
    CUDA_CHECK(cudaEventRecord(b));
    CUDA_CHECK(cudaEventSynchronize(b));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
    CUDA_CHECK(cudaEventDestroy(a));
    CUDA_CHECK(cudaEventDestroy(b));
    return ms / repeats;
}

}  // namespace

__global__ void fill(float* p, long n, float s) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) p[i] = s * float((i * 2654435761u) % 2001 - 1000) / 1000.0f;
}
namespace {

gpu::Buffer<float> filled(size_t n, float s) {
    gpu::Buffer<float> b(n);
    launch_kernel(fill, dim3(ceil_div(long(n), 256)), dim3(256), 0, b.data(), long(n), s);
    return b;
}

// The issue's targets, one line each, printed together at the end (gpu-check's summary).
std::vector<std::string> g_targets;

void target(const std::string& what, double value, double at_least) {
    char line[256];
    std::snprintf(line, sizeof line, "target %s: %.2f, at least %.3g: %s", what.c_str(), value,
                  at_least, value >= at_least ? "met" : "NOT MET");
    g_targets.push_back(line);
}

// max |a - b| over two device arrays of n floats, and max |b|.
void compare(const float* a, const float* b, size_t n, double& worst, double& scale) {
    std::vector<float> x(n), y(n);
    CUDA_CHECK(cudaMemcpy(x.data(), a, n * 4, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(y.data(), b, n * 4, cudaMemcpyDeviceToHost));
    worst = 0, scale = 0;
    for (size_t i = 0; i < n; i++) {
        worst = std::fmax(worst, std::fabs(double(x[i]) - y[i]));
        scale = std::fmax(scale, std::fabs(double(y[i])));
    }
}

}  // namespace

// --quick: every section at small sizes, for the emulator build the tests run (it checks this
// program's shapes, strides and comparisons; its times mean nothing there).
int main(int argc, char** argv) try {
    const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
    int devices = 0;
    const cudaError_t e = cudaGetDeviceCount(&devices);
    if (e != cudaSuccess || devices == 0) {
        std::fprintf(stderr, "gpu-bench: no CUDA device visible (%s)\n",
                     e != cudaSuccess ? cudaGetErrorString(e) : "device count 0");
        return 1;
    }
    {  // 1. sgemm
        const int N = quick ? 136 : 4096;
        auto A = filled(size_t(N) * N, 1), B = filled(size_t(N) * N, 1);
        gpu::Buffer<float> C(size_t(N) * N), C_ref(size_t(N) * N);
        // A failed cuBLAS call would otherwise show up as nonsense timings and mismatches.
        auto cublas_check = [](cublasStatus_t status, const char* call) {
            if (status != CUBLAS_STATUS_SUCCESS)
                throw std::runtime_error(std::string(call) + " failed: cuBLAS status " +
                                         std::to_string(int(status)));
        };
        cublasHandle_t handle;
        cublas_check(cublasCreate(&handle), "cublasCreate");
        cublas_check(cublasSetMathMode(handle, CUBLAS_PEDANTIC_MATH),
                     "cublasSetMathMode");  // fp32, no TF32
        const float one = 1, zero = 0;
        // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: cuBLAS gets B first.
        auto cublas_run = [&](bool ta, bool tb, float* out) {
            cublas_check(cublasSgemm(handle, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                                     ta ? CUBLAS_OP_T : CUBLAS_OP_N, N, N, N, &one, B.data(), N,
                                     A.data(), N, &zero, out, N),
                         "cublasSgemm");
        };
        auto ours_run = [&](bool ta, bool tb, SgemmVersion v,
                            SgemmTile tile = SgemmTile::automatic) {
            sgemm_cuda(ta, tb, N, N, N, 1.0f, A.data(), N, B.data(), N, 0.0f, C.data(), N, 1, 0,
                       0, 0, v, tile);
        };
        const double tflop = 2.0 * N * N * N / 1e12;
        float warp = time_ms([&] { ours_run(false, false, SgemmVersion::warp_tiled); });
        float reg = time_ms([&] { ours_run(false, false, SgemmVersion::register_tiled); });
        float tiled = time_ms([&] { ours_run(false, false, SgemmVersion::tiled); });
        float cublas = time_ms([&] { cublas_run(false, false, C_ref.data()); });
        std::printf("sgemm %d^3: warp-tiled %.2f ms (%.1f TFLOP/s), register-tiled %.2f ms "
                    "(%.1f TFLOP/s), shared-tiled %.2f ms, cuBLAS %.2f ms (%.1f TFLOP/s): "
                    "warp-tiled/cuBLAS speed = %.2fx (target >= 0.85x), register-tiled/cuBLAS "
                    "= %.2fx\n",
                    N, warp, tflop / warp * 1e3, reg, tflop / reg * 1e3, tiled, cublas,
                    tflop / cublas * 1e3, cublas / warp, cublas / reg);
        target("sgemm " + std::to_string(N) + "^3 warp-tiled (default tile) / cuBLAS speed",
               cublas / warp, 0.85);
        // Every block-tile shape of the warp-tiled kernel at the four transposes (attention
        // uses NT for Q K^T and TN for P^T dO), each beside cuBLAS, and each result against
        // cuBLAS's: the same products in a different order of additions, so only rounding
        // may differ. The fastest shape is the one to make the default on this GPU.
        const struct { SgemmTile tile; const char* name; } tiles[] = {
            {SgemmTile::b128x128t8x8, "128x128, 8x8 (default)"},
            {SgemmTile::b128x64t8x8, "128x64, 8x8 (N <= 64)"},
            {SgemmTile::b128x128t8x16, "128x128, 8x16"},
            {SgemmTile::b128x256t8x16, "128x256, 8x16"},
            {SgemmTile::b256x128t16x8, "256x128, 16x8"}};
        float cublas_ms[4];
        std::vector<gpu::Buffer<float>> refs;  // cuBLAS's result for each transpose pair
        for (int t = 0; t < 4; t++) {
            const bool ta = t & 2, tb = t & 1;
            refs.emplace_back(size_t(N) * N);
            cublas_ms[t] = time_ms([&] { cublas_run(ta, tb, refs[t].data()); });
        }
        std::printf("sgemm %d^3 speed / cuBLAS (cuBLAS ms: NN %.2f NT %.2f TN %.2f TT %.2f)\n",
                    N, cublas_ms[0], cublas_ms[1], cublas_ms[2], cublas_ms[3]);
        double best = 0;
        const char* best_name = "";
        for (const auto& row : tiles) {
            const SgemmTile tile = row.tile;  // a plain name: clang 14 cannot capture a binding
            const char* name = row.name;
            std::printf("  %-22s", name);
            for (int t = 0; t < 4; t++) {
                const bool ta = t & 2, tb = t & 1;
                float w = time_ms([&] { ours_run(ta, tb, SgemmVersion::warp_tiled, tile); });
                double worst, scale;
                compare(C.data(), refs[t].data(), size_t(N) * N, worst, scale);
                std::printf("  %c%c %.2fx (%.1f TFLOP/s)%s", ta ? 'T' : 'N', tb ? 'T' : 'N',
                            cublas_ms[t] / w, tflop / w * 1e3,
                            worst <= 1e-4 * scale ? "" : " MISMATCH");
                if (t == 0 && cublas_ms[t] / w > best) best = cublas_ms[t] / w, best_name = name;
            }
            std::printf("\n");
        }
        target(std::string("sgemm NN, the fastest tile shape (") + best_name + ") / cuBLAS speed",
               best, 0.85);
        cublasDestroy(handle);
    }
    {  // 2. attention
        const int B = quick ? 2 : 8, h = quick ? 2 : 8, d_k = 64;
        const std::vector<int> ns = quick ? std::vector<int>{40, 72} : std::vector<int>{2048, 4096};
        for (int n : ns) {
            size_t sz = size_t(B) * h * n * d_k;
            auto Q = filled(sz, 1), K = filled(sz, 1), V = filled(sz, 1), dO = filled(sz, 1);
            gpu::Buffer<float> O(sz), dQ(sz), dK(sz), dV(sz), L(size_t(B) * h * n);
            gpu::reset_peak();
            size_t base = gpu::current_bytes();
            float fused = time_ms([&] {
                attention_fused_forward_cuda(Q.data(), K.data(), V.data(), O.data(), L.data(), B, h,
                                             n, d_k, false);
                attention_fused_backward_cuda(Q.data(), K.data(), V.data(), O.data(), L.data(),
                                              dO.data(), dQ.data(), dK.data(), dV.data(), B, h, n,
                                              d_k, false);
            });
            double fused_peak = double(gpu::peak_bytes());
            double flops = 4.0 * B * h * double(n) * n * d_k * 3.5;
            float naive = -1;
            double naive_peak = 0;
            // The two paths must agree at these sizes too: keep the fused results.
            gpu::Buffer<float> O_f(sz), dQ_f(sz), dK_f(sz);
            CUDA_CHECK(cudaMemcpy(O_f.data(), O.data(), sz * 4, cudaMemcpyDeviceToDevice));
            CUDA_CHECK(cudaMemcpy(dQ_f.data(), dQ.data(), sz * 4, cudaMemcpyDeviceToDevice));
            CUDA_CHECK(cudaMemcpy(dK_f.data(), dK.data(), sz * 4, cudaMemcpyDeviceToDevice));
            try {
                gpu::reset_peak();
                gpu::Buffer<float> P(size_t(B) * h * n * n);
                naive = time_ms([&] {
                    attention_naive_forward_cuda(Q.data(), K.data(), V.data(), O.data(), P.data(),
                                                 B, h, n, d_k, false);
                    attention_naive_backward_cuda(Q.data(), K.data(), V.data(), P.data(), dO.data(),
                                                  dQ.data(), dK.data(), dV.data(), B, h, n, d_k,
                                                  false);
                });
                naive_peak = double(gpu::peak_bytes());
            } catch (const std::bad_alloc&) {
            }
            if (naive >= 0) {
                const char* names[] = {"O", "dQ", "dK"};
                const float* fused_out[] = {O_f.data(), dQ_f.data(), dK_f.data()};
                const float* naive_out[] = {O.data(), dQ.data(), dK.data()};
                std::printf("attention n=%d fused vs naive:", n);
                for (int k = 0; k < 3; k++) {
                    double worst, scale;
                    compare(fused_out[k], naive_out[k], sz, worst, scale);
                    std::printf(" max |%s diff| = %.2g (max |%s| = %.3g)%s", names[k], worst,
                                names[k], scale, worst <= 1e-3 * scale ? "" : " MISMATCH");
                }
                std::printf("\n");
            }
            std::printf(
                "attention fwd+bwd n=%d: fused %.2f ms (%.1f TFLOP/s, target >= 20), naive "
                "%.2f ms: speed-up %.2fx (target >= 1.5x at 4096), peak %.0f MB vs %.0f MB: "
                "%.1fx less (target >= 8x)  [inputs %.0f MB]\n",
                n, fused, flops / fused / 1e9, naive, naive / fused, fused_peak / 1048576,
                naive_peak / 1048576, naive_peak / fused_peak, double(base) / 1048576);
            const std::string at = " at n=" + std::to_string(n);
            target("fused attention fwd+bwd TFLOP/s" + at, flops / fused / 1e9, 20);
            if (naive >= 0) {
                target("fused attention peak memory, naive / fused" + at,
                       naive_peak / fused_peak, 8);
                if (n == ns.back())
                    target("fused attention speed-up over naive" + at, naive / fused, 1.5);
            }
            // Where the time goes, for tuning: each kernel alone (the backward reuses the
            // forward's O and L), and the naive path's products alone, without the softmax
            // and the memory traffic of P.
            float fwd = time_ms([&] {
                attention_fused_forward_cuda(Q.data(), K.data(), V.data(), O.data(), L.data(), B, h,
                                             n, d_k, false);
            });
            float bwd = time_ms([&] {
                attention_fused_backward_cuda(Q.data(), K.data(), V.data(), O.data(), L.data(),
                                              dO.data(), dQ.data(), dK.data(), dV.data(), B, h, n,
                                              d_k, false);
            });
            std::printf("  fused forward %.2f ms (%.1f TFLOP/s), backward %.2f ms (%.1f TFLOP/s)",
                        fwd, flops / 3.5 / fwd / 1e9, bwd, flops * 2.5 / 3.5 / bwd / 1e9);
            try {
                gpu::Buffer<float> P(size_t(B) * h * n * n);
                const long qkv = long(n) * d_k, pp = long(n) * n;
                // The six products of the naive forward and backward (S, P V; dV, dP, dQ, dK).
                float products = time_ms([&] {
                    sgemm_cuda(false, true, n, n, d_k, 1.0f, Q.data(), d_k, K.data(), d_k, 0.0f,
                               P.data(), n, B * h, qkv, qkv, pp);
                    sgemm_cuda(false, false, n, d_k, n, 1.0f, P.data(), n, V.data(), d_k, 0.0f,
                               O.data(), d_k, B * h, pp, qkv, qkv);
                    sgemm_cuda(true, false, n, d_k, n, 1.0f, P.data(), n, dO.data(), d_k, 0.0f,
                               dV.data(), d_k, B * h, pp, qkv, qkv);
                    sgemm_cuda(false, true, n, n, d_k, 1.0f, dO.data(), d_k, V.data(), d_k, 0.0f,
                               P.data(), n, B * h, qkv, qkv, pp);
                    sgemm_cuda(false, false, n, d_k, n, 1.0f, P.data(), n, K.data(), d_k, 0.0f,
                               dQ.data(), d_k, B * h, pp, qkv, qkv);
                    sgemm_cuda(true, false, n, d_k, n, 1.0f, P.data(), n, Q.data(), d_k, 0.0f,
                               dK.data(), d_k, B * h, pp, qkv, qkv);
                });
                std::printf("; naive's 6 products alone %.2f ms (%.1f TFLOP/s)", products,
                            flops * 3.0 / 3.5 / products / 1e9);
            } catch (const std::bad_alloc&) {
            }
            std::printf("\n");
        }
    }
    {  // 3. LSTM gates
        const int n = quick ? 5 : 256, B = quick ? 2 : 8, d = quick ? 24 : 512;
        auto x = filled(size_t(n) * B * d, 1), Wi = filled(size_t(4) * d * d, 0.04f),
             Wh = filled(size_t(4) * d * d, 0.04f), b = filled(size_t(4) * d, 0.04f);
        gpu::Buffer<float> hb(size_t(n + 1) * B * d), cb(size_t(n + 1) * B * d),
            g(size_t(n) * B * 4 * d);
        float fused = time_ms([&] {
            lstm_forward_cuda(x.data(), Wi.data(), Wh.data(), b.data(), n, B, d, hb.data(),
                              cb.data(), g.data(), true);
        });
        gpu::Buffer<float> h_fused(size_t(n + 1) * B * d);
        CUDA_CHECK(
            cudaMemcpy(h_fused.data(), hb.data(), h_fused.size() * 4, cudaMemcpyDeviceToDevice));
        float unfused = time_ms([&] {
            lstm_forward_cuda(x.data(), Wi.data(), Wh.data(), b.data(), n, B, d, hb.data(),
                              cb.data(), g.data(), false);
        });
        double worst, scale;
        compare(h_fused.data() + size_t(B) * d, hb.data() + size_t(B) * d, size_t(n) * B * d, worst,
                scale);
        std::printf("LSTM fused vs unfused gates: max |h diff| = %.2g (max |h| = %.3g)%s\n", worst,
                    scale, worst <= 1e-5 * scale ? "" : " MISMATCH");
        // The same forward without the gates (only its GEMMs), so the gates' own time is the
        // difference: the target (>= 5x) is about the gate kernels, not the GEMMs around them.
        gpu::Buffer<float> xW(size_t(n) * B * 4 * d);
        float gemms = time_ms([&] {
            sgemm_cuda(false, true, n * B, 4 * d, d, 1.0f, x.data(), d, Wi.data(), d, 0.0f,
                       xW.data(), 4 * d);
            for (int t = 1; t <= n; t++)
                sgemm_cuda(false, true, B, 4 * d, d, 1.0f, hb.data() + size_t(t - 1) * B * d, d,
                           Wh.data(), d, 1.0f, xW.data() + size_t(t - 1) * B * 4 * d, 4 * d);
        });
        std::printf("LSTM forward n=%d B=%d d=%d: fused gates %.2f ms, unfused %.2f ms (whole "
                    "forward incl. GEMMs: %.2fx); GEMMs alone %.2f ms, so the gates take %.2f vs "
                    "%.2f ms: fused %.2fx faster (target >= 5x)\n",
                    n, B, d, fused, unfused, unfused / fused, gemms, fused - gemms,
                    unfused - gemms, (unfused - gemms) / (fused - gemms));
        target("LSTM gates, unfused / fused time", (unfused - gemms) / (fused - gemms), 5);
    }
    std::printf("\n");
    for (const std::string& line : g_targets) std::printf("%s\n", line.c_str());
} catch (const std::exception& e) {
    std::fprintf(stderr, "gpu-bench: %s\n", e.what());
    return 1;
}
