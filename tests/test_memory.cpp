// common/memory: the tracked allocator under every tensor and work buffer. The counters count the
// bytes asked for, a block comes back zeroed unless asked not to be (also when it is a reused
// one), big freed blocks are reused, and blocks of 2 MiB and up are 2 MiB-aligned on Linux, where
// the allocator asks for transparent huge pages for them.
#include <cstdint>

#include "common/memory.h"
#include "tests/util.h"

TEST_CASE("memory: counted as asked for, zeroed, big blocks reused and 2 MiB-aligned") {
    mem::empty_cache();
    const size_t before = mem::current_bytes();
    const size_t big = (3u << 20) / sizeof(float) + 3;  // 3 MiB and 12 bytes: not whole pages
    const float* first = nullptr;
    {
        mem::Buffer<float> a(big, mem::uninit);
        CHECK(mem::current_bytes() - before == big * sizeof(float));
        CHECK((uintptr_t)a.data() % 64 == 0);
#if defined(__linux__)
        CHECK((uintptr_t)a.data() % (2u << 20) == 0);
#endif
        for (size_t i = 0; i < big; i++) a[i] = 1.0f;  // every byte of it is there
        first = a.data();
    }
    CHECK(mem::current_bytes() == before);
    CHECK(mem::cached_bytes() >= big * sizeof(float));

    // The same size again: the cached block, zeroed as a new one would be.
    mem::Buffer<float> b(big);
    CHECK(b.data() == first);
    size_t nonzero = 0;
    for (size_t i = 0; i < big; i++) nonzero += b[i] != 0.0f;
    CHECK(nonzero == 0);

    // A nearby size in the same whole 2 MiB pages (3 MiB + 12 bytes and 3.5 MiB: 4 MiB each):
    // the same block again, zeroed, and counted as asked for.
    const float* second = b.data();
    b = mem::Buffer<float>();
    const size_t nearby = (7u << 19) / sizeof(float);
    mem::Buffer<float> d(nearby);
    CHECK(d.data() == second);
    CHECK(mem::current_bytes() - before == nearby * sizeof(float));
    nonzero = 0;
    for (size_t i = 0; i < nearby; i++) nonzero += d[i] != 0.0f;
    CHECK(nonzero == 0);
    // And a size of other pages (5 MiB: 6 MiB) is a block of its own.
    mem::Buffer<float> e((5u << 20) / sizeof(float), mem::uninit);
    CHECK(e.data() != second);

    // Small blocks: 64-byte aligned, counted exactly.
    const size_t now = mem::current_bytes();
    mem::Buffer<float> c(1000);
    CHECK((uintptr_t)c.data() % 64 == 0);
    CHECK(mem::current_bytes() - now == 1000 * sizeof(float));
    mem::empty_cache();
    CHECK(mem::cached_bytes() == 0);
}
