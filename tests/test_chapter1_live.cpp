// Chapter 1's --live (chapters/1-self-attention/live.h), the article's widget in the terminal:
// its numbers are the chapter's tensors, the key map key by key, the screens of the line mode,
// every window size, the heatmap's colours, and sessions on a pseudo-terminal through script(1).
#include "chapters/1-self-attention/attention.h"
#include "chapters/1-self-attention/live.h"
#include "common/plot/plot.h"
#include "common/program/format.h"
#include "common/program/terminal.h"
#include "tests/util.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

namespace {

namespace fs = std::filesystem;

// The article's four tokens and weights (chapters/1-self-attention/main.cpp).
live::Model article_model() {
    Tensor X = Tensor::from({{0, 0, 1, 0}, {1, 1, 1, 0}, {1, 1, 0, 1}, {0, 0, 0, 1}});
    Tensor W_Q = Tensor::from({{0, -1, -1, -1}, {-1, 1, 1, -1}, {0, -1, 1, 1}, {0, -1, -1, 0}});
    Tensor W_K = Tensor::from({{0, -1, 0, 1}, {1, -1, 0, 1}, {1, 1, -1, -1}, {0, 1, 1, 0}});
    Tensor W_V = Tensor::from({{1, 0, 2, 0}, {0, 2, 0, 1}, {2, 1, 0, 0}, {0, 0, 1, 2}});
    return live::Model(matmul(X, W_Q), matmul(X, W_K), matmul(X, W_V));
}

bool same_bits(const Tensor& a, const Tensor& b) {
    return a.shape() == b.shape() &&
           std::memcmp(a.data(), b.data(), size_t(a.numel()) * sizeof(float)) == 0;
}

// Frames of the line mode: the plain screens, separated by a blank line and a new title line.
std::vector<std::string> plain_frames(const std::string& out) {
    std::vector<std::string> frames;
    const std::string title = " 1절 Self-Attention";
    for (size_t k = out.find(title); k != std::string::npos;) {
        size_t next = out.find("\n" + title, k + 1);
        frames.push_back(out.substr(k, next == std::string::npos ? next : next + 1 - k));
        k = next == std::string::npos ? next : next + 1;
    }
    return frames;
}

// A fresh folder under /tmp, removed again when it goes out of scope (also after a failed
// REQUIRE).
struct TempDir {
    std::string path;
    explicit TempDir(const std::string& name) {
        static int counter = 0;
        path = "/tmp/transformer-live-test-" + std::to_string(::getpid()) + "-" +
               std::to_string(counter++) + "-" + name;
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~TempDir() { fs::remove_all(path); }
};

size_t count(const std::string& s, const std::string& what) {
    size_t n = 0;
    for (size_t k = s.find(what); k != std::string::npos; k = s.find(what, k + 1))
        n++;
    return n;
}

// Runs a bash script that drives the program on a pty: $OUT is the pty's output, $BIN the
// program (behind the Makefile's RUNNER: qemu for make cross-test), $DIR a scratch folder;
// `waitfor TEXT N` waits until TEXT has appeared N times in $OUT (keys go in only once the screen
// they are meant for is drawn). Returns the script's status.
int pty_script(const std::string& dir, const std::string& body) {
    std::ofstream(dir + "/drive.sh")
        << "OUT=" << dir << "/screen.out; BIN=" << testutil::quote(testutil::program_command(
                                                         "1-self-attention"))
        << "; DIR=" << dir << "\n"
        << "waitfor() { for i in $(seq 400); do [ \"$(grep -aoF -- \"$1\" \"$OUT\" 2>/dev/null | "
           "wc -l)\" -ge \"$2\" ] && return 0; sleep 0.05; done; return 1; }\n"
        << body << "\n";
    int status = std::system(("bash " + dir + "/drive.sh").c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

bool script_works() { return std::system("script -qec true /dev/null >/dev/null 2>&1") == 0; }

const std::string ENTER_SEQ = "\x1b[?1049h", LEAVE_SEQ = "\x1b[?1049l";

}  // namespace

TEST_CASE("chapter 1 --live: the widget's numbers are the chapter's own tensors") {
    live::Model m = article_model();
    REQUIRE(m.n() == 4);
    // Q @ K^T as torch 1.13 computes it from the article's tensors (the scores before / 2).
    const float QKT[4][4] = {{-3, 1, 4, 0}, {-2, -3, -1, 0}, {1, -2, -5, -2}, {0, 2, 0, -2}};
    const float INF = std::numeric_limits<float>::infinity();
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            CHECK(m.QKt.at({i, j}) == QKT[i][j]);
            CHECK(m.scores[0].at({i, j}) == QKT[i][j] / 2);
            // The causal mask: -inf above the diagonal before softmax, exactly 0 after it.
            CHECK(m.scores[1].at({i, j}) == (j > i ? -INF : QKT[i][j] / 2));
            if (j > i) CHECK(m.attn[1].at({i, j}) == 0.0f);
            if (j <= i) CHECK(m.attn[1].at({i, j}) > 0.0f);
        }
    // The scores shown are what softmax saw inside scaled_dot_product_attention, bit for bit,
    // and the weights and outputs are that function's.
    for (int c = 0; c < 2; c++) {
        CHECK(same_bits(softmax(m.scores[c], -1), m.attn[c]));
        auto [out, attn] =
            scaled_dot_product_attention(m.Q, m.K, m.V, c ? causal_mask(4) : Tensor());
        CHECK(same_bits(attn, m.attn[c]));
        CHECK(same_bits(out, m.out[c]));
    }
    // ... the very numbers of the printed block, without and with --mask causal.
    CHECK("어텐션 가중치:\n " + torch_str(m.attn[0]) + "\n출력:\n " + torch_str(m.out[0]) + "\n" ==
          testutil::read_file("tests/expected/1-self-attention.txt"));
    auto causal = testutil::run("1-self-attention", "--mask causal --no-figures");
    REQUIRE(causal.exit_code == 0);
    CHECK(causal.out ==
          "어텐션 가중치:\n " + torch_str(m.attn[1]) + "\n출력:\n " + torch_str(m.out[1]) + "\n");
}

TEST_CASE("chapter 1 --live: the key map, key by key") {
    using KK = term::KeyKind;
    using A = live::Action;
    live::Model m = article_model();
    live::Frame f = live::render(m, {}, 80, 24, live::Colors::None);
    auto act = [&](term::Key key) { return live::action_for(key, f, 4); };
    auto ch = [](char32_t c) { return term::Key{KK::Char, c}; };
    for (int j = 0; j < 4; j++)
        CHECK(act(ch(U'1' + char32_t(j))) == A{A::Select, j});
    CHECK(act(ch('5')) == A{});  // there are four tokens
    CHECK(act(ch('0')) == A{});
    CHECK(act({KK::Left}) == A{A::Prev});
    CHECK(act({KK::Up}) == A{A::Prev});
    CHECK(act({KK::Right}) == A{A::Next});
    CHECK(act({KK::Down}) == A{A::Next});
    CHECK(act(ch('h')) == A{A::Prev});
    CHECK(act(ch('l')) == A{A::Next});
    CHECK(act({KK::Home}) == A{A::Select, 0});
    CHECK(act({KK::End}) == A{A::Select, 3});
    CHECK(act(ch('m')) == A{A::Mask});
    CHECK(act(ch('M')) == A{A::Mask});
    CHECK(act(ch(U'ㅡ')) == A{A::Mask});  // m with the Korean keyboard layout on
    for (term::Key quit : {ch('q'), ch('Q'), ch(U'ㅂ'), term::Key{KK::Escape}, term::Key{KK::CtrlC},
                           term::Key{KK::CtrlD}})
        CHECK(act(quit) == A{A::Quit});
    for (term::Key nothing : {ch('x'), term::Key{KK::Space}, term::Key{KK::Enter},
                              term::Key{KK::PageUp}, term::Key{KK::Unknown}})
        CHECK(act(nothing) == A{});
    term::Key wheel{KK::Mouse};
    wheel.button = 64;
    CHECK(act(wheel) == A{A::Prev});
    wheel.button = 65;
    CHECK(act(wheel) == A{A::Next});
    // A click on a token selects it; its release, a right click or a click on nothing do not.
    const std::string& bar = f.lines[1];
    int col = term::display_width(bar.substr(0, bar.find("3번")));
    term::Key click{KK::Mouse};
    click.button = 0, click.press = true, click.x = col + 1, click.y = 2;
    CHECK(act(click) == A{A::Select, 2});
    click.press = false;
    CHECK(act(click) == A{});
    click.press = true, click.button = 2;
    CHECK(act(click) == A{});
    click.button = 0, click.x = 1, click.y = 1;  // the title
    CHECK(act(click) == A{});

    // Applying them: Prev and Next wrap around, Select outside the tokens changes nothing.
    live::View v;
    live::apply(v, {A::Prev}, 4);
    CHECK(v.query == 3);
    live::apply(v, {A::Next}, 4);
    CHECK(v.query == 0);
    live::apply(v, {A::Select, 2}, 4);
    CHECK(v.query == 2);
    live::apply(v, {A::Select, 7}, 4);
    CHECK(v.query == 2);
    live::apply(v, {A::Mask}, 4);
    CHECK(v.causal);
    live::apply(v, {A::Mask}, 4);
    CHECK_FALSE(v.causal);

    // The line mode's words.
    A a;
    for (const char* w : {"3", " 3 ", "3번", "3\t"}) {
        CHECK_MESSAGE(live::parse_line_key(w, 4, a), w);
        CHECK(a == A{A::Select, 2});
    }
    const std::pair<const char*, A::Kind> words[] = {
        {"left", A::Prev},   {"PREV", A::Prev}, {"up", A::Prev},   {"right", A::Next},
        {"next", A::Next},   {"down", A::Next}, {"m", A::Mask},    {"mask", A::Mask},
        {"마스크", A::Mask}, {"q", A::Quit},    {"Quit", A::Quit},
    };
    for (const auto& word : words) {
        const char* w = word.first;  // plain names: clang before 16 cannot capture a binding
        CHECK_MESSAGE(live::parse_line_key(w, 4, a), w);
        CHECK(a == A{word.second});
    }
    for (const char* w : {"", "  ", "5", "0", "5번", "click", "mm", "3 4"})
        CHECK_FALSE_MESSAGE(live::parse_line_key(w, 4, a), "'" << w << "'");
}

TEST_CASE("chapter 1 --live: the line mode prints token 3's screen without and with the mask") {
    // The reader picks token 3, then switches the mask on; each key prints the screen.
    auto r = testutil::run("1-self-attention", "--live", "3\nm\n");
    CHECK(r.exit_code == 0);
    CHECK(r.err == "");
    CHECK(r.out.find('\x1b') == std::string::npos);  // plain text: no escape codes
    CHECK(r.out == testutil::read_file("tests/expected/1-self-attention-live.txt"));
    std::vector<std::string> frames = plain_frames(r.out);
    REQUIRE(frames.size() == 3);
    std::stringstream ss(r.out);
    for (std::string line; std::getline(ss, line);)
        CHECK(term::display_width(line) <= 80);

    // Token 3 without the mask: the article's row 3 (torch: 0.6684 0.1491 0.0333 0.1491),
    // every step of --explain 3, and V's rows to check the sum by hand.
    const std::string& plain = frames[1];
    CHECK(plain.find(" 쿼리 토큰:  1번   2번  [3번]  4번      [ ] causal 마스크 (m)\n") !=
          std::string::npos);
    CHECK(plain.find(" 3번 토큰의 쿼리 q_3 = x_3 W_Q = [-1., -1., -1., -2.]    √d_k = √4 = "
                     "2.0000\n") != std::string::npos);
    CHECK(plain.find("   1   [ 1.,  1., -1., -1.]    1.0000    0.5000      0.6684   [2., 1., 0., "
                     "0.]\n") != std::string::npos);
    CHECK(plain.find("   4   [ 0.,  1.,  1.,  0.]   -2.0000   -1.0000      0.1491   [0., 0., 1., "
                     "2.]\n") != std::string::npos);
    CHECK(plain.find(" 출력 o_3 = 0.6684 × V_1 + 0.1491 × V_2 + 0.0333 × V_3 + 0.1491 × V_4\n"
                     "          = [1.8176, 1.1824, 0.5473, 0.5473]\n") != std::string::npos);
    CHECK(plain.find("  > 3번  0.6684  0.1491  0.0333  0.1491\n") != std::string::npos);
    CHECK(plain.find("-inf") == std::string::npos);

    // With the mask: key 4's score is -inf and its weight exactly 0 (torch: 0.7856 0.1753
    // 0.0391 0.0000, output [2.1362, 1.3897, 0.4679, 0.2926]); the grid's upper triangle is 0.
    const std::string& masked = frames[2];
    CHECK(masked.find("[x] causal 마스크 (m)\n") != std::string::npos);
    CHECK(masked.find("   3   [ 1., -1.,  1.,  2.]   -5.0000   -2.5000      0.0391   [1., 2., 3., "
                      "3.]\n") != std::string::npos);
    CHECK(masked.find("   4   [ 0.,  1.,  1.,  0.]   -2.0000      -inf           0   [0., 0., 1., "
                      "2.]\n") != std::string::npos);
    CHECK(masked.find(" 출력 o_3 = 0.7856 × V_1 + 0.1753 × V_2 + 0.0391 × V_3 + 0 × V_4\n"
                      "          = [2.1362, 1.3897, 0.4679, 0.2926]\n") != std::string::npos);
    CHECK(masked.find("    1번  1.0000     0       0       0\n") != std::string::npos);
    CHECK(masked.find("    2번  0.6225  0.3775     0       0\n") != std::string::npos);
    CHECK(masked.find("  > 3번  0.7856  0.1753  0.0391     0\n") != std::string::npos);
    CHECK(masked.find("    4번  0.1966  0.5344  0.1966  0.0723\n") != std::string::npos);
    CHECK(masked.find(" causal 마스크: j > i인 점수는 -inf, softmax 뒤 그 가중치는 정확히 0\n") !=
          std::string::npos);

    // --explain 3 --mask causal start there; blank lines are skipped; the end of input quits.
    r = testutil::run("1-self-attention", "--live --explain 3 --mask causal", "\n  \n");
    CHECK(r.exit_code == 0);
    CHECK(r.out == masked);
    // q stops reading: what follows it is never looked at.
    r = testutil::run("1-self-attention", "--live", "right\nq\nbogus\n");
    CHECK(r.exit_code == 0);
    CHECK(plain_frames(r.out).size() == 2);
    CHECK(r.err == "");

    // An unknown line stops the script with exit 2, one line naming it (control bytes escaped,
    // and a NUL too: printf's %s cut the line there, 'ab' for "ab\0cd").
    r = testutil::run("1-self-attention", "--live", "3\njump\x1b[31m\nm\n");
    CHECK(r.exit_code == 2);
    CHECK(r.err ==
          "1-self-attention: error: stdin line 2: unknown key 'jump\\x1b[31m'; use one per line: "
          "1-4, left, right, m, q (see --help)\n");
    CHECK(plain_frames(r.out).size() == 2);  // the screens before it were printed
    r = testutil::run("1-self-attention", "--live", std::string("ab\0cd\n", 6));
    CHECK(r.exit_code == 2);
    CHECK(r.err.rfind("1-self-attention: error: stdin line 1: unknown key 'ab\\x00cd';", 0) == 0);
    r = testutil::run("1-self-attention", "--plain");
    CHECK(r.exit_code == 2);
    CHECK(r.err ==
          "1-self-attention: error: --plain only changes --live: add --live, or drop --plain\n");
    r = testutil::run("1-self-attention", "--help");
    CHECK(r.out.find("--live") != std::string::npos);
    CHECK(r.out.find("one key per line") != std::string::npos);
}

TEST_CASE("chapter 1 --live: input without newlines is refused after 4096 bytes, not held") {
    // </dev/zero never ends a line: std::getline would read it into memory until the machine
    // ran out. A line is cut after 4096 bytes (no key is that long) and
    // refused like any unknown line; its length is said as what was read.
    const std::string err = "/tmp/transformer-test-live-zero-" + std::to_string(::getpid());
    const std::string cmd = "timeout -k 5 60 " + testutil::program_command("1-self-attention") +
                            " --live </dev/zero >/dev/null 2>" + err;
    const int status = std::system(cmd.c_str());
    CHECK((WIFEXITED(status) ? WEXITSTATUS(status) : -1) == 2);
    const std::string text = testutil::read_file_abs(err);
    std::remove(err.c_str());
    std::string nuls;  // the first 40 bytes, quoted
    for (int i = 0; i < 40; i++)
        nuls += "\\x00";
    CHECK(text == "1-self-attention: error: stdin line 1: unknown key '" + nuls +
                      "'...(over 4096 bytes); use one per line: 1-4, left, right, m, q (see "
                      "--help)\n");
    // 4096 bytes is still a line of its own, said with its length.
    std::string long_line(4096, 'x');
    long_line += '\n';  // appended: GCC 12 warns (-Warray-bounds, a false positive) on a + here
    auto r = testutil::run("1-self-attention", "--live", long_line);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("'...(4096 bytes); use one per line") != std::string::npos);
}

TEST_CASE(
    "chapter 1 --live: every window size: exact widths, the grid beside or below, or "
    "a window too small") {
    live::Model m = article_model();
    for (int query = 0; query < 4; query++)
        for (bool causal : {false, true})
            for (auto size :
                 {std::pair{78, 21}, {80, 24}, {100, 30}, {120, 24}, {121, 24}, {200, 60}}) {
                const int W = size.first, H = size.second;  // clang before 16: no binding capture
                live::View v{query, causal};
                live::Frame f = live::render(m, v, W, H, live::Colors::Palette256);
                INFO("query " << query << std::string(causal ? " causal " : " ") << W << "x" << H);
                REQUIRE(int(f.lines.size()) == H);
                for (const std::string& line : f.lines)
                    CHECK(term::display_width(line) == W);
                CHECK(f.lines[0].find("창이 작아요") == std::string::npos);
                CHECK(f.lines.back().find("q: 끝내기") != std::string::npos);
                // The grid stands beside the steps (its title on the q_i row) when it fits.
                const bool wide = W >= 121;
                CHECK((f.lines[3].find("어텐션 가중치") != std::string::npos) == wide);
                // Every click area is on the screen; a click inside selects what it shows.
                for (const live::Hit& h : f.hits) {
                    CHECK(h.row >= 0);
                    CHECK(h.row < H);
                    CHECK(h.col0 < h.col1);
                    CHECK(h.col1 <= W);
                }
                for (int j = 0; j < 4; j++) {
                    const std::string& bar = f.lines[1];
                    int col =
                        term::display_width(bar.substr(0, bar.find(std::to_string(j + 1) + "번")));
                    CHECK(live::hit_test(f, col + 1, 2) == live::Action{live::Action::Select, j});
                    // The grid's row of token j, wherever the grid stands.
                    int row = -1;
                    for (int r = 0; r < H; r++)
                        if (f.lines[size_t(r)].find(std::to_string(j + 1) + "번  ") !=
                                std::string::npos &&
                            r > 3)
                            row = r;
                    REQUIRE(row > 0);
                    int label = term::display_width(f.lines[size_t(row)].substr(
                        0, f.lines[size_t(row)].rfind(std::to_string(j + 1) + "번")));
                    CHECK(live::hit_test(f, label + 8, row + 1) ==
                          live::Action{live::Action::Select, j});
                }
                const std::string& bar = f.lines[1];
                int toggle = term::display_width(bar.substr(0, bar.find("causal")));
                CHECK(live::hit_test(f, toggle + 1, 2) == live::Action{live::Action::Mask});
                // Styles stay inside the screen and never overlap on a row.
                for (const term::Span& a : f.spans) {
                    CHECK(a.col1 <= W);
                    for (const term::Span& b : f.spans)
                        if (&a != &b && a.row == b.row)
                            CHECK((a.col1 <= b.col0 || b.col1 <= a.col0));
                }
            }
    // Too small: one line saying so, in as many words as fit, and how to quit.
    for (auto size : {std::pair{77, 24}, {80, 20}, {40, 10}, {10, 3}, {1, 1}}) {
        const int W = size.first, H = size.second;
        live::Frame f = live::render(m, {}, W, H, live::Colors::Palette256);
        INFO(W << "x" << H);
        REQUIRE(int(f.lines.size()) == H);
        for (const std::string& line : f.lines)
            CHECK(term::display_width(line) == W);
        CHECK(f.lines[0].find("q") != std::string::npos);
        CHECK(f.hits.empty());
    }
    CHECK(live::render(m, {}, 77, 24, live::Colors::None).lines[0] ==
          term::fit(" 창이 작아요 (78x21 이상, q 끝내기)", 77));
    CHECK(live::render(m, {}, 30, 24, live::Colors::None).lines[0] ==
          term::fit(" 창이 작아요, q 끝내기", 30));
    // The plain screens (height 0) never come out narrower than the layout.
    live::Frame plain = live::render(m, {}, 40, 0, live::Colors::None);
    for (const std::string& line : plain.lines)
        CHECK(term::display_width(line) == 78);
}

TEST_CASE("chapter 1 --live: the heatmap is painted with the figure's colour map") {
    live::Model m = article_model();
    const plot::Colormap blues("Blues");
    auto cell_span = [](const live::Frame& f, int row, int col) -> std::string {
        for (const term::Span& s : f.spans)
            if (s.row == row && s.col0 <= col && col < s.col1) return s.sgr;
        return "";
    };
    // The grid's rows in the stacked layout: the heat title is row 12, its header 13.
    for (bool causal : {false, true}) {
        live::Frame f = live::render(m, {0, causal}, 80, 24, live::Colors::TrueColor);
        REQUIRE(f.lines[12].find("어텐션 가중치") != std::string::npos);
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++) {
                float w = m.attn[causal].at({i, j});
                plot::Color c = blues(w);
                std::string want = std::string(w > 0.5f ? "38;2;255;255;255" : "38;2;0;0;0") +
                                   ";48;2;" + std::to_string(std::lround(c.r * 255)) + ";" +
                                   std::to_string(std::lround(c.g * 255)) + ";" +
                                   std::to_string(std::lround(c.b * 255));
                CHECK(cell_span(f, 14 + i, 7 + 8 * j + 3) == want);
            }
    }
    // The 256-colour palette: the nearest cube or grey entry. Blues(1.0) = #08306b -> 23
    // (0, 95, 95); Blues(0) = #f7fbff -> 231 (white); row 1 with the mask is 1, 0, 0, 0.
    live::Frame f = live::render(m, {0, true}, 80, 24, live::Colors::Palette256);
    CHECK(cell_span(f, 14, 10) == "38;5;231;48;5;23");
    CHECK(cell_span(f, 14, 18) == "38;5;16;48;5;231");
    // Without colours the grid has no cell spans; the chosen token and grid row stay marked.
    f = live::render(m, {2, false}, 80, 24, live::Colors::None);
    CHECK(cell_span(f, 14, 10) == "");
    int col = term::display_width(f.lines[1].substr(0, f.lines[1].find("[3번]")));
    CHECK(cell_span(f, 1, col) == "7");
    CHECK(cell_span(f, 16, 2) == "1");
    ::setenv("NO_COLOR", "1", 1);
    CHECK(live::colors_from_env() == live::Colors::None);
    ::unsetenv("NO_COLOR");
    ::setenv("COLORTERM", "truecolor", 1);
    CHECK(live::colors_from_env() == live::Colors::TrueColor);
    ::setenv("COLORTERM", "", 1);
    CHECK(live::colors_from_env() == live::Colors::Palette256);
    ::unsetenv("COLORTERM");
}

TEST_CASE("chapter 1 --live in a pseudo-terminal: click token 3, toggle the mask, quit") {
    if (!script_works()) {
        MESSAGE("skipped: script(1) cannot open a pseudo-terminal here");
        return;
    }
    // Where token 3 is on the first 80x24 screen.
    live::Frame f = live::render(article_model(), {}, 80, 24, live::Colors::Palette256);
    int x = 0, y = 0;
    for (const live::Hit& h : f.hits)
        if (h.action == live::Action{live::Action::Select, 2} && h.row == 1)
            x = h.col0 + 2, y = h.row + 1;
    REQUIRE(x > 0);
    const std::string press = "\\033[<0;" + std::to_string(x) + ";" + std::to_string(y);
    TempDir tmp("click");
    const std::string& dir = tmp.path;
    int rc =
        pty_script(dir, "(waitfor '" + ENTER_SEQ.substr(1) + "' 1; printf '" + press + "M" + press +
                            "m'; waitfor '[3번]' 1; printf m; "
                            "waitfor '[x] causal' 1; printf q) | TERM=xterm timeout 30 "
                            "script -qec \"stty rows 24 cols 80; $BIN --live; stty -a\" "
                            "/dev/null >$OUT 2>&1");
    CHECK(rc == 0);
    std::string screen = testutil::read_file_abs(dir + "/screen.out");
    REQUIRE(count(screen, ENTER_SEQ) == 1);
    REQUIRE(count(screen, LEAVE_SEQ) == 1);
    size_t enter = screen.find(ENTER_SEQ), leave = screen.find(LEAVE_SEQ);
    CHECK(enter < leave);
    std::string shown = screen.substr(enter, leave - enter);
    CHECK(shown.find("\x1b[?1000h\x1b[?1006h") != std::string::npos);  // clicks reported
    // The click chose token 3 (the mask still off), then m switched the mask on.
    size_t clicked = shown.find("[3번]");
    REQUIRE(clicked != std::string::npos);
    CHECK(shown.find("[ ] causal", clicked) < shown.find("[x] causal", clicked));
    // The last screen drawn: token 3 with the mask, key 4's score -inf, its weight 0.
    std::string last = shown.substr(shown.rfind("\x1b[2;1H"));
    CHECK(last.find("[3번]") != std::string::npos);
    CHECK(last.find("[x] causal") != std::string::npos);
    CHECK(last.find("-2.0000      -inf           0   [0., 0., 1., 2.]") != std::string::npos);
    CHECK(last.find(" = [2.1362, 1.3897, 0.4679, 0.2926]") != std::string::npos);
    // After q the terminal is as it was: nothing but stty's report follows, echo and canonical
    // input are back on.
    std::string after = screen.substr(leave + LEAVE_SEQ.size());
    CHECK(after.find('\x1b') == std::string::npos);
    CHECK(after.find(" icanon ") != std::string::npos);
    CHECK(after.find(" echo ") != std::string::npos);
}

TEST_CASE(
    "chapter 1 --live in a pseudo-terminal: every way out restores the screen; Ctrl-Z and "
    "fg; a small window; TERM=dumb") {
    if (!script_works()) {
        MESSAGE("skipped: script(1) cannot open a pseudo-terminal here");
        return;
    }
    // Esc, Ctrl-D, q typed with the Korean layout, Ctrl-C and SIGTERM: the alternate screen is
    // left and the terminal's modes are back (stty runs after the program, in the same pty).
    struct Way {
        const char* name;
        std::string keys;
        int status;  // the program's exit status as the shell reports it
    };
    const Way ways[] = {{"Esc", "printf '\\033'", 0},
                        {"Ctrl-D", "printf '\\004'", 0},
                        {"ㅂ", "printf 'ㅂ'", 0},
                        {"Ctrl-C", "printf '\\003'", 128 + SIGINT},
                        {"SIGTERM", "kill -TERM $(cat $DIR/pid)", 128 + SIGTERM}};
    for (const Way& way : ways) {
        INFO("way out: " << way.name);
        TempDir tmp("exit");
        const std::string& dir = tmp.path;
        int rc = pty_script(
            dir, "(waitfor '" + ENTER_SEQ.substr(1) + "' 1; waitfor '끝내기' 1; " + way.keys +
                     "; waitfor 'icanon' 1) | TERM=xterm timeout 30 script -qec \"stty rows 24 "
                     "cols 80; trap true INT; sh -c 'echo \\$\\$ >$DIR/pid; exec \\\"\\$0\\\" "
                     "\\\"\\$@\\\" --live' $BIN; "
                     "echo status \\$?; stty -a\" /dev/null >$OUT 2>&1");
        CHECK(rc == 0);
        std::string screen = testutil::read_file_abs(dir + "/screen.out");
        CHECK(count(screen, ENTER_SEQ) == 1);
        CHECK(count(screen, LEAVE_SEQ) == 1);
        size_t leave = screen.find(LEAVE_SEQ);
        REQUIRE(leave != std::string::npos);
        std::string after = screen.substr(leave + LEAVE_SEQ.size());
        CHECK(after.find("status " + std::to_string(way.status)) != std::string::npos);
        CHECK(after.find(" icanon ") != std::string::npos);
        CHECK(after.find(" echo ") != std::string::npos);
    }

    // Ctrl-Z in an interactive shell: the screen is restored while stopped; fg brings the
    // widget back, redrawn and taking keys again (m, then q).
    TempDir stop("stop");
    std::string dir = stop.path;
    int rc = pty_script(
        dir,
        "(waitfor 'READY>' 1; printf '%s --live\\r' \"$BIN\"; waitfor '" + ENTER_SEQ.substr(1) +
            "' 1; waitfor '끝내기' 1; printf '\\032'; waitfor '" + LEAVE_SEQ.substr(1) +
            "' 1; waitfor 'READY>' 2; printf 'fg\\r'; waitfor '" + ENTER_SEQ.substr(1) +
            "' 2; waitfor '끝내기' 2; printf m; waitfor '[x] causal' 1; printf q; waitfor '" +
            LEAVE_SEQ.substr(1) +
            "' 2; printf 'exit\\r') | TERM=xterm timeout 60 script -qec \"stty rows 24 cols 80; "
            "env PS1=READY\\> bash --norc --noprofile -i\" /dev/null >$OUT 2>&1");
    CHECK(rc == 0);
    std::string screen = testutil::read_file_abs(dir + "/screen.out");
    REQUIRE(count(screen, ENTER_SEQ) == 2);
    REQUIRE(count(screen, LEAVE_SEQ) == 2);
    size_t enter1 = screen.find(ENTER_SEQ), leave1 = screen.find(LEAVE_SEQ);
    size_t enter2 = screen.find(ENTER_SEQ, leave1), leave2 = screen.find(LEAVE_SEQ, enter2);
    CHECK(enter1 < leave1);
    CHECK(leave1 < enter2);
    CHECK(enter2 < leave2);
    std::string again = screen.substr(enter2, leave2 - enter2);
    CHECK(again.find("쿼리 토큰:") != std::string::npos);  // redrawn after fg
    CHECK(again.find("[x] causal") != std::string::npos);  // and m worked: raw mode is back

    // A window too small says so; grown to 80x24 (stty in the same pty, so the kernel sends
    // SIGWINCH), the widget clears the screen and draws itself.
    TempDir resize("resize");
    dir = resize.path;
    rc = pty_script(dir,
                    "(waitfor '창이 작아요' 1; touch $DIR/go; waitfor '끝내기' 2; printf q) | "
                    "TERM=xterm timeout 30 script -qec \"stty rows 20 cols 60; (while [ ! -e "
                    "$DIR/go ]; do sleep 0.05; done; stty rows 24 cols 80 </dev/tty) & exec "
                    "$BIN --live\" /dev/null >$OUT 2>&1");
    CHECK(rc == 0);
    screen = testutil::read_file_abs(dir + "/screen.out");
    size_t small = screen.find("창이 작아요 (78x21 이상, q 끝내기)");
    REQUIRE(small != std::string::npos);
    size_t redrawn = screen.find("\x1b[2J", small);
    REQUIRE(redrawn != std::string::npos);
    CHECK(screen.find("쿼리 토큰:", redrawn) != std::string::npos);
    CHECK(screen.find("\x1b[24;1H", redrawn) != std::string::npos);  // all 24 rows
    CHECK(count(screen, LEAVE_SEQ) == 1);

    // TERM=dumb on a terminal gets the line mode: plain screens, no escape codes at all.
    TempDir dumb_dir("dumb");
    dir = dumb_dir.path;
    rc = pty_script(dir,
                    "printf '3\\nm\\nq\\n' | TERM=dumb timeout 30 script -qec \"$BIN "
                    "--live\" /dev/null >$OUT 2>&1");
    CHECK(rc == 0);
    std::string dumb = testutil::read_file_abs(dir + "/screen.out");
    CHECK(dumb.find('\x1b') == std::string::npos);
    CHECK(dumb.find("  > 3번  0.7856  0.1753  0.0391     0") != std::string::npos);
}
