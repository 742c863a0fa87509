#include "common/memory.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <unistd.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace mem {

namespace {

std::atomic<size_t> g_current{0}, g_peak{0};

}  // namespace

size_t current_bytes() { return g_current.load(); }
size_t peak_bytes() { return g_peak.load(); }
void reset_peak() { g_peak.store(g_current.load()); }

double physical_bytes() {
    return (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGE_SIZE);
}

// ---- blocks from the system ----------------------------------------------------------------
// A block of 2 MiB and up is 2 MiB-aligned and a whole number of 2 MiB pages long, and the
// kernel is asked to back it with 2 MiB pages (transparent huge pages, which the common default
// mode, madvise, gives only to memory that asks). Section 6's attention reads each head as rows
// of 256 bytes, 6 KB apart, inside the (B, n, 3 d_model) projection: with 4 KB pages nearly
// every row is a page of its own, and the page walks are a good part of packing K^T and V^T
// and of writing dQ, dK, dV out; with 2 MiB pages the sgemms, both attention layers and the
// LSTM all run faster. Without THP it is only an alignment (off Linux, not that either); a
// block wastes under 2 MiB, and under half of itself.
namespace {

constexpr size_t HUGE_PAGE = 2 << 20;
constexpr size_t CACHE_MIN_BLOCK = 1 << 20;  // smaller blocks go straight back to malloc

// The bytes a request of `bytes` takes from the system: whole 2 MiB pages from 2 MiB up, whole
// 64 KiB from 1 MiB up, else whole 64 bytes. The cache below hands a freed block back for
// its size, so a request of a nearby size reuses it too: a training step's tensors change size
// with each batch's lengths, and an exact size seldom comes again (each miss is a new block,
// whose pages the kernel zeroes as they are first touched).
size_t block_bytes(size_t bytes) {
    const size_t unit = bytes >= HUGE_PAGE         ? HUGE_PAGE
                        : bytes >= CACHE_MIN_BLOCK ? size_t(64) << 10
                                                   : 64;
    return (bytes + unit - 1) / unit * unit;
}

void* system_alloc(size_t block) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (block >= HUGE_PAGE) {
        void* p = std::aligned_alloc(HUGE_PAGE, block);
        if (p) madvise(p, block, MADV_HUGEPAGE);  // a hint: if it fails, nothing else changes
        return p;
    }
#endif
    return std::aligned_alloc(64, block);
}

}  // namespace

// ---- the cache of large freed blocks --------------------------------------------------------

struct Cache {
    std::mutex lock;
    std::multimap<size_t, void*> free_blocks;  // block_bytes -> block
    size_t bytes = 0;
    size_t limit = 0;  // at most this many bytes are kept: 1/8 of physical memory, <= 4 GiB
    Cache() { limit = (size_t)std::min(physical_bytes() / 8, 4.0 * (1 << 30)); }
};
namespace {

Cache& cache() {
    static Cache* c = new Cache;  // never destroyed: buffers may be released during exit
    return *c;
}

}  // namespace

void empty_cache() {
    Cache& c = cache();
    std::lock_guard<std::mutex> guard(c.lock);
    for (auto& [size, p] : c.free_blocks) std::free(p);
    c.free_blocks.clear();
    c.bytes = 0;
}

size_t cached_bytes() {
    Cache& c = cache();
    std::lock_guard<std::mutex> guard(c.lock);
    return c.bytes;
}

void* allocate(size_t bytes, bool zero) {
    if (bytes == 0) return nullptr;
    const size_t block = block_bytes(bytes);
    void* p = nullptr;
    if (block >= CACHE_MIN_BLOCK) {
        Cache& c = cache();
        std::lock_guard<std::mutex> guard(c.lock);
        auto it = c.free_blocks.find(block);
        if (it != c.free_blocks.end()) {
            p = it->second;
            c.free_blocks.erase(it);
            c.bytes -= block;
        }
    }
    if (!p) {
        p = system_alloc(block);
        if (!p) {  // give the cache back and try once more
            empty_cache();
            p = system_alloc(block);
        }
        if (!p) throw std::bad_alloc();
    }
    if (zero) std::memset(p, 0, (bytes + 63) / 64 * 64);  // to the 64-byte line's end
    size_t now = g_current.fetch_add(bytes) + bytes;
    size_t peak = g_peak.load();
    while (now > peak && !g_peak.compare_exchange_weak(peak, now)) {
    }
    return p;
}

void release(void* p, size_t bytes) {
    if (!p) return;
    g_current.fetch_sub(bytes);
    const size_t block = block_bytes(bytes);
    if (block >= CACHE_MIN_BLOCK) {
        Cache& c = cache();
        std::lock_guard<std::mutex> guard(c.lock);
        if (c.bytes + block <= c.limit) {
            c.free_blocks.emplace(block, p);
            c.bytes += block;
            return;
        }
    }
    std::free(p);
}

}  // namespace mem
