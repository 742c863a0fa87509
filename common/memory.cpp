#include "common/memory.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>

namespace mem {

static std::atomic<size_t> g_current{0}, g_peak{0};

size_t current_bytes() { return g_current.load(); }
size_t peak_bytes() { return g_peak.load(); }
void reset_peak() { g_peak.store(g_current.load()); }

void* allocate(size_t bytes) {
    if (bytes == 0) return nullptr;
    size_t rounded = (bytes + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, rounded);
    if (!p) throw std::bad_alloc();
    std::memset(p, 0, rounded);
    size_t now = g_current.fetch_add(bytes) + bytes;
    size_t peak = g_peak.load();
    while (now > peak && !g_peak.compare_exchange_weak(peak, now)) {
    }
    return p;
}

void release(void* p, size_t bytes) {
    if (!p) return;
    std::free(p);
    g_current.fetch_sub(bytes);
}

}  // namespace mem
