// Section 2, "√d_k는 왜 나누는가": why attention divides the scores by sqrt(d_k).
//
// If the d_k components of q and k are independent with mean 0 and variance 1, the dot product
// q.k is a sum of d_k such terms: its variance is d_k. Large logits make softmax pile its mass on
// one key, and the softmax Jacobian diag(p) - p p^T (its trace: sum p(1-p)) goes to zero with it:
// almost no gradient flows back. Dividing by sqrt(d_k) brings the variance back to 1. We measure
// both, for 8 keys, with and without the division, exactly as the article's numpy script does:
// the same generator (np.random.default_rng), the same draws, numpy's sums, so the table comes
// out digit for digit. The loop below is the article's listing, line for line.
//
//   build/bin/2-scaling                          the article's table, and figure 1 in figures/
//   build/bin/2-scaling --trials 1000 --dims 8,32 --no-figures
//
// The folder, in reading order:
//   main.cpp            this file: softmax_np, the listing's loop, the table, the log-log
//                       slope of the gradient measure against d_k and its verdict, figure 1
//   numpy_math.h, .cpp  numpy's pairwise sums, on which the printed digits depend
// numpy's generator is common/random.h. Section 3 starts at its listing,
// chapters/3-multi-head/multi_head_attention.h.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "chapters/2-scaling/numpy_math.h"
#include "common/plot/plot.h"
#include "common/program/cli.h"
#include "common/random.h"

namespace {

// def softmax_np(z):
std::vector<double> softmax_np(std::vector<double> z) {
    const double zmax = *std::max_element(z.begin(), z.end());
    for (double& x : z) x = x - zmax;  // z = z - z.max()
    std::vector<double> e(z.size());
    for (size_t i = 0; i < z.size(); i++) e[i] = std::exp(z[i]);  // e = np.exp(z)
    const double sum = np_sum(e);
    for (double& x : e) x = x / sum;  // return e / e.sum()
    return e;
}

// The means of the article's five lists for one d_k.
struct Means {
    double logit_std;                // np.mean(std)
    double pmax_raw, pmax_scaled;    // np.mean(pr), np.mean(ps): the largest probability
    double grad_raw, grad_scaled;    // np.mean(jr), np.mean(js): the gradient indicator
};

// The article's loop, from rng = np.random.default_rng(seed) on: one row of means per d_k.
std::vector<Means> experiment(long seed, const std::vector<int>& dims, int trials, int n_keys) {
    numpy::Generator rng(seed);
    std::vector<Means> rows;
    for (int d : dims) {
        std::vector<double> std_, pr, ps, jr, js;  // std, pr, ps, jr, js = [], [], [], [], []
        for (int trial = 0; trial < trials; trial++) {
            std::vector<double> q = rng.standard_normal(d);                   // (d,)
            std::vector<double> K = rng.standard_normal(size_t(n_keys) * d);  // (n_keys, d)
            std::vector<double> z = np_matmul(K, q);                          // (n_keys,) K @ q
            std_.push_back(np_std(z));                                        // z.std()

            std::vector<double> z_scaled(z.size());  // (n_keys,) z / np.sqrt(d)
            for (size_t j = 0; j < z.size(); j++) z_scaled[j] = z[j] / std::sqrt(double(d));
            std::vector<double> p1 = softmax_np(z), p2 = softmax_np(z_scaled);
            pr.push_back(*std::max_element(p1.begin(), p1.end()));  // pr.append(p1.max())
            ps.push_back(*std::max_element(p2.begin(), p2.end()));

            std::vector<double> g1(n_keys), g2(n_keys);  // p * (1 - p)
            for (int j = 0; j < n_keys; j++) g1[j] = p1[j] * (1 - p1[j]);
            for (int j = 0; j < n_keys; j++) g2[j] = p2[j] * (1 - p2[j]);
            jr.push_back(np_sum(g1));  // jr.append((p1 * (1 - p1)).sum())
            js.push_back(np_sum(g2));
        }
        rows.push_back({np_mean(std_), np_mean(pr), np_mean(ps), np_mean(jr), np_mean(js)});
    }
    return rows;
}

// Figure 1 from the article's figure script's loop (below main).
void draw_figure(const std::vector<int>& dks, const std::vector<Means>& rows, int n_keys,
                 const std::string& path);

struct Options {  // the command line, parsed and checked below main
    long seed = 20260830;
    int trials = 20000, n_keys = 8;
    std::vector<int> dims = {4, 16, 64, 256, 1024};
    std::string figure_dir = "figures";
    bool no_figures = false;
    Options(int argc, char** argv);
};

}  // namespace

int main(int argc, char** argv) {
    const Options opt(argc, argv);
    // print(f"d_k={d:5d}  로짓 표준편차 {np.mean(std):6.2f} | ...")
    const std::vector<Means> table = experiment(opt.seed, opt.dims, opt.trials, opt.n_keys);
    for (size_t i = 0; i < opt.dims.size(); i++) {
        const Means& m = table[i];
        std::printf("d_k=%5d  로짓 표준편차 %6.2f | 최대확률 %.3f → %.3f | "
                    "기울기 지표 %.4f → %.4f\n",
                    opt.dims[i], m.logit_std, m.pmax_raw, m.pmax_scaled, m.grad_raw, m.grad_scaled);
    }

    // Beyond the block, the prose after it: "오른쪽 그래프를 로그축으로 그리면 파란 곡선이 거의
    // 직선으로 내려갑니다. 기울기 지표가 √d_k에 반비례한다는 뜻입니다." On a log-log plot,
    // y ~ d_k^-1/2 is a line of slope -0.5: fit it.
    if (opt.dims.size() >= 2) {
        std::vector<double> d, raw, scaled;
        for (size_t i = 0; i < opt.dims.size(); i++) {
            d.push_back(opt.dims[i]);
            raw.push_back(table[i].grad_raw);
            scaled.push_back(table[i].grad_scaled);
        }
        // A measure of exactly 0 (softmax saturated at some d_k) has no logarithm: no slope.
        auto slope_text = [](double k) {
            char t[32];
            std::snprintf(t, sizeof t, "%.3f", k);
            return std::isfinite(k) ? std::string(t) : std::string("맞출 수 없음");
        };
        const double k = loglog_slope(d, raw), k_scaled = loglog_slope(d, scaled);
        std::printf(
            "\n기울기 지표의 로그-로그 기울기 (d_k = %d ~ %d, 최소제곱): 스케일링 없음 "
            "%s, √d_k로 나눔 %s\n",
            opt.dims.front(), opt.dims.back(), slope_text(k).c_str(), slope_text(k_scaled).c_str());
        std::printf("√d_k에 반비례한다면 -0.5, 일정하다면 0입니다.\n");
        if (!std::isfinite(k))
            std::printf(
                "판정 보류 — 스케일링 없는 쪽의 기울기 지표가 어떤 d_k에서 0이 되어 "
                "(softmax 포화) 로그-로그 기울기를 맞출 수 없음\n");
        else
            std::printf(
                "판정: %s — 스케일링 없는 쪽의 기울기 %.3f, -0.5와의 차이 %.3f (기준 0.05)\n",
                std::fabs(k + 0.5) <= 0.05 ? "재현됨" : "이 범위에서는 재현되지 않음", k,
                std::fabs(k + 0.5));
    }

    if (!opt.no_figures) {
        // The figure script runs the same loop from a fresh np.random.default_rng(seed).
        const std::vector<int> dks = {4, 8, 16, 32, 64, 128, 256, 512, 1024};
        const std::vector<Means> rows = experiment(opt.seed, dks, 4000, opt.n_keys);
        try {
            draw_figure(dks, rows, opt.n_keys, opt.figure_dir + "/2-scaling.png");
        } catch (const std::exception& e) {
            std::fprintf(stderr, "2-scaling: error: %s\n", cli::error_text(e));
            return 1;
        }
    }
    return 0;
}

namespace {

Options::Options(int argc, char** argv) {
    cli::Parser cli("2-scaling",
                    "Section 2: why divide by sqrt(d_k) (the article's table and figure 1)");
    cli.option("--seed", seed, "np.random.default_rng seed");
    cli.option("--trials", trials, "Monte Carlo trials per d_k");
    cli.option("--dims", dims, "comma-separated list of d_k");
    cli.option("--keys", n_keys, "number of keys (softmax width)");
    cli.figures(figure_dir, no_figures, "2-scaling.png (figure 1)");
    cli.parse(argc, argv);
    if (seed < 0) cli.fail("--seed must be a non-negative integer (numpy rejects negative seeds)");
    if (trials < 1) cli.fail("--trials must be at least 1");
    if (n_keys < 2 || n_keys > 64)
        cli.fail(
            "--keys must be between 2 and 64 (over one key softmax is 1 whatever the logit, "
            "and the gradient measure 0)");
    for (size_t i = 0; i < dims.size(); i++) {
        if (dims[i] < 1 || dims[i] > (1 << 20))
            cli.fail("--dims entries must be between 1 and 1048576");
        for (size_t j = 0; j < i; j++)
            if (dims[j] == dims[i])
                cli.fail("--dims lists " + std::to_string(dims[i]) +
                         " twice; the slope over d_k needs each d_k once");
    }
    // The five lists of one d_k (the article's std, pr, ps, jr, js) hold `trials` doubles each.
    cli.require_memory(5 * 8 * double(trials), "--trials " + std::to_string(trials));
    cli.check_figure_dir({"2-scaling.png"});  // before the trials, which --trials can make long
}

// Figure 1, as the article's figure script draws it: the largest probability and the gradient
// indicator against d_k, without and with the division.
void draw_figure(const std::vector<int>& dks, const std::vector<Means>& rows, int n_keys,
                 const std::string& path) {
    std::vector<double> pmax_r, pmax_s, grad_r, grad_s;
    for (const Means& m : rows) {
        pmax_r.push_back(m.pmax_raw);
        pmax_s.push_back(m.pmax_scaled);
        grad_r.push_back(m.grad_raw);
        grad_s.push_back(m.grad_scaled);
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
    right.plot(dks, grad_r, "o-", "스케일링 없음");
    right.plot(dks, grad_s, "s-", "sqrt(d_k)로 나눔");
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

}  // namespace
