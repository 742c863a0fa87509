// The CUDA emulator itself (cuda/emu/emulator.h): barriers, shuffles, votes, atomics behave as on a
// GPU, misuse is reported, and a planted missing __syncthreads is caught.
#include <doctest.h>

#include "cuda/launch.h"
#include "cuda/emu/planted_race.cuh"
#include "common/gemm.h"
#include "tests/util.h"

#include <iterator>
#include <regex>
#include <vector>

namespace {

// Each block reverses its 64 values through shared memory: needs the barrier.
__global__ void block_reverse_kernel(const int* in, int* out) {
    __shared__ int tile[64];
    int t = threadIdx.x, base = blockIdx.x * 64;
    tile[t] = in[base + t];
    __syncthreads();
    out[base + t] = tile[63 - t];
}

__global__ void warp_ops_kernel(int* out) {
    int lane = threadIdx.x % 32, t = threadIdx.x;
    int* o = out + t * 8;
    o[0] = __shfl_sync(0xffffffffu, lane * 10, 3);         // everyone reads lane 3
    o[1] = __shfl_down_sync(0xffffffffu, lane, 5);         // lane + 5, or its own past 31
    o[2] = __shfl_up_sync(0xffffffffu, lane, 2);           // lane - 2, or its own below 2
    o[3] = __shfl_xor_sync(0xffffffffu, lane, 1);          // neighbour swap
    o[4] = int(__ballot_sync(0xffffffffu, lane % 2 == 0)); // even lanes
    o[5] = __any_sync(0xffffffffu, lane == 31);
    o[6] = __all_sync(0xffffffffu, lane < 31);
    o[7] = __shfl_xor_sync(0xffffffffu, lane, 4, 8);       // within groups of 8
    atomicAdd(&out[64 * 8], 1);
    atomicMax(&out[64 * 8 + 1], int(blockIdx.x * 100 + t));
}

__global__ void divergent_barrier_kernel(int* out) {
    if (threadIdx.x < 16) {
        out[threadIdx.x] = 1;
        __syncthreads();  // half the block waits here...
    } else {
        out[threadIdx.x] = 2;
        __syncthreads();  // ...and half here: undefined on a GPU
    }
}

__global__ void shuffle_from_exited_lane_kernel(int* out) {
    if (threadIdx.x >= 16) return;                              // lanes 16..31 leave
    out[threadIdx.x] = __shfl_down_sync(0x0000ffffu, 1, 8);     // lane 8 + 8 = 16 is gone
}

__global__ void dynamic_shared_kernel(float* out) {
    DYNAMIC_SHARED(float, buf);  // (blockDim.x) floats, NaN-filled by the emulator at start
    out[threadIdx.x] = buf[threadIdx.x];  // read before anyone wrote: NaN shows it
    __syncthreads();
    buf[threadIdx.x] = float(threadIdx.x);
    __syncthreads();
    out[blockDim.x + threadIdx.x] = buf[blockDim.x - 1 - threadIdx.x];
}

// Writes one float of a dynamic shared buffer of any size.
__global__ void big_shared_kernel(float* out) {
    DYNAMIC_SHARED(float, buf);
    buf[threadIdx.x] = 1.0f;
    __syncthreads();
    out[threadIdx.x] = buf[threadIdx.x];
}

template <class T>
std::vector<T> copy_back(const T* p, size_t n) {
    std::vector<T> v(n);
    CUDA_CHECK(cudaMemcpy(v.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost));
    return v;
}

}  // namespace

TEST_CASE("cuda emulator: __syncthreads is a barrier, shared memory is per block") {
    const int blocks = 5;
    std::vector<int> in(64 * blocks);
    for (size_t i = 0; i < in.size(); i++) in[i] = int(i);
    gpu::Buffer<int> din(in.size()), dout(in.size());
    CUDA_CHECK(cudaMemcpy(din.data(), in.data(), in.size() * 4, cudaMemcpyHostToDevice));
    for (int workers : {1, 2}) {
        emu::set_workers(workers);
        launch_kernel(block_reverse_kernel, dim3(blocks), dim3(64), 0, din.data(), dout.data());
        auto out = copy_back(dout.data(), in.size());
        for (int b = 0; b < blocks; b++)
            for (int t = 0; t < 64; t++) REQUIRE(out[b * 64 + t] == in[b * 64 + 63 - t]);
    }
    emu::set_workers(0);
}

TEST_CASE("cuda emulator: warp shuffles, votes and atomics over 32 lanes") {
    gpu::Buffer<int> out(64 * 8 + 2);
    CUDA_CHECK(cudaMemset(out.data(), 0, (64 * 8 + 2) * sizeof(int)));
    launch_kernel(warp_ops_kernel, dim3(3), dim3(64), 0, out.data());
    auto o = copy_back(out.data(), 64 * 8 + 2);
    for (int t = 0; t < 64; t++) {
        int lane = t % 32;
        const int* r = &o[t * 8];
        CHECK(r[0] == 30);
        CHECK(r[1] == (lane + 5 < 32 ? lane + 5 : lane));
        CHECK(r[2] == (lane >= 2 ? lane - 2 : lane));
        CHECK(r[3] == (lane ^ 1));
        CHECK(unsigned(r[4]) == 0x55555555u);
        CHECK(r[5] == 1);
        CHECK(r[6] == 0);
        CHECK(r[7] == (lane ^ 4));
    }
    CHECK(o[64 * 8] == 3 * 64);
    CHECK(o[64 * 8 + 1] == 2 * 100 + 63);
}

TEST_CASE("cuda emulator: dynamic shared memory starts as NaN and is shared by the block") {
    gpu::Buffer<float> out(64);
    launch_kernel(dynamic_shared_kernel, dim3(1), dim3(32), 32 * sizeof(float), out.data());
    auto o = copy_back(out.data(), 64);
    for (int t = 0; t < 32; t++) {
        CHECK(std::isnan(o[t]));
        CHECK(o[32 + t] == float(31 - t));
    }
}

TEST_CASE("cuda emulator: misuse is reported, not hung") {
    gpu::Buffer<int> out(64);
    CHECK_THROWS_WITH_AS(launch_kernel(divergent_barrier_kernel, dim3(1), dim3(32), 0, out.data()),
                         doctest::Contains("__syncthreads"), std::runtime_error);
    CHECK(cudaGetLastError() != cudaSuccess);
    CHECK_THROWS_WITH_AS(
        launch_kernel(shuffle_from_exited_lane_kernel, dim3(1), dim3(32), 0, out.data()),
        doctest::Contains("exited"), std::runtime_error);
    CHECK_THROWS_WITH_AS(launch_kernel(block_reverse_kernel, dim3(1), dim3(2048), 0,
                                       static_cast<const int*>(out.data()), out.data()),
                         doctest::Contains("invalid configuration"), std::runtime_error);
    cudaGetLastError();
}

// Launches a GPU refuses must fail under the emulator too, or the tests would pass a kernel
// that never runs on a device.
TEST_CASE("cuda emulator: the device's launch rules are enforced") {
    gpu::Buffer<float> out(32);
    // More than 48 KB of dynamic shared memory needs the kernel's opt-in first.
    CHECK_THROWS_WITH_AS(launch_kernel(big_shared_kernel, dim3(1), dim3(32), 64 * 1024, out.data()),
                         doctest::Contains("cudaFuncSetAttribute"), std::runtime_error);
    CHECK(cudaGetLastError() == cudaErrorInvalidValue);
    CHECK(cudaFuncSetAttribute(big_shared_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               300 * 1024) == cudaErrorInvalidValue);  // over sm_90's 227 KB
    CUDA_CHECK(cudaFuncSetAttribute(big_shared_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    64 * 1024));
    launch_kernel(big_shared_kernel, dim3(1), dim3(32), 64 * 1024, out.data());
    CHECK(copy_back(out.data(), 32) == std::vector<float>(32, 1.0f));
    CHECK_THROWS_AS(launch_kernel(big_shared_kernel, dim3(1), dim3(32), 65 * 1024, out.data()),
                    std::runtime_error);
    // Grid y and z stop at 65535 (x goes to 2^31 - 1); block z at 64.
    CHECK_THROWS_WITH_AS(launch_kernel(big_shared_kernel, dim3(1, 65536), dim3(32), 0, out.data()),
                         doctest::Contains("65535"), std::runtime_error);
    CHECK_THROWS_AS(launch_kernel(big_shared_kernel, dim3(1), dim3(1, 1, 65), 0, out.data()),
                    std::runtime_error);
    cudaGetLastError();
}

// The planted bug: the tiled matmul without the barrier between loading and using the tiles.
TEST_CASE("cuda emulator: a planted missing __syncthreads is caught") {
    const int M = 40, N = 33, K = 50;
    std::vector<float> A(M * K), B(K * N), ref(M * N);
    for (size_t i = 0; i < A.size(); i++) A[i] = float(int(i * 7 % 13) - 6) / 8;
    for (size_t i = 0; i < B.size(); i++) B[i] = float(int(i * 5 % 11) - 5) / 8;
    sgemm_reference(false, false, M, N, K, 1.0f, A.data(), K, B.data(), N, 0.0f, ref.data(), N);
    gpu::Buffer<float> dA(A.size()), dB(B.size()), dC(ref.size());
    CUDA_CHECK(cudaMemcpy(dA.data(), A.data(), A.size() * 4, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dB.data(), B.data(), B.size() * 4, cudaMemcpyHostToDevice));
    for (bool with_barrier : {true, false}) {
        CAPTURE(with_barrier);
        bool same = emu::same_under_both_schedules(
            [&] { planted_tiled_matmul(dA.data(), dB.data(), dC.data(), M, N, K, with_barrier); },
            [&] { return copy_back(dC.data(), ref.size()); });
        auto C = copy_back(dC.data(), ref.size());
        bool close = true;
        for (size_t i = 0; i < C.size(); i++) close = close && std::fabs(C[i] - ref[i]) < 1e-4f;
        // With the barrier: right, and the same whichever order the threads run in. Without it:
        // the schedule check flags the kernel (and its result is wrong too).
        CHECK(same == with_barrier);
        CHECK(close == with_barrier);
    }
}

// gpu-bench (what gpu-check measures the speed targets with) at small sizes on the emulator,
// with cuda/emu/cublas_emulated.h for cuBLAS: every section runs, and its own cross-checks (each
// sgemm tile shape and transpose against cuBLAS, fused against naive attention, FlashAttention
// version 1 against version 2, fused against unfused LSTM gates) find no mismatch. Its times
// mean nothing here.
TEST_CASE("cuda emulator: gpu-bench --quick runs every section and every cross-check agrees") {
    auto r = testutil::run("gpu-bench-emu", "--quick");
    REQUIRE(r.exit_code == 0);
    CHECK(r.err.find("gpu-bench:") == std::string::npos);  // (sanitizer builds add warnings)
    CHECK(r.out.find("MISMATCH") == std::string::npos);
    for (const char* line :
         {"sgemm 136^3: warp-tiled", "256x128, 16x8", "attention n=72 fused vs naive",
          "attention fwd+bwd n=72", "naive's 6 products alone",
          "FlashAttention version 1 (one thread per row): forward", "LSTM fused vs unfused gates",
          "LSTM forward n=5", "target LSTM gates, unfused / fused time"})
        CHECK_MESSAGE(r.out.find(line) != std::string::npos, line);
    // Both sequence lengths time version 1 and compare its O, dQ and dK with version 2's.
    const std::regex v1(R"(max \|dK diff\| = [0-9.e+-]+ \(against version 2\))");
    CHECK(std::distance(std::sregex_iterator(r.out.begin(), r.out.end(), v1),
                        std::sregex_iterator()) == 2);
    // Every tile shape reports all four transposes.
    const std::regex tt(R"( TT [0-9.]+x )");
    CHECK(std::distance(std::sregex_iterator(r.out.begin(), r.out.end(), tt),
                        std::sregex_iterator()) == 5);
}

TEST_CASE("cuda emulator: gpu-bench --help and an unknown argument return at once") {
    // Both used to start the full benchmark (minutes on a GPU, hours on the emulator).
    auto r = testutil::run("gpu-bench-emu", "--help", "", 60);
    CHECK(r.exit_code == 0);
    CHECK(r.out.rfind("usage: gpu-bench [--quick]\n", 0) == 0);
    CHECK(r.err.empty());
    r = testutil::run("gpu-bench-emu", "--bogus", "", 60);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err ==
          "gpu-bench: error: unexpected argument '--bogus': the only option is --quick "
          "(see --help)\n");
    r = testutil::run("gpu-bench-emu", "--quick extra", "", 60);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("'extra'") != std::string::npos);
}
