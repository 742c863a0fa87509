// Tracked device allocations (gpu::Buffer): current and peak bytes, like mem:: on the CPU.
//
// Freed blocks are cached and handed out again for the same rounded size, as PyTorch's caching
// allocator does: cudaMalloc and cudaFree are costly calls, and cudaFree waits for the device, so
// without the cache every timed step of chapter 6 would include them. The counts are the bytes
// handed out (torch.cuda.memory_allocated), not the cache.
#include "cuda/launch.h"

#include <cstring>
#include <map>
#include <new>
#include <stdexcept>
#include <string>

namespace gpu {
namespace {
size_t g_current = 0, g_peak = 0;
// Rounded size -> a free block of that size. Never destroyed: at exit the cached blocks stay
// reachable (and the driver frees them) rather than being freed after the CUDA runtime itself
// has shut down.
std::multimap<size_t, void*>& g_cache = *new std::multimap<size_t, void*>;
size_t rounded(size_t bytes) { return (bytes + 511) / 512 * 512; }
}  // namespace
size_t current_bytes() { return g_current; }
size_t peak_bytes() { return g_peak; }
void reset_peak() { g_peak = g_current; }

void empty_cache() {
    for (auto& [size, p] : g_cache) cudaFree(p);
    g_cache.clear();
}

void* allocate(size_t bytes) {
    if (bytes == 0) return nullptr;
    const size_t size = rounded(bytes);
    void* p = nullptr;
    if (auto it = g_cache.find(size); it != g_cache.end()) {
        p = it->second;
        g_cache.erase(it);
#if !defined(__CUDACC__)
        std::memset(p, 0xFF, size);  // emulator: a reused block reads as NaN, like a fresh one
#endif
    } else if (cudaError_t e = cudaMalloc(&p, size); e != cudaSuccess) {
        // Only "out of memory" is worth a retry; anything else (a kernel that faulted earlier)
        // is reported as itself, not disguised as a full device.
        if (e != cudaErrorMemoryAllocation)
            throw std::runtime_error(std::string("cudaMalloc failed: ") + cudaGetErrorString(e));
        cudaGetLastError();  // clear the out-of-memory error
        empty_cache();       // the cached blocks may be exactly what is missing
        if (cudaMalloc(&p, size) != cudaSuccess) {
            cudaGetLastError();
            throw std::bad_alloc();
        }
    }
#if !defined(__CUDACC__)
    emu::lend_block(p, bytes);  // emulator: an access past `bytes` is out of bounds
#endif
    g_current += bytes;
    if (g_current > g_peak) g_peak = g_current;
    return p;
}
void release(void* p, size_t bytes) {
    if (!p) return;
#if !defined(__CUDACC__)
    emu::cache_block(p);  // emulator: a cached block has no live bytes until lent again
#endif
    g_cache.emplace(rounded(bytes), p);
    g_current -= bytes;
}
}  // namespace gpu
