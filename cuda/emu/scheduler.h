// How a block runs (cuda/emu/scheduler.cpp): its threads as fibers, or with EMU_THREADS as OS
// threads (cuda/README.md says when each); a warp's lanes meet at its operations (the
// rendezvous); blocks run on a few workers, each with its fibers and shared memory.
#pragma once
#include "cuda/emu/memory.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <sys/mman.h>
#ifdef EMU_THREADS
#include <barrier>
#else
#include <ucontext.h>
#endif

// Fiber switches: a 6-register swap on x86-64 (swapcontext also saves the signal mask, a system
// call per switch that would make the emulator several times slower); ucontext elsewhere and under
// the sanitizers, which know how to follow swapcontext.
#if !defined(EMU_THREADS) && defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(__SANITIZE_THREAD__)
#define EMU_FAST_SWITCH 1
#endif

namespace emu {

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

// Ends the running thread with an error: the block stops and the launch throws it (in
// EMU_THREADS mode: printed, and the process aborts). The message is built after quiet_hooks().
[[noreturn]] void fail_in_thread_(const std::string& msg);
#define fail_in_thread(...) (::emu::quiet_hooks(), ::emu::fail_in_thread_(__VA_ARGS__))

// ---- one block on fibers -------------------------------------------------------------------
#ifndef EMU_THREADS
struct Fiber {
#ifdef EMU_FAST_SWITCH
    void* sp = nullptr;
#else
    ucontext_t ctx;
#endif
    // The fiber's stack: stack_size bytes, uninitialised (a launch would otherwise write every
    // thread's whole stack), in its own mapping with STACK_GUARD bytes of PROT_NONE above its
    // top: a local array read or written past its end faults there, and the SIGSEGV handler
    // names it.
    struct Unmap {
        size_t bytes;
        void operator()(char* p) const { munmap(p, bytes); }
    };
    static constexpr size_t STACK_GUARD = 64 * 1024;
    std::unique_ptr<char[], Unmap> stack{nullptr, Unmap{0}};
    size_t stack_size = 0;
    void new_stack(size_t bytes);
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
    // x86-64: a misaligned 16-byte vector access), 4 past the top of the thread's stack.
    // fault_write: 1 a write, 0 a read, -1 unknown.
    int fault = 0;
    const SharedRegion* fault_region = nullptr;
    const unsigned char* fault_addr = nullptr;
    int fault_thread = -1;
    int fault_write = -1;
    const void* kernel = nullptr;  // the launch's kernel, for a fault's message
};
inline thread_local FiberBlock* t_fb = nullptr;
#else
struct ThreadBlock {
    BlockState bs;
    SharedArena arena;
    std::unique_ptr<std::barrier<>> bar;
    std::mutex error_mutex;
};
inline thread_local ThreadBlock* t_tb = nullptr;
#endif

}  // namespace emu
