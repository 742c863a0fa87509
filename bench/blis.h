// BLIS, one of bench-gemm's peers: loaded at run time (dlopen, so nothing here needs it to build),
// with the name of the kernel family ("arch", BLIS's sub-configuration) it runs.
//
// BLIS built for the whole x86-64 family picks its arch from the CPU's model number and, for
// the Intel AVX-512 kernels, from a timing of the FMA units. On a virtual machine that guess can
// come out low (an AVX2 arch where the CPU has two 512-bit FMA units), and a release may have no
// arch at all for a newer CPU. So bench-gemm names the arch BLIS picked beside the best this CPU
// supports, and where the pick is below it, runs BLIS with BLIS_ARCH_TYPE set to the best arch's
// number instead (in a child process: BLIS reads the variable once, at its first call). Unlike
// OpenBLAS's, the pick is not timed too: below the CPU it is a kernel a vector width narrower or
// BLIS's portable C, never the faster.
#pragma once
#include <dlfcn.h>

#include <cstdint>
#include <string>
#include <vector>

namespace blis {

// bli_sgemm(transa, transb, m, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c, rsc, csc): any
// layout through row and column strides (dim_t and inc_t are 64-bit on 64-bit systems).
using Sgemm = void (*)(int, int, int64_t, int64_t, int64_t, const float*, const float*, int64_t,
                       int64_t, const float*, int64_t, int64_t, const float*, float*, int64_t,
                       int64_t);
constexpr int NO_TRANSPOSE = 0;  // BLIS_NO_TRANSPOSE

struct Library {
    Sgemm sgemm = nullptr;  // null: libblis.so.4 is not installed
    void (*set_num_threads)(int64_t) = nullptr;
    int (*arch_query_id)() = nullptr;           // the arch BLIS runs (BLIS_ARCH_TYPE's, if set)
    const char* (*arch_string)(int) = nullptr;  // an arch's name: "skx", "haswell", "zen3", ...
    std::string version;                        // bli_info_get_version_str(): "0.9.0"
};

inline Library load() {
    Library lib;
    void* h = dlopen("libblis.so.4", RTLD_NOW | RTLD_LOCAL);
    if (!h) return lib;
    lib.set_num_threads =
        reinterpret_cast<void (*)(int64_t)>(dlsym(h, "bli_thread_set_num_threads"));
    lib.arch_query_id = reinterpret_cast<int (*)()>(dlsym(h, "bli_arch_query_id"));
    lib.arch_string = reinterpret_cast<const char* (*)(int)>(dlsym(h, "bli_arch_string"));
    using Name = const char* (*)();
    if (auto f = reinterpret_cast<Name>(dlsym(h, "bli_info_get_version_str"))) lib.version = f();
    if (lib.arch_query_id && lib.arch_string)  // without them the kernel cannot be named
        lib.sgemm = reinterpret_cast<Sgemm>(dlsym(h, "bli_sgemm"));
    return lib;
}

// The library's archs in the order of their numbers (BLIS_ARCH_TYPE's values): its list of
// names ends with "generic".
inline std::vector<std::string> archs(const Library& lib) {
    std::vector<std::string> names;
    for (int id = 0; id < 64; id++) {
        const char* s = lib.arch_string(id);
        if (!s) break;
        names.push_back(s);
        if (names.back() == "generic") break;
    }
    return names;
}

// How wide an arch's kernels are: 0 SSE-era or generic, 1 AVX, 2 AVX2 + FMA, 3 AVX-512.
inline int arch_level(const std::string& arch) {
    for (const char* n : {"skx", "zen4", "zen5"})
        if (arch == n) return 3;
    for (const char* n : {"haswell", "zen", "zen2", "zen3"})
        if (arch == n) return 2;
    for (const char* n : {"sandybridge", "bulldozer", "piledriver", "steamroller", "excavator"})
        if (arch == n) return 1;
    return 0;  // penryn, generic, knl (Xeon Phi's), and every arch this list does not know
}

// The archs that count as this CPU's best, in the order to try them (pure, so the tests can ask
// it about CPUs not at hand): AMD's own first where BLIS has one for the CPU.
inline std::vector<std::string> best_for(bool avx512, bool avx2_fma, bool amd) {
    if (avx512)
        return amd ? std::vector<std::string>{"zen5", "zen4", "skx"}
                   : std::vector<std::string>{"skx"};
    if (avx2_fma)
        return amd ? std::vector<std::string>{"zen3", "zen2", "zen", "haswell"}
                   : std::vector<std::string>{"haswell"};
    return {};  // AVX alone or less: whatever BLIS picked is as good as it gets
}

inline std::vector<std::string> best_for_this_cpu() {
#if defined(__x86_64__)
    __builtin_cpu_init();
    // The skx kernels use AVX-512 F, BW, VL and DQ.
    const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    return best_for(avx512, avx2, __builtin_cpu_is("amd"));
#else
    return {};
#endif
}

// The arch to force (its name; its number is its place in `available`), or "" where the one
// BLIS picked is already as wide as the CPU's best or the library has none of the best.
inline std::string force_arch(const std::string& picked, const std::vector<std::string>& best,
                              const std::vector<std::string>& available) {
    for (const std::string& b : best)
        for (const std::string& a : available)
            if (a == b) return arch_level(picked) >= arch_level(b) ? "" : b;
    return "";
}

}  // namespace blis
