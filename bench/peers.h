// bench-gemm's peers, the parent's side: which libraries it compares with and how a missing one
// is named, and the table of ours / the best peer per cell (pure functions of the figures the
// child processes gave, so the tests can ask them about any figures). The children's side is
// bench/peer_child.h.
#pragma once

#include "bench/median.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace bench::peers {

// A library bench-gemm compares with.
struct Family {
    std::string key;      // its word in --peers: "onednn", "blis", "openblas", "eigen"
    std::string label;    // its name in the table
    std::string needs;    // what is not there when it is skipped
    std::string package;  // the Debian package that brings it (make bench installs it)
};

inline const std::vector<Family>& families() {
    static const std::vector<Family> all = {
        {"onednn", "oneDNN", "libdnnl.so.2 (oneDNN 2.x)", "libdnnl2"},
        {"blis", "BLIS", "libblis.so.4", "libblis4-openmp"},
        {"openblas", "OpenBLAS", "libopenblas.so.0", "libopenblas0-pthread"},
        {"eigen", "Eigen", "Eigen's headers (bench/peers/eigen_gemm.cpp's program)",
         "libeigen3-dev"},
    };
    return all;
}

// The one line for a peer that is not installed: what is missing and the command that brings it.
inline std::string skipped_line(const Family& f) {
    return "  " + f.label + ": skipped, " + f.needs + " not found (apt-get install " + f.package +
           (f.key == "eigen" ? ", then make bench builds it)" : "; make bench installs it)");
}

// One cell's figures: GFLOP/s in each round, 0 where a round has none (the child failed, or the
// library is skipped). peers: by family label; a family that ran two ways (its own kernel pick
// and a forced one: OpenBLAS) gives the faster of the two in each round.
struct Cell {
    std::vector<double> ours;
    std::map<std::string, std::vector<double>> peers;
};

// ratio: the median over the rounds of ours / the round's fastest peer (0 where no round has
// both), lowest and highest: the smallest and largest of those rounds' ratios (the machine's
// speed drifts from one run to the next, and the median of a few runs can land on either side
// of 1.0 where the runs straddle it); best: the peer that was fastest in the most rounds, a tie
// going to the higher median; wins: in how many of the rounds that have a ratio.
struct Summary {
    double ratio = 0, lowest = 0, highest = 0;
    std::string best;
    int wins = 0, rounds = 0;
};

// The median of a list's figures that are there (> 0); 0 where none is.
inline double median_present(const std::vector<double>& v) {
    std::vector<double> present;
    for (double x : v)
        if (x > 0) present.push_back(x);
    return bench::median(present);
}

inline Summary summarize(const Cell& cell) {
    Summary s;
    std::vector<double> ratios;
    std::map<std::string, int> wins;
    for (size_t r = 0; r < cell.ours.size(); r++) {
        std::string best;
        double fastest = 0;
        for (const auto& [label, rounds] : cell.peers)
            if (r < rounds.size() && rounds[r] > fastest) fastest = rounds[r], best = label;
        if (cell.ours[r] <= 0 || fastest <= 0) continue;
        ratios.push_back(cell.ours[r] / fastest);
        wins[best]++;
    }
    s.rounds = (int)ratios.size();
    s.ratio = bench::median(ratios);
    if (!ratios.empty()) {
        s.lowest = *std::min_element(ratios.begin(), ratios.end());
        s.highest = *std::max_element(ratios.begin(), ratios.end());
    }
    for (const auto& [label, w] : wins)
        if (w > s.wins || (w == s.wins && median_present(cell.peers.at(label)) >
                                              median_present(cell.peers.at(s.best))))
            s.best = label, s.wins = w;
    return s;
}

// One row of the table: a size, a layout and a thread count.
struct Row {
    int n = 0;
    bool trans_b = false;
    int threads = 1;
    Cell cell;
};

// The table: a row per cell with each library's median GFLOP/s ("-" where it has none: skipped,
// or failed in every round) and ours / the best peer, named, with the lowest and highest of the
// runs' ratios where there are two or more; then the geometric mean of the ratios and which peer
// was best in how many cells. labels: the peers' columns, in order.
inline std::string format_table(const std::vector<std::string>& labels,
                                const std::vector<Row>& rows) {
    std::string out;
    char buf[256];
    auto width = [](const std::string& label) { return std::max<int>(7, (int)label.size()); };
    std::snprintf(buf, sizeof buf, "%6s %6s %3s | %7s |", "size", "op", "thr", "ours");
    out += buf;
    for (const std::string& l : labels) {
        std::snprintf(buf, sizeof buf, " %*s |", width(l), l.c_str());
        out += buf;
    }
    out += " ours / best peer [lowest, highest run]\n";
    double log_sum = 0;
    int ratios = 0;
    std::map<std::string, int> best_in;
    for (const Row& row : rows) {
        std::snprintf(buf, sizeof buf, "%6d %6s %3d |", row.n, row.trans_b ? "A@B^T" : "A@B",
                      row.threads);
        out += buf;
        const double ours = median_present(row.cell.ours);
        if (ours > 0)
            std::snprintf(buf, sizeof buf, " %7.1f |", ours);
        else
            std::snprintf(buf, sizeof buf, " %7s |", "-");
        out += buf;
        for (const std::string& l : labels) {
            const auto it = row.cell.peers.find(l);
            const double g = it == row.cell.peers.end() ? 0 : median_present(it->second);
            if (g > 0)
                std::snprintf(buf, sizeof buf, " %*.1f |", width(l), g);
            else
                std::snprintf(buf, sizeof buf, " %*s |", width(l), "-");
            out += buf;
        }
        const Summary s = summarize(row.cell);
        if (s.rounds > 0) {
            int at = std::snprintf(buf, sizeof buf, " %.2fx (%s)", s.ratio, s.best.c_str());
            if (s.rounds > 1)
                at +=
                    std::snprintf(buf + at, sizeof buf - at, " [%.2f, %.2f]", s.lowest, s.highest);
            std::snprintf(buf + at, sizeof buf - at, "\n");
            log_sum += std::log(s.ratio), ratios++, best_in[s.best]++;
        } else {
            std::snprintf(buf, sizeof buf, " -\n");
        }
        out += buf;
    }
    if (ratios > 0) {
        std::snprintf(buf, sizeof buf, "geometric mean of ours / best peer: %.2fx; the best peer:",
                      std::exp(log_sum / ratios));
        out += buf;
        // Most cells first; a tie in the order of the columns.
        std::vector<std::pair<int, std::string>> order;
        for (size_t i = 0; i < labels.size(); i++)
            if (best_in.count(labels[i])) order.push_back({-best_in[labels[i]], labels[i]});
        std::stable_sort(order.begin(), order.end(),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
        for (size_t i = 0; i < order.size(); i++) {
            std::snprintf(buf, sizeof buf, i ? ", %s in %d" : " %s in %d of %d cells",
                          order[i].second.c_str(), -order[i].first, ratios);
            out += buf;
        }
        out += "\n";
    }
    return out;
}

}  // namespace bench::peers
