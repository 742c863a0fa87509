// Layout: where tick labels, axis labels, titles and colorbar labels fall (decorate, which also
// draws them), and Figure::layout, which places every Axes on the grid, tight_layout included.
// Read common/plot/axes.cpp before it.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "common/plot/internal.h"

namespace plot {

// ==== Layout: ticks, the boxes of every label, and the placement of the axes on the grid ====

void invalidate(FigureImpl* F) { F->laid_out = false; }

Decor decorate(const AxesImpl& A, double dpi, Canvas* cv) {
    auto pt = [&](double p) { return p * dpi / 72; };
    const Axes::Box& b = A.box;
    Decor d;
    d.ink = {b.x0, b.y0, b.x1, b.y1};
    auto tx = [&](double v) { return data_x_px(A, v); };
    auto ty = [&](double v) { return data_y_px(A, v); };
    bool any_x_major = false, any_y_major = false;
    for (const auto& t : A.xa.ticks) any_x_major |= t.major;
    for (const auto& t : A.ya.ticks) any_y_major |= t.major;
    // x tick labels hang below the ticks, centred; y tick labels sit left, centred on the
    // part above the baseline (matplotlib's center_baseline).
    double xlab_top = b.y1 + (any_x_major ? pt(MAJOR_TICK_LEN) : 0) + pt(TICK_PAD);
    double ylab_right = b.x0 - (any_y_major ? pt(MAJOR_TICK_LEN) : 0) - pt(TICK_PAD);
    double below = b.y1, leftmost = b.x0;
    for (const auto& t : A.xa.ticks) {
        if (t.label.empty()) continue;
        Rect r = draw_text(cv, t.label, snap(tx(t.v), pt(MAJOR_TICK_WIDTH)), xlab_top, FONT_SIZE,
                           dpi, black, ha_center, va_top);
        d.xtick_boxes.push_back(r), d.ink = unite(d.ink, r), below = std::max(below, r.y1);
    }
    if (d.xtick_boxes.empty()) below = xlab_top - pt(TICK_PAD);
    for (const auto& t : A.ya.ticks) {
        if (t.label.empty()) continue;
        Rect r = draw_text(cv, t.label, ylab_right, snap(ty(t.v), pt(MAJOR_TICK_WIDTH)), FONT_SIZE,
                           dpi, black, ha_right, va_center_baseline);
        d.ytick_boxes.push_back(r), d.ink = unite(d.ink, r), leftmost = std::min(leftmost, r.x0);
    }
    if (d.ytick_boxes.empty()) leftmost = ylab_right + pt(TICK_PAD);
    if (!A.xlabel.empty()) {
        d.xlabel = draw_text(cv, A.xlabel, (b.x0 + b.x1) / 2, below + pt(LABEL_PAD), FONT_SIZE, dpi,
                             black, ha_center, va_top);
        d.ink = unite(d.ink, d.xlabel);
    }
    if (!A.ylabel.empty()) {
        d.ylabel = draw_text(cv, A.ylabel, leftmost - pt(LABEL_PAD), (b.y0 + b.y1) / 2, FONT_SIZE,
                             dpi, black, ha_center, va_bottom, true);
        d.ink = unite(d.ink, d.ylabel);
    }
    if (!A.title.empty()) {
        d.title = draw_text(cv, A.title, (b.x0 + b.x1) / 2, b.y0 - pt(TITLE_PAD), TITLE_SIZE, dpi,
                            black, ha_center, va_baseline);
        d.ink = unite(d.ink, d.title);
    }
    if (A.cbar) {
        const Axes::Box& c = A.cbar_box;
        d.ink = unite(d.ink, {c.x0, c.y0, c.x1, c.y1});
        double left = c.x1 + pt(MAJOR_TICK_LEN) + pt(TICK_PAD);
        for (size_t i = 0; i < A.cbar_ticks.size(); ++i) {
            double f = (A.cbar_ticks[i] - A.cbar->vmin) / (A.cbar->vmax - A.cbar->vmin);
            double y = snap(c.y1 - f * (c.y1 - c.y0), pt(MAJOR_TICK_WIDTH));
            Rect r = draw_text(cv, A.cbar_labels[i], left, y, FONT_SIZE, dpi, black, ha_left,
                               va_center_baseline);
            d.cbar_boxes.push_back(r), d.ink = unite(d.ink, r);
        }
    }
    return d;
}

void Figure::layout() {
    FigureImpl& F = *impl_;
    if (F.laid_out) return;
    check_font();
    const double W = F.W(), H = F.H(), dpi = F.dpi;
    const int R = std::max(1, F.rows), C = std::max(1, F.cols);

    for (auto& ax : F.axes) {
        if (!ax) continue;
        AxesImpl& A = *ax->impl_;
        std::tie(A.xa.lo, A.xa.hi) = auto_limits(A, true);
        std::tie(A.ya.lo, A.ya.hi) = auto_limits(A, false);
    }

    // Per grid cell: how far its drawing reaches beyond the cell on each side (pixels).
    std::vector<double> dl(R * C, 0), dr(R * C, 0), dt(R * C, 0), db(R * C, 0);
    auto place = [&](bool tight) {
        double left, right, top, bottom, gap_w, gap_h;
        if (!tight) {  // matplotlib's default subplot parameters
            left = 0.125 * W, right = 0.1 * W, bottom = 0.11 * H, top = 0.12 * H;
            double cw = (W - left - right) / (C + 0.2 * (C - 1));
            double ch = (H - top - bottom) / (R + 0.2 * (R - 1));
            gap_w = 0.2 * cw, gap_h = 0.2 * ch;
        } else {  // tight_layout: margins and gaps are the largest overhangs plus a pad
            double pad = F.pt(TIGHT_PAD * FONT_SIZE);
            left = right = top = bottom = 0;
            gap_w = gap_h = 0;
            for (int r = 0; r < R; ++r) {
                left = std::max(left, dl[r * C]), right = std::max(right, dr[r * C + C - 1]);
                for (int c = 0; c + 1 < C; ++c)
                    gap_w = std::max(gap_w, dr[r * C + c] + dl[r * C + c + 1]);
            }
            for (int c = 0; c < C; ++c) {
                top = std::max(top, dt[c]), bottom = std::max(bottom, db[(R - 1) * C + c]);
                for (int r = 0; r + 1 < R; ++r)
                    gap_h = std::max(gap_h, db[r * C + c] + dt[(r + 1) * C + c]);
            }
            left += pad, right += pad, top += pad, bottom += pad, gap_w += pad, gap_h += pad;
        }
        double cw = (W - left - right - gap_w * (C - 1)) / C;
        double ch = (H - top - bottom - gap_h * (R - 1)) / R;
        if (cw < 10 || ch < 10)
            throw std::runtime_error(
                "plot: the figure is too small for its labels -- make it larger");
        for (auto& ax : F.axes) {
            if (!ax) continue;
            AxesImpl& A = *ax->impl_;
            double sx0 = left + A.col * (cw + gap_w), sy0 = top + A.row * (ch + gap_h);
            double sx1 = sx0 + cw, sy1 = sy0 + ch;
            // Spines on pixel centres keep them crisp.
            auto snap_box = [&](double v) { return snap(v, F.pt(SPINE_WIDTH)); };
            double main_x1 = A.cbar ? sx0 + 0.80 * cw : sx1;
            A.box = {snap_box(sx0), snap_box(sy0), snap_box(main_x1), snap_box(sy1)};
            if (A.cbar) {  // colorbar: pad .05, slot .15 of the cell, 20 times taller than wide
                double h = A.box.y1 - A.box.y0;
                double w = std::min(0.15 * cw, h / 20);
                double cx0 = sx0 + 0.85 * cw;
                A.cbar_box = {snap_box(cx0), A.box.y0, snap_box(cx0 + w), A.box.y1};
                A.cbar_ticks.clear();
                double lo = std::min(A.cbar->vmin, A.cbar->vmax);
                double hi = std::max(A.cbar->vmin, A.cbar->vmax);
                int space = (int)std::floor(h * 72 / dpi / (FONT_SIZE * 2));
                for (double t : nice_ticks_impl(lo, hi, std::clamp(space, 1, 9), false))
                    if (t >= lo - 1e-9 * (hi - lo) && t <= hi + 1e-9 * (hi - lo))
                        A.cbar_ticks.push_back(t);
                A.cbar_labels = format_ticks(A.cbar_ticks);
            }
            bool image = !A.images.empty();
            compute_ticks(A.xa, true, image, A.box.x1 - A.box.x0, dpi);
            compute_ticks(A.ya, false, image, A.box.y1 - A.box.y0, dpi);
            Decor d = decorate(A, dpi, nullptr);
            int k = A.row * C + A.col;
            dl[k] = std::max(0.0, sx0 - d.ink.x0), dr[k] = std::max(0.0, d.ink.x1 - sx1);
            dt[k] = std::max(0.0, sy0 - d.ink.y0), db[k] = std::max(0.0, d.ink.y1 - sy1);
        }
    };
    place(false);
    if (F.tight) {
        place(true);  // ticks may change with the new sizes: settle once more
        place(true);
    }
    F.laid_out = true;
}

}  // namespace plot
