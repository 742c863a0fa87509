// The CUDA emulator itself (cuda/emu/emulator.h): barriers, shuffles, votes, atomics behave as on a
// GPU, misuse is reported, and a planted missing __syncthreads is caught. The kernels are
// tests/emu_kernels.cpp's (tests/emu.h).
#include <doctest.h>

#include "chapters/6-cost/reference.h"
#include "common/kernels/gemm.h"
#include "cuda/emu/checks.h"
#include "cuda/kernels.h"
#include "tests/child.h"
#include "tests/emu.h"
#include "tests/util.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <sstream>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

namespace {

template <class T>
std::vector<T> copy_back(const T* p, size_t n) {
    std::vector<T> v(n);
    CUDA_CHECK(cudaMemcpy(v.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost));
    return v;
}

using testutil::ChildResult;
using testutil::in_child;

}  // namespace

TEST_CASE("cuda emulator: __syncthreads is a barrier, shared memory is per block") {
    const int blocks = 5;
    std::vector<int> in(64 * blocks);
    for (size_t i = 0; i < in.size(); i++)
        in[i] = int(i);
    gpu::Buffer<int> din(in.size()), dout(in.size());
    CUDA_CHECK(cudaMemcpy(din.data(), in.data(), in.size() * 4, cudaMemcpyHostToDevice));
    for (int workers : {1, 2}) {
        emu::set_workers(workers);
        launch_kernel(block_reverse_kernel, dim3(blocks), dim3(64), 0, din.data(), dout.data());
        auto out = copy_back(dout.data(), in.size());
        for (int b = 0; b < blocks; b++)
            for (int t = 0; t < 64; t++)
                REQUIRE(out[b * 64 + t] == in[b * 64 + 63 - t]);
    }
    emu::set_workers(0);
}

TEST_CASE("cuda emulator: warp shuffles, votes and atomics over 32 lanes") {
    const int n = 3 * 64 * 8;
    gpu::Buffer<int> out(n + 2);
    CUDA_CHECK(cudaMemset(out.data(), 0, (n + 2) * sizeof(int)));
    launch_kernel(warp_ops_kernel, dim3(3), dim3(64), 0, out.data());
    auto o = copy_back(out.data(), n + 2);
    for (int t = 0; t < 3 * 64; t++) {
        int lane = t % 32;
        const int* r = &o[t * 8];
        CHECK(r[0] == 30);
        CHECK(r[1] == (lane + 5 < 32 ? lane + 5 : lane));
        CHECK(r[2] == (lane >= 2 ? lane - 2 : lane));
        CHECK(r[3] == (lane ^ 1));
        CHECK(unsigned(r[4]) == 0x55555555u);
        CHECK(r[5] == 1);
        CHECK(r[6] == 0);
        CHECK(r[7] == (lane ^ 4));
    }
    CHECK(o[n] == 3 * 64);
    CHECK(o[n + 1] == 2 * 100 + 63);
}

TEST_CASE("cuda emulator: dynamic shared memory starts as NaN and is shared by the block") {
    gpu::Buffer<float> out(64);
    {
        Without off(emu::check_init);  // (its read of what nobody wrote is the init check's error)
        launch_kernel(dynamic_shared_kernel, dim3(1), dim3(32), 32 * sizeof(float), out.data());
    }
    auto o = copy_back(out.data(), 64);
    for (int t = 0; t < 32; t++) {
        CHECK(std::isnan(o[t]));
        CHECK(o[32 + t] == float(31 - t));
    }
}

// A barrier is told apart by its call path, not its line. Inlined copies have one call
// instruction each, told apart in the builds with the access hooks (kernels_instrumented()),
// whose line tables tell a compiler's copies of one call from two calls.
TEST_CASE("cuda emulator: one __syncthreads line through a helper from two arms is caught") {
    gpu::Buffer<int> out(64);
    CUDA_CHECK(cudaMemset(out.data(), 0, 64 * sizeof(int)));
    for (bool inlined : {false, true}) {
        CAPTURE(inlined);
        const bool must_see = !inlined || kernels_instrumented();
        const std::string e = launch_error([&] {
            launch_kernel(helper_barrier_kernel, dim3(1), dim3(32), 0, out.data(), inlined);
        });
        const bool seen = e.find("reached through different calls") != std::string::npos;
        CHECK_MESSAGE((seen || (!must_see && e.empty())), e);
        Without off(emu::check_barrier_paths);
        CHECK(launch_error([&] {
                  launch_kernel(helper_barrier_kernel, dim3(1), dim3(32), 0, out.data(), inlined);
              }).empty());
    }
    CHECK(launch_error([&] {
              launch_kernel(helper_barrier_loop_kernel, dim3(1), dim3(64), 0, out.data());
          }).empty());
}

// The barrier check compares the places addr2line names, whole: in a checkout at a path with a
// space, a place cut at its first space would make every barrier call one.
TEST_CASE("cuda emulator: addr2line's places keep a file name's spaces") {
    const std::string file = "/tmp/내 작업/transformer/tests/emu_kernels.cpp";
    const std::string helper = "inlined_barrier_helper(int*, int)\n" + file +
                               ":41 (discriminator 2)\nhelper_barrier_kernel(int*, bool)\n";
    const auto frames = emu::parse_frames("0x00000000000012a4\n" + helper + file +
                                              ":56\n0x00000000000012f0\n" + helper + file +
                                              ":60 (discriminator 1)\n0x0000000000001300\n??\n"
                                              "??:0\n",
                                          3);
    REQUIRE(frames.size() == 3);
    REQUIRE(frames[0].size() == 2);
    REQUIRE(frames[1].size() == 2);
    CHECK(frames[0][0].func == "inlined_barrier_helper(int*, int)");
    CHECK(frames[0][0].place == file + ":41");
    CHECK(frames[0][1].func == "helper_barrier_kernel(int*, bool)");
    CHECK(frames[0][1].place == file + ":56");
    CHECK(frames[1][1].place == file + ":60");
    CHECK(frames[2].empty());
}

TEST_CASE("cuda emulator: misuse is reported, not hung") {
    gpu::Buffer<int> out(64);
    CHECK_THROWS_WITH_AS(launch_kernel(divergent_barrier_kernel, dim3(1), dim3(32), 0, out.data()),
                         doctest::Contains("__syncthreads"), std::runtime_error);
    CHECK(cudaGetLastError() != cudaSuccess);
    CHECK_THROWS_WITH_AS(
        launch_kernel(shuffle_from_exited_lane_kernel, dim3(1), dim3(32), 0, out.data()),
        doctest::Contains("exited"), std::runtime_error);
    CHECK_THROWS_WITH_AS(launch_kernel(block_reverse_kernel, dim3(1), dim3(2048), 0,
                                       static_cast<const int*>(out.data()), out.data()),
                         doctest::Contains("invalid configuration"), std::runtime_error);
    cudaGetLastError();
}

// Launches a GPU refuses must fail under the emulator too, or the tests would pass a kernel
// that never runs on a device.
TEST_CASE("cuda emulator: the device's launch rules are enforced") {
    gpu::Buffer<float> out(32);
    // More than 48 KB of dynamic shared memory needs the kernel's opt-in first.
    CHECK_THROWS_WITH_AS(launch_kernel(big_shared_kernel, dim3(1), dim3(32), 64 * 1024, out.data()),
                         doctest::Contains("cudaFuncSetAttribute"), std::runtime_error);
    CHECK(cudaGetLastError() == cudaErrorInvalidValue);
    CHECK(cudaFuncSetAttribute(big_shared_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               300 * 1024) == cudaErrorInvalidValue);  // over sm_90's 227 KB
    CUDA_CHECK(cudaFuncSetAttribute(big_shared_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    64 * 1024));
    launch_kernel(big_shared_kernel, dim3(1), dim3(32), 64 * 1024, out.data());
    CHECK(copy_back(out.data(), 32) == std::vector<float>(32, 1.0f));
    CHECK_THROWS_AS(launch_kernel(big_shared_kernel, dim3(1), dim3(32), 65 * 1024, out.data()),
                    std::runtime_error);
    // Grid y and z stop at 65535 (x goes to 2^31 - 1); block z at 64.
    CHECK_THROWS_WITH_AS(launch_kernel(big_shared_kernel, dim3(1, 65536), dim3(32), 0, out.data()),
                         doctest::Contains("65535"), std::runtime_error);
    CHECK_THROWS_AS(launch_kernel(big_shared_kernel, dim3(1), dim3(1, 1, 65), 0, out.data()),
                    std::runtime_error);
    cudaGetLastError();
}

// The planted bug: the tiled matmul without the barrier between loading and using the tiles.
TEST_CASE("cuda emulator: a planted missing __syncthreads is caught") {
    const int M = 40, N = 33, K = 50;
    std::vector<float> A(M * K), B(K * N), ref(M * N);
    for (size_t i = 0; i < A.size(); i++)
        A[i] = float(int(i * 7 % 13) - 6) / 8;
    for (size_t i = 0; i < B.size(); i++)
        B[i] = float(int(i * 5 % 11) - 5) / 8;
    reference::sgemm(false, false, M, N, K, 1.0f, A.data(), K, B.data(), N, 0.0f, ref.data(), N);
    gpu::Buffer<float> dA(A.size()), dB(B.size()), dC(ref.size());
    CUDA_CHECK(cudaMemcpy(dA.data(), A.data(), A.size() * 4, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dB.data(), B.data(), B.size() * 4, cudaMemcpyHostToDevice));
    for (bool with_barrier : {true, false}) {
        CAPTURE(with_barrier);
        bool same = false, same_as_default = false;
        {
            Without off(emu::check_races);  // the schedule comparison alone here
            auto matmul = [&] {
                planted_tiled_matmul(dA.data(), dB.data(), dC.data(), M, N, K, with_barrier);
            };
            auto read = [&] { return copy_back(dC.data(), ref.size()); };
            same = emu::same_under_both_schedules(matmul, read);
            // The one-run form: the default schedule's result against a reverse run.
            matmul();
            same_as_default = emu::same_in_reverse(matmul, read, read());
        }
        auto C = copy_back(dC.data(), ref.size());
        bool close = true;
        for (size_t i = 0; i < C.size(); i++)
            close = close && std::fabs(C[i] - ref[i]) < 1e-4f;
        // With the barrier: right, and the same whichever order the threads run in. Without it:
        // the schedule check flags the kernel (and its result is wrong too).
        CHECK(same == with_barrier);
        CHECK(same_as_default == with_barrier);
        CHECK(close == with_barrier);
        // The race check (where compiled in) fails the launch itself. With every check on,
        // the init check may name the same bug first: a thread reads a tile entry its
        // neighbour has not written yet.
        auto run = [&] {
            return launch_error([&] {
                planted_tiled_matmul(dA.data(), dB.data(), dC.data(), M, N, K, with_barrier);
            });
        };
        std::string race;
        {
            Without off(emu::check_init);
            race = run();
        }
        CHECK_MESSAGE((race.find("shared-memory race on byte ") != std::string::npos) ==
                          (kernels_instrumented() && !with_barrier),
                      race);
        CHECK(run().empty() == (with_barrier || !kernels_instrumented()));
    }
}

// Planted warp bugs: two kinds of warp operation that a GPU would not let meet, and one call
// site with two masks. An emulator that waits for every live lane of the warp, at whatever
// operation, passes both.
TEST_CASE("cuda emulator: lanes at different operations, or passing different masks, are caught") {
    gpu::Buffer<int> out(64);
    const std::string sites = launch_error(
        [&] { launch_kernel(shuffle_meets_syncwarp_kernel, dim3(1), dim3(32), 0, out.data()); });
    CHECK_MESSAGE(sites.find("the same kind of warp operation") != std::string::npos, sites);
    CHECK_MESSAGE(sites.find("emu_kernels.cpp:") != std::string::npos, sites);
    const std::string masks = launch_error(
        [&] { launch_kernel(mismatched_mask_kernel, dim3(1), dim3(32), 0, out.data()); });
    CHECK_MESSAGE(masks.find("same mask") != std::string::npos, masks);
    CHECK_MESSAGE(masks.find("0xffff0000") != std::string::npos, masks);
    // What is allowed still runs: half-warps apart, and a full mask after lanes have exited.
    gpu::Buffer<int> res(96);
    CUDA_CHECK(cudaMemset(res.data(), 0, 96 * sizeof(int)));
    for (auto order : {emu::Schedule::forward, emu::Schedule::reverse}) {
        emu::set_schedule(order);
        launch_kernel(half_warp_shuffles_kernel, dim3(1), dim3(32), 0, res.data());
        auto o = copy_back(res.data(), 96);
        for (int lane = 0; lane < 32; lane++) {
            CHECK(o[lane] == (lane < 16 ? lane ^ 1 : lane ^ 2));
            const int partner = lane ^ 16;  // its v: lane, or (its xor-1 neighbour) + 100
            CHECK(o[64 + lane] == (partner < 16 ? partner : (partner ^ 1) + 100));
        }
        for (int lane = 0; lane < 8; lane++)
            CHECK(o[32 + lane] == (lane ^ 4));
    }
    emu::set_schedule(emu::Schedule::forward);
}

// sm_70 and later: a lane waits until every lane its mask names reaches *a* __syncwarp (or the
// same shuffle with the same mask), at whichever call site; an emulator that matches call sites
// refuses this correct kernel.
TEST_CASE("cuda emulator: the same warp operation at two call sites meets, as on sm_70+") {
    gpu::Buffer<int> out(64);
    for (auto order : {emu::Schedule::forward, emu::Schedule::reverse}) {
        emu::set_schedule(order);
        CUDA_CHECK(cudaMemset(out.data(), 0, 64 * sizeof(int)));
        launch_kernel(two_site_warp_ops_kernel, dim3(1), dim3(32), 0, out.data());
        const auto o = copy_back(out.data(), 64);
        for (int lane = 0; lane < 32; lane++) {
            const int n = lane ^ 1;
            CHECK(o[32 + lane] == n * 10 + (n % 2 ? n : -n));
        }
    }
    emu::set_schedule(emu::Schedule::forward);
}

TEST_CASE(
    "cuda emulator: shared arrays start as NaN in every block, not as the last one left them") {
    gpu::Buffer<float> out(3 * 32);
    emu::set_workers(1);  // one runner: the blocks run one after another on the same memory
    {
        Without off(emu::check_init);  // (its read of what nobody wrote is the init check's error)
        launch_kernel(shared_carry_over_kernel, dim3(3), dim3(32), 0, out.data());
    }
    emu::set_workers(0);
    for (float v : copy_back(out.data(), 3 * 32))
        CHECK(std::isnan(v));
}

// Planted out-of-bounds accesses, each in a forked child (a fault the emulator did not turn
// into the launch's error would end the child, not the suite): the array is named, and the
// emulator still runs correct kernels afterwards.
TEST_CASE("cuda emulator: shared memory out of bounds is caught and named") {
    struct Case {
        int index;
        bool write, small;
        const char* expect;
    };
    const Case cases[] = {
        {64, false, false, "byte 256 of shared array `row`"},  // the guard page after it
        {64, true, false, "byte 256 of shared array `row`"},
        {1000, true, false, "shared array `row`"},  // far past: still its guard
        {-1, true, false, "4 bytes before the start of shared array `row`"},  // its first page
        {5, true, true, "byte 20 of shared array `five`"},  // the padding to 16 bytes
    };
    for (const Case& c : cases) {
        CAPTURE(c.index);
        CAPTURE(c.write);
        ChildResult r = in_child([&] {
            gpu::Buffer<float> out(64);
            std::string e = launch_error([&] {
                launch_kernel(shared_out_of_bounds_kernel, dim3(2), dim3(64), 0, out.data(),
                              c.index, c.write, c.small);
            });
            gpu::Buffer<int> ok(5 * 64);
            CUDA_CHECK(cudaMemset(ok.data(), 0, 5 * 64 * sizeof(int)));
            launch_kernel(block_reverse_kernel, dim3(5), dim3(64), 0,
                          static_cast<const int*>(ok.data()), ok.data());
            return e;
        });
        REQUIRE_MESSAGE(r.exited, "the child died: the access was not caught");
        CHECK_MESSAGE(r.text.find("shared memory") != std::string::npos, r.text);
        CHECK_MESSAGE(r.text.find(c.expect) != std::string::npos, r.text);
        CHECK_MESSAGE(r.text.find("emu_kernels.cpp:") != std::string::npos, r.text);
    }
    ChildResult r = in_child([] {
        gpu::Buffer<float> out(64);
        return launch_error([&] {
            launch_kernel(dynamic_out_of_bounds_kernel, dim3(1), dim3(64), 64 * sizeof(float),
                          out.data());
        });
    });
    REQUIRE_MESSAGE(r.exited, "the child died: the access was not caught");
    CHECK_MESSAGE(
        r.text.find("byte 256 of the dynamic shared memory (256 bytes)") != std::string::npos,
        r.text);
    CHECK_MESSAGE(r.text.find("thread (63,0,0)") != std::string::npos, r.text);
}

TEST_CASE("cuda emulator: __launch_bounds__ and the shared-memory limits are enforced") {
    gpu::Buffer<int> out(512);
    const std::string over =
        launch_error([&] { launch_kernel(bounded_kernel, dim3(1), dim3(512), 0, out.data()); });
    CHECK_MESSAGE(over.find("512 threads per block, over the kernel's __launch_bounds__(128)") !=
                      std::string::npos,
                  over);
    CHECK(launch_error([&] {
              launch_kernel(bounded_kernel, dim3(1), dim3(128), 0, out.data());
          }).empty());
    gpu::Buffer<float> f(64);
    // 40 KB static + 10 KB dynamic: over 48 KB without the opt-in, fine with it.
    const std::string total = launch_error(
        [&] { launch_kernel(static_40k_kernel, dim3(1), dim3(64), 10 * 1024, f.data()); });
    CHECK_MESSAGE(total.find("40960 bytes static") != std::string::npos, total);
    CHECK_MESSAGE(total.find("over the 49152 bytes") != std::string::npos, total);
    CUDA_CHECK(cudaFuncSetAttribute(static_40k_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    200 * 1024));
    CHECK(launch_error([&] {
              launch_kernel(static_40k_kernel, dim3(1), dim3(64), 10 * 1024, f.data());
          }).empty());
    CHECK(copy_back(f.data(), 64) == std::vector<float>(64, 3.0f));
    // ... and over sm_90's 227 KB even with it: 40 KB + 190 KB.
    const std::string optin = launch_error(
        [&] { launch_kernel(static_40k_kernel, dim3(1), dim3(64), 190 * 1024, f.data()); });
    CHECK_MESSAGE(optin.find("over the 232448 bytes") != std::string::npos, optin);
    const std::string big =
        launch_error([&] { launch_kernel(static_64k_kernel, dim3(1), dim3(64), 0, f.data()); });
    CHECK_MESSAGE(big.find("over the 48 KB a kernel may declare") != std::string::npos, big);
}

// The launch bounds are checked at every launch without a hand-written call: the emulator build
// preprocesses each source with __launch_bounds__(args) a marker and passes it through
// cuda/emu/launch_bounds.pl, which inserts the check as the first statement of every function
// declared with it, whatever the spelling (emu-racecheck launches planted kernels of each, macros
// among them). Here, what the build did: it counts the checks it inserted into each unit
// (cuda/cuda.mk: X.lb-checks beside the emulator's object of cuda/X.cu), and each count must be
// the source's __launch_bounds__ outside comments.
TEST_CASE("cuda emulator: every kernel with __launch_bounds__ gets its check from the build") {
    const std::filesystem::path cuda = std::string(PROJECT_ROOT) + "/cuda",
                                objects = std::string(PROJECT_BIN) + "/../emu/cuda";
    int kernels = 0;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(cuda)) {
        if (entry.path().extension().string() != ".cu") continue;
        std::ifstream in(entry.path());
        std::string line;
        int declared = 0;
        while (std::getline(in, line)) {
            const size_t comment = line.find("//");
            for (size_t at = 0; (at = line.find("__launch_bounds__(", at)) < comment; at++)
                declared++;
        }
        std::filesystem::path count = objects / std::filesystem::relative(entry.path(), cuda);
        count.replace_extension(".lb-checks");
        std::ifstream counted(count);
        int inserted = -1;
        counted >> inserted;
        CHECK_MESSAGE(inserted == declared, entry.path().string() << " (" << count.string()
                                                                  << ": " << inserted << ")");
        kernels += inserted;
    }
    CHECK(kernels >= 11);
}

// gpu-check runs the device cases with CUDA_TESTS_NEED_DEVICE=1. Where no device is visible
// (no driver, a driver older than the toolkit, CUDA_VISIBLE_DEVICES empty, no /dev/nvidia* in a
// container) they must fail with the runtime's reason, not be skipped with cuda-tests exiting
// 0 with 0 passed. Only where nvcc built cuda-tests.
TEST_CASE("cuda emulator: cuda-tests fails, naming the runtime's error, when a device is needed") {
    if (!std::filesystem::exists(std::string(PROJECT_BIN) + "/cuda-tests")) {
        MESSAGE("no build/bin/cuda-tests (make CUDA=1 builds it): not checked");
        return;
    }
    setenv("CUDA_TESTS_NEED_DEVICE", "1", 1);
    auto r = testutil::run("cuda-tests", "-tc='cuda device: a CUDA device is visible'");
    unsetenv("CUDA_TESTS_NEED_DEVICE");
    const std::string out = r.out + r.err;
    if (r.exit_code == 0) {  // a GPU is here: the case ran and passed
        CHECK_MESSAGE(out.find("1 passed") != std::string::npos, out);
    } else {
        CHECK_MESSAGE(out.find("cudaGetDeviceCount: ") != std::string::npos, out);
        CHECK_MESSAGE(out.find("0 passed | 1 failed") != std::string::npos, out);
    }
    // Without the variable, no device means the cases are skipped (make test on this machine).
    auto plain = testutil::run("cuda-tests", "-tc='cuda device: a CUDA device is visible'");
    CHECK(plain.exit_code == 0);
}

namespace {
// cuda/bench/gpu-check.sh with `args` (its verdict modes): exit status and output.
std::pair<int, std::string> gpu_check(const std::string& args) {
    const std::string cmd =
        "bash " + testutil::quote(std::string(PROJECT_ROOT) + "/cuda/bench/gpu-check.sh") + " " +
        args + " 2>&1";
    std::string out;
    if (FILE* p = popen(cmd.c_str(), "r")) {
        char buf[512];
        while (fgets(buf, sizeof buf, p))
            out += buf;
        const int status = pclose(p);
        return std::pair{WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
    }
    return std::pair{-1, out};
}
// gpu-check.sh's verdict MODE on `text`, written to a scratch file (the tool output canned).
std::pair<int, std::string> gpu_check_on(const std::string& mode, const std::string& text) {
    const std::string file = "/tmp/transformer-test-" + std::to_string(getpid()) + ".canned";
    {
        std::ofstream f(file);
        f << text;
    }
    auto r = gpu_check(mode + " '" + file + "'");
    std::remove(file.c_str());
    return r;
}
}  // namespace

// gpu-check's verdict on the device cases' report: at least one passed, none failed or skipped,
// and a report that never reached its summary (a crash) fails too; a run that skipped every
// case (no device visible) is a failure, not "exit 0".
TEST_CASE("cuda emulator: gpu-check fails a device test run that passed nothing") {
    auto verdict = [](const std::string& text) { return gpu_check_on("--check-tests", text); };
    const std::string head = "[doctest] doctest version is \"2.4.9\"\n";
    auto skipped = verdict(head + "[doctest] test cases: 0 | 0 passed | 0 failed | 20 skipped\n");
    CHECK(skipped.first == 1);
    CHECK_MESSAGE(
        skipped.second.find("FAILED: 0 passed, 0 failed, 20 skipped") != std::string::npos,
        skipped.second);
    auto ok = verdict(head + "[doctest] test cases:   14 |   14 passed | 0 failed | 0 skipped\n");
    CHECK(ok.first == 0);
    CHECK_MESSAGE(ok.second.find("ok: 14 passed") != std::string::npos, ok.second);
    CHECK(verdict(head + "[doctest] test cases: 14 | 13 passed | 1 failed | 0 skipped\n").first ==
          1);
    CHECK(verdict(head + "[doctest] test cases: 14 | 13 passed | 0 failed | 1 skipped\n").first ==
          1);
    auto crashed = verdict(head + "TEST CASE:  cuda device: sgemm\n");
    CHECK(crashed.first == 1);
    CHECK_MESSAGE(crashed.second.find("no doctest summary") != std::string::npos, crashed.second);
}

// gpu-check's verdict on each compute-sanitizer run (what it appends to cuda-tests.txt after a
// "==== compute-sanitizer --tool TOOL" line), on canned outputs: the tool's own summary line
// (racecheck's is RACECHECK SUMMARY, and its warnings fail too), and the test run under it,
// which must show every case its filter selects passed, at least one: a filter that matches
// nothing exits 0 with 0 errors.
TEST_CASE("cuda emulator: gpu-check reads each sanitizer's summary and the cases it ran") {
    const std::string doctest =
        "[doctest] doctest version is \"2.4.9\"\n"
        "===============================================================\n";
    auto run = [&](const std::string& tool, const std::string& cases, const std::string& tail) {
        return "==== compute-sanitizer --tool " + tool + "\n========= COMPUTE-SANITIZER\n" +
               doctest + "[doctest] test cases: " + cases + "\n" + tail;
    };
    const std::string passed20 = "20 | 20 passed | 0 failed | 0 skipped";
    const std::string clean = "========= ERROR SUMMARY: 0 errors\n";
    auto ok = gpu_check_on("--check-sanitizer memcheck", run("memcheck", passed20, clean));
    CHECK(ok.first == 0);
    CHECK_MESSAGE(ok.second == "ok: memcheck: 0 errors; 20 of 20 selected case(s) passed\n",
                  ok.second);
    auto errors = gpu_check_on("--check-sanitizer memcheck",
                               run("memcheck", passed20, "========= ERROR SUMMARY: 2 errors\n"));
    CHECK(errors.first == 1);
    CHECK_MESSAGE(errors.second == "FAILED: memcheck: ERROR SUMMARY: 2 errors\n", errors.second);
    auto unfinished = gpu_check_on("--check-sanitizer synccheck", run("synccheck", passed20, ""));
    CHECK(unfinished.first == 1);
    CHECK_MESSAGE(
        unfinished.second.find("no \"ERROR SUMMARY: N errors\" line") != std::string::npos,
        unfinished.second);
    // A filter that selects nothing: the tool exits 0 and reports 0 errors.
    auto none = gpu_check_on("--check-sanitizer initcheck",
                             run("initcheck", "0 | 0 passed | 0 failed | 20 skipped", clean));
    CHECK(none.first == 1);
    CHECK_MESSAGE(
        none.second.find("0 of the 0 case(s) its filter selects passed") != std::string::npos,
        none.second);
    auto failing = gpu_check_on("--check-sanitizer memcheck",
                                run("memcheck", "20 | 19 passed | 1 failed | 0 skipped", clean));
    CHECK(failing.first == 1);
    // racecheck: a subset of the cases (the rest skipped by the filter) is its normal run.
    const std::string subset = "10 | 10 passed | 0 failed | 25 skipped";
    auto race_ok = gpu_check_on(
        "--check-sanitizer racecheck",
        run("racecheck", subset,
            "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n"));
    CHECK(race_ok.first == 0);
    CHECK_MESSAGE(race_ok.second == "ok: racecheck: 0 errors; 10 of 10 selected case(s) passed\n",
                  race_ok.second);
    auto warning = gpu_check_on(
        "--check-sanitizer racecheck",
        run("racecheck", subset,
            "========= Warning: Race reported between Write access at sgemm_kernel+0x140\n"
            "=========     and Read access at sgemm_kernel+0xe0 [4 hazards]\n"
            "========= RACECHECK SUMMARY: 1 hazard displayed (0 errors, 1 warning)\n"));
    CHECK(warning.first == 1);
    CHECK_MESSAGE(warning.second ==
                      "FAILED: racecheck: 1 warning(s), one not explained: Warning: Race reported "
                      "between Write access at sgemm_kernel+0x140\n",
                  warning.second);
    auto race_error = gpu_check_on(
        "--check-sanitizer racecheck",
        run("racecheck", subset,
            "========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)\n"));
    CHECK(race_error.first == 1);
    CHECK_MESSAGE(race_error.second.find("1 error(s), 0 warning(s)") != std::string::npos,
                  race_error.second);
    // racecheck's run read for ERROR SUMMARY alone, as before: not a racecheck summary.
    auto wrong_line = gpu_check_on("--check-sanitizer racecheck", run("racecheck", subset, clean));
    CHECK(wrong_line.first == 1);
    CHECK_MESSAGE(wrong_line.second.find("no \"RACECHECK SUMMARY") != std::string::npos,
                  wrong_line.second);
    // Several runs in one file: each verdict reads its own tool's run only.
    const std::string both = run("memcheck", passed20, clean) +
                             run("initcheck", passed20, "========= ERROR SUMMARY: 3 errors\n");
    CHECK(gpu_check_on("--check-sanitizer memcheck", both).first == 0);
    CHECK(gpu_check_on("--check-sanitizer initcheck", both).first == 1);
    CHECK(gpu_check_on("--check-sanitizer racecheck", both).first == 1);  // no run of it
}

// The spill check reads ptxas's -Xptxas -v reports (which cuda/cuda.mk's cuda-ptxas-report
// makes afresh for every kernel source): every kernel that spills is listed; one not named in
// gpu-check.sh's EXPLAINED_SPILLS fails, and so do reports that name no kernel (no -v). The
// canned lines are nvcc 13's, for sm_90.
TEST_CASE("cuda emulator: gpu-check's spill check lists every kernel that spills") {
    auto kernel = [](const std::string& mangled, int stores, int loads) {
        return "ptxas info    : Compiling entry function '" + mangled + "' for 'sm_90'\n" +
               "ptxas info    : Function properties for " + mangled + "\n    " +
               std::to_string(stores) + " bytes stack frame, " + std::to_string(stores) +
               " bytes spill stores, " + std::to_string(loads) + " bytes spill loads\n" +
               "ptxas info    : Used 255 registers, used 1 barriers\n";
    };
    const std::string v1_dq_64 =
        "_ZN8flash_v118backward_dq_kernelILi64EEEvPKfS2_S2_S2_S2_S2_Pfiifb";
    const std::string v2_fwd = "_ZN8flash_v214forward_kernelILi128EEEvPKfS2_S2_PfS3_iifbb";
    auto known =
        gpu_check_on("--check-spills", "ptxas info    : 0 bytes gmem\n" + kernel(v2_fwd, 0, 0) +
                                           kernel(v1_dq_64, 44, 44));
    CHECK(known.first == 0);
    CHECK_MESSAGE(known.second.find("spill (explained): ") != std::string::npos, known.second);
    CHECK_MESSAGE(
        known.second.find("flash_v1::backward_dq_kernel<64>: 44 bytes spill stores, 44 "
                          "bytes spill loads (FlashAttention version 1") != std::string::npos,
        known.second);
    CHECK_MESSAGE(known.second.find("ok: 2 kernels, 1 spill(s), each named and explained") !=
                      std::string::npos,
                  known.second);
    // The same spill in version 2's kernel: not explained.
    const std::string v2_bwd =
        "_ZN8flash_v215backward_kernelILi64EEEvPKfS2_S2_S2_S2_S2_PfS3_S3_iifbb";
    auto unknown = gpu_check_on("--check-spills", kernel(v1_dq_64, 44, 44) + kernel(v2_bwd, 8, 4));
    CHECK(unknown.first == 1);
    CHECK_MESSAGE(unknown.second.find("SPILL: ") != std::string::npos, unknown.second);
    CHECK_MESSAGE(
        unknown.second.find("flash_v2::backward_kernel<64>: 8 bytes spill stores, 4 bytes "
                            "spill loads") != std::string::npos,
        unknown.second);
    CHECK_MESSAGE(unknown.second.find("FAILED: 1 of 2 kernels spill") != std::string::npos,
                  unknown.second);
    // A report of an object that was not compiled (or without -v) names no kernel.
    auto empty = gpu_check_on("--check-spills", "");
    CHECK(empty.first == 1);
    CHECK_MESSAGE(empty.second.find("no kernel in ptxas's reports") != std::string::npos,
                  empty.second);
}

// The verdict says which checks failed and which did not run, and is PASSED only when every
// check ran and passed: a toolkit without compute-sanitizer, with SKIP_SANITIZER=1, ran none of
// its four tools.
TEST_CASE("cuda emulator: gpu-check's verdict is PASSED only when every check ran") {
    auto skipped = gpu_check("--verdict '' memcheck,initcheck,synccheck,racecheck");
    CHECK(skipped.first == 3);
    CHECK(skipped.second ==
          "verdict: INCOMPLETE: every check that ran passed, but 4 did not run: "
          "memcheck, initcheck, synccheck, racecheck\n");
    auto failed = gpu_check("--verdict 'cuda-tests,spill check' torch-peer");
    CHECK(failed.first == 1);
    CHECK(failed.second ==
          "verdict: FAILED: 2 check(s) failed, were cut or skipped: cuda-tests, "
          "spill check; not run: torch-peer\n");
    auto passed = gpu_check("--verdict '' ''");
    CHECK(passed.first == 0);
    CHECK(passed.second == "verdict: PASSED: every check ran and passed\n");
}

// gpu-check's verdict on gpu-bench's output: a target NOT MET fails the run as a mismatch does,
// and so does an output with no target line (gpu-bench did not reach its end).
TEST_CASE("cuda emulator: gpu-check fails a gpu-bench run with a target NOT MET") {
    const std::string met = "target sgemm 4096^3 warp-tiled (default tile) / cuBLAS speed: "
                            "0.91, at least 0.85: met\n";
    const std::string not_met = "target LSTM gates alone, unfused / fused time: 3.10, at least "
                                "5: NOT MET\n";
    auto ok = gpu_check_on("--check-bench", "sgemm 4096^3: ...\n\n" + met);
    CHECK(ok.first == 0);
    CHECK(ok.second == "ok: 1 target(s) met, every result matches its reference\n");
    auto slow = gpu_check_on("--check-bench", met + not_met);
    CHECK(slow.first == 1);
    CHECK(slow.second == "FAILED: 1 of 2 target(s) NOT MET: LSTM gates alone, unfused / fused "
                         "time: 3.10, at least 5\n");
    auto wrong = gpu_check_on(
        "--check-bench",
        "MISMATCH sgemm 4096^3 shared-tiled NN vs cuBLAS: worst at index 7\n" + met);
    CHECK(wrong.first == 1);
    CHECK_MESSAGE(wrong.second.find("FAILED: 1 result(s) differ") != std::string::npos,
                  wrong.second);
    auto cut = gpu_check_on("--check-bench", "sgemm 4096^3: warp-tiled 1.00 ms\n");
    CHECK(cut.first == 1);
    CHECK_MESSAGE(cut.second.find("no target line") != std::string::npos, cut.second);
}

// gpu-check's time plan: the steps' own limits add up to within its budget (the run is one
// command on a lent machine), and a plan that does not fit is refused before anything runs: a
// copy of the script with one step's limit raised.
TEST_CASE("cuda emulator: gpu-check's step limits add up to within its budget") {
    auto plan = gpu_check("--plan");
    CHECK(plan.first == 0);
    CHECK_MESSAGE(plan.second.find("within the 480 s budget") != std::string::npos, plan.second);
    int total = 0, steps = 0;
    const std::regex line(R"(plan: [a-z0-9-]+: ([0-9]+) s)");
    for (auto it = std::sregex_iterator(plan.second.begin(), plan.second.end(), line);
         it != std::sregex_iterator(); ++it)
        total += std::stoi((*it)[1]), steps++;
    CHECK(steps == 10);
    CHECK(total <= 480);
    const std::string copy = "/tmp/transformer-test-plan-" + std::to_string(getpid()) + ".sh";
    const std::string script = std::string(PROJECT_ROOT) + "/cuda/bench/gpu-check.sh";
    const std::string sed = "sed 's/^    \"build 90\"/    \"build 400\"/' " +
                            testutil::quote(script) + " > '" + copy + "'";
    REQUIRE(std::system(sed.c_str()) == 0);
    const std::string planted = "bash '" + copy + "' --plan >/dev/null 2>&1";
    CHECK(WEXITSTATUS(std::system(planted.c_str())) == 1);
    const std::string run = "cd /tmp && GPU_CHECK_DIR=/dev/null/none bash '" + copy + "' 2>&1";
    std::string out;
    if (FILE* p = popen(run.c_str(), "r")) {
        char buf[512];
        while (fgets(buf, sizeof buf, p))
            out += buf;
        CHECK(WEXITSTATUS(pclose(p)) == 2);
    }
    CHECK(out == "gpu-check.sh: FAILED: the steps' limits add up to 780 s, + 10 s between them: "
                 "over the 480 s budget; shorten a step in PLAN (cuda/bench/gpu-check.sh)\n");
    std::remove(copy.c_str());
}

// gpu-bench (what gpu-check measures the speed targets with) at small sizes on the emulator,
// with cuda/emu/cublas_emulated.h for cuBLAS: every section runs, and its own cross-checks (each
// sgemm tile shape and transpose against cuBLAS, fused against naive attention, FlashAttention
// version 1 against version 2, fused against unfused LSTM gates) find no mismatch. Its times
// mean nothing here.
TEST_CASE("cuda emulator: gpu-bench --quick runs every section and every cross-check agrees") {
    auto r = testutil::run("gpu-bench-emu", "--quick");
    REQUIRE(r.exit_code == 0);
    CHECK(r.err.find("gpu-bench:") == std::string::npos);  // (sanitizer builds add warnings)
    CHECK(r.out.find("MISMATCH") == std::string::npos);
    for (const char* line :
         {"sgemm 136^3: warp-tiled",
          "256x128, 16x8",
          "attention n=72 fused vs naive",
          "attention fwd+bwd n=72",
          "naive's 6 products alone",
          "FlashAttention version 1 (one thread per row): forward",
          "LSTM fused vs unfused gates",
          "LSTM forward n=5",
          "LSTM gates alone, n=5 steps",
          "target LSTM gates alone, unfused",
          "CUBLAS_DEFAULT_MATH (fp32, no TF32), NVIDIA_TF32_OVERRIDE=0",
          "cuBLAS: NN",
          "dW_proj = dY^T O (TN 72 x 72, K = 1024): default",
          "2 slices of K",
          "dW_qkv = dQKV^T X (TN 216 x 72, K = 1024)",
          "LSTM step dG_t W_hh (NN 8 x 256, K = 1024): default",
          "4 slices of K",
          "attention d_k=32 n=72: fused fwd+bwd",
          "attention d_k=128 n=72: fused fwd+bwd",
          "attention d_k=64 causal n=72: fused fwd+bwd",
          "max |dV diff|",
          "attention n=200 sampled rows vs double (64 query and 64 key rows of head 1): max |O",
          "attention n=200 causal sampled rows vs double",
          "max |L diff|",
          "sgemm 136^3 NN vs cuBLAS: warp-tiled (default) max |diff| = ",
          " register-tiled max |diff| = ",
          " shared-tiled max |diff| = ",
          "LSTM forward h vs a double reference: fused max |h diff| = ",
          "LSTM gates alone h vs a double reference: fused max |h diff| = "})
        CHECK_MESSAGE(r.out.find(line) != std::string::npos, line);
    // Both sequence lengths time version 1 and compare its O, dQ, dK and dV with version 2's.
    const std::regex v1(R"(max \|dV diff\| = [0-9.e+-]+ \(against version 2\))");
    CHECK(std::distance(std::sregex_iterator(r.out.begin(), r.out.end(), v1),
                        std::sregex_iterator()) == 2);
    // Every tile shape reports all four transposes.
    const std::regex tt(R"( TT [0-9.]+x )");
    CHECK(std::distance(std::sregex_iterator(r.out.begin(), r.out.end(), tt),
                        std::sregex_iterator()) == 5);
}

TEST_CASE("cuda emulator: gpu-bench --help and an unknown argument return at once") {
    // Neither starts the full benchmark (minutes on a GPU, hours on the emulator).
    auto r = testutil::run("gpu-bench-emu", "--help", "", 60);
    CHECK(r.exit_code == 0);
    CHECK(r.out.rfind("usage: gpu-bench [--quick] [--plant-mismatch | --plant-nan]\n", 0) == 0);
    CHECK(r.err.empty());
    r = testutil::run("gpu-bench-emu", "--bogus", "", 60);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err ==
          "gpu-bench: error: unexpected argument '--bogus': the options are --quick, "
          "--plant-mismatch and --plant-nan (see --help)\n");
    r = testutil::run("gpu-bench-emu", "--quick extra", "", 60);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("'extra'") != std::string::npos);
}

TEST_CASE("cuda emulator: gpu-bench output that cannot be written is an error") {
    // gpu-bench > /dev/full must not run to the end and exit 0, its results gone (it builds
    // without common/program/cli, whose exit check every chapter has). It stops at its first
    // timed run after a line failed.
    const std::string err = "/tmp/transformer-test-gpu-bench-" + std::to_string(::getpid());
    for (const char* args : {"--help", "--quick"}) {
        CAPTURE(args);
        const std::string cmd = "timeout -k 5 300 " + testutil::program_command("gpu-bench-emu") +
                                " " + args +
                                " </dev/null >/dev/full 2>" + err;
        const int status = std::system(cmd.c_str());
        CHECK((WIFEXITED(status) ? WEXITSTATUS(status) : -1) == 1);
        CHECK(testutil::read_file_abs(err) ==
              "gpu-bench: error: cannot write output: No space left on device\n");
    }
    std::remove(err.c_str());
}

// A wrong result fails gpu-bench: one element of a checked output is made wrong before its
// check, by 1 or by a NaN: the first check's (the 128x128 tile's NN product against cuBLAS) by
// default, or a check named. The run goes on to the end (every other check still passes) and
// exits 1, naming the check, the index and both values; a NaN is not lost in a max (std::fmax
// drops it). Two runs: the NaN by default, and the mismatch in the first check and in every
// timed result by name.
TEST_CASE("cuda emulator: gpu-bench --quick fails on a planted mismatch and a planted NaN") {
    const std::string check = "sgemm 136^3 128x128, 8x8 (default) NN vs cuBLAS";
    auto r = testutil::run("gpu-bench-emu", "--plant-nan --quick");
    CHECK(r.exit_code == 1);
    const std::regex nan("MISMATCH " +
                         std::string(R"(sgemm 136\^3 128x128, 8x8 \(default\) NN vs)") +
                         R"( cuBLAS: not finite at index 6165: -?nan, reference -?[0-9.e+-]+)");
    CHECK_MESSAGE(std::regex_search(r.out, nan), r.out);
    CHECK(r.err.find("gpu-bench: FAILED: 1 cross-check(s) failed; the first: MISMATCH " + check) !=
          std::string::npos);
    CHECK(r.out.find("target LSTM gates alone") != std::string::npos);  // it ran to the end
    r = testutil::run("gpu-bench-emu", "--plant-nan --plant-mismatch", "", 60);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("exclude each other") != std::string::npos);
    // Every timed result has its reference check: the sgemm versions timed first against
    // cuBLAS, the LSTM's h (the whole forward, and the gates alone) against a double reference
    // on the host. Each planted by name, with the first check, in one run: each fails, named.
    const char* const timed[] = {"sgemm 136^3 warp-tiled (default) NN vs cuBLAS",
                                 "sgemm 136^3 register-tiled NN vs cuBLAS",
                                 "sgemm 136^3 shared-tiled NN vs cuBLAS",
                                 "LSTM forward h, fused gates vs double",
                                 "LSTM forward h, unfused gates vs double",
                                 "LSTM gates alone h, fused vs double",
                                 "LSTM gates alone h, unfused vs double"};
    // A name that matches no check is refused after the run, as a wrong argument (exit 2).
    std::string args = "--quick --plant-mismatch='" + check + "'";
    for (const char* name : timed)
        args += std::string(" --plant-mismatch='") + name + "'";
    r = testutil::run("gpu-bench-emu", args + " --plant-mismatch='no such check'");
    CHECK(r.exit_code == 2);
    const std::regex off("MISMATCH " +
                         std::string(R"(sgemm 136\^3 128x128, 8x8 \(default\) NN vs)") +
                         R"( cuBLAS: worst at index 6165: -?[0-9.e+-]+, reference -?[0-9.e+-]+ )"
                         R"(\(\|diff\| 1 over the tolerance)");
    CHECK_MESSAGE(std::regex_search(r.out, off), r.out);
    for (const char* name : timed)
        CHECK_MESSAGE(r.out.find(std::string("\nMISMATCH ") + name + ": worst at index") !=
                          std::string::npos,
                      std::string(name));
    CHECK_MESSAGE(r.err.find("gpu-bench: FAILED: 8 cross-check(s) failed; the first: MISMATCH " +
                             check + ": ") != std::string::npos,
                  r.err);
    const std::string refused =
        "\ngpu-bench: error: no check's name begins with 'no such check' (planted)\n";
    const bool last = r.err.size() > refused.size() &&
                      r.err.compare(r.err.size() - refused.size(), refused.size(), refused) == 0;
    CHECK_MESSAGE(last, r.err);
}

// GPU_CHECK_DIR puts every output of gpu-check under its folder, the build folder too. A dry
// run without a GPU: stand-ins for nvidia-smi, make and nvcc (each records its arguments and
// creates the files it is asked for) on PATH, the script run from a scratch folder at a path
// with a space that holds only links to cuda/ and chapters/ and a .gpu-deps/ (make gets it by
// relative paths); afterwards nothing but those may lie outside DIR.
TEST_CASE("cuda emulator: gpu-check with GPU_CHECK_DIR writes everything there, build included") {
    namespace fs = std::filesystem;
    char tmpl[] = "/tmp/transformer-gpu-check-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    const fs::path root = tmpl, work = root / "내 작업", fake = root / "fake";
    fs::create_directories(work / ".gpu-deps");
    fs::create_directories(fake / "bin");
    fs::create_directory_symlink(fs::path(PROJECT_ROOT) / "cuda", work / "cuda");
    fs::create_directory_symlink(fs::path(PROJECT_ROOT) / "chapters", work / "chapters");
    auto tool = [&](const char* name, const std::string& body) {
        const fs::path p = fake / "bin" / name;
        std::ofstream(p) << "#!/bin/sh\n" << body;
        fs::permissions(p, fs::perms::owner_all);
    };
    const std::string stub = "mkdir -p \"$(dirname \"$t\")\" && printf '#!/bin/sh\\n' >\"$t\" && "
                             "chmod +x \"$t\"";
    tool("nvidia-smi", "echo 'a stand-in GPU'\n");
    tool("make", "echo \"$@\" >>'" + (fake / "make.args").string() +
                     "'\nfor t in \"$@\"; do case $t in -*|*=*) ;; *) " + stub +
                     ";; esac; done\n");
    // The stand-in gpu-bench prints fake/gpu-bench.out: every target met but one.
    tool("nvcc", "echo \"$@\" >>'" + (fake / "nvcc.args").string() +
                     "'\nwhile [ $# -gt 0 ]; do [ \"$1\" = -o ] && t=$2 && " + stub +
                     "; shift; done\ncase $t in *gpu-bench) echo \"cat '" +
                     (fake / "gpu-bench.out").string() + "'\" >>\"$t\";; esac\n");
    std::ofstream(fake / "gpu-bench.out")
        << "target sgemm NN, the fastest tile shape / cuBLAS speed: 0.90, at least 0.85: met\n"
           "target LSTM gates alone, unfused / fused time: 3.10, at least 5: NOT MET\n";
    auto run_check = [&](const std::string& dir_setting) {
        const std::string cmd = "cd '" + work.string() + "' && env PATH='" +
                                (fake / "bin").string() + ":/usr/bin:/bin' NVCC='" +
                                (fake / "bin" / "nvcc").string() + "' " + dir_setting +
                                " SKIP_SANITIZER=1 PYTHON=/bin/false GPU_CHECK_SECONDS=60 "
                                "bash cuda/bench/gpu-check.sh >/dev/null 2>&1";
        return std::system(cmd.c_str());
    };
    auto read = [](const fs::path& p) {
        std::ifstream f(p);
        return std::string(std::istreambuf_iterator<char>(f), {});
    };
    CHECK(run_check("GPU_CHECK_DIR=out") != 0);  // (the stand-ins pass no test)
    const std::string make_args = read(fake / "make.args"), nvcc_args = read(fake / "nvcc.args");
    CHECK_MESSAGE(make_args.find("BUILD=out/build ") != std::string::npos, make_args);
    CHECK_MESSAGE(make_args.find(" out/build/bin/cuda-tests") != std::string::npos, make_args);
    CHECK_MESSAGE(make_args.find(" DOCTEST_INC=.gpu-deps/doctest STB_INC=.gpu-deps/stb "
                                 "FONT=.gpu-deps/NanumGothic.ttf ") != std::string::npos,
                  make_args);
    CHECK_MESSAGE(nvcc_args.find("-o out/build/bin/gpu-bench") != std::string::npos, nvcc_args);
    CHECK(fs::exists(work / "out" / "summary.txt"));
    // No compute-sanitizer and SKIP_SANITIZER=1: its four tools are named as not run.
    const std::string summary = read(work / "out" / "summary.txt");
    CHECK_MESSAGE(summary.find("gpu-check: verdict: FAILED: ") != std::string::npos, summary);
    CHECK_MESSAGE(
        summary.find("; not run: memcheck, initcheck, synccheck, racecheck;") != std::string::npos,
        summary);
    // A target NOT MET fails the run, named, though gpu-bench exited 0.
    CHECK_MESSAGE(summary.find("gpu-bench: exit 0 ") != std::string::npos, summary);
    CHECK_MESSAGE(summary.find("gpu-check: gpu-bench: FAILED: 1 of 2 target(s) NOT MET: LSTM "
                               "gates alone") != std::string::npos,
                  summary);
    CHECK_MESSAGE(summary.find(", speed targets") != std::string::npos, summary);
    // Each step ran under its share of the plan, and the shares add up to within the budget.
    int limits = 0, steps = 0;
    const std::regex limit(R"(: exit [0-9]+ after [0-9]+ s \(limit ([0-9]+) s\))");
    for (auto it = std::sregex_iterator(summary.begin(), summary.end(), limit);
         it != std::sregex_iterator(); ++it)
        limits += std::stoi((*it)[1]), steps++;
    CHECK(steps >= 5);
    CHECK_MESSAGE(limits <= 60, summary);
    CHECK(fs::exists(work / "out" / "build" / "bin" / "gpu-bench"));
    std::string outside;
    for (const fs::directory_entry& e : fs::directory_iterator(work))
        if (e.path().filename() != "out" && e.path().filename() != "cuda" &&
            e.path().filename() != "chapters" && e.path().filename() != ".gpu-deps")
            outside += e.path().filename().string() + " ";
    CHECK_MESSAGE(outside.empty(), "written outside GPU_CHECK_DIR: " << outside);
    // Without GPU_CHECK_DIR: results in gpu-check/<time>, the build in build/.
    fs::remove(fake / "make.args");
    CHECK(run_check("") != 0);
    CHECK(read(fake / "make.args").find("BUILD=build ") != std::string::npos);
    CHECK(fs::exists(work / "gpu-check"));
    fs::remove_all(root);
}

// A read or write that reaches a cudaMalloc'd buffer's guard page is a named launch error in
// every build: the SIGSEGV handler maps the address to the buffer (where the access checks are
// compiled in they see it first: turned off here, to test the handler). With the handler's
// check off too, the access kills the child.
TEST_CASE("cuda emulator: a guard-page hit past a buffer's end or before its start is named") {
    struct Case {
        long index;
        bool write;
        const char* expect;
    };
    // The handler tells a read from a write by the fault's error code on x86-64 (REG_ERR);
    // elsewhere (aarch64, under qemu too) it says "touches".
#if defined(__x86_64__)
    const bool direction = true;
#else
    const bool direction = false;
#endif
    for (Case c : {Case{1024, false, " a guard page: byte 4096 of a cudaMalloc'd buffer of "
                                     "4096 bytes, past its end in kernel "},
                   Case{1024, true, " a guard page: byte 4096 of a cudaMalloc'd buffer of "
                                    "4096 bytes, past its end in kernel "},
                   Case{-1, false, " a guard page: 4 bytes before the start of a "
                                   "cudaMalloc'd buffer of 4096 bytes in kernel "}}) {
        CAPTURE(c.index);
        CAPTURE(c.write);
        const std::string expect =
            std::string(!direction ? " touches" : c.write ? " writes" : " reads") + c.expect;
        auto run = [c] {
            float *p = nullptr, *out = nullptr;
            CUDA_CHECK(cudaMalloc(&p, 4096));  // one page: its end against the guard page
            CUDA_CHECK(cudaMalloc(&out, 4));
            Without hooks(emu::check_global_bounds);
            return launch_error([&] {
                launch_kernel(global_rw_kernel, dim3(1), dim3(32), 0, p, out, c.index, c.write);
            });
        };
        ChildResult r = in_child(run, true);
        REQUIRE_MESSAGE(r.exited, "the child died: the fault was not named");
        CHECK_MESSAGE(r.text.find("global memory out of bounds: thread (0,0,0) (warp 0) of block "
                                  "(0,0,0)") != std::string::npos,
                      r.text);
        CHECK_MESSAGE(r.text.find(expect) != std::string::npos, r.text);
        CHECK_MESSAGE(r.text.find("global_rw_kernel") != std::string::npos, r.text);
        ChildResult off = in_child(
            [&] {
                Without handler(emu::check_guard_pages);
                return run();
            },
            true);
        CHECK_MESSAGE(!off.exited, off.text);
    }
}

// A misaligned float4 store, or a load into a float4, is a named launch error in every build:
// float4's assignment checks both addresses (the access checks, where compiled in, too). One of
// the planted bugs `make emu-racecheck` runs ("emulator checks:"), here since it needs no hooks.
TEST_CASE("emulator checks: a misaligned float4 store or load is a named launch error") {
    for (bool store : {false, true}) {
        CAPTURE(store);
        auto run = [store] {
            gpu::Buffer<float> p(128);
            return launch_error([&] {
                launch_kernel(float4_copy_kernel, dim3(1), dim3(32), 0, p.data(), 1, store);
            });
        };
        ChildResult r = in_child(run, true);
        REQUIRE_MESSAGE(r.exited, "the child died: the access was not caught");
        CHECK_MESSAGE(r.text.find(std::string("misaligned 16-byte ") +
                                  (store ? "store to " : "load from ")) != std::string::npos,
                      r.text);
        CHECK_MESSAGE(
            r.text.find("(4 bytes past a 16-byte boundary) by thread (0,0,0)") != std::string::npos,
            r.text);
        if (kernels_instrumented())  // (the line tables: -g1 with the access checks)
            CHECK_MESSAGE(r.text.find("emu_kernels.cpp:") != std::string::npos, r.text);
        gpu::Buffer<float> p(128);
        CUDA_CHECK(cudaMemset(p.data(), 0, 128 * sizeof(float)));  // (read: written first)
        CHECK(launch_error([&] {
                  launch_kernel(float4_copy_kernel, dim3(1), dim3(32), 0, p.data(), 4, store);
              }).empty());
        // Without the check: unseen, or a fault that names no misaligned access.
        ChildResult off = in_child(
            [&] {
                Without w(emu::check_alignment);
                return run();
            },
            true);
        CHECK_MESSAGE(off.text.find("misaligned") == std::string::npos, off.text);
    }
}

// `const float4 v = *q` through a misaligned q is a copy, not an assignment: float4's copy
// checks its source in every build (with the access checks or without: clang, make sanitize).
TEST_CASE("emulator checks: a float4 copied from a misaligned address is a named launch error") {
    auto run = [](int offset) {
        gpu::Buffer<float> p(128), out(1);
        CUDA_CHECK(cudaMemset(p.data(), 0, 128 * sizeof(float)));
        return launch_error([&] {
            launch_kernel(float4_construct_kernel, dim3(1), dim3(32), 0,
                          static_cast<const float*>(p.data()), out.data(), offset);
        });
    };
    ChildResult r = in_child([&] { return run(1); }, true);
    REQUIRE_MESSAGE(r.exited, "the child died: the access was not caught");
    CHECK_MESSAGE(r.text.find("misaligned 16-byte load from") != std::string::npos, r.text);
    CHECK_MESSAGE(r.text.find("(4 bytes past a 16-byte boundary)") != std::string::npos, r.text);
    CHECK(run(4).empty());
    ChildResult off = in_child(
        [&] {
            Without w(emu::check_alignment);
            return run(1);
        },
        true);
    CHECK_MESSAGE(off.text.find("misaligned") == std::string::npos, off.text);
}

// A cudaMemcpy or cudaMemset whose range leaves a buffer's live bytes fails in every build
// (cudaErrorInvalidValue, as a GPU's runtime), with one line that names the call, the buffer and
// how far past it: inside the buffer's last page it would otherwise succeed unseen, and past
// it die of a SIGSEGV with no message. One of the planted bugs `make emu-racecheck` runs.
TEST_CASE("emulator checks: a cudaMemcpy or cudaMemset past a buffer is named") {
    float* p = nullptr;
    CUDA_CHECK(cudaMalloc(&p, 400));
    std::vector<float> host(2048);
    const std::string from =
        launch_error([&] { return cudaMemcpy(host.data(), p, 512, cudaMemcpyDeviceToHost); });
    CHECK(from ==
          "emulator: cudaMemcpy of 512 bytes (device to host): the source, from byte 0 of "
          "a cudaMalloc'd buffer of 400 bytes, runs 112 bytes past its end");
    const std::string to =
        launch_error([&] { return cudaMemcpy(p + 50, host.data(), 400, cudaMemcpyHostToDevice); });
    CHECK(to ==
          "emulator: cudaMemcpy of 400 bytes (host to device): the destination, from byte "
          "200 of a cudaMalloc'd buffer of 400 bytes, runs 200 bytes past its end");
    const std::string before =
        launch_error([&] { return cudaMemcpy(host.data(), p - 2, 16, cudaMemcpyDeviceToHost); });
    CHECK(before ==
          "emulator: cudaMemcpy of 16 bytes (device to host): the source starts 8 bytes "
          "before the start of a cudaMalloc'd buffer of 400 bytes");
    const std::string set = launch_error([&] { return cudaMemset(p, 0, 404); });
    CHECK(set ==
          "emulator: cudaMemset of 404 bytes: the destination, from byte 0 of a "
          "cudaMalloc'd buffer of 400 bytes, runs 4 bytes past its end");
    CUDA_CHECK(cudaMemset(p, 0, 400));  // in bounds: as before
    CUDA_CHECK(cudaMemcpy(host.data(), p, 400, cudaMemcpyDeviceToHost));
    {
        Without off(emu::check_copies);
        CHECK(cudaMemcpy(host.data(), p, 512, cudaMemcpyDeviceToHost) == cudaSuccess);
    }
    // Device to device, into a gpu::Buffer held to the bytes asked for (not its 512-byte block).
    {
        gpu::Buffer<float> dst(100);
        const std::string d2d =
            launch_error([&] { return cudaMemcpy(dst.data(), p, 404, cudaMemcpyDeviceToDevice); });
        CHECK(d2d ==
              "emulator: cudaMemcpy of 404 bytes (device to device): the source, from byte "
              "0 of a cudaMalloc'd buffer of 400 bytes, runs 4 bytes past its end");
        CHECK(cudaMemcpy(dst.data(), p, 400, cudaMemcpyDeviceToDevice) == cudaSuccess);
        float* q = nullptr;
        CUDA_CHECK(cudaMalloc(&q, 512));
        const std::string into =
            launch_error([&] { return cudaMemcpy(dst.data(), q, 512, cudaMemcpyDeviceToDevice); });
        CHECK(into ==
              "emulator: cudaMemcpy of 512 bytes (device to device): the destination, "
              "from byte 0 of a buffer of 400 bytes from gpu::allocate (its cudaMalloc'd "
              "block: 512 bytes), runs 112 bytes past its end");
        CUDA_CHECK(cudaFree(q));
    }
    // Past a page: a SIGSEGV without the check, named with it.
    float* page = nullptr;
    CUDA_CHECK(cudaMalloc(&page, 4096));
    ChildResult r =
        in_child([&] { return launch_error([&] { return cudaMemset(page, 0, 8192); }); }, true);
    REQUIRE_MESSAGE(r.exited, "the child died: the range was not checked");
    CHECK_MESSAGE(r.text ==
                      "emulator: cudaMemset of 8192 bytes: the destination, from byte 0 of "
                      "a cudaMalloc'd buffer of 4096 bytes, runs 4096 bytes past its end",
                  r.text);
    ChildResult off = in_child(
        [&] {
            Without w(emu::check_copies);
            return launch_error([&] { return cudaMemset(page, 0, 8192); });
        },
        true);
    CHECK(!off.exited);
    // Freed memory.
    CUDA_CHECK(cudaFree(page));
    const std::string freed = launch_error([&] { return cudaMemset(page, 0, 4); });
    CHECK(freed ==
          "emulator: cudaMemset of 4 bytes: the destination is in no live cudaMalloc'd "
          "buffer (freed memory, or a guard page between buffers)");
    // The call failed as a GPU's runtime fails it.
    CHECK_THROWS(cudaMemset(p, 0, 401));
    CHECK(cudaGetLastError() == cudaErrorInvalidValue);
    CUDA_CHECK(cudaFree(p));
}

// A block over the registers a block may have: a GPU refuses the launch
// (cudaErrorLaunchOutOfResources). The count is ptxas's, which the build records for every kernel
// in cuda/ that nvcc compiles (CUDA=1, cuda/emu/checks.h); register_heavy_kernel, which nvcc
// never compiles, is given one. One of the planted bugs `make emu-racecheck` runs.

TEST_CASE("emulator checks: a block over the kernel's register budget is refused") {
    gpu::Buffer<int> out(1024);
    auto launch = [&](int threads) {
        return launch_error([&] {
            launch_kernel(register_heavy_kernel, dim3(1), dim3(threads), 0, out.data());
        });
    };
    emu::set_kernel_registers(register_heavy_kernel, 103);
    // 32 warps x 3328 (103 x 32 = 3296, rounded up to 256s) = 106496 > 65536.
    CHECK_THROWS(launch_kernel(register_heavy_kernel, dim3(1), dim3(1024), 0, out.data()));
    CHECK(cudaGetLastError() == cudaErrorLaunchOutOfResources);
    const std::string e = launch(1024);
    CHECK_MESSAGE(e.find("kernel `register_heavy_kernel(int*)` uses 103 registers per thread") !=
                      std::string::npos,
                  e);
    CHECK_MESSAGE(e.find("a block of 1024 threads needs 106496 (32 warps x 3328") !=
                      std::string::npos,
                  e);
    CHECK_MESSAGE(e.find("over the 65536 a block may have") != std::string::npos, e);
    CHECK_MESSAGE(e.find("cudaErrorLaunchOutOfResources") != std::string::npos, e);
    CHECK(launch(512).empty());  // 16 x 3328 = 53248
    // The allocation's rounding: 65 x 1000 = 65000 fits, but 32 warps x 2304 = 73728 do not.
    emu::set_kernel_registers(register_heavy_kernel, 65);
    CHECK_MESSAGE(launch(1000).find("needs 73728") != std::string::npos, launch(1000));
    emu::set_kernel_registers(register_heavy_kernel, 64);
    CHECK(launch(1024).empty());  // exactly 65536
    // Without the check the planted launch goes through.
    emu::set_kernel_registers(register_heavy_kernel, 103);
    {
        Without w(emu::check_registers);
        CHECK(launch(1024).empty());
    }
    emu::set_kernel_registers(register_heavy_kernel, 0);
    CHECK(launch(1024).empty());  // no count: nothing to check
}

// Where nvcc built the register table, it names every kernel in cuda/ as this program does
// (nvcc's names for anonymous namespaces read as g++'s, templates, static kernels), and a launch
// finds its kernel's count. Without nvcc there is no table, and nothing to match.
TEST_CASE("emulator checks: every kernel in cuda/ has its ptxas register count with CUDA=1") {
    if (!emu::register_table_linked()) {
        MESSAGE("no register table (CUDA=0: nothing compiled with nvcc): the check has no counts");
        return;
    }
    CHECK(emu_kernel_register_count >= 40);
    std::set<std::string> here;
    for (const emu::FunctionSymbol& f : emu::program_functions())
        here.insert(emu::kernel_key(f.name.c_str()));
    for (int k = 0; k < emu_kernel_register_count; k++) {
        const emu::KernelRegisters& e = emu_kernel_register_table[k];
        CHECK_MESSAGE(here.count(emu::kernel_key(e.name)), e.name);
        CHECK(e.registers > 0);
    }
    // A launch finds its kernel's count: the kernels of one sgemm and softmax launch here.
    const int n = 64;
    std::vector<float> h(size_t(n) * n, 0.5f);
    gpu::Buffer<float> A(h.size()), B(h.size()), C(h.size());
    CUDA_CHECK(cudaMemcpy(A.data(), h.data(), h.size() * 4, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(B.data(), h.data(), h.size() * 4, cudaMemcpyHostToDevice));
    for (SgemmVersion v : {SgemmVersion::naive, SgemmVersion::tiled, SgemmVersion::register_tiled,
                           SgemmVersion::warp_tiled})
        sgemm_cuda(false, false, n, n, n, 1.0f, A.data(), n, B.data(), n, 0.0f, C.data(), n, 1, 0,
                   0, 0, v, SgemmTile::automatic);
    softmax_forward_cuda(A.data(), C.data(), n, n, true);
    int counted = 0;
    for (const void* k : emu::launched_kernels()) counted += emu::kernel_registers(k) > 0;
    CHECK(counted >= 5);
}
