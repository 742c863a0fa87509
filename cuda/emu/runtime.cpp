// The CUDA runtime on the emulator (cuda/emu/runtime.h) and its device memory
// (cuda/emu/memory.h): the address ranges, shared arrays placed in them per block, buffers,
// copies and sets checked against the buffers' live bytes. Compiled once, without the hooks.
#include "cuda/emu/runtime.h"

#include "cuda/emu/checks.h"
#include "cuda/emu/memory.h"
#include "cuda/emu/scheduler.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include <sys/mman.h>
#include <unistd.h>

struct CUevent_st {
    std::chrono::steady_clock::time_point t;
};

namespace emu {

cudaError_t& last_error() {
    static cudaError_t e = cudaSuccess;
    return e;
}
Config& config() {
    static Config c = [] {
        Config k;
        const char* e = std::getenv("EMU_RACECHECK");
        if (e && std::strcmp(e, "0") == 0) k.checks &= ~unsigned(check_races);
        return k;
    }();
    return c;
}

// ---- the address ranges ---------------------------------------------------------------------
size_t page_bytes() {
    static const size_t page = size_t(sysconf(_SC_PAGESIZE));
    return page;
}

// A range of address space, handed out in whole pages; a freed piece goes back to its free list.
struct Space {
    unsigned char* base = nullptr;
    size_t size = 0, top = 0;
    std::mutex mutex;
    std::vector<std::pair<size_t, size_t>> free_list;  // (offset, bytes)

    void reserve(size_t bytes) {
        void* m = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                       -1, 0);
        if (m != MAP_FAILED) base = static_cast<unsigned char*>(m), size = bytes;
    }
    // `bytes` (whole pages) of PROT_NONE address space in the range, or nullptr when full.
    unsigned char* take(size_t bytes) {
        std::lock_guard<std::mutex> lock(mutex);
        for (size_t i = 0; i < free_list.size(); i++)
            if (free_list[i].second >= bytes) {
                const size_t off = free_list[i].first;
                free_list[i].first += bytes, free_list[i].second -= bytes;
                if (free_list[i].second == 0) free_list.erase(free_list.begin() + long(i));
                return base + off;
            }
        if (!base || size - top < bytes) return nullptr;
        top += bytes;
        return base + top - bytes;
    }
    void give(unsigned char* p, size_t bytes) {
        mprotect(p, bytes, PROT_NONE);
        madvise(p, bytes, MADV_DONTNEED);
        std::lock_guard<std::mutex> lock(mutex);
        free_list.push_back({size_t(p - base), bytes});
    }
    bool holds(const void* p) const {
        return size_t(static_cast<const unsigned char*>(p) - base) < size;
    }
};
// The ranges, reserved at first use (address space only: nothing is committed until used).
Space& shared_space() {
    static Space* s = [] {
        auto* sp = new Space;
        sp->reserve(size_t(256) << 20);  // every runner's shared arrays: 256 MB
        g_page_shift = unsigned(__builtin_ctzl(page_bytes()));
        g_shared_size = sp->size;
        g_shared_base = sp->base;
        return sp;
    }();
    return *s;
}

// Per page of the shared range: the region whose data it holds (nullptr: a guard page).
// (Never destroyed, like the tables below: regions and buffers are freed by static destructors
// at exit too.)
std::vector<const SharedRegion*>& shared_pages() {
    static auto* v =
        new std::vector<const SharedRegion*>(shared_space().size >> g_page_shift, nullptr);
    return *v;
}

std::string describe_buffer(const GlobalAlloc& a) {
    const std::string block = std::to_string(a.block_bytes) + " bytes";
    if (a.owner == GlobalAlloc::lent)
        return "a buffer of " + std::to_string(a.bytes) + " bytes from gpu::allocate (its " +
               "cudaMalloc'd block: " + block + ")";
    if (a.owner == GlobalAlloc::cached)
        return "a cudaMalloc'd block of " + block + " in gpu::allocate's cache (released: no " +
               "buffer holds it)";
    return "a cudaMalloc'd buffer of " + std::to_string(a.bytes) + " bytes";
}
std::mutex& global_mutex() {
    static auto* m = new std::mutex;
    return *m;
}
std::unordered_map<uintptr_t, GlobalAlloc>& global_allocs() {
    static auto* m = new std::unordered_map<uintptr_t, GlobalAlloc>;
    return *m;
}
Space& global_space() {
    static Space* s = [] {
        auto* sp = new Space;
        (void)shared_space();                   // g_page_shift
        sp->reserve(size_t(64) << 30);          // every cudaMalloc'd buffer: 64 GB of addresses
        const size_t pages = sp->size >> g_page_shift;
        if (pages) {
            void* t = mmap(nullptr, pages * sizeof(GlobalPage), PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
            void* w = mmap(nullptr, sp->size / 4, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
            void* r = mmap(nullptr, sp->size * 4, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
            if (t == MAP_FAILED || w == MAP_FAILED) {
                munmap(sp->base, sp->size);
                sp->base = nullptr, sp->size = 0;
            } else {
                g_global_pages = static_cast<GlobalPage*>(t);
                g_global_init = static_cast<unsigned char*>(w);
                // (without this shadow the global race check is off: global_tag stays 0)
                if (r != MAP_FAILED) g_global_race = static_cast<GlobalRaceWord*>(r);
            }
        }
        g_global_size = sp->size;
        g_global_base = sp->base;
        return sp;
    }();
    return *s;
}

// ---- shared memory ---------------------------------------------------------------------------
void SharedRegion::unmap() {
    if (guard >= 0) guard_table[guard].lo = 0, guard_table[guard].hi = 0;
    if (map && in_space) {
        std::vector<const SharedRegion*>& pages = shared_pages();
        const size_t first = size_t(data - g_shared_base) >> g_page_shift;
        for (size_t k = 0; k < (data_bytes >> g_page_shift); k++) pages[first + k] = nullptr;
        // The next region here starts with a shadow never accessed (another runner's
        // epochs are not this one's), its guard pages' words included.
        const size_t at = size_t(map - g_shared_base) / 4, words = map_bytes / 4;
        madvise(g_shadow_hot + at, words * sizeof(ShadowHot), MADV_DONTNEED);
        madvise(g_shadow_cold + at, words * sizeof(ShadowCold), MADV_DONTNEED);
        shared_space().give(map, map_bytes);
    } else if (map) {
        munmap(map, map_bytes);
    }
    map = data = ptr = nullptr;
    hot = nullptr, cold = nullptr;
    marked = false;
}
void SharedRegion::place(size_t n, size_t misalign) {
    const size_t page = page_bytes(), rounded = (misalign + n + 15) / 16 * 16;
    const size_t need = (rounded + page - 1) / page * page;
    if (!map || need != data_bytes) {
        unmap();
        map_bytes = need + 2 * page;
        map = reserve_shadow() ? shared_space().take(map_bytes) : nullptr;
        in_space = map != nullptr;
        if (!map) {
            void* m = mmap(nullptr, map_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (m == MAP_FAILED) throw std::bad_alloc();
            map = static_cast<unsigned char*>(m);
        }
        data = map + page;
        data_bytes = need;
        if (need && mprotect(data, need, PROT_READ | PROT_WRITE) != 0) throw std::bad_alloc();
        if (in_space) {
            hot = g_shadow_hot + size_t(data - g_shared_base) / 4;
            cold = g_shadow_cold + size_t(data - g_shared_base) / 4;
            // A shadow never accessed, and the guard pages' words OUTSIDE: an access
            // there goes to the exact check, which leaves it to the fault.
            ShadowHot* const map_hot = hot - page / 4;
            std::memset(map_hot, 0, map_bytes / 4 * sizeof(ShadowHot));
            for (size_t w = 0; w < page / 4; w++)
                map_hot[w].w = OUTSIDE, hot[need / 4 + w].w = OUTSIDE;
            marked = false;
            std::vector<const SharedRegion*>& pages = shared_pages();
            g_shared_pages = pages.data();
            const size_t first = size_t(data - g_shared_base) >> g_page_shift;
            for (size_t k = 0; k < (need >> g_page_shift); k++) pages[first + k] = this;
        }
        if (guard < 0) {
            guard = guard_count.fetch_add(1);
            if (guard >= GUARD_TABLE_SIZE) {  // full: take an entry a freed region left
                guard = -1;
                for (int g = 0; g < GUARD_TABLE_SIZE && guard < 0; g++) {
                    uintptr_t zero = 0;
                    if (guard_table[g].lo.load() == 0 &&
                        guard_table[g].lo.compare_exchange_strong(zero, 1))
                        guard = g;
                }
                if (guard < 0) throw std::runtime_error("emulator: too many shared arrays");
            }
        }
        guard_table[guard].region = this;
        guard_table[guard].hi = reinterpret_cast<uintptr_t>(map) + map_bytes;
        guard_table[guard].lo = reinterpret_cast<uintptr_t>(map);
    }
    unsigned char* const at = data + data_bytes - rounded + misalign;
    if (at != ptr || n != bytes || !marked) {
        bytes = n;
        ptr = at;
        mark_outside();
    }
}
void SharedRegion::mark_outside() {
    marked = true;
    if (!hot) return;
    const size_t first = size_t(ptr - data) / 4, end = (size_t(ptr - data) + bytes) / 4;
    for (size_t w = 0; w < data_bytes / 4; w++)
        hot[w].w = w >= first && w < end ? hot[w].w & ~OUTSIDE : hot[w].w | OUTSIDE;
}
void SharedRegion::clear_shadow() {
    if (!hot) return;
    std::memset(hot, 0, data_bytes / 4 * sizeof(ShadowHot));
    mark_outside();
}
const unsigned char* SharedRegion::written_padding() const {
    for (const unsigned char* p = data; p < ptr; p++)
        if (*p != 0xFF) return p;
    for (const unsigned char* p = ptr + bytes; p < data + data_bytes; p++)
        if (*p != 0xFF) return p;
    return nullptr;
}
std::string SharedRegion::name() const {
    if (!site) return "the dynamic shared memory (" + std::to_string(bytes) + " bytes)";
    return std::string(site->tile ? "shared tile `" : "shared array `") + site->name +
           "` (" + site->file + ":" + std::to_string(site->line) + ", " +
           std::to_string(bytes) + " bytes" +
           (site->tile ? ", carved from the dynamic shared memory)" : ")");
}
std::string SharedRegion::where(const unsigned char* p) const {
    const long off = long(p - ptr);
    if (off < 0) return std::to_string(-off) + " bytes before the start of " + name();
    return "byte " + std::to_string(off) + " of " + name() + ", past its end";
}

std::atomic<int>& next_shared_slot() {
    static std::atomic<int> next{0};
    return next;
}
void* shared_at(SharedSite& site, size_t bytes, size_t misalign) {
    int slot = site.slot.load(std::memory_order_acquire);
    if (slot < 0) {
        static std::mutex m;
        std::lock_guard<std::mutex> lock(m);
        slot = site.slot.load();
        if (slot < 0) site.slot.store(slot = next_shared_slot()++, std::memory_order_release);
    }
    SharedArena& a = *cur().block->arena;
#ifdef EMU_THREADS
    std::lock_guard<std::mutex> lock(a.mutex);
#endif
    if (a.regions.size() <= size_t(slot)) a.regions.resize(slot + 1);
    std::unique_ptr<SharedRegion>& r = a.regions[slot];
    if (!r) r = std::make_unique<SharedRegion>(), r->site = &site;
    if (r->gen != a.gen) {
        if (!site.tile) a.static_bytes += bytes;
        if (a.static_bytes > STATIC_SHARED_MAX)
            fail_in_thread("static shared memory: " + std::to_string(a.static_bytes) +
                           " bytes with `" + site.name + "` (" + site.file + ":" +
                           std::to_string(site.line) +
                           "), over the 48 KB a kernel may declare "
                           "(ptxas refuses it); use dynamic shared memory");
        if (a.static_bytes + a.dynamic_bytes > a.limit)
            fail_in_thread("shared memory: " + std::to_string(a.static_bytes) + " bytes static (`" +
                           site.name + "`, " + site.file + ":" + std::to_string(site.line) +
                           ") + " + std::to_string(a.dynamic_bytes) + " dynamic, over the " +
                           std::to_string(a.limit) +
                           " bytes a block may have (48 KB unless "
                           "the kernel opted in with cudaFuncSetAttribute, 227 KB on sm_90)");
        r->place(bytes, misalign);
        r->fill();
        r->gen = a.gen;
        a.touched.push_back(r.get());
    }
    return r->ptr;
}

// SHARED_TILE: the tile must lie inside the launch's dynamic shared memory (the cursor walks
// through it as on a GPU), at an offset its type's alignment divides; the kernel gets an array
// of its own, as SHARED would give it, as far past a 16-byte boundary as the offset is (the
// dynamic shared memory starts 16-byte aligned on a GPU), so that a float4 access to a tile
// carved at an odd float is misaligned here too.
void* shared_tile(SharedSite& site, const unsigned char* cursor, size_t bytes, size_t align) {
    const SharedRegion& dyn = cur().block->arena->dynamic;
    const long off = long(cursor - dyn.ptr);
    if (off >= 0 && size_t(off) % align != 0)
        fail_in_thread(std::string("shared tile `") + site.name + "` (" + site.file + ":" +
                       std::to_string(site.line) + ") starts at byte " + std::to_string(off) +
                       " of the dynamic shared memory, not a multiple of its type's alignment (" +
                       std::to_string(align) + " bytes): a GPU faults on its accesses");
    if (off < 0 || size_t(off) + bytes > dyn.bytes)
        fail_in_thread(std::string("shared tile `") + site.name + "` (" + site.file + ":" +
                       std::to_string(site.line) + "): " + std::to_string(bytes) +
                       " bytes from byte " + std::to_string(off) + " of the dynamic shared " +
                       "memory, which has " + std::to_string(dyn.bytes) +
                       ": the launch gives fewer bytes than the tiles carved from them");
    return shared_at(site, bytes, size_t(off) % 16);
}

void* dynamic_shared() { return cur().block->arena->dynamic.ptr; }

// ---- buffers ---------------------------------------------------------------------------------
// The page table's [lo, hi) of each of a buffer's data pages: its live bytes, a.bytes from ptr.
void set_live_pages(const GlobalAlloc& a) {
    const size_t page = page_bytes(), data_bytes = a.map_bytes - 2 * page;
    unsigned char* const data = a.map + page;
    const size_t first = size_t(data - g_global_base) >> g_page_shift;
    const size_t start = size_t(a.ptr - data), end = start + a.bytes;
    for (size_t k = 0; k < data_bytes / page; k++) {
        const size_t lo = k * page, hi = lo + page;
        g_global_pages[first + k].lo = uint32_t(std::max(start, lo) - lo);
        g_global_pages[first + k].hi = uint32_t(std::max(std::min(end, hi), lo) - lo);
    }
}
// gpu::allocate's block: its live bytes and who holds it (lend_block, cache_block).
void set_owner(void* block, size_t bytes, GlobalAlloc::Owner owner) {
    std::lock_guard<std::mutex> lock(global_mutex());
    auto it = global_allocs().find(uintptr_t(block));
    if (it == global_allocs().end()) return;
    GlobalAlloc& a = it->second;
    a.bytes = std::min(bytes, a.block_bytes);
    a.owner = owner;
    set_live_pages(a);
}
void lend_block(void* block, size_t bytes) {
    set_owner(block, bytes, GlobalAlloc::lent);
    set_written(block, bytes, 0);  // what the block's last owner wrote is not this buffer's
}
void cache_block(void* block) { set_owner(block, 0, GlobalAlloc::cached); }

// The check of a cudaMemcpy's or cudaMemset's range: "" when its n bytes from p lie inside one
// buffer's live bytes, or outside the global range (host memory); else how they leave them
// (", from byte 0 of a cudaMalloc'd buffer of 400 bytes, runs 112 bytes past its end").
std::string range_error(const void* p, size_t n) {
    const size_t off = uintptr_t(p) - uintptr_t(g_global_base);
    if (n == 0 || off >= g_global_size || !(config().checks & check_copies)) return "";
    const size_t page = size_t(1) << g_page_shift;
    size_t k = off >> g_page_shift, in = off & (page - 1), left = n;
    for (;;) {  // page by page (a guard page ends every buffer)
        const GlobalPage pg = g_global_pages[k];
        if (in < pg.lo || in >= pg.hi) break;
        if (left <= pg.hi - in) return "";
        if (pg.hi != page) break;
        left -= pg.hi - in, k++, in = 0;
    }
    const unsigned char* b = static_cast<const unsigned char*>(p);
    std::lock_guard<std::mutex> lock(global_mutex());
    for (const auto& [key, a] : global_allocs()) {
        if (b < a.map || b >= a.map + a.map_bytes) continue;
        const std::string buf = describe_buffer(a);
        if (b < a.ptr)
            return " starts " + std::to_string(a.ptr - b) + " bytes before the start of " + buf;
        if (b >= a.ptr + a.bytes)
            return " starts at byte " + std::to_string(b - a.ptr) + " of " + buf +
                   (a.owner == GlobalAlloc::cached ? "" : ", past its end");
        return ", from byte " + std::to_string(b - a.ptr) + " of " + buf + ", runs " +
               std::to_string(b + n - (a.ptr + a.bytes)) + " bytes past its end";
    }
    return " is in no live cudaMalloc'd buffer (freed memory, or a guard page between buffers)";
}
// A copy or set past a buffer: the call fails as on a GPU (cudaErrorInvalidValue), and throws
// so that the one line that names it is never lost to an unchecked return value.
void check_range(const char* call, size_t n, const char* kind, const char* role, const void* p) {
    const std::string why = range_error(p, n);
    if (why.empty()) return;
    last_error() = cudaErrorInvalidValue;
    throw std::runtime_error(std::string("emulator: ") + call + " of " + std::to_string(n) +
                             " bytes" + kind + ": the " + role + why);
}
}  // namespace emu

// ---- the runtime API --------------------------------------------------------------------------
const char* cudaGetErrorString(cudaError_t e) {
    switch (e) {
        case cudaSuccess: return "no error";
        case cudaErrorInvalidValue: return "invalid argument";
        case cudaErrorMemoryAllocation: return "out of memory";
        case cudaErrorLaunchOutOfResources: return "too many resources requested for launch";
        default: return "unspecified launch failure";
    }
}
cudaError_t cudaGetLastError() {
    cudaError_t e = ::emu::last_error();
    ::emu::last_error() = cudaSuccess;
    return e;
}
cudaError_t cudaPeekAtLastError() { return ::emu::last_error(); }
cudaError_t cudaMalloc(void** p, size_t bytes) {
    using namespace ::emu;
    const size_t rounded = (std::max<size_t>(bytes, 1) + 255) / 256 * 256;
    const size_t page = page_bytes(), data_bytes = (rounded + page - 1) / page * page;
    Space& space = global_space();
    unsigned char* map = space.base ? space.take(data_bytes + 2 * page) : nullptr;
    if (!map || mprotect(map + page, data_bytes, PROT_READ | PROT_WRITE) != 0) {
        if (map) space.give(map, data_bytes + 2 * page);
        if (space.base && rounded <= space.size) return cudaErrorMemoryAllocation;
        *p = std::aligned_alloc(256, rounded);  // no address space reserved: unchecked
        if (!*p) return cudaErrorMemoryAllocation;
        std::memset(*p, 0xFF, bytes);
        return cudaSuccess;
    }
    unsigned char* ptr = map + page + data_bytes - rounded;
    GlobalAlloc a{map, data_bytes + 2 * page, ptr, bytes, bytes};
    set_live_pages(a);
    {
        std::lock_guard<std::mutex> lock(global_mutex());
        global_allocs()[uintptr_t(ptr)] = a;
    }
    std::memset(ptr, 0xFF, bytes);  // NaN bytes: reading memory nobody wrote shows up
    set_written(ptr, bytes, 0);     // and the initialisation check reports the read itself
    *p = ptr;
    return cudaSuccess;
}
cudaError_t cudaFree(void* p) {
    using namespace ::emu;
    if (!p) return cudaSuccess;
    if (!global_space().holds(p)) {
        std::free(p);
        return cudaSuccess;
    }
    GlobalAlloc a;
    {
        std::lock_guard<std::mutex> lock(global_mutex());
        auto it = global_allocs().find(uintptr_t(p));
        if (it == global_allocs().end()) return cudaErrorInvalidValue;
        a = it->second;
        global_allocs().erase(it);
    }
    const size_t page = page_bytes(), first = size_t(a.map + page - g_global_base) >> g_page_shift;
    for (size_t k = 0; k < (a.map_bytes - 2 * page) / page; k++) g_global_pages[first + k] = {};
    forget_races(a.map, a.map_bytes);
    global_space().give(a.map, a.map_bytes);
    return cudaSuccess;
}
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
    const char* how = kind == cudaMemcpyHostToDevice     ? " (host to device)"
                      : kind == cudaMemcpyDeviceToHost   ? " (device to host)"
                      : kind == cudaMemcpyDeviceToDevice ? " (device to device)"
                      : kind == cudaMemcpyHostToHost     ? " (host to host)"
                                                         : "";
    ::emu::check_range("cudaMemcpy", bytes, how, "source", src);
    ::emu::check_range("cudaMemcpy", bytes, how, "destination", dst);
    if (bytes) std::memmove(dst, src, bytes);
    ::emu::set_written(dst, bytes, 1);
    return cudaSuccess;
}
cudaError_t cudaMemset(void* p, int value, size_t bytes) {
    ::emu::check_range("cudaMemset", bytes, "", "destination", p);
    std::memset(p, value, bytes);
    ::emu::set_written(p, bytes, 1);
    return cudaSuccess;
}
size_t emu_physical_bytes() {
    return size_t(sysconf(_SC_PHYS_PAGES)) * size_t(sysconf(_SC_PAGE_SIZE));
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int) {
    std::memset(p, 0, sizeof *p);
    std::snprintf(p->name, sizeof p->name, "CPU emulator");
    p->totalGlobalMem = emu_physical_bytes();
    p->major = 9;
    p->minor = 0;
    p->multiProcessorCount = 132;  // an H200's: the host code's grid decisions run as there
    p->sharedMemPerBlockOptin = 227 * 1024;
    return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int) {
    if (attr != cudaDevAttrMultiProcessorCount) return cudaErrorInvalidValue;
    *value = 132;
    return cudaSuccess;
}
cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total) {
    *total = emu_physical_bytes();
    *free_bytes = size_t(sysconf(_SC_AVPHYS_PAGES)) * size_t(sysconf(_SC_PAGE_SIZE));
    return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t* e) {
    *e = new CUevent_st;
    return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t e) {
    delete e;
    return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t) {
    e->t = std::chrono::steady_clock::now();
    return cudaSuccess;
}
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
    *ms = std::chrono::duration<float, std::milli>(b->t - a->t).count();
    return cudaSuccess;
}
