// Chapter 8's figures (see figures.h): loss curves as a 25-step running mean on a log axis, the
// head-pruning map and curve, accuracies as points per setting.
#include "chapters/8-ablations/figures.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "chapters/8-ablations/experiments.h"
#include "common/plot/plot.h"

namespace ablations {

namespace {

// A 25-step running mean, without the steps after a divergence (not numbers).
std::vector<double> smooth(const std::vector<double>& v) {
    std::vector<double> out;
    double acc = 0;
    for (size_t i = 0; i < v.size() && std::isfinite(v[i]); i++) {
        acc += v[i];
        if (i >= 25) acc -= v[i - 25];
        out.push_back(acc / double(std::min<size_t>(i + 1, 25)));
    }
    return out;
}

void loss_curve(plot::Axes& ax, const Record& rec, const char* fmt, const std::string& label) {
    std::vector<double> y = smooth(rec.get("loss")), x(y.size());
    std::iota(x.begin(), x.end(), 1.0);
    ax.plot(x, y, {.fmt = fmt, .lw = 1.5, .label = label});
}

void loss_axes(plot::Axes& ax, const std::string& title) {
    ax.set_yscale("log");
    ax.set_xlabel("학습 스텝");
    ax.set_ylabel("교차 엔트로피 (25스텝 이동 평균)");
    ax.set_title(title);
    ax.grid(0.3);
    ax.legend();
}

std::string pct(double v) {
    char b[16];
    std::snprintf(b, sizeof b, "%.1f%%", v);
    return b;
}

}  // namespace

void draw_scaling(const Records& r, const std::string& path) {
    plot::Figure fig(11, 4, 150);
    plot::Axes& left = fig.subplot(1, 2, 0);
    loss_curve(left, *r.at("scaled-256"), "-",
               "√d_k로 나눔 (" + pct(r.at("scaled-256")->value("exact")) + ")");
    loss_curve(left, *r.at("unscaled-256"), "--",
               "나누지 않음 (" + pct(r.at("unscaled-256")->value("exact")) + ")");
    loss_axes(left, "d_k = 256 (헤드 1개, d_model = 256)");
    plot::Axes& right = fig.subplot(1, 2, 1);
    loss_curve(right, *r.at("base"), "-",
               "√d_k로 나눔 (" + pct(r.at("base")->value("exact")) + ")");
    loss_curve(right, *r.at("unscaled-16"), "--",
               "나누지 않음 (" + pct(r.at("unscaled-16")->value("exact")) + ")");
    loss_axes(right, "d_k = 16 (7장의 모델)");
    fig.tight_layout();
    fig.save_png(path);
}

void draw_heads(const Records& r, const std::string& path) {
    plot::Figure fig(7, 4, 150);
    plot::Axes& ax = fig.subplot(1, 1, 0);
    loss_curve(ax, *r.at("base"), "-",
               "헤드 4개, d_k = 16 (" + pct(r.at("base")->value("exact")) + ")");
    loss_curve(ax, *r.at("heads-1"), "--",
               "헤드 1개, d_k = 64 (" + pct(r.at("heads-1")->value("exact")) + ")");
    loss_axes(ax, "같은 파라미터 수, 헤드 수만 다름");
    fig.tight_layout();
    fig.save_png(path);
}

void draw_pruning(const Records& r, const std::string& path) {
    const Record& base = *r.at("base");
    const std::vector<double>& alone = base.get("head_exact");
    const std::vector<double>& curve = base.get("greedy_exact");
    const int n = int(alone.size()), per_kind = n / 3, heads = 4, layers = per_kind / heads;
    const double full = base.value("exact");
    plot::Figure fig(12, 4, 150);
    plot::Axes& left = fig.subplot(1, 2, 0);
    plot::Image& im = left.imshow(alone, 3, per_kind, {.cmap = "Blues", .vmin = 0, .vmax = 100});
    for (int k = 0; k < 3; k++)
        for (int j = 0; j < per_kind; j++) {
            const double v = alone[size_t(k * per_kind + j)];
            char b[16];
            std::snprintf(b, sizeof b, "%.1f", v);
            left.text(j, k, b,
                      {.ha = plot::center,
                       .va = plot::center,
                       .color = v > 60 ? plot::white : plot::black,
                       .size = 8});
        }
    std::vector<double> xt, yt = {0, 1, 2};
    std::vector<std::string> xl;
    for (int j = 0; j < per_kind; j++) {
        xt.push_back(j);
        xl.push_back(std::to_string(j / heads + 1) + "층 " + std::to_string(j % heads + 1));
    }
    left.set_xticks(xt, xl);
    left.set_yticks(
        yt, {kind_name(Kind::encoder_self), kind_name(Kind::decoder_self), kind_name(Kind::cross)});
    left.set_xlabel("제거한 헤드 (층, 번호)");
    left.set_title("헤드 하나를 제거했을 때 정확히 일치 (%)");
    fig.colorbar(im, left);
    plot::Axes& right = fig.subplot(1, 2, 1);
    std::vector<double> x(size_t(n) + 1), y = {full};
    std::iota(x.begin(), x.end(), 0.0);
    y.insert(y.end(), curve.begin(), curve.end());
    right.plot(x, y, "o-", "누적 제거");
    right.axhline(full - 1, {.fmt = "--", .color = plot::gray, .lw = 1, .label = "기준 - 1점"});
    right.set_xlabel("제거한 헤드 수 (덜 중요한 것부터)");
    right.set_ylabel("정확히 일치 (%)");
    right.set_ylim(0, 105);
    right.set_title("헤드를 차례로 제거하기 (" + std::to_string(layers) + "층 x 3종 x " +
                    std::to_string(heads) + "개)");
    right.grid(0.3);
    right.legend({.loc = "lower left"});
    fig.tight_layout();
    fig.save_png(path);
}

void draw_positions(const Records& r, const std::string& path) {
    const Record &sin = *r.at("pos-sin"), &learned = *r.at("pos-learned");
    plot::Figure fig(11, 4, 150);
    plot::Axes& left = fig.subplot(1, 2, 0);
    left.plot({0, 1}, {sin.value("exact"), sin.value("exact_five")}, "o-", "사인 (논문)");
    left.plot({0, 1}, {learned.value("exact"), learned.value("exact_five")}, "s--", "학습된 표");
    left.set_xticks({0, 1}, {"네 자리 이하 (학습 범위)", "다섯 자리 (처음 보는 길이)"});
    left.set_xlim(-0.4, 1.4);
    left.set_ylim(0, 105);
    left.set_ylabel("정확히 일치 (%)");
    left.set_title("1~9999로만 학습한 모델");
    left.grid(0.3);
    left.legend();
    plot::Axes& right = fig.subplot(1, 2, 1);
    const std::vector<double>&src = learned.get("src_row_change"),
          &tgt = learned.get("tgt_row_change");
    std::vector<double> rows(src.size());
    std::iota(rows.begin(), rows.end(), 0.0);
    right.plot(rows, src, "o-", "입력 쪽 표");
    right.plot(rows, tgt, "s-", "출력 쪽 표");
    right.set_xlabel("위치 (행)");
    right.set_ylabel("학습으로 바뀐 크기 (행의 노름)");
    right.set_title("학습된 위치 표: 학습 문장이 닿지 않은 행은 그대로");
    right.grid(0.3);
    right.legend();
    fig.tight_layout();
    fig.save_png(path);
}

void draw_warmup(const Records& r, const std::string& path) {
    plot::Figure fig(11, 4, 150);
    struct Panel {
        const char* title;
        const char* warm;
        const char* cold;
    };
    const Panel panels[] = {{"Post-LN (6 + 6층)", "warm-post", "nowarm-post"},
                            {"Pre-LN (6 + 6층)", "warm-pre", "nowarm-pre"}};
    for (int k = 0; k < 2; k++) {
        plot::Axes& ax = fig.subplot(1, 2, k);
        const Record &warm = *r.at(panels[k].warm), &cold = *r.at(panels[k].cold);
        loss_curve(ax, warm, "-", "워밍업 있음 (" + pct(warm.value("exact")) + ")");
        const int at = int(cold.value("diverged_at"));
        loss_curve(ax, cold, "--",
                   "워밍업 없음 (" +
                       (at ? std::to_string(at) + "스텝에서 발산" : pct(cold.value("exact"))) +
                       ")");
        loss_axes(ax, panels[k].title);
    }
    fig.tight_layout();
    fig.save_png(path);
}

void draw_first_step(const Records& r, const std::string& path) {
    const Record& base = *r.at("base");
    const std::vector<double>& acc = base.get("first_token_exact");
    const std::vector<double>& tv = base.get("first_step_tv");
    plot::Figure fig(11, 4, 150);
    const std::vector<std::string> names = {"그대로", "셀프 -> 평균", "인코더-디코더\n-> 평균",
                                            "인코더-디코더\n-> 균등"};
    std::vector<std::string> labels = {"그대로", "셀프 -> 평균", "교차 -> 평균", "교차 -> 균등"};
    std::vector<double> x = {0, 1, 2, 3};
    plot::Axes& left = fig.subplot(1, 2, 0);
    left.plot(x, acc, "o", "");
    left.set_xticks(x, labels);
    left.set_xlim(-0.5, 3.5);
    left.set_ylim(0, 105);
    left.set_ylabel("첫 숫자 정답 (%)");
    left.set_title("첫 생성 스텝: 부품 하나의 출력을 바꾸면");
    left.grid(0.3);
    plot::Axes& right = fig.subplot(1, 2, 1);
    right.plot(x, tv, "s", "");
    right.set_xticks(x, labels);
    right.set_xlim(-0.5, 3.5);
    right.set_ylim(0, 1.05);
    right.set_ylabel("예측 분포의 이동 (total variation)");
    right.set_title("셀프 어텐션은 <시작> 자신만 봄 (가중치 1)");
    right.grid(0.3);
    (void)names;
    fig.tight_layout();
    fig.save_png(path);
}

}  // namespace ablations
