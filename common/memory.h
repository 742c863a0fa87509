// Tracked memory: every tensor and work buffer is allocated here, so a program can ask for
// the bytes in use now and the peak since the last reset (like torch.cuda.max_memory_allocated).
#pragma once
#include <cstddef>
#include <utility>

namespace mem {

double physical_bytes();  // the machine's RAM (sysconf), what a program may hope to use
size_t current_bytes();
size_t peak_bytes();
void reset_peak();  // peak := current; call before a measurement

// 64-byte aligned, zero-filled unless zero = false; throws std::bad_alloc.
void* allocate(size_t bytes, bool zero = true);
void release(void* p, size_t bytes);

// Large freed blocks (1 MiB and up) are kept for reuse, like torch's caching allocator, so a
// loop that allocates the same big buffers every iteration does not pay page faults each time;
// a request of a nearby size (within the same whole 2 MiB pages, or 64 KiB below 2 MiB) takes
// one too.
// The counters above count bytes in use, not bytes cached (torch.cuda.max_memory_allocated,
// not max_memory_reserved). empty_cache() gives the cached blocks back to the system.
void empty_cache();
size_t cached_bytes();

// Buffer<T>(n, mem::uninit): skip the zero fill for a buffer the caller overwrites entirely.
struct uninit_t {};
inline constexpr uninit_t uninit{};

// An owning, tracked, zero-initialised array of T (trivially copyable T only).
template <class T>
class Buffer {
public:
    Buffer() = default;
    explicit Buffer(size_t n) : n_(n), p_(static_cast<T*>(allocate(n * sizeof(T)))) {}
    Buffer(size_t n, uninit_t) : n_(n), p_(static_cast<T*>(allocate(n * sizeof(T), false))) {}
    ~Buffer() { release(p_, n_ * sizeof(T)); }
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    Buffer(Buffer&& o) noexcept : n_(std::exchange(o.n_, 0)), p_(std::exchange(o.p_, nullptr)) {}
    Buffer& operator=(Buffer&& o) noexcept {
        std::swap(n_, o.n_);
        std::swap(p_, o.p_);
        return *this;
    }
    T* data() { return p_; }
    const T* data() const { return p_; }
    size_t size() const { return n_; }
    T& operator[](size_t i) { return p_[i]; }
    const T& operator[](size_t i) const { return p_[i]; }

private:
    size_t n_ = 0;
    T* p_ = nullptr;
};

}  // namespace mem
