// How a block's threads run (cuda/emu/scheduler.h): the fibers and their switches, the
// barrier, the warps' rendezvous, the launch (run_grid); and the same over OS threads
// (EMU_THREADS). Compiled once, without the access hooks.
#include "cuda/emu/scheduler.h"

#include "cuda/emu/checks.h"

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <thread>

#include <unistd.h>

#ifdef EMU_FAST_SWITCH
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

namespace emu {

std::atomic<uint64_t> g_launches{0};  // launches begun (global_tag's launch numbers)

// ---- one block on fibers -------------------------------------------------------------------
#ifndef EMU_THREADS
void yield_to_scheduler() {
    FiberBlock& fb = *t_fb;
#ifdef EMU_FAST_SWITCH
    emu_switch_stack(&fb.fibers[fb.current].sp, fb.scheduler_sp);
#else
    swapcontext(&fb.fibers[fb.current].ctx, &fb.scheduler);
#endif
    t_current = &fb.fibers[fb.current].ts;
}

void fiber_entry() {
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
void start_fiber(FiberBlock& fb, Fiber& f) {
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

[[noreturn]] void fail_in_thread_(const std::string& msg) {
    FiberBlock& fb = *t_fb;
    if (fb.bs.error.empty()) fb.bs.error = msg;
    // Park this fiber forever: the scheduler sees the error and abandons the block.
    fb.fibers[fb.current].state = Fiber::at_barrier;
    for (;;) yield_to_scheduler();
}

void Fiber::new_stack(size_t bytes) {
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

// A barrier is its source line and its call path: `caller`, the return address of the function
// whose code calls __syncthreads (a helper not inlined: where each arm called it), and, in the
// builds with the access hooks (own_site), the call's return address (a helper inlined into
// each arm: one call instruction per copy); elsewhere `caller` stands for both, as the kernels
// there have no line tables to tell two calls from a compiler's two copies of one. A helper
// called from both arms of a branch is two barriers on a GPU (two bar.sync), one line here. Two
// addresses are two barriers unless their chains of inlined frames match (same_source_call,
// when the launch ends): a compiler may copy one call into both paths of a branch before it.
void syncthreads(const char* file, int line, const void* caller, bool own_site) {
    FiberBlock& fb = *t_fb;
    const void* site = own_site ? __builtin_return_address(0) : caller;
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

bool same_site(const WarpOp& a, const WarpOp& b) {
    return a.line == b.line && a.column == b.column && std::strcmp(a.file, b.file) == 0;
}
// Lanes meet when they pass the same operation with the same mask, wherever they call it: on
// sm_70 and later a lane waits until every lane its mask names reaches a corresponding
// operation (the CUDA Programming Guide's __syncwarp and __shfl_sync; the PTX ISA's
// bar.warp.sync and shfl.sync require one instruction only for sm_6x and below).
bool same_operation(const WarpOp& a, const WarpOp& b) {
    return a.kind == b.kind && a.mask == b.mask && std::strcmp(a.what, b.what) == 0;
}
std::string hex(unsigned v) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08x", v);
    return buf;
}
std::string describe(const WarpOp& op) {
    return std::string(op.what) + " (" + op.file + ":" + std::to_string(op.line) + ", mask " +
           hex(op.mask) + ")";
}

// A lane arrives at a warp operation; the scheduler releases it with its group's result.
const ThreadState& warp_rendezvous(const WarpOp& op) {
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
bool release_warps(FiberBlock& fb, bool& stuck_mismatch) {
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
std::string warp_deadlock_message(FiberBlock& fb) {
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
void new_epoch(FiberBlock& fb) {
    for (Warp& w : fb.bs.warps)
        w.new_epoch();
    if (++fb.epoch >= EPOCH_LIMIT) {
        fb.arena.clear_shadows();
        fb.epoch = 1;
        fb.first_epoch = 0;  // what this block wrote is forgotten with the shadows
    }
}

void run_block_fibers(FiberBlock& fb, int nthreads) {
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
struct sigaction& previous_segv_action() {
    static struct sigaction a;
    return a;
}
void segv_handler(int sig, siginfo_t* info, void* context) {
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
void install_segv_handler() {
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


// ---- one block on OS threads (EMU_THREADS, for ThreadSanitizer) -----------------------------
#else
[[noreturn]] void fail_in_thread_(const std::string& msg) {
    {
        std::lock_guard<std::mutex> lock(t_tb->error_mutex);
        if (t_tb->bs.error.empty()) t_tb->bs.error = msg;
    }
    std::fprintf(stderr, "emulator: %s\n", msg.c_str());
    std::abort();  // a thread cannot leave a std::barrier half-way; stop loudly
}

void syncthreads(const char*, int, const void*, bool) { t_tb->bar->arrive_and_wait(); }

// The whole warp meets (the kernels under ThreadSanitizer use full masks).
const ThreadState& warp_rendezvous(const WarpOp& op) {
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
void install_segv_handler() {}
#endif

// ---- the launch -------------------------------------------------------------------------------
const ThreadState& warp_op(WarpKind kind, const char* what, unsigned mask, int src,
                           uint64_t value, const SourceLocation& loc) {
    WarpOp op;
    op.kind = kind, op.what = what, op.mask = mask, op.src = src, op.value = value;
    op.file = loc.file_name(), op.line = loc.line(), op.column = loc.column();
    return warp_rendezvous(op);
}

void run_grid(dim3 grid, dim3 block, size_t shmem, const std::function<void()>& body,
              const void* kernel) {
    const size_t total_limit = check_launch(grid, block, shmem, kernel);
    const int nthreads = int(block.x * block.y * block.z);
    const long nblocks = long(grid.x) * grid.y * grid.z;
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

}  // namespace emu
