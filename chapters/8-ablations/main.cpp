// Chapter 8 (beyond the article): the article's prose claims that need training, computed.
//
// The article argues more than it prints. Each claim below is trained here at toy scale, on
// chapter 7's task (Korean number words -> digits) with chapter 7's model and trainer, the
// variants side by side under one budget; each prints a table and a one-line verdict
// (재현됨 / 이 규모에서는 재현되지 않음 / 판단 보류) and draws a figure. These are the paper's own
// ablations (Vaswani et al. 2017, Table 3: rows A heads, B d_k, E learned positions) and Xiong et
// al. 2020's warm-up result, on a CPU:
//   §2 scaling     "이 나눗셈을 빼면 모델이 학습을 거의 하지 못합니다"
//   §3 heads       one distribution cannot hold several relations: h = 4 against h = 1
//   §3 pruning     "상당수 헤드는 제거해도 성능이 크게 떨어지지 않는다" [11][12]
//   §4 positions   learned position vectors "성능이 거의 같았고"; sinusoids extend "학습 없이
//                  임의의 길이로"
//   §5 warmup      "원 논문이 학습률 워밍업을 필수로 둔 이유": Post-LN without warm-up
//   §5 first-step  at the first step "첫 단어를 정하는 정보는 사실상 전부 인코더-디코더
//                  어텐션에서"
// Every run is repeated over K seeds (--seeds, default 5), the variant and its baseline paired
// by seed; each comparison's verdict comes from the mean paired difference and its 95%
// Student's t interval against a threshold fixed in experiments.h (COMPARISONS): 재현됨 when
// the interval lies wholly on the claim's side, 이 규모에서는 재현되지 않음 when it lies wholly
// on the other, 판단 보류 when it straddles it. No setting was tuned until a claim agreed.
// The claims that need no training are computed in their own chapters (2: the slope, 5: the
// parameter split and the position-wise check, 6: the path length and the memory crossover).
//
// Read in this order: experiments.h (the runs, what each measures, the comparisons and their
// thresholds), table.cpp (every run, claim and comparison, declared once: the jobs, the tables,
// the figures and the TSV are made from it), variants.h/.cpp (the listings' variants, as forward
// hooks), experiments.cpp, stats.h/.cpp (the interval and the verdict rule), summary.h/.cpp
// (each comparison computed from the runs' records, and the --summary TSV), main.cpp (this file:
// each claim's table and verdicts), runner.h/.cpp (the runs as parallel processes),
// figures.h/.cpp (one figure per claim). The model is chapters/5-blocks/decoder.h, the trainer
// chapters/7-translate/train.h.
//
//   make ablations                             everything, K seeds (see the Makefile)
//   build/bin/8-ablations --only warmup,heads  some claims only
//   build/bin/8-ablations --seeds 3 --seed 100 three seeds, 100, 101 and 102
//   build/bin/8-ablations --summary x.tsv      the comparisons as a TSV file
//   build/bin/8-ablations --runs nb-4,nb-1     some settings only (their comparisons)
//   build/bin/8-ablations --scale 0.05         every run at 5% of its steps (a smoke test)
#include <unistd.h>
#if __has_include(<malloc.h>)  // mallopt: glibc (macOS has no malloc.h)
#include <malloc.h>
#endif

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "chapters/8-ablations/experiments.h"
#include "chapters/8-ablations/figures.h"
#include "chapters/8-ablations/summary.h"
#include "common/program/atomic_file.h"
#include "common/program/cli.h"
#include "common/program/format.h"
#include "common/program/serialize.h"
#include "common/program/terminal.h"

using namespace ablations;

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

// Over the seeds: "mean ± half-width" of a measure (the 95% t interval; one seed: the value).
std::string spread(const std::vector<double>& v, int digits) {
    const Interval ci = t_interval(v);
    if (ci.n < 2) return fixed(ci.mean, digits);
    return fixed(ci.mean, digits) + " ± " + fixed(ci.half_width(), digits);
}
std::vector<double> tail_losses(const std::vector<const Record*>& runs, int steps) {
    std::vector<double> out;
    for (const Record* r : runs)
        out.push_back(tail_loss(r->get("loss"), tail_steps(steps)));
    return out;
}

// Each comparison of one claim: the paired differences, the interval and the verdict.
void report_comparisons(const std::vector<Comparison>& all, const std::string& claim) {
    for (const Comparison& c : all) {
        if (c.spec->claim != claim) continue;
        const Interval& ci = c.ci;
        std::string diffs;
        for (double d : c.diff)
            diffs += (diffs.empty() ? "" : " ") + fixed(d, 1);
        std::printf("  비교 %s − %s (%s): 씨앗별 %s\n", c.spec->variant, c.spec->baseline,
                    c.spec->metric, diffs.c_str());
        const std::string interval =
            ci.n < 2 ? "구간 없음 (씨앗 1개)"
                     : "95% 구간 [" + fixed(ci.low, 2) + ", " + fixed(ci.high, 2) + "]";
        const std::string rule = rule_text(c.spec->rule);
        std::printf("    평균 %s점, %s, 기준 %s → 판정: %s%s\n", fixed(ci.mean, 2).c_str(),
                    interval.c_str(), rule.c_str(), verdict_korean(c.verdict),
                    c.verdict == Verdict::undecided
                        ? (ci.n < 2 ? " (씨앗이 하나뿐이라 구간이 없음)"
                                    : " (구간이 기준 " + rule + "에 걸침)")
                              .c_str()
                        : "");
    }
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
                    spread(values_of(r, std::string(row.run) + ":init_attention_peak"), 3).c_str(),
                    spread(tail_losses(r.at(row.run), row.steps), 4).c_str(),
                    spread(values_of(r, std::string(row.run) + ":exact"), 1).c_str());
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
                    spread(tail_losses(r.at("base"), steps), 4).c_str(),
                    spread(values_of(r, "base:exact"), 1).c_str());
        std::printf("     1 |  64 | %18s | %s\n",
                    spread(tail_losses(r.at("heads-1"), steps), 4).c_str(),
                    spread(values_of(r, "heads-1:exact"), 1).c_str());
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
                        spread(tail_losses(r.at(run), steps), 4).c_str(),
                        spread(values_of(r, run + ":digit_accuracy"), 1).c_str(),
                        spread(values_of(r, run + ":max_head_left_weight"), 2).c_str(),
                        spread(values_of(r, run + ":max_head_right_weight"), 2).c_str());
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
    report_comparisons(cmp, "heads");
}

void report_pruning(const Records& r, const std::vector<Comparison>& cmp) {
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
    std::printf("  사인 (논문)  | %12s | %s\n", spread(values_of(r, "pos-sin:exact"), 1).c_str(),
                spread(values_of(r, "pos-sin:exact_five_digit"), 1).c_str());
    std::printf("  학습된 표    | %12s | %s\n",
                spread(values_of(r, "pos-learned:exact"), 1).c_str(),
                spread(values_of(r, "pos-learned:exact_five_digit"), 1).c_str());
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
    std::printf("  사인 (논문)  | %12s | %s\n", spread(values_of(r, "pos2-sin:exact"), 1).c_str(),
                spread(values_of(r, "pos2-sin:exact_long_source"), 1).c_str());
    std::printf("  학습된 표    | %12s | %s\n",
                spread(values_of(r, "pos2-learned:exact"), 1).c_str(),
                spread(values_of(r, "pos2-learned:exact_long_source"), 1).c_str());
    report_comparisons(cmp, "positions");
}

void report_warmup(const Records& r, const std::vector<Comparison>& cmp, double scale) {
    const int steps = steps_of("warm-post", scale);
    std::printf("\n== 5절 \"원 논문이 학습률 워밍업을 필수로 둔 이유\" ==\n");
    std::printf(
        "인코더 6층 + 디코더 6층, d_model = 32, 헤드 4개, %d스텝: 같은 최고 학습률을 워밍업 "
        "%d스텝에 걸쳐 올리거나 첫 스텝부터 씀\n",
        steps, warmup_of("warm-post", scale));
    std::printf(
        "  위치    | 워밍업 | 최고 lr  | 발산한 씨앗 | 마지막 %zu스텝 손실 | 정확히 일치 (%%)\n",
        tail_steps(steps));
    struct Row {
        const char* ln;
        const char* warm;
        const char* run;
    };
    for (Row row : {Row{"Post-LN", "있음", "warm-post"}, Row{"Post-LN", "없음", "nowarm-post"},
                    Row{"Pre-LN ", "있음", "warm-pre"}, Row{"Pre-LN ", "없음", "nowarm-pre"}}) {
        const std::vector<const Record*>& runs = r.at(row.run);
        int diverged = 0;
        std::vector<double> finite_tails;
        for (const Record* rec : runs) {
            diverged += rec->value("diverged_at") > 0;
            if (rec->value("diverged_at") == 0)
                finite_tails.push_back(tail_loss(rec->get("loss"), tail_steps(steps)));
        }
        std::printf("  %s | %s   | %.2e | %11s | %18s | %s\n", row.ln, row.warm,
                    runs[0]->value("peak_lr"),
                    (std::to_string(diverged) + "/" + std::to_string(runs.size())).c_str(),
                    finite_tails.empty() ? "-" : spread(finite_tails, 4).c_str(),
                    spread(values_of(r, std::string(row.run) + ":exact"), 1).c_str());
    }
    report_comparisons(cmp, "warmup");
}

void report_first_step(const Records& r, const std::vector<Comparison>& cmp) {
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
                    spread(values_of(r, std::string("base:") + keys[i]), 1).c_str(),
                    spread(tv, 4).c_str());
    }
    std::printf("셀프 어텐션 가중치가 정확히 1: %s\n",
                w_min == 1.0 && w_max == 1.0 ? "예 (모든 씨앗)" : "아니오");
    report_comparisons(cmp, "first-step");
}

// The figures' folder and the names of those the chosen claims draw, and the summary file,
// checked before any training: one line and exit 2.
void check_output(const cli::Parser& cli, const std::string& summary,
                  const std::set<std::string>& claims) {
    std::vector<std::string> figures;  // 8-<claim>.png of each chosen claim
    for (const std::string& c : claims)
        figures.push_back("8-" + c + ".png");
    cli.check_figure_dir(figures);
    try {
        if (!summary.empty()) serialize::check_writable(summary);
    } catch (const std::exception& e) {
        cli.fail("--summary " + summary + ": " + e.what());
    }
}

}  // namespace

int main(int argc, char** argv) {
    const auto t0 = std::chrono::steady_clock::now();
    cli::Parser cli(
        "8-ablations",
        "Chapter 8: the article's claims that need training, computed (make ablations)");
    std::string only, runs, figure_dir = "figures", summary;
    int jobs = int(std::max(1u, std::min(4u, std::thread::hardware_concurrency())));
    double scale = 1.0;
    int seed = 0, seeds = 5;
    std::string keep_dir, partial_dir;
    bool no_figures = false;
    std::string claim_list, claim_choice;  // "a, b, c", "a, b or c"
    for (size_t i = 0; i < CLAIMS.size(); i++) {
        claim_list += (i ? ", " : "") + std::string(CLAIMS[i].name);
        claim_choice += (i == 0 ? "" : i + 1 < CLAIMS.size() ? ", " : " or ") +
                        std::string(CLAIMS[i].name);
    }
    cli.option("--only", only, "comma-separated claims: " + claim_list + "; empty: all");
    cli.option("--runs", runs,
               "comma-separated settings (base, heads-1, nb-4, nb-1, ...): only these; a claim "
               "missing some prints the comparisons it has, without its figure; empty: all");
    cli.option("--jobs", jobs, "training runs at once, each on one core (the cores, <= 4)");
    cli.option("--scale", scale, "fraction of every run's steps (1: the stated budget)");
    cli.option("--seeds", seeds, "seeds per run, K in 1..30 (1: every verdict undecided)");
    cli.option("--seed", seed,
               "the first seed, 0..1000000000: runs use S, S+1, ..., S+K-1 (weights: the seed, "
               "training order: the seed + 1)");
    cli.path("--summary", summary,
             "write one TSV line per comparison to this file (none unless given)");
    cli.path("--keep", keep_dir,
             "keep each finished run's numbers in DIR; run again with the same build and "
             "--scale, runs found there are not trained again (Ctrl-C loses only the runs in "
             "progress)",
             "DIR");
    cli.path("--partial-dir", partial_dir,
             "where a run other than the full default one (every claim and run, --scale 1, "
             "--seeds 5, --seed 0) writes its summary and figures instead of --summary's file and "
             "--figure-dir, so that the committed ones come only from the full run (make "
             "ablations passes build/ablations-partial)",
             "DIR");
    cli.figures(figure_dir, no_figures,
                "8-" + std::string(CLAIMS.front().name) + ".png ... 8-" + CLAIMS.back().name +
                    ".png");
    cli.parse(argc, argv);
    if (jobs < 1 || jobs > 64) cli.fail("--jobs must be in 1..64");
    if (!(scale > 0) || scale > 10) cli.fail("--scale must be in (0, 10]");
    if (seeds < 1 || seeds > 30) cli.fail("--seeds must be in 1..30");
    if (seed < 0 || seed > 1000000000) cli.fail("--seed must be in 0..1000000000");
    auto split_list = [](const std::string& list) {
        std::vector<std::string> names;
        for (size_t from = 0; from <= list.size();) {
            const size_t comma = std::min(list.find(',', from), list.size());
            names.push_back(list.substr(from, comma - from));
            from = comma + 1;
        }
        return names;
    };
    std::set<std::string> chosen;
    if (!only.empty()) {
        for (const std::string& name : split_list(only)) {
            bool known = false;
            for (const ClaimSpec& c : CLAIMS)
                known |= c.name == name;
            if (!known)
                cli.fail("--only: unknown claim " + cli::quote(name) + "; use " + claim_choice);
            chosen.insert(name);
        }
    } else {
        for (const ClaimSpec& c : CLAIMS)
            chosen.insert(c.name);
    }
    // The runs the chosen claims need (each once per seed), or those of them --runs names.
    std::set<std::string> needed;
    for (const ClaimSpec& c : CLAIMS)
        if (chosen.count(c.name)) needed.insert(c.runs.begin(), c.runs.end());
    if (!runs.empty()) {
        std::set<std::string> asked;
        for (const std::string& name : split_list(runs)) {
            if (!needed.count(name))
                cli.fail("--runs: " + cli::quote(name) +
                         " is no setting of the chosen claims; see experiments.h for the names");
            asked.insert(name);
        }
        needed = asked;
    }
    const bool full_default = only.empty() && runs.empty() && scale == 1.0 && seeds == 5 &&
                              seed == 0;
    if (!full_default && !partial_dir.empty()) {
        try {
            atomic_file::make_folders(partial_dir);
        } catch (const atomic_file::Error& e) {
            cli.fail("--partial-dir " + cli::quote(partial_dir) + ": " + e.what() +
                     "; choose another folder");
        }
        if (!summary.empty())
            summary = partial_dir + "/" + std::filesystem::path(summary).filename().string();
        figure_dir = partial_dir;
    }
    check_output(cli, summary, chosen);
    if (!keep_dir.empty()) {
        try {
            atomic_file::check_folder_writable(keep_dir);
        } catch (const atomic_file::Error& e) {
            cli.fail("--keep " + cli::quote(keep_dir) + ": " + e.what() +
                     "; choose another folder");
        }
    }
    // As chapter 7 does: every training step allocates and frees the same few hundred buffers;
    // keep freed memory in the heap instead of handing it back to the kernel (and taking page
    // faults to get it again). The forked runs inherit it.
#if defined(M_MMAP_THRESHOLD)
    mallopt(M_MMAP_THRESHOLD, 1 << 30);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif

    const std::vector<int> seed_values = seed_list(seed, seeds);
    std::vector<Job> selected;
    for (const Job& j : all_jobs(scale, seed_values))
        if (needed.count(run_name(j.name))) selected.push_back(j);
    std::printf(
        "8장: 글의 주장을 학습으로 확인합니다 (학습 %zu회 = 설정 %zu개 x 씨앗 %d개, 동시에 %d개, "
        "스텝 배율 %g)\n",
        selected.size(), needed.size(), seeds, jobs, scale);
    std::printf(
        "씨앗 %d~%d: 가중치 torch.manual_seed(씨앗), 학습 순서 씨앗 + 1; 변형과 기준은 같은 씨앗을 "
        "써서 씨앗마다 차이 하나; 판정은 차이의 평균과 95%% t 구간으로\n",
        seed_values.front(), seed_values.back());
    std::printf(
        "데이터: 학습 / 검증 1000개 / 시험 1000개(7장의 평가 집합 2017), 고르는 것은 검증에서, "
        "점수는 시험에서\n");
    if (!full_default && !partial_dir.empty())
        std::printf("부분 실행: 요약과 그림은 %s에 씁니다 (figures/의 것은 기본 전체 실행만 "
                    "바꿉니다)\n",
                    partial_dir.c_str());
    cli::flush_stdout_or_exit();  // stdout on a full disk: stop before the training, not after
    std::vector<Record> results;
    int reused = 0;  // runs whose records --keep had
    try {
        char context[64];
        std::snprintf(context, sizeof context, "scale=%.17g", scale);
        results = run_jobs(selected, jobs, isatty(STDERR_FILENO), {keep_dir, context}, &reused);
        if (reused > 0)
            std::printf(
                "(학습 %d회는 %s에 남아 있던 결과를 다시 썼습니다: 같은 빌드, 같은 스텝 "
                "배율)\n",
                reused, keep_dir.c_str());
    } catch (const std::exception& e) {
        std::fprintf(stderr, "8-ablations: error: %s\n", e.what());
        return 1;
    }
    Records r;
    for (size_t i = 0; i < selected.size(); i++)
        r[run_name(selected[i].name)].push_back(&results[i]);
    std::vector<Comparison> cmp;
    auto has = [&](const char* run_key) {  // "nb-4:digit_accuracy": was nb-4 run?
        const std::string key = run_key;
        return needed.count(key.substr(0, key.find(':'))) > 0;
    };
    for (const ComparisonSpec& spec : COMPARISONS)
        if (chosen.count(spec.claim) && has(spec.baseline) && has(spec.variant))
            cmp.push_back(compare(r, spec));

    int status = 0;
    auto figure = [&](auto draw) {
        if (no_figures) return;
        try {
            draw();
        } catch (const std::exception& e) {
            std::fprintf(stderr, "8-ablations: error: %s\n", e.what());
            status = 1;
        }
    };
    // Each chosen claim: its table, verdicts and figure; with only some of its runs (--runs),
    // the comparisons it has (the heads claim: the tables it has), without the figure.
    const std::map<std::string, std::function<void()>> reports = {
        {"scaling", [&] { report_scaling(r, cmp, scale); }},
        {"heads", [&] { report_heads(r, cmp, scale); }},
        {"pruning", [&] { report_pruning(r, cmp); }},
        {"positions", [&] { report_positions(r, cmp, scale); }},
        {"warmup", [&] { report_warmup(r, cmp, scale); }},
        {"first-step", [&] { report_first_step(r, cmp); }},
    };
    for (const ClaimSpec& c : CLAIMS) {
        const std::string name = c.name;
        if (!chosen.count(name)) continue;
        const auto report = reports.at(name);  // every claim has its table
        bool complete = true;
        for (const char* run : c.runs)
            complete = complete && needed.count(run);
        if (complete) {
            report();
            figure([&] { figure_of(name)(r, cmp, figure_dir + "/8-" + name + ".png"); });
        } else if (name == "heads") {
            report();
        } else if (std::any_of(cmp.begin(), cmp.end(),
                               [&](const Comparison& k) { return k.spec->claim == name; })) {
            std::printf("\n== %s (--runs: 설정 일부만) ==\n", name.c_str());
            report_comparisons(cmp, name);
        }
    }
    if (!summary.empty()) {
        try {
            atomic_file::write(summary, summary_tsv(cmp), {.create_folders = false});
        } catch (const std::exception& e) {
            std::fprintf(stderr, "8-ablations: error: %s\n", e.what());
            status = 1;
        }
    }
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (reused > 0)  // the time is this run's: the kept runs took theirs before
        std::printf("\n전체 시간: %.0f초 (학습 %zu회, 그중 %d회는 --keep에 남아 있던 결과)\n", wall,
                    selected.size(), reused);
    else
        std::printf("\n전체 시간: %.0f초 (학습 %zu회)\n", wall, selected.size());
    return status;
}
