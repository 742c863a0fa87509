// A CPU emulator for the subset of CUDA the kernels in cuda/ use, so the same .cu source
// compiles with g++ and runs in `make test` on machines without a GPU.
//
// What it models (and how):
//   gridDim blockIdx blockDim threadIdx   per-thread values behind macros
//   SHARED(T, name, dims)                 a block's shared array (`__shared__ T name dims` under
//                                          nvcc; a plain __shared__ does not compile here). Each
//                                          lives in its own pages, its end against a page that
//                                          faults (PROT_NONE), another before it; filled with NaN
//                                          bytes (0xFF) at every block start, as on a GPU nothing
//                                          carries over from the block before
//   DYNAMIC_SHARED(T, name)               the launch's dynamic shared bytes, the same way
//   shared memory out of bounds           an access that reaches a guard page, and a write into
//                                          the few bytes of padding beside an array (found when
//                                          the block ends), fail the launch with the array's name
//   __syncthreads()                       a real barrier over the block's threads
//   __syncwarp, __shfl*_sync, votes       each lane arrives with its mask and its call site; a
//                                          rendezvous completes when every live lane the mask
//                                          names has arrived at the same operation with the same
//                                          mask, at any call site (sm_70+; lanes that exited
//                                          count as absent); other operations or masks, and one
//                                          call site with masks naming each other, are an error
//   atomicAdd Sub Max Min Exch CAS        std::atomic_ref (blocks may run on several workers),
//                                          one read-modify-write each, as on a GPU
//   SHARED_TILE(T, name, cursor, n)       a tile carved from the dynamic shared memory: here an
//                                          array of its own, bounds-checked and named like SHARED
//   cudaMalloc                            pages filled with NaN bytes (CUDA does not zero) between
//                                          two guard pages, 256-byte aligned, in one reserved
//                                          range; gpu::allocate (cuda/device_memory.cu), which
//                                          rounds requests up to 512 bytes and caches released
//                                          blocks, tells the checks which bytes of a block it
//                                          lent (emu::lend_block, emu::cache_block)
//   cudaMemcpy cudaMemset                 memmove and memset, their ranges checked
//   launch rules                          block and grid limits; at most 48 KB of static shared
//                                          memory, and static + dynamic at most 48 KB, or 227 KB
//                                          (sm_90) after cudaFuncSetAttribute; a kernel declared
//                                          __launch_bounds__(N), however spelled (through macros
//                                          too), checks its block against N in its first
//                                          statement, which the build inserts into the
//                                          preprocessed source (cuda/emu/launch_bounds.pl; a
//                                          source compiled directly calls CHECK_LAUNCH_BOUNDS
//                                          itself); a block over the kernel's registers (below):
//                                          a launch a GPU would refuse throws here too
//   the device                            sm_90, 132 SMs (an H200's), so that the host code's
//                                          grid decisions (split-K) run as on that GPU
//
// The checks, by build (emu::Check names each; tests turn one off to show its planted bug then
// goes unseen: cuda/emu/racecheck_tests.cpp, tests/test_cuda_emulator.cpp):
//   every build      the launch rules (above); shared memory out of bounds: a guard page's
//                    fault, or a write into an array's padding found when the block ends, named
//                    by array; a cudaMalloc'd buffer's guard page (past a page of it), named by
//                    the SIGSEGV handler (fibers); a read or write past the top of a thread's
//                    stack (a local array indexed past its end: 64 KB of guard pages above
//                    each fiber's stack, named by the handler); a misaligned float4 assigned or
//                    copied (its
//                    assignment checks both addresses, its copy the source; fibers); a tile
//                    carved at an offset its type's alignment does not divide; a cudaMemcpy or
//                    cudaMemset whose range leaves a buffer's live bytes: it fails
//                    (cudaErrorInvalidValue) and throws one line naming the call, the source or
//                    destination, the buffer and how many bytes past its end; warp operations
//                    met by kind and mask (lanes at another kind of operation, or one call site
//                    with masks naming each other's lanes, are errors); a __syncthreads line
//                    reached through different calls of a helper not inlined (the caller's
//                    return address)
//   with nvcc        the register budget (cuda/emu/registers.h): ptxas's register count of each
//                    cuda/*.cu kernel, recorded by the build, and a launch refused
//                    (cudaErrorLaunchOutOfResources) whose block needs more than 65,536
//                    registers (allocated per warp in units of 256), naming the kernel. Without
//                    nvcc, and in the sanitizer builds (which leave nvcc out), there are no
//                    counts and no check; nor for kernels nvcc never compiles (the tests' own:
//                    emu::set_kernel_registers gives one a count)
//   GCC emulator     every load, store and atomic of kernel code calls a hook (the kernels are
//   builds           compiled with -fsanitize=thread's instrumentation and linked with
//                    cuda/emu/racecheck.cpp: cuda/cuda.mk's EMU_RACECHECK, on unless clang or a
//                    sanitizer build), and emu::access (atomics: emu::atomic_access) checks it:
//                    a shared-memory race in one barrier epoch between warps, or between lanes
//                    of one warp that no chain of warp operations orders (two half-warp
//                    __syncwarp do not; shadow state per word, whatever the schedule; atomics
//                    exempt); a read of memory nothing wrote (initcheck's class): a global word
//                    no kernel, cudaMemcpy or cudaMemset wrote since its buffer was allocated or
//                    lent, a shared word no thread of the block wrote; an access outside a
//                    shared array or tile, or outside a buffer's live bytes (exactly the bytes
//                    asked of cudaMalloc or of gpu::allocate, not its rounded block; none of a
//                    block in gpu::allocate's cache); a misaligned float2, float4 or atomic,
//                    tiles placed as their offsets are; a struct's member reached through a
//                    pointer misaligned for the struct (`p->x` with p a float4* 4 bytes off:
//                    GCC's -fsanitize=alignment tests the type's alignment and calls the
//                    emulator's __ubsan_handle_type_mismatch_v1, whatever loads g++ then
//                    emits); a __syncthreads line reached through
//                    different inlined copies of a helper (syncthreads is a call of its own
//                    there); a global-memory race: a plain access to a word that a plain access
//                    of another block of the same launch, or of another warp of the block in the
//                    same barrier epoch, wrote (or, for a write, read) before it (shadow state
//                    per word: the last write, the last read and whether other blocks or warps
//                    read it; atomics exempt; the lanes of one warp not compared); an access
//                    in none of device memory, shared memory, the thread's stack and the
//                    emulator's own state (a host pointer passed to a kernel); naming threads
//                    and lines
//   EMU_THREADS      (make emu-tsan) ThreadSanitizer's own data-race reports; faults unnamed
// What no build checks, left to compute-sanitizer on a GPU (make gpu-check): a race on global
// memory between the lanes of one warp, or through atomics mixed with plain accesses (neither
// does compute-sanitizer's racecheck, which sees shared memory only); a local array indexed
// past its end that stays inside the thread's stack, or below it (the instrumentation leaves a
// function's own arrays alone); the intra-warp race check's second and later readers of a word
// (one reader per word is kept); a barrier reached through different calls nested two helpers
// deep (only the innermost call and the caller's return address are compared); without the
// hooks (clang, make sanitize), everything the GCC emulator builds add above (make sanitize's
// own UBSan still reports a member reached through a misaligned pointer, as a UBSan report).
// Where the line tables do not resolve (under qemu-user), two copies the
// compiler made of one __syncthreads call (GCC's jump threading, after `if (warp == 0) x =
// ...;`) cannot be told from two calls, and are reported as two barriers.
// Two ways to run a block's threads:
//   fibers (default)   one fiber per CUDA thread, all on one OS thread; a barrier is
//                      a yield to the block's scheduler. Fast, deterministic. emu::set_schedule
//                      runs the threads forward or in reverse between barriers, and the blocks
//                      first to last or last to first: a kernel whose result changes with the
//                      order has a missing barrier (a race), or blocks that race on global memory.
//   EMU_THREADS        one std::thread per CUDA thread and std::barrier: slow, but a missing
//                      __syncthreads is a real data race that ThreadSanitizer reports
//                      (`make emu-tsan`). Warp operations there are full-warp barriers, without
//                      the call-site and mask checks.
// Errors (a barrier not every thread reaches, a shuffle reading an exited lane, lanes meeting at
// different warp operations, a warp deadlock, shared memory out of bounds or over its limits)
// make the launch throw std::runtime_error with a message naming the problem (in EMU_THREADS
// mode: print it and abort).
#pragma once
#if defined(__CUDACC__)
#error "cuda/emu/emulator.h is for host compilers; nvcc uses the real CUDA runtime"
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <functional>
#include <link.h>
#include <math.h>
#include <memory>
#include <mutex>
#include <version>
#if __has_include(<source_location>)
#include <source_location>
#endif
#include <stdexcept>
#include <string>
#include <sys/mman.h>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>
#include <unistd.h>
#ifdef EMU_THREADS
#include <barrier>
#else
#include <ucontext.h>
#endif

// Fiber switches: a 6-register swap on x86-64 (swapcontext also saves the signal mask, a system
// call per switch that would make the emulator several times slower); ucontext elsewhere and under
// the sanitizers, which know how to follow swapcontext.
#if !defined(EMU_THREADS) && defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__) && \
    (!defined(__SANITIZE_THREAD__) || defined(EMU_INSTRUMENTED))
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

// The runtime's entry points that kernel code calls (run_grid, syncthreads, warp_op,
// shared_at, shared_tile): in the objects compiled with the access hooks they are only declared,
// and their one definition is in cuda/emu/racecheck.cpp, compiled without the hooks
// (EMU_RUNTIME), so that the scheduler's own loads and stores, a large share of all, call
// none. Everywhere else they are inline, as the rest of this header.
#if defined(EMU_INSTRUMENTED) && !defined(EMU_RUNTIME)
#define EMU_RT_DECLARE_ONLY 1
#else
#define EMU_RT_DECLARE_ONLY 0
#endif
#if defined(EMU_RUNTIME)
#define EMU_RT_INLINE
#else
#define EMU_RT_INLINE inline
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

enum class Schedule { forward, reverse };

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
inline bool same_site(const WarpOp& a, const WarpOp& b) {
    return a.line == b.line && a.column == b.column && std::strcmp(a.file, b.file) == 0;
}
// Lanes meet when they pass the same operation with the same mask, wherever they call it: on
// sm_70 and later a lane waits until every lane its mask names reaches a corresponding
// operation (the CUDA Programming Guide's __syncwarp and __shfl_sync; the PTX ISA's
// bar.warp.sync and shfl.sync require one instruction only for sm_6x and below).
inline bool same_operation(const WarpOp& a, const WarpOp& b) {
    return a.kind == b.kind && a.mask == b.mask && std::strcmp(a.what, b.what) == 0;
}
inline std::string hex(unsigned v) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08x", v);
    return buf;
}
inline std::string describe(const WarpOp& op) {
    return std::string(op.what) + " (" + op.file + ":" + std::to_string(op.line) + ", mask " +
           hex(op.mask) + ")";
}

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

struct Warp {
    int alive = 0;               // lanes not yet exited
    unsigned alive_mask = 0;
    unsigned waiting_mask = 0;  // fibers: lanes parked at a warp operation
    // The race check's order among one warp's lanes, in the block's barrier epoch: the warp
    // operations released so far (seq, 1 the first), the last one that named every live lane
    // (it orders every lane after everything before it), and those since that named only some,
    // with their lanes (partial).
    uint32_t seq = 0, full_seq = 0;
    std::vector<std::pair<uint32_t, unsigned>> partial;
    void new_epoch() { seq = full_seq = 0, partial.clear(); }
    void released(unsigned group) {
        if (group == alive_mask) {
            full_seq = ++seq, partial.clear();
        } else {
            partial.emplace_back(++seq, group);
        }
    }
    // Whether lane b's access now is ordered after lane a's access when the warp had released
    // `at` operations: a chain of operations after it leads from a to b.
    bool ordered(int a, int b, uint32_t at) const {
        if (full_seq > at) return true;
        unsigned reach = 1u << a;
        for (const auto& [s, group] : partial)
            if (s > at && (group & reach)) reach |= group;
        return reach >> b & 1;
    }
#ifdef EMU_THREADS
    uint64_t slots[2][32] = {};  // lane values, double-buffered by rendezvous parity
    std::unique_ptr<std::barrier<>> bar;
#endif
};

// ---- shared memory -------------------------------------------------------------------------
// Every SHARED array (one SharedSite per declaration and template instance) gets a region per
// block runner: whole pages [guard][data][guard], the array at the end of the data so that the
// byte after it faults. The padding before it (the rest of its first page) and after it (up to
// 15 bytes, to keep 16-byte alignment) is filled with 0xFF like the array and must still be at
// the block's end. A fault in a guard page becomes the launch's error (the signal handler below
// names the array). Limits as on sm_90: 48 KB static, 48 KB in all without the kernel's
// cudaFuncSetAttribute opt-in, 227 KB with it.
constexpr size_t STATIC_SHARED_MAX = 48 * 1024;
constexpr size_t DEFAULT_DYNAMIC_SHARED = 48 * 1024, MAX_DYNAMIC_SHARED = 227 * 1024;

struct SharedSite {
    const char* name;
    const char* file;
    int line;
    bool tile = false;          // SHARED_TILE: carved from the dynamic shared memory
    std::atomic<int> slot{-1};  // index into every runner's regions, given at first use
};
inline std::atomic<int>& next_shared_slot() {
    static std::atomic<int> next{0};
    return next;
}

inline size_t page_bytes() {
    static const size_t page = size_t(sysconf(_SC_PAGESIZE));
    return page;
}

// ---- address spaces the access checks recognise ---------------------------------------------
// The kernels' objects are compiled with the compiler's ThreadSanitizer instrumentation (make's
// EMU_RACECHECK, cuda/cuda.mk) but linked without its runtime: every load and store of the
// kernel code calls a hook in cuda/emu/racecheck.cpp, which inlines emu::access below. Shared
// arrays (every block runner's) and cudaMalloc'd buffers each lie in one reserved range of
// address space, so a hook tells them apart from the stack and host memory with a comparison.
// Each range is handed out in whole pages; a freed piece goes back to its range's free list.
struct Space {
    unsigned char* base = nullptr;
    size_t size = 0, top = 0;
    std::mutex mutex;
    std::vector<std::pair<size_t, size_t>> free_list;  // (offset, bytes)

    void reserve(size_t bytes) {
        void* m = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                       -1, 0);
        if (m != MAP_FAILED) base = static_cast<unsigned char*>(m), size = bytes;
    }
    // `bytes` (whole pages) of PROT_NONE address space in the range, or nullptr when full.
    unsigned char* take(size_t bytes) {
        std::lock_guard<std::mutex> lock(mutex);
        for (size_t i = 0; i < free_list.size(); i++)
            if (free_list[i].second >= bytes) {
                const size_t off = free_list[i].first;
                free_list[i].first += bytes, free_list[i].second -= bytes;
                if (free_list[i].second == 0) free_list.erase(free_list.begin() + long(i));
                return base + off;
            }
        if (!base || size - top < bytes) return nullptr;
        top += bytes;
        return base + top - bytes;
    }
    void give(unsigned char* p, size_t bytes) {
        mprotect(p, bytes, PROT_NONE);
        madvise(p, bytes, MADV_DONTNEED);
        std::lock_guard<std::mutex> lock(mutex);
        free_list.push_back({size_t(p - base), bytes});
    }
    bool holds(const void* p) const {
        return size_t(static_cast<const unsigned char*>(p) - base) < size;
    }
};
// The ranges, reserved at first use (address space only: nothing is committed until used).
// Their bounds are copied into plain variables that the hooks read.
inline unsigned char* g_shared_base = nullptr;
inline size_t g_shared_size = 0;
inline unsigned char* g_global_base = nullptr;
inline size_t g_global_size = 0;
inline unsigned g_page_shift = 12;
inline Space& shared_space() {
    static Space* s = [] {
        auto* sp = new Space;
        sp->reserve(size_t(256) << 20);  // every runner's shared arrays: 256 MB
        g_page_shift = unsigned(__builtin_ctzl(page_bytes()));
        g_shared_size = sp->size;
        g_shared_base = sp->base;
        return sp;
    }();
    return *s;
}

struct SharedRegion;
// Per page of the shared range: the region whose data it holds (nullptr: a guard page).
// (Never destroyed, like the tables below: regions and buffers are freed by static destructors
// at exit too.)
inline std::vector<const SharedRegion*>& shared_pages() {
    static auto* v =
        new std::vector<const SharedRegion*>(shared_space().size >> g_page_shift, nullptr);
    return *v;
}
inline const SharedRegion* const* g_shared_pages = nullptr;

// Shadow state of one 4-byte word of shared memory for the race check, in two flat arrays over
// the shared range (below). The hot part, 8 bytes, is what every access reads: its last write
// (the barrier epoch and the thread) and the current epoch's reads (the first reader, and
// whether a thread of another warp read it too), packed as
//   w = epoch << 10 | writer's tid               (epochs below 2^21, tids below 1024)
//   r = epoch << 11 | several warps << 10 | first reader's tid
// A word is never cleared at a barrier: an epoch number that is not the current one is stale.
// Bit 31 of w (OUTSIDE; the epoch and tid use 31) marks a word that is not wholly inside its
// array: the padding before and after it, and a last word the array shares with the padding.
// A hook checks the bounds of an access by that bit alone (the words it touches read it
// anyway) and takes the exact check for a marked word.
// The cold part holds what only a report reads: the code addresses (as offsets from
// code_anchor, 32 bits) of the write and of the two reads, and the second reader.
struct ShadowHot {
    uint32_t w, r;
};
struct ShadowCold {
    int32_t w_pc, r1_pc, r2_pc;
    uint32_t r2_tid;
    uint32_t w_seq, r1_seq;  // the writer's and first reader's warp: operations released then
    uint32_t atomic_epoch;   // the last epoch an atomic wrote the word in (the init check)
};
constexpr uint32_t EPOCH_LIMIT = 1u << 21;  // the epochs a runner counts before it starts over
constexpr uint32_t OUTSIDE = 1u << 31;
[[gnu::noinline]] inline void code_anchor() { __asm__ volatile(""); }
inline int32_t code_offset(const void* pc) {
    return int32_t(intptr_t(pc) - intptr_t(&code_anchor));
}
inline const void* code_from_offset(int32_t off) {
    return reinterpret_cast<const void*>(intptr_t(&code_anchor) + off);
}
// The shadow is one flat array over the whole shared range (address space only: a page is
// committed when first touched): word w of the range, at g_shared_base + 4 w, has hot[w] and
// cold[w].
inline ShadowHot* g_shadow_hot = nullptr;
inline ShadowCold* g_shadow_cold = nullptr;
inline bool reserve_shadow() {
    static const bool ok = [] {
        const size_t words = g_shared_size / 4;
        const int prot = PROT_READ | PROT_WRITE;
        const int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
        void* h = mmap(nullptr, words * sizeof(ShadowHot), prot, flags, -1, 0);
        void* c = mmap(nullptr, words * sizeof(ShadowCold), prot, flags, -1, 0);
        if (h == MAP_FAILED || c == MAP_FAILED) return false;
        g_shadow_hot = static_cast<ShadowHot*>(h);
        g_shadow_cold = static_cast<ShadowCold*>(c);
        return true;
    }();
    return ok;
}

// Per page of the global range: the bytes [lo, hi) of it that belong to a live cudaMalloc'd
// buffer (0, 0: a guard page, or freed), and that buffer's number in the allocation table.
struct GlobalPage {
    uint32_t lo = 0, hi = 0;
};
inline GlobalPage* g_global_pages = nullptr;
// The initialisation check's shadow of the global range: a byte per 4-byte word, nonzero once
// something wrote the word (a kernel's store or atomic, cudaMemcpy, cudaMemset) since its
// buffer was allocated or lent (gpu::allocate). A kernel's load of a word never written is
// compute-sanitizer initcheck's report, whatever the 0xFF fill happens to read as.
inline unsigned char* g_global_init = nullptr;
inline void set_written(const void* p, size_t n, unsigned char value) {
    const size_t off = uintptr_t(p) - uintptr_t(g_global_base);
    if (!g_global_init || n == 0 || off >= g_global_size) return;
    std::memset(g_global_init + (off >> 2), value, ((off + n - 1) >> 2) - (off >> 2) + 1);
}
// The global race check's shadow of the global range: per 4-byte word, the tag of the last
// plain write to it and that of the last plain read (global_tag below), 16 bytes a word.
struct GlobalRaceWord {
    uint64_t w, r;
};
inline GlobalRaceWord* g_global_race = nullptr;
// Forgets the race check's records of the bytes [p, p + n) of the global range (whole pages).
inline void forget_races(const void* p, size_t n) {
    const size_t off = uintptr_t(p) - uintptr_t(g_global_base);
    if (g_global_race && off < g_global_size)
        madvise(reinterpret_cast<unsigned char*>(g_global_race) + 4 * off, 4 * n, MADV_DONTNEED);
}
struct GlobalAlloc {
    unsigned char* map = nullptr;  // [guard][data pages][guard]
    size_t map_bytes = 0;
    unsigned char* ptr = nullptr;  // 256-byte aligned, its end at most 255 bytes before the guard
    size_t bytes = 0;              // the live bytes from ptr on: what the checks allow
    size_t block_bytes = 0;        // what cudaMalloc was asked for
    // cudaMalloc's caller holds it all; or gpu::allocate (cuda/device_memory.cu), which rounds
    // requests up and caches freed blocks, lent `bytes` of it, or holds it in its cache.
    enum Owner : unsigned char { cuda_malloc, lent, cached } owner = cuda_malloc;
};
// A buffer as a report names it.
inline std::string describe_buffer(const GlobalAlloc& a) {
    const std::string block = std::to_string(a.block_bytes) + " bytes";
    if (a.owner == GlobalAlloc::lent)
        return "a buffer of " + std::to_string(a.bytes) + " bytes from gpu::allocate (its " +
               "cudaMalloc'd block: " + block + ")";
    if (a.owner == GlobalAlloc::cached)
        return "a cudaMalloc'd block of " + block + " in gpu::allocate's cache (released: no " +
               "buffer holds it)";
    return "a cudaMalloc'd buffer of " + std::to_string(a.bytes) + " bytes";
}
inline std::mutex& global_mutex() {
    static auto* m = new std::mutex;
    return *m;
}
inline std::unordered_map<uintptr_t, GlobalAlloc>& global_allocs() {
    static auto* m = new std::unordered_map<uintptr_t, GlobalAlloc>;
    return *m;
}
inline Space& global_space() {
    static Space* s = [] {
        auto* sp = new Space;
        (void)shared_space();                   // g_page_shift
        sp->reserve(size_t(64) << 30);          // every cudaMalloc'd buffer: 64 GB of addresses
        const size_t pages = sp->size >> g_page_shift;
        if (pages) {
            void* t = mmap(nullptr, pages * sizeof(GlobalPage), PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
            void* w = mmap(nullptr, sp->size / 4, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
            void* r = mmap(nullptr, sp->size * 4, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
            if (t == MAP_FAILED || w == MAP_FAILED) {
                munmap(sp->base, sp->size);
                sp->base = nullptr, sp->size = 0;
            } else {
                g_global_pages = static_cast<GlobalPage*>(t);
                g_global_init = static_cast<unsigned char*>(w);
                // (without this shadow the global race check is off: global_tag stays 0)
                if (r != MAP_FAILED) g_global_race = static_cast<GlobalRaceWord*>(r);
            }
        }
        g_global_size = sp->size;
        g_global_base = sp->base;
        return sp;
    }();
    return *s;
}

// What the SIGSEGV handler looks up (without locks): each region's whole mapping.
struct GuardEntry {
    std::atomic<uintptr_t> lo{0}, hi{0};
    std::atomic<const SharedRegion*> region{nullptr};
};
constexpr int GUARD_TABLE_SIZE = 8192;
inline GuardEntry guard_table[GUARD_TABLE_SIZE];
inline std::atomic<int> guard_count{0};

struct SharedRegion {
    const SharedSite* site = nullptr;  // nullptr: the launch's dynamic shared memory
    unsigned char* map = nullptr;      // [guard page][data pages][guard page]
    size_t map_bytes = 0;
    unsigned char* data = nullptr;
    size_t data_bytes = 0;
    unsigned char* ptr = nullptr;  // the array: ends at most 15 bytes before the second guard
    size_t bytes = 0;
    uint64_t gen = 0;  // the block that last filled it
    int guard = -1;    // its entry in guard_table
    bool in_space = false;          // map lies in shared_space() (else a plain mmap)
    ShadowHot* hot = nullptr;    // its data's words in the flat shadow (race check)
    ShadowCold* cold = nullptr;
    bool marked = false;         // OUTSIDE set for ptr and bytes as they are

    SharedRegion() = default;
    SharedRegion(const SharedRegion&) = delete;
    SharedRegion& operator=(const SharedRegion&) = delete;
    ~SharedRegion() { unmap(); }

    void unmap() {
        if (guard >= 0) guard_table[guard].lo = 0, guard_table[guard].hi = 0;
        if (map && in_space) {
            std::vector<const SharedRegion*>& pages = shared_pages();
            const size_t first = size_t(data - g_shared_base) >> g_page_shift;
            for (size_t k = 0; k < (data_bytes >> g_page_shift); k++) pages[first + k] = nullptr;
            // The next region here starts with a shadow never accessed (another runner's
            // epochs are not this one's), its guard pages' words included.
            const size_t at = size_t(map - g_shared_base) / 4, words = map_bytes / 4;
            madvise(g_shadow_hot + at, words * sizeof(ShadowHot), MADV_DONTNEED);
            madvise(g_shadow_cold + at, words * sizeof(ShadowCold), MADV_DONTNEED);
            shared_space().give(map, map_bytes);
        } else if (map) {
            munmap(map, map_bytes);
        }
        map = data = ptr = nullptr;
        hot = nullptr, cold = nullptr;
        marked = false;
    }
    // Room for `n` bytes, the array's end at the data's end (rounded to 16 bytes), its start
    // `misalign` bytes past a 16-byte boundary (a tile: as far as its offset in the dynamic
    // shared memory is on a GPU, so that a vector access misaligned there is misaligned here).
    void place(size_t n, size_t misalign = 0) {
        const size_t page = page_bytes(), rounded = (misalign + n + 15) / 16 * 16;
        const size_t need = (rounded + page - 1) / page * page;
        if (!map || need != data_bytes) {
            unmap();
            map_bytes = need + 2 * page;
            map = reserve_shadow() ? shared_space().take(map_bytes) : nullptr;
            in_space = map != nullptr;
            if (!map) {
                void* m = mmap(nullptr, map_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if (m == MAP_FAILED) throw std::bad_alloc();
                map = static_cast<unsigned char*>(m);
            }
            data = map + page;
            data_bytes = need;
            if (need && mprotect(data, need, PROT_READ | PROT_WRITE) != 0) throw std::bad_alloc();
            if (in_space) {
                hot = g_shadow_hot + size_t(data - g_shared_base) / 4;
                cold = g_shadow_cold + size_t(data - g_shared_base) / 4;
                // A shadow never accessed, and the guard pages' words OUTSIDE: an access
                // there goes to the exact check, which leaves it to the fault.
                ShadowHot* const map_hot = hot - page / 4;
                std::memset(map_hot, 0, map_bytes / 4 * sizeof(ShadowHot));
                for (size_t w = 0; w < page / 4; w++)
                    map_hot[w].w = OUTSIDE, hot[need / 4 + w].w = OUTSIDE;
                marked = false;
                std::vector<const SharedRegion*>& pages = shared_pages();
                g_shared_pages = pages.data();
                const size_t first = size_t(data - g_shared_base) >> g_page_shift;
                for (size_t k = 0; k < (need >> g_page_shift); k++) pages[first + k] = this;
            }
            if (guard < 0) {
                guard = guard_count.fetch_add(1);
                if (guard >= GUARD_TABLE_SIZE) {  // full: take an entry a freed region left
                    guard = -1;
                    for (int g = 0; g < GUARD_TABLE_SIZE && guard < 0; g++) {
                        uintptr_t zero = 0;
                        if (guard_table[g].lo.load() == 0 &&
                            guard_table[g].lo.compare_exchange_strong(zero, 1))
                            guard = g;
                    }
                    if (guard < 0) throw std::runtime_error("emulator: too many shared arrays");
                }
            }
            guard_table[guard].region = this;
            guard_table[guard].hi = reinterpret_cast<uintptr_t>(map) + map_bytes;
            guard_table[guard].lo = reinterpret_cast<uintptr_t>(map);
        }
        unsigned char* const at = data + data_bytes - rounded + misalign;
        if (at != ptr || n != bytes || !marked) {
            bytes = n;
            ptr = at;
            mark_outside();
        }
    }
    // Sets OUTSIDE on the words not wholly inside [ptr, ptr + bytes), clears it on the others.
    void mark_outside() {
        marked = true;
        if (!hot) return;
        const size_t first = size_t(ptr - data) / 4, end = (size_t(ptr - data) + bytes) / 4;
        for (size_t w = 0; w < data_bytes / 4; w++)
            hot[w].w = w >= first && w < end ? hot[w].w & ~OUTSIDE : hot[w].w | OUTSIDE;
    }
    void fill() { std::memset(data, 0xFF, data_bytes); }
    void clear_shadow() {
        if (!hot) return;
        std::memset(hot, 0, data_bytes / 4 * sizeof(ShadowHot));
        mark_outside();
    }
    // The first byte of the padding that is no longer 0xFF, or nullptr.
    const unsigned char* written_padding() const {
        for (const unsigned char* p = data; p < ptr; p++)
            if (*p != 0xFF) return p;
        for (const unsigned char* p = ptr + bytes; p < data + data_bytes; p++)
            if (*p != 0xFF) return p;
        return nullptr;
    }
    std::string name() const {
        if (!site) return "the dynamic shared memory (" + std::to_string(bytes) + " bytes)";
        return std::string(site->tile ? "shared tile `" : "shared array `") + site->name +
               "` (" + site->file + ":" + std::to_string(site->line) + ", " +
               std::to_string(bytes) + " bytes" +
               (site->tile ? ", carved from the dynamic shared memory)" : ")");
    }
    // Where byte p lies relative to the array, in words.
    std::string where(const unsigned char* p) const {
        const long off = long(p - ptr);
        if (off < 0) return std::to_string(-off) + " bytes before the start of " + name();
        return "byte " + std::to_string(off) + " of " + name() + ", past its end";
    }
};

// One block runner's shared memory: the regions by site slot, the dynamic one, and what the
// current block has declared so far.
struct SharedArena {
    std::vector<std::unique_ptr<SharedRegion>> regions;
    SharedRegion dynamic;
    std::vector<SharedRegion*> touched;  // this block's arrays
    uint64_t gen = 0;
    size_t static_bytes = 0, dynamic_bytes = 0, limit = DEFAULT_DYNAMIC_SHARED;
#ifdef EMU_THREADS
    std::mutex mutex;  // the block's threads reach a declaration at once
#endif
    // A new block: its arrays start as NaN when first declared, the dynamic memory now.
    void begin_block(size_t dyn_bytes, size_t total_limit) {
        gen++;
        touched.clear();
        static_bytes = 0;
        dynamic_bytes = dyn_bytes;
        limit = total_limit;
        dynamic.place(dyn_bytes);
        dynamic.fill();
    }
    // Every region's race-check shadow back to "never accessed" (when the epochs start over).
    void clear_shadows() {
        for (const std::unique_ptr<SharedRegion>& r : regions)
            if (r) r->clear_shadow();
        dynamic.clear_shadow();
    }
    // After the block: "" or the first out-of-bounds write found in the padding.
    std::string end_block() const {
        for (const SharedRegion* r : touched)
            if (const unsigned char* p = r->written_padding())
                return "shared memory written out of bounds: " + r->where(p);
        if (const unsigned char* p = dynamic.written_padding())
            return "shared memory written out of bounds: " + dynamic.where(p);
        return "";
    }
};

struct BlockState {
    dim3 grid_dim, block_dim, block_idx;
    SharedArena* arena = nullptr;
    std::vector<Warp> warps;
    std::string error;  // first error seen in this block
};

inline thread_local ThreadState* t_current = nullptr;
inline ThreadState& cur() { return *t_current; }

// The checks the access hooks make (all on; the tests turn one off to show that its planted
// bug then goes unseen, and EMU_RACECHECK=0 in the environment turns the race check off, to
// measure what it costs).
enum Check : unsigned {
    check_races = 1,         // shared memory: another warp's access in the same barrier epoch
    check_shared_bounds = 2, // shared memory: an access outside its array (padding, before it)
    check_global_bounds = 4, // a cudaMalloc'd buffer: an access past its end or before its start
    check_alignment = 8,     // an N-byte access (float2, float4: 8, 16) at an address not N-aligned
    check_guard_pages = 16,  // any build: a fault in the global range (a cudaMalloc'd buffer's
                             // guard page), or a general-protection fault, named by the handler
    check_copies = 32,       // any build: a cudaMemcpy or cudaMemset past a buffer's bytes
    check_barrier_paths = 64,  // fibers: one __syncthreads line reached through different calls
    check_init = 128,        // a load of global or shared memory that nothing wrote (initcheck)
    check_registers = 256,   // any build with a register table (nvcc's): a block over the
                             // registers a block may have (cuda/emu/registers.h)
    check_global_races = 512,  // global memory: another block's plain access in the same
                               // launch, or another warp's in the same barrier epoch
    check_host_memory = 1024,  // an access in none of device memory, shared memory and the
                               // thread's own stack (a host pointer; a local array overrun)
    all_checks = 2047
};
struct Config {
    Schedule schedule = Schedule::forward;
    int workers = 0;  // 0: min(hardware threads, 4)
    size_t stack_bytes = 64 * 1024;
    unsigned checks = all_checks;
};
inline Config& config() {
    static Config c = [] {
        Config k;
        const char* e = std::getenv("EMU_RACECHECK");
        if (e && std::strcmp(e, "0") == 0) k.checks &= ~unsigned(check_races);
        return k;
    }();
    return c;
}
// Whether this object was compiled with the access hooks (EMU_RACECHECK=1, GCC; see
// cuda/cuda.mk): the checks above exist only there.
constexpr bool instrumented() {
#ifdef EMU_INSTRUMENTED
    return true;
#else
    return false;
#endif
}
// The launch's checks, copied from config() at every launch (one plain load for a hook).
inline unsigned g_checks = all_checks;
inline void set_schedule(Schedule s) { config().schedule = s; }
inline void set_workers(int n) { config().workers = n; }

inline void* dynamic_shared() { return cur().block->arena->dynamic.ptr; }

// The running fiber's stack, [t_stack_lo, t_stack_lo + t_stack_size): what kernel code may
// touch outside device memory (host_access). Outside a kernel (or with check_host_memory off)
// every address.
inline thread_local uintptr_t t_stack_lo = 0;
inline thread_local uintptr_t t_stack_size = ~uintptr_t(0);
// A report's message lets host memory pass for the rest of the thread's run: its strings may
// run library code compiled with the hooks (the linker keeps one copy of an inline function).
inline void quiet_hooks() { t_stack_lo = 0, t_stack_size = ~uintptr_t(0); }
// Ends the running thread with an error (below); the message is built after quiet_hooks().
[[noreturn]] inline void fail_in_thread_(const std::string& msg);
#define fail_in_thread(...) (::emu::quiet_hooks(), ::emu::fail_in_thread_(__VA_ARGS__))
inline std::string thread_name(int tid);

// A SHARED declaration: the block's copy of the array, placed and filled by the first thread
// of the block that reaches it.
#if EMU_RT_DECLARE_ONLY
void* shared_at(SharedSite& site, size_t bytes, size_t misalign = 0);
#else
EMU_RT_INLINE void* shared_at(SharedSite& site, size_t bytes, size_t misalign = 0) {
    int slot = site.slot.load(std::memory_order_acquire);
    if (slot < 0) {
        static std::mutex m;
        std::lock_guard<std::mutex> lock(m);
        slot = site.slot.load();
        if (slot < 0) site.slot.store(slot = next_shared_slot()++, std::memory_order_release);
    }
    SharedArena& a = *cur().block->arena;
#ifdef EMU_THREADS
    std::lock_guard<std::mutex> lock(a.mutex);
#endif
    if (a.regions.size() <= size_t(slot)) a.regions.resize(slot + 1);
    std::unique_ptr<SharedRegion>& r = a.regions[slot];
    if (!r) r = std::make_unique<SharedRegion>(), r->site = &site;
    if (r->gen != a.gen) {
        if (!site.tile) a.static_bytes += bytes;
        if (a.static_bytes > STATIC_SHARED_MAX)
            fail_in_thread("static shared memory: " + std::to_string(a.static_bytes) +
                           " bytes with `" + site.name + "` (" + site.file + ":" +
                           std::to_string(site.line) +
                           "), over the 48 KB a kernel may declare "
                           "(ptxas refuses it); use dynamic shared memory");
        if (a.static_bytes + a.dynamic_bytes > a.limit)
            fail_in_thread("shared memory: " + std::to_string(a.static_bytes) + " bytes static (`" +
                           site.name + "`, " + site.file + ":" + std::to_string(site.line) +
                           ") + " + std::to_string(a.dynamic_bytes) + " dynamic, over the " +
                           std::to_string(a.limit) +
                           " bytes a block may have (48 KB unless "
                           "the kernel opted in with cudaFuncSetAttribute, 227 KB on sm_90)");
        r->place(bytes, misalign);
        r->fill();
        r->gen = a.gen;
        a.touched.push_back(r.get());
    }
    return r->ptr;
}
#endif

// SHARED_TILE: the tile must lie inside the launch's dynamic shared memory (the cursor walks
// through it as on a GPU), at an offset its type's alignment divides; the kernel gets an array
// of its own, as SHARED would give it, as far past a 16-byte boundary as the offset is (the
// dynamic shared memory starts 16-byte aligned on a GPU), so that a float4 access to a tile
// carved at an odd float is misaligned here too.
#if EMU_RT_DECLARE_ONLY
void* shared_tile(SharedSite& site, const unsigned char* cursor, size_t bytes, size_t align);
#else
EMU_RT_INLINE void* shared_tile(SharedSite& site, const unsigned char* cursor, size_t bytes,
                                size_t align) {
    const SharedRegion& dyn = cur().block->arena->dynamic;
    const long off = long(cursor - dyn.ptr);
    if (off >= 0 && size_t(off) % align != 0)
        fail_in_thread(std::string("shared tile `") + site.name + "` (" + site.file + ":" +
                       std::to_string(site.line) + ") starts at byte " + std::to_string(off) +
                       " of the dynamic shared memory, not a multiple of its type's alignment (" +
                       std::to_string(align) + " bytes): a GPU faults on its accesses");
    if (off < 0 || size_t(off) + bytes > dyn.bytes)
        fail_in_thread(std::string("shared tile `") + site.name + "` (" + site.file + ":" +
                       std::to_string(site.line) + "): " + std::to_string(bytes) +
                       " bytes from byte " + std::to_string(off) + " of the dynamic shared " +
                       "memory, which has " + std::to_string(dyn.bytes) +
                       ": the launch gives fewer bytes than the tiles carved from them");
    return shared_at(site, bytes, size_t(off) % 16);
}
#endif

// CHECK_LAUNCH_BOUNDS(N [, min blocks]): a GPU refuses to launch a kernel declared
// __launch_bounds__(N) with more than N threads per block.
inline void check_launch_bounds(long max_threads, long = 0) {
    const dim3 b = cur().block->block_dim;
    const long threads = long(b.x) * b.y * b.z;
    if (threads > max_threads)
        fail_in_thread("launch: " + std::to_string(threads) +
                       " threads per block, over the kernel's __launch_bounds__(" +
                       std::to_string(max_threads) + "): a GPU refuses the launch");
}

// ---- one block on fibers -------------------------------------------------------------------
#ifndef EMU_THREADS
struct Fiber {
#ifdef EMU_FAST_SWITCH
    void* sp = nullptr;
#else
    ucontext_t ctx;
#endif
    // The fiber's stack: stack_size bytes, uninitialised (touching 256 stacks per launch cost
    // seconds), in its own mapping with STACK_GUARD bytes of PROT_NONE above its top: a local
    // array read or written past its end faults there, and the SIGSEGV handler names it.
    struct Unmap {
        size_t bytes;
        void operator()(char* p) const { munmap(p, bytes); }
    };
    static constexpr size_t STACK_GUARD = 64 * 1024;
    std::unique_ptr<char[], Unmap> stack{nullptr, Unmap{0}};
    size_t stack_size = 0;
    void new_stack(size_t bytes) {
        const size_t page = size_t(sysconf(_SC_PAGESIZE));
        bytes = (bytes + page - 1) / page * page;
        void* m = mmap(nullptr, bytes + STACK_GUARD, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED || mprotect(static_cast<char*>(m) + bytes, STACK_GUARD, PROT_NONE)) {
            if (m != MAP_FAILED) munmap(m, bytes + STACK_GUARD);
            throw std::bad_alloc();
        }
        stack = std::unique_ptr<char[], Unmap>(static_cast<char*>(m), Unmap{bytes + STACK_GUARD});
        stack_size = bytes;
    }
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
    SharedArena arena;
    const std::function<void()>* body = nullptr;
    int current = -1;
    int at_barrier = 0;
    const char* barrier_file = nullptr;  // where the first waiting thread called __syncthreads
    int barrier_line = 0;
    const void* barrier_caller = nullptr;  // ... and its call path (syncthreads)
    const void* barrier_site = nullptr;
    // One __syncthreads line met through two code addresses (a, b): two barriers, unless both
    // are copies of one source call (run_grid decides when the launch ends: same_source_call).
    struct BarrierDoubt {
        const void *a, *b;
        std::string report;
    };
    std::vector<BarrierDoubt> barrier_doubts;
    // The race check's barrier epoch: a new number at every block start and barrier release.
    uint32_t epoch = 0;
    // The block's first epoch: a shared word whose last write is older was never written by this
    // block (the init check); 0 once the epochs start over within the block (the check is off).
    uint32_t first_epoch = 0;
    // The global race check: the launch's number and the block's index (global_tag), and the
    // barriers the block has passed.
    uint64_t global_block = 0;
    uint32_t barriers = 0;
    bool in_kernel = false;  // a fiber runs (the access hooks ignore the scheduler's own work)
    // Set by the SIGSEGV handler (which allocates nothing): a guard page was touched.
    // fault: 0 none, 1 a shared array's guard page (fault_region), 2 the global range (a
    // cudaMalloc'd buffer's guard page, or freed memory), 3 a general-protection fault (on
    // x86-64: a misaligned 16-byte vector access). fault_write: 1 a write, 0 a read, -1 unknown.
    int fault = 0;
    const SharedRegion* fault_region = nullptr;
    const unsigned char* fault_addr = nullptr;
    int fault_thread = -1;
    int fault_write = -1;
    const void* kernel = nullptr;  // the launch's kernel, for a fault's message
};
inline thread_local FiberBlock* t_fb = nullptr;
// The race check's view of the running fiber: its block's epoch << 32 | its tid, set by the
// scheduler as it switches to it; 0 outside a kernel, or with the race check off.
inline thread_local uint64_t t_race = 0;
inline thread_local const Warp* t_warp = nullptr;  // the running fiber's warp (race check)
// The global race check's tag of the running fiber's accesses, 0 outside a kernel or with the
// check off. From the top bit down: the launch's number (20 bits; 0 is no launch), the block's
// index in its grid (22 bits), the warp (5) and how many barriers the block has passed (15; the
// largest value is "too many to count", whose order within the block is not compared); the low
// 2 bits are the read record's flags. Two accesses of one launch are unordered when their blocks
// differ, or their warps differ in one barrier epoch; the lanes of one warp are not compared.
namespace global_tag {
constexpr int launch_shift = 44, block_shift = 22, warp_shift = 17, epoch_shift = 2;
constexpr uint64_t launch_limit = uint64_t(1) << 20, block_mask = (uint64_t(1) << 22) - 1;
constexpr uint64_t epoch_uncounted = 0x7fff;
constexpr uint64_t many_blocks = 1, many_warps = 2;  // read record: readers in other blocks,
                                                     // in other warps of its epoch
inline uint64_t launch(uint64_t t) { return t >> launch_shift; }
inline uint64_t block(uint64_t t) { return t >> block_shift & block_mask; }
inline int warp(uint64_t t) { return int(t >> warp_shift & 31); }
inline uint64_t epoch(uint64_t t) { return t >> epoch_shift & epoch_uncounted; }
// Of one launch: the same block, and one barrier epoch that is counted.
inline bool same_epoch(uint64_t a, uint64_t b) {
    return block(a) == block(b) && epoch(a) == epoch(b) && epoch(a) != epoch_uncounted;
}
inline bool unordered(uint64_t a, uint64_t b) {
    return block(a) != block(b) || (same_epoch(a, b) && warp(a) != warp(b));
}
}  // namespace global_tag
inline thread_local uint64_t t_global = 0;
inline std::atomic<uint64_t> g_launches{0};  // launches begun (global_tag's launch numbers)

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

[[noreturn]] inline void fail_in_thread_(const std::string& msg) {
    FiberBlock& fb = *t_fb;
    if (fb.bs.error.empty()) fb.bs.error = msg;
    // Park this fiber forever: the scheduler sees the error and abandons the block.
    fb.fibers[fb.current].state = Fiber::at_barrier;
    for (;;) yield_to_scheduler();
}

// A barrier is its source line and its call path: `caller`, the return address of the function
// whose code calls __syncthreads (a helper not inlined: where each arm called it), and, where
// syncthreads is a call of its own (the builds with the access hooks), the call's return
// address (a helper inlined into each arm: one call instruction per copy). A helper called from
// both arms of a branch is two barriers on a GPU (two bar.sync), one line here. Two addresses
// are two barriers unless their chains of inlined frames match (same_source_call, when the
// launch ends): a compiler may copy one call into both paths of a branch before it.
inline std::string code_at(const void* pc);
#if EMU_RT_DECLARE_ONLY
void syncthreads(const char* file, int line, const void* caller);
#else
EMU_RT_INLINE void syncthreads(const char* file, int line, const void* caller) {
    FiberBlock& fb = *t_fb;
    const void* site = __builtin_return_address(0);
    if (fb.at_barrier == 0) {
        fb.barrier_file = file;
        fb.barrier_line = line;
        fb.barrier_caller = caller, fb.barrier_site = site;
    } else if (line != fb.barrier_line ||
               (file != fb.barrier_file && std::strcmp(file, fb.barrier_file) != 0)) {
        fail_in_thread("threads of one block wait at different __syncthreads (" +
                       std::string(fb.barrier_file) + ":" + std::to_string(fb.barrier_line) +
                       " and " + file + ":" + std::to_string(line) +
                       "): a barrier in divergent code is undefined behaviour");
    } else if ((caller != fb.barrier_caller || site != fb.barrier_site) &&
               (g_checks & check_barrier_paths)) {
        // Told apart when the launch ends (the line tables are read then, once per pair).
        const void* a = fb.barrier_caller != caller ? fb.barrier_caller : fb.barrier_site;
        const void* b = fb.barrier_caller != caller ? caller : site;
        bool known = false;
        for (const FiberBlock::BarrierDoubt& d : fb.barrier_doubts) known |= d.a == a && d.b == b;
        if (!known)
            fb.barrier_doubts.push_back(
                {a, b,
                 "threads of one block wait at the __syncthreads of " + std::string(file) + ":" +
                     std::to_string(line) + " reached through different calls (" + code_at(a) +
                     " and " + code_at(b) +
                     "): on a GPU they are two barriers, and a barrier in divergent code is "
                     "undefined behaviour"});
    }
    fb.fibers[fb.current].state = Fiber::at_barrier;
    fb.at_barrier++;
    yield_to_scheduler();
}
#endif

// A lane arrives at a warp operation; the scheduler releases it with its group's result.
inline const ThreadState& warp_rendezvous(const WarpOp& op) {
    FiberBlock& fb = *t_fb;
    Fiber& f = fb.fibers[fb.current];
    ThreadState& ts = f.ts;
    const int lane = ts.tid % 32;
    if (!(op.mask >> lane & 1))
        fail_in_thread("warp operation: lane " + std::to_string(lane) + " calls " + describe(op) +
                       ", a mask without itself (undefined on a GPU)");
    ts.op = op;
    fb.bs.warps[ts.tid / 32].waiting_mask |= 1u << lane;
    f.state = Fiber::at_warp;
    yield_to_scheduler();
    return ts;
}

// Releases every group of waiting lanes that is complete: all the live lanes its mask names
// wait at the same operation with the same mask (same_operation: at any call sites). A group
// whose lanes all wait, but at different operations or with different masks, is an error once
// nothing else can move; so is one call site passed with two masks that name each other's
// lanes. Returns whether a group was released; sets fb.bs.error on an error.
inline bool release_warps(FiberBlock& fb, bool& stuck_mismatch) {
    bool released = false;
    stuck_mismatch = false;
    for (size_t wi = 0; wi < fb.bs.warps.size(); wi++) {
        Warp& w = fb.bs.warps[wi];
        Fiber* lanes = &fb.fibers[wi * 32];
        for (bool progress = true; progress && w.waiting_mask;) {
            progress = false;
            for (unsigned pending = w.waiting_mask; pending;) {
                const int lane = __builtin_ctz(pending);
                const WarpOp& op = lanes[lane].ts.op;
                const unsigned group = op.mask & w.alive_mask;
                pending &= ~(1u << lane);
                if ((group & w.waiting_mask) != group) continue;  // not all there yet
                bool same = true;
                for (unsigned g = group; g && same; g &= g - 1) {
                    const WarpOp& other = lanes[__builtin_ctz(g)].ts.op;
                    same = same_operation(other, op);
                }
                if (!same) continue;
                // A lane at the same call site whose other mask names this group's lanes.
                for (unsigned x = w.waiting_mask & ~group; x; x &= x - 1) {
                    const WarpOp& other = lanes[__builtin_ctz(x)].ts.op;
                    if (!same_site(other, op) || !(other.mask & group)) continue;
                    fb.bs.error = "warp " + std::to_string(wi) + ": lanes " + hex(group) +
                                  " call " + describe(op) + " and lane " +
                                  std::to_string(__builtin_ctz(x)) + " the same with mask " +
                                  hex(other.mask) +
                                  ": the lanes a mask names must pass the same mask "
                                  "(undefined on a GPU)";
                    return released;
                }
                uint64_t votes = 0;
                for (unsigned g = group; g; g &= g - 1) {
                    const int x = __builtin_ctz(g);
                    if (lanes[x].ts.op.value) votes |= 1u << x;
                }
                for (unsigned g = group; g; g &= g - 1) {
                    ThreadState& ts = lanes[__builtin_ctz(g)].ts;
                    const int src = ts.op.src;
                    if (op.kind == WarpKind::shuffle && src >= 0 && !(group >> src & 1)) {
                        fb.bs.error = describe(ts.op) + ": lane " + std::to_string(ts.tid % 32) +
                                      " reads lane " + std::to_string(src) +
                                      ", which has exited, does not exist or is not in the mask "
                                      "(undefined on a GPU)";
                        return released;
                    }
                    ts.result = op.kind == WarpKind::vote ? votes
                                : src >= 0                ? lanes[src].ts.op.value
                                                          : ts.op.value;
                    ts.group = group;
                    lanes[__builtin_ctz(g)].state = Fiber::running;
                }
                w.released(group);
                w.waiting_mask &= ~group;
                progress = released = true;
            }
        }
        // What remains waits for lanes still running, or meets the wrong partners.
        for (unsigned pending = w.waiting_mask; pending; pending &= pending - 1) {
            const WarpOp& op = lanes[__builtin_ctz(pending)].ts.op;
            const unsigned group = op.mask & w.alive_mask;
            if ((group & w.waiting_mask) != group) continue;
            for (unsigned g = group; g; g &= g - 1) {
                const WarpOp& other = lanes[__builtin_ctz(g)].ts.op;
                if (same_operation(other, op)) continue;
                stuck_mismatch = true;
                if (fb.bs.error.empty())
                    fb.bs.error = "warp " + std::to_string(wi) + ": lane " +
                                  std::to_string(__builtin_ctz(pending)) + " waits at " +
                                  describe(op) + " and lane " + std::to_string(__builtin_ctz(g)) +
                                  " at " + describe(other) +
                                  ": every live lane a mask names must reach the same kind of "
                                  "warp operation with the same mask (undefined on a GPU)";
                break;
            }
        }
    }
    return released;
}

// Why nothing can move: the first waiting lane of the first stuck warp and whom it waits for.
inline std::string warp_deadlock_message(FiberBlock& fb) {
    for (size_t wi = 0; wi < fb.bs.warps.size(); wi++) {
        Warp& w = fb.bs.warps[wi];
        if (!w.waiting_mask) continue;
        const int lane = __builtin_ctz(w.waiting_mask);
        const WarpOp& op = fb.fibers[wi * 32 + lane].ts.op;
        const unsigned missing = op.mask & w.alive_mask & ~w.waiting_mask;
        return "warp deadlock: warp " + std::to_string(wi) + " lane " + std::to_string(lane) +
               " waits at " + describe(op) + " for lanes " + hex(missing) +
               ", which wait at a __syncthreads or at another warp operation";
    }
    return "warp deadlock";
}

// A new barrier epoch of this runner (its shared memory is its own): numbers from 1 (0 is a
// shadow word never accessed); after EPOCH_LIMIT - 1 of them the shadows are cleared and the
// count starts over, so that an old number cannot come back while a word still holds it.
inline void new_epoch(FiberBlock& fb) {
    for (Warp& w : fb.bs.warps)
        w.new_epoch();
    if (++fb.epoch >= EPOCH_LIMIT) {
        fb.arena.clear_shadows();
        fb.epoch = 1;
        fb.first_epoch = 0;  // what this block wrote is forgotten with the shadows
    }
}

inline std::string thread_name(int tid);
inline std::string block_name();
inline std::string global_where(const unsigned char* p);
// The launch's error for the fault the SIGSEGV handler noted.
inline void fault_message(FiberBlock& fb) {
    const std::string who = thread_name(fb.fault_thread) + " of " + block_name();
    const char* did = fb.fault_write == 1   ? " writes "
                      : fb.fault_write == 0 ? " reads "
                                            : " touches ";
    char kernel[48] = "";
    if (fb.kernel) std::snprintf(kernel, sizeof kernel, " in kernel {func %p}", fb.kernel);
    const std::string in_kernel = kernel;
    if (fb.fault == 1)
        fb.bs.error = "shared memory out of bounds: " + who + did +
                      fb.fault_region->where(fb.fault_addr) + in_kernel;
    else if (fb.fault == 2)
        fb.bs.error = "global memory out of bounds: " + who + did + "a guard page: " +
                      global_where(fb.fault_addr) + in_kernel;
    else if (fb.fault == 4) {
        const Fiber& f = fb.fibers[fb.fault_thread];
        const uintptr_t top = uintptr_t(f.stack.get()) + f.stack_size;
        fb.bs.error = "host memory in a kernel: " + who + did + "byte " +
                      std::to_string(uintptr_t(fb.fault_addr) - top) +
                      " past the top of its own stack" + in_kernel +
                      " (a local array indexed past its end; on a GPU, local memory out of "
                      "bounds: a GPU faults)";
    }
    else
        fb.bs.error = "general-protection fault: " + who + in_kernel +
                      " (on x86-64: a 16-byte vector access, a float4, at an address not 16-byte "
                      "aligned; a GPU faults too)";
    fb.fault = 0;
    fb.fault_region = nullptr;
}

inline void run_block_fibers(FiberBlock& fb, int nthreads) {
    const bool reverse = config().schedule == Schedule::reverse;
    int alive = nthreads;
    t_fb = &fb;
    new_epoch(fb);
    fb.first_epoch = fb.epoch;
    fb.barriers = 0;
    for (int t = 0; t < nthreads; t++) {
        Fiber& f = fb.fibers[t];
        f.state = Fiber::running;
        f.ts.block = &fb.bs;
        start_fiber(fb, f);
    }
    fb.at_barrier = 0;
    for (Warp& w : fb.bs.warps)
        w.waiting_mask = 0;
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
            fb.in_kernel = true;
            t_race = (g_checks & check_races) ? uint64_t(fb.epoch) << 32 |
                                                    uint64_t(fb.first_epoch) << 10 | uint32_t(t)
                                              : 0;
            t_warp = &fb.bs.warps[t / 32];
            if (g_checks & check_host_memory)
                t_stack_lo = uintptr_t(f.stack.get()), t_stack_size = f.stack_size;
            t_global = fb.global_block
                           ? fb.global_block | uint64_t(t / 32) << global_tag::warp_shift |
                                 uint64_t(std::min<uint32_t>(fb.barriers,
                                                             global_tag::epoch_uncounted))
                                     << global_tag::epoch_shift
                           : 0;
#ifdef EMU_FAST_SWITCH
            emu_switch_stack(&fb.scheduler_sp, f.sp);
#else
            swapcontext(&fb.scheduler, &f.ctx);
#endif
            t_race = 0;
            t_global = 0;
            t_stack_lo = 0, t_stack_size = ~uintptr_t(0);
            fb.in_kernel = false;
            ran = true;
            if (fb.fault) fault_message(fb);
            if (!fb.bs.error.empty()) return;
            if (f.state == Fiber::done) {
                alive--;
                Warp& w = fb.bs.warps[t / 32];
                w.alive--;
                w.alive_mask &= ~(1u << (t % 32));
            }
        }
        bool stuck_mismatch = false;
        bool released = release_warps(fb, stuck_mismatch);
        if (!fb.bs.error.empty() && !stuck_mismatch) return;  // a bad shuffle source
        // Release the block barrier once every live thread waits at it.
        if (fb.at_barrier > 0 && fb.at_barrier == alive) {
            for (int t = 0; t < nthreads; t++)
                if (fb.fibers[t].state == Fiber::at_barrier) fb.fibers[t].state = Fiber::running;
            fb.at_barrier = 0;
            new_epoch(fb);  // what was before the barrier is ordered before what follows
            fb.barriers++;
            released = true;
        }
        if (!ran && !released && alive > 0) {
            if (stuck_mismatch) return;  // the message release_warps wrote
            int waiting_at_warp = 0;
            for (const Warp& w : fb.bs.warps)
                waiting_at_warp += __builtin_popcount(w.waiting_mask);
            fb.bs.error = waiting_at_warp > 0
                              ? warp_deadlock_message(fb)
                              : "__syncthreads: " + std::to_string(fb.at_barrier) + " of " +
                                    std::to_string(alive) +
                                    " live threads wait at a barrier the others never reach "
                                    "(a barrier inside a divergent branch?)";
            return;
        }
        if (stuck_mismatch) fb.bs.error.clear();  // others may still move: decide later
    }
}

// A SIGSEGV in a guard page of a shared array, on a fiber: note it and return to the
// scheduler, which fails the launch with the array's name. Anything else: the previous
// handler (or the default, a core dump) takes the signal again.
inline struct sigaction& previous_segv_action() {
    static struct sigaction a;
    return a;
}
inline void segv_handler(int sig, siginfo_t* info, void* context) {
    const uintptr_t addr = reinterpret_cast<uintptr_t>(info->si_addr);
    const SharedRegion* hit = nullptr;
    const int count = std::min(guard_count.load(), GUARD_TABLE_SIZE);
    for (int g = 0; g < count && !hit; g++)
        if (addr >= guard_table[g].lo.load() && addr < guard_table[g].hi.load())
            hit = guard_table[g].region.load();
    FiberBlock* fb = t_fb;
    int kind = hit ? 1 : 0;
    if (fb && fb->in_kernel && !hit && (g_checks & check_guard_pages)) {
        if (addr - uintptr_t(g_global_base) < g_global_size) kind = 2;
        else if (info->si_code == SI_KERNEL) kind = 3;
    }
    if (fb && fb->in_kernel && !hit && !kind && fb->current >= 0 &&
        (g_checks & check_host_memory)) {
        const Fiber& f = fb->fibers[fb->current];
        const uintptr_t top = uintptr_t(f.stack.get()) + f.stack_size;
        if (addr - top < Fiber::STACK_GUARD) kind = 4;  // past the top of the thread's stack
    }
    if (kind && fb && fb->current >= 0 && !fb->fault) {
        fb->fault = kind;
        fb->fault_addr = reinterpret_cast<const unsigned char*>(addr);
        fb->fault_thread = fb->current;
        fb->fault_region = hit;
        fb->fault_write = -1;
#if defined(__x86_64__) && defined(REG_ERR)
        // The page fault's error code: bit 1 set for a write.
        if (kind != 3)
            fb->fault_write =
                (static_cast<ucontext_t*>(context)->uc_mcontext.gregs[REG_ERR] & 2) ? 1 : 0;
#endif
        fb->fibers[fb->current].state = Fiber::at_barrier;  // never resumed
        yield_to_scheduler();
    }
    struct sigaction& prev = previous_segv_action();
    if (prev.sa_flags & SA_SIGINFO && prev.sa_sigaction) {
        prev.sa_sigaction(sig, info, context);
        return;
    }
    sigaction(SIGSEGV, &prev, nullptr);  // returning re-runs the access under that handler
}
// At every launch: a test framework may have put its own handler in place since (doctest does
// for each test case); that one becomes the previous handler.
inline void install_segv_handler() {
    static std::mutex m;
    std::lock_guard<std::mutex> lock(m);
    struct sigaction now {};
    sigaction(SIGSEGV, nullptr, &now);
    if ((now.sa_flags & SA_SIGINFO) && now.sa_sigaction == segv_handler) return;
    struct sigaction a {};
    a.sa_sigaction = segv_handler;
    a.sa_flags = SA_SIGINFO | SA_NODEFER;  // NODEFER: the handler leaves by a fiber switch
    sigemptyset(&a.sa_mask);
    sigaction(SIGSEGV, &a, &previous_segv_action());
}

// ---- the access hooks' checks (fibers) -----------------------------------------------------
// Code addresses go into a message as "{code 0x...}"; run_grid turns them into file:line
// (resolve_code_addresses) once the launch has stopped.
inline std::string code_at(const void* pc) {
    char b[48];
    std::snprintf(b, sizeof b, "{code %p}", pc);
    return b;
}
inline std::string dims(dim3 d) {
    return "(" + std::to_string(d.x) + "," + std::to_string(d.y) + "," + std::to_string(d.z) + ")";
}
inline std::string thread_name(int tid) {
    const FiberBlock& fb = *t_fb;
    return "thread " + dims(fb.fibers[tid].ts.thread_idx) + " (warp " + std::to_string(tid / 32) +
           ")";
}
inline std::string block_name() { return "block " + dims(t_fb->bs.block_idx); }

[[noreturn, gnu::noinline, gnu::cold]] inline void race_error(const SharedRegion& r,
                                                              const unsigned char* p, bool write,
                                                              const void* pc, const char* other_did,
                                                              int other, const void* other_pc) {
    const FiberBlock& fb = *t_fb;
    const bool same_warp = other / 32 == fb.current / 32;
    fail_in_thread("shared-memory race on byte " + std::to_string(p - r.ptr) + " of " + r.name() +
                   " in " + block_name() + ": " + thread_name(fb.current) +
                   (write ? " writes it at " : " reads it at ") + code_at(pc) + ", and " +
                   thread_name(other) + " " + other_did + " it at " + code_at(other_pc) +
                   (same_warp ? ", with no __syncthreads, and no __syncwarp or warp operation "
                                "whose mask names both lanes, between them"
                              : ", with no __syncthreads between them (a __syncwarp or a warp "
                                "shuffle orders only the lanes of one warp)"));
}

// The race check of shadow word w of the shared range (g_shadow_hot[w]): tid of warp tid >> 5
// accesses it in epoch e. Another warp's access in the epoch is a race; another lane of the same
// warp's is one unless a chain of warp operations orders the two (Warp::ordered: two half-warp
// __syncwarp do not order a lane of one half after a lane of the other). A read that repeats
// what the word already records (the common case) stores nothing. MARKED: the word may carry
// OUTSIDE (the exact check's path), which stays.
[[noreturn, gnu::noinline, gnu::cold]] inline void race_at(size_t w, bool write, const void* pc,
                                                           const char* other_did, int other,
                                                           int32_t other_pc) {
    const unsigned char* p = g_shared_base + 4 * w;
    const SharedRegion* r = g_shared_pages[size_t(p - g_shared_base) >> g_page_shift];
    race_error(*r, p, write, pc, other_did, other, code_from_offset(other_pc));
}
// Another thread `other` accessed the word in this epoch when its warp had released `at`
// operations: a race unless it is a lane of this warp and ordered before tid's access.
[[gnu::noinline]] inline void other_in_epoch(size_t w, bool write, const void* pc,
                                             const char* other_did, uint32_t other, uint32_t tid,
                                             uint32_t at, int32_t other_pc) {
    if ((other >> 5) == (tid >> 5) && t_warp->ordered(int(other & 31), int(tid & 31), at)) return;
    race_at(w, write, pc, other_did, int(other), other_pc);
}
// A read of shared word w, which this block never wrote (its last write is older than the
// block's first epoch): the report, unless an atomic wrote it in this block or the check is off.
[[gnu::noinline]] inline void shared_uninit(size_t w, uint32_t first, const void* pc) {
    if (g_shadow_cold[w].atomic_epoch >= first || !(g_checks & check_init)) return;
    const unsigned char* p = g_shared_base + 4 * w;
    const SharedRegion* r = g_shared_pages[size_t(p - g_shared_base) >> g_page_shift];
    fail_in_thread("uninitialised shared memory: " + thread_name(t_fb->current) + " of " +
                   block_name() + " reads byte " + std::to_string(p - r->ptr) + " of " +
                   r->name() + " at " + code_at(pc) +
                   ", which no thread of this block wrote (shared memory starts undefined in "
                   "every block; here it reads the 0xFF fill)");
}
template <bool WRITE, bool MARKED = false>
[[gnu::always_inline]] inline void shadow_word(size_t w, uint32_t e, uint32_t tid, uint32_t first,
                                               const void* pc) {
    ShadowHot& h = g_shadow_hot[w];
    const uint32_t warp = tid >> 5, wt = MARKED ? h.w & ~OUTSIDE : h.w, rt = h.r;
    if (__builtin_expect((wt >> 10) == e && (wt & 1023) != tid, 0))
        other_in_epoch(w, WRITE, pc, "wrote", wt & 1023, tid, g_shadow_cold[w].w_seq,
                       g_shadow_cold[w].w_pc);
    if (WRITE) {
        if (__builtin_expect((rt >> 11) == e && ((rt & 1024) || (rt & 1023) != tid), 0)) {
            if (rt & 1024) {  // a second reader, of another warp than the first
                const bool first_other = ((rt & 1023) >> 5) != warp;
                race_at(w, true, pc, "read",
                        first_other ? int(rt & 1023) : int(g_shadow_cold[w].r2_tid),
                        first_other ? g_shadow_cold[w].r1_pc : g_shadow_cold[w].r2_pc);
            }
            other_in_epoch(w, true, pc, "read", rt & 1023, tid, g_shadow_cold[w].r1_seq,
                           g_shadow_cold[w].r1_pc);
        }
        const uint32_t tag = e << 10 | tid, seq = t_warp->seq;
        if (wt != tag || g_shadow_cold[w].w_seq != seq) {
            h.w = tag | (MARKED ? h.w & OUTSIDE : 0);
            g_shadow_cold[w].w_pc = code_offset(pc);
            g_shadow_cold[w].w_seq = seq;
        }
    } else {
        if (__builtin_expect((wt >> 10) < first, 0)) shared_uninit(w, first, pc);
        if ((rt >> 11) != e) {
            h.r = e << 11 | tid;
            g_shadow_cold[w].r1_pc = code_offset(pc);
            g_shadow_cold[w].r1_seq = t_warp->seq;
        } else if (!(rt & 1024) && ((rt & 1023) >> 5) != warp) {
            h.r = rt | 1024;
            g_shadow_cold[w].r2_tid = tid, g_shadow_cold[w].r2_pc = code_offset(pc);
        }
    }
}

// What an access does, for a report: a plain load or store, or an atomic (the hooks'
// __tsan_atomic*: atomicAdd, atomicCAS and the rest, and std::atomic_ref in kernel code).
enum class Did : unsigned char { read, write, atomic_read, atomic_write, atomic_update };
constexpr Did did(bool write) { return write ? Did::write : Did::read; }
inline const char* verb(Did d) {
    switch (d) {
        case Did::read:
            return " reads ";
        case Did::write:
            return " writes ";
        case Did::atomic_read:
            return " atomically reads ";
        case Did::atomic_write:
            return " atomically writes ";
        default:
            return " atomically updates ";
    }
}

[[gnu::noinline, gnu::cold]] inline void shared_out_of_bounds(const SharedRegion& r,
                                                              const unsigned char* p, size_t n,
                                                              Did what, const void* pc) {
    const FiberBlock* fb = t_fb;
    if (!fb || !fb->in_kernel || !(g_checks & check_shared_bounds)) return;
    fail_in_thread("shared memory out of bounds: " + thread_name(fb->current) + " of " +
                   block_name() + verb(what) + std::to_string(n) + " bytes at " + code_at(pc) +
                   ": " + r.where(p));
}

// The race check of the words [off / 4, (off + n - 1) / 4] of the shared range. ONE_WORD: the
// access is known to lie in one word (an aligned access of at most 4 bytes). t_race: the
// running thread's epoch and tid, 0 outside a kernel (the scheduler's own look at the padding)
// or with the race check off.
template <bool WRITE, bool ONE_WORD = false, bool MARKED = false>
[[gnu::always_inline]] inline void race_check(size_t off, size_t n, const void* pc) {
    const uint64_t tag = t_race;
    if (!tag) return;
    const uint32_t e = uint32_t(tag >> 32), tid = uint32_t(tag) & 1023, first = uint32_t(tag) >> 10;
    if (ONE_WORD) return shadow_word<WRITE, MARKED>(off >> 2, e, tid, first, pc);
    for (size_t w = off >> 2; w <= (off + n - 1) >> 2; w++)
        shadow_word<WRITE, MARKED>(w, e, tid, first, pc);
}
// An access of n bytes at p, in the shared range, that touches a word marked OUTSIDE: in a
// guard page, outside its array, or inside it but in a word it shares with the padding.
template <bool WRITE>
[[gnu::noinline]] inline void shared_access_slow(const unsigned char* p, size_t n,
                                                 const void* pc) {
    const SharedRegion* r = g_shared_pages[size_t(p - g_shared_base) >> g_page_shift];
    if (!r) return;  // a guard page: the access faults, and the SIGSEGV handler names it
    if (p < r->ptr || p + n > r->ptr + r->bytes)
        return shared_out_of_bounds(*r, p, n, did(WRITE), pc);
    race_check<WRITE, false, true>(size_t(p - g_shared_base), n, pc);
}
// The race check of a read of one shared word, out of line (shared_access below).
[[gnu::noinline]] inline void shared_read_word(size_t off, const void* pc) {
    race_check<false, true>(off, 4, pc);
}
// A shared access of N bytes: its words' OUTSIDE bits (the bounds), then the race check. Not
// inlined into the hooks: so the hooks' common path (the stack, host memory, a cudaMalloc'd
// buffer) needs no registers saved, and reaches this by a tail jump. A read of one word that its
// shadow already records (no other thread's write in this epoch, written in this block, and
// this warp's read, or reads by two warps, already kept) needs no check and stores nothing:
// decided here, with few registers; the rest is shared_read_word.
template <bool WRITE, size_t N, bool ONE_WORD>
[[gnu::noinline]] inline void shared_access(const unsigned char* p, const void* pc) {
    const size_t off = size_t(p - g_shared_base);
    if (ONE_WORD) {
        const ShadowHot h = g_shadow_hot[off >> 2];
        if (__builtin_expect(h.w & OUTSIDE, 0)) return shared_access_slow<WRITE>(p, N, pc);
        if (!WRITE) {
            const uint64_t tag = t_race;
            if (!tag) return;
            const uint32_t e = uint32_t(tag >> 32), tid = uint32_t(tag) & 1023,
                           first = uint32_t(tag) >> 10;
            if (((h.w >> 10) != e || (h.w & 1023) == tid) && (h.w >> 10) >= first &&
                (h.r >> 11) == e && ((h.r & 1024) || ((h.r & 1023) >> 5) == (tid >> 5)))
                return;
            return shared_read_word(off, pc);
        }
    } else {
        for (size_t w = off >> 2; w <= (off + N - 1) >> 2; w++)
            if (__builtin_expect(g_shadow_hot[w].w & OUTSIDE, 0))
                return shared_access_slow<WRITE>(p, N, pc);
    }
    race_check<WRITE, ONE_WORD>(off, N, pc);
}
// The same for n bytes known only at run time.
template <bool WRITE>
[[gnu::noinline]] inline void shared_access_n(const unsigned char* p, size_t n, const void* pc) {
    const size_t off = size_t(p - g_shared_base);
    for (size_t w = off >> 2; w <= (off + n - 1) >> 2; w++)
        if (g_shadow_hot[w].w & OUTSIDE) return shared_access_slow<WRITE>(p, n, pc);
    race_check<WRITE>(off, n, pc);
}

inline std::string global_where(const unsigned char* p) {
    std::lock_guard<std::mutex> lock(global_mutex());
    for (const auto& [key, a] : global_allocs()) {
        if (p < a.map || p >= a.map + a.map_bytes) continue;
        const std::string buf = describe_buffer(a);
        if (p < a.ptr) return std::to_string(a.ptr - p) + " bytes before the start of " + buf;
        return "byte " + std::to_string(p - a.ptr) + " of " + buf +
               (a.owner == GlobalAlloc::cached || p < a.ptr + a.bytes ? "" : ", past its end");
    }
    return "no live cudaMalloc'd buffer (freed memory, or a guard page between buffers)";
}

inline void global_init_any(size_t off, size_t n, Did what, const void* pc);
// An access in the global range that is not inside one page's live bytes: it may go on into
// the next page of the same buffer; else it is out of bounds.
[[gnu::noinline]] inline void global_slow(const unsigned char* p, size_t n, Did what,
                                          const void* pc) {
    const FiberBlock* fb = t_fb;
    if (!fb || !fb->in_kernel || !(g_checks & check_global_bounds)) return;
    const size_t off = size_t(p - g_global_base), page = size_t(1) << g_page_shift;
    const GlobalPage& pg = g_global_pages[off >> g_page_shift];
    const size_t in = off & (page - 1);
    if (in >= pg.lo && in + n <= pg.hi) return global_init_any(off, n, what, pc);
    if (in >= pg.lo && pg.hi == page && in + n > page) {  // on into the next page
        const GlobalPage& next = g_global_pages[(off >> g_page_shift) + 1];
        if (next.lo == 0 && in + n - page <= next.hi) return global_init_any(off, n, what, pc);
    }
    const unsigned char* bad = in < pg.lo || in >= pg.hi ? p : p + (pg.hi - in);
    fail_in_thread("global memory out of bounds: " + thread_name(fb->current) + " of " +
                   block_name() + verb(what) + std::to_string(n) + " bytes at " + code_at(pc) +
                   ": " + global_where(bad));
}

// A kernel's load (or atomic) of n bytes at p in a live buffer, some of whose words nothing
// wrote since the buffer was allocated or lent.
[[gnu::noinline, gnu::cold]] inline void global_uninit(const unsigned char* p, size_t n, Did what,
                                                       const void* pc) {
    const FiberBlock* fb = t_fb;
    if (!fb || !fb->in_kernel || !(g_checks & check_init)) return;
    const size_t off = size_t(p - g_global_base);
    size_t w = off >> 2;
    while (w < (off + n - 1) >> 2 && g_global_init[w]) w++;
    const unsigned char* word = g_global_base + 4 * w;
    fail_in_thread("uninitialised global memory: " + thread_name(fb->current) + " of " +
                   block_name() + verb(what) + std::to_string(n) + " bytes at " + code_at(pc) +
                   ": " + global_where(word < p ? p : word) +
                   ", which no kernel, cudaMemcpy or cudaMemset wrote since the buffer was "
                   "allocated (compute-sanitizer initcheck reports this read; here it reads the "
                   "0xFF fill)");
}
// A plain access of word w of the global range that another access of this launch, which no
// barrier orders before it, wrote or read (other: its tag; wrote: a write, else a read).
[[noreturn, gnu::noinline, gnu::cold]] inline void global_race_error(size_t w, bool write,
                                                                     const void* pc,
                                                                     uint64_t other, bool wrote) {
    using namespace global_tag;
    quiet_hooks();
    const FiberBlock* fb = t_fb;
    const dim3 g = fb->bs.grid_dim;
    const uint64_t b = block(other), mine = block(t_global);
    const std::string other_block =
        "block (" + std::to_string(b % g.x) + "," + std::to_string(b / g.x % g.y) + "," +
        std::to_string(b / (uint64_t(g.x) * g.y)) + ")";
    std::string who;
    if (!wrote && b == mine && (other & many_blocks))
        who = "another block";  // the reader kept is of this block; others read it too
    else if (!wrote && b == mine && (other & many_warps) && warp(other) == warp(t_global))
        who = "another warp of this block";
    else
        who = "warp " + std::to_string(warp(other)) + " of " +
              (b == mine ? std::string("this block") : other_block);
    fail_in_thread("global-memory race on " + global_where(g_global_base + 4 * w) + ": " +
                   thread_name(fb->current) + " of " + block_name() +
                   (write ? " writes it" : " reads it") + " at " + code_at(pc) + ", and " + who +
                   (wrote ? " wrote" : " read") + " it earlier in this launch, which nothing " +
                   "orders before this access (the blocks of one launch run in any order, and " +
                   "two warps of a block only meet at __syncthreads: an atomic, a barrier or a " +
                   "second launch orders them)");
}
// The global race check of a plain access to word w by the running fiber (tag me): against the
// word's last write, and a write against its reads (the last one kept, and the flags that say
// other blocks, or other warps of its epoch, read it too).
template <bool WRITE>
[[gnu::always_inline]] inline void global_race_word(size_t w, uint64_t me, const void* pc) {
    using namespace global_tag;
    GlobalRaceWord& s = g_global_race[w];
    const uint64_t wt = __atomic_load_n(&s.w, __ATOMIC_RELAXED);
    const uint64_t rt = __atomic_load_n(&s.r, __ATOMIC_RELAXED);
    const bool w_now = launch(wt) == launch(me), r_now = launch(rt) == launch(me);
    if (w_now && unordered(wt, me)) global_race_error(w, WRITE, pc, wt, true);
    if (WRITE) {
        if (r_now && ((rt & many_blocks) || unordered(rt, me) ||
                      ((rt & many_warps) && same_epoch(rt, me))))
            global_race_error(w, WRITE, pc, rt, false);
        if (wt != me) __atomic_store_n(&s.w, me, __ATOMIC_RELAXED);
        return;
    }
    uint64_t nr = rt;
    if (!r_now)
        nr = me;
    else if (block(rt) != block(me))
        nr = rt | many_blocks;
    else if (epoch(rt) != epoch(me))
        nr = me | (rt & many_blocks);  // a later epoch of the block: the earlier reads are ordered
    else if (warp(rt) != warp(me))
        nr = rt | many_warps;
    if (nr != rt) __atomic_store_n(&s.r, nr, __ATOMIC_RELAXED);
}
template <bool WRITE>
[[gnu::noinline]] inline void global_race_n(size_t g, size_t n, uint64_t me, const void* pc) {
    for (size_t w = g >> 2; w <= (g + n - 1) >> 2; w++) global_race_word<WRITE>(w, me, pc);
}
// Inlined where the access lies in one word (most of them); else a call.
template <bool WRITE>
[[gnu::always_inline]] inline void global_race(size_t g, size_t n, uint64_t me, const void* pc) {
    if (__builtin_expect((g & 3) + n <= 4, 1)) return global_race_word<WRITE>(g >> 2, me, pc);
    global_race_n<WRITE>(g, n, me, pc);
}

// The race check out of line: inlined, its registers would make every hook save registers on
// entry, the stack's and shared memory's accesses too; reached here by a tail jump.
template <bool WRITE>
[[gnu::noinline]] inline void global_race_call(size_t g, size_t n, uint64_t me, const void* pc) {
    global_race<WRITE>(g, n, me, pc);
}

// The initialisation check of an access of n bytes at offset g of the global range, inside a
// live buffer: a store marks its words written, a load checks them. RACE: a plain access,
// which the global race check sees too (atomics do not race with each other).
template <bool WRITE, bool LOAD = !WRITE, bool RACE = true>
[[gnu::always_inline]] inline void global_init(size_t g, size_t n, Did what, const void* pc) {
    unsigned char* const first = g_global_init + (g >> 2);
    unsigned char* const last = g_global_init + ((g + n - 1) >> 2);
    if (LOAD)
        for (unsigned char* w = first; w <= last; w++)
            if (__builtin_expect(!*w, 0))
                return global_uninit(g_global_base + g, n, what, pc);
    if (WRITE)
        for (unsigned char* w = first; w <= last; w++) *w = 1;
    if (RACE)
        if (const uint64_t me = t_global) return global_race_call<WRITE>(g, n, me, pc);
}

inline void global_init_any(size_t off, size_t n, Did what, const void* pc) {
    if (what == Did::read) return global_init<false>(off, n, what, pc);
    if (what == Did::write) return global_init<true>(off, n, what, pc);
    if (what == Did::atomic_write) return global_init<true, false, false>(off, n, what, pc);
    global_init<true, true, false>(off, n, what, pc);
}

// The message of a misaligned access (the hooks, and float4's own check): a vector (float2,
// float4) or an atomic at an address not a multiple of its size.
[[noreturn, gnu::noinline, gnu::cold]] inline void misaligned_error(const void* addr, size_t n,
                                                                    Did what, const void* pc) {
    const FiberBlock* fb = t_fb;
    char where[64];
    std::snprintf(where, sizeof where, "%p", addr);
    const bool atomic = what != Did::read && what != Did::write;
    const char* op = what == Did::read           ? "load from "
                     : what == Did::write        ? "store to "
                     : what == Did::atomic_read  ? "atomic load from "
                     : what == Did::atomic_write ? "atomic store to "
                                                 : "atomic update of ";
    fail_in_thread("misaligned " + std::to_string(n) + "-byte " + op + where + " (" +
                   std::to_string(uintptr_t(addr) & (n - 1)) + " bytes past a " +
                   std::to_string(n) + "-byte boundary) by " + thread_name(fb->current) + " of " +
                   block_name() + " at " + code_at(pc) +
                   (atomic ? ": a GPU faults; an atomic needs an address aligned to its size"
                           : ": a GPU faults; float2 and float4 accesses need 8- and 16-byte "
                             "alignment"));
}
[[gnu::noinline, gnu::cold]] inline void misaligned_access(const void* addr, size_t n, Did what,
                                                           const void* pc) {
    const FiberBlock* fb = t_fb;
    if (fb && fb->in_kernel && (g_checks & check_alignment)) misaligned_error(addr, n, what, pc);
}

// A member of a struct reached through a pointer not aligned to the struct's type (`p->x` with
// p a misaligned float4*): GCC's alignment check (-fsanitize=alignment, the hook
// __ubsan_handle_type_mismatch_v1 in cuda/emu/racecheck.cpp) tests the pointer against the
// type's alignment, whatever width of load the host compiler then emits: g++ reads p->x as 4
// bytes, nvcc may load the float4 whole, one 16-byte load that faults.
[[gnu::noinline, gnu::cold]] inline void misaligned_member(const void* addr, size_t alignment,
                                                           const char* type, const void* pc) {
    const FiberBlock* fb = t_fb;
    if (!fb || !fb->in_kernel || !(g_checks & check_alignment)) return;
    char where[64];
    std::snprintf(where, sizeof where, "%p", addr);
    fail_in_thread(std::string("misaligned member access within ") + type + " at " + where + " (" +
                   std::to_string(uintptr_t(addr) & (alignment - 1)) + " bytes past a " +
                   std::to_string(alignment) + "-byte boundary) by " + thread_name(fb->current) +
                   " of " + block_name() + " at " + code_at(pc) +
                   ": nvcc may read or write its members as one " + std::to_string(alignment) +
                   "-byte access, which faults on a GPU; the type's alignment must hold");
}

// What kernel code touches outside device memory and its own stack: the emulator's own state
// for the running block (threadIdx and the rest read its Fiber and FiberBlock, inlined into the
// kernel), and the program's static data (constant tables); anything else is host memory a GPU
// cannot reach: a host pointer, or a local array indexed past its stack.
inline bool in_static_data(uintptr_t p) {
    struct Range {
        uintptr_t lo, hi;
    };
    static const std::vector<Range> ranges = [] {
        std::vector<Range> r;
        dl_iterate_phdr(
            [](dl_phdr_info* info, size_t, void* data) {
                auto& v = *static_cast<std::vector<Range>*>(data);
                for (int k = 0; k < info->dlpi_phnum; k++) {
                    const ElfW(Phdr)& ph = info->dlpi_phdr[k];
                    if (ph.p_type == PT_LOAD)
                        v.push_back({info->dlpi_addr + ph.p_vaddr,
                                     info->dlpi_addr + ph.p_vaddr + ph.p_memsz});
                }
                return 0;
            },
            &r);
        return r;
    }();
    for (const Range& r : ranges)
        if (p >= r.lo && p < r.hi) return true;
    return false;
}
[[gnu::noinline]] inline void host_access(const unsigned char* p, size_t n, Did what,
                                          const void* pc) {
    const FiberBlock* fb = t_fb;
    if (!fb || !fb->in_kernel || !(g_checks & check_host_memory)) return;
    const uintptr_t a = uintptr_t(p);
    auto within = [a](const void* lo, size_t bytes) { return a - uintptr_t(lo) < bytes; };
    if (within(fb, sizeof(FiberBlock)) ||
        within(fb->fibers.data(), fb->fibers.size() * sizeof(Fiber)) ||
        within(fb->bs.warps.data(), fb->bs.warps.size() * sizeof(Warp)) ||
        within(fb->body, sizeof(*fb->body)))  // (std::function's own code is instrumented)
        return;
    // The emulator's thread-local variables, which its code inlined into kernels reads
    // (threadIdx: t_current) and writes (a report: quiet_hooks).
    if (within(&t_current, 8) || within(&t_fb, 8) || within(&t_stack_lo, 8) ||
        within(&t_stack_size, 8) || within(&t_race, 8) || within(&t_warp, 8) ||
        within(&t_global, 8))
        return;
    // What follows may run library code compiled with the hooks (the linker keeps one copy of
    // an inline function): the check is off for this fiber from here on.
    const uintptr_t lo = t_stack_lo, size = t_stack_size;
    t_stack_lo = 0, t_stack_size = ~uintptr_t(0);
    if (in_static_data(a)) {
        t_stack_lo = lo, t_stack_size = size;
        return;
    }
    char where[48];
    std::snprintf(where, sizeof where, "%p", static_cast<const void*>(p));
    fail_in_thread("host memory in a kernel: " + thread_name(fb->current) + " of " +
                   block_name() + verb(what) + std::to_string(n) + " bytes at " + code_at(pc) +
                   " at address " + where +
                   ", which is in no cudaMalloc'd buffer, no shared array and not the thread's "
                   "own stack (a host pointer passed to the kernel, or a local array indexed past "
                   "its end): a GPU faults");
}

// One load or store of N bytes by the kernel code (the hooks in cuda/emu/racecheck.cpp),
// inlined into each hook. SIZED: the compiler's N-byte access of a type aligned to N (so it must
// be N-aligned). Most accesses (the stack, host memory) end at the two range comparisons; one
// inside a cudaMalloc'd buffer's page at one more; shared memory goes on to the race check.
// The common path saves no registers: every call out of it is a tail jump.
template <size_t N, bool WRITE, bool SIZED>
[[gnu::always_inline]] inline void access(const void* addr, const void* pc);
// A sized access that is misaligned: reported (where the check is on), then checked as an
// unaligned one.
template <size_t N, bool WRITE>
[[gnu::noinline, gnu::cold]] inline void misaligned_then_access(const void* addr, const void* pc) {
    misaligned_access(addr, N, did(WRITE), pc);
    access<N, WRITE, false>(addr, pc);
}
template <size_t N, bool WRITE, bool SIZED>
[[gnu::always_inline]] inline void access(const void* addr, const void* pc) {
    const uintptr_t p = uintptr_t(addr);
    if (SIZED && N > 1 && __builtin_expect((p & (N - 1)) != 0, 0))
        return misaligned_then_access<N, WRITE>(addr, pc);
    const size_t g = p - uintptr_t(g_global_base);
    if (g < g_global_size) {
        const GlobalPage pg = g_global_pages[g >> g_page_shift];
        const size_t in = g & ((size_t(1) << g_page_shift) - 1);
        if (__builtin_expect(in >= pg.lo && in + N <= pg.hi, 1))
            return global_init<WRITE>(g, N, did(WRITE), pc);
        return global_slow(static_cast<const unsigned char*>(addr), N, did(WRITE), pc);
    }
    if (p - uintptr_t(g_shared_base) < g_shared_size)
        return shared_access<WRITE, N, SIZED && N <= 4>(static_cast<const unsigned char*>(addr),
                                                        pc);
    if (__builtin_expect(p - t_stack_lo >= t_stack_size, 0))
        return host_access(static_cast<const unsigned char*>(addr), N, did(WRITE), pc);
}
// The same for n bytes known only at run time (__tsan_read_range and the like).
[[gnu::noinline]] inline void access_range(const void* addr, size_t n, bool write,
                                           const void* pc) {
    if (n == 0) return;
    const uintptr_t p = uintptr_t(addr);
    if (p - uintptr_t(g_global_base) < g_global_size)
        global_slow(static_cast<const unsigned char*>(addr), n, did(write), pc);
    else if (p - uintptr_t(g_shared_base) < g_shared_size)
        write ? shared_access_n<true>(static_cast<const unsigned char*>(addr), n, pc)
              : shared_access_n<false>(static_cast<const unsigned char*>(addr), n, pc);
}
// An atomic of n bytes at p in the shared range: its bounds (the OUTSIDE bits, then the exact
// check), and no race check.
[[gnu::noinline]] inline void shared_atomic(const unsigned char* p, size_t n, Did what,
                                            const void* pc) {
    const size_t off = size_t(p - g_shared_base);
    for (size_t w = off >> 2; w <= (off + n - 1) >> 2; w++)
        if (g_shadow_hot[w].w & OUTSIDE) {
            const SharedRegion* r = g_shared_pages[off >> g_page_shift];
            if (r && (p < r->ptr || p + n > r->ptr + r->bytes))
                shared_out_of_bounds(*r, p, n, what, pc);
            return;  // (a guard page: the access faults, and the SIGSEGV handler names it)
        }
    // The init check: a read-modify-write of a word this block never wrote is a report; the
    // atomic then counts as a write.
    const uint64_t tag = t_race;
    if (!tag) return;
    const uint32_t e = uint32_t(tag >> 32), first = uint32_t(tag) >> 10;
    for (size_t w = off >> 2; w <= (off + n - 1) >> 2; w++) {
        if (what != Did::atomic_write && (g_shadow_hot[w].w >> 10) < first)
            shared_uninit(w, first, pc);
        g_shadow_cold[w].atomic_epoch = e;
    }
}
// An atomic of N bytes by the kernel code (the hooks' __tsan_atomic*, inlined into each): the
// alignment (a GPU faults on an atomic at an address not a multiple of its size) and the bounds
// of a plain access, in global and shared memory. No race check: atomics from any warp do not
// race with each other.
template <size_t N>
[[gnu::always_inline]] inline void atomic_access(const volatile void* addr, Did what,
                                                 const void* pc) {
    const uintptr_t p = uintptr_t(addr);
    if (N > 1 && __builtin_expect((p & (N - 1)) != 0, 0))
        misaligned_access(const_cast<const void*>(addr), N, what, pc);
    const size_t g = p - uintptr_t(g_global_base);
    if (g < g_global_size) {
        const GlobalPage pg = g_global_pages[g >> g_page_shift];
        const size_t in = g & ((size_t(1) << g_page_shift) - 1);
        if (__builtin_expect(in >= pg.lo && in + N <= pg.hi, 1)) {
            if (what == Did::atomic_write) return global_init<true, false, false>(g, N, what, pc);
            return global_init<true, true, false>(g, N, what, pc);  // a read-modify-write
        }
        return global_slow(reinterpret_cast<const unsigned char*>(p), N, what, pc);
    }
    if (p - uintptr_t(g_shared_base) < g_shared_size)
        return shared_atomic(reinterpret_cast<const unsigned char*>(p), N, what, pc);
}
#endif  // !EMU_THREADS

// ---- one block on OS threads (EMU_THREADS, for ThreadSanitizer) -----------------------------
#ifdef EMU_THREADS
struct ThreadBlock {
    BlockState bs;
    SharedArena arena;
    std::unique_ptr<std::barrier<>> bar;
    std::mutex error_mutex;
};
inline thread_local ThreadBlock* t_tb = nullptr;

[[noreturn]] inline void fail_in_thread_(const std::string& msg) {
    {
        std::lock_guard<std::mutex> lock(t_tb->error_mutex);
        if (t_tb->bs.error.empty()) t_tb->bs.error = msg;
    }
    std::fprintf(stderr, "emulator: %s\n", msg.c_str());
    std::abort();  // a thread cannot leave a std::barrier half-way; stop loudly
}

inline void syncthreads(const char*, int, const void*) { t_tb->bar->arrive_and_wait(); }

// The whole warp meets (the kernels under ThreadSanitizer use full masks).
inline const ThreadState& warp_rendezvous(const WarpOp& op) {
    ThreadState& ts = cur();
    Warp& w = t_tb->bs.warps[ts.tid / 32];
    const int lane = ts.tid % 32, buf = ts.warp_ops & 1;
    if (!(op.mask >> lane & 1)) fail_in_thread("warp operation: lane not in its own mask");
    w.slots[buf][lane] = op.value;
    w.bar->arrive_and_wait();
    ts.warp_ops++;
    uint64_t votes = 0;
    for (int x = 0; x < 32; x++)
        if ((op.mask >> x & 1) && w.slots[buf][x]) votes |= 1u << x;
    ts.result = op.kind == WarpKind::vote ? votes : op.src >= 0 ? w.slots[buf][op.src] : op.value;
    ts.group = op.mask & w.alive_mask;
    return ts;
}
inline void install_segv_handler() {}
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

// One warp operation of this lane: what it is, where it is called, its mask and value.
#if EMU_RT_DECLARE_ONLY
const ThreadState& warp_op(WarpKind kind, const char* what, unsigned mask, int src,
                                  uint64_t value, const SourceLocation& loc);
#else
EMU_RT_INLINE const ThreadState& warp_op(WarpKind kind, const char* what, unsigned mask, int src,
                                  uint64_t value, const SourceLocation& loc) {
    WarpOp op;
    op.kind = kind, op.what = what, op.mask = mask, op.src = src, op.value = value;
    op.file = loc.file_name(), op.line = loc.line(), op.column = loc.column();
    return warp_rendezvous(op);
}
#endif
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
#define __syncthreads() ::emu::syncthreads(__FILE__, __LINE__, __builtin_return_address(0))
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

namespace emu {
[[gnu::noinline, gnu::cold]] inline void misaligned_vector(const void* dst, const void* src) {
#ifndef EMU_THREADS
    const FiberBlock* fb = t_fb;
    if (!fb || !fb->in_kernel || !(g_checks & check_alignment)) return;
    const bool store = uintptr_t(dst) & 15;
    misaligned_error(store ? dst : src, 16, did(store), __builtin_return_address(0));
#else
    (void)dst, (void)src;
#endif
}
}  // namespace emu
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

// ---- the runtime API subset ---------------------------------------------------------------
enum cudaError_t {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorLaunchOutOfResources = 701,
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
enum cudaDeviceAttr { cudaDevAttrMultiProcessorCount = 16 };
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
        case cudaErrorLaunchOutOfResources: return "too many resources requested for launch";
        default: return "unspecified launch failure";
    }
}
inline cudaError_t cudaGetLastError() {
    cudaError_t e = ::emu::last_error();
    ::emu::last_error() = cudaSuccess;
    return e;
}
inline cudaError_t cudaPeekAtLastError() { return ::emu::last_error(); }
namespace emu {
// The page table's [lo, hi) of each of a buffer's data pages: its live bytes, a.bytes from ptr.
inline void set_live_pages(const GlobalAlloc& a) {
    const size_t page = page_bytes(), data_bytes = a.map_bytes - 2 * page;
    unsigned char* const data = a.map + page;
    const size_t first = size_t(data - g_global_base) >> g_page_shift;
    const size_t start = size_t(a.ptr - data), end = start + a.bytes;
    for (size_t k = 0; k < data_bytes / page; k++) {
        const size_t lo = k * page, hi = lo + page;
        g_global_pages[first + k].lo = uint32_t(std::max(start, lo) - lo);
        g_global_pages[first + k].hi = uint32_t(std::max(std::min(end, hi), lo) - lo);
    }
}
// gpu::allocate (cuda/device_memory.cu) asks cudaMalloc for more than its caller wants (whole
// 512-byte units) and keeps released blocks for reuse: it tells the checks which bytes of a
// block are live, the `bytes` it lends (lend_block), or none while the block waits in its
// cache (cache_block). A block not from cudaMalloc's checked range is left alone.
inline void set_owner(void* block, size_t bytes, GlobalAlloc::Owner owner) {
    std::lock_guard<std::mutex> lock(global_mutex());
    auto it = global_allocs().find(uintptr_t(block));
    if (it == global_allocs().end()) return;
    GlobalAlloc& a = it->second;
    a.bytes = std::min(bytes, a.block_bytes);
    a.owner = owner;
    set_live_pages(a);
}
inline void lend_block(void* block, size_t bytes) {
    set_owner(block, bytes, GlobalAlloc::lent);
    set_written(block, bytes, 0);  // what the block's last owner wrote is not this buffer's
}
inline void cache_block(void* block) { set_owner(block, 0, GlobalAlloc::cached); }

// The check of a cudaMemcpy's or cudaMemset's range: "" when its n bytes from p lie inside one
// buffer's live bytes, or outside the global range (host memory); else how they leave them
// (", from byte 0 of a cudaMalloc'd buffer of 400 bytes, runs 112 bytes past its end").
inline std::string range_error(const void* p, size_t n) {
    const size_t off = uintptr_t(p) - uintptr_t(g_global_base);
    if (n == 0 || off >= g_global_size || !(config().checks & check_copies)) return "";
    const size_t page = size_t(1) << g_page_shift;
    size_t k = off >> g_page_shift, in = off & (page - 1), left = n;
    for (;;) {  // page by page (a guard page ends every buffer)
        const GlobalPage pg = g_global_pages[k];
        if (in < pg.lo || in >= pg.hi) break;
        if (left <= pg.hi - in) return "";
        if (pg.hi != page) break;
        left -= pg.hi - in, k++, in = 0;
    }
    const unsigned char* b = static_cast<const unsigned char*>(p);
    std::lock_guard<std::mutex> lock(global_mutex());
    for (const auto& [key, a] : global_allocs()) {
        if (b < a.map || b >= a.map + a.map_bytes) continue;
        const std::string buf = describe_buffer(a);
        if (b < a.ptr)
            return " starts " + std::to_string(a.ptr - b) + " bytes before the start of " + buf;
        if (b >= a.ptr + a.bytes)
            return " starts at byte " + std::to_string(b - a.ptr) + " of " + buf +
                   (a.owner == GlobalAlloc::cached ? "" : ", past its end");
        return ", from byte " + std::to_string(b - a.ptr) + " of " + buf + ", runs " +
               std::to_string(b + n - (a.ptr + a.bytes)) + " bytes past its end";
    }
    return " is in no live cudaMalloc'd buffer (freed memory, or a guard page between buffers)";
}
// A copy or set past a buffer: the call fails as on a GPU (cudaErrorInvalidValue), and throws
// so that the one line that names it is never lost to an unchecked return value.
inline void check_range(const char* call, size_t n, const char* kind, const char* role,
                        const void* p) {
    const std::string why = range_error(p, n);
    if (why.empty()) return;
    last_error() = cudaErrorInvalidValue;
    throw std::runtime_error(std::string("emulator: ") + call + " of " + std::to_string(n) +
                             " bytes" + kind + ": the " + role + why);
}
}  // namespace emu

// A buffer is whole pages in emu::global_space(), a guard page (PROT_NONE) on each side, its
// start 256-byte aligned as cudaMalloc's and its end at most 255 bytes before the second guard;
// the access hooks check every kernel access against its exact bounds (the pages' [lo, hi)),
// and cudaMemcpy and cudaMemset check their ranges against them.
inline cudaError_t cudaMalloc(void** p, size_t bytes) {
    using namespace ::emu;
    const size_t rounded = (std::max<size_t>(bytes, 1) + 255) / 256 * 256;
    const size_t page = page_bytes(), data_bytes = (rounded + page - 1) / page * page;
    Space& space = global_space();
    unsigned char* map = space.base ? space.take(data_bytes + 2 * page) : nullptr;
    if (!map || mprotect(map + page, data_bytes, PROT_READ | PROT_WRITE) != 0) {
        if (map) space.give(map, data_bytes + 2 * page);
        if (space.base && rounded <= space.size) return cudaErrorMemoryAllocation;
        *p = std::aligned_alloc(256, rounded);  // no address space reserved: unchecked
        if (!*p) return cudaErrorMemoryAllocation;
        std::memset(*p, 0xFF, bytes);
        return cudaSuccess;
    }
    unsigned char* ptr = map + page + data_bytes - rounded;
    GlobalAlloc a{map, data_bytes + 2 * page, ptr, bytes, bytes};
    set_live_pages(a);
    {
        std::lock_guard<std::mutex> lock(global_mutex());
        global_allocs()[uintptr_t(ptr)] = a;
    }
    std::memset(ptr, 0xFF, bytes);  // NaN bytes: reading memory nobody wrote shows up
    set_written(ptr, bytes, 0);     // and the initialisation check reports the read itself
    *p = ptr;
    return cudaSuccess;
}
template <class T>
inline cudaError_t cudaMalloc(T** p, size_t bytes) {
    return cudaMalloc(reinterpret_cast<void**>(p), bytes);
}
inline cudaError_t cudaFree(void* p) {
    using namespace ::emu;
    if (!p) return cudaSuccess;
    if (!global_space().holds(p)) {
        std::free(p);
        return cudaSuccess;
    }
    GlobalAlloc a;
    {
        std::lock_guard<std::mutex> lock(global_mutex());
        auto it = global_allocs().find(uintptr_t(p));
        if (it == global_allocs().end()) return cudaErrorInvalidValue;
        a = it->second;
        global_allocs().erase(it);
    }
    const size_t page = page_bytes(), first = size_t(a.map + page - g_global_base) >> g_page_shift;
    for (size_t k = 0; k < (a.map_bytes - 2 * page) / page; k++) g_global_pages[first + k] = {};
    forget_races(a.map, a.map_bytes);
    global_space().give(a.map, a.map_bytes);
    return cudaSuccess;
}
inline cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
    const char* how = kind == cudaMemcpyHostToDevice     ? " (host to device)"
                      : kind == cudaMemcpyDeviceToHost   ? " (device to host)"
                      : kind == cudaMemcpyDeviceToDevice ? " (device to device)"
                      : kind == cudaMemcpyHostToHost     ? " (host to host)"
                                                         : "";
    ::emu::check_range("cudaMemcpy", bytes, how, "source", src);
    ::emu::check_range("cudaMemcpy", bytes, how, "destination", dst);
    if (bytes) std::memmove(dst, src, bytes);
    ::emu::set_written(dst, bytes, 1);
    return cudaSuccess;
}
inline cudaError_t cudaMemset(void* p, int value, size_t bytes) {
    ::emu::check_range("cudaMemset", bytes, "", "destination", p);
    std::memset(p, value, bytes);
    ::emu::set_written(p, bytes, 1);
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
    p->multiProcessorCount = 132;  // an H200's: the host code's grid decisions run as there
    p->sharedMemPerBlockOptin = 227 * 1024;
    return cudaSuccess;
}
inline cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int) {
    if (attr != cudaDevAttrMultiProcessorCount) return cudaErrorInvalidValue;
    *value = 132;
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
inline std::mutex& attribute_mutex() {
    static std::mutex m;
    return m;
}
inline std::vector<std::pair<const void*, size_t>>& dynamic_shared_optin() {
    static std::vector<std::pair<const void*, size_t>> v;  // kernel -> its opted-in maximum
    return v;
}
inline size_t dynamic_shared_limit(const void* kernel, bool* opted_in = nullptr) {
    std::lock_guard<std::mutex> lock(attribute_mutex());
    if (opted_in) *opted_in = false;
    for (const auto& [k, bytes] : dynamic_shared_optin())
        if (k == kernel) {
            if (opted_in) *opted_in = true;
            return bytes;
        }
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

// The object file that holds code address a (the program or a shared library) and a's offset
// in it; an empty name where none does.
inline std::pair<std::string, uintptr_t> object_of(uintptr_t a) {
    struct Found {
        uintptr_t pc, rel = 0;
        std::string file;
    } found{a, 0, ""};
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* data) {
            Found& f = *static_cast<Found*>(data);
            for (int k = 0; k < info->dlpi_phnum; k++) {
                const ElfW(Phdr)& ph = info->dlpi_phdr[k];
                const uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
                if (ph.p_type != PT_LOAD || f.pc < lo || f.pc >= lo + ph.p_memsz) continue;
                f.rel = f.pc - info->dlpi_addr;
                f.file = info->dlpi_name ? info->dlpi_name : "";
                if (f.file.empty()) {
                    char self[4096];
                    const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
                    f.file = len > 0 ? std::string(self, size_t(len)) : "";
                }
                return 1;
            }
            return 0;
        },
        &found);
    return {found.file, found.rel};
}

// One frame of a code address's chain of inlined calls: the function (addr2line -f -C) and the
// place, file:line (cut at its first space: a discriminator).
struct CodeFrame {
    std::string func, place;
};
inline std::mutex& frames_mutex() {
    static std::mutex m;
    return m;
}
// What addr2line said of each address asked so far: its frames, innermost first (none where the
// address or its line tables cannot be read). Kept for the process: reports and the barrier
// check ask for the same addresses again.
inline std::unordered_map<uintptr_t, std::vector<CodeFrame>>& frames_known() {
    static std::unordered_map<uintptr_t, std::vector<CodeFrame>> m;
    return m;
}
// Asks addr2line for the frames of every address of addrs not known yet: one process per object
// file for all of them (each addr2line reads the file's symbols and line tables, most of its
// time). With -a it names each address before that address's (function, place) line pairs.
inline void look_up_frames(const std::vector<uintptr_t>& addrs) {
    std::lock_guard<std::mutex> lock(frames_mutex());
    auto& known = frames_known();
    std::vector<std::pair<std::string, std::vector<std::pair<uintptr_t, uintptr_t>>>> by_file;
    for (uintptr_t a : addrs) {
        if (!known.emplace(a, std::vector<CodeFrame>()).second) continue;  // asked before
        const auto [file, rel] = object_of(a);
        if (file.empty() || file.find('\'') != std::string::npos) continue;
        size_t f = 0;
        while (f < by_file.size() && by_file[f].first != file) f++;
        if (f == by_file.size()) by_file.push_back({file, {}});
        by_file[f].second.push_back({a, rel});
    }
    for (const auto& [file, list] : by_file) {
        std::string cmd = "addr2line -a -f -C -i -e '" + file + "'";
        char hex[24];
        for (const auto& a_rel : list) {
            std::snprintf(hex, sizeof hex, " 0x%lx", (unsigned long)a_rel.second);
            cmd += hex;
        }
        cmd += " 2>/dev/null";
        FILE* pipe = popen(cmd.c_str(), "r");
        if (!pipe) continue;
        size_t k = list.size();  // the address being read: none before the first header
        bool stop = false, name_next = true;
        std::string func;
        char line[1024];
        while (std::fgets(line, sizeof line, pipe)) {
            std::string l(line);
            if (!l.empty() && l.back() == '\n') l.pop_back();
            if (l.size() == 18 && l.compare(0, 2, "0x") == 0 &&
                l.find_first_not_of("0123456789abcdef", 2) == std::string::npos) {
                k = k == list.size() ? 0 : k + 1;  // the next address's header
                stop = false, name_next = true;
                continue;
            }
            if (k >= list.size() || stop) continue;
            if (name_next) {
                func = l, name_next = false;
                continue;
            }
            name_next = true;
            l.resize(std::min(l.size(), l.find(' ')));
            // The frames end where addr2line knows no more: a function it names without a
            // place (no line tables there) ends them with an empty place.
            stop = l.empty() || l.find("??") != std::string::npos;
            if (func.find("??") == 0) stop = true;
            else known[list[k].first].push_back({func, stop ? std::string() : l});
        }
        pclose(pipe);
    }
}
// The frames of the code at a return address pc (the call instruction before it, pc - 1) or,
// func, of the function that starts at pc.
inline std::vector<CodeFrame> code_frames(uintptr_t pc, bool func) {
    const uintptr_t a = func ? pc : pc - 1;
    look_up_frames({a});
    std::lock_guard<std::mutex> lock(frames_mutex());
    return frames_known()[a];
}

// "{code 0x...}" in a message -> "file:line" from the program's line tables (addr2line; the
// objects with kernels are compiled with -g1), or "code address 0x..." where that fails.
// "{func 0x...}": the function that starts there, by name (addr2line -f), or its address.
inline std::string resolve_code_addresses(std::string msg) {
    std::vector<uintptr_t> addrs;  // every address first, for one addr2line
    for (size_t at = 0; (at = std::min(msg.find("{code ", at), msg.find("{func ", at))) !=
                        std::string::npos;
         at++) {
        const uintptr_t pc = uintptr_t(std::strtoull(msg.c_str() + at + 6, nullptr, 16));
        addrs.push_back(msg.compare(at, 6, "{func ") == 0 ? pc : pc - 1);
    }
    look_up_frames(addrs);
    for (size_t at; (at = std::min(msg.find("{code "), msg.find("{func "))) != std::string::npos;) {
        const size_t end = msg.find('}', at);
        if (end == std::string::npos) break;
        const bool func = msg.compare(at, 6, "{func ") == 0;
        const std::string hexpc = msg.substr(at + 6, end - at - 6);
        const uintptr_t pc = uintptr_t(std::strtoull(hexpc.c_str(), nullptr, 16));
        std::string where = (func ? "at " : "code address ") + hexpc;
        // A code address: the innermost frame outside the emulator and the standard library
        // (float4's own check and atomicAdd are inlined into the kernel). A function: its name.
        for (const CodeFrame& frame : code_frames(pc, func)) {
            if (func) {  // innermost first: the outermost name
                where = frame.func;
                continue;
            }
            std::string l = frame.place;
            if (l.empty()) break;
            const size_t root = l.find("/cuda/"), tests = l.find("/tests/");
            if (root != std::string::npos) l = l.substr(root + 1);
            else if (tests != std::string::npos) l = l.substr(tests + 1);
            where = l;
            // (atomicAdd's frames: the emulator's, then libstdc++'s std::atomic_ref)
            if (l.find("cuda/emu/emulator.h") == std::string::npos &&
                l.find("/c++/") == std::string::npos)
                break;
        }
        msg.replace(at, end + 1 - at, where);
    }
    return msg;
}

// Whether two code addresses are one source call: the same chain of inlined frames (file:line
// of each, innermost first). A compiler may copy one call into two paths (jump threading); two
// calls in the source differ in some frame. Unknown (false) where lines do not resolve.
inline bool same_source_call(const void* a, const void* b) {
    look_up_frames({uintptr_t(a) - 1, uintptr_t(b) - 1});  // both in one addr2line
    auto chain = [](const void* pc) {
        std::vector<std::string> places;
        for (const CodeFrame& frame : code_frames(uintptr_t(pc), false))
            if (!frame.place.empty()) places.push_back(frame.place);
        return places;
    };
    // A frame at line 0 (clang's "no line" after a call) or "?" proves nothing.
    auto known = [](const std::vector<std::string>& c) {
        if (c.empty()) return false;
        for (const std::string& f : c)
            if (f.size() < 2 || f.compare(f.size() - 2, 2, ":0") == 0 ||
                f.find('?') != std::string::npos)
                return false;
        return true;
    };
    const std::vector<std::string> ca = chain(a);
    return known(ca) && ca == chain(b);
}

}  // namespace emu
#include "cuda/emu/registers.h"
namespace emu {

// Runs body() once per CUDA thread of every block; throws std::runtime_error on an error,
// or when the launch breaks a rule the device enforces (kernel: for its shared-memory opt-in).
// The kernels launched so far (each template instance once): emu-racecheck's count.
inline std::mutex& launched_mutex() {
    static std::mutex m;
    return m;
}
inline std::vector<const void*>& launched_kernels() {
    static std::vector<const void*> v;
    return v;
}

#if EMU_RT_DECLARE_ONLY
void run_grid(dim3 grid, dim3 block, size_t shmem, const std::function<void()>& body,
                     const void* kernel = nullptr);
#else
EMU_RT_INLINE void run_grid(dim3 grid, dim3 block, size_t shmem, const std::function<void()>& body,
                     const void* kernel = nullptr) {
    if (kernel) {
        std::lock_guard<std::mutex> lock(launched_mutex());
        std::vector<const void*>& v = launched_kernels();
        if (std::find(v.begin(), v.end(), kernel) == v.end()) v.push_back(kernel);
    }
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
    bool opted_in = false;
    const size_t dynamic_limit = dynamic_shared_limit(kernel, &opted_in);
    if (shmem > dynamic_limit)
        refuse(std::to_string(shmem) + " bytes of dynamic shared memory, over the kernel's " +
               std::to_string(dynamic_limit) +
               " (above 48 KB a kernel opts in with cudaFuncSetAttribute)");
    if (config().checks & check_registers)
        if (const std::string why = register_budget_error(kernel, nthreads); !why.empty()) {
            last_error() = cudaErrorLaunchOutOfResources;
            throw std::runtime_error(why);
        }
    // Static + dynamic: 48 KB in all without the opt-in, 227 KB with it (checked as the block
    // declares its arrays).
    const size_t total_limit = opted_in ? MAX_DYNAMIC_SHARED : DEFAULT_DYNAMIC_SHARED;
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
    install_segv_handler();
    g_checks = config().checks;
    int workers = config().workers > 0
                      ? config().workers
                      : std::min(4, int(std::max(1u, std::thread::hardware_concurrency())));
    workers = int(std::min<long>(workers, nblocks));
    std::atomic<long> next{0};
    std::mutex error_mutex;
    // Fiber blocks (their stacks and shared memory) are kept between launches, one per worker.
    static std::vector<std::unique_ptr<FiberBlock>> pool;
    static std::mutex pool_mutex;
    {
        std::lock_guard<std::mutex> lock(pool_mutex);
        while (int(pool.size()) < workers) pool.push_back(std::make_unique<FiberBlock>());
    }
    // This launch's number for the global race check (global_tag), 0 with the check off; when
    // the numbers run out they start over, and the records of the launches before are forgotten.
    uint64_t launch_no = 0;
    if ((g_checks & check_global_races) && g_global_race) {
        const uint64_t n = g_launches.fetch_add(1);
        launch_no = n % (global_tag::launch_limit - 1) + 1;
        if (launch_no == 1 && n > 0) forget_races(g_global_base, g_global_size);
    }
    auto worker = [&](int w) {
        FiberBlock& fb = *pool[w];
        fb.body = &body;
        if (int(fb.fibers.size()) < nthreads) fb.fibers.resize(nthreads);
        for (int t = 0; t < nthreads; t++) {
            Fiber& f = fb.fibers[t];
            if (f.stack_size != config().stack_bytes) {
                f.new_stack(config().stack_bytes);
            }
            f.ts.tid = t;
            f.ts.thread_idx = thread_index(t);
        }
        fb.bs.warps.assign(nwarps, Warp{});
        fb.bs.error.clear();
        fb.bs.grid_dim = grid;
        fb.bs.block_dim = block;
        fb.bs.arena = &fb.arena;
        fb.fault = 0;
        fb.fault_region = nullptr;
        fb.kernel = kernel;
        fb.barrier_doubts.clear();
        // The reverse schedule also runs the blocks last to first: a kernel whose blocks race
        // on global memory (one reads what another writes) gives a different result.
        const bool reverse_blocks = config().schedule == Schedule::reverse;
        for (long b; (b = next.fetch_add(1)) < nblocks;) {
            const long block_no = reverse_blocks ? nblocks - 1 - b : b;
            fb.bs.block_idx = block_index(block_no);
            fb.global_block = launch_no ? launch_no << global_tag::launch_shift |
                                              (uint64_t(block_no) & global_tag::block_mask)
                                                  << global_tag::block_shift
                                        : 0;
            fb.arena.begin_block(shmem, total_limit);
            run_block_fibers(fb, nthreads);
            if (fb.bs.error.empty()) fb.bs.error = fb.arena.end_block();
            if (!fb.bs.error.empty()) {
                std::lock_guard<std::mutex> lock(error_mutex);
                if (error.empty()) error = fb.bs.error;
                next = nblocks;
                break;
            }
        }
        fb.current = -1;
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
    for (int w = 0; w < workers; w++)
        for (const FiberBlock::BarrierDoubt& d : pool[w]->barrier_doubts)
            if (error.empty() && !same_source_call(d.a, d.b)) error = d.report;
#else
    ThreadBlock tb;
    tb.bs.grid_dim = grid;
    tb.bs.block_dim = block;
    tb.bs.arena = &tb.arena;
    tb.bs.warps.resize(nwarps);
    for (long b = 0; b < nblocks; b++) {
        tb.bs.block_idx = block_index(b);
        tb.arena.begin_block(shmem, total_limit);
        tb.bar = std::make_unique<std::barrier<>>(nthreads);
        for (int w = 0; w < nwarps; w++) {
            const int lanes = std::min(32, nthreads - 32 * w);
            tb.bs.warps[w].bar = std::make_unique<std::barrier<>>(lanes);
            tb.bs.warps[w].alive_mask = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1;
        }
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
        error = tb.arena.end_block();
        if (!error.empty()) break;
    }
#endif
    if (!error.empty()) {
        last_error() = cudaErrorLaunchFailure;
        throw std::runtime_error("emulator: " + resolve_code_addresses(error));
    }
}
#endif

struct ScheduleGuard {  // puts the configuration back, whatever run() does
    Config saved = config();
    ~ScheduleGuard() { config() = saved; }
};
// The race check of the fiber mode, where the caller has just run the kernel in forward order
// (the default schedule: the blocks shared among the workers) and holds what `read()` returned
// then, `forward` (e.g. a std::vector<float> copied back): runs `run()` again with the block's
// threads in reverse order between barriers and the blocks last to first (one worker, so
// blocks and atomics keep one order), and compares. A correct kernel gives the same bits both
// ways; a kernel that reads shared memory another thread writes in the same barrier interval (a
// missing __syncthreads) sees different values. Blocks that meet in global memory are the
// global race check's too, in any order.
template <class Run, class Read, class Result>
bool same_in_reverse(Run run, Read read, const Result& forward) {
    ScheduleGuard guard;
    config().workers = 1;
    config().schedule = Schedule::reverse;
    run();
    const auto reverse = read();
    return forward.size() == reverse.size() &&
           std::memcmp(forward.data(), reverse.data(), forward.size() * sizeof(forward[0])) == 0;
}
// The same from scratch: run() in forward order on one worker, then as above.
template <class Run, class Read>
bool same_under_both_schedules(Run run, Read read) {
    ScheduleGuard guard;
    config().workers = 1;
    config().schedule = Schedule::forward;
    run();
    return same_in_reverse(run, read, read());
}

}  // namespace emu
