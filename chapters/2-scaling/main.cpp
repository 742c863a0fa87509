// Section 2: why attention divides the scores by sqrt(d_k).
//
// If the d_k components of q and k are independent with mean 0 and variance 1, the dot product
// q.k is a sum of d_k such terms: its variance is d_k. Large logits make softmax pile its mass on
// one key, and the softmax Jacobian diag(p) - p p^T (its trace: sum p(1-p)) goes to zero with it.
// We measure both, for 8 keys, with and without dividing by sqrt(d_k), exactly as the article's
// numpy script does: same generator (np.random.default_rng), same draws, same summation order,
// so the table comes out digit for digit.
//
// Where the article's listing lives here, line by line:
//   def softmax_np(z)                          -> softmax_np()
//   rng = np.random.default_rng(20260830)      -> main(): --seed, drawn in run()
//   for d in [4, 16, 64, 256, 1024]:          -> main(): --dims, one Experiment row per d
//       std, pr, ps, jr, js = [], [], ...      -> struct Measurements
//       q, K = rng.standard_normal(...)        -> run() draws, Experiment::feed() splits q and K
//       z = K @ q ... js.append(...)           -> one_trial()
//       print(f"d_k={d:5d}  로짓 표준편차 ...") -> the end of main()
// The rest is speed: run() draws numpy's one normal stream in parallel blocks and hands each
// trial its q and K, so 100,000 trials take about a second instead of numpy's eight.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <exception>
#include <fstream>
#include <string>
#include <vector>

#include <omp.h>

#include "common/cli.h"
#include "common/plot/plot.h"
#include "common/random.h"

// ---- numpy's arithmetic, where the printed digits could depend on it ------------------------

// np.sum of float64: pairwise summation (numpy's pairwise_sum). Up to 128 elements it adds with
// eight running partial sums and combines them as ((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)); longer
// arrays split in two halves (the first a multiple of 8 long). np.mean = this sum / n.
static double np_sum(const double* a, size_t n) {
    if (n < 8) {
        double s = 0.0;
        for (size_t i = 0; i < n; i++) s += a[i];
        return s;
    }
    if (n <= 128) {
        double r[8];
        for (int j = 0; j < 8; j++) r[j] = a[j];
        size_t i = 8;
        for (; i + 8 <= n; i += 8)
            for (int j = 0; j < 8; j++) r[j] += a[i + j];
        double s = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++) s += a[i];
        return s;
    }
    size_t n2 = n / 2;
    n2 -= n2 % 8;
    return np_sum(a, n2) + np_sum(a + n2, n - n2);
}

static double np_mean(const std::vector<double>& v) { return np_sum(v.data(), v.size()) / v.size(); }

// z.std(): sqrt(mean((z - mean(z))^2)), with numpy's sums.
static double np_std(const double* z, int n) {
    double mean = np_sum(z, n) / n;
    double sq[64];  // n_keys <= 64 (checked in main)
    for (int i = 0; i < n; i++) sq[i] = (z[i] - mean) * (z[i] - mean);
    return std::sqrt(np_sum(sq, n) / n);
}

// softmax_np(z) from the article: subtract the max, exponentiate, normalise.
static void softmax_np(const double* z, double* p, int n) {
    double zmax = z[0];
    for (int i = 1; i < n; i++) zmax = std::fmax(zmax, z[i]);
    for (int i = 0; i < n; i++) p[i] = std::exp(z[i] - zmax);
    double sum = np_sum(p, n);
    for (int i = 0; i < n; i++) p[i] = p[i] / sum;
}

// ---- the experiment ------------------------------------------------------------------------

// Per-trial measurements, one list each like the article's std, pr, ps, jr, js.
struct Measurements {
    std::vector<double> logit_std;              // z.std()
    std::vector<double> pmax_raw, pmax_scaled;  // max softmax probability without / with scaling
    std::vector<double> jac_raw, jac_scaled;    // gradient indicator sum p(1-p)
    explicit Measurements(int trials)
        : logit_std(trials), pmax_raw(trials), pmax_scaled(trials), jac_raw(trials), jac_scaled(trials) {}
};

// z = K @ q for W keys at once: each z[j] is still summed left to right over i, but W running
// sums advance together, so the CPU overlaps their additions instead of waiting on each one.
template <int W>
static void logits(const double* K, const double* q, int d_k, double* z) {
    double s[W] = {};
    for (int i = 0; i < d_k; i++)
#pragma GCC unroll 8
        for (int u = 0; u < W; u++) s[u] += K[(size_t)u * d_k + i] * q[i];
    for (int u = 0; u < W; u++) z[u] = s[u];
}

// Trial t: q (d_k) and K (n_keys, d_k) already drawn. Fills slot t of m.
static void one_trial(const double* q, const double* K, int n_keys, int d_k, Measurements& m, int t) {
    double z[64] = {}, z_scaled[64] = {}, p1[64] = {}, p2[64] = {}, tmp[64] = {};  // (n_keys)
    int j = 0;  // z = K @ q: one dot product per key
    for (; j + 8 <= n_keys; j += 8) logits<8>(K + (size_t)j * d_k, q, d_k, z + j);
    for (; j < n_keys; j++) logits<1>(K + (size_t)j * d_k, q, d_k, z + j);
    m.logit_std[t] = np_std(z, n_keys);

    const double sqrt_dk = std::sqrt((double)d_k);
    for (int j = 0; j < n_keys; j++) z_scaled[j] = z[j] / sqrt_dk;
    softmax_np(z, p1, n_keys);         // without scaling
    softmax_np(z_scaled, p2, n_keys);  // divided by sqrt(d_k)

    double max1 = p1[0], max2 = p2[0];
    for (int j = 1; j < n_keys; j++) {
        max1 = std::fmax(max1, p1[j]);
        max2 = std::fmax(max2, p2[j]);
    }
    m.pmax_raw[t] = max1;
    m.pmax_scaled[t] = max2;

    for (int j = 0; j < n_keys; j++) tmp[j] = p1[j] * (1 - p1[j]);
    m.jac_raw[t] = np_sum(tmp, n_keys);
    for (int j = 0; j < n_keys; j++) tmp[j] = p2[j] * (1 - p2[j]);
    m.jac_scaled[t] = np_sum(tmp, n_keys);
}

// The article's loop: for d_k in dims, `trials` trials, each drawing q (d_k) and then K
// (n_keys, d_k) from the generator. It is fed the stream of draws in pieces, in order; the
// trials within a piece are independent and run in parallel, and a trial cut between two pieces
// is finished when the next one comes.
struct Experiment {
    std::vector<int> dims;
    int trials, n_keys;
    std::vector<Measurements> m;  // one per d_k

    Experiment(std::vector<int> dims_, int trials_, int n_keys_)
        : dims(std::move(dims_)), trials(trials_), n_keys(n_keys_), m(dims.size(), Measurements(trials)) {}

    size_t draws() const {  // how many the whole loop takes
        size_t total = 0;
        for (int d : dims) total += (size_t)trials * (1 + n_keys) * d;
        return total;
    }

    void feed(const double* x, size_t n, int threads) {
        while (n > 0 && di < dims.size()) {
            const int d = dims[di];
            const size_t per_trial = (size_t)(1 + n_keys) * d;  // q (d_k), then K (n_keys, d_k)
            if (!cut.empty() || n < per_trial) {  // a trial cut between two pieces
                const size_t take = std::min(per_trial - cut.size(), n);
                cut.insert(cut.end(), x, x + take);
                x += take;
                n -= take;
                if (cut.size() == per_trial) {
                    one_trial(cut.data(), cut.data() + d, n_keys, d, m[di], t);
                    cut.clear();
                    done(1);
                }
                continue;
            }
            const int whole = (int)std::min<size_t>(n / per_trial, trials - t);
#pragma omp parallel for num_threads(threads) schedule(static)
            for (int i = 0; i < whole; i++) {
                const double* q = x + i * per_trial;
                one_trial(q, q + d, n_keys, d, m[di], t + i);
            }
            x += whole * per_trial;
            n -= whole * per_trial;
            done(whole);
        }
    }

private:
    size_t di = 0;            // the d_k being run
    int t = 0;                // its next trial
    std::vector<double> cut;  // the draws so far of a trial cut between two pieces

    void done(int k) {
        t += k;
        if (t == trials) {
            t = 0;
            di++;
        }
    }
};

static double wall_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
static double cpu_seconds() {  // all threads of the process
    timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

// Runs the loops on np.random.default_rng(seed)'s draws. Every loop starts from a fresh
// generator with the same seed (so does the article's figure script), so each reads a prefix of
// one stream: it is drawn once, 2^21 draws at a time, in parallel (common/random.h says how).
static void run(long seed, const std::vector<Experiment*>& loops, int threads) {
    numpy::Generator rng((uint64_t)seed);
    size_t total = 0;
    for (const Experiment* e : loops) total = std::max(total, e->draws());
    std::vector<double> piece(std::min<size_t>(total, 1 << 21));  // 16 MB
    for (size_t done = 0; done < total;) {
        const size_t n = std::min(piece.size(), total - done);
        const double wall0 = wall_seconds(), cpu0 = cpu_seconds();
        rng.standard_normal_parallel(piece.data(), n, threads);
        for (Experiment* e : loops) e->feed(piece.data(), n, threads);
        done += n;
        // Threads that do not each get a core (a busy machine) wait for each other more than
        // they help: if ours used well under a core each, draw the rest alone.
        const double wall = wall_seconds() - wall0, cpu = cpu_seconds() - cpu0;
        if (threads > 1 && wall > 0.002 && cpu < 0.75 * threads * wall) threads = 1;
    }
}

// Figure 1, as the article's figure script draws it from its loop (d_k = 4, 8, ..., 1024,
// 4000 trials each).
static void draw_figure(const Experiment& figure, const std::string& path) {
    const std::vector<int>& dks = figure.dims;
    const int n_keys = figure.n_keys;
    std::vector<double> pmax_r, pmax_s, jac_r, jac_s;
    for (const Measurements& m : figure.m) {
        pmax_r.push_back(np_mean(m.pmax_raw));
        pmax_s.push_back(np_mean(m.pmax_scaled));
        jac_r.push_back(np_mean(m.jac_raw));
        jac_s.push_back(np_mean(m.jac_scaled));
    }

    plot::Figure fig(11, 4, 150);
    plot::Axes& left = fig.subplot(1, 2, 0);
    left.plot(dks, pmax_r, "o-", "스케일링 없음");
    left.plot(dks, pmax_s, "s-", "sqrt(d_k)로 나눔");
    left.axhline(1.0 / n_keys, {.fmt = "--", .color = plot::gray, .lw = 1,
                                .label = "균등분포 1/" + std::to_string(n_keys)});
    left.set_ylabel("평균 최대 확률");
    left.set_ylim(0, 1.05);
    plot::Axes& right = fig.subplot(1, 2, 1);
    right.plot(dks, jac_r, "o-", "스케일링 없음");
    right.plot(dks, jac_s, "s-", "sqrt(d_k)로 나눔");
    right.set_ylabel("기울기 지표 Sum p(1-p)");
    right.set_yscale("log");
    right.use_plain_log_labels('y', {1.0, 2.0, 5.0});
    left.set_title("분포가 한 곳으로 몰리는 정도");
    right.set_title("학습 신호가 남아 있는 정도");
    for (plot::Axes* ax : {&left, &right}) {
        ax->set_xscale("log");
        ax->use_plain_log_labels('x');
        ax->set_xlabel("d_k");
        ax->grid(0.3);
        ax->legend();
    }
    fig.tight_layout();
    fig.save_png(path);
}

// --threads 0: the cores that are free. The threads meet after every piece of draws, and one
// that waits for a partner the OS has descheduled loses more than it gains: on a busy machine
// we draw alone. Busy: other runnable tasks now, or the last minute's load average (Linux,
// /proc/loadavg; its runnable count includes ourselves).
static int free_cores() {
    const int cores = omp_get_max_threads();
    std::ifstream loadavg("/proc/loadavg");
    double avg1, avg5, avg15;
    int running = 0;
    if (!(loadavg >> avg1 >> avg5 >> avg15 >> running)) return cores;
    const int busy = std::max(running - 1, (int)std::lround(avg1));
    return std::clamp(cores - busy, 1, cores);
}

int main(int argc, char** argv) {
    long seed = 20260830;
    int trials = 20000, n_keys = 8;
    std::vector<int> dims = {4, 16, 64, 256, 1024};
    std::string figure_dir = "figures";
    bool no_figures = false;
    int threads = 0;

    cli::Parser cli("2-scaling", "Section 2: why divide by sqrt(d_k) (the article's table and figure 1)");
    cli.option("--seed", seed, "np.random.default_rng seed");
    cli.option("--trials", trials, "Monte Carlo trials per d_k");
    cli.option("--dims", dims, "comma-separated list of d_k");
    cli.option("--keys", n_keys, "number of keys (softmax width)");
    cli.option("--figure-dir", figure_dir, "folder for 2-scaling.png");
    cli.flag("--no-figures", no_figures, "skip figure 1");
    cli.option("--threads", threads, "worker threads, 0: the free cores (the output never depends on it)");
    cli.parse(argc, argv);
    if (seed < 0) cli.fail("--seed must be a non-negative integer (numpy rejects negative seeds)");
    if (trials < 1) cli.fail("--trials must be at least 1");
    if (n_keys < 1 || n_keys > 64) cli.fail("--keys must be between 1 and 64");
    for (int d : dims)
        if (d < 1 || d > (1 << 20)) cli.fail("--dims entries must be between 1 and 1048576");
    if (threads < 0 || threads > 1024) cli.fail("--threads must be between 0 (the free cores) and 1024");
    if (threads == 0) threads = free_cores();
    // Every trial's five measurements are kept (the article's lists), per d_k, as doubles.
    cli.require_memory(5 * 8 * double(trials) * double(dims.size()),
                       "--trials " + std::to_string(trials) + " for " + std::to_string(dims.size()) +
                           " d_k");

    Experiment table(dims, trials, n_keys);
    Experiment figure({4, 8, 16, 32, 64, 128, 256, 512, 1024}, 4000, n_keys);  // figure 1's loop
    if (no_figures)
        run(seed, {&table}, threads);
    else
        run(seed, {&table, &figure}, threads);

    for (size_t i = 0; i < dims.size(); i++) {
        const Measurements& m = table.m[i];
        std::printf("d_k=%5d  로짓 표준편차 %6.2f | 최대확률 %.3f → %.3f | 기울기 지표 %.4f → %.4f\n",
                    dims[i], np_mean(m.logit_std), np_mean(m.pmax_raw), np_mean(m.pmax_scaled),
                    np_mean(m.jac_raw), np_mean(m.jac_scaled));
    }

    if (!no_figures) {
        try {
            draw_figure(figure, figure_dir + "/2-scaling.png");
        } catch (const std::exception& e) {
            std::fprintf(stderr, "2-scaling: error: %s\n", e.what());
            return 1;
        }
    }
    return 0;
}
