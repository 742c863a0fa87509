// Chapter 8 (beyond the article): the article's prose claims that need training, computed.
//
// The article argues more than it prints. Each claim below is trained here at toy scale, on
// chapter 7's task (Korean number words -> digits) with chapter 7's model and trainer, the
// variants side by side under one budget; each prints a table and a one-line verdict
// (재현됨 / 이 규모에서는 재현되지 않음 / 판단 보류) and draws a figure. These are the paper's own
// ablations (Vaswani et al. 2017, Table 3: rows A heads, B d_k, E learned positions) and Xiong et
// al. 2020's warm-up result, on a CPU, and the article's opening claim against the previous
// article's model:
//   opening        attention alone "번역 성능에서 기존 모델을 앞질렀고, 학습 시간은 오히려 크게
//                  줄었습니다": chapter 7's model against an LSTM with Bahdanau's attention
//   §2 scaling     "이 나눗셈을 빼면 모델이 학습을 거의 하지 못합니다"
//   §3 heads       one distribution cannot hold several relations: h = 4 against h = 1
//   §3 pruning     "상당수 헤드는 제거해도 성능이 크게 떨어지지 않는다" [11][12]
//   §4 positions   learned position vectors "성능이 거의 같았고"; sinusoids extend "학습 없이
//                  임의의 길이로"
//   §4 order       without position vectors self-attention sees "순서 없는 집합"
//   §5 warmup      "원 논문이 학습률 워밍업을 필수로 둔 이유": Post-LN without warm-up, at three
//                  peak learning rates
//   §5 residual    residual connections carry the gradient "깊은 층까지": 6 + 6 Post-LN blocks
//                  without them
//   §5 first-step  at the first step "첫 단어를 정하는 정보는 사실상 전부 인코더-디코더
//                  어텐션에서"
// Every run is repeated over K seeds (--seeds, default 5), the variant and its baseline paired
// by seed, and each comparison is judged by the exact test the table declares for it.
// README.md beside this file is the guide: the runs, the families of tests, the floors, the
// seed blocks, what K decides, how to run a part and how to read the TSV files.
//
// Read in this order:
//   table.h, table.cpp              the table: every run, claim and comparison, declared once
//   variants.h/.cpp, rnn.h/.cpp     the ablations: what a run changes in chapter 7's model or
//                                   its training; the previous article's LSTM, the baseline
//   runs.h/.cpp                     the recipes that train a run for one seed and measure it
//   stats.h/.cpp                    the exact tests; each comparison, its verdict, the family
//   report.h/.cpp, figures.h/.cpp   each claim's table and verdicts; its figure
//   main.cpp                        this file: the options, then the chosen claims' runs
// and machinery/, around them: runner (the runs as forked processes, kept records, progress),
// records (what a kept record must hold), tsv (the --summary files). The model is
// chapters/5-blocks/decoder.h, the trainer chapters/7-translate/train.h.
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
#include <cstdio>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "chapters/8-ablations/figures.h"
#include "chapters/8-ablations/machinery/tsv.h"
#include "chapters/8-ablations/report.h"
#include "chapters/8-ablations/runs.h"
#include "common/program/atomic_file.h"
#include "common/program/cli.h"
#include "common/program/serialize.h"

using namespace ablations;

namespace {

// The figures' folder and the names of those the chosen claims draw, and the summary file,
// checked before any training: one line and exit 2.
void check_output(const cli::Parser& cli, const std::string& summary,
                  const std::set<std::string>& claims) {
    std::vector<std::string> figures;  // 8-<claim>.png of each chosen claim
    for (const std::string& c : claims)
        figures.push_back("8-" + c + ".png");
    cli.check_figure_dir(figures);
    try {
        if (!summary.empty()) {
            serialize::check_writable(summary);
            serialize::check_writable(seeds_path(summary));
        }
    } catch (const std::exception& e) {
        cli.fail("--summary " + summary + ": " + cli::error_text(e));
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
             "write one TSV line per comparison to this file, and every seed's values to "
             "<its name>-seeds.tsv beside it (none unless given)");
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
    const auto defaults = std::tuple(scale, seeds, seed);  // what the full default run uses
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
                         " is no setting of the chosen claims; see table.cpp for the names");
            asked.insert(name);
        }
        needed = asked;
    }
    const bool full_default =
        only.empty() && runs.empty() && std::tuple(scale, seeds, seed) == defaults;
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
        "써서 씨앗마다 차이 하나; 판정은 미리 정한 정확 검정으로 (주 비교는 Holm 보정, "
        "가족 전체 5%%)\n",
        seed_values.front(), seed_values.back());
    std::printf(
        "데이터: 학습 / 검증 1000개 / 시험 1000개, 고르는 것은 검증에서, 점수는 시험에서; 7장의 "
        "평가 집합 1000개(7장의 기본값을 고른 수)는 점수에 쓰지 않고, 4절의 1~9999 실험 밖에서는 "
        "학습에도 쓰지 않음\n");
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
        std::fprintf(stderr, "8-ablations: error: %s\n", cli::error_text(e));
        return 1;
    }
    Records r;
    for (size_t i = 0; i < selected.size(); i++)
        r[run_name(selected[i].name)].push_back(&results[i]);
    std::vector<Comparison> cmp;
    auto has = [&](const char* run_key) {  // "nb-4:digit_accuracy": was nb-4 run? "": none
        const std::string key = run_key;
        return key.empty() || needed.count(key.substr(0, key.find(':'))) > 0;
    };
    for (const ComparisonSpec& spec : COMPARISONS)
        if (chosen.count(spec.claim) && has(spec.baseline) && has(spec.variant))
            cmp.push_back(compare(r, spec));
    judge_family(cmp);

    int status = 0;
    auto figure = [&](auto draw) {
        if (no_figures) return;
        try {
            draw();
        } catch (const std::exception& e) {
            std::fprintf(stderr, "8-ablations: error: %s\n", cli::error_text(e));
            status = 1;
        }
    };
    // Each chosen claim: its table, verdicts and figure; with only some of its runs (--runs),
    // the comparisons it has (the heads claim: the tables it has), without the figure.
    for (const ClaimSpec& c : CLAIMS) {
        const std::string name = c.name;
        if (!chosen.count(name)) continue;
        bool complete = true;
        for (const char* run : c.runs)
            complete = complete && needed.count(run);
        if (complete) {
            c.report(r, cmp, scale);
            figure([&] { c.draw(r, cmp, figure_dir + "/8-" + name + ".png"); });
        } else if (name == "heads") {
            c.report(r, cmp, scale);
        } else if (std::any_of(cmp.begin(), cmp.end(),
                               [&](const Comparison& k) { return k.spec->claim == name; })) {
            std::printf("\n== %s (--runs: 설정 일부만) ==\n", name.c_str());
            report_comparisons(cmp, name);
        }
    }
    if (!summary.empty()) {
        try {
            atomic_file::write(summary, summary_tsv(cmp), {.create_folders = false});
            atomic_file::write(seeds_path(summary), seeds_tsv(r, cmp), {.create_folders = false});
        } catch (const std::exception& e) {
            std::fprintf(stderr, "8-ablations: error: %s\n", cli::error_text(e));
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
