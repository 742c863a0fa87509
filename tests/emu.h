// What the emulator's tests share (tests/test_cuda_emulator.cpp, tests/test_emulator_checks.cpp):
// what a launch throws, a check turned off for a scope; and the kernels of test_cuda_emulator.cpp,
// which tests/emu_kernels.cpp compiles with the access hooks where the tests' own code goes
// without (cuda/cuda.mk).
#pragma once
#include "cuda/launch.h"

#include <exception>
#include <string>

// What a launch throws ("" when it does not).
template <class Launch>
std::string launch_error(Launch launch) {
    try {
        launch();
    } catch (const std::exception& e) {
        cudaGetLastError();
        return e.what();
    }
    return "";
}

// With one of the emulator's checks turned off for the scope.
struct Without {
    unsigned saved;
    explicit Without(unsigned check) : saved(emu::config().checks) {
        emu::config().checks &= ~check;
    }
    ~Without() { emu::config().checks = saved; }
};

// ---- tests/emu_kernels.cpp ----------------------------------------------------------------
bool kernels_instrumented();  // compiled with the access hooks (emu::instrumented() there)
__global__ void block_reverse_kernel(const int* in, int* out);
__global__ void warp_ops_kernel(int* out);
__global__ void helper_barrier_kernel(int* out, bool inlined);
__global__ void helper_barrier_loop_kernel(int* out);
__global__ void divergent_barrier_kernel(int* out);
__global__ void shuffle_from_exited_lane_kernel(int* out);
__global__ void dynamic_shared_kernel(float* out);
__global__ void big_shared_kernel(float* out);
__global__ void shuffle_meets_syncwarp_kernel(int* out);
__global__ void two_site_warp_ops_kernel(int* out);
__global__ void mismatched_mask_kernel(int* out);
__global__ void half_warp_shuffles_kernel(int* out);
__global__ void shared_carry_over_kernel(float* out);
__global__ void shared_out_of_bounds_kernel(float* out, int index, bool write, bool small);
__global__ void dynamic_out_of_bounds_kernel(float* out);
__global__ void bounded_kernel(int* out);
__global__ void static_40k_kernel(float* out);
__global__ void static_64k_kernel(float* out);
__global__ void global_rw_kernel(float* p, float* out, long index, bool write);
__global__ void float4_copy_kernel(float* p, int offset, bool store);
__global__ void float4_construct_kernel(const float* p, float* out, int offset);
__global__ void register_heavy_kernel(int* out);
// cuda/emu/planted_race.cuh's tiled matmul, its first barrier left out unless asked for.
void planted_tiled_matmul(const float* A, const float* B, float* C, int M, int N, int K,
                          bool with_first_barrier);
