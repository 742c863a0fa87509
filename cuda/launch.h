// One header for every CUDA source in cuda/: the real runtime under nvcc (or when a host
// program links the nvcc-built kernels, CUDA_DEVICE_BUILD), the CPU emulator otherwise.
//
//   launch_kernel(kernel, grid, block, shmem_bytes, args...)   // kernel<<<grid, block, shmem>>>
//   CUDA_CHECK(cudaMalloc(&p, bytes));                          // throws with the call's text
//   SHARED(float, As, [BK][BM]);       // __shared__ float As[BK][BM], 16-byte aligned
//   DYNAMIC_SHARED(float, smem);       // extern __shared__: the launch's dynamic bytes
//   SHARED_TILE(float, Qs, smem, n);   // float* Qs = smem; smem += n (the emulator: an array of
//                                      // its own, bounds-checked, named, so an overrun into the
//                                      // next tile is an error)
//   CHECK_LAUNCH_BOUNDS(256);          // the emulator build inserts it as the first statement
//                                      // of every kernel __launch_bounds__(256) (in any
//                                      // spelling: cuda/emu/launch_bounds.pl); not by hand
// The last three are macros so that the emulator (cuda/emu/emulator.h) can check shared memory
// bounds and the launch bounds; on a device SHARED is __shared__ and CHECK_LAUNCH_BOUNDS is
// nothing (the hardware refuses a launch over a kernel's bounds).
//   gpu::Buffer<float> x(n);                                    // tracked device allocation
//   gpu::peak_bytes(), gpu::reset_peak()                        // like torch.cuda.max_memory_*
//   gpu::empty_cache()                                          // like torch.cuda.empty_cache
#pragma once
#if defined(__CUDACC__) || defined(CUDA_DEVICE_BUILD)
#include <cuda_runtime.h>
#ifndef DYNAMIC_SHARED
#define DYNAMIC_SHARED(T, name)                          \
    extern __shared__ __align__(16) unsigned char dyn_shared_bytes_[]; \
    T* name = reinterpret_cast<T*>(dyn_shared_bytes_)
#endif
#define SHARED(T, name, dims) __shared__ __align__(16) T name dims
#define SHARED_TILE(T, name, cursor, count) \
    T* name = (cursor);                      \
    (cursor) += (count)
#define CHECK_LAUNCH_BOUNDS(...) ((void)0)
#else
#include "cuda/emu/emulator.h"
#endif

#include <cstddef>
#include <stdexcept>
#include <string>
#include <type_traits>

#define CUDA_CHECK(call)                                                                  \
    do {                                                                                  \
        cudaError_t cuda_check_e_ = (call);                                               \
        if (cuda_check_e_ != cudaSuccess)                                                 \
            throw std::runtime_error(std::string(#call) + " failed: " +                   \
                                     cudaGetErrorString(cuda_check_e_) + " (" + __FILE__ + \
                                     ":" + std::to_string(__LINE__) + ")");               \
    } while (0)

template <class T>
struct launch_identity {
    using type = T;
};

// The one launch site: arguments convert to the kernel's parameter types, as with <<< >>>.
#if defined(__CUDACC__)
template <class... KArgs>
void launch_kernel(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t shmem,
                   typename launch_identity<KArgs>::type... args) {
    kernel<<<grid, block, shmem>>>(args...);
    CUDA_CHECK(cudaGetLastError());
}
#elif !defined(CUDA_DEVICE_BUILD)
template <class... KArgs>
void launch_kernel(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t shmem,
                   typename launch_identity<KArgs>::type... args) {
    // (Its loads of the arguments are the emulator's, not the kernel's: no access hooks.)
    ::emu::run_grid(
        grid, block, shmem, [&]() __attribute__((no_sanitize("thread"))) { kernel(args...); },
        reinterpret_cast<const void*>(kernel));
}
#endif

// Tracked device memory: every buffer the kernels' host wrappers allocate goes through here,
// so chapter 6 reads the peak like torch.cuda.max_memory_allocated.
namespace gpu {
size_t current_bytes();
size_t peak_bytes();
void reset_peak();
void* allocate(size_t bytes);  // a cached block or cudaMalloc; std::bad_alloc when full
void release(void* p, size_t bytes);  // back to the cache, for the next allocation of its size
void empty_cache();                   // cudaFree every cached block

template <class T>
class Buffer {
public:
    Buffer() = default;
    explicit Buffer(size_t n) : n_(n), p_(static_cast<T*>(allocate(n * sizeof(T)))) {}
    ~Buffer() { release(p_, n_ * sizeof(T)); }
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    Buffer(Buffer&& o) noexcept : n_(o.n_), p_(o.p_) { o.n_ = 0, o.p_ = nullptr; }
    T* data() { return p_; }
    const T* data() const { return p_; }
    size_t size() const { return n_; }

private:
    size_t n_ = 0;
    T* p_ = nullptr;
};
}  // namespace gpu
