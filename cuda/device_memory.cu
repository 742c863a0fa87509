// Tracked device allocations (gpu::Buffer): current and peak bytes, like mem:: on the CPU.
#include "cuda/launch.h"

#include <new>

namespace gpu {
namespace {
size_t g_current = 0, g_peak = 0;
}
size_t current_bytes() { return g_current; }
size_t peak_bytes() { return g_peak; }
void reset_peak() { g_peak = g_current; }

void* allocate(size_t bytes) {
    if (bytes == 0) return nullptr;
    void* p = nullptr;
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
        cudaGetLastError();  // clear the sticky out-of-memory error
        throw std::bad_alloc();
    }
    g_current += bytes;
    if (g_current > g_peak) g_peak = g_current;
    return p;
}
void release(void* p, size_t bytes) {
    if (!p) return;
    cudaFree(p);
    g_current -= bytes;
}
}  // namespace gpu
