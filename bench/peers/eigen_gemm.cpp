// Eigen's sgemm as one of bench-gemm's peers: a program of its own (Eigen is a library of headers,
// compiled into whatever uses it), built by `make bench` where Eigen's headers are
// (libeigen3-dev), with the flags the project's own code gets and OpenMP for its threads. It
// speaks bench-gemm's child protocol (bench/peer_child.h):
//
//   peer-eigen-gemm --sizes 256,512 --repeat 5 --threads 2   time, check and report
//   peer-eigen-gemm --describe                               name and kernel only
#include "bench/peer_child.h"

#include <Eigen/Core>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

[[noreturn]] void usage(const char* why) {
    std::fprintf(stderr,
                 "peer-eigen-gemm: %s; usage: peer-eigen-gemm [--describe] [--sizes N,N,...] "
                 "[--repeat R] [--threads T] (bench-gemm runs it)\n",
                 why);
    std::exit(2);
}

// A whole number in [lo, hi], or usage().
int whole(const char* s, int lo, int hi, const char* what) {
    char* end = nullptr;
    const long v = std::strtol(s, &end, 10);
    if (end == s || *end || v < lo || v > hi) usage(what);
    return (int)v;
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<int> sizes = {256};
    int repeat = 5, threads = 1;
    bool describe = false;
    for (int i = 1; i < argc; i++) {
        const std::string a = argv[i];
        if (a == "--describe") {
            describe = true;
        } else if (i + 1 < argc && a == "--sizes") {
            sizes.clear();
            for (char* tok = std::strtok(argv[++i], ","); tok; tok = std::strtok(nullptr, ","))
                sizes.push_back(whole(tok, 1, 65536, "--sizes takes sizes from 1 to 65536"));
            if (sizes.empty()) usage("--sizes takes sizes from 1 to 65536");
        } else if (i + 1 < argc && a == "--repeat") {
            repeat = whole(argv[++i], 1, 1000000, "--repeat takes 1 to 1000000");
        } else if (i + 1 < argc && a == "--threads") {
            threads = whole(argv[++i], 1, 4096, "--threads takes 1 to 4096");
        } else {
            usage(("unknown argument '" + a + "'").c_str());
        }
    }
    Eigen::setNbThreads(threads);
    // The widest instruction sets it was compiled for: SimdInstructionSetsInUse() lists them
    // all, widest first ("AVX512, FMA, AVX2, AVX, SSE, ..."); the first two name the kernel.
    const std::string name = "Eigen " + std::to_string(EIGEN_WORLD_VERSION) + "." +
                             std::to_string(EIGEN_MAJOR_VERSION) + "." +
                             std::to_string(EIGEN_MINOR_VERSION);
    std::string kernel = Eigen::SimdInstructionSetsInUse();
    const size_t second = kernel.find(", ", kernel.find(", ") + 1);
    if (second != std::string::npos) kernel.resize(second);
    if (describe) {
        std::printf("name %s\nkernel %s\n", name.c_str(), kernel.c_str());
        return 0;
    }
    using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    return bench::peer::run(
        name,
        [&](bool tb, int n, const float* A, const float* B, float* C) {
            return bench::peer::Prepared{[=] {
                                             Eigen::Map<const Matrix> a(A, n, n), b(B, n, n);
                                             Eigen::Map<Matrix> c(C, n, n);
                                             if (tb)
                                                 c.noalias() = a * b.transpose();
                                             else
                                                 c.noalias() = a * b;
                                         },
                                         kernel};
        },
        sizes, repeat);
}
