// `make emu-tsan`: the emulator with one OS thread per CUDA thread (EMU_THREADS), built with
// -fsanitize=thread. In that mode a missing __syncthreads is a real data race. One unit: the
// kernels and the emulator's own sources are included whole.
//
//   emu-tsan clean     the tiled sgemms (checked and unchecked loops, few rows, split-K), the
//                      reductions and both FlashAttention versions at small shapes:
//                      ThreadSanitizer must stay silent
//   emu-tsan planted   the tiled matmul with its first barrier removed (cuda/emu/planted_race.cuh):
//                      ThreadSanitizer must report a data race
#include "cuda/attention_flash.cu"
#include "cuda/device_memory.cu"
#include "cuda/emu/checks.cpp"
#include "cuda/emu/planted_race.cuh"
#include "cuda/emu/runtime.cpp"
#include "cuda/emu/scheduler.cpp"
#include "cuda/reduce.cu"
#include "cuda/sgemm.cu"
#include "cuda/softmax.cu"

#include <cstdio>
#include <cstring>
#include <vector>

namespace {

gpu::Buffer<float> filled(size_t n, float scale) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; i++) v[i] = scale * float(int(i * 37 % 17) - 8) / 8;
    gpu::Buffer<float> d(n);
    CUDA_CHECK(cudaMemcpy(d.data(), v.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    return d;
}

}  // namespace

int main(int argc, char** argv) {
    const char* mode = argc > 1 ? argv[1] : "";
    if (std::strcmp(mode, "planted") == 0) {
        const int M = 20, N = 20, K = 20;
        auto A = filled(M * K, 1), B = filled(K * N, 1);
        gpu::Buffer<float> C(M * N);
        planted_tiled_matmul(A.data(), B.data(), C.data(), M, N, K, false);
        std::puts("planted kernel ran");
        return 0;
    }
    if (std::strcmp(mode, "clean") == 0) {
        const int M = 20, N = 18, K = 20;
        auto A = filled(M * K, 1), B = filled(K * N, 1);
        gpu::Buffer<float> C(M * N), s(1);
        planted_tiled_matmul(A.data(), B.data(), C.data(), M, N, K, true);
        sgemm_cuda(false, true, M, N, K, 1.0f, A.data(), K, B.data(), K, 0.0f, C.data(), N, 1, 0,
                   0, 0, SgemmVersion::tiled);
        sgemm_cuda(false, true, M, N, K, 1.0f, A.data(), K, B.data(), K, 0.0f, C.data(), N, 1, 0,
                   0, 0, SgemmVersion::warp_tiled, SgemmTile::b128x128t8x8);  // checked loop
        {  // one whole 128x128 block: the unchecked loop; and the few-rows kernel of an LSTM step
            auto A2 = filled(128 * 16, 1), B2 = filled(16 * 128, 1);
            gpu::Buffer<float> C2(128 * 128);
            sgemm_cuda(false, false, 128, 128, 16, 1.0f, A2.data(), 16, B2.data(), 128, 0.0f,
                       C2.data(), 128);
            sgemm_cuda(false, false, 8, 40, 37, 1.0f, A2.data(), 37, B2.data(), 40, 0.0f,
                       C2.data(), 40);
        }
        {  // split-K (2 slices, then their sum) and the few-rows kernel's split (2 slices)
            auto A3 = filled(1100 * 24, 1), B3 = filled(1100 * 40, 1);
            gpu::Buffer<float> C3(40 * 40);
            sgemm_cuda(true, false, 24, 40, 1100, 1.0f, A3.data(), 24, B3.data(), 40, 0.0f,
                       C3.data(), 40);
            sgemm_cuda(false, false, 8, 40, 600, 1.0f, A3.data(), 600, B3.data(), 40, 0.0f,
                       C3.data(), 40);
        }
        sum_cuda(A.data(), s.data(), M * K);
        softmax_forward_cuda(A.data(), C.data(), M, N, true);
        const int Bsz = 1, h = 1, n = 70, d_k = 24;  // n = 70: 3 tiles of 32 rows, 2 of 64
        const size_t sz = size_t(Bsz) * h * n * d_k;
        auto Q = filled(sz, 1), Kt = filled(sz, 0.5f), V = filled(sz, 1), dO = filled(sz, 1);
        gpu::Buffer<float> O(sz), L(n), dQ(sz), dK(sz), dV(sz);
        for (FlashVersion v : {FlashVersion::simple, FlashVersion::register_tiled}) {
            attention_fused_forward_cuda(Q.data(), Kt.data(), V.data(), O.data(), L.data(), Bsz, h,
                                         n, d_k, true, v);
            attention_fused_backward_cuda(Q.data(), Kt.data(), V.data(), O.data(), L.data(),
                                          dO.data(), dQ.data(), dK.data(), dV.data(), Bsz, h, n,
                                          d_k, true, v);
        }
        std::puts("clean kernels ran");
        return 0;
    }
    std::fprintf(stderr, "usage: emu-tsan clean|planted\n");
    return 2;
}
