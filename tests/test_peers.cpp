// bench-gemm's peers (bench/peers.h, bench/peer_child.h, bench/peer_run.h, bench/blis.h,
// bench/child.h): a child that hangs is killed at its time limit; the result checker passes every
// right product and rejects a planted wrong one; the best peer and the ratio of each cell, and
// the table; which BLIS arch is forced; bench-gemm itself with a peer that hangs, crashes,
// computes a wrong product or is not there; the README's lines with the peers' geometric mean.
// Nothing here times anything.
#include "bench/blis.h"
#include "bench/child.h"
#include "bench/peer_child.h"
#include "bench/peers.h"
#include "common/kernels/gemm.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <sys/resource.h>
#include <sys/stat.h>
#include <vector>

#include "tests/util.h"

TEST_CASE("peers: a child past its time limit is killed, and said so") {
    // A peer that hangs would hold bench-gemm forever: run_child kills it at the limit.
    std::vector<std::string> lines;
    auto keep = [&](const std::string& line) { lines.push_back(line); };
    CHECK(bench::run_child({"sh", "-c", "echo started; exec sleep 30"}, {}, keep, 0.5) ==
          bench::TIMED_OUT);
    CHECK(lines == std::vector<std::string>{"started\n"});  // what it said before, kept
    // Within its limit a child's lines and exit status are as without one.
    lines.clear();
    CHECK(bench::run_child({"sh", "-c", "echo a; printf b; exit 3"}, {}, keep, 30) == 3);
    CHECK(lines == std::vector<std::string>{"a\n", "b"});
    lines.clear();
    CHECK(bench::run_child({"sh", "-c", "kill -SEGV $$"}, {}, keep, 30) == 128 + SIGSEGV);
}

TEST_CASE("peers: a child that cannot be made is said, with the reason") {
    // In a process of its own with no file descriptor to spare, run_child's pipe fails.
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        ::dup2(fds[1], STDERR_FILENO);
        const rlimit three{3, 3};  // stdin, stdout, stderr
        ::setrlimit(RLIMIT_NOFILE, &three);
        std::_Exit(bench::run_child({"true"}, {}, [](const std::string&) {}) == -1 ? 0 : 1);
    }
    ::close(fds[1]);
    std::string err;
    char buf[256];
    for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;)
        err.append(buf, size_t(n));
    ::close(fds[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    CHECK(err == "true: cannot start it: Too many open files\n");
}

namespace {

// A, B (n x n, uniform in [-1, 1]) and C = A @ op(B) by our sgemm.
struct Product {
    int n;
    bool tb;
    std::vector<float> A, B, C;
    Product(int n_, bool tb_, unsigned seed = 7) : n(n_), tb(tb_), A(n * n), B(n * n), C(n * n) {
        std::mt19937 rng(seed);
        std::uniform_real_distribution<float> U(-1.0f, 1.0f);
        for (int i = 0; i < n * n; i++)
            A[i] = U(rng), B[i] = U(rng);
        sgemm(false, tb, n, n, n, 1.0f, A.data(), n, B.data(), n, 0.0f, C.data(), n);
    }
    std::string check() const {
        return bench::peer::check_product(tb, n, A.data(), B.data(), C.data());
    }
    float b(int k, int j) const { return tb ? B[j * n + k] : B[k * n + j]; }
};

bool has(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("peers: the result checker passes right products, summed in any order") {
    for (int n : {1, 2, 7, 64, 129, 300})
        for (bool tb : {false, true}) {
            CAPTURE(n);
            CAPTURE(tb);
            Product p(n, tb);
            CHECK(p.check() == "");  // ours: blocked, fused multiply-adds
            // The textbook loop in float, forwards and backwards, unfused: other roundings.
            for (int order = 0; order < 2; order++) {
                for (int i = 0; i < n; i++)
                    for (int j = 0; j < n; j++) {
                        float s = 0;
                        for (int kk = 0; kk < n; kk++) {
                            const int k = order ? n - 1 - kk : kk;
                            const volatile float prod = p.A[i * n + k] * p.b(k, j);
                            s += prod;
                        }
                        p.C[i * n + j] = s;
                    }
                CHECK(p.check() == "");
            }
        }
}

TEST_CASE("peers: the result checker rejects a planted wrong result") {
    const int n = 96;
    for (bool tb : {false, true}) {
        CAPTURE(tb);
        // One entry a thousandth off on an edge, where blocked code has its ragged tiles (the
        // edges are checked entry by entry) ...
        for (const auto& [i, j] : {std::pair{0, 0}, std::pair{n - 1, 50}, std::pair{37, n - 1}}) {
            Product p(n, tb);
            p.C[i * n + j] += 1e-3f * (1 + std::fabs(p.C[i * n + j]));
            const std::string what = p.check();
            CAPTURE(what);
            CHECK(what.rfind("C[" + std::to_string(i) + "][" + std::to_string(j) + "] = ", 0) == 0);
        }
        // ... and one entry anywhere without its largest product (a k left out), or zeroed.
        for (bool zeroed : {false, true}) {
            Product p(n, tb);
            float& entry = p.C[41 * n + 17];
            float largest = 0;
            for (int k = 0; k < n; k++)
                if (std::fabs(p.A[41 * n + k] * p.b(k, 17)) > std::fabs(largest))
                    largest = p.A[41 * n + k] * p.b(k, 17);
            const float planted = zeroed ? 0.0f : entry - largest;
            REQUIRE(std::fabs(planted - entry) > 0.2f);  // about one product's size
            entry = planted;
            CHECK(has(p.check(), "row 41 of C is off"));
        }
        // An entry left unwritten (NaN, as the child fills C before the call), or infinite.
        Product p(n, tb);
        p.C[5 * n + 9] = std::numeric_limits<float>::quiet_NaN();
        CHECK(p.check() == "C[5][9] is nan, not a finite number");
        p.C[5 * n + 9] = std::numeric_limits<float>::infinity();
        CHECK(p.check() == "C[5][9] is inf, not a finite number");
        // The other layout's product, a zero tile, and one computed in bfloat16 (8 bits of
        // mantissa): each is beyond float rounding.
        Product other(n, !tb);
        CHECK(bench::peer::check_product(tb, n, other.A.data(), other.B.data(), other.C.data()) !=
              "");
        Product tile(n, tb);
        for (int i = 32; i < 48; i++)
            for (int j = 64; j < 80; j++)
                tile.C[i * n + j] = 0;
        CHECK(has(tile.check(), "row 32 of C is off"));
        Product half(n, tb);
        auto bf16 = [](float x) {
            unsigned u;
            std::memcpy(&u, &x, 4);
            u &= 0xffff0000u;
            std::memcpy(&x, &u, 4);
            return x;
        };
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                float s = 0;
                for (int k = 0; k < n; k++)
                    s += bf16(half.A[i * n + k]) * bf16(half.b(k, j));
                half.C[i * n + j] = s;
            }
        CHECK(half.check() != "");
    }
}

TEST_CASE("peers: each cell's best peer and ratio, from the runs' figures") {
    bench::peers::Cell cell;
    cell.ours = {100, 90, 110};
    // oneDNN's child failed in the second run (0): BLIS is the best there.
    cell.peers = {{"oneDNN", {120, 0, 100}}, {"BLIS", {110, 95, 130}}, {"Eigen", {0, 0, 0}}};
    bench::peers::Summary s = bench::peers::summarize(cell);
    CHECK(s.rounds == 3);
    CHECK(s.best == "BLIS");  // fastest in 2 of the 3 runs
    CHECK(s.wins == 2);
    CHECK(s.ratio == doctest::Approx(110.0 / 130));  // the median of 100/120, 90/95, 110/130
    CHECK(s.lowest == doctest::Approx(100.0 / 120));
    CHECK(s.highest == doctest::Approx(90.0 / 95));
    // A tie in runs won goes to the higher median; a run without our figure has no ratio.
    cell.ours = {100, 100, 0};
    cell.peers = {{"oneDNN", {120, 80, 200}}, {"BLIS", {110, 95, 200}}};
    s = bench::peers::summarize(cell);
    CHECK(s.rounds == 2);
    CHECK(s.best == "oneDNN");  // one run each; medians 120 and 110
    CHECK(s.wins == 1);
    CHECK(bench::peers::median_present({120, 80, 0}) == 100);  // of the runs that have one
    CHECK(s.ratio == doctest::Approx(0.5 * (100.0 / 120 + 100.0 / 95)));
    CHECK(s.lowest == doctest::Approx(100.0 / 120));
    CHECK(s.highest == doctest::Approx(100.0 / 95));
    // No peer at all: no ratio, no name.
    cell.peers = {{"oneDNN", {0, 0, 0}}};
    s = bench::peers::summarize(cell);
    CHECK(s.rounds == 0);
    CHECK(s.best == "");
    CHECK(s.lowest == 0);
    CHECK(s.highest == 0);
}

TEST_CASE("peers: the table of ours / the best peer") {
    using bench::peers::Row;
    std::vector<Row> rows(4);
    rows[0] = Row{256,
                  false,
                  1,
                  {{200, 212, 190}, {{"oneDNN", {250, 240, 260}}, {"OpenBLAS", {180, 170, 175}}}}};
    rows[1] = Row{
        256, true, 2, {{400, 380, 420}, {{"oneDNN", {300, 0, 310}}, {"OpenBLAS", {390, 400, 0}}}}};
    rows[2] = Row{1024, true, 2, {{0, 0, 0}, {{"oneDNN", {300, 300, 300}}}}};  // ours failed
    rows[3] = Row{2048, false, 1, {{300, 0, 0}, {{"oneDNN", {250, 0, 0}}}}};   // one run only
    const std::string table =
        bench::peers::format_table({"oneDNN", "BLIS", "OpenBLAS", "Eigen"}, rows);
    // Row 1: the runs' ratios 200/250, 212/240 and 190/260. Row 2: 400/390, 380/400 (oneDNN
    // failed there) and 420/310; OpenBLAS fastest in two of them. Row 4: one run, no range.
    CHECK(table ==
          "  size     op thr |    ours |  oneDNN |    BLIS | OpenBLAS |   Eigen |"
          " ours / best peer [lowest, highest run]\n"
          "   256    A@B   1 |   200.0 |   250.0 |       - |    175.0 |       - |"
          " 0.80x (oneDNN) [0.73, 0.88]\n"
          "   256  A@B^T   2 |   400.0 |   305.0 |       - |    395.0 |       - |"
          " 1.03x (OpenBLAS) [0.95, 1.35]\n"
          "  1024  A@B^T   2 |       - |   300.0 |       - |        - |       - | -\n"
          "  2048    A@B   1 |   300.0 |   250.0 |       - |        - |       - |"
          " 1.20x (oneDNN)\n"
          "geometric mean of ours / best peer: 0.99x; the best peer: oneDNN in 2 of 3"
          " cells, OpenBLAS in 1\n");
}

TEST_CASE("peers: a peer that is not installed is one line with the package that brings it") {
    std::vector<std::string> lines;
    for (const bench::peers::Family& f : bench::peers::families())
        lines.push_back(bench::peers::skipped_line(f));
    CHECK(lines == std::vector<std::string>{
                       "  oneDNN: skipped, libdnnl.so.2 (oneDNN 2.x) not found (apt-get install "
                       "libdnnl2; make bench installs it)",
                       "  BLIS: skipped, libblis.so.4 not found (apt-get install libblis4-openmp; "
                       "make bench installs it)",
                       "  OpenBLAS: skipped, libopenblas.so.0 not found (apt-get install "
                       "libopenblas0-pthread; make bench installs it)",
                       "  Eigen: skipped, Eigen's headers (bench/peers/eigen_gemm.cpp's program) "
                       "not found (apt-get install libeigen3-dev, then make bench builds it)"});
}

TEST_CASE("peers: BLIS is forced to the CPU's best arch where its own pick is below it") {
    // BLIS 0.9.0's archs, in the order of their numbers (BLIS_ARCH_TYPE's values).
    const std::vector<std::string> v090 = {
        "skx",     "knl",       "knc",       "haswell",     "sandybridge", "penryn",    "zen3",
        "zen2",    "zen",       "excavator", "steamroller", "piledriver",  "bulldozer", "armsve",
        "a64fx",   "firestorm", "thunderx2", "cortexa57",   "cortexa53",   "cortexa15", "cortexa9",
        "power10", "power9",    "power7",    "bgq",         "generic"};
    const auto intel512 = blis::best_for(true, true, false);
    const auto amd512 = blis::best_for(true, true, true);
    const auto intel2 = blis::best_for(false, true, false);
    const auto amd2 = blis::best_for(false, true, true);
    // The Xeon: haswell picked ("number of FMA units unknown"); Zen 4 under 0.9.0,
    // which knows no Zen 4: generic picked, skx forced.
    CHECK(blis::force_arch("haswell", intel512, v090) == "skx");
    CHECK(blis::force_arch("generic", amd512, v090) == "skx");
    CHECK(blis::force_arch("zen3", amd512, v090) == "skx");
    CHECK(blis::force_arch("skx", intel512, v090) == "");
    // A BLIS that has AMD's AVX-512 arch forces that one there.
    std::vector<std::string> v1 = v090;
    v1.insert(v1.begin() + 6, "zen4");
    CHECK(blis::force_arch("zen3", amd512, v1) == "zen4");
    CHECK(blis::force_arch("zen4", amd512, v1) == "");
    // AVX2: any AVX2 arch is as wide as the best; an older one is not.
    CHECK(blis::force_arch("haswell", amd2, v090) == "");
    CHECK(blis::force_arch("sandybridge", amd2, v090) == "zen3");
    CHECK(blis::force_arch("penryn", intel2, v090) == "haswell");
    CHECK(blis::force_arch("generic", blis::best_for(false, false, false), v090) == "");
    CHECK(blis::force_arch("generic", intel512, {"haswell", "generic"}) == "");  // none of it
}

TEST_CASE("bench-gemm: a peer that hangs, crashes, is wrong or is missing is one line") {
    // The Eigen peer is a program bench-gemm runs (--eigen): here a script that describes
    // itself, then misbehaves as told. bench-gemm goes on without it, its cells "-"; a wrong
    // product fails the run after the tables.
    if (*PROJECT_RUNNER) {  // every library's child is bench-gemm again, started by itself
        MESSAGE("skipped: under " PROJECT_RUNNER " bench-gemm cannot start itself (no binfmt)");
        return;
    }
    const std::string dir = "/tmp/transformer-test-peers-" + std::to_string(::getpid());
    REQUIRE(std::system(("rm -rf '" + dir + "' && mkdir -p '" + dir + "'").c_str()) == 0);
    const std::string args = " --sizes 8 --threads 1 --runs 1 --repeat 1 --timeout 2";
    auto peer = [&](const std::string& name, const std::string& body) {
        const std::string path = dir + "/" + name;
        std::ofstream(path) << "#!/bin/sh\n"
                               "case \"$*\" in *--describe*) echo 'name Fake Eigen'; echo "
                               "'kernel fake'; exit 0;; esac\n"
                            << body << "\n";
        REQUIRE(::chmod(path.c_str(), 0755) == 0);
        return "--peers eigen --eigen " + path + args;
    };
    const std::string row = "     8    A@B   1 |";
    auto r = testutil::run("bench-gemm", peer("hangs", "exec sleep 30"), "", 120);
    CHECK(r.exit_code == 0);
    CHECK(has(r.out,
              "\n  Eigen: its child process did not finish within 2 s (--timeout) and was "
              "killed (n = 8, 1 thread(s)); left out from there on\n"));
    CHECK(has(r.out, row));
    CHECK(has(r.out.substr(r.out.find(row)), "|       - | -\n"));  // no Eigen figure, no ratio
    r = testutil::run("bench-gemm", peer("crashes", "kill -SEGV $$"), "", 120);
    CHECK(r.exit_code == 0);
    CHECK(has(r.out,
              "\n  Eigen: its child process crashed (signal 11, Segmentation fault) (n = "
              "8, 1 thread(s)); left out from there on\n"));
    const std::string wrong = "C[0][0] = 1 where the double-precision dot product is 2";
    r = testutil::run(
        "bench-gemm",
        peer("wrong", "echo 'name Fake Eigen'; echo 'wrong 8 0 " + wrong + "'; exit 3"), "", 120);
    CHECK(r.exit_code == 1);
    CHECK(r.err ==
          "bench-gemm: error: Eigen: its child process computed a WRONG product at n = "
          "8, A@B: " +
              wrong + " (n = 8, 1 thread(s)); left out from there on\n");
    // A peer that works: its figures, and ours over them.
    r = testutil::run("bench-gemm",
                      peer("works",
                           "echo 'name Fake Eigen'; echo 'kernel fake';"
                           "echo 'gflops 8 0 0.001'; echo 'gflops 8 1 0.001'"),
                      "", 120);
    CHECK(r.exit_code == 0);
    CHECK(has(r.out, "\n  Eigen: Fake Eigen, kernel fake\n"));
    CHECK(has(r.out, "|     0.0 | "));  // (0.001 GFLOP/s)
    CHECK(has(r.out, "x (Eigen)\n"));
    CHECK(has(r.out, "the best peer: Eigen in 2 of 2 cells\n"));
    // Not built: skipped, with the package that brings it.
    r = testutil::run("bench-gemm", "--peers eigen --eigen " + dir + "/none" + args, "", 120);
    CHECK(r.exit_code == 0);
    CHECK(has(r.out,
              "\n  Eigen: skipped, Eigen's headers (bench/peers/eigen_gemm.cpp's program) "
              "not found (apt-get install libeigen3-dev, then make bench builds it)\n"));
    r = testutil::run("bench-gemm", "--peers eigen,mkl");
    CHECK(r.exit_code == 2);
    CHECK(r.err ==
          "bench-gemm: error: --peers: 'mkl' is not one of onednn, blis, openblas, "
          "eigen\n");
    std::system(("rm -rf '" + dir + "'").c_str());
}

TEST_CASE("bench-gemm: readme-numbers.sh gives the peers' geometric mean, or refuses a bad one") {
    // The kept run (bench/last-run.txt) predates the peers' table: with its last line added, the
    // README's lines end their sgemm part with it; a line that is not the table's is refused.
    const std::string root = PROJECT_ROOT;
    const std::string dir = "/tmp/transformer-test-peers-readme-" + std::to_string(::getpid());
    REQUIRE(std::system(("rm -rf '" + dir + "' && mkdir -p '" + dir + "'").c_str()) == 0);
    const std::string run = testutil::read_file_abs(root + "/bench/last-run.txt");
    const size_t at = run.find("batch = ");
    REQUIRE(at != std::string::npos);
    auto lines = [&](const std::string& peers_line) {
        std::ofstream(dir + "/run.txt") << run.substr(0, at) << peers_line << "\n"
                                        << run.substr(at);
        const int status =
            std::system(("bash " + testutil::quote(root + "/bench/readme-numbers.sh") + " '" + dir +
                         "/run.txt' >'" + dir + "/out' 2>'" + dir + "/err'")
                            .c_str());
        std::string out = testutil::read_file_abs(dir + "/out");
        for (size_t k; (k = out.find("\n  ")) != std::string::npos;)
            out.replace(k, 3, " ");
        return std::pair{WEXITSTATUS(status), out + testutil::read_file_abs(dir + "/err")};
    };
    auto [status, text] = lines(
        "geometric mean of ours / best peer: 0.91x; the best peer: oneDNN in 13 of 16 cells, "
        "BLIS in 3");
    CHECK(status == 0);
    CHECK(has(text,
              " GFLOP/s. sgemm, ours / the fastest of oneDNN, BLIS, OpenBLAS and Eigen "
              "where installed (bench-gemm's second table: each size, layout and thread "
              "count), geometric mean 0.91x; the best peer: oneDNN in 13 of 16 cells, BLIS "
              "in 3."));
    std::tie(status, text) = lines("geometric mean of ours / best peer: nanx");
    CHECK(status == 1);
    const std::string line = std::to_string(std::count(run.begin(), run.begin() + at, '\n') + 1);
    CHECK(text == "readme-numbers.sh: " + dir + "/run.txt: line " + line +
                      ": the geometric mean line of the peers is \"geometric mean of ours / "
                      "best peer: nanx\", not \"geometric mean of ours / best peer: Rx; the "
                      "best peer: NAME in N of M cells...\"; run the benchmarks again (the "
                      "script without FILE runs make bench)\n");
    std::system(("rm -rf '" + dir + "'").c_str());
}
