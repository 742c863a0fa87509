// The CUDA that kernel code sees when g++ compiles a .cu file (cuda/launch.h includes this where
// nvcc is not the compiler): the qualifiers, the thread and block indices, shared memory,
// __syncthreads, warp shuffles and votes, atomics, float2 and float4. The host's calls are
// cuda/emu/runtime.h's; what the emulator models and checks, and its files, cuda/README.md.
#pragma once
#if defined(__CUDACC__)
#error "cuda/emu/emulator.h is for host compilers; nvcc uses the real CUDA runtime"
#endif

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>
#include <version>
#if __has_include(<source_location>)
#include <source_location>
#endif

// ---- qualifiers --------------------------------------------------------------------------
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
// The build's preprocessor pass (cuda/cuda.mk, -DEMU_LAUNCH_BOUNDS_PASS) turns each one, however
// spelled or reached through macros, into a marker that cuda/emu/launch_bounds.pl replaces with
// the check in the function's body; a source compiled directly gets no check from it.
#ifdef EMU_LAUNCH_BOUNDS_PASS
#define __launch_bounds__(...) __emu_launch_bounds__(__VA_ARGS__)
#else
#define __launch_bounds__(...)
#endif
// Shared arrays go through SHARED (bounds-checked, NaN at every block start): a plain
// __shared__ stops the build here with this name in the message.
#define __shared__ use_SHARED_for_shared_memory_see_cuda_launch_h
// clang-format off
#define SHARED(T, name, dims)                                                              \
    static ::emu::SharedSite emu_shared_site_##name{#name, __FILE__, __LINE__};            \
    T(&name) dims = *reinterpret_cast<T(*) dims>(                                          \
        ::emu::shared_at(emu_shared_site_##name, sizeof(T dims)))
// clang-format on
#define DYNAMIC_SHARED(T, name) T* name = reinterpret_cast<T*>(::emu::dynamic_shared())
// SHARED_TILE(T, name, cursor, count): the next `count` T of the dynamic shared memory, from
// `cursor` on (a T*, advanced past them). Here each tile is an array of its own, bounds-checked
// and named like a SHARED one: an overrun from one tile into the next is an error.
// clang-format off
#define SHARED_TILE(T, name, cursor, count)                                                \
    static ::emu::SharedSite emu_shared_site_##name{#name, __FILE__, __LINE__, true};      \
    T* name = reinterpret_cast<T*>(::emu::shared_tile(emu_shared_site_##name,              \
        reinterpret_cast<const unsigned char*>(cursor), sizeof(T) * size_t(count),         \
        alignof(T)));                                                                        \
    cursor += (count)
// clang-format on
#define CHECK_LAUNCH_BOUNDS(...) ::emu::check_launch_bounds(__VA_ARGS__)

struct dim3 {
    unsigned x, y, z;
    constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
using uint3 = dim3;

namespace emu {

// A SHARED or SHARED_TILE declaration (one per declaration and template instance).
struct SharedSite {
    const char* name;
    const char* file;
    int line;
    bool tile = false;          // SHARED_TILE: carved from the dynamic shared memory
    std::atomic<int> slot{-1};  // index into every runner's regions, given at first use
};

// One warp operation as a lane arrives at it: what, where, with which mask and value.
enum class WarpKind { sync, shuffle, vote };
struct WarpOp {
    WarpKind kind = WarpKind::sync;
    const char* what = "";  // "__shfl_xor_sync", ...
    unsigned mask = 0;
    int src = -1;  // shuffle: the lane read (-1: its own value, past the segment's end)
    uint64_t value = 0;
    const char* file = "";
    unsigned line = 0, column = 0;
};

// What threadIdx, blockIdx, blockDim and gridDim read: the running thread's state and its
// block's (the rest is the scheduler's, cuda/emu/scheduler.h).
struct Warp;
struct SharedArena;
struct BlockState;
struct ThreadState {
    dim3 thread_idx;
    int tid = 0;            // linear thread index in the block
    BlockState* block = nullptr;
    WarpOp op;              // fibers: the warp operation this lane waits at
    uint64_t result = 0;    // ... and what the rendezvous hands back
    unsigned group = 0;     // ... and the lanes that took part
    unsigned warp_ops = 0;  // EMU_THREADS: warp rendezvous passed (buffer parity)
};
struct BlockState {
    dim3 grid_dim, block_dim, block_idx;
    SharedArena* arena = nullptr;
    std::vector<Warp> warps;
    std::string error;  // first error seen in this block
};

inline thread_local ThreadState* t_current = nullptr;
inline ThreadState& cur() { return *t_current; }

// Where a warp operation is called from. std::source_location where the library has it; clang 14
// with libstdc++ has not (it lacks __builtin_source_location), and gets the same three fields
// from the builtins a default argument evaluates at the call site.
#if defined(__cpp_lib_source_location)
using SourceLocation = std::source_location;
#else
struct SourceLocation {
    const char* file_ = "";
    unsigned line_ = 0, column_ = 0;
    static SourceLocation current(const char* file = __builtin_FILE(),
                                  unsigned line = __builtin_LINE(),
                                  unsigned column = __builtin_COLUMN()) {
        return {file, line, column};
    }
    const char* file_name() const { return file_; }
    unsigned line() const { return line_; }
    unsigned column() const { return column_; }
};
#endif

// The runtime's entry points that kernel code calls (cuda/emu/runtime.cpp, scheduler.cpp,
// checks.cpp): compiled once, without the access hooks, so that the emulator's own loads and
// stores call none.
// A SHARED declaration: the block's copy of the array, placed and filled by the first thread
// of the block that reaches it; SHARED_TILE's, carved from the dynamic shared memory.
void* shared_at(SharedSite& site, size_t bytes, size_t misalign = 0);
void* shared_tile(SharedSite& site, const unsigned char* cursor, size_t bytes, size_t align);
void* dynamic_shared();
// CHECK_LAUNCH_BOUNDS(N [, min blocks]): a GPU refuses to launch a kernel declared
// __launch_bounds__(N) with more than N threads per block.
void check_launch_bounds(long max_threads, long = 0);
// __syncthreads at file:line; caller: the return address of the function that calls it, and,
// with own_site, the call's own return address too (scheduler.cpp says why).
void syncthreads(const char* file, int line, const void* caller, bool own_site);
// One warp operation of this lane: what it is, where it is called, its mask and value.
const ThreadState& warp_op(WarpKind kind, const char* what, unsigned mask, int src,
                           uint64_t value, const SourceLocation& loc);
// Runs body() once per CUDA thread of every block; throws std::runtime_error on an error,
// or when the launch breaks a rule the device enforces (kernel: for its shared-memory opt-in).
void run_grid(dim3 grid, dim3 block, size_t shmem, const std::function<void()>& body,
              const void* kernel = nullptr);
// A float4 copied or assigned through a misaligned address (below).
[[gnu::noinline, gnu::cold]] void misaligned_vector(const void* dst, const void* src);

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
template <class T>
inline T shuffle(const char* what, unsigned mask, T v, int src, const SourceLocation& loc) {
    const ThreadState& ts = warp_op(WarpKind::shuffle, what, mask, src, to_bits(v), loc);
    return src < 0 ? v : from_bits<T>(ts.result);
}

}  // namespace emu

#define threadIdx (::emu::cur().thread_idx)
#define blockIdx (::emu::cur().block->block_idx)
#define blockDim (::emu::cur().block->block_dim)
#define gridDim (::emu::cur().block->grid_dim)
#define warpSize 32

// Every warp intrinsic takes its caller's position (a default argument): two calls on
// different lines, or at different columns of one line, are different operations.
#define EMU_CALL_SITE ::emu::SourceLocation emu_site = ::emu::SourceLocation::current()
#define __syncthreads() \
    ::emu::syncthreads(__FILE__, __LINE__, __builtin_return_address(0), ::emu::instrumented())
inline void __syncwarp(unsigned mask = 0xffffffffu, EMU_CALL_SITE) {
    ::emu::warp_op(::emu::WarpKind::sync, "__syncwarp", mask, -1, 0, emu_site);
}

template <class T>
inline T __shfl_sync(unsigned mask, T v, int src, int width = 32, EMU_CALL_SITE) {
    int lane = ::emu::lane_id();
    int target = (lane & ~(width - 1)) + (src & (width - 1));
    return ::emu::shuffle("__shfl_sync", mask, v, target, emu_site);
}
template <class T>
inline T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32, EMU_CALL_SITE) {
    int lane = ::emu::lane_id();
    int in_seg = lane & (width - 1);
    bool own = in_seg + int(delta) >= width;
    return ::emu::shuffle("__shfl_down_sync", mask, v, own ? -1 : lane + int(delta), emu_site);
}
template <class T>
inline T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32, EMU_CALL_SITE) {
    int lane = ::emu::lane_id();
    int in_seg = lane & (width - 1);
    bool own = in_seg - int(delta) < 0;
    return ::emu::shuffle("__shfl_up_sync", mask, v, own ? -1 : lane - int(delta), emu_site);
}
template <class T>
inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32, EMU_CALL_SITE) {
    int lane = ::emu::lane_id();
    int target = lane ^ lane_mask;
    bool own = (target & ~(width - 1)) != (lane & ~(width - 1));
    return ::emu::shuffle("__shfl_xor_sync", mask, v, own ? -1 : target, emu_site);
}
inline unsigned __ballot_sync(unsigned mask, int pred, EMU_CALL_SITE) {
    return unsigned(
        ::emu::warp_op(::emu::WarpKind::vote, "__ballot_sync", mask, -1, pred ? 1 : 0, emu_site)
            .result);
}
inline int __any_sync(unsigned mask, int pred, EMU_CALL_SITE) {
    return ::emu::warp_op(::emu::WarpKind::vote, "__any_sync", mask, -1, pred ? 1 : 0, emu_site)
               .result != 0;
}
inline int __all_sync(unsigned mask, int pred, EMU_CALL_SITE) {
    // The lanes that take part (live, in the mask) must all vote true.
    const ::emu::ThreadState& ts =
        ::emu::warp_op(::emu::WarpKind::vote, "__all_sync", mask, -1, pred ? 1 : 0, emu_site);
    return (unsigned(ts.result) & ts.group) == ts.group;
}

// Each atomic is one read-modify-write of std::atomic_ref (blocks may run on several workers),
// or a loop of compare-exchanges from a guess (the first that fails reads the value), never a
// separate load first: so the access checks see an update, as a GPU's one instruction is.
template <class T>
inline T atomicAdd(T* address, T value) {
    std::atomic_ref<T> a(*address);
    if constexpr (std::is_integral_v<T>) {
        return a.fetch_add(value);
    } else {
        T old = T(0);
        while (!a.compare_exchange_weak(old, old + value)) {
        }
        return old;
    }
}
template <class T>
inline T atomicSub(T* address, T value) {
    return std::atomic_ref<T>(*address).fetch_sub(value);
}
template <class T>
inline T atomicMax(T* address, T value) {
    std::atomic_ref<T> a(*address);
    T old = value;
    while (!a.compare_exchange_weak(old, old < value ? value : old)) {
    }
    return old;
}
template <class T>
inline T atomicMin(T* address, T value) {
    std::atomic_ref<T> a(*address);
    T old = value;
    while (!a.compare_exchange_weak(old, value < old ? value : old)) {
    }
    return old;
}
template <class T>
inline T atomicExch(T* address, T value) {
    return std::atomic_ref<T>(*address).exchange(value);
}
template <class T>
inline T atomicCAS(T* address, T compare, T value) {
    std::atomic_ref<T>(*address).compare_exchange_strong(compare, value);
    return compare;  // the old value, whether it was replaced or not
}

template <class T>
inline T __ldg(const T* p) { return *p; }

// The vector types kernels use for 8- and 16-byte loads; same size and alignment as CUDA's, so
// reinterpret_cast<const float4*> on a misaligned address is as wrong here as on the device.
struct alignas(8) float2 {
    float x, y;
};
// float4's assignment (a kernel's vector store, or a load into a variable) checks both
// addresses, and its copy (`const float4 v = *p`) its source, in every build: misaligned, a
// named launch error, as a GPU faults. Its members read one by one through a misaligned
// pointer (p->x) are plain 4-byte loads here, where nvcc may emit one 16-byte load: where the
// access hooks are built, GCC's alignment check names them (emu::misaligned_member).
struct alignas(16) float4 {
    float x, y, z, w;
    float4() = default;
    constexpr float4(float x_, float y_, float z_, float w_) : x(x_), y(y_), z(z_), w(w_) {}
    // A copy (`const float4 v = *p`: one 16-byte load on a GPU) checks its source too.
    float4(const float4& o) {
        uintptr_t bits = uintptr_t(&o);
        asm("" : "+r"(bits));
        if (__builtin_expect((bits & 15) != 0, 0)) ::emu::misaligned_vector(nullptr, &o);
        x = o.x, y = o.y, z = o.z, w = o.w;
    }
    float4& operator=(const float4& o) {
        uintptr_t bits = uintptr_t(this) | uintptr_t(&o);
        asm("" : "+r"(bits));  // clang takes a float4's address as 16-aligned and drops the test
        if (__builtin_expect((bits & 15) != 0, 0)) ::emu::misaligned_vector(this, &o);
        x = o.x, y = o.y, z = o.z, w = o.w;
        return *this;
    }
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

#include "cuda/emu/runtime.h"
