// Device memory as the emulator lays it out (cuda/emu/runtime.cpp): shared arrays and
// cudaMalloc'd buffers each in one range of address space reserved at first use, every array
// and buffer in whole pages between guard pages (PROT_NONE), so that an access hook tells them
// from the stack and host memory with a comparison, and an access past one faults.
#pragma once
#include "cuda/emu/checks.h"

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace emu {

// Every SHARED array (one SharedSite per declaration and template instance) gets a region per
// block runner: whole pages [guard][data][guard], the array at the end of the data so that the
// byte after it faults. The padding before it (the rest of its first page) and after it (up to
// 15 bytes, to keep 16-byte alignment) is filled with 0xFF like the array and must still be at
// the block's end. A fault in a guard page becomes the launch's error (the SIGSEGV handler,
// cuda/emu/scheduler.cpp, names the array). Limits as on sm_90: 48 KB static, 48 KB in all
// without the kernel's cudaFuncSetAttribute opt-in, 227 KB with it.
constexpr size_t STATIC_SHARED_MAX = 48 * 1024;
constexpr size_t DEFAULT_DYNAMIC_SHARED = 48 * 1024, MAX_DYNAMIC_SHARED = 227 * 1024;

// The ranges' bounds (reserved at first use: address space only, nothing is committed until
// used), in plain variables that the hooks read.
inline unsigned char* g_shared_base = nullptr;
inline size_t g_shared_size = 0;
inline unsigned char* g_global_base = nullptr;
inline size_t g_global_size = 0;
inline unsigned g_page_shift = 12;
// Per page of the shared range: the region whose data it holds (nullptr: a guard page).
struct SharedRegion;
inline const SharedRegion* const* g_shared_pages = nullptr;

// Per page of the global range: the bytes [lo, hi) of it that belong to a live cudaMalloc'd
// buffer (0, 0: a guard page, or freed).
struct GlobalPage {
    uint32_t lo = 0, hi = 0;
};
inline GlobalPage* g_global_pages = nullptr;
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
std::string describe_buffer(const GlobalAlloc& a);  // a buffer as a report names it
std::mutex& global_mutex();
std::unordered_map<uintptr_t, GlobalAlloc>& global_allocs();  // by ptr

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
    void unmap();
    // Room for `n` bytes, the array's end at the data's end (rounded to 16 bytes), its start
    // `misalign` bytes past a 16-byte boundary (a tile: as far as its offset in the dynamic
    // shared memory is on a GPU, so that a vector access misaligned there is misaligned here).
    void place(size_t n, size_t misalign = 0);
    void mark_outside();  // OUTSIDE on the words not wholly inside [ptr, ptr + bytes) only
    void fill() { std::memset(data, 0xFF, data_bytes); }
    void clear_shadow();
    const unsigned char* written_padding() const;  // the first byte not 0xFF, or nullptr
    std::string name() const;
    std::string where(const unsigned char* p) const;  // byte p against the array, in words
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

}  // namespace emu
