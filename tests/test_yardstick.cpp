// The benchmarks' yardstick (bench/openblas.h, bench/readme-numbers.sh): which OpenBLAS core
// counts as this CPU's best, when the peer is rerun, and that the README's numbers are refused
// from a busy machine and name the core they were measured against; bench-translate's peer is
// run without a shell, and ends with it, as a torch peer's rerun ends with the peer;
// bench-translate names a missing temporary folder before it times, and its torch peer a bad
// batches file; an uncaught exception keeps what stdout was given; the multiply-add peak
// (bench/peak.h) counts only updates it ran; bench-translate counts a step's products as torch
// does.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include "bench/openblas.h"
#include "bench/peak.h"
#include "bench/step_flops.h"
#include "common/program/cli.h"
#include "tests/child.h"
#include "tests/util.h"

using openblas::best_for;
using openblas::rerun_core;

TEST_CASE("yardstick: a core below the CPU is rerun with the best matching one") {
    const auto avx512 = best_for(true, true, true, false, false);
    const auto avx2_intel = best_for(false, true, true, false, false);
    const auto avx2_amd = best_for(false, true, true, true, false);
    const auto arm = best_for(false, false, false, false, true);
    // The case of issue 27: OpenBLAS 0.3.21 on an unrecognised Cooper Lake picked Prescott.
    CHECK(rerun_core("Prescott", avx512) == "SkylakeX");
    CHECK(rerun_core("Haswell", avx512) == "SkylakeX");  // AVX2 kernels on an AVX-512 CPU
    CHECK(rerun_core("Zen", avx512) == "SkylakeX");
    CHECK(rerun_core("Cooperlake", avx512) == "");  // each AVX-512 core is the best
    CHECK(rerun_core("SkylakeX", avx512) == "");
    CHECK(rerun_core("Nehalem", avx2_intel) == "Haswell");
    CHECK(rerun_core("Sandybridge", avx2_amd) == "Zen");
    CHECK(rerun_core("Zen", avx2_intel) == "");
    CHECK(rerun_core("Haswell", avx2_amd) == "");
    CHECK(rerun_core("ARMV8", arm) == "");
    CHECK(rerun_core("NEOVERSEN1", arm) == "");
    // An SSE-era CPU has nothing better to offer; an unknown name on an AVX2 CPU is rerun.
    CHECK(rerun_core("Prescott", best_for(false, false, false, false, false)) == "");
    CHECK(rerun_core("SomethingNew", avx2_intel) == "Haswell");
    CHECK(openblas::core_level("skylakex") == 3);  // OpenBLAS's names, in any case
    CHECK(openblas::list({"A", "B", "C"}) == "A, B or C");
}

namespace {

// A copy of the script (and of bench/readme-block.sh, which it sources) beside a README with
// bench markers, in a folder of its own, so --update can be run without touching the tree.
// Returns the folder.
std::string scratch_copy() {
    const std::string dir = "/tmp/transformer-test-yardstick-" + std::to_string(::getpid());
    const std::string root = PROJECT_ROOT;
    REQUIRE(std::system(("rm -rf '" + dir + "' && mkdir -p '" + dir + "/bench' && cp " +
                         testutil::quote(root + "/bench/readme-numbers.sh") + " " +
                         testutil::quote(root + "/bench/readme-block.sh") + " '" + dir +
                         "/bench/'")
                            .c_str()) == 0);
    std::ofstream(dir + "/README.md") << "before\n<!-- bench:begin -->\nold\n<!-- bench:end -->\n";
    return dir;
}

// A bench run as make bench prints it, taken at `load`, with the Prescott rerun of issue 27.
void write_run(const std::string& path, const std::string& load) {
    std::ofstream(path) << "# date: 2026-12-01\n# cpu: Test CPU\n# cores: 2\n# load before: "
                        << load << "\n"
                           "sgemm, row-major, 2 thread(s); each cell the median of 3 runs, a "
                           "run the best of 5\n"
                           "yardstick: OpenBLAS 0.3.21 DYNAMIC_ARCH Prescott; core Prescott "
                           "(this CPU's best: SkylakeX, Cooperlake or SapphireRapids)\n"
                           "  Prescott is below this CPU: OpenBLAS ran again in a child process "
                           "with OPENBLAS_CORETYPE=SkylakeX (it reported SkylakeX); the ratio is "
                           "against the faster\n"
                           "  size     op | ours GFLOP/s | OpenBLAS Prescott | OpenBLAS SkylakeX "
                           "|  ratio\n"
                           "  1024    A@B |        150.0 |              40.0 |             200.0 "
                           "|  0.75x\n"
                           "batch = 8, d_model = 512, heads = 8; forward+backward; each cell "
                           "the median of 3 runs, a run the mean of 3 after 1 warm-up\n"
                           "   512 | naive    |     214.0 |     285.2     285.2 | 1 2 3x\n"
                           "   512 | fused    |     200.0 |      95.0      95.0 | 1 2 1.19x\n"
                           "   512 | LSTM     |     300.0 |     132.0     132.0 | 1 2 3x\n"
                           "chapter 7 training step: ours 30.0 ms, PyTorch 45.0 ms (1.50x)\n"
                           "# load after: "
                        << load << "\n";
}

}  // namespace

TEST_CASE("yardstick: readme-numbers.sh refuses a busy run and names the core it compared to") {
    const std::string dir = scratch_copy(), script = dir + "/bench/readme-numbers.sh";
    const std::string busy = dir + "/busy.txt", idle = dir + "/idle.txt", out = dir + "/out.txt";
    write_run(busy, "2.50");
    write_run(idle, "0.40");
    // A busy run: one line on stderr, exit 1, the README untouched.
    const int status = std::system((script + " " + busy + " --update >" + out + " 2>&1").c_str());
    CHECK(WEXITSTATUS(status) == 1);
    const std::string refused = testutil::read_file_abs(out);
    CHECK(refused.find("load average 2.50") != std::string::npos);
    CHECK(std::count(refused.begin(), refused.end(), '\n') == 1);
    CHECK(testutil::read_file_abs(dir + "/README.md").find("\nold\n") != std::string::npos);
    // Printing without --update is allowed (the lines say the machine was busy).
    CHECK(std::system((script + " " + busy + " >" + out + " 2>&1").c_str()) == 0);
    // An idle run is written, naming the core the ratio was taken against and the one picked.
    CHECK(std::system((script + " " + idle + " --update >" + out + " 2>&1").c_str()) == 0);
    std::string readme = testutil::read_file_abs(dir + "/README.md");
    for (size_t k; (k = readme.find("\n  ")) != std::string::npos;) readme.replace(k, 3, " ");
    CHECK(readme.find("\nold\n") == std::string::npos);
    CHECK(readme.find("core SkylakeX (it picked Prescott, below this CPU)") != std::string::npos);
    // Both tables are medians of runs (issue 27), and the lines say of how many.
    CHECK(readme.find("sgemm (the median of 3 runs) against OpenBLAS") != std::string::npos);
    CHECK(readme.find("forward + backward, the median of 3 runs;") != std::string::npos);
    CHECK(readme.find("1024³ A@B 150.0 GFLOP/s (0.75x)") != std::string::npos);
    // Each layer's time with its ratio to its FLOP time, the layer target.
    CHECK(readme.find("fused 200 ms (1.19x) / 95 MB") != std::string::npos);
    CHECK(readme.find("ours 30.0 ms, PyTorch 45.0 ms (1.50x)") != std::string::npos);
    std::system(("rm -rf '" + dir + "'").c_str());
}

TEST_CASE("bench-translate: --peer names one program, never shell text; named, it must succeed") {
    const std::string mark = "/tmp/transformer-test-peer-" + std::to_string(::getpid());
    std::remove(mark.c_str());
    const std::string small = "--steps 1 --warmup 0 --d-model 16 --heads 1 --layers 1 ";
    // Pasted into a popen shell line, this value would run `touch`: the peer runs without a
    // shell.
    auto r = testutil::run("bench-translate",
                           small + "--peer \"/bin/true'; touch " + mark + "; echo '\"");
    CHECK(!std::filesystem::exists(mark));
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("bench-translate: error: --peer /bin/true'; touch ") != std::string::npos);
    r = testutil::run("bench-translate", small + "--peer /bin/false");  // ran, and failed
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("failed (exit status 1); check that it is a python with torch, or pass "
                     "--no-peer") != std::string::npos);
    // Away from the repository root the peer's script is missing: said before the timed steps.
    r = testutil::run_in("/tmp", "bench-translate", small);
    CHECK(r.exit_code == 2);
    CHECK(r.err ==
          "bench-translate: error: chapters/7-translate/peer_torch.py is not here: run "
          "bench-translate from the repository root (make bench does), or pass --no-peer\n");
}

namespace {

// The process id a child wrote to `path` (written whole: renamed into place), waiting up to
// `seconds` for it; 0 if none came.
pid_t wait_for_pid_file(const std::string& path, int seconds) {
    for (int tries = 0; tries < seconds * 10; tries++) {
        const std::string text = testutil::read_file_abs(path);
        if (!text.empty()) return pid_t(std::atol(text.c_str()));
        ::usleep(100000);
    }
    return 0;
}

// Checks that `kid` ends within 3 s (it would run 30 s on its own); ends it if not.
void check_ends_soon(pid_t kid) {
    bool gone = false;
    for (int tries = 0; tries < 30 && !gone; tries++) {
        ::usleep(100000);
        gone = !testutil::runs(kid);
    }
    CHECK_MESSAGE(gone, "the child " << kid << " runs on after its parent ended");
    if (!gone) ::kill(kid, SIGKILL);
}

// Sets an environment variable for one scope (the programs a test starts inherit it).
struct ScopedEnv {
    std::string name;
    bool had;
    std::string old;
    ScopedEnv(const std::string& n, const std::string& value) : name(n) {
        const char* v = std::getenv(n.c_str());
        had = v != nullptr;
        if (had) old = v;
        ::setenv(n.c_str(), value.c_str(), 1);
    }
    ~ScopedEnv() { had ? ::setenv(name.c_str(), old.c_str(), 1) : ::unsetenv(name.c_str()); }
};

}  // namespace

TEST_CASE("bench-translate: terminated, it takes its peer with it") {
#if defined(__linux__)
    // A process manager's SIGTERM reaches the benchmark alone; its peer (here a script that
    // names its process id, then sleeps 30 s in the same process) must not run on, re-parented.
    const std::string dir = "/tmp/transformer-test-peer-dies-" + std::to_string(::getpid());
    REQUIRE(std::system(("rm -rf '" + dir + "' && mkdir -p '" + dir + "'").c_str()) == 0);
    const std::string peer = dir + "/peer.sh", pid_file = dir + "/peer.pid";
    std::ofstream(peer) << "#!/bin/sh\necho $$ >'" << pid_file << ".new' && mv '" << pid_file
                        << ".new' '" << pid_file << "'\nexec sleep 30\n";
    REQUIRE(::chmod(peer.c_str(), 0755) == 0);
    const pid_t bench = testutil::spawn("bench-translate",
                                        {"--steps", "1", "--warmup", "0", "--d-model", "16",
                                         "--heads", "1", "--layers", "1", "--peer", peer},
                                        "", dir + "/err");
    const pid_t kid = wait_for_pid_file(pid_file, 120);  // (minutes: qemu, the sanitizers)
    if (kid == 0) ::kill(bench, SIGKILL);
    REQUIRE_MESSAGE(kid > 0, "the peer did not start: " << testutil::read_file_abs(dir + "/err"));
    ::kill(bench, SIGTERM);
    int status = 0;
    ::waitpid(bench, &status, 0);
    CHECK(WIFSIGNALED(status));
    check_ends_soon(kid);
    std::system(("rm -rf '" + dir + "'").c_str());
#endif
}

TEST_CASE("bench: a torch peer's rerun with another OpenBLAS core ends with the peer") {
#if defined(__linux__)
    // bench/torch_blas.py's run_child starts the rerun; here without torch (the module does
    // not need it): a python that reruns a child that names its process id and sleeps 30 s.
    if (::access("/usr/bin/python3", X_OK) != 0) {
        MESSAGE("skipped: no /usr/bin/python3 here");
        return;
    }
    const std::string dir = "/tmp/transformer-test-rerun-dies-" + std::to_string(::getpid());
    REQUIRE(std::system(("rm -rf '" + dir + "' && mkdir -p '" + dir + "'").c_str()) == 0);
    const std::string pid_file = dir + "/rerun.pid";
    const std::string rerun = "import os, time; open('" + pid_file + ".new', 'w').write(str("
                              "os.getpid())); os.rename('" + pid_file + ".new', '" + pid_file +
                              "'); time.sleep(30)";
    const std::string peer = "import sys; sys.path.insert(0, '" + std::string(PROJECT_ROOT) +
                             "/bench'); import torch_blas; torch_blas.run_child('Haswell', "
                             "['-c', \"" + rerun + "\"])";
    std::fflush(stdout);
    const pid_t python = ::fork();
    REQUIRE(python >= 0);
    if (python == 0) {
        ::signal(SIGTERM, SIG_DFL);  // (doctest's handler is not)
        ::execl("/usr/bin/python3", "python3", "-c", peer.c_str(), (char*)nullptr);
        ::_exit(127);
    }
    const pid_t kid = wait_for_pid_file(pid_file, 60);
    if (kid == 0) ::kill(python, SIGKILL);
    REQUIRE_MESSAGE(kid > 0, "the rerun did not start");
    ::kill(python, SIGTERM);
    ::waitpid(python, nullptr, 0);
    check_ends_soon(kid);
    std::system(("rm -rf '" + dir + "'").c_str());
#endif
}

TEST_CASE("bench-translate: a temporary folder that is not there is named before the timing") {
    // The peer's batches go to $TMPDIR. --steps 100000 would time for minutes: the folder is
    // looked at first, and named.
    const std::string missing = "/tmp/transformer-test-no-folder-" + std::to_string(::getpid());
    const std::string args = "--steps 100000 --warmup 0 --d-model 16 --heads 1 --layers 1";
    {
        const ScopedEnv tmpdir("TMPDIR", missing);
        const testutil::Run r = testutil::run("bench-translate", args, "", 60);
        CHECK(r.exit_code == 1);
        CHECK(r.out == "");
        CHECK(r.err == "bench-translate: error: the temporary folder '" + missing +
                           "' (from TMPDIR) does not exist; set TMPDIR to a writable folder, or "
                           "pass --no-peer\n");
    }
    std::ofstream(missing) << "a file, not a folder\n";
    {
        const ScopedEnv tmpdir("TMPDIR", missing);
        const testutil::Run r = testutil::run("bench-translate", args, "", 60);
        CHECK(r.exit_code == 1);
        CHECK(r.err == "bench-translate: error: the temporary folder '" + missing +
                           "' (from TMPDIR) is not a folder; set TMPDIR to a writable folder, or "
                           "pass --no-peer\n");
    }
    std::remove(missing.c_str());
}

TEST_CASE("programs: an uncaught exception is one line, after what stdout had been given") {
    // Every program's Parser installs the handler that ends it on an uncaught exception (with
    // _Exit, which flushes nothing): the lines printed before it must still reach a file.
    const std::string base = "/tmp/transformer-test-uncaught-" + std::to_string(::getpid());
    const std::string out = base + ".out", err = base + ".err";
    std::fflush(stdout);
    std::fflush(stderr);
    const testutil::ChildResult r = testutil::in_child([&]() -> std::string {
        cli::Parser cli("uncaught-test", "a program that throws");
        // stdout to a file, as `program >file` gives it (fully buffered); stderr unbuffered.
        const int err_fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (!std::freopen(out.c_str(), "w", stdout) || err_fd < 0 ||
            ::dup2(err_fd, STDERR_FILENO) < 0)
            return "cannot redirect stdout and stderr";
        std::printf("printed before the error\n");
        try {
            throw std::runtime_error("the error");
        } catch (...) {
            std::terminate();  // as an exception that leaves main does
        }
    });
    CHECK(!r.exited);
    CHECK(r.text == "");
    CHECK(testutil::read_file_abs(out) == "printed before the error\n");
    CHECK(testutil::read_file_abs(err) == "uncaught-test: error: the error\n");
    std::remove(out.c_str());
    std::remove(err.c_str());
}

TEST_CASE("yardstick: the multiply-add peak runs every update it counts") {
    // peak_chains is timed by bench-gemm: its sum is the same recurrence done one float at a
    // time, so the loop was neither optimised away nor shortened.
    for (long iters : {1L, 7L, 1000L}) {
        float expected = 0;
        for (int c = 0; c < bench::PeakSimd::CHAINS; c++) {
            float x = bench::PEAK_START * (c + 1);
            for (long it = 0; it < iters; it++)
                x = bench::PeakSimd::FUSED ? std::fma(x, bench::PEAK_A, bench::PEAK_B)
                                           : x * bench::PEAK_A + bench::PEAK_B;
            float lanes = 0;
            for (int w = 0; w < bench::PeakSimd::W; w++)
                lanes += x;
            expected += lanes;
        }
        CAPTURE(iters);
#if defined(__aarch64__)
        CHECK(bench::peak_chains(iters) == doctest::Approx(expected).epsilon(1e-7));  // vaddvq
#else
        CHECK(bench::peak_chains(iters) == expected);  // the same operations in the same order
#endif
    }
    CHECK(bench::peak_flops(1000) == 2.0 * bench::PeakSimd::W * bench::PeakSimd::CHAINS * 1000);
    const double g = bench::peak_gflops(2, 0.002, 1);
    CHECK(std::isfinite(g));
    CHECK(g > 0);
}

TEST_CASE("bench-translate: a step's products are the FLOPs torch counts for it") {
    // torch 1.13's aten mm, addmm and bmm, 2 M N K each, over one step (forward and backward) of
    // chapters/7-translate/peer_torch.py's model at these shapes: the same model, counted by
    // another hand. Heads, vocabulary and parameters change no product.
    CHECK(bench::step_flops(64, 10, 7, 64, 4, 2, 13, 0).products == 772'448'256.0);
    CHECK(bench::step_flops(64, 9, 8, 64, 4, 2, 13, 0).products == 772'571'136.0);
    CHECK(bench::step_flops(3, 5, 4, 64, 4, 2, 13, 0).products == 18'920'448.0);
}

TEST_CASE("bench-translate's torch peer: a bad --batches file is one line naming file and line") {
    // chapters/7-translate/peer_torch.py reads the batches bench-translate writes; anything
    // else is one line naming the file (and the line where there is one), exit 1: no traceback
    // (ValueError, RuntimeError, IndexError, UnicodeDecodeError), no wait on a FIFO, no reading
    // of a file larger than bench-translate writes.
    if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) {
        MESSAGE("skipped: /usr/bin/python3 cannot import torch here (Debian: python3-torch)");
        return;
    }
    const std::string dir = "/tmp/transformer-test-batches-" + std::to_string(::getpid());
    REQUIRE(std::system(("rm -rf '" + dir + "' && mkdir -p '" + dir + "'").c_str()) == 0);
    const std::string script = std::string(PROJECT_ROOT) + "/chapters/7-translate/peer_torch.py";
    const std::string tail = "; --batches takes the file bench-translate writes";
    struct Case {
        std::string name, text, said;  // said: after "'<file>'"
    };
    const std::vector<Case> cases = {
        {"word", "batch 1 2 2\n3 x\n1 2\n2 -100\n",
         ", line 2: expected token ids: integers separated by single spaces"},
        {"count", "batch 1 2 2\n3 4 5\n1 2\n2 -100\n",
         ", line 2: 3 token ids, but its batch line says 2"},
        {"vocab", "batch 1 2 2\n3 4\n1 2\n2 99\n",
         ", line 4: token id 99 is outside 0 to 12 or -100"},
        {"bytes", "batch 1 2 2\n3 \xff\n1 2\n2 -100\n",
         ", line 2: expected token ids: integers separated by single spaces"},
        {"head", "batch 1 2\n3 4\n1 2\n2 -100\n",
         ", line 1: expected a batch line, 'batch B S T' (three positive integers)"},
        {"cut", "batch 1 2 2\n3 4\n",
         ", line 2: the batch's lines of ids end early (the file is cut short)"},
        {"empty", "", ": it holds no batches"},
        {"good", "batch 1 2 2\n3 4\n1 2\n2 -100\n", ""},
    };
    std::string paths;
    for (const Case& c : cases) {
        std::ofstream(dir + "/" + c.name, std::ios::binary) << c.text;
        paths += " '" + dir + "/" + c.name + "'";
    }
    const std::string fifo = dir + "/fifo", big = dir + "/big";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    std::ofstream(big).close();
    REQUIRE(::truncate(big.c_str(), off_t(3) << 30) == 0);  // sparse: 3 GB that take no room
    // One python (torch is imported once, seconds): the script's functions read each file and
    // print what it ends the peer with; then its main() runs on the FIFO, uncaught: one line on
    // stderr, exit 1, no wait for a writer.
    const std::string out = dir + "/out", err = dir + "/err";
    const std::string each = "import runpy, sys\n"
                             "peer = runpy.run_path(\"" + script + "\")\n"
                             "for path in sys.argv[1:]:\n"
                             "    try:\n"
                             "        print(len(peer[\"read_batches\"](path)), \"batch(es)\")\n"
                             "    except SystemExit as e:\n"
                             "        print(e.code)\n"
                             "sys.stdout.flush()\n"
                             "sys.argv = [\"peer_torch.py\", \"--batches\", \"" + fifo + "\"]\n"
                             "peer[\"main\"]()\n";
    const int status = std::system(("timeout -k 5 120 /usr/bin/python3 -c '" + each + "'" +
                                    paths + " '" + big + "' >'" + out + "' 2>'" + err + "'")
                                       .c_str());
    CHECK(WEXITSTATUS(status) == 1);
    CHECK(testutil::read_file_abs(err) ==
          "peer_torch.py: error: '" + fifo + "': not a regular file" + tail + "\n");
    std::string expected;
    for (const Case& c : cases)
        expected += c.said.empty() ? "1 batch(es)\n"
                                   : "peer_torch.py: error: '" + dir + "/" + c.name + "'" +
                                         c.said + tail + "\n";
    expected += "peer_torch.py: error: '" + big + "': 3221225472 bytes, more than the " +
                "2147483648 a batches file can hold" + tail + "\n";
    CHECK(testutil::read_file_abs(out) == expected);
    std::system(("rm -rf '" + dir + "'").c_str());
}
