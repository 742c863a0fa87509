// bench-gemm's child processes, the parent's side: a library's variants (as it picks its
// kernel, or forced), each run as a child process (bench/child.h) whose lines
// (bench/peer_child.h) are read back, and a failed child's status in words.
#pragma once

#include "bench/child.h"
#include "bench/peer_child.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <unistd.h>
#include <utility>
#include <vector>

namespace bench {

// One way to run a library in a child process: as it is, or with its kernel forced.
struct Variant {
    std::string family;  // the column: "ours", "OpenBLAS", "BLIS", ...
    std::string forced;  // "" or how its kernel is forced: "OPENBLAS_CORETYPE=SkylakeX"
    std::vector<std::string> argv;
    std::vector<std::pair<std::string, std::string>> env;
    std::string name;                  // what it said it is: "OpenBLAS", its version, ...
    std::vector<std::string> kernels;  // the kernels it ran, each once
    std::string failure;               // its first failure, in words; it is not run again
    bool wrong = false;                // the failure was a wrong product
};

// What one child process said: GFLOP/s per (n, A@B^T?), its name and kernels, the archs a BLIS
// child listed, its "missing" and "wrong" lines, and its exit status.
struct ChildSaid {
    std::map<std::pair<int, int>, double> gflops;
    std::string name, missing, wrong;
    std::vector<std::string> kernels, archs;
    int status = 0;
};

// Runs the variant's child with `args` on `threads` threads (its argv gets --threads, and the
// libraries' thread variables are set), killed past timeout_s; returns what it said.
inline ChildSaid run_variant(const Variant& v, const std::vector<std::string>& args, int threads,
                             double timeout_s) {
    std::vector<std::string> argv = v.argv;
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"--threads", std::to_string(threads)});
    auto env = v.env;
    for (const char* var : {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "BLIS_NUM_THREADS"})
        env.push_back({var, std::to_string(threads)});
    ChildSaid said;
    said.status = run_child(
        argv, env,
        [&](const std::string& raw) {
            std::string line = raw;
            if (!line.empty() && line.back() == '\n') line.pop_back();
            const size_t space = line.find(' ');
            const std::string word = line.substr(0, space);
            const std::string rest = space == std::string::npos ? "" : line.substr(space + 1);
            int n = 0, tb = 0;
            double g = 0;
            if (word == "gflops" && std::sscanf(rest.c_str(), "%d %d %lf", &n, &tb, &g) == 3)
                said.gflops[{n, tb}] = g;
            else if (word == "name")
                said.name = rest;
            else if (word == "kernel" && !rest.empty() &&
                     std::find(said.kernels.begin(), said.kernels.end(), rest) ==
                         said.kernels.end())
                said.kernels.push_back(rest);
            else if (word == "arch")
                said.archs.push_back(rest);
            else if (word == "missing")
                said.missing = rest;
            else if (word == "wrong")
                said.wrong = rest;
        },
        timeout_s);
    return said;
}

// A failed child's status in words.
inline std::string failure_words(const ChildSaid& said, double timeout_s) {
    if (said.status == TIMED_OUT) {
        char limit[32];
        std::snprintf(limit, sizeof limit, "%g", timeout_s);
        return "did not finish within " + std::string(limit) + " s (--timeout) and was killed";
    }
    if (said.status == peer::WRONG_EXIT && !said.wrong.empty()) {
        int n = 0, tb = 0, used = 0;
        std::sscanf(said.wrong.c_str(), "%d %d %n", &n, &tb, &used);
        return "computed a WRONG product at n = " + std::to_string(n) +
               (tb ? ", A@B^T: " : ", A@B: ") + said.wrong.substr(used);
    }
    if (said.status > 128)
        return "crashed (signal " + std::to_string(said.status - 128) + ", " +
               strsignal(said.status - 128) + ")";
    if (said.status == 127) return "could not be started";
    return "failed (exit status " + std::to_string(said.status) + ")";
}

// This program's own path, to start it again as a child; "" where /proc has none.
inline std::string self_path() {
    char self[4096];
    const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) return "";
    self[len] = 0;
    return self;
}

// "a,b,c" -> {"a", "b", "c"}
inline std::vector<std::string> split_words(const std::string& list) {
    std::vector<std::string> words;
    size_t start = 0;
    for (size_t comma; (comma = list.find(',', start)) != std::string::npos; start = comma + 1)
        words.push_back(list.substr(start, comma - start));
    words.push_back(list.substr(start));
    return words;
}

}  // namespace bench
