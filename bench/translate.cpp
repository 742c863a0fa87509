// bench-translate: chapter 7's training step (2 + 2 Pre-LN blocks, d_model 64, 4 heads, batch 64
// of number words, Adam with the paper's schedule), timed beside the same model in PyTorch
// (chapters/7-translate/peer_torch.py) on the same batches, one thread each.
//
// The batches are drawn once here, from chapter 7's training numbers, and written to a file the
// peer reads, so both sides run the same token ids in the same order. A step is what
// translate::train does per batch: the teacher-forced loss, backward, Adam's update, zero_grad.
// Each side reports the median of --steps timed steps after --warmup untimed ones.
// Ours is also set against its FLOPs (bench/step_flops.h, from each batch's padded shapes): a
// step's time over the time its products take at the one-thread multiply-add peak
// (bench/peak.h), measured before and after the timed steps; the median over the steps.
// --d-model, --heads and --layers time chapter 8's other shapes (e.g. 256, 1, 1) on both sides.
//
//   chapter 7 step FLOPs: P GFLOP in products, E elementwise; ... ours F.FFx its FLOP time
//   chapter 7 training step: ours X ms, PyTorch Y ms (R.RRx)      R = Y / X
#include "bench/child.h"
#include "bench/median.h"
#include "bench/openblas.h"
#include "bench/peak.h"
#include "bench/step_flops.h"
#include "chapters/7-translate/train.h"
#include "common/kernels/parallel.h"
#include "common/optim.h"
#include "common/program/atomic_file.h"
#include "common/program/cli.h"
#include "common/random.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#if __has_include(<malloc.h>)  // mallopt: glibc (macOS has no malloc.h)
#include <malloc.h>
#endif

using namespace translate;

namespace {

// One batch per line group: "batch B S T", then the src (B*S), tgt_in and tgt_out (B*T) ids.
std::string format_batches(const std::vector<Batch>& batches) {
    std::ostringstream f;
    for (const Batch& b : batches) {
        f << "batch " << b.B << ' ' << b.S << ' ' << b.T << '\n';
        for (const auto* ids : {&b.src, &b.tgt_in, &b.tgt_out}) {
            for (size_t i = 0; i < ids->size(); i++) f << (i ? " " : "") << (*ids)[i];
            f << '\n';
        }
    }
    return f.str();
}

// The folder the peer's batches are written to: the first of TMPDIR, TMP, TEMP and TEMPDIR that
// is set (std::filesystem::temp_directory_path's order), else /tmp; `variable` names where it
// came from ("" for /tmp), so that a folder that is not there can be named with it.
struct TempFolder {
    std::string path, variable;
};

TempFolder temp_folder() {
    for (const char* v : {"TMPDIR", "TMP", "TEMP", "TEMPDIR"})
        if (const char* p = std::getenv(v); p && *p) return {p, v};
    return {"/tmp", ""};
}

// "" where the batches can be written into `t`, else why not (one line, naming the folder).
std::string temp_folder_problem(const TempFolder& t) {
    const std::string name = "the temporary folder " + cli::quote(t.path) +
                             (t.variable.empty() ? "" : " (from " + t.variable + ")");
    const std::string fix = "; set TMPDIR to a writable folder, or pass --no-peer";
    std::error_code ec;
    const auto st = std::filesystem::status(t.path, ec);
    if (ec && ec != std::errc::no_such_file_or_directory)
        return name + " cannot be looked at: " + ec.message() + fix;
    if (!std::filesystem::exists(st)) return name + " does not exist" + fix;
    if (!std::filesystem::is_directory(st)) return name + " is not a folder" + fix;
    if (::access(t.path.c_str(), W_OK | X_OK) != 0)
        return name + " is not writable: " + std::strerror(errno) + fix;
    return "";
}

}  // namespace

int main(int argc, char** argv) {
    int steps = 100, warmup = 20, seed = 0;
    ModelConfig mc;  // chapter 7's model unless the options below say otherwise
    // The peer's python: --peer (then it must run), else PEER_PYTHON or /usr/bin/python3 (then
    // a missing torch is a line in the output, as make bench wants on a machine without it).
    std::string peer;
    bool no_peer = false;
    cli::Parser cli("bench-translate",
                    "chapter 7's training step beside PyTorch, same batches, one thread each");
    cli.option("--steps", steps, "timed steps per side (the median is reported)")
        .range(1, 100'000);
    cli.option("--warmup", warmup, "untimed steps before them").range(0, 100'000);
    cli.option("--seed", seed, "the batches' and the weights' seed").range(0, 1'000'000'000);
    cli.option("--d-model", mc.d_model, "d_model (chapter 8 trains 32 to 256)").range(4, 1024);
    cli.option("--heads", mc.heads, "attention heads; must divide d_model").range(1, 64);
    cli.option("--layers", mc.layers, "encoder blocks = decoder blocks").range(1, 12);
    cli.option("--peer", peer,
               "the python that runs chapters/7-translate/peer_torch.py (default: $PEER_PYTHON "
               "or /usr/bin/python3); named here, it must succeed",
               "PY");
    cli.flag("--no-peer", no_peer, "time ours only");
    cli.parse(argc, argv);
    if (mc.d_model % mc.heads != 0)
        cli.fail("--d-model " + std::to_string(mc.d_model) + " is not divisible by --heads " +
                 std::to_string(mc.heads) + "; choose heads that divide it");
    const bool peer_named = !peer.empty();
    if (!peer_named) peer = getenv("PEER_PYTHON") ? getenv("PEER_PYTHON") : "/usr/bin/python3";
    const std::string script = "chapters/7-translate/peer_torch.py";
    if (!no_peer && ::access(script.c_str(), R_OK) != 0)  // before the timed steps, not after
        cli.fail(script +
                 " is not here: run bench-translate from the repository root (make "
                 "bench does), or pass --no-peer");
    // The peer reads the batches from a file in the temporary folder: a folder that is not there
    // is said now, not after our side has been timed.
    const TempFolder tmp = temp_folder();
    if (!no_peer) {
        if (const std::string problem = temp_folder_problem(tmp); !problem.empty()) {
            std::fprintf(stderr, "bench-translate: error: %s\n", problem.c_str());
            return 1;
        }
    }

    omp_set_num_threads(1);  // one thread each, as chapter 7 trains
#if defined(M_MMAP_THRESHOLD)  // as chapter 7's main does
    mallopt(M_MMAP_THRESHOLD, 1 << 30);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif

    // The batches: 64 training numbers each, drawn uniformly (the lengths chapter 7 trains on).
    const Split split = split_numbers();
    torch_rng::Generator g(uint64_t(seed) + 1);
    std::vector<Batch> batches;
    for (int s = 0; s < warmup + steps; s++) {
        std::vector<int64_t> ns;
        for (int i = 0; i < 64; i++) ns.push_back(split.train[g.random64() % split.train.size()]);
        batches.push_back(make_batch(ns));
    }

    mc.seed = seed;
    auto model = make_model(mc);
    optim::Adam adam(model->parameters());
    std::vector<double> ms;  // (steps) the timed steps
    const double peak_before = bench::peak_gflops(1);
    for (int s = 0; s < warmup + steps; s++) {
        const auto t0 = std::chrono::steady_clock::now();
        Tensor loss = batch_loss(*model, batches[size_t(s)]);
        loss.backward();
        adam.step(optim::noam_lr(s + 1, mc.d_model, 200));
        adam.zero_grad();
        const double dt = std::chrono::duration<double, std::milli>(
                              std::chrono::steady_clock::now() - t0).count();
        if (s >= warmup) ms.push_back(dt);
    }
    const double peak = (peak_before + bench::peak_gflops(1)) / 2;  // GFLOP/s
    const double ours = bench::median(ms);
    int64_t tokens = 0;
    for (const Batch& b : batches) tokens += b.tokens;
    // Each timed step over its products' time at the peak; the mean FLOPs of a timed step.
    std::vector<double> ratio;
    bench::StepFlops mean;
    for (int s = warmup; s < warmup + steps; s++) {
        const Batch& b = batches[size_t(s)];
        const bench::StepFlops f = bench::step_flops(b.B, b.S, b.T, mc.d_model, mc.heads,
                                                     mc.layers, TGT_VOCAB,
                                                     model->num_parameters());
        ratio.push_back(ms[size_t(s - warmup)] / (f.products / (peak * 1e6)));
        mean.products += f.products / steps;
        mean.elementwise += f.elementwise / steps;
    }

    std::printf("chapter 7's model: %d + %d %s blocks, d_model %d, %d heads, batch 64, "
                "%.1f real tokens a batch; one thread each, median of %d steps after %d\n",
                mc.layers, mc.layers, placement_name(mc.placement), mc.d_model, mc.heads,
                double(tokens) / double(batches.size()), steps, warmup);
    std::printf("chapter 7 step FLOPs: %.3f GFLOP in products (GEMMs, attention's two), %.3f "
                "elementwise; the products at the one-thread multiply-add peak (%.1f GFLOP/s "
                "around the steps) take %.2f ms: ours %.2fx its FLOP time\n",
                mean.products * 1e-9, mean.elementwise * 1e-9, peak,
                mean.products / (peak * 1e6), bench::median(ratio));
    if (no_peer) {
        std::printf("chapter 7 training step: ours %.1f ms\n", ours);
        return 0;
    }
    // The batches for the peer: a new file of ours in the system's temporary folder (mkstemp:
    // created, never found, so no link planted under its name is followed), removed when the
    // peer is done, and by Ctrl-C or SIGTERM while it runs.
    std::string path =
        (std::filesystem::path(tmp.path) / "bench-translate.batches.XXXXXX").string();
    const int fd = ::mkstemp(path.data());
    if (fd < 0) {
        std::fprintf(stderr,
                     "bench-translate: error: cannot create %s: %s (set TMPDIR to a writable "
                     "folder)\n",
                     path.c_str(), std::strerror(errno));
        return 1;
    }
    const atomic_file::RemoveOnSignal guard(path);
    const std::string text = format_batches(batches);
    std::FILE* f = ::fdopen(fd, "w");
    bool written = f && std::fwrite(text.data(), 1, text.size(), f) == text.size();
    if (f ? std::fclose(f) != 0 : ::close(fd) != 0) written = false;
    if (!written) {
        std::fprintf(stderr, "bench-translate: error: cannot write %s: %s\n", path.c_str(),
                     std::strerror(errno));
        std::remove(path.c_str());
        return 1;
    }
    std::string best;
    for (const std::string& c : openblas::best_for_this_cpu().cores)
        best += (best.empty() ? "" : ",") + c;
    double theirs = -1;
    const int rc = bench::run_child(
        {peer, script, "--batches", path, "--warmup", std::to_string(warmup), "--seed",
         std::to_string(seed), "--d-model", std::to_string(mc.d_model), "--heads",
         std::to_string(mc.heads), "--layers", std::to_string(mc.layers), "--openblas-best", best},
        {}, [&](const std::string& line) {
            double v;
            if (std::sscanf(line.c_str(), "median_ms %lf", &v) == 1)
                theirs = v;
            else
                std::fputs(line.c_str(), stdout);  // the peer's own lines: torch's BLAS, its core
        });
    std::remove(path.c_str());
    if (peer_named && (rc != 0 || theirs <= 0)) {
        std::fprintf(stderr,
                     "bench-translate: error: --peer %s %s failed (exit status %d); check that it "
                     "is a python with torch, or pass --no-peer\n",
                     peer.c_str(), script.c_str(), rc);
        return 1;
    }
    if (rc != 0 || theirs <= 0) {
        std::printf("chapter 7 training step: ours %.1f ms (PyTorch peer failed or not "
                    "installed: %s chapters/7-translate/peer_torch.py; Debian: apt-get install "
                    "python3-torch)\n", ours, peer.c_str());
        return 0;
    }
    std::printf("chapter 7 training step: ours %.1f ms, PyTorch %.1f ms (%.2fx)\n", ours, theirs,
                theirs / ours);
    return 0;
}
