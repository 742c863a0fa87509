// Chapter 8's printed report (see report.h): each claim's table, then its comparisons' verdicts.
#include "chapters/8-ablations/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "chapters/8-ablations/runs.h"
#include "common/program/format.h"
#include "common/program/terminal.h"

namespace ablations {

namespace {

// The mean of the last k losses (the noise of single batches averaged out).
double tail_loss(const std::vector<double>& loss, size_t k) {
    if (loss.empty()) return NAN;
    const size_t from = loss.size() > k ? loss.size() - k : 0;
    double s = 0;
    for (size_t i = from; i < loss.size(); i++)
        s += loss[i];
    return s / double(loss.size() - from);
}
constexpr size_t TAIL = 50;
size_t tail_steps(int steps) { return std::min(TAIL, size_t(std::max(steps, 1))); }

// Over the seeds: "mean ± half-width" of a measure (the 95% t interval; one seed: the value);
// "mean [low, high]" where the interval reaches past the range the measure can take, [lo, hi],
// and is clipped to it.
std::string spread(const std::vector<double>& v, int digits, double lo = -INFINITY,
                   double hi = INFINITY) {
    const Interval ci = t_interval(v);
    if (ci.n < 2) return fixed(ci.mean, digits);
    if (ci.low < lo || ci.high > hi) {
        const Interval c = clipped(ci, lo, hi);
        return fixed(c.mean, digits) + " [" + fixed(c.low, digits) + ", " + fixed(c.high, digits) +
               "]";
    }
    return fixed(ci.mean, digits) + " ± " + fixed(ci.half_width(), digits);
}
// The same for a percentage.
std::string spread_pct(const std::vector<double>& v, int digits) {
    return spread(v, digits, 0, 100);
}
// Every seed's value, space-separated, "-" for +inf (never got there).
std::string per_seed(const std::vector<double>& v, int digits) {
    std::string out;
    for (double x : v)
        out += (out.empty() ? "" : " ") + (std::isinf(x) ? std::string("-") : fixed(x, digits));
    return out;
}
std::vector<double> tail_losses(const std::vector<const Record*>& runs, int steps) {
    std::vector<double> out;
    for (const Record* r : runs)
        out.push_back(tail_loss(r->get("loss"), tail_steps(steps)));
    return out;
}

}  // namespace

namespace {

// The smallest p the comparison's test can give with n valid seeds: what more seeds buy.
double smallest_p(const Comparison& c) {
    const int n = c.valid_count;
    if (c.spec->test == Test::fisher) return fisher_p(n, n, 0, n);
    return 2.0 / std::pow(2.0, n);  // every sign (or every seed) the same way
}

std::string p_text(double p) { return fixed(p, 4); }

}  // namespace

void report_comparisons(const std::vector<Comparison>& all, const std::string& claim) {
    for (const Comparison& c : all) {
        if (c.spec->claim != claim) continue;
        const ComparisonSpec& s = *c.spec;
        const Interval& ci = c.ci;
        std::string diffs;
        int excluded = 0, neither = 0;  // below the floor; neither run at the level (inf - inf)
        for (size_t i = 0; i < c.diff.size(); i++) {
            const bool nan = std::isnan(c.diff[i]);
            diffs += (diffs.empty() ? "" : " ") + (nan ? std::string("-") : fixed(c.diff[i], 1));
            if (nan)
                diffs += "(둘 다 닿지 못함)", neither++;
            else if (!c.valid[i])
                diffs += "(기준 미달)", excluded++;
        }
        const char* family = s.family == Family::primary       ? "주 비교"
                             : s.family == Family::exploratory ? "탐색 비교"
                                                               : "항등식";
        const std::string what = s.weight == 0     ? std::string(s.variant)
                                 : s.weight == 1 ? std::string(s.variant) + " − " + s.baseline
                                                 : std::string(s.variant) + " − " +
                                                       fixed(s.weight, 1) + " × " + s.baseline;
        std::printf("  비교 %s (%s, %s): 씨앗별 차이 (%s) %s\n", what.c_str(), s.metric, family,
                    s.unit, diffs.c_str());
        if (s.weight != 0 && s.floor > 0)
            std::printf("    기준의 최소 성능 %s점: 씨앗 %zu개 중 %d개가 미달, 제외 (유효 %d개)\n",
                        fixed(s.floor, 0).c_str(), c.diff.size(), excluded, c.valid_count);
        const std::string rule = rule_text(s.rule);
        if (s.family == Family::identity) {
            std::printf("    평균 %s점 → %s: 모델의 구조가 정하는 값이라 검정하지 않음\n",
                        fixed(ci.mean, 2).c_str(), verdict_korean(c.verdict));
            continue;
        }
        std::string test;
        switch (s.test) {
            case Test::graded:
                test = "평균 " + fixed(ci.mean, 2) + "점, 95% 구간 [" + fixed(ci.low, 2) + ", " +
                       fixed(ci.high, 2) + "] (가능한 범위 안), 기준 " + rule +
                       ", 부호 뒤집기 정확 검정";
                break;
            case Test::count:
                test = "기준 " + rule + " 쪽 씨앗 " + std::to_string(c.successes_variant) + "/" +
                       std::to_string(c.valid_count) + " (95% 구간 [" + fixed(ci.low, 1) +
                       ", " + fixed(ci.high, 1) + "]%), 이항 정확 검정 (1/2에 대해)";
                break;
            case Test::fisher:
                test = fixed(s.level, 0) + "% 이상 도달 씨앗: 기준 " +
                       std::to_string(c.successes_baseline) + "/" +
                       std::to_string(c.valid_count) + ", 변형 " +
                       std::to_string(c.successes_variant) + "/" +
                       std::to_string(c.valid_count) + ", Fisher 정확 검정";
                break;
        }
        std::string p = std::isnan(c.p) ? " p 없음" : " p = " + p_text(c.p);
        if (s.family == Family::primary && !std::isnan(c.p_adj))
            p += ", Holm 보정 p = " + p_text(c.p_adj);
        std::string why;
        if (c.verdict == Verdict::undecided) {
            if (c.too_few)
                why = excluded > 0  ? " (기준 모델이 학습하지 못함: 유효 씨앗 " +
                                         std::to_string(c.valid_count) + "개, 최소 " +
                                         std::to_string(MIN_VALID_SEEDS) + "개)"
                      : neither > 0 ? " (두 모델 다 수준에 닿지 못한 씨앗을 빼면 유효 씨앗 " +
                                         std::to_string(c.valid_count) + "개, 최소 " +
                                         std::to_string(MIN_VALID_SEEDS) + "개)"
                                    : " (씨앗이 너무 적음: 최소 " +
                                         std::to_string(MIN_VALID_SEEDS) + "개)";
            else
                why = " (p ≥ 0.05; 유효 씨앗 " + std::to_string(c.valid_count) +
                      "개로 이 검정이 낼 수 있는 가장 작은 p는 " + p_text(smallest_p(c)) + ")";
        }
        std::printf("    %s%s → 판정: %s%s\n", test.c_str(), p.c_str(),
                    verdict_korean(c.verdict), why.c_str());
    }
}

std::pair<double, double> self_weight_range(const Records& r) {
    const std::vector<double> lo = values_of(r, "base:self_weight_min"),
                              hi = values_of(r, "base:self_weight_max");
    if (lo.empty()) throw std::runtime_error("no base run for the first-step weights");
    return {*std::min_element(lo.begin(), lo.end()), *std::max_element(hi.begin(), hi.end())};
}

void report_scaling(const Records& r, const std::vector<Comparison>& cmp, double scale) {
    const int s256 = steps_of("scaled-256", scale), s16 = steps_of("base", scale);
    std::printf("\n== 2절 \"이 나눗셈을 빼면 모델이 학습을 거의 하지 못합니다\" ==\n");
    std::printf(
        "같은 모델을 √d_k로 나누어, 또 나누지 않고 학습합니다. d_k = 256: 인코더 1층 + "
        "디코더 1층, d_model = 256, 헤드 1개, %d스텝; d_k = 16: 7장의 모델, %d스텝\n",
        s256, s16);
    std::printf("  d_k | 점수       | 초기 최대 확률 | 마지막 %zu스텝 손실 | 정확히 일치 (%%)\n",
                tail_steps(std::min(s256, s16)));
    struct Row {
        int d_k;
        const char* how;
        const char* run;
        int steps;
    };
    for (Row row : {Row{256, "√d_k로 나눔", "scaled-256", s256},
                    Row{256, "나누지 않음", "unscaled-256", s256},
                    Row{16, "√d_k로 나눔", "base", s16},
                    Row{16, "나누지 않음", "unscaled-16", s16}})
        std::printf("  %3d | %s | %14s | %18s | %s\n", row.d_k,
                    term::pad_right(row.how, 10).c_str(),
                    spread(values_of(r, std::string(row.run) + ":init_attention_peak"), 3, 0, 1)
                        .c_str(),
                    spread(tail_losses(r.at(row.run), row.steps), 4, 0).c_str(),
                    spread_pct(values_of(r, std::string(row.run) + ":exact"), 1).c_str());
    report_comparisons(cmp, "scaling");
}

void report_heads(const Records& r, const std::vector<Comparison>& cmp, double scale) {
    std::printf("\n== 3절 분포 하나로는 관계 여럿을 담지 못한다: 헤드 4개 대 1개 ==\n");
    if (r.count("base") && r.count("heads-1")) {
        const int steps = steps_of("heads-1", scale);
        std::printf("7장의 모델(d_model = 64, 파라미터 수는 헤드 수와 무관하게 같음), %d스텝\n",
                    steps);
        std::printf("  헤드 | d_k | 마지막 %zu스텝 손실 | 정확히 일치 (%%)\n", tail_steps(steps));
        std::printf("     4 |  16 | %18s | %s\n",
                    spread(tail_losses(r.at("base"), steps), 4, 0).c_str(),
                    spread_pct(values_of(r, "base:exact"), 1).c_str());
        std::printf("     1 |  64 | %18s | %s\n",
                    spread(tail_losses(r.at("heads-1"), steps), 4, 0).c_str(),
                    spread_pct(values_of(r, "heads-1:exact"), 1).c_str());
    }
    if (r.count("nb-4") && r.count("nb-1")) {
        const int steps = steps_of("nb-4", scale);
        std::printf(
            "두 번째 실험: 숫자 %d개의 순환 수열에서 y_i = x_{i-1} − x_{i+1} (−9~9, 부호가 "
            "답), 인코더 블록 1개(d_model = 64), %d스텝, 학습에 없던 수열 1000개의 자리별 "
            "정확도\n",
            NB_LENGTH, steps);
        std::printf(
            "  헤드 | d_k | 마지막 %zu스텝 손실 | 자리별 정확도 (%%) | 이웃 가중치 (검증): "
            "왼쪽, 오른쪽 (가장 많이 보는 헤드)\n",
            tail_steps(steps));
        for (const std::string run : {"nb-4", "nb-1"})
            std::printf("     %s | %3s | %18s | %18s | %s, %s\n", run.c_str() + 3,
                        run[3] == '4' ? "16" : "64",
                        spread(tail_losses(r.at(run), steps), 4, 0).c_str(),
                        spread_pct(values_of(r, run + ":digit_accuracy"), 1).c_str(),
                        spread(values_of(r, run + ":max_head_left_weight"), 2, 0, 1).c_str(),
                        spread(values_of(r, run + ":max_head_right_weight"), 2, 0, 1).c_str());
        // The validation curve, averaged over the seeds, at a few steps (nothing is chosen on it).
        const std::vector<double>& at = r.at("nb-4")[0]->get("validation_steps");
        const size_t stride = std::max<size_t>(1, at.size() / 5);  // 5 points, the last one last
        std::printf("  검증 정확도 (%%, 씨앗 평균), 스텝:");
        for (size_t i = stride - 1; i < at.size(); i += stride)
            std::printf(" %d", int(at[i]));
        std::printf("\n");
        for (const char* run : {"nb-4", "nb-1"}) {
            std::printf("    헤드 %s:", run + 3);
            const std::vector<const Record*>& runs = r.at(run);
            for (size_t i = stride - 1; i < at.size(); i += stride) {
                double m = 0;
                for (const Record* rec : runs)
                    m += rec->get("validation_accuracy_curve")[i] / double(runs.size());
                std::printf(" %s", fixed(m, 1).c_str());
            }
            std::printf("\n");
        }
    }
    // Seed by seed, what the means above average away: the step validation first reaches 99%
    // at (every NB_EVAL_EVERY steps; -: not within the budget), and the weights on the two
    // neighbours, the larger first (for 4 heads: the head that weighs the left one most, and
    // the one that weighs the right one most). Described for nb-4 and nb-1, judged for the
    // fresh block of seeds.
    for (const char* block : {"", "-fresh"}) {
        const std::string four = std::string("nb-4") + block, one = std::string("nb-1") + block;
        if (!r.count(four) || !r.count(one)) continue;
        std::printf(
            "  씨앗 %d~: 씨앗별 검증 99%% 첫 도달 스텝 (-: 예산 안에 못 함) | 이웃 가중치 큰 "
            "쪽/작은 쪽\n",
            int(r.at(four)[0]->value("seed")));
        for (const std::string& run : {four, one}) {
            std::string weights;
            for (const Record* rec : r.at(run)) {
                const double a = rec->value("max_head_left_weight"),
                             b = rec->value("max_head_right_weight");
                weights += " " + fixed(std::max(a, b), 2) + "/" + fixed(std::min(a, b), 2);
            }
            std::printf("    헤드 %c: %s |%s\n", run[3],
                        per_seed(values_of(r, run + ":steps_to_99"), 0).c_str(), weights.c_str());
        }
    }
    report_comparisons(cmp, "heads");
}

void report_pruning(const Records& r, const std::vector<Comparison>& cmp, double) {
    const std::vector<const Record*>& base = r.at("base");
    const int n = int(base[0]->get("exact_validation_without_head").size());
    std::printf("\n== 3절 \"상당수 헤드는 제거해도 성능이 크게 떨어지지 않는다\" ==\n");
    std::printf(
        "7장의 학습된 모델(헤드 %d개). 제거 순서와 개수는 검증 집합(1000개)에서 정하고, 점수는 "
        "시험 집합(학습에 없던 다른 1000개)에서 잽니다\n",
        n);
    std::printf(
        "  씨앗 | 시험 | 검증에서 고른 개수 → 시험 | 가장 덜 중요한 %d개 제거 → 시험 | 한 종류 "
        "통째로 제거: %s, %s, %s\n",
        third_of_heads(n), kind_name(Kind::encoder_self), kind_name(Kind::decoder_self),
        kind_name(Kind::cross));
    for (size_t k = 0; k < base.size(); k++) {
        const Record& b = *base[k];
        const std::vector<double>& whole = b.get("exact_kind_removed");
        std::printf("  %4d | %4s | %12d개 → %5s | %28s | %s, %s, %s\n", int(b.value("seed")),
                    fixed(b.value("exact"), 1).c_str(), int(b.value("prunable_heads")),
                    fixed(b.value("exact_prunable_removed"), 1).c_str(),
                    fixed(b.value("exact_pruned_third"), 1).c_str(), fixed(whole[0], 1).c_str(),
                    fixed(whole[1], 1).c_str(), fixed(whole[2], 1).c_str());
    }
    report_comparisons(cmp, "pruning");
}

void report_positions(const Records& r, const std::vector<Comparison>& cmp, double scale) {
    const int steps = steps_of("pos-learned", scale), steps2 = steps_of("pos2-learned", scale);
    const Record& learned0 = *r.at("pos-learned")[0];
    std::printf(
        "\n== 4절 학습된 위치 벡터는 \"성능이 거의 같았고\", 사인은 \"학습 없이 임의의 "
        "길이로\" ==\n");
    std::printf(
        "7장의 모델을 1~9999(%d자리 이하)로만 %d스텝 학습: 평가는 학습에 없던 %d자리 이하 "
        "1000개와 %d자리 1000개\n",
        int(learned0.value("train_max_digits")), steps, int(learned0.value("train_max_digits")),
        int(learned0.value("train_max_digits")) + 1);
    std::printf("  위치         | 범위 안 (%%)  | 더 긴 수 (%%)\n");
    std::printf("  사인 (논문)  | %12s | %s\n",
                spread_pct(values_of(r, "pos-sin:exact"), 1).c_str(),
                spread_pct(values_of(r, "pos-sin:exact_five_digit"), 1).c_str());
    std::printf("  학습된 표    | %12s | %s\n",
                spread_pct(values_of(r, "pos-learned:exact"), 1).c_str(),
                spread_pct(values_of(r, "pos-learned:exact_five_digit"), 1).c_str());
    std::printf(
        "  (더 긴 수의 점수는 위치 부호화와 무관하게 0에 묶임: 5자리 수에는 모두 '만'이 있고, "
        "학습 수에는 없어 그 임베딩이 학습되지 않음; 그래서 판정하지 않음)\n");
    // What a learned table does at positions it never had: rows no training sentence reached
    // got no gradient and are still their random start; past the table there is no vector.
    auto moved = [](const std::vector<double>& change) {
        int k = 0;
        for (double c : change)
            k += c > 0;
        return k;
    };
    const std::vector<double>&src = learned0.get("src_pos_row_change"),
          &tgt = learned0.get("tgt_pos_row_change");
    std::printf(
        "학습된 표 %zu행 중 학습으로 바뀐 행(씨앗 %d): 입력 %d개(가장 긴 학습 입력 %d음절), "
        "출력 %d개(<시작> + 가장 긴 학습 출력 %d자리); 나머지는 무작위 초기값 그대로, %zu번째 "
        "위치부터는 벡터가 없음\n",
        src.size(), int(learned0.value("seed")), moved(src),
        int(learned0.value("train_max_syllables")), moved(tgt),
        int(learned0.value("train_max_digits")), src.size() + 1);
    const Record& p2 = *r.at("pos2-learned")[0];
    std::printf(
        "두 번째 실험: 같은 데이터 범위(1~99999)에서 입력이 %d음절 이하인 수만으로 %d스텝 학습, "
        "평가는 학습에 없던 %d음절 이상의 수 1000개 (출력 자리는 모두 학습됨)\n",
        int(p2.value("train_max_syllables")), steps2, int(p2.value("train_max_syllables")) + 1);
    std::printf("  위치         | 범위 안 (%%)  | 더 긴 입력 (%%)\n");
    std::printf("  사인 (논문)  | %12s | %s\n",
                spread_pct(values_of(r, "pos2-sin:exact"), 1).c_str(),
                spread_pct(values_of(r, "pos2-sin:exact_long_source"), 1).c_str());
    std::printf("  학습된 표    | %12s | %s\n",
                spread_pct(values_of(r, "pos2-learned:exact"), 1).c_str(),
                spread_pct(values_of(r, "pos2-learned:exact_long_source"), 1).c_str());
    report_comparisons(cmp, "positions");
}

namespace {

// One row per run of §5's 6 + 6 blocks: the peak learning rate, the seeds that diverged, the
// last steps' loss of the others, exact match.
struct DeepRow {
    const char* ln;    // "Post-LN" or "Pre-LN "
    const char* what;  // the column after it, 4 display columns
    const char* run;
};
void report_deep_runs(const Records& r, const char* what, const std::vector<DeepRow>& rows,
                      int steps) {
    std::printf(
        "  위치    | %s | 최고 lr  | 발산한 씨앗 | 마지막 %zu스텝 손실 | 정확히 일치 (%%)\n", what,
        tail_steps(steps));
    for (const DeepRow& row : rows) {
        const std::vector<const Record*>& runs = r.at(row.run);
        int diverged = 0;
        std::vector<double> finite_tails;
        for (const Record* rec : runs) {
            diverged += rec->value("diverged_at") > 0;
            if (rec->value("diverged_at") == 0)
                finite_tails.push_back(tail_loss(rec->get("loss"), tail_steps(steps)));
        }
        std::printf("  %s | %s | %.2e | %11s | %18s | %s\n", row.ln,
                    term::pad_right(row.what, int(term::display_width(what))).c_str(),
                    runs[0]->value("peak_lr"),
                    (std::to_string(diverged) + "/" + std::to_string(runs.size())).c_str(),
                    finite_tails.empty() ? "-" : spread(finite_tails, 4, 0).c_str(),
                    spread_pct(values_of(r, std::string(row.run) + ":exact"), 1).c_str());
    }
}

}  // namespace

void report_warmup(const Records& r, const std::vector<Comparison>& cmp, double scale) {
    const int steps = steps_of("warm-post", scale);
    std::printf("\n== 5절 \"원 논문이 학습률 워밍업을 필수로 둔 이유\" ==\n");
    std::printf(
        "인코더 6층 + 디코더 6층, d_model = 32, 헤드 4개, %d스텝: 논문의 최고 학습률 lr을 워밍업 "
        "%d스텝에 걸쳐 올리거나, 첫 스텝부터 lr, lr/3, lr/10을 씀\n",
        steps, warmup_of("warm-post", scale));
    report_deep_runs(r, "워밍업",
                     {{"Post-LN", "있음", "warm-post"},
                      {"Post-LN", "없음", "nowarm-post"},
                      {"Post-LN", "없음", "nowarm-post-lr33"},
                      {"Post-LN", "없음", "nowarm-post-lr10"},
                      {"Pre-LN ", "있음", "warm-pre"},
                      {"Pre-LN ", "없음", "nowarm-pre"},
                      {"Pre-LN ", "없음", "nowarm-pre-lr33"},
                      {"Pre-LN ", "없음", "nowarm-pre-lr10"}},
                     steps);
    report_comparisons(cmp, "warmup");
}

void report_residual(const Records& r, const std::vector<Comparison>& cmp, double scale) {
    const int steps = steps_of("warm-post", scale);
    std::printf("\n== 5절 잔차 연결: \"기울기가 깊은 층까지\" ==\n");
    std::printf(
        "인코더 6층 + 디코더 6층 Post-LN, d_model = 32, 헤드 4개, 워밍업 %d스텝, %d스텝: "
        "x = LayerNorm(x + Sublayer(x))와 잔차를 뺀 x = LayerNorm(Sublayer(x))\n",
        warmup_of("warm-post", scale), steps);
    report_deep_runs(r, "잔차",
                     {{"Post-LN", "있음", "warm-post"}, {"Post-LN", "없음", "noresid-post"}},
                     steps);
    report_comparisons(cmp, "residual");
}

void report_opening(const Records& r, const std::vector<Comparison>& cmp, double scale) {
    const int steps = steps_of("lstm", scale);
    std::printf(
        "\n== 서두 \"번역 성능에서 기존 모델을 앞질렀고, 학습 시간은 오히려 크게 줄었습니다\" "
        "==\n");
    std::printf(
        "7장의 과제와 학습기, 같은 배치와 %d스텝: 7장의 Transformer (2 + 2층, d_model 64)와 "
        "지난 글의 모델 (양방향 LSTM 인코더, Bahdanau 어텐션을 단 LSTM 디코더, 폭 %d, "
        "매개변수 %s개). 시간은 코어 하나의 학습 벽시계 시간 (검증 채점 제외), 검증 집합에서 "
        "처음 %s%%에 닿은 스텝까지 (%d스텝마다 채점)\n",
        steps, run_spec("lstm").model.d_model,
        fixed(values_of(r, "lstm:parameters").at(0), 0).c_str(), fixed(LEVEL_PERCENT, 0).c_str(),
        LEVEL_EVERY);
    std::printf(
        "  모델        | 마지막 %zu스텝 손실 | 정확히 일치 (%%) | %s%%까지 스텝 | %s%%까지 초 | "
        "학습 초\n",
        tail_steps(steps), fixed(LEVEL_PERCENT, 0).c_str(), fixed(LEVEL_PERCENT, 0).c_str());
    for (const char* run : {"base", "lstm"}) {
        const std::string name = run;
        std::printf("  %s | %18s | %s | %s | %s | %s\n",
                    name == "base" ? "Transformer" : "LSTM       ",
                    spread(tail_losses(r.at(run), steps), 4, 0).c_str(),
                    spread_pct(values_of(r, name + ":exact"), 1).c_str(),
                    per_seed(values_of(r, name + ":steps_to_level"), 0).c_str(),
                    per_seed(values_of(r, name + ":seconds_to_level"), 1).c_str(),
                    spread(values_of(r, name + ":seconds"), 1, 0).c_str());
    }
    std::printf("  (-: 예산 안에 %s%%에 닿지 못함)\n", fixed(LEVEL_PERCENT, 0).c_str());
    report_comparisons(cmp, "opening");
}

void report_order(const Records& r, const std::vector<Comparison>& cmp, double scale) {
    const int steps = steps_of("nopos", scale);
    std::printf("\n== 4절 위치 정보가 없으면 \"순서 없는 집합\" ==\n");
    std::printf(
        "7장의 모델, %d스텝: 사인 위치 벡터를 더하거나(논문), 아무 위치 벡터도 더하지 않음 "
        "(인코더가 보는 것은 음절의 집합)\n",
        steps);
    std::printf("  위치        | 마지막 %zu스텝 손실 | 정확히 일치 (%%)\n", tail_steps(steps));
    for (const char* run : {"base", "nopos"})
        std::printf("  %s | %18s | %s\n",
                    std::string(run) == "base" ? "사인 (논문)" : "없음       ",
                    spread(tail_losses(r.at(run), steps), 4, 0).c_str(),
                    spread_pct(values_of(r, std::string(run) + ":exact"), 1).c_str());
    report_comparisons(cmp, "order");
}

void report_first_step(const Records& r, const std::vector<Comparison>& cmp, double) {
    const std::vector<const Record*>& base = r.at("base");
    const auto [w_min, w_max] = self_weight_range(r);
    std::printf(
        "\n== 5절 첫 스텝에서 \"첫 단어를 정하는 정보는 사실상 전부 인코더-디코더 "
        "어텐션에서\" ==\n");
    std::printf("7장의 학습된 모델, <시작> 하나만 넣은 첫 생성 스텝, 시험 집합 1000문장\n");
    std::printf(
        "셀프 어텐션 가중치(모든 씨앗·층·헤드·문장): 최소 %s, 최대 %s (볼 것이 자기 자신뿐)\n",
        fixed(w_min, 6).c_str(), fixed(w_max, 6).c_str());
    std::printf(
        "  첫 스텝                                   | 첫 숫자 정답 (%%) | 예측 분포의 이동(TV)\n");
    const char* names[] = {"그대로", "셀프 어텐션 출력 -> 문장 평균",
                           "인코더-디코더 어텐션 출력 -> 문장 평균",
                           "인코더-디코더 어텐션 -> 모든 음절 균등"};
    const char* keys[] = {"first_digit_intact", "first_digit_self_mean", "first_digit_cross_mean",
                          "first_digit_cross_uniform"};
    for (int i = 0; i < 4; i++) {
        std::vector<double> tv;
        for (const Record* b : base)
            tv.push_back(b->get("first_step_total_variation")[size_t(i)]);
        std::printf("  %s | %16s | %s\n", term::pad_right(names[i], 41).c_str(),
                    spread_pct(values_of(r, std::string("base:") + keys[i]), 1).c_str(),
                    spread(tv, 4, 0, 1).c_str());
    }
    std::printf("셀프 어텐션 가중치가 정확히 1: %s\n",
                w_min == 1.0 && w_max == 1.0 ? "예 (모든 씨앗)" : "아니오");
    report_comparisons(cmp, "first-step");
}

}  // namespace ablations
