// The benchmarks' yardstick, named and pinned: OpenBLAS, loaded at run time (dlopen, so nothing
// here needs it to build), with the name of the kernel family ("core") it picked for this CPU.
//
// OpenBLAS built with DYNAMIC_ARCH picks its core from the CPU's model number. On a CPU it does
// not know (a virtual machine may report a generic model) it falls back to an old one, Prescott
// (SSE3) say, whose kernels use a fraction of the vector width, and a comparison with it means
// nothing. So every benchmark prints the core OpenBLAS reports beside what the CPU
// supports, and where the core is below that, it runs the peer once more with
// OPENBLAS_CORETYPE set to the best matching core (in a child process: OpenBLAS reads the
// variable once, when it is loaded) and compares against the faster of the two.
#pragma once
#include <dlfcn.h>

#include <string>
#include <vector>

namespace openblas {

// cblas_sgemm(order, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)
using CblasSgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*,
                            int, float, float*, int);
constexpr int CblasRowMajor = 101, CblasNoTrans = 111, CblasTrans = 112;

struct Library {
    CblasSgemm sgemm = nullptr;                  // null: libopenblas.so.0 is not installed
    void (*set_num_threads)(int) = nullptr;
    std::string core;    // openblas_get_corename(): "SkylakeX", "Haswell", "Prescott", ...
    std::string config;  // openblas_get_config(): version and build options
};

inline Library load() {
    Library lib;
    void* h = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!h) return lib;
    lib.sgemm = reinterpret_cast<CblasSgemm>(dlsym(h, "cblas_sgemm"));
    lib.set_num_threads = reinterpret_cast<void (*)(int)>(dlsym(h, "openblas_set_num_threads"));
    using Name = const char* (*)();
    if (auto f = reinterpret_cast<Name>(dlsym(h, "openblas_get_corename"))) lib.core = f();
    if (auto f = reinterpret_cast<Name>(dlsym(h, "openblas_get_config"))) lib.config = f();
    return lib;
}

// How wide a core's kernels are: 0 SSE-era or generic, 1 AVX, 2 AVX2 + FMA, 3 AVX-512 (x86-64);
// every aarch64 core counts as 1 (ARMV8's and NeoverseN1's sgemm kernels are both NEON).
inline int core_level(std::string core) {
    for (char& c : core) c = char(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    for (const char* n : {"skylakex", "cooperlake", "sapphirerapids"})
        if (core == n) return 3;
    for (const char* n : {"haswell", "zen"})
        if (core == n) return 2;
    for (const char* n : {"sandybridge", "bulldozer", "piledriver", "steamroller", "excavator"})
        if (core == n) return 1;
    if (core.rfind("armv8", 0) == 0 || core.rfind("neoverse", 0) == 0 ||
        core.rfind("cortex", 0) == 0 || core.rfind("thunderx", 0) == 0 ||
        core.rfind("a64fx", 0) == 0 || core.rfind("tsv110", 0) == 0 ||
        core.rfind("falkor", 0) == 0 || core.rfind("emag", 0) == 0)
        return 1;
    return 0;
}

// What this CPU supports, as OpenBLAS cores: its level and the cores that count as its best, the
// first being the one to set in OPENBLAS_CORETYPE.
struct Best {
    int level = 0;
    std::vector<std::string> cores;
};

// The choice from the CPU's features (pure, so the tests can ask it about CPUs not at hand).
inline Best best_for(bool avx512, bool avx2_fma, bool avx, bool amd, bool aarch64) {
    if (aarch64) return {1, {"NEOVERSEN1", "ARMV8"}};
    if (avx512) return {3, {"SkylakeX", "Cooperlake", "SapphireRapids"}};
    if (avx2_fma) return amd ? Best{2, {"Zen", "Haswell"}} : Best{2, {"Haswell", "Zen"}};
    if (avx) return {1, {"Sandybridge"}};
    return {0, {}};  // an SSE-era CPU: whatever OpenBLAS picked is as good as it gets
}

inline Best best_for_this_cpu() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    // SkylakeX's kernels use AVX-512 F, BW, VL and DQ.
    const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    return best_for(avx512, avx2, __builtin_cpu_supports("avx"), __builtin_cpu_is("amd"), false);
#elif defined(__aarch64__)
    return best_for(false, false, false, false, true);
#else
    return {};
#endif
}

// The core to rerun the peer with, or "" where the detected one is already the CPU's best.
inline std::string rerun_core(const std::string& detected, const Best& best) {
    if (best.cores.empty() || core_level(detected) >= best.level) return "";
    return best.cores.front();
}

// "SkylakeX, Cooperlake or SapphireRapids"
inline std::string list(const std::vector<std::string>& cores) {
    std::string s;
    for (size_t i = 0; i < cores.size(); i++)
        s += (i == 0 ? "" : i + 1 == cores.size() ? " or " : ", ") + cores[i];
    return s;
}

}  // namespace openblas
