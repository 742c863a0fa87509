// The compiler builds the constants it is given. GCC 12 for an AVX-512 CPU at -O2 builds some 32-
// and 64-byte constants whose significant 64-bit words are all equal as a broadcast of the first
// (std::vector<int>{1,1,1,1,0,0,0,0} becomes eight 1s), unless the Makefile works around it
// (PORT_WORKAROUND). This unit compiles at the library's -O2, where that happens.
#include <doctest.h>

#include <cstddef>
#include <vector>

namespace {

// Each constant is built in a function of its own, as a program builds one, so that the checks
// below read what the machine code built rather than what the compiler knows of the source.
[[gnu::noinline]] std::vector<int> ints() { return {1, 1, 1, 1, 0, 0, 0, 0}; }
[[gnu::noinline]] std::vector<int> ints16() {
    return {1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0};
}
[[gnu::noinline]] std::vector<long> longs() { return {5, 5, 5, 0, 0, 0, 0, 0}; }
[[gnu::noinline]] std::vector<short> shorts() {
    return {1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0};
}
[[gnu::noinline]] std::vector<float> floats() { return {1.5f, 1.5f, 1.5f, 1.5f, 0, 0, 0, 0}; }
[[gnu::noinline]] std::vector<double> doubles() { return {2.5, 2.5, 0, 0}; }
[[gnu::noinline]] std::vector<int> array_copy() {
    const int a[8] = {3, 3, 3, 3, 0, 0, 0, 0};
    return std::vector<int>(a, a + 8);
}

// That v is `leading` copies of `value`, then zeros, `size` entries in all, entry by entry.
template <class T>
void check_leading(const char* what, const std::vector<T>& v, size_t leading, T value,
                   size_t size) {
    REQUIRE_MESSAGE(v.size() == size, what);
    for (size_t i = 0; i < size; i++)
        CHECK_MESSAGE(v[i] == (i < leading ? value : T(0)), what << ": entry " << i);
}

}  // namespace

TEST_CASE("compiler: constants of equal leading words are built as written, not broadcast") {
    check_leading("int{1 x4, 0 x4}", ints(), 4, 1, 8);
    check_leading("int{1 x8, 0 x8}", ints16(), 8, 1, 16);
    check_leading("long{5 x3, 0 x5}", longs(), 3, 5L, 8);
    check_leading("short{1 x8, 0 x8}", shorts(), 8, short(1), 16);
    check_leading("float{1.5 x4, 0 x4}", floats(), 4, 1.5f, 8);
    check_leading("double{2.5 x2, 0 x2}", doubles(), 2, 2.5, 4);
    check_leading("int[8] copied into a vector", array_copy(), 4, 3, 8);
}
