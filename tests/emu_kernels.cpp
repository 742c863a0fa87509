// The kernels of tests/test_cuda_emulator.cpp, declared in tests/emu.h: compiled with the access
// hooks where the emulator builds them (cuda/cuda.mk), as the kernels in cuda/ are, while the
// tests' own code goes without.
#include "tests/emu.h"

#include "cuda/emu/planted_race.cuh"

bool kernels_instrumented() { return emu::instrumented(); }

// Each block reverses its 64 values through shared memory: needs the barrier.
__global__ void block_reverse_kernel(const int* in, int* out) {
    SHARED(int, tile, [64]);
    int t = threadIdx.x, base = blockIdx.x * 64;
    tile[t] = in[base + t];
    __syncthreads();
    out[base + t] = tile[63 - t];
}

__global__ void warp_ops_kernel(int* out) {
    int lane = threadIdx.x % 32, t = threadIdx.x;
    int* o = out + (blockIdx.x * 64 + t) * 8;  // each block its own rows (blocks do not race)
    o[0] = __shfl_sync(0xffffffffu, lane * 10, 3);          // everyone reads lane 3
    o[1] = __shfl_down_sync(0xffffffffu, lane, 5);          // lane + 5, or its own past 31
    o[2] = __shfl_up_sync(0xffffffffu, lane, 2);            // lane - 2, or its own below 2
    o[3] = __shfl_xor_sync(0xffffffffu, lane, 1);           // neighbour swap
    o[4] = int(__ballot_sync(0xffffffffu, lane % 2 == 0));  // even lanes
    o[5] = __any_sync(0xffffffffu, lane == 31);
    o[6] = __all_sync(0xffffffffu, lane < 31);
    o[7] = __shfl_xor_sync(0xffffffffu, lane, 4, 8);  // within groups of 8
    atomicAdd(&out[gridDim.x * 64 * 8], 1);
    atomicMax(&out[gridDim.x * 64 * 8 + 1], int(blockIdx.x * 100 + t));
}

// One __syncthreads line, reached from both arms of a branch through a helper: on a GPU each
// arm's call is its own bar.sync (undefined behaviour when the arms diverge). Not inlined
// (each arm's call returns to its own place), and inlined (each arm holds its own copy).
namespace {
__device__ __attribute__((noinline)) void barrier_helper(int* out, int v) {
    out[threadIdx.x] = v;
    __syncthreads();
}
__device__ __attribute__((always_inline)) inline void inlined_barrier_helper(int* out, int v) {
    out[threadIdx.x] = v;
    __syncthreads();
}
}  // namespace
// Each arm's call sits between different side effects, so that no compiler merges the two
// calls into one (a host compiler may: nothing tells it a barrier must not move).
__global__ void helper_barrier_kernel(int* out, bool inlined) {
    if (threadIdx.x % 2) {
        atomicAdd(&out[63], 1);
        if (inlined)
            inlined_barrier_helper(out, 1);
        else
            barrier_helper(out, 1);
        out[32 + threadIdx.x] = 1;
    } else {
        if (inlined)
            inlined_barrier_helper(out, 2);
        else
            barrier_helper(out, 2);
        atomicAdd(&out[62], 1);
        out[32 + threadIdx.x] = 2;
    }
}
// The same helper called once by every thread, in a loop: one barrier, the same call each time.
__global__ void helper_barrier_loop_kernel(int* out) {
    for (int k = 0; k < 3; k++) {
        barrier_helper(out, k);
        inlined_barrier_helper(out, k);
    }
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
    if (threadIdx.x >= 16) return;                           // lanes 16..31 leave
    out[threadIdx.x] = __shfl_down_sync(0x0000ffffu, 1, 8);  // lane 8 + 8 = 16 is gone
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

// Lanes 0-15 reach a __shfl_sync and lanes 16-31 a __syncwarp, each naming the whole warp.
__global__ void shuffle_meets_syncwarp_kernel(int* out) {
    const int lane = threadIdx.x % 32;
    int v = lane;
    if (lane < 16)
        v = __shfl_sync(0xffffffffu, lane, 0);
    else
        __syncwarp();
    out[threadIdx.x] = v;
}

// Legal on sm_70 and later: the lanes of a divergent branch meet at two different call sites
// of the same operation with the same mask (a __syncwarp; a __shfl_xor_sync).
__global__ void two_site_warp_ops_kernel(int* out) {
    const int lane = threadIdx.x % 32;
    int v;
    if (lane % 2) {
        out[threadIdx.x] = lane;
        __syncwarp();
        v = __shfl_xor_sync(0xffffffffu, lane * 10, 1);
    } else {
        out[threadIdx.x] = -lane;
        __syncwarp();
        v = __shfl_xor_sync(0xffffffffu, lane * 10, 1);
    }
    out[32 + threadIdx.x] = v + out[threadIdx.x ^ 1];  // the neighbour's, after the __syncwarp
}

// One call site, two masks: lanes 0-15 name the whole warp, lanes 16-31 only themselves.
__global__ void mismatched_mask_kernel(int* out) {
    const int lane = threadIdx.x % 32;
    const unsigned mask = lane < 16 ? 0xffffffffu : 0xffff0000u;
    out[threadIdx.x] = __shfl_xor_sync(mask, lane, 1);
}

// Allowed: each half-warp shuffles among itself at its own call site; the upper half shuffles
// once more before the whole warp meets (the lower half waits there for it); and a full mask
// that names lanes that have exited (sm_70+ waits only for the live ones).
__global__ void half_warp_shuffles_kernel(int* out) {
    const int lane = threadIdx.x % 32;
    if (lane < 16)
        out[threadIdx.x] = __shfl_xor_sync(0x0000ffffu, lane, 1);
    else
        out[threadIdx.x] = __shfl_xor_sync(0xffff0000u, lane, 2);
    int v = lane;
    if (lane >= 16) v = __shfl_xor_sync(0xffff0000u, v, 1) + 100;
    out[64 + threadIdx.x] = __shfl_xor_sync(0xffffffffu, v, 16);
    if (lane >= 8) return;
    out[32 + threadIdx.x] = __shfl_xor_sync(0xffffffffu, lane, 4);  // lanes 8-31 have exited
}

// Each block reads its shared array before writing it: NaN every time, never the block before.
__global__ void shared_carry_over_kernel(float* out) {
    SHARED(float, cell, [32]);
    out[blockIdx.x * 32 + threadIdx.x] = cell[threadIdx.x];
    __syncthreads();
    cell[threadIdx.x] = float(blockIdx.x + 1);
}

// Thread 0 reads or writes row[index] (64 floats: 64 is one past the end), or five[index].
__global__ void shared_out_of_bounds_kernel(float* out, int index, bool write, bool small) {
    SHARED(float, row, [64]);
    SHARED(float, five, [5]);
    row[threadIdx.x] = 1.0f;
    if (threadIdx.x < 5) five[threadIdx.x] = 1.0f;
    __syncthreads();
    if (threadIdx.x != 0) return;
    float* a = small ? five : row;
    if (write)
        a[index] = 2.0f;
    else
        out[0] = a[index];
}

// Reads one float past the launch's dynamic shared memory (blockDim.x floats).
__global__ void dynamic_out_of_bounds_kernel(float* out) {
    DYNAMIC_SHARED(float, buf);
    buf[threadIdx.x] = 1.0f;
    __syncthreads();
    out[threadIdx.x] = buf[threadIdx.x + 1];  // the last thread reads buf[blockDim.x]
}

__global__ void __launch_bounds__(128) bounded_kernel(int* out) {
    CHECK_LAUNCH_BOUNDS(128);
    out[threadIdx.x] = 1;
}

// 40 KB of static shared memory plus the launch's dynamic bytes; and 64 KB static.
__global__ void static_40k_kernel(float* out) {
    SHARED(float, big, [10 * 1024]);
    DYNAMIC_SHARED(float, dyn);
    big[threadIdx.x] = 1.0f;
    dyn[threadIdx.x] = 2.0f;
    __syncthreads();
    out[threadIdx.x] = big[threadIdx.x] + dyn[threadIdx.x];
}
__global__ void static_64k_kernel(float* out) {
    SHARED(float, huge, [16 * 1024]);
    huge[threadIdx.x] = 1.0f;
    __syncthreads();
    out[threadIdx.x] = huge[threadIdx.x];
}

// Thread 0 reads p[index] into out[0], or writes p[index].
__global__ void global_rw_kernel(float* p, float* out, long index, bool write) {
    if (threadIdx.x != 0) return;
    if (write)
        p[index] = 1.0f;
    else
        out[0] = p[index];
}

// Planted misaligned accesses: UBSan's own alignment check (make sanitize) would stop them
// first, at the reference binding, before float4's check can name them; the emulator's check is
// tested. (Where the access hooks are built, GCC's alignment check reports to the emulator,
// which leaves a reference binding to what is read through it; the attribute would keep
// float4's functions out of line there, their line not the kernel's.)
#ifdef EMU_INSTRUMENTED
#define PLANTED_MISALIGNED
#else
#define PLANTED_MISALIGNED __attribute__((no_sanitize("alignment")))
#endif

// A float4 assigned between p + 32 (aligned) and p + offset floats, one way or the other.
PLANTED_MISALIGNED __global__ void float4_copy_kernel(float* p, int offset, bool store) {
    if (threadIdx.x != 0) return;
    float4* aligned = reinterpret_cast<float4*>(p + 32);
    float4* moved = reinterpret_cast<float4*>(p + offset);
    if (store)
        *moved = *aligned;
    else
        *aligned = *moved;
}

// A float4 copied from p + offset floats (`const float4 v = *q`: one 16-byte load on a GPU).
PLANTED_MISALIGNED __global__ void float4_construct_kernel(const float* p, float* out, int offset) {
    if (threadIdx.x != 0) return;
    const float4 v = *reinterpret_cast<const float4*>(p + offset);
    out[0] = v.x + v.y + v.z + v.w;
}

// A kernel nvcc never compiles: its test gives it a register count (emu::set_kernel_registers).
__global__ void register_heavy_kernel(int* out) { out[threadIdx.x] = 1; }
