// Shared test helpers: run a program and capture its output; compare arrays with a tolerance.
#pragma once
#include <doctest.h>

#include <cmath>
#include <csignal>
#include <cstdio>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#if defined(__linux__)
#include <sys/prctl.h>
#endif

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

// The folder this test program is in, $(BUILD)/bin, where the build's programs are, and the
// checkout's root, PROJECT_ROOT_FROM_BIN (the Makefile's) from there: found from the program
// itself, not compiled in, so that the tests of a copied or moved checkout run its own programs
// on its own files. PROJECT_BIN and PROJECT_ROOT name them.
inline const std::string& bin_dir() {
    static const std::string dir =
        std::filesystem::read_symlink("/proc/self/exe").parent_path().string();
    return dir;
}
inline const std::string& root_dir() {
    static const std::string dir =
        std::filesystem::weakly_canonical(std::filesystem::path(bin_dir()) / PROJECT_ROOT_FROM_BIN)
            .string();
    return dir;
}
#define PROJECT_BIN (::testutil::bin_dir())
#define PROJECT_ROOT (::testutil::root_dir())

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

// A test starts a program of the build through the helpers below (run, run_in, spawn, or
// program_command for a shell line of its own: a pipe, script(1)), which put the Makefile's
// RUNNER in front: under make cross-test the programs are aarch64 and run under qemu, and one
// started without it fails with "Exec format error".

// The path of build/bin/<program>; REQUIREs that the build made it, so that a build that leaves
// out a program the suite starts (make sanitize's, say) fails naming it, not with "not found".
inline std::string program_path(const std::string& program) {
    std::string path = PROJECT_BIN;
    path.append("/").append(program);  // (piece by piece: see float_path)
    REQUIRE_MESSAGE(::access(path.c_str(), X_OK) == 0,
                    path << " is not built: the build that runs these tests must build it");
    return path;
}

// text quoted for sh: 'text', each ' inside as '\''. Every path a test puts into a shell line
// goes through it: the checkout's path may hold spaces (and so may every path under it).
inline std::string quote(const std::string& text) {
    std::string q = "'";
    for (char c : text)
        q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

// The shell command that starts build/bin/<program>: the RUNNER, then the program's path.
inline std::string program_command(const std::string& program) {
    const std::string runner = PROJECT_RUNNER, path = quote(program_path(program));
    return runner.empty() ? path : runner + " " + path;
}

// Runs build/bin/<program> <args> (a shell fragment; no stdin) in the folder `dir` ("": this
// process's) and captures stdout and stderr. With timeout_s, a program still running after that
// many seconds is killed and the exit code is 124 (timeout(1)): for a test of something that
// could hang.
inline Run run_in(const std::string& dir, const std::string& program, const std::string& args = "",
                  const std::string& stdin_text = "", int timeout_s = 0) {
    static int counter = 0;
    std::string tmp = "/tmp/transformer-test-" + std::to_string(::getpid()) + "-" +
                      std::to_string(counter++);
    std::string in = tmp + ".in";
    {
        std::ofstream f(in);
        f << stdin_text;
    }
    std::string cmd = (dir.empty() ? "" : "cd " + quote(dir) + " && ") +
                      (timeout_s > 0 ? "timeout -k 5 " + std::to_string(timeout_s) + " " : "") +
                      program_command(program) + " " + args + " <" + in + " >" + tmp +
                      ".out 2>" + tmp + ".err";
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

// run_in this process's folder (the repository root, where the suite runs).
inline Run run(const std::string& program, const std::string& args = "",
               const std::string& stdin_text = "", int timeout_s = 0) {
    return run_in("", program, args, stdin_text, timeout_s);
}

// Starts build/bin/<program> with `args` (each one argument; no shell) behind the RUNNER, for a
// test that signals it while it runs: stdin /dev/null, stdout and stderr into the files `out`
// and `err` ("": /dev/null), SIGINT and SIGTERM at their default actions, as from a shell.
// Returns its process id (under a RUNNER the runner's, which passes signals on to the program);
// the caller waits for it. It gets SIGKILL if the test process ends first (Linux), so a test
// that fails midway leaves no program running.
inline pid_t spawn(const std::string& program, const std::vector<std::string>& args,
                   const std::string& out = "", const std::string& err = "") {
    std::vector<std::string> words;  // the RUNNER (words without quotes), the program, args
    std::istringstream runner(PROJECT_RUNNER);
    for (std::string w; runner >> w;) words.push_back(w);
    words.push_back(program_path(program));
    words.insert(words.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);
    const std::string out_path = out.empty() ? "/dev/null" : out;
    const std::string err_path = err.empty() ? "/dev/null" : err;
    std::fflush(stdout);
    std::fflush(stderr);
    [[maybe_unused]] const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {  // async-signal-safe calls only until exec: the test process has threads
#if defined(__linux__)
        if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) ::_exit(127);
#endif
        sigset_t none;
        sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        for (int sig : {SIGINT, SIGTERM, SIGPIPE})
            ::signal(sig, SIG_DFL);  // (doctest catches SIGINT and SIGTERM)
        const int in_fd = ::open("/dev/null", O_RDONLY);
        const int out_fd = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        const int err_fd = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (in_fd < 0 || out_fd < 0 || err_fd < 0) ::_exit(127);
        ::dup2(in_fd, STDIN_FILENO);
        ::dup2(out_fd, STDOUT_FILENO);
        ::dup2(err_fd, STDERR_FILENO);
        ::execvp(argv[0], argv.data());
        ::_exit(127);
    }
    return pid;
}

// Whether process `pid` runs (from /proc; a zombie, ended but not yet waited for, does not).
inline bool runs(pid_t pid) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(f, line)) return false;
    const size_t close = line.rfind(')');
    return close != std::string::npos && close + 2 < line.size() && line[close + 2] != 'Z';
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
    std::string path = PROJECT_ROOT;
    path.append("/").append(relative);  // (piece by piece: see float_path)
    std::ifstream f(path, std::ios::binary);
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
