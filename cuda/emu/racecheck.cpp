// The access hooks (cuda/emu/checks.h): the objects that hold kernels are compiled with GCC's
// ThreadSanitizer instrumentation (-fsanitize=thread, cuda/cuda.mk's EMU_INSTRUMENT) and linked
// with this file instead of ThreadSanitizer's runtime. Every load and store of theirs calls one
// of the hooks at its end, with its address and size; the caller's return address names the
// source line in a report. Each hook inlines emu::access: the bounds of shared arrays and
// buffers, the race checks, the initialisation check, the alignment. Atomics are checked for
// bounds and alignment as plain accesses are, and are exempt from the race check, as on a GPU.
// This file itself is compiled without the instrumentation.
#include "cuda/emu/checks.h"
#include "cuda/emu/memory.h"
#include "cuda/emu/scheduler.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <link.h>

namespace emu {

[[noreturn, gnu::noinline, gnu::cold]] void race_error(const SharedRegion& r,
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
[[noreturn, gnu::noinline, gnu::cold]] void race_at(size_t w, bool write, const void* pc,
                                                    const char* other_did, int other,
                                                    int32_t other_pc) {
    const unsigned char* p = g_shared_base + 4 * w;
    const SharedRegion* r = g_shared_pages[size_t(p - g_shared_base) >> g_page_shift];
    race_error(*r, p, write, pc, other_did, other, code_from_offset(other_pc));
}
// Another thread `other` accessed the word in this epoch when its warp had released `at`
// operations: a race unless it is a lane of this warp and ordered before tid's access.
[[gnu::noinline]] void other_in_epoch(size_t w, bool write, const void* pc, const char* other_did,
                                      uint32_t other, uint32_t tid, uint32_t at, int32_t other_pc) {
    if ((other >> 5) == (tid >> 5) && t_warp->ordered(int(other & 31), int(tid & 31), at)) return;
    race_at(w, write, pc, other_did, int(other), other_pc);
}
// A read of shared word w, which this block never wrote (its last write is older than the
// block's first epoch): the report, unless an atomic wrote it in this block or the check is off.
[[gnu::noinline]] void shared_uninit(size_t w, uint32_t first, const void* pc) {
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

const char* verb(Did d) {
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

[[gnu::noinline, gnu::cold]] void shared_out_of_bounds(const SharedRegion& r,
                                                       const unsigned char* p, size_t n, Did what,
                                                       const void* pc) {
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
[[gnu::noinline]] void shared_access_slow(const unsigned char* p, size_t n, const void* pc) {
    const SharedRegion* r = g_shared_pages[size_t(p - g_shared_base) >> g_page_shift];
    if (!r) return;  // a guard page: the access faults, and the SIGSEGV handler names it
    if (p < r->ptr || p + n > r->ptr + r->bytes)
        return shared_out_of_bounds(*r, p, n, did(WRITE), pc);
    race_check<WRITE, false, true>(size_t(p - g_shared_base), n, pc);
}
// The race check of a read of one shared word, out of line (shared_access below).
[[gnu::noinline]] void shared_read_word(size_t off, const void* pc) {
    race_check<false, true>(off, 4, pc);
}
// A shared access of N bytes: its words' OUTSIDE bits (the bounds), then the race check. Not
// inlined into the hooks: so the hooks' common path (the stack, host memory, a cudaMalloc'd
// buffer) needs no registers saved, and reaches this by a tail jump. A read of one word that its
// shadow already records (no other thread's write in this epoch, written in this block, and
// this warp's read, or reads by two warps, already kept) needs no check and stores nothing:
// decided here, with few registers; the rest is shared_read_word.
template <bool WRITE, size_t N, bool ONE_WORD>
[[gnu::noinline]] void shared_access(const unsigned char* p, const void* pc) {
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
[[gnu::noinline]] void shared_access_n(const unsigned char* p, size_t n, const void* pc) {
    const size_t off = size_t(p - g_shared_base);
    for (size_t w = off >> 2; w <= (off + n - 1) >> 2; w++)
        if (g_shadow_hot[w].w & OUTSIDE) return shared_access_slow<WRITE>(p, n, pc);
    race_check<WRITE>(off, n, pc);
}


void global_init_any(size_t off, size_t n, Did what, const void* pc);
// An access in the global range that is not inside one page's live bytes: it may go on into
// the next page of the same buffer; else it is out of bounds.
[[gnu::noinline]] void global_slow(const unsigned char* p, size_t n, Did what, const void* pc) {
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
[[gnu::noinline, gnu::cold]] void global_uninit(const unsigned char* p, size_t n, Did what,
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
[[noreturn, gnu::noinline, gnu::cold]] void global_race_error(size_t w, bool write, const void* pc,
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
[[gnu::noinline]] void global_race_n(size_t g, size_t n, uint64_t me, const void* pc) {
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
[[gnu::noinline]] void global_race_call(size_t g, size_t n, uint64_t me, const void* pc) {
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

void global_init_any(size_t off, size_t n, Did what, const void* pc) {
    if (what == Did::read) return global_init<false>(off, n, what, pc);
    if (what == Did::write) return global_init<true>(off, n, what, pc);
    if (what == Did::atomic_write) return global_init<true, false, false>(off, n, what, pc);
    global_init<true, true, false>(off, n, what, pc);
}

[[gnu::noinline, gnu::cold]] void misaligned_access(const void* addr, size_t n, Did what,
                                                    const void* pc) {
    const FiberBlock* fb = t_fb;
    if (fb && fb->in_kernel && (g_checks & check_alignment)) misaligned_error(addr, n, what, pc);
}

// A member of a struct reached through a pointer not aligned to the struct's type (`p->x` with
// p a misaligned float4*): GCC's alignment check (-fsanitize=alignment, the hook
// __ubsan_handle_type_mismatch_v1 in cuda/emu/racecheck.cpp) tests the pointer against the
// type's alignment, whatever width of load the host compiler then emits: g++ reads p->x as 4
// bytes, nvcc may load the float4 whole, one 16-byte load that faults.
[[gnu::noinline, gnu::cold]] void misaligned_member(const void* addr, size_t alignment,
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
bool in_static_data(uintptr_t p) {
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
[[gnu::noinline]] void host_access(const unsigned char* p, size_t n, Did what, const void* pc) {
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
[[gnu::noinline, gnu::cold]] void misaligned_then_access(const void* addr, const void* pc) {
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
[[gnu::noinline]] void access_range(const void* addr, size_t n, bool write, const void* pc) {
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
[[gnu::noinline]] void shared_atomic(const unsigned char* p, size_t n, Did what, const void* pc) {
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

}  // namespace emu

#define EMU_PC __builtin_return_address(0)
// Each hook is emu::access inlined: for most addresses two comparisons and a return.
#define EMU_HOOK(N, WRITE, SIZED) \
    { ::emu::access<N, WRITE, SIZED>(p, EMU_PC); }

extern "C" {
void __tsan_init() {}
void __tsan_func_entry(void*) {}
void __tsan_func_exit() {}
void __tsan_vptr_update(void**, void*) {}
void __tsan_vptr_read(void**) {}

// clang-format off
#define EMU_SIZED(N)                                                                    \
    void __tsan_read##N(void* p) EMU_HOOK(N, false, true)                               \
    void __tsan_write##N(void* p) EMU_HOOK(N, true, true)                               \
    void __tsan_unaligned_read##N(void* p) EMU_HOOK(N, false, false)                    \
    void __tsan_unaligned_write##N(void* p) EMU_HOOK(N, true, false)                    \
    void __tsan_volatile_read##N(void* p) EMU_HOOK(N, false, true)                      \
    void __tsan_volatile_write##N(void* p) EMU_HOOK(N, true, true)                      \
    void __tsan_unaligned_volatile_read##N(void* p) EMU_HOOK(N, false, false)           \
    void __tsan_unaligned_volatile_write##N(void* p) EMU_HOOK(N, true, false)
// clang-format on
EMU_SIZED(1)
EMU_SIZED(2)
EMU_SIZED(4)
EMU_SIZED(8)
EMU_SIZED(16)
#undef EMU_SIZED

// GCC's alignment check (-fsanitize=alignment in EMU_INSTRUMENT) calls this where a typed
// access's pointer is not a multiple of its type's alignment, before the access itself: the
// layout is GCC's and libubsan's (a source location, the type's descriptor, log2 of the
// alignment, the kind of access). A load or store is named as the hooks name it; a member
// access as one through a misaligned struct (emu::misaligned_member). A reference bound to a
// misaligned address, or a member function called on one, touches no memory by itself: what
// is read or written through it is checked (float4's copy and assignment check their own
// addresses and name the kernel's line).
struct UbsanTypeMismatch {
    const char* file;
    unsigned line, column;
    const struct {
        unsigned short kind, info;
        char name[1];
    } * type;
    unsigned char log_alignment;
    unsigned char check_kind;  // 0 load, 1 store, 2 reference binding, 3 member access, ...
};
static void type_mismatch(void* data, void* pointer, const void* pc) {
    const auto* d = static_cast<const UbsanTypeMismatch*>(data);
    const size_t alignment = size_t(1) << d->log_alignment;
    if (!pointer || (uintptr_t(pointer) & (alignment - 1)) == 0) return;
    switch (d->check_kind) {
        case 0:
        case 1:
            return ::emu::misaligned_access(pointer, alignment, ::emu::did(d->check_kind == 1), pc);
        case 3: {
            std::string type = d->type->name;  // GCC's spelling: 'const struct float4'
            for (const char* drop : {"'", "const ", "volatile ", "struct ", "class "})
                for (size_t at; (at = type.find(drop)) != std::string::npos;)
                    type.erase(at, std::string(drop).size());
            return ::emu::misaligned_member(pointer, alignment, type.c_str(), pc);
        }
        default:
            return;
    }
}
void __ubsan_handle_type_mismatch_v1(void* data, void* pointer) {
    type_mismatch(data, pointer, EMU_PC);
}
void __ubsan_handle_type_mismatch_v1_abort(void* data, void* pointer) {
    type_mismatch(data, pointer, EMU_PC);
}

void __tsan_read_range(void* p, unsigned long n) { ::emu::access_range(p, n, false, EMU_PC); }
void __tsan_write_range(void* p, unsigned long n) { ::emu::access_range(p, n, true, EMU_PC); }

// Atomics: the checks of a plain access but the race check (emu::atomic_access: the bounds
// and the alignment), then the operation itself, sequentially consistent whatever order was
// asked for (never weaker than asked).
#define EMU_CHECK_ATOMIC(BITS, WHAT) \
    ::emu::atomic_access<BITS / 8>(a, ::emu::Did::WHAT, EMU_PC)
#define EMU_ATOMIC(BITS, T)                                                                     \
    T __tsan_atomic##BITS##_load(const volatile T* a, int) {                                    \
        EMU_CHECK_ATOMIC(BITS, atomic_read);                                                    \
        return __atomic_load_n(a, __ATOMIC_SEQ_CST);                                            \
    }                                                                                           \
    void __tsan_atomic##BITS##_store(volatile T* a, T v, int) {                                 \
        EMU_CHECK_ATOMIC(BITS, atomic_write);                                                   \
        __atomic_store_n(a, v, __ATOMIC_SEQ_CST);                                               \
    }                                                                                           \
    T __tsan_atomic##BITS##_exchange(volatile T* a, T v, int) {                                 \
        EMU_CHECK_ATOMIC(BITS, atomic_update);                                                  \
        return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST);                                     \
    }                                                                                           \
    T __tsan_atomic##BITS##_fetch_add(volatile T* a, T v, int) {                                \
        EMU_CHECK_ATOMIC(BITS, atomic_update);                                                  \
        return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST);                                      \
    }                                                                                           \
    T __tsan_atomic##BITS##_fetch_sub(volatile T* a, T v, int) {                                \
        EMU_CHECK_ATOMIC(BITS, atomic_update);                                                  \
        return __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST);                                      \
    }                                                                                           \
    T __tsan_atomic##BITS##_fetch_and(volatile T* a, T v, int) {                                \
        EMU_CHECK_ATOMIC(BITS, atomic_update);                                                  \
        return __atomic_fetch_and(a, v, __ATOMIC_SEQ_CST);                                      \
    }                                                                                           \
    T __tsan_atomic##BITS##_fetch_or(volatile T* a, T v, int) {                                 \
        EMU_CHECK_ATOMIC(BITS, atomic_update);                                                  \
        return __atomic_fetch_or(a, v, __ATOMIC_SEQ_CST);                                       \
    }                                                                                           \
    T __tsan_atomic##BITS##_fetch_xor(volatile T* a, T v, int) {                                \
        EMU_CHECK_ATOMIC(BITS, atomic_update);                                                  \
        return __atomic_fetch_xor(a, v, __ATOMIC_SEQ_CST);                                      \
    }                                                                                           \
    T __tsan_atomic##BITS##_fetch_nand(volatile T* a, T v, int) {                               \
        EMU_CHECK_ATOMIC(BITS, atomic_update);                                                  \
        return __atomic_fetch_nand(a, v, __ATOMIC_SEQ_CST);                                     \
    }                                                                                           \
    int __tsan_atomic##BITS##_compare_exchange_strong(volatile T* a, T* c, T v, int, int) {     \
        EMU_CHECK_ATOMIC(BITS, atomic_update);                                                  \
        return __atomic_compare_exchange_n(a, c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); \
    }                                                                                           \
    int __tsan_atomic##BITS##_compare_exchange_weak(volatile T* a, T* c, T v, int, int) {       \
        EMU_CHECK_ATOMIC(BITS, atomic_update);                                                  \
        return __atomic_compare_exchange_n(a, c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); \
    }                                                                                           \
    T __tsan_atomic##BITS##_compare_exchange_val(volatile T* a, T c, T v, int, int) {           \
        EMU_CHECK_ATOMIC(BITS, atomic_update);                                                  \
        __atomic_compare_exchange_n(a, &c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);       \
        return c;                                                                               \
    }
EMU_ATOMIC(8, uint8_t)
EMU_ATOMIC(16, uint16_t)
EMU_ATOMIC(32, uint32_t)
EMU_ATOMIC(64, uint64_t)
#undef EMU_ATOMIC
#undef EMU_CHECK_ATOMIC

void __tsan_atomic_thread_fence(int) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
void __tsan_atomic_signal_fence(int) { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
}

