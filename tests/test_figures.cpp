// The committed figures/ are what the chapters draw now: each deterministic chapter is run
// again into a temporary folder and its PNG compared with the committed one (a stale figure
// fails). Chapter 6 (timings) is not deterministic and chapter 7 trains for a minute; they are
// checked by their own tests instead.
//
// figures/ was drawn on testutil::REFERENCE_FLOAT_PATH (tests/util.h): a CPU, a compiler and
// `make`'s default flags. On that path the comparison is byte for byte. On another float path
// (another CPU family or compiler, or other flags: `make sanitize`, OPT=-O3, OPENMP=0) the
// plotted values can differ in their last bits, which moves an anti-aliased edge pixel by a
// level; there the two PNGs are decoded and compared pixel by pixel instead: the same size, no
// colour channel more than MAX_LEVELS apart, and at most MAX_CHANGED_PER_MILLION pixels changed
// at all. A stale figure fails that too: a moved curve, tick or legend entry, or one changed
// character of a label, changes hundreds of pixels by far more than a few levels (the second
// test case below holds the comparison to that).
#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "tests/png.h"
#include "tests/util.h"

namespace {

// Measured on the paths `make portability` runs: clang 14 and 16 (AVX-512) change 12 pixels of
// figure 2 by 1 level, g++ without AVX2 17 pixels of figure 5 by 1 level (28 per million), and
// aarch64 none. The bounds leave room for a path not measured yet.
constexpr int MAX_LEVELS = 2;
constexpr long MAX_CHANGED_PER_MILLION = 200;

struct PixelDiff {
    bool same_size = false;
    int max_level = 0;  // the largest difference of one colour channel, 0..255
    long changed = 0;   // pixels with any channel different
    long pixels = 0;
};

PixelDiff pixel_diff(const testutil::Decoded& a, const testutil::Decoded& b) {
    PixelDiff d;
    d.same_size = a.w > 0 && a.w == b.w && a.h == b.h;
    if (!d.same_size) return d;
    d.pixels = long(a.w) * a.h;
    for (long p = 0; p < d.pixels; p++) {
        int worst = 0;
        for (int c = 0; c < 3; c++)
            worst = std::max(worst, std::abs(int(a.rgb[p * 3 + c]) - int(b.rgb[p * 3 + c])));
        d.max_level = std::max(d.max_level, worst);
        d.changed += worst > 0;
    }
    return d;
}

PixelDiff pixel_diff(const std::string& a_png, const std::string& b_png) {
    return pixel_diff(testutil::decode_png(a_png.data(), a_png.size()),
                      testutil::decode_png(b_png.data(), b_png.size()));
}

// Why a figure on another float path counts as stale ("" when it is within the tolerance).
std::string stale_reason(const PixelDiff& d) {
    if (!d.same_size) return "another size: stale, or undecodable";
    if (d.max_level > MAX_LEVELS)
        return "a pixel " + std::to_string(d.max_level) + " levels apart: stale";
    if (d.changed * 1000000 > MAX_CHANGED_PER_MILLION * std::max(d.pixels, 1L))
        return std::to_string(d.changed) + " pixels changed: stale";
    return "";
}

}  // namespace

TEST_CASE("figures: committed PNGs of the deterministic chapters are up to date") {
    const std::string dir = "/tmp/transformer-figures-" + std::to_string(::getpid());
    std::filesystem::create_directories(dir);
    const std::string path = testutil::float_path();
    const bool reference = path == testutil::REFERENCE_FLOAT_PATH;
    if (!reference)
        MESSAGE("float path " << path << ", not " << testutil::REFERENCE_FLOAT_PATH
                              << " where figures/ was drawn: figures compared pixel by pixel, "
                              << "within " << MAX_LEVELS << " levels and "
                              << MAX_CHANGED_PER_MILLION << " changed pixels per million");
    struct Case {
        const char* program;
        const char* extra;  // flags that skip work the figure does not need
    };
    for (const Case& c : {Case{"1-self-attention", ""}, Case{"2-scaling", ""},
                          Case{"4-positional-encoding", ""}, Case{"5-blocks", "--no-decoder"}}) {
        INFO(c.program);
        auto r = testutil::run(c.program, std::string("--figure-dir ") + dir + " " + c.extra);
        REQUIRE(r.exit_code == 0);
        std::string name = std::string(c.program) + ".png";
        std::string fresh = testutil::read_file_abs(dir + "/" + name);
        std::string committed = testutil::read_file("figures/" + name);
        if (reference) {
            CHECK_MESSAGE(fresh == committed,
                          "figures/" << name << " is stale: run `make` and commit it");
            continue;
        }
        const PixelDiff d = pixel_diff(fresh, committed);
        MESSAGE(name << ": " << d.changed << " of " << d.pixels << " pixels differ, by at most "
                     << d.max_level << " levels");
        const std::string why = stale_reason(d);
        CHECK_MESSAGE(why.empty(), "figures/" << name << ": " << why);
    }
    std::filesystem::remove_all(dir);
}

TEST_CASE("figures: the comparison on another float path still catches a stale figure") {
    // The committed figure 4 against copies of itself changed as a stale figure changes:
    // one label character redrawn (a 9 x 12 patch, 40 levels), a curve moved by one pixel,
    // every pixel one level lighter; and against what another float path changes (a few dozen
    // edge pixels by one level), which must pass.
    const std::string png = testutil::read_file("figures/4-positional-encoding.png");
    const testutil::Decoded committed = testutil::decode_png(png.data(), png.size());
    REQUIRE(committed.w > 100);
    REQUIRE(committed.h > 100);
    auto changed = [&](auto&& edit) {
        testutil::Decoded copy = committed;
        edit(copy);
        return stale_reason(pixel_diff(copy, committed));
    };
    auto lighter = [](uint8_t& v, int by) { v = uint8_t(v + by <= 255 ? v + by : v - by); };
    CHECK(changed([](testutil::Decoded&) {}).empty());
    CHECK(changed([&](testutil::Decoded& c) {
              for (int y = 40; y < 52; y++)
                  for (int x = 60; x < 69; x++) lighter(c.rgb[(size_t(y) * c.w + x) * 3], 40);
          }).find("levels apart") != std::string::npos);
    CHECK(changed([&](testutil::Decoded& c) {  // every row shifted one pixel right
              for (int y = 0; y < c.h; y++)
                  for (int x = c.w - 1; x > 0; x--)
                      for (int k = 0; k < 3; k++)
                          c.rgb[(size_t(y) * c.w + x) * 3 + k] =
                              c.rgb[(size_t(y) * c.w + x - 1) * 3 + k];
          }) != "");
    CHECK(changed([&](testutil::Decoded& c) {
              for (uint8_t& v : c.rgb) lighter(v, 1);
          }).find("pixels changed") != std::string::npos);
    CHECK(changed([&](testutil::Decoded& c) {  // 40 edge pixels, one level: another float path
              for (int k = 0; k < 40; k++) lighter(c.rgb[(size_t(100 + k) * c.w + 200) * 3], 1);
          }).empty());
    testutil::Decoded cropped = committed;
    cropped.h -= 1;
    cropped.rgb.resize(size_t(cropped.w) * cropped.h * 3);
    CHECK(stale_reason(pixel_diff(cropped, committed)).find("another size") != std::string::npos);
}
