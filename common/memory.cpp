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
// kernel is asked to back it with 2 MiB pages (transparent huge pages, which Debian's default
// mode, madvise, gives only to memory that asks). Section 6's attention reads each head as rows
// of 256 bytes, 6 KB apart, inside the (B, n, 3 d_model) projection: with 4 KB pages nearly
// every row is a page of its own, and the page walks are a good part of packing K^T and V^T
// and of writing dQ, dK, dV out; with 2 MiB pages the sgemms, both attention layers and the
// LSTM all run faster. Without THP, or off
// Linux, it is only an alignment; a block wastes under 2 MiB, and under half of itself.
namespace {

constexpr size_t HUGE_PAGE = 2 << 20;

void* system_alloc(size_t rounded) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (rounded >= HUGE_PAGE) {
        const size_t whole = (rounded + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
        void* p = std::aligned_alloc(HUGE_PAGE, whole);
        if (p) madvise(p, whole, MADV_HUGEPAGE);  // a hint: if it fails, nothing else changes
        return p;
    }
#endif
    return std::aligned_alloc(64, rounded);
}

}  // namespace

// ---- the cache of large freed blocks --------------------------------------------------------
constexpr size_t CACHE_MIN_BLOCK = 1 << 20;  // smaller blocks go straight back to malloc

struct Cache {
    std::mutex lock;
    std::multimap<size_t, void*> free_blocks;  // rounded size -> block
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
    size_t rounded = (bytes + 63) / 64 * 64;
    void* p = nullptr;
    if (rounded >= CACHE_MIN_BLOCK) {
        Cache& c = cache();
        std::lock_guard<std::mutex> guard(c.lock);
        auto it = c.free_blocks.find(rounded);
        if (it != c.free_blocks.end()) {
            p = it->second;
            c.free_blocks.erase(it);
            c.bytes -= rounded;
        }
    }
    if (!p) {
        p = system_alloc(rounded);
        if (!p) {  // give the cache back and try once more
            empty_cache();
            p = system_alloc(rounded);
        }
        if (!p) throw std::bad_alloc();
    }
    if (zero) std::memset(p, 0, rounded);
    size_t now = g_current.fetch_add(bytes) + bytes;
    size_t peak = g_peak.load();
    while (now > peak && !g_peak.compare_exchange_weak(peak, now)) {
    }
    return p;
}

void release(void* p, size_t bytes) {
    if (!p) return;
    g_current.fetch_sub(bytes);
    size_t rounded = (bytes + 63) / 64 * 64;
    if (rounded >= CACHE_MIN_BLOCK) {
        Cache& c = cache();
        std::lock_guard<std::mutex> guard(c.lock);
        if (c.bytes + rounded <= c.limit) {
            c.free_blocks.emplace(rounded, p);
            c.bytes += rounded;
            return;
        }
    }
    std::free(p);
}

}  // namespace mem
