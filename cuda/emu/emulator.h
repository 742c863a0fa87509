// A CPU emulator for the subset of CUDA the kernels in cuda/ use, so the same .cu source
// compiles with g++ and runs in `make test` on machines without a GPU.
//
// What it models (and how):
//   gridDim blockIdx blockDim threadIdx   per-thread values behind macros
//   __shared__ (static)                   one object per block: `static thread_local` (fibers:
//                                          a worker runs one block at a time) or `static`
//                                          (OS-thread mode runs one block at a time)
//   DYNAMIC_SHARED(T, name)               the launch's dynamic shared bytes, one copy per block,
//                                          filled with NaN bytes (0xFF) at every block start
//   __syncthreads()                       a real barrier over the block's threads
//   __syncwarp, __shfl*_sync, votes       a rendezvous of the warp's 32 lanes
//   atomicAdd atomicMax                   std::atomic_ref (blocks may run on several workers)
//   cudaMalloc                            host memory filled with NaN bytes (CUDA does not zero)
//   launch rules                          block and grid limits, and dynamic shared memory over
//                                          48 KB only after cudaFuncSetAttribute: a launch a
//                                          GPU would refuse throws here too
//
// Two ways to run a block's threads:
//   fibers (default)   one fiber per CUDA thread, all on one OS thread; a barrier is
//                      a yield to the block's scheduler. Fast, deterministic. emu::set_schedule
//                      runs the threads forward or in reverse between barriers: a kernel whose
//                      result changes with the order has a missing barrier (a race).
//   EMU_THREADS        one std::thread per CUDA thread and std::barrier: slow, but a missing
//                      __syncthreads is a real data race that ThreadSanitizer reports
//                      (`make emu-tsan`).
// Errors (a barrier not every thread reaches, a shuffle reading an exited lane, a warp
// deadlock) make the launch throw std::runtime_error with a message naming the problem.
#pragma once
#if defined(__CUDACC__)
#error "cuda/emu/emulator.h is for host compilers; nvcc uses the real CUDA runtime"
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <math.h>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>
#include <unistd.h>
#include <memory>
#ifdef EMU_THREADS
#include <barrier>
#else
#include <ucontext.h>
#endif

// Fiber switches: a 6-register swap on x86-64 (swapcontext also saves the signal mask, a system
// call per switch that made the emulator several times slower); ucontext elsewhere and under
// the sanitizers, which know how to follow swapcontext.
#if !defined(EMU_THREADS) && defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(__SANITIZE_THREAD__)
#define EMU_FAST_SWITCH 1
extern "C" void emu_switch_stack(void** save_sp, void* new_sp);
__asm__(R"(
    .text
    .weak emu_switch_stack
    .type emu_switch_stack, @function
emu_switch_stack:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size emu_switch_stack, .-emu_switch_stack
)");
#endif

// ---- qualifiers --------------------------------------------------------------------------
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#ifdef EMU_THREADS
#define __shared__ static
#else
#define __shared__ static thread_local
#endif
#define DYNAMIC_SHARED(T, name) T* name = reinterpret_cast<T*>(::emu::dynamic_shared())

struct dim3 {
    unsigned x, y, z;
    constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
using uint3 = dim3;

namespace emu {

enum class Schedule { forward, reverse };

struct BlockState;
struct ThreadState {
    dim3 thread_idx;
    int tid = 0;            // linear thread index in the block
    BlockState* block = nullptr;
    unsigned warp_ops = 0;  // how many warp rendezvous this lane has passed (buffer parity)
};

struct Warp {
    uint64_t slots[2][32] = {};  // lane values, double-buffered by rendezvous parity
    unsigned arrived_mask[2] = {0, 0};   // lanes that deposited into each buffer
    unsigned released_mask[2] = {0, 0};  // the lanes present when that rendezvous completed
    int waiting = 0;             // fibers: lanes parked at the current rendezvous
    int alive = 0;               // lanes not yet exited
    unsigned alive_mask = 0;
#ifdef EMU_THREADS
    std::unique_ptr<std::barrier<>> bar;
#endif
};

struct BlockState {
    dim3 grid_dim, block_dim, block_idx;
    std::vector<unsigned char>* dyn_shared = nullptr;
    std::vector<Warp> warps;
    std::string error;  // first error seen in this block
};

inline thread_local ThreadState* t_current = nullptr;
inline ThreadState& cur() { return *t_current; }

struct Config {
    Schedule schedule = Schedule::forward;
    int workers = 0;  // 0: min(hardware threads, 4)
    size_t stack_bytes = 64 * 1024;
};
inline Config& config() {
    static Config c;
    return c;
}
inline void set_schedule(Schedule s) { config().schedule = s; }
inline void set_workers(int n) { config().workers = n; }

inline void* dynamic_shared() { return cur().block->dyn_shared->data(); }

// ---- one block on fibers -------------------------------------------------------------------
#ifndef EMU_THREADS
struct Fiber {
#ifdef EMU_FAST_SWITCH
    void* sp = nullptr;
#else
    ucontext_t ctx;
#endif
    std::unique_ptr<char[]> stack;  // uninitialised: touching 256 stacks per launch cost seconds
    size_t stack_size = 0;
    ThreadState ts;
    enum State { running, at_barrier, at_warp, done } state = running;
};

struct FiberBlock {
#ifdef EMU_FAST_SWITCH
    void* scheduler_sp = nullptr;
#else
    ucontext_t scheduler;
#endif
    std::vector<Fiber> fibers;
    BlockState bs;
    std::vector<unsigned char> dyn;
    const std::function<void()>* body = nullptr;
    int current = -1;
    int at_barrier = 0;
    const char* barrier_file = nullptr;  // where the first waiting thread called __syncthreads
    int barrier_line = 0;
};
inline thread_local FiberBlock* t_fb = nullptr;

inline void yield_to_scheduler() {
    FiberBlock& fb = *t_fb;
#ifdef EMU_FAST_SWITCH
    emu_switch_stack(&fb.fibers[fb.current].sp, fb.scheduler_sp);
#else
    swapcontext(&fb.fibers[fb.current].ctx, &fb.scheduler);
#endif
    t_current = &fb.fibers[fb.current].ts;
}

inline void fiber_entry() {
    FiberBlock& fb = *t_fb;
    (*fb.body)();
    Fiber& f = fb.fibers[fb.current];
    f.state = Fiber::done;
#ifdef EMU_FAST_SWITCH
    yield_to_scheduler();  // never resumed: a done fiber is not scheduled again
    std::abort();
#endif
    // (ucontext: returning switches to uc_link, the scheduler)
}

// Point a fiber at fiber_entry on an empty stack.
inline void start_fiber(FiberBlock& fb, Fiber& f) {
#ifdef EMU_FAST_SWITCH
    (void)fb;
    uintptr_t top = (reinterpret_cast<uintptr_t>(f.stack.get()) + f.stack_size) & ~uintptr_t(15);
    void** sp = reinterpret_cast<void**>(top - 16);  // 16-aligned slot for the return address
    sp[0] = reinterpret_cast<void*>(&fiber_entry);     // `ret` jumps here, rsp = 8 mod 16
    sp[1] = nullptr;
    sp -= 6;                                           // rbp rbx r12 r13 r14 r15, popped first
    for (int k = 0; k < 6; k++) sp[k] = nullptr;
    f.sp = sp;
#else
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = f.stack.get();
    f.ctx.uc_stack.ss_size = f.stack_size;
    f.ctx.uc_link = &fb.scheduler;
    makecontext(&f.ctx, fiber_entry, 0);
#endif
}

[[noreturn]] inline void fail_in_thread(const std::string& msg) {
    FiberBlock& fb = *t_fb;
    if (fb.bs.error.empty()) fb.bs.error = msg;
    // Park this fiber forever: the scheduler sees the error and abandons the block.
    fb.fibers[fb.current].state = Fiber::at_barrier;
    for (;;) yield_to_scheduler();
}

inline void syncthreads(const char* file, int line) {
    FiberBlock& fb = *t_fb;
    if (fb.at_barrier == 0) {
        fb.barrier_file = file;
        fb.barrier_line = line;
    } else if (line != fb.barrier_line || std::strcmp(file, fb.barrier_file) != 0) {
        fail_in_thread("threads of one block wait at different __syncthreads (" +
                       std::string(fb.barrier_file) + ":" + std::to_string(fb.barrier_line) +
                       " and " + file + ":" + std::to_string(line) +
                       "): a barrier in divergent code is undefined behaviour");
    }
    fb.fibers[fb.current].state = Fiber::at_barrier;
    fb.at_barrier++;
    yield_to_scheduler();
}

// Deposit this lane's value, wait for every live lane of the warp, return the slot buffer.
inline const uint64_t* warp_rendezvous(uint64_t value, unsigned mask) {
    FiberBlock& fb = *t_fb;
    ThreadState& ts = fb.fibers[fb.current].ts;
    Warp& w = fb.bs.warps[ts.tid / 32];
    int lane = ts.tid % 32, buf = ts.warp_ops & 1;
    if (!(mask >> lane & 1))
        fail_in_thread("warp operation: lane " + std::to_string(lane) +
                       " is not in the mask it passed");
    w.slots[buf][lane] = value;
    w.arrived_mask[buf] |= 1u << lane;
    w.waiting++;
    fb.fibers[fb.current].state = Fiber::at_warp;
    yield_to_scheduler();
    ts.warp_ops++;
    return w.slots[buf];
}

inline void run_block_fibers(FiberBlock& fb, int nthreads) {
    const bool reverse = config().schedule == Schedule::reverse;
    int alive = nthreads;
    t_fb = &fb;
    for (int t = 0; t < nthreads; t++) {
        Fiber& f = fb.fibers[t];
        f.state = Fiber::running;
        f.ts.block = &fb.bs;
        f.ts.warp_ops = 0;
        start_fiber(fb, f);
    }
    fb.at_barrier = 0;
    for (Warp& w : fb.bs.warps) {
        w.waiting = 0;
        w.arrived_mask[0] = w.arrived_mask[1] = 0;
        w.released_mask[0] = w.released_mask[1] = 0;
    }
    for (int t = 0; t < nthreads; t++) {
        Warp& w = fb.bs.warps[t / 32];
        if (t % 32 == 0) w.alive = 0, w.alive_mask = 0;
        w.alive++;
        w.alive_mask |= 1u << (t % 32);
    }
    while (alive > 0) {
        bool ran = false;
        for (int k = 0; k < nthreads; k++) {
            int t = reverse ? nthreads - 1 - k : k;
            Fiber& f = fb.fibers[t];
            if (f.state != Fiber::running) continue;
            fb.current = t;
            t_current = &f.ts;
#ifdef EMU_FAST_SWITCH
            emu_switch_stack(&fb.scheduler_sp, f.sp);
#else
            swapcontext(&fb.scheduler, &f.ctx);
#endif
            ran = true;
            if (!fb.bs.error.empty()) return;
            if (f.state == Fiber::done) {
                alive--;
                Warp& w = fb.bs.warps[t / 32];
                w.alive--;
                w.alive_mask &= ~(1u << (t % 32));
            }
        }
        // Release warps whose live lanes have all arrived.
        bool released = false;
        for (size_t wi = 0; wi < fb.bs.warps.size(); wi++) {
            Warp& w = fb.bs.warps[wi];
            if (w.waiting == 0 || w.waiting != w.alive) continue;
            for (int lane = 0; lane < 32; lane++) {
                int t = int(wi) * 32 + lane;
                if (t < nthreads && fb.fibers[t].state == Fiber::at_warp) {
                    int buf = fb.fibers[t].ts.warp_ops & 1;
                    w.released_mask[buf] = w.arrived_mask[buf];
                    w.arrived_mask[buf] = 0;
                    break;
                }
            }
            for (int lane = 0; lane < 32; lane++) {
                int t = int(wi) * 32 + lane;
                if (t < nthreads && fb.fibers[t].state == Fiber::at_warp)
                    fb.fibers[t].state = Fiber::running;
            }
            w.waiting = 0;
            released = true;
        }
        // Release the block barrier once every live thread waits at it.
        if (fb.at_barrier > 0 && fb.at_barrier == alive) {
            for (int t = 0; t < nthreads; t++)
                if (fb.fibers[t].state == Fiber::at_barrier) fb.fibers[t].state = Fiber::running;
            fb.at_barrier = 0;
            released = true;
        }
        if (!ran && !released && alive > 0) {
            fb.bs.error = fb.at_barrier > 0
                              ? "__syncthreads: " + std::to_string(fb.at_barrier) + " of " +
                                    std::to_string(alive) +
                                    " live threads wait at a barrier the others never reach "
                                    "(a barrier inside a divergent branch?)"
                              : "warp deadlock: lanes wait at different warp operations";
            return;
        }
    }
}
#endif  // !EMU_THREADS

// ---- one block on OS threads (EMU_THREADS, for ThreadSanitizer) -----------------------------
#ifdef EMU_THREADS
struct ThreadBlock {
    BlockState bs;
    std::vector<unsigned char> dyn;
    std::unique_ptr<std::barrier<>> bar;
    std::mutex error_mutex;
};
inline thread_local ThreadBlock* t_tb = nullptr;

struct ThreadFailure {};
[[noreturn]] inline void fail_in_thread(const std::string& msg) {
    {
        std::lock_guard<std::mutex> lock(t_tb->error_mutex);
        if (t_tb->bs.error.empty()) t_tb->bs.error = msg;
    }
    std::fprintf(stderr, "emulator: %s\n", msg.c_str());
    std::abort();  // a thread cannot leave a std::barrier half-way; stop loudly
}

inline void syncthreads(const char*, int) { t_tb->bar->arrive_and_wait(); }

inline const uint64_t* warp_rendezvous(uint64_t value, unsigned mask) {
    ThreadState& ts = cur();
    Warp& w = t_tb->bs.warps[ts.tid / 32];
    int lane = ts.tid % 32, buf = ts.warp_ops & 1;
    if (!(mask >> lane & 1)) fail_in_thread("warp operation: lane not in its own mask");
    w.slots[buf][lane] = value;
    w.bar->arrive_and_wait();
    ts.warp_ops++;
    return w.slots[buf];
}
#endif

// ---- warp operations over the rendezvous --------------------------------------------------
template <class T>
inline uint64_t to_bits(T v) {
    static_assert(sizeof(T) <= 8, "shuffle of a type wider than 8 bytes");
    uint64_t b = 0;
    std::memcpy(&b, &v, sizeof(T));
    return b;
}
template <class T>
inline T from_bits(uint64_t b) {
    T v;
    std::memcpy(&v, &b, sizeof(T));
    return v;
}
inline int lane_id() { return cur().tid % 32; }

inline void check_source_lane(int src) {
#ifndef EMU_THREADS
    Warp& w = t_fb->bs.warps[cur().tid / 32];
    if (!(w.released_mask[(cur().warp_ops - 1) & 1] >> src & 1))
        fail_in_thread("shuffle reads lane " + std::to_string(src) +
                       ", which has exited or does not exist (undefined on a GPU)");
#else
    (void)src;
#endif
}

template <class T>
inline T shfl_to(unsigned mask, T v, int src_lane_fn_result, bool keep_own) {
    const uint64_t* slots = warp_rendezvous(to_bits(v), mask);
    if (keep_own) return v;
    check_source_lane(src_lane_fn_result);
    return from_bits<T>(slots[src_lane_fn_result]);
}

}  // namespace emu

#define threadIdx (::emu::cur().thread_idx)
#define blockIdx (::emu::cur().block->block_idx)
#define blockDim (::emu::cur().block->block_dim)
#define gridDim (::emu::cur().block->grid_dim)
#define warpSize 32

#define __syncthreads() ::emu::syncthreads(__FILE__, __LINE__)
inline void __syncwarp(unsigned mask = 0xffffffffu) { ::emu::warp_rendezvous(0, mask); }

template <class T>
inline T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
    int lane = ::emu::lane_id();
    int target = (lane & ~(width - 1)) + (src & (width - 1));
    return ::emu::shfl_to(mask, v, target, false);
}
template <class T>
inline T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
    int lane = ::emu::lane_id();
    int in_seg = lane & (width - 1);
    bool own = in_seg + int(delta) >= width;
    return ::emu::shfl_to(mask, v, own ? lane : lane + int(delta), own);
}
template <class T>
inline T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32) {
    int lane = ::emu::lane_id();
    int in_seg = lane & (width - 1);
    bool own = in_seg - int(delta) < 0;
    return ::emu::shfl_to(mask, v, own ? lane : lane - int(delta), own);
}
template <class T>
inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
    int lane = ::emu::lane_id();
    int target = lane ^ lane_mask;
    bool own = (target & ~(width - 1)) != (lane & ~(width - 1));
    return ::emu::shfl_to(mask, v, own ? lane : target, own);
}
inline unsigned __ballot_sync(unsigned mask, int pred) {
    const uint64_t* slots = ::emu::warp_rendezvous(pred ? 1 : 0, mask);
    unsigned bits = 0;
    for (int lane = 0; lane < 32; lane++)
        if ((mask >> lane & 1) && slots[lane]) bits |= 1u << lane;
    return bits;
}
inline int __any_sync(unsigned mask, int pred) { return __ballot_sync(mask, pred) != 0; }
inline int __all_sync(unsigned mask, int pred) {
    // Lanes in the mask that exist must all vote true.
    unsigned votes = __ballot_sync(mask, pred);
#ifndef EMU_THREADS
    unsigned present = ::emu::t_fb->bs.warps[::emu::cur().tid / 32].released_mask[
        (::emu::cur().warp_ops - 1) & 1] & mask;
#else
    unsigned present = mask;
#endif
    return (votes & present) == present;
}

template <class T>
inline T atomicAdd(T* address, T value) {
    return std::atomic_ref<T>(*address).fetch_add(value);
}
template <class T>
inline T atomicMax(T* address, T value) {
    std::atomic_ref<T> a(*address);
    T old = a.load();
    while (old < value && !a.compare_exchange_weak(old, value)) {
    }
    return old;
}
template <class T>
inline T __ldg(const T* p) { return *p; }

// The vector types kernels use for 8- and 16-byte loads; same size and alignment as CUDA's, so
// reinterpret_cast<const float4*> on a misaligned address is as wrong here as on the device.
struct alignas(8) float2 {
    float x, y;
};
struct alignas(16) float4 {
    float x, y, z, w;
};
inline float2 make_float2(float x, float y) { return {x, y}; }
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline int __float_as_int(float x) {
    int i;
    std::memcpy(&i, &x, 4);
    return i;
}
inline float __int_as_float(int i) {
    float x;
    std::memcpy(&x, &i, 4);
    return x;
}
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }

// ---- the runtime API subset ---------------------------------------------------------------
enum cudaError_t {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorLaunchFailure = 719
};
enum cudaMemcpyKind {
    cudaMemcpyHostToHost,
    cudaMemcpyHostToDevice,
    cudaMemcpyDeviceToHost,
    cudaMemcpyDeviceToDevice,
    cudaMemcpyDefault
};
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize };
struct cudaDeviceProp {
    char name[256];
    size_t totalGlobalMem;
    int major, minor, multiProcessorCount;
    size_t sharedMemPerBlockOptin;
};
struct CUevent_st {
    std::chrono::steady_clock::time_point t;
};
using cudaEvent_t = CUevent_st*;
using cudaStream_t = void*;

namespace emu {
inline cudaError_t& last_error() {
    static cudaError_t e = cudaSuccess;
    return e;
}
inline std::string& last_message() {
    static std::string m;
    return m;
}
}  // namespace emu

inline const char* cudaGetErrorString(cudaError_t e) {
    switch (e) {
        case cudaSuccess: return "no error";
        case cudaErrorInvalidValue: return "invalid argument";
        case cudaErrorMemoryAllocation: return "out of memory";
        default: return "unspecified launch failure";
    }
}
inline cudaError_t cudaGetLastError() {
    cudaError_t e = ::emu::last_error();
    ::emu::last_error() = cudaSuccess;
    return e;
}
inline cudaError_t cudaPeekAtLastError() { return ::emu::last_error(); }
inline cudaError_t cudaMalloc(void** p, size_t bytes) {
    *p = std::aligned_alloc(256, (std::max<size_t>(bytes, 1) + 255) / 256 * 256);
    if (!*p) return cudaErrorMemoryAllocation;
    std::memset(*p, 0xFF, bytes);  // NaN bytes: reading memory nobody wrote shows up
    return cudaSuccess;
}
template <class T>
inline cudaError_t cudaMalloc(T** p, size_t bytes) {
    return cudaMalloc(reinterpret_cast<void**>(p), bytes);
}
inline cudaError_t cudaFree(void* p) {
    std::free(p);
    return cudaSuccess;
}
inline cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind) {
    if (bytes) std::memmove(dst, src, bytes);
    return cudaSuccess;
}
inline cudaError_t cudaMemset(void* p, int value, size_t bytes) {
    std::memset(p, value, bytes);
    return cudaSuccess;
}
inline cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }
inline cudaError_t cudaSetDevice(int) { return cudaSuccess; }
inline cudaError_t cudaGetDevice(int* d) {
    *d = 0;
    return cudaSuccess;
}
inline cudaError_t cudaGetDeviceCount(int* n) {
    *n = 1;  // the emulator itself
    return cudaSuccess;
}
inline size_t emu_physical_bytes() {
    return size_t(sysconf(_SC_PHYS_PAGES)) * size_t(sysconf(_SC_PAGE_SIZE));
}
inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int) {
    std::memset(p, 0, sizeof *p);
    std::snprintf(p->name, sizeof p->name, "CPU emulator");
    p->totalGlobalMem = emu_physical_bytes();
    p->major = 9;
    p->minor = 0;
    p->multiProcessorCount = 1;
    p->sharedMemPerBlockOptin = 227 * 1024;
    return cudaSuccess;
}
inline cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total) {
    *total = emu_physical_bytes();
    *free_bytes = size_t(sysconf(_SC_AVPHYS_PAGES)) * size_t(sysconf(_SC_PAGE_SIZE));
    return cudaSuccess;
}
// The device's launch rules, checked at every emulated launch so that a launch a GPU would
// refuse fails here too: at most 48 KB of dynamic shared memory unless the kernel opted in
// with cudaFuncSetAttribute (up to sm_90's 227 KB), and the grid and block limits.
namespace emu {
constexpr size_t DEFAULT_DYNAMIC_SHARED = 48 * 1024, MAX_DYNAMIC_SHARED = 227 * 1024;
inline std::mutex& attribute_mutex() {
    static std::mutex m;
    return m;
}
inline std::vector<std::pair<const void*, size_t>>& dynamic_shared_optin() {
    static std::vector<std::pair<const void*, size_t>> v;  // kernel -> its opted-in maximum
    return v;
}
inline size_t dynamic_shared_limit(const void* kernel) {
    std::lock_guard<std::mutex> lock(attribute_mutex());
    for (const auto& [k, bytes] : dynamic_shared_optin())
        if (k == kernel) return bytes;
    return DEFAULT_DYNAMIC_SHARED;
}
}  // namespace emu
template <class... Args>
inline cudaError_t cudaFuncSetAttribute(void (*kernel)(Args...), cudaFuncAttribute, int value) {
    if (value < 0 || size_t(value) > ::emu::MAX_DYNAMIC_SHARED) return cudaErrorInvalidValue;
    std::lock_guard<std::mutex> lock(::emu::attribute_mutex());
    const void* k = reinterpret_cast<const void*>(kernel);
    for (auto& [kk, bytes] : ::emu::dynamic_shared_optin())
        if (kk == k) return bytes = size_t(value), cudaSuccess;
    ::emu::dynamic_shared_optin().push_back({k, size_t(value)});
    return cudaSuccess;
}
inline cudaError_t cudaEventCreate(cudaEvent_t* e) {
    *e = new CUevent_st;
    return cudaSuccess;
}
inline cudaError_t cudaEventDestroy(cudaEvent_t e) {
    delete e;
    return cudaSuccess;
}
inline cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t = nullptr) {
    e->t = std::chrono::steady_clock::now();
    return cudaSuccess;
}
inline cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
inline cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
    *ms = std::chrono::duration<float, std::milli>(b->t - a->t).count();
    return cudaSuccess;
}

// ---- the launch -------------------------------------------------------------------------------
namespace emu {

// Runs body() once per CUDA thread of every block; throws std::runtime_error on an error,
// or when the launch breaks a rule the device enforces (kernel: for its shared-memory opt-in).
inline void run_grid(dim3 grid, dim3 block, size_t shmem, const std::function<void()>& body,
                     const void* kernel = nullptr) {
    const int nthreads = int(block.x * block.y * block.z);
    const long nblocks = long(grid.x) * grid.y * grid.z;
    auto refuse = [&](const std::string& why) {
        last_error() = cudaErrorInvalidValue;
        throw std::runtime_error("launch: invalid configuration: " + why);
    };
    if (nthreads <= 0 || nthreads > 1024 || block.x > 1024 || block.y > 1024 || block.z > 64)
        refuse("block of " + std::to_string(block.x) + "x" + std::to_string(block.y) + "x" +
               std::to_string(block.z) + " threads (at most 1024, and z at most 64)");
    if (nblocks <= 0 || grid.x > 2147483647u || grid.y > 65535 || grid.z > 65535)
        refuse("grid of " + std::to_string(grid.x) + "x" + std::to_string(grid.y) + "x" +
               std::to_string(grid.z) + " blocks (y and z at most 65535)");
    if (shmem > dynamic_shared_limit(kernel))
        refuse(std::to_string(shmem) + " bytes of dynamic shared memory, over the kernel's " +
               std::to_string(dynamic_shared_limit(kernel)) +
               " (above 48 KB a kernel opts in with cudaFuncSetAttribute)");
    auto block_index = [&](long b) {
        return dim3(unsigned(b % grid.x), unsigned(b / grid.x % grid.y),
                    unsigned(b / (long(grid.x) * grid.y)));
    };
    auto thread_index = [&](int t) {
        return dim3(unsigned(t % block.x), unsigned(t / block.x % block.y),
                    unsigned(t / (block.x * block.y)));
    };
    const int nwarps = (nthreads + 31) / 32;
    std::string error;
#ifndef EMU_THREADS
    int workers = config().workers > 0
                      ? config().workers
                      : std::min(4, int(std::max(1u, std::thread::hardware_concurrency())));
    workers = int(std::min<long>(workers, nblocks));
    std::atomic<long> next{0};
    std::mutex error_mutex;
    // Fiber blocks (and their stacks) are kept between launches, one per worker.
    static std::vector<std::unique_ptr<FiberBlock>> pool;
    static std::mutex pool_mutex;
    {
        std::lock_guard<std::mutex> lock(pool_mutex);
        while (int(pool.size()) < workers) pool.push_back(std::make_unique<FiberBlock>());
    }
    auto worker = [&](int w) {
        FiberBlock& fb = *pool[w];
        fb.body = &body;
        if (int(fb.fibers.size()) < nthreads) fb.fibers.resize(nthreads);
        for (int t = 0; t < nthreads; t++) {
            Fiber& f = fb.fibers[t];
            if (f.stack_size != config().stack_bytes) {
                f.stack.reset(new char[config().stack_bytes]);
                f.stack_size = config().stack_bytes;
            }
            f.ts.tid = t;
            f.ts.thread_idx = thread_index(t);
        }
        fb.bs.warps.assign(nwarps, Warp{});
        fb.bs.error.clear();
        fb.bs.grid_dim = grid;
        fb.bs.block_dim = block;
        fb.dyn.resize(shmem);
        fb.bs.dyn_shared = &fb.dyn;
        for (long b; (b = next.fetch_add(1)) < nblocks;) {
            fb.bs.block_idx = block_index(b);
            std::fill(fb.dyn.begin(), fb.dyn.end(), 0xFF);
            run_block_fibers(fb, nthreads);
            if (!fb.bs.error.empty()) {
                std::lock_guard<std::mutex> lock(error_mutex);
                if (error.empty()) error = fb.bs.error;
                next = nblocks;
                break;
            }
        }
        t_current = nullptr;
        t_fb = nullptr;
    };
    if (workers == 1) {
        worker(0);
    } else {
        std::vector<std::thread> threads;
        for (int w = 0; w < workers; w++) threads.emplace_back(worker, w);
        for (auto& th : threads) th.join();
    }
#else
    ThreadBlock tb;
    tb.bs.grid_dim = grid;
    tb.bs.block_dim = block;
    tb.dyn.resize(shmem);
    tb.bs.dyn_shared = &tb.dyn;
    tb.bs.warps.resize(nwarps);
    for (long b = 0; b < nblocks; b++) {
        tb.bs.block_idx = block_index(b);
        std::fill(tb.dyn.begin(), tb.dyn.end(), 0xFF);
        tb.bar = std::make_unique<std::barrier<>>(nthreads);
        for (int w = 0; w < nwarps; w++)
            tb.bs.warps[w].bar = std::make_unique<std::barrier<>>(std::min(32, nthreads - 32 * w));
        std::vector<std::thread> threads;
        threads.reserve(nthreads);
        for (int t = 0; t < nthreads; t++)
            threads.emplace_back([&, t] {
                ThreadState ts;
                ts.tid = t;
                ts.thread_idx = thread_index(t);
                ts.block = &tb.bs;
                t_current = &ts;
                t_tb = &tb;
                body();
                // An exited thread no longer counts at barriers (as on sm_70+).
                tb.bs.warps[t / 32].bar->arrive_and_drop();
                tb.bar->arrive_and_drop();
                t_current = nullptr;
            });
        for (auto& th : threads) th.join();
    }
#endif
    if (!error.empty()) {
        last_error() = cudaErrorLaunchFailure;
        throw std::runtime_error("emulator: " + error);
    }
}

// The race check of the fiber mode: runs `run()` with the block's threads in forward order and
// again in reverse order between barriers (one worker, so blocks and atomics keep one order),
// and compares what `read()` returns (e.g. a std::vector<float> copied back). A correct kernel
// gives the same bits both ways; a kernel that reads shared memory another thread writes in
// the same barrier interval (a missing __syncthreads) sees different values.
template <class Run, class Read>
bool same_under_both_schedules(Run run, Read read) {
    Config saved = config();
    config().workers = 1;
    config().schedule = Schedule::forward;
    run();
    auto forward = read();
    config().schedule = Schedule::reverse;
    run();
    auto reverse = read();
    config() = saved;
    return forward.size() == reverse.size() &&
           std::memcmp(forward.data(), reverse.data(), forward.size() * sizeof(forward[0])) == 0;
}

}  // namespace emu
