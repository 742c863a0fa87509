// Chapter 8's figures (see figures.h). Each claim: the left panel has one column per setting,
// every seed's value a small point and, beside them, the mean with its 95% Student's t interval
// (a bar with caps); the right panel has one column per comparison, the paired differences
// (variant - baseline, per seed) the same way, the threshold the verdict is judged against as a
// dashed mark (said under the panel) and each verdict above its column, with its test.
#include "chapters/8-ablations/figures.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "chapters/8-ablations/report.h"
#include "chapters/8-ablations/runs.h"
#include "common/plot/plot.h"
#include "common/program/format.h"

namespace ablations {

namespace {

// Every seed's value at x (spread a little so that equal values stay visible; a seed left out
// as a gray triangle), then, just right of them, the mean and its interval when there is one.
void seed_column(plot::Axes& ax, double x, const std::vector<double>& v, plot::Color c,
                 const std::string& label, const Interval* ci,
                 const std::vector<bool>& valid = {}) {
    std::vector<double> xs, ys, xo, yo;
    for (size_t i = 0; i < v.size(); i++) {
        const double xi =
            x - 0.12 + (v.size() > 1 ? 0.16 * double(i) / double(v.size() - 1) : 0.08);
        const bool in = valid.empty() || valid[i];
        (in ? xs : xo).push_back(xi);
        (in ? ys : yo).push_back(v[i]);
    }
    ax.plot(xs, ys, {.fmt = "o", .color = c, .ms = 4, .alpha = 0.55});
    if (!xo.empty()) ax.plot(xo, yo, {.fmt = "^", .color = plot::gray, .ms = 6});
    if (!ci) return;
    const double xm = x + 0.16;
    if (ci->n >= 2) {
        ax.plot({xm, xm}, {ci->low, ci->high}, {.fmt = "-", .color = c, .lw = 2});
        for (double y : {ci->low, ci->high})
            ax.plot({xm - 0.05, xm + 0.05}, {y, y}, {.fmt = "-", .color = c, .lw = 2});
    }
    ax.plot({xm}, {ci->mean}, {.fmt = "s", .color = c, .ms = 7, .label = label});
}

// The left panel: one column per setting of `claim` (CLAIMS), named in the legend (its mean's
// marker).
void settings_panel(plot::Axes& ax, const Records& r, const std::string& claim,
                    const std::string& ylabel, const std::string& title) {
    const std::vector<Setting>& settings = claim_spec(claim).settings;
    for (size_t i = 0; i < settings.size(); i++) {
        const std::vector<double> v = values_of(r, settings[i].run_key);
        const Interval ci = clipped(t_interval(v), 0, 100);  // a percentage's range
        seed_column(ax, double(i), v, plot::tab10[i % 10], settings[i].label, &ci);
    }
    ax.set_xticks({}, {});
    ax.set_xlim(-0.5, double(settings.size()) - 0.5);
    ax.set_ylim(-2, 105);
    ax.set_xlabel("설정별: 작은 점은 씨앗 하나, 네모는 평균, 막대는 95% 구간");
    ax.set_ylabel(ylabel);
    ax.set_title(title);
    ax.grid(0.3);
}

// A comparison's verdict above its column, line by line: the verdict, its test's counts and
// p (the adjusted one for a primary comparison), its family.
std::vector<std::string> verdict_lines(const Comparison& c) {
    const ComparisonSpec& s = *c.spec;
    if (s.family == Family::identity) return {"구성상 성립", "(판정 아님)"};
    const double p = s.family == Family::primary ? c.p_adj : c.p;
    const std::string n = std::to_string(c.valid_count);
    std::string test = s.test == Test::graded  ? "부호 뒤집기"
                       : s.test == Test::count ? "씨앗 " + std::to_string(c.successes_variant) +
                                                     "/" + n
                                               : std::to_string(c.successes_baseline) + "/" + n +
                                                     " 대 " +
                                                     std::to_string(c.successes_variant) + "/" + n;
    if (!std::isnan(p))
        test += std::string(s.family == Family::primary ? ", 보정 p " : ", p ") + fixed(p, 3);
    return {verdict_korean(c.verdict), test, s.family == Family::primary ? "(주 비교)" : "(탐색)"};
}

// Whether a comparison's differences are percentage points (the comparisons' panel), not
// seconds or steps (clock_panel).
bool in_points(const Comparison& c) { return std::string(c.spec->unit) == "%p"; }

// The right panel: one column per comparison of `claim` in percentage points, its threshold
// dashed.
void comparisons_panel(plot::Axes& ax, const std::vector<Comparison>& all,
                       const std::string& claim) {
    std::vector<double> xt;
    const std::vector<std::string> xl = comparison_labels(all, claim);  // by name, not position
    std::vector<std::vector<std::string>> verdicts;
    double lo = 0, hi = 0;
    size_t k = 0;
    for (const Comparison& c : all) {
        if (c.spec->claim != claim || !in_points(c)) continue;
        const double x = double(k);
        const Rule& rule = c.spec->rule;
        std::vector<double> marks = {rule.threshold};
        if (rule.side == Side::within) marks = {-rule.threshold, rule.threshold};
        for (double t : marks) {
            ax.plot({x - 0.35, x + 0.35}, {t, t}, {.fmt = "--", .color = plot::gray, .lw = 1.2});
            lo = std::min(lo, t), hi = std::max(hi, t);
        }
        // graded: the mean and its interval; the seed counts' estimates are shares of seeds,
        // said in the verdict's line instead
        const bool graded = c.spec->test == Test::graded || c.spec->family == Family::identity;
        seed_column(ax, x, c.diff, plot::tab10[(k + 3) % 10], "", graded ? &c.ci : nullptr,
                    c.valid);
        for (double d : c.diff)
            lo = std::min(lo, d), hi = std::max(hi, d);
        if (graded && c.ci.n >= 2) lo = std::min(lo, c.ci.low), hi = std::max(hi, c.ci.high);
        xt.push_back(x);
        verdicts.push_back(verdict_lines(c));
        k++;
    }
    ax.axhline(0, {.fmt = "-", .color = plot::black, .lw = 0.8});
    const double margin = std::max(1.0, 0.1 * (hi - lo));
    ax.set_ylim(lo - margin, hi + 5 * margin);
    for (size_t i = 0; i < verdicts.size(); i++)  // each comparison's verdict above it
        for (size_t j = 0; j < verdicts[i].size(); j++)
            ax.text(double(i), hi + (4.0 - 1.1 * double(j)) * margin, verdicts[i][j],
                    {.ha = plot::center, .va = plot::center, .size = 7});
    ax.set_xticks(xt, xl);
    ax.set_xlim(-0.5, double(k) - 0.5);
    ax.set_ylabel("차이: 변형 - 기준 (%p, 씨앗별)");
    // Said below the panel, not in a legend: a legend inside the panel can cover a verdict.
    ax.set_xlabel("회색 점선: 판정 기준, 회색 삼각형: 기준 모델이 최소 성능 미달이라 제외된 씨앗");
    ax.set_title("씨앗마다 짝지은 차이와 판정 기준");
    ax.grid(0.3);
}

// A measure that is not a percentage (seconds, steps to a level): every seed's value of each
// run:key in `columns` (label, run:key), a run that never got there (+inf) left out and
// counted under the panel, and above, the verdict of each comparison of `claim` judged on
// such values (unit other than %p).
void clock_panel(plot::Axes& ax, const Records& r, const std::vector<Comparison>& all,
                 const std::string& claim,
                 const std::vector<std::pair<std::string, std::string>>& columns,
                 const std::string& ylabel, const std::string& what, const std::string& title) {
    double top = 1;
    int never = 0;
    std::vector<double> xt;
    std::vector<std::string> xl;
    for (size_t i = 0; i < columns.size(); i++) {
        std::vector<double> reached;
        for (double v : values_of(r, columns[i].second))
            if (std::isinf(v))
                never++;
            else
                reached.push_back(v), top = std::max(top, v);
        const Interval ci = t_interval(reached);
        seed_column(ax, double(i), reached, plot::tab10[i % 10], columns[i].first, &ci);
        xt.push_back(double(i));
        xl.push_back(columns[i].first);
    }
    ax.set_xticks(xt, xl);
    ax.set_xlim(-0.5, double(columns.size()) - 0.5);
    ax.set_ylim(0, 1.6 * top);
    for (const Comparison& c : all) {
        if (c.spec->claim != claim || in_points(c)) continue;
        const std::vector<std::string> lines = verdict_lines(c);
        for (size_t j = 0; j < lines.size(); j++)
            ax.text(0.5 * double(columns.size() - 1), (1.5 - 0.1 * double(j)) * top, lines[j],
                    {.ha = plot::center, .va = plot::center, .size = 7});
    }
    ax.set_ylabel(ylabel);
    ax.set_xlabel(what + ": 점은 씨앗 하나 (닿지 못한 실행 " + std::to_string(never) +
                  "개는 빠짐)");
    ax.set_title(title);
    ax.grid(0.3);
}

void two_panels(const Records& r, const std::vector<Comparison>& c, const std::string& claim,
                const std::string& ylabel, const std::string& title, const std::string& path) {
    plot::Figure fig(12, 4.5, 150);
    plot::Axes& left = fig.subplot(1, 2, 0);
    settings_panel(left, r, claim, ylabel, title);
    left.legend({.loc = "best", .fontsize = 8});
    plot::Axes& right = fig.subplot(1, 2, 1);
    comparisons_panel(right, c, claim);
    fig.tight_layout();
    fig.save_png(path);
}

// two_panels with a third: the claim's rows in seconds or steps beside their values
// (clock_panel).
void three_panels(const Records& r, const std::vector<Comparison>& c, const std::string& claim,
                  const std::string& ylabel, const std::string& title,
                  const std::vector<std::pair<std::string, std::string>>& clock_columns,
                  const std::string& clock_ylabel, const std::string& clock_what,
                  const std::string& clock_title, const std::string& path) {
    plot::Figure fig(16, 4.5, 150);
    plot::Axes& left = fig.subplot(1, 3, 0);
    settings_panel(left, r, claim, ylabel, title);
    left.legend({.loc = "best", .fontsize = 8});
    comparisons_panel(fig.subplot(1, 3, 1), c, claim);
    clock_panel(fig.subplot(1, 3, 2), r, c, claim, clock_columns, clock_ylabel, clock_what,
                clock_title);
    fig.tight_layout();
    fig.save_png(path);
}

}  // namespace

void draw_scaling(const Records& r, const std::vector<Comparison>& c, const std::string& path) {
    two_panels(r, c, "scaling", "정확히 일치 (%, 시험 집합)", "√d_k로 나누기를 빼면", path);
}

void draw_heads(const Records& r, const std::vector<Comparison>& c, const std::string& path) {
    three_panels(r, c, "heads", "정확도 (%, 시험 집합)", "같은 파라미터 수, 헤드 수만 다름",
                 {{"헤드 4개", "nb-4-fresh:steps_to_99"}, {"헤드 1개", "nb-1-fresh:steps_to_99"}},
                 "스텝", "이웃 차이, 새 씨앗, 검증 99%까지", "헤드 1개가 더 느린가?", path);
}

void draw_pruning(const Records& r, const std::vector<Comparison>& c, const std::string& path) {
    const std::vector<const Record*>& base = r.at("base");
    plot::Figure fig(12, 4.5, 150);
    plot::Axes& left = fig.subplot(1, 2, 0);
    const size_t n = base[0]->get("exact_test_pruned").size();
    std::vector<double> mean(n + 1, 0.0), x(n + 1);
    std::iota(x.begin(), x.end(), 0.0);
    for (const Record* b : base) {
        std::vector<double> y = {b->value("exact")};
        const std::vector<double>& curve = b->get("exact_test_pruned");
        y.insert(y.end(), curve.begin(), curve.end());
        left.plot(x, y, {.fmt = "o",
                         .color = plot::tab10[0],
                         .ms = 3,
                         .label = b == base[0] ? "씨앗별 (시험 집합)" : "",
                         .alpha = 0.45});
        for (size_t i = 0; i <= n; i++)
            mean[i] += y[i] / double(base.size());
    }
    left.plot(x, mean, {.fmt = "-", .color = plot::tab10[0], .lw = 1.5, .label = "씨앗 평균"});
    const double third = double(third_of_heads(int(n)));
    left.plot({third, third}, {0, 105},
              {.fmt = "--", .color = plot::gray, .lw = 1, .label = "헤드의 3분의 1"});
    left.set_xlabel("제거한 헤드 수 (검증 집합에서 덜 중요한 것부터)");
    left.set_ylabel("정확히 일치 (%, 시험 집합)");
    left.set_ylim(0, 105);
    left.set_title("헤드를 차례로 제거하기 (" + std::to_string(n) + "개)");
    left.grid(0.3);
    left.legend({.loc = "lower left", .fontsize = 8});
    plot::Axes& right = fig.subplot(1, 2, 1);
    comparisons_panel(right, c, "pruning");
    fig.tight_layout();
    fig.save_png(path);
}

void draw_positions(const Records& r, const std::vector<Comparison>& c, const std::string& path) {
    plot::Figure fig(16, 4.5, 150);
    plot::Axes& left = fig.subplot(1, 3, 0);
    const Record& learned0 = *r.at("pos-learned")[0];
    settings_panel(left, r, "positions", "정확히 일치 (%, 시험 집합)", "학습에 없던 길이");
    left.legend({.loc = "best", .fontsize = 8});
    plot::Axes& mid = fig.subplot(1, 3, 1);
    comparisons_panel(mid, c, "positions");
    plot::Axes& right = fig.subplot(1, 3, 2);
    const std::vector<double>&src = learned0.get("src_pos_row_change"),
          &tgt = learned0.get("tgt_pos_row_change");
    std::vector<double> rows(src.size());
    std::iota(rows.begin(), rows.end(), 0.0);
    right.plot(rows, src, "o-", "입력 쪽 표");
    right.plot(rows, tgt, "s-", "출력 쪽 표");
    right.set_xlabel("위치 (행)");
    right.set_ylabel("학습으로 바뀐 크기 (행의 노름)");
    right.set_title("학습된 위치 표 (첫 씨앗): 닿지 않은 행은 그대로");
    right.grid(0.3);
    right.legend();
    fig.tight_layout();
    fig.save_png(path);
}

void draw_opening(const Records& r, const std::vector<Comparison>& c, const std::string& path) {
    three_panels(r, c, "opening", "정확히 일치 (%, 시험 집합)", "같은 스텝, 비슷한 매개변수 수",
                 {{"Transformer", "base:seconds_to_level"},
                  {"LSTM + 어텐션", "lstm:seconds_to_level"}},
                 "학습 시간 (초, 코어 하나)", "검증 " + fixed(LEVEL_PERCENT, 0) + "%까지",
                 "Transformer의 시간 < LSTM의 절반?", path);
}

void draw_order(const Records& r, const std::vector<Comparison>& c, const std::string& path) {
    two_panels(r, c, "order", "정확히 일치 (%, 시험 집합)", "위치 벡터를 빼면", path);
}

void draw_warmup(const Records& r, const std::vector<Comparison>& c, const std::string& path) {
    // Eight settings and seven comparisons: one above the other, each the figure's width, so
    // that the comparisons' names do not run into each other.
    plot::Figure fig(16, 9, 150);
    plot::Axes& top = fig.subplot(2, 1, 0);
    settings_panel(top, r, "warmup", "정확히 일치 (%, 시험 집합)",
                   "6 + 6층, 최고 학습률 lr (논문) 또는 lr/3, lr/10");
    top.legend({.loc = "best", .fontsize = 8});
    plot::Axes& bottom = fig.subplot(2, 1, 1);
    comparisons_panel(bottom, c, "warmup");
    fig.tight_layout();
    fig.save_png(path);
}

void draw_residual(const Records& r, const std::vector<Comparison>& c, const std::string& path) {
    two_panels(r, c, "residual", "정확히 일치 (%, 시험 집합)", "6 + 6층 Post-LN, 워밍업 있음",
               path);
}

void draw_first_step(const Records& r, const std::vector<Comparison>& c,
                     const std::string& path) {
    const auto [w_min, w_max] = self_weight_range(r);
    const std::string weight = w_min == w_max ? "가중치 " + fixed(w_min, 6)
                                              : "가중치 " + fixed(w_min, 6) + "~" + fixed(w_max, 6);
    two_panels(r, c, "first-step",
               "첫 숫자 정답 (%)", "첫 생성 스텝: 셀프 어텐션은 <시작> 자신만 봄 (" + weight + ")",
               path);
}

std::vector<std::string> comparison_labels(const std::vector<Comparison>& all,
                                           const std::string& claim) {
    std::vector<std::string> labels;
    for (const Comparison& c : all)
        if (c.spec->claim == claim && in_points(c)) labels.push_back(c.spec->label);
    return labels;
}

}  // namespace ablations
