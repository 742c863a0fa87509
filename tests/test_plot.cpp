// common/plot: the data -> pixel transform, ticks and labels, colormaps, a rendered figure read
// back from its PNG, determinism, and the one-line errors for a bad path or a missing font.
#include "common/plot/plot.h"
#include "tests/png.h"
#include "tests/util.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

using testutil::Decoded;

Decoded decode(const std::vector<uint8_t>& png) {
    Decoded d = testutil::decode_png(png.data(), png.size());
    REQUIRE_MESSAGE(d.w > 0, "stb_image could not decode the PNG");
    return d;
}

std::vector<uint8_t> slurp(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

bool is_colour(const uint8_t* p, int r, int g, int b, int tol = 0) {
    return std::abs(p[0] - r) <= tol && std::abs(p[1] - g) <= tol && std::abs(p[2] - b) <= tol;
}

std::string scratch_dir(const std::string& name) {
    auto d = std::filesystem::temp_directory_path() /
             ("plot-test-" + std::to_string(::getpid()) + "-" + name);
    std::filesystem::remove_all(d);
    std::filesystem::create_directories(d);
    return d.string();
}

}  // namespace

TEST_CASE("plot: linear data -> pixel follows matplotlib's default subplot box") {
    plot::Figure fig(4, 3, 100);  // 400 x 300 pixels
    plot::Axes& ax = fig.subplot(1, 1, 0);
    ax.plot({0, 10}, {0, 1});
    // Autoscale: the data range plus 5% each side.
    CHECK(ax.xlim().first == doctest::Approx(-0.5));
    CHECK(ax.xlim().second == doctest::Approx(10.5));
    CHECK(ax.ylim().first == doctest::Approx(-0.05));
    ax.set_xlim(0, 10);
    ax.set_ylim(0, 1);
    // left .125, right .9, bottom .11, top .88 of the figure; spines on pixel centres.
    auto [x0, y0] = ax.data_to_pixel(0, 0);
    auto [x1, y1] = ax.data_to_pixel(10, 1);
    CHECK(x0 == doctest::Approx(50.5));
    CHECK(y0 == doctest::Approx(267.5));
    CHECK(x1 == doctest::Approx(360.5));
    CHECK(y1 == doctest::Approx(36.5));
    auto [xm, ym] = ax.data_to_pixel(2.5, 0.75);
    CHECK(xm == doctest::Approx(50.5 + 0.25 * 310));
    CHECK(ym == doctest::Approx(267.5 - 0.75 * 231));
}

TEST_CASE("plot: log axes map decades evenly, base 10 and base 2") {
    plot::Figure fig(6, 3, 100);
    plot::Axes& a = fig.subplot(1, 2, 0);
    plot::Axes& b = fig.subplot(1, 2, 1);
    a.plot({1, 1000}, {0.01, 1});
    a.set_xscale("log");
    a.set_yscale("log");
    a.set_xlim(1, 1000);
    a.set_ylim(0.01, 1);
    auto box = a.box();
    auto [px, py] = a.data_to_pixel(10, 0.1);
    CHECK(px == doctest::Approx(box.x0 + (box.x1 - box.x0) / 3));
    CHECK(py == doctest::Approx((box.y0 + box.y1) / 2));
    b.plot({128, 4096}, {1, 2});
    b.set_xscale("log", 2);
    b.set_xlim(128, 4096);  // 2^7 .. 2^12
    auto bb = b.box();
    CHECK(b.data_to_pixel(1024, 1).first == doctest::Approx(bb.x0 + (bb.x1 - bb.x0) * 3 / 5));
    CHECK(b.data_to_pixel(std::sqrt(128.0 * 4096), 1).first ==
          doctest::Approx((bb.x0 + bb.x1) / 2));
    // Autoscaled log limits: 5% margins in decades (figure 1: d_k 4..1024 -> 3.03..1352).
    plot::Figure f2(6, 3, 100);
    plot::Axes& c = f2.subplot(1, 1, 0);
    c.plot({4, 1024}, {1, 2});
    c.set_xscale("log");
    double span = std::log10(1024.0) - std::log10(4.0);
    CHECK(c.xlim().first == doctest::Approx(std::pow(10, std::log10(4.0) - 0.05 * span)));
    CHECK(c.xlim().second == doctest::Approx(std::pow(10, std::log10(1024.0) + 0.05 * span)));
}

TEST_CASE("plot: nice ticks and their labels match matplotlib's locator and formatter") {
    auto near = [](const std::vector<double>& got, const std::vector<double>& want) {
        REQUIRE(got.size() == want.size());
        for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]));
    };
    near(plot::nice_ticks(0, 1.05, 9), {0, 0.2, 0.4, 0.6, 0.8, 1.0, 1.2});
    near(plot::nice_ticks(-34.1, 34.1, 9), {-40, -30, -20, -10, 0, 10, 20, 30, 40});
    near(plot::nice_ticks(-1, 1, 9), {-1, -0.75, -0.5, -0.25, 0, 0.25, 0.5, 0.75, 1});
    near(plot::nice_ticks(34.6, 65.4, 9), {30, 35, 40, 45, 50, 55, 60, 65, 70});
    near(plot::nice_ticks(0, 7, 3), {0, 2.5, 5, 7.5});
    CHECK(plot::format_ticks({0, 0.2, 0.4, 1.0}) ==
          std::vector<std::string>{"0.0", "0.2", "0.4", "1.0"});
    CHECK(plot::format_ticks({-1, -0.75, 0, 1}) ==
          std::vector<std::string>{"-1.00", "-0.75", "0.00", "1.00"});
    CHECK(plot::format_ticks({-30, 0, 30}) == std::vector<std::string>{"-30", "0", "30"});
    CHECK(plot::format_g(0.05) == "0.05");
    CHECK(plot::format_g(1000) == "1000");
    CHECK(plot::format_g(1e-5) == "1e-05");
    CHECK(plot::format_g(0.125) == "0.125");
}

TEST_CASE("plot: the article's axes get the article's ticks") {
    plot::Figure fig(11, 4, 150);
    plot::Axes& a0 = fig.subplot(1, 2, 0);
    plot::Axes& a1 = fig.subplot(1, 2, 1);
    std::vector<double> dks = {4, 8, 16, 32, 64, 128, 256, 512, 1024};
    a0.plot(dks, {0.52, 0.64, 0.75, 0.82, 0.87, 0.91, 0.94, 0.95, 0.97}, "o-");
    a0.set_ylim(0, 1.05);
    a0.set_xscale("log");
    a0.use_plain_log_labels('x');
    a1.plot(dks, {0.6, 0.48, 0.34, 0.25, 0.18, 0.13, 0.089, 0.065, 0.043}, "o-");
    a1.set_yscale("log");
    a1.use_plain_log_labels('y', {1.0, 2.0, 5.0});
    fig.tight_layout();
    auto majors = [](const std::vector<plot::Axes::Tick>& ts) {
        std::vector<std::string> out;
        for (const auto& t : ts)
            if (t.major) out.push_back(t.label);
        return out;
    };
    CHECK(majors(a0.xticks()) == std::vector<std::string>{"10", "100", "1000"});
    CHECK(majors(a0.yticks()) ==
          std::vector<std::string>{"0.0", "0.2", "0.4", "0.6", "0.8", "1.0"});
    CHECK(majors(a1.yticks()) == std::vector<std::string>{"0.05", "0.1", "0.2", "0.5"});
    // Minor ticks: 2..9 per decade, unlabelled, none on a major.
    int minors = 0;
    for (const auto& t : a0.xticks()) {
        if (t.major) continue;
        ++minors;
        CHECK(t.label.empty());
    }
    CHECK(minors == 6 + 8 + 8);  // 4..9, 20..90, 200..900; 2000 is past the limit 1352

    plot::Figure f2(11, 4, 150);
    plot::Axes& b = f2.subplot(1, 2, 0);
    b.plot({128, 256, 512, 1024, 2048, 4096}, {0.8, 1.5, 5.1, 16.3, 55.5, 7172.6}, "o-");
    b.set_xscale("log", 2);
    b.set_yscale("log");
    f2.tight_layout();
    CHECK(majors(b.xticks()) ==
          std::vector<std::string>{"2^{7}", "2^{8}", "2^{9}", "2^{10}", "2^{11}", "2^{12}"});
    CHECK(majors(b.yticks()) ==
          std::vector<std::string>{"10^{0}", "10^{1}", "10^{2}", "10^{3}", "10^{4}"});
    // On a short log axis the minor ticks carry labels as matplotlib's LogFormatter gives them
    // (matplotlib 3.6.3, the same data and figure size): over 0.4 to 1 decade at 2, 3, 4 and 6
    // only; over more than one decade none, even where only one decade is in view.
    auto labels_of = [](std::vector<double> y) {
        plot::Figure f(5, 4, 100);
        plot::Axes& m = f.subplot(1, 1, 0);
        m.plot({1, 2, 3}, y);
        m.set_yscale("log");
        std::vector<std::string> out;
        for (const auto& t : m.yticks())
            if (!t.label.empty()) out.push_back(t.label);
        return out;
    };
    CHECK(labels_of({0.3, 0.5, 0.8}) ==  // view 0.286 .. 0.84
          std::vector<std::string>{"3×10^{-1}", "4×10^{-1}", "6×10^{-1}"});
    CHECK(labels_of({120, 400, 900}) ==  // view 108 .. 995
          std::vector<std::string>{"2×10^{2}", "3×10^{2}", "4×10^{2}", "6×10^{2}"});
    CHECK(labels_of({270, 1000, 6000}) == std::vector<std::string>{"10^{3}"});  // 231 .. 7010
    // A heatmap's axes: integer ticks at cell centres, row 0 on top.
    plot::Axes& h = f2.subplot(1, 2, 1);
    h.imshow(std::vector<double>(64 * 64, 0.0), 64, 64);
    CHECK(majors(h.xticks()) == std::vector<std::string>{"0", "10", "20", "30", "40", "50", "60"});
    CHECK(h.ylim().first == doctest::Approx(63.5));
    CHECK(h.ylim().second == doctest::Approx(-0.5));
    CHECK(h.data_to_pixel(0, 0).second < h.data_to_pixel(0, 63).second);
}

TEST_CASE("plot: colormaps hit matplotlib's end and middle colours") {
    auto bytes = [](plot::Color c) {
        return std::vector<int>{(int)std::lround(c.r * 255), (int)std::lround(c.g * 255),
                                (int)std::lround(c.b * 255)};
    };
    plot::Colormap rdbu_r("RdBu_r");
    CHECK(bytes(rdbu_r(0.0)) == std::vector<int>{5, 48, 97});    // ColorBrewer #053061
    CHECK(bytes(rdbu_r(1.0)) == std::vector<int>{103, 0, 31});   // #67001f
    auto mid = bytes(rdbu_r(0.5));                               // next to #f7f7f7
    for (int v : mid) CHECK(std::abs(v - 247) <= 2);
    plot::Colormap rdbu("RdBu");
    CHECK(bytes(rdbu(0.0)) == std::vector<int>{103, 0, 31});
    plot::Colormap viridis("viridis");
    CHECK(bytes(viridis(0.0)) == std::vector<int>{68, 1, 84});
    CHECK(bytes(viridis(1.0)) == std::vector<int>{253, 231, 36});
    CHECK(bytes(plot::Colormap("Blues")(1.0)) == std::vector<int>{8, 48, 107});
    CHECK_THROWS_WITH_AS(plot::Colormap("jet"), doctest::Contains("unknown colormap 'jet'"),
                         std::runtime_error);
}

TEST_CASE("plot: a rendered figure has its line, marker and text where they must be") {
    plot::Figure fig(4, 3, 100);
    plot::Axes& ax = fig.subplot(1, 1, 0);
    ax.set_xlim(0, 1);
    ax.set_ylim(0, 1);
    ax.plot({0, 1}, {0.5, 0.5}, {.color = plot::tab10[3], .lw = 3});  // red, about 4 px
    ax.plot({0.25}, {0.75}, {.fmt = "s"});                            // C0 square, 6 pt
    ax.text(0.75, 0.25, "가나다", {.ha = plot::center, .va = plot::center, .size = 14});
    ax.set_title("제목");

    std::vector<uint8_t> png = fig.png_bytes(false);  // whole canvas, no crop
    Decoded img = decode(png);
    REQUIRE(img.w == 400);
    REQUIRE(img.h == 300);

    auto [lx, ly] = ax.data_to_pixel(0.5, 0.5);
    CHECK(is_colour(img.at((int)lx, (int)ly), 214, 39, 40));      // #d62728, fully covered
    CHECK(is_colour(img.at((int)lx, (int)ly - 5), 255, 255, 255)); // 5 px above: background
    auto [mx, my] = ax.data_to_pixel(0.25, 0.75);
    CHECK(is_colour(img.at((int)mx, (int)my), 31, 119, 180));     // #1f77b4
    CHECK(is_colour(img.at((int)mx + 3, (int)my - 3), 31, 119, 180));
    CHECK(is_colour(img.at((int)mx + 12, (int)my), 255, 255, 255));

    // The text: dark pixels inside its extent around the anchor, none just outside it.
    auto [tx, ty] = ax.data_to_pixel(0.75, 0.25);
    auto [tw, th] = plot::text_extent("가나다", 14, 100);
    CHECK(tw > 40);
    int dark_in = 0, dark_out = 0;
    for (int y = (int)(ty - th); y <= (int)(ty + th); ++y)
        for (int x = (int)(tx - tw); x <= (int)(tx + tw); ++x) {
            bool inside =
                std::abs(x + 0.5 - tx) < tw / 2 + 1 && std::abs(y + 0.5 - ty) < th / 2 + 1;
            bool dark = img.at(x, y)[0] < 128;
            (inside ? dark_in : dark_out) += dark;
        }
    CHECK(dark_in > 60);
    CHECK(dark_out == 0);
    // The title sits above the axes, centred.
    auto box = ax.box();
    int title_dark = 0;
    for (int y = 0; y < (int)box.y0 - 2; ++y)
        for (int x = (int)box.x0; x < (int)box.x1; ++x) title_dark += img.at(x, y)[0] < 128;
    CHECK(title_dark > 30);
    // Spines are black; nothing is drawn in an empty corner of the axes or of the figure.
    CHECK(img.at((int)box.x0, (int)((box.y0 + box.y1) / 2))[0] < 40);
    CHECK(is_colour(img.at((int)(box.x0 + 20), (int)(box.y0 + 20)), 255, 255, 255));
    CHECK(is_colour(img.at(5, 295), 255, 255, 255));

    // Pixels() is the same canvas without the PNG round trip.
    const plot::Pixels& px = fig.pixels();
    CHECK(px.width == 400);
    CHECK(std::equal(px.rgb.begin(), px.rgb.end(), img.rgb.begin()));

    // bbox_tight crops to the drawing plus 0.1 in.
    Decoded cropped = decode(fig.png_bytes(true));
    CHECK(cropped.w < 400);
    CHECK(cropped.h < 300);
}

TEST_CASE("plot: the same figure renders to the same PNG bytes") {
    auto make = [](const std::string& path) {
        plot::Figure fig(11, 4, 150);
        plot::Axes& a = fig.subplot(1, 2, 0);
        a.plot({4, 8, 16, 32}, {0.5, 0.6, 0.7, 0.8}, "o-", "스케일링 없음");
        a.plot({4, 8, 16, 32}, {0.3, 0.35, 0.36, 0.36}, "^--", "sqrt(d_k)로 나눔");
        a.axhline(0.125, {.fmt = "--", .color = plot::gray, .lw = 1, .label = "균등분포 1/8"});
        a.set_xscale("log", 2);
        a.grid(0.3);
        a.legend();
        a.set_ylabel("평균 최대 확률");
        plot::Axes& b = fig.subplot(1, 2, 1);
        std::vector<double> z(16);
        for (int i = 0; i < 16; ++i) z[i] = std::sin(i * 0.7);
        plot::Image& im = b.imshow(z, 4, 4, {.cmap = "RdBu_r", .vmin = -1, .vmax = 1});
        fig.colorbar(im, b);
        b.text(1, 2, "0.72",
               {.ha = plot::center, .va = plot::center, .color = plot::white, .size = 9});
        fig.tight_layout();
        fig.save_png(path);
        return fig.png_bytes();
    };
    std::string dir = scratch_dir("determinism");
    std::vector<uint8_t> first = make(dir + "/a.png"), second = make(dir + "/b.png");
    CHECK(first.size() > 1000);
    CHECK(first == second);
    CHECK(slurp(dir + "/a.png") == first);
    CHECK(slurp(dir + "/b.png") == first);
    std::filesystem::remove_all(dir);
}

TEST_CASE("plot: save_png creates folders, and a failed write names the path") {
    std::string dir = scratch_dir("paths");
    plot::Figure fig(2, 2, 50);
    fig.subplot(1, 1, 0).plot({0, 1}, {0, 1});
    fig.save_png(dir + "/new/deeper/fig.png");  // missing parents are created
    CHECK(std::filesystem::exists(dir + "/new/deeper/fig.png"));

    { std::ofstream(dir + "/plain-file") << "x"; }
    std::string bad = dir + "/plain-file/fig.png";  // a file where a folder must be
    auto message = [&](const std::string& path) {
        try {
            fig.save_png(path);
        } catch (const std::runtime_error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    std::string m = message(bad);
    CHECK_MESSAGE(m.find("cannot write figure " + bad + ": ") == 0, m);
    std::string onto_dir = dir + "/new";  // a folder where the file must be
    m = message(onto_dir);
    CHECK_MESSAGE(m.find("cannot write figure " + onto_dir + ": ") == 0, m);
    // No temporary file is left behind.
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
        CHECK(e.path().filename().string().find(".tmp") == std::string::npos);
    std::filesystem::remove_all(dir);
}

TEST_CASE("plot: save_png writes through a symlink, refuses a FIFO, clears a killed run's temp") {
    std::string dir = scratch_dir("kinds");
    plot::Figure fig(2, 2, 50);
    fig.subplot(1, 1, 0).plot({0, 1}, {0, 1});
    std::filesystem::create_symlink("real.png", dir + "/link.png");
    fig.save_png(dir + "/link.png");
    CHECK(std::filesystem::is_symlink(dir + "/link.png"));
    CHECK(slurp(dir + "/real.png") == fig.png_bytes());

    REQUIRE(::mkfifo((dir + "/fifo.png").c_str(), 0644) == 0);
    std::string m;
    try {
        fig.save_png(dir + "/fifo.png");
    } catch (const std::runtime_error& e) {
        m = e.what();
    }
    CHECK(m == "cannot write figure " + dir + "/fifo.png: " + dir +
                   "/fifo.png is a FIFO, not a regular file");
    CHECK(std::filesystem::is_fifo(dir + "/fifo.png"));

    pid_t gone = ::fork();  // a process id nobody has now, as after a kill -9 mid-save
    REQUIRE(gone >= 0);
    if (gone == 0) ::_exit(0);
    ::waitpid(gone, nullptr, 0);
    const std::string left = dir + "/fig.png.tmp." + std::to_string(gone);
    { std::ofstream(left) << "half a PNG"; }
    fig.save_png(dir + "/fig.png");
    CHECK_FALSE(std::filesystem::exists(left));
    CHECK(slurp(dir + "/fig.png") == fig.png_bytes());
    std::filesystem::remove_all(dir);
}

TEST_CASE("plot: a missing font ends with one line naming the package") {
    const char* old = std::getenv("PLOT_FONT");
    std::string saved = old ? old : "";
    ::setenv("PLOT_FONT", "/nonexistent/NoSuchFont.ttf", 1);
    CHECK(plot::font_path() == "/nonexistent/NoSuchFont.ttf");
    plot::Figure fig(2, 2, 50);
    fig.subplot(1, 1, 0).set_title("제목");
    std::string msg;
    try {
        fig.save_png("/tmp/never-written.png");
    } catch (const std::runtime_error& e) {
        msg = e.what();
    }
    CHECK(msg == "font not found: /nonexistent/NoSuchFont.ttf -- install with: sudo apt-get "
                 "install fonts-nanum");
    if (old) ::setenv("PLOT_FONT", saved.c_str(), 1);
    else ::unsetenv("PLOT_FONT");
    CHECK_NOTHROW(plot::check_font());
}

TEST_CASE("plot: a title's bytes that are not UTF-8 are not a letter") {
    // "\xC1\x81", an overlong 'A', draws as two bad bytes (term::decode_utf8 decodes).
    auto png = [](const std::string& title) {
        plot::Figure fig(2, 1, 50);
        fig.subplot(1, 1, 0).set_title(title);
        return fig.png_bytes();
    };
    CHECK(png("\xC1\x81") != png("A"));
}

TEST_CASE("plot: bad arguments are refused with a message") {
    plot::Figure fig(2, 2, 50);
    plot::Axes& ax = fig.subplot(1, 2, 0);
    CHECK_THROWS_WITH_AS(ax.plot({1, 2}, {1}), doctest::Contains("pass equally long series"),
                         std::runtime_error);
    CHECK_THROWS_WITH_AS(ax.plot({1}, {1}, "x-"), doctest::Contains("format 'x-'"),
                         std::runtime_error);
    CHECK_THROWS_WITH_AS(ax.imshow({1, 2, 3}, 2, 2), doctest::Contains("rows * cols"),
                         std::runtime_error);
    CHECK_THROWS_AS(fig.subplot(2, 2, 0), std::runtime_error);
    CHECK_THROWS_AS(fig.subplot(1, 2, 2), std::runtime_error);
    CHECK_THROWS_AS(ax.set_xscale("symlog"), std::runtime_error);
}
