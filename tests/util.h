// Shared test helpers: run a program and capture its output; compare arrays with a tolerance.
#pragma once
#include <doctest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

// The Makefile's RUNNER, a prefix for every program the tests start (make cross-test: qemu),
// and the CPU the compiler was told to target (-march=native resolved, e.g. cooperlake).
#ifndef PROJECT_RUNNER
#define PROJECT_RUNNER ""
#endif
#ifndef PROJECT_CPU
#define PROJECT_CPU ""
#endif
// The flags the Makefile compiled this build with that shape its float path: OPT, ARCH_FLAGS,
// OpenMP's and EXTRA_CXXFLAGS (make sanitize adds -fsanitize=... there).
#ifndef PROJECT_FLOAT_FLAGS
#define PROJECT_FLOAT_FLAGS ""
#endif

namespace testutil {

// The float path this build runs on. A float32 sum's last bits depend on the order and the
// rounding of its steps, and those are fixed at compile time: fused multiply-adds or not, how
// many lanes an `omp simd` loop reduces in, and how the compiler vectorised and contracted the
// rest. The same source therefore prints slightly different digits, and draws a pixel one level
// apart, on another CPU family or compiler, or with other flags (the sanitizers' instrumentation
// changes what the optimiser does: on the CI machine `make sanitize` drew figure 4's PNG
// byte-different); on one path it repeats itself bit for bit. The path names the CPU, the
// compiler and those flags.
inline std::string float_path() {
#if defined(__AVX512F__)
    std::string path = "x86-64 AVX-512";
#elif defined(__AVX2__) && defined(__FMA__)
    std::string path = "x86-64 AVX2+FMA";
#elif defined(__x86_64__)
    std::string path = "x86-64 without AVX2";
#elif defined(__aarch64__)
    std::string path = "aarch64 NEON";
#else
    std::string path = "another CPU";
#endif
#if defined(__clang__)
    path += ", clang " + std::to_string(__clang_major__);
#elif defined(__GNUC__)
    path += ", g++ " + std::to_string(__GNUC__);
#endif
    // Appended piece by piece: GCC 12 warns (-Warray-bounds, a false positive) on
    // std::string(", ") + MACRO once the precompiled header changes what it inlines.
    if (*PROJECT_CPU) path.append(", ").append(PROJECT_CPU);
    if (*PROJECT_FLOAT_FLAGS) path.append(", ").append(PROJECT_FLOAT_FLAGS);
    return path;
}
// The path the committed figures/ were drawn on and the flash cards' digits were printed on:
// this project's CI machine, `make` with its defaults (-march=native there is cooperlake).
inline const std::string REFERENCE_FLOAT_PATH =
    "x86-64 AVX-512, g++ 12, cooperlake, -O2 -march=native -fopenmp";

struct Run {
    int exit_code;
    std::string out;  // stdout
    std::string err;  // stderr
};

// Runs build/bin/<program> <args> (a shell fragment; no stdin) and captures stdout and stderr.
// With timeout_s, a program still running after that many seconds is killed and the exit code
// is 124 (timeout(1)): for a test of something that could hang.
// The Makefile's RUNNER goes in front (make cross-test runs the aarch64 programs under qemu).
inline Run run(const std::string& program, const std::string& args = "",
               const std::string& stdin_text = "", int timeout_s = 0) {
    static int counter = 0;
    std::string tmp = "/tmp/transformer-test-" + std::to_string(::getpid()) + "-" +
                      std::to_string(counter++);
    std::string in = tmp + ".in";
    {
        std::ofstream f(in);
        f << stdin_text;
    }
    std::string cmd = (timeout_s > 0 ? "timeout -k 5 " + std::to_string(timeout_s) + " " : "") +
                      std::string(PROJECT_RUNNER) + " " + PROJECT_BIN + "/" + program + " " + args +
                      " <" + in + " >" + tmp + ".out 2>" + tmp + ".err";
    int status = std::system(cmd.c_str());
    auto slurp = [](const std::string& path) {
        std::ifstream f(path, std::ios::binary);
        std::stringstream ss;
        ss << f.rdbuf();
        return ss.str();
    };
    Run r{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(tmp + ".out"), slurp(tmp + ".err")};
    std::remove(in.c_str());
    std::remove((tmp + ".out").c_str());
    std::remove((tmp + ".err").c_str());
    return r;
}

// The contents of a file at an absolute path ("" if it cannot be read).
inline std::string read_file_abs(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

// The contents of a file under the project root, e.g. "tests/expected/1-self-attention.txt".
inline std::string read_file(const std::string& relative) {
    std::ifstream f(std::string(PROJECT_ROOT) + "/" + relative, std::ios::binary);
    REQUIRE_MESSAGE(f.good(), "cannot open " << relative);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

// |got - ref| <= atol + rtol * |ref| for every element; reports the first mismatches.
inline bool allclose(const float* got, const float* ref, size_t n, double atol, double rtol,
                     const char* what = "") {
    int shown = 0;
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        double g = got[i], r = ref[i];
        bool ok = std::fabs(g - r) <= atol + rtol * std::fabs(r) || (std::isinf(g) && g == r);
        if (!ok) {
            bad++;
            if (shown++ < 5)
                MESSAGE(std::string(what) << "[" << i << "]: got " << g << ", expected " << r
                             << " (diff " << std::fabs(g - r) << ")");
        }
    }
    if (bad) MESSAGE(std::string(what) << ": " << bad << " of " << n << " elements differ");
    return bad == 0;
}

inline bool allclose(const std::vector<float>& got, const std::vector<float>& ref, double atol,
                     double rtol, const char* what = "") {
    REQUIRE(got.size() == ref.size());
    return allclose(got.data(), ref.data(), got.size(), atol, rtol, what);
}

// d(loss)/dx[i] by central differences (loss(x + eps) - loss(x - eps)) / (2 eps), for every
// element of x (n floats, restored afterwards). Gradient tests compare backward passes with it.
template <class Loss>
std::vector<float> central_difference(float* x, size_t n, float eps, Loss loss) {
    std::vector<float> numeric(n);
    for (size_t i = 0; i < n; i++) {
        const float keep = x[i];
        x[i] = keep + eps;
        const double up = loss();
        x[i] = keep - eps;
        const double down = loss();
        x[i] = keep;
        numeric[i] = float((up - down) / (2.0 * eps));
    }
    return numeric;
}

// Waits for every forked child and checks that each exited normally with status 0.
template <class Pids>
void check_children_exit_zero(const Pids& kids) {
    for (pid_t kid : kids) {
        int status = 0;
        ::waitpid(kid, &status, 0);
        CHECK(WIFEXITED(status));
        CHECK(WEXITSTATUS(status) == 0);
    }
}

}  // namespace testutil
