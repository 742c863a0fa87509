// Section 6's prose claims (see claims.h).
#include "chapters/6-cost/claims.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "chapters/2-scaling/numpy_math.h"
#include "chapters/6-cost/layers.h"
#include "common/plot/plot.h"
#include "common/random.h"

namespace {

// A random unit vector per probe, in rows of d: the direction the last output is pulled in.
void unit_rows(float* out, int rows, int d, torch_rng::Generator& g) {
    for (int r = 0; r < rows; r++) {
        float* v = out + size_t(r) * d;
        g.uniform_(v, size_t(d), -1.0, 1.0);
        double s = 0;
        for (int c = 0; c < d; c++)
            s += double(v[c]) * v[c];
        for (int c = 0; c < d; c++)
            v[c] = float(v[c] / std::sqrt(s));
    }
}

double row_norm(const float* v, int d) {
    double s = 0;
    for (int c = 0; c < d; c++)
        s += double(v[c]) * v[c];
    return std::sqrt(s);
}

// Over the points where g > 0: the exponent k of g ~ n^k (log_x: chapter 2's log-log slope) or
// the factor r of g ~ r^n (the slope of log g against n, chapter 2's least-squares line).
double fit(const std::vector<int>& n, const std::vector<double>& g, bool log_x) {
    std::vector<double> xs, ys;
    for (size_t i = 0; i < n.size(); i++)
        if (g[i] > 0) xs.push_back(n[i]), ys.push_back(g[i]);
    if (log_x) return loglog_slope(xs, ys);
    for (double& y : ys) y = std::log(y);
    return std::exp(polyfit_slope(xs, ys));
}

}  // namespace

PathLengths path_lengths(const std::vector<int>& ns, int d_model, int heads, int probes) {
    PathLengths p;
    const int D = d_model, B = probes;
    const float bound = 1.0f / std::sqrt(float(D));  // nn.Linear's and nn.LSTM's init range
    for (int n : ns) {
        torch_rng::Generator g(uint64_t(n) * 7 + 1);
        p.n.push_back(n);
        {  // attention: x and dy are (B, n, D); dy is u at position n - 1 only
            AttentionLayer layer(D, heads, /*fused=*/false);
            g.uniform_(layer.W_qkv.data(), layer.W_qkv.size(), -bound, bound);
            g.uniform_(layer.W_o.data(), layer.W_o.size(), -bound, bound);
            mem::Buffer<float> x(size_t(B) * n * D), dy(size_t(B) * n * D);  // (B, n, D)
            g.uniform_(x.data(), x.size(), -1.0, 1.0);
            std::vector<float> u(size_t(B) * D);  // (B, D): one unit vector per sequence
            unit_rows(u.data(), B, D, g);
            for (int b = 0; b < B; b++)
                std::copy_n(u.data() + size_t(b) * D, D, dy.data() + (size_t(b) * n + n - 1) * D);
            { mem::Buffer<float> y = layer.forward(x.data(), B, n); }
            mem::Buffer<float> dx = layer.backward(dy.data());
            double s = 0;
            for (int b = 0; b < B; b++)
                s += row_norm(dx.data() + size_t(b) * n * D, D);  // x_1
            p.attention.push_back(s / B);
        }
        {  // LSTM: time-major (n, B, D); dy is u at step n - 1 only
            LstmLayer layer(D);
            g.uniform_(layer.W_ih.data(), layer.W_ih.size(), -bound, bound);
            g.uniform_(layer.W_hh.data(), layer.W_hh.size(), -bound, bound);
            g.uniform_(layer.b.data(), layer.b.size(), -2 * bound, 2 * bound);  // b_ih + b_hh
            mem::Buffer<float> x(size_t(n) * B * D), dy(size_t(n) * B * D);     // (n, B, D)
            g.uniform_(x.data(), x.size(), -1.0, 1.0);
            std::vector<float> u(size_t(B) * D);  // (B, D): one unit vector per sequence
            unit_rows(u.data(), B, D, g);
            std::copy(u.begin(), u.end(), dy.data() + size_t(n - 1) * B * D);
            layer.forward(x.data(), n, B);
            mem::Buffer<float> dx = layer.backward(dy.data());
            double s = 0;
            for (int b = 0; b < B; b++)
                s += row_norm(dx.data() + size_t(b) * D, D);  // step 0
            p.lstm.push_back(s / B);
        }
    }
    return p;
}

double path_lengths_peak_bytes(const std::vector<int>& ns, int d_model, int heads, int probes) {
    double peak = 0;  // one layer at a time, the naive attention layer and then the LSTM
    for (int n : ns)
        peak =
            std::max({peak, AttentionLayer::predicted_peak_bytes(false, probes, n, d_model, heads),
                      LstmLayer::predicted_peak_bytes(probes, n, d_model)});
    return peak;
}

void print_path_lengths(const PathLengths& p, int d_model) {
    std::printf(
        "최장 의존 경로: 마지막 위치의 출력에서 첫 위치의 입력까지 오는 기울기 "
        "|u·∂y_n/∂x_1| (초기화 직후, d_model = %d)\n",
        d_model);
    std::printf("     n |          LSTM | Self-attention\n");
    for (size_t i = 0; i < p.n.size(); i++)
        std::printf("%6d | %13.3e | %14.3e\n", p.n[i], p.lstm[i], p.attention[i]);
    const double k = fit(p.n, p.attention, true);
    // The LSTM's gradient shrinks by a factor per step: a straight line on a log-linear plot.
    const double lstm_rate = fit(p.n, p.lstm, false);
    int zero_from = 0;
    for (size_t i = 0; i < p.n.size(); i++)
        if (p.lstm[i] == 0 && !zero_from) zero_from = p.n[i];
    // A fit needs two lengths with a gradient above 0 (--path-lens 16 alone has one point).
    char text[96];
    std::snprintf(text, sizeof text, "한 단계마다 약 %.3f배 (n번의 곱셈)", lstm_rate);
    const std::string lstm_fit = std::isfinite(lstm_rate)
                                     ? text
                                     : "한 단계마다의 배율은 맞출 수 없음 (0보다 큰 점이 둘 미만)";
    std::snprintf(text, sizeof text, "n^%.2f (한 단계, 다만 가중치가 n개 위치에 나뉨)", k);
    const std::string attention_fit =
        std::isfinite(k) ? text : "지수는 맞출 수 없음 (0보다 큰 점이 둘 미만)";
    const std::string zeros =
        zero_from ? "n = " + std::to_string(zero_from) + "부터 float32의 0" : "";
    std::printf("LSTM: %s%s%s; Self-attention: %s\n", lstm_fit.c_str(), zero_from ? ", " : "",
                zeros.c_str(), attention_fit.c_str());
    if (!std::isfinite(k) || (!std::isfinite(lstm_rate) && !zero_from)) {
        std::printf(
            "판정 보류 — 기울기가 0보다 큰 서로 다른 길이가 둘 이상 있어야 추세를 맞출 수 "
            "있음 (--path-lens에 길이를 둘 이상)\n\n");
        return;
    }
    const bool lstm_vanishes = lstm_rate < 0.99 || zero_from;
    const bool attention_polynomial = k > -1.5;
    std::snprintf(text, sizeof text, "한 단계마다 %.3f배", lstm_rate);
    // The verdict names the exponent it judged (the rule: polynomial, k > -1.5), not a fixed 1/n.
    std::printf(
        "판정: %s — LSTM은 거리에 따라 지수적으로 사라지고(%s), 어텐션은 맞춘 지수대로 n^%.2f로만 "
        "줄어듦 (기준: 지수 > -1.5; n = %d에서 %.1e 대 %.1e)\n\n",
        lstm_vanishes && attention_polynomial ? "재현됨" : "엇갈림",
        std::isfinite(lstm_rate) ? text : zeros.c_str(), k, p.n.back(), p.lstm.back(),
        p.attention.back());
}

std::string path_length_zeros(const std::vector<int>& n, const std::vector<double>& g) {
    std::vector<int> zeros;
    for (size_t i = 0; i < n.size(); i++)
        if (!(g[i] > 0)) zeros.push_back(n[i]);
    if (zeros.empty()) return "";
    // Zeros from some n to the end (what the LSTM gives): "n ≥ 256"; otherwise each n.
    const size_t first = size_t(std::find(n.begin(), n.end(), zeros[0]) - n.begin());
    if (zeros.size() == n.size() - first && zeros.size() > 1)
        return "n ≥ " + std::to_string(zeros[0]);
    std::string which = "n = ";
    for (size_t i = 0; i < zeros.size(); i++) which += (i ? ", " : "") + std::to_string(zeros[i]);
    return which;
}

void draw_path_lengths(const PathLengths& p, int d_model, const std::string& path) {
    plot::Figure fig(7, 4, 150);
    plot::Axes& ax = fig.subplot(1, 1, 0);
    // Zeros cannot sit on a log axis: they are left out, and a note in the corner says which
    // (the LSTM's gradient is exactly 0 in float32 from n = 256 at the defaults).
    std::vector<double> n_l, g_l, n_a, g_a;
    double lowest = 0, highest = 0;  // the values drawn
    for (size_t i = 0; i < p.n.size(); i++) {
        if (p.lstm[i] > 0) n_l.push_back(p.n[i]), g_l.push_back(p.lstm[i]);
        if (p.attention[i] > 0) n_a.push_back(p.n[i]), g_a.push_back(p.attention[i]);
        for (double g : {p.lstm[i], p.attention[i]})
            if (g > 0) {
                lowest = lowest == 0 ? g : std::min(lowest, g);
                highest = std::max(highest, g);
            }
    }
    ax.plot(n_a, g_a, "o-", "Self-attention (경로 1단계)");
    ax.plot(n_l, g_l, "^-", "LSTM (경로 n단계)");
    std::string note;
    for (const auto& [name, g] : {std::pair{"LSTM", &p.lstm}, {"Self-attention", &p.attention}}) {
        const std::string which = path_length_zeros(p.n, *g);
        if (!which.empty()) note += (note.empty() ? "" : "; ") + (name + (", " + which));
    }
    if (!note.empty() && lowest > 0)  // right-aligned at the last n, halfway up the log axis
        ax.text(p.n.back(), std::sqrt(lowest * highest), note + ": 정확히 0, 그리지 않음",
                {.ha = plot::right, .va = plot::center});
    ax.set_xscale("log", 2);
    ax.set_yscale("log");
    ax.set_xlabel("시퀀스 길이 n");
    ax.set_ylabel("|u·∂y_n/∂x_1|");
    ax.set_title("첫 위치까지 오는 기울기 (초기화 직후, d_model = " + std::to_string(d_model) +
                 ")");
    ax.grid(0.3);
    ax.legend({.loc = "lower left"});
    fig.tight_layout();
    fig.save_png(path);
}

int memory_crossover(int batch, int d_model, int heads) {
    auto naive_above = [&](int n) {
        return AttentionLayer::predicted_peak_bytes(false, batch, n, d_model, heads) >
               LstmLayer::predicted_peak_bytes(batch, n, d_model);
    };
    int lo = 1, hi = 1 << 20;  // naive grows like n^2, the LSTM like n: one crossing
    if (naive_above(lo)) return lo;
    while (hi - lo > 1) {
        const int mid = lo + (hi - lo) / 2;
        (naive_above(mid) ? hi : lo) = mid;
    }
    return hi;
}

void print_memory_crossover(const std::vector<int>& seq_lens, const std::vector<double>& naive_mb,
                            const std::vector<double>& lstm_mb, int batch, int d_model, int heads) {
    std::printf(
        "\n메모리 교차점: 단순 구현의 최대 메모리가 LSTM을 넘는 n (헤드 %d개, 메모리 "
        "모델로 계산)\n",
        heads);
    const int batches[] = {1, 8, 32}, widths[] = {128, 256, 512, 1024};
    std::printf("  d_model |");
    for (int b : batches)
        std::printf("       배치 %2d     |", b);
    std::printf("\n");
    for (int d : widths) {
        std::printf("  %7d |", d);
        for (int b : batches) {
            const int n = memory_crossover(b, d, heads);
            std::printf(" n = %5d (%.2fd) |", n, double(n) / d);
        }
        std::printf("\n");
    }
    // This run's measured peaks: the first measured n where naive was above the LSTM.
    std::string measured = "이번 측정에서는 교차하지 않음";
    for (size_t k = 0; k < seq_lens.size(); k++) {
        if (naive_mb[k] < 0 || lstm_mb[k] < 0) continue;
        if (naive_mb[k] > lstm_mb[k]) {
            measured = k == 0 ? "n = " + std::to_string(seq_lens[k]) + "에서 이미 단순 구현이 큼"
                              : "n = " + std::to_string(seq_lens[k - 1]) + "과 " +
                                    std::to_string(seq_lens[k]) + " 사이";
            break;
        }
    }
    const int here = memory_crossover(batch, d_model, heads);
    std::printf("이번 설정(배치 %d, d_model = %d): 모델 n = %d, 측정 %s\n", batch, d_model, here,
                measured.c_str());
    // The naive layer holds 3 (B, h, n, n) matrices at its peak against the LSTM's extra
    // 4 (B, n, d): they meet where 3 h n ~ 4 d (plus the weights' share, larger at small B),
    // so the crossing scales with d_model / h, not with d_model alone.
    bool one = false;
    for (int d : widths)
        for (int b : batches)
            one |= std::fabs(double(memory_crossover(b, d, heads)) / d - 1) < 0.1;
    std::printf(
        "판정: %s — 교차점은 배치가 클수록 4·d_model/(3h)에 가까워지고(h = %d: %.0f), "
        "n = d_model과는 %s\n",
        one ? "엇갈림" : "이 규모에서는 재현되지 않음", heads, 4.0 * d_model / (3.0 * heads),
        one ? "일부 설정에서만 맞음" : "어느 설정에서도 맞지 않음");
}
