// The checks' shared state and entry points: the shadow memory of the race and initialisation
// checks, what the access hooks read of the running thread (cuda/emu/racecheck.cpp: the hooks
// and their checks), the reports' names for threads, buffers and code addresses, the launch
// rules and the register budget (cuda/emu/checks.cpp).
#pragma once
#include "cuda/emu/emulator.h"

#include <cstdint>
#include <string>
#include <vector>

namespace emu {

struct FiberBlock;
struct SharedRegion;

// ---- shadow memory ----------------------------------------------------------------------------
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
bool reserve_shadow();  // false where the address space cannot be had: no race check
// The initialisation check's shadow of the global range: a byte per 4-byte word, nonzero once
// something wrote the word (a kernel's store or atomic, cudaMemcpy, cudaMemset) since its
// buffer was allocated or lent (gpu::allocate). A kernel's load of a word never written is
// compute-sanitizer initcheck's report, whatever the 0xFF fill happens to read as.
inline unsigned char* g_global_init = nullptr;
void set_written(const void* p, size_t n, unsigned char value);
// The global race check's shadow of the global range: per 4-byte word, the tag of the last
// plain write to it and that of the last plain read (global_tag below), 16 bytes a word.
struct GlobalRaceWord {
    uint64_t w, r;
};
inline GlobalRaceWord* g_global_race = nullptr;
// Forgets the race check's records of the bytes [p, p + n) of the global range (whole pages).
void forget_races(const void* p, size_t n);

// ---- what the access hooks read of the running thread -------------------------------------
// The launch's checks, copied from config() at every launch (one plain load for a hook).
inline unsigned g_checks = all_checks;
// The running fiber's stack, [t_stack_lo, t_stack_lo + t_stack_size): what kernel code may
// touch outside device memory (host_access). Outside a kernel (or with check_host_memory off)
// every address.
inline thread_local uintptr_t t_stack_lo = 0;
inline thread_local uintptr_t t_stack_size = ~uintptr_t(0);
// A report's message lets host memory pass for the rest of the thread's run: its strings may
// run library code compiled with the hooks (the linker keeps one copy of an inline function).
inline void quiet_hooks() { t_stack_lo = 0, t_stack_size = ~uintptr_t(0); }
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

// ---- reports ------------------------------------------------------------------------------
// What an access does, for a report: a plain load or store, or an atomic (the hooks'
// __tsan_atomic*: atomicAdd, atomicCAS and the rest, and std::atomic_ref in kernel code).
enum class Did : unsigned char { read, write, atomic_read, atomic_write, atomic_update };
constexpr Did did(bool write) { return write ? Did::write : Did::read; }
// Code addresses go into a message as "{code 0x...}" (and a function's as "{func 0x...}");
// run_grid turns them into file:line (resolve_code_addresses) once the launch has stopped.
std::string code_at(const void* pc);
std::string resolve_code_addresses(std::string msg);
// One frame of a code address's chain of inlined calls: the function (addr2line -f -C) and the
// place, "file:line".
struct CodeFrame {
    std::string func, place;
};
// What `addr2line -a -f -C -i` printed for n addresses -> each one's frames, innermost first:
// a line "0x" and 16 hex digits heads each address, then two lines a frame, the function and
// "file:line" or "file:line (discriminator N)" (a file's name may hold spaces). The frames end
// where a place or a function is unknown ("??").
std::vector<std::vector<CodeFrame>> parse_frames(const std::string& text, size_t n);
// Whether two code addresses are one source call (a compiler's copies of one call).
bool same_source_call(const void* a, const void* b);
std::string thread_name(int tid);  // the running block's thread tid
std::string block_name();          // the running block
std::string global_where(const unsigned char* p);  // byte p of a buffer, or of no buffer
// The message of a misaligned access (the hooks, and float4's own check): a vector (float2,
// float4) or an atomic at an address not a multiple of its size.
[[noreturn, gnu::noinline, gnu::cold]] void misaligned_error(const void* addr, size_t n, Did what,
                                                             const void* pc);
void fault_message(FiberBlock& fb);  // the launch's error for the fault the handler noted

// ---- launch rules -----------------------------------------------------------------------------
// The device's launch rules, checked at every launch: throws std::runtime_error where a GPU
// refuses it; else returns the block's limit on shared memory, static + dynamic.
size_t check_launch(dim3 grid, dim3 block, size_t shmem, const void* kernel);
std::vector<const void*> launched_kernels();  // each launched so far (a template instance once)

// ---- the register budget (checks.cpp) -----------------------------------------------------
// A launch whose block needs more registers than a block may have fails as on a GPU. The
// counts are ptxas's: where nvcc compiles the kernels (CUDA=1), the build links a table of every
// cuda/*.cu kernel's (cuda/emu/kernel_registers.pl: emu_kernel_register_table, by mangled
// name); without it the check has nothing to check, but for the counts the tests give
// (set_kernel_registers).
struct KernelRegisters {
    const char* name;  // mangled, as ptxas names the entry function
    int registers;     // per thread
};
}  // namespace emu

// The build's table (weak: a program built without nvcc links none).
extern "C" {
extern const emu::KernelRegisters emu_kernel_register_table[] __attribute__((weak));
extern const int emu_kernel_register_count __attribute__((weak));
}

namespace emu {

// Whether this program links the build's table (nvcc was present).
inline bool register_table_linked() { return &emu_kernel_register_count != nullptr; }
// A demangled name with nvcc's anonymous-namespace names read as g++'s.
std::string kernel_key(const char* mangled);
// The functions of this program's executable, by address (its symbol table, local symbols
// included: kernels in anonymous namespaces are local); read once.
struct FunctionSymbol {
    uintptr_t addr;
    std::string name;  // mangled
};
const std::vector<FunctionSymbol>& program_functions();
// Gives a kernel the register count ptxas would report for it (the tests' kernels, which nvcc
// does not compile); 0 takes it back.
void set_kernel_registers(const void* kernel, int registers);
template <class... A>
void set_kernel_registers(void (*kernel)(A...), int registers) {
    set_kernel_registers(reinterpret_cast<const void*>(kernel), registers);
}
// The kernel's registers per thread (given, else the build's table), or -1 where unknown.
int kernel_registers(const void* kernel);

}  // namespace emu
