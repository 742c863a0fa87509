// chapters/flashcards (the program and its logic) and common/program/terminal: the deck, the
// Leitner schedule, the progress file, the screen layout, and a scripted session through a pipe.
#include "chapters/flashcards/deck.h"
#include "chapters/flashcards/progress.h"
#include "chapters/flashcards/schedule.h"
#include "chapters/flashcards/screen.h"
#include "chapters/flashcards/session.h"
#include "common/program/terminal.h"
#include "tests/util.h"

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

namespace fs = std::filesystem;

const std::string DECK = std::string(PROJECT_ROOT) + "/chapters/flashcards/deck.md";

// A fresh folder under /tmp for one test case.
std::string temp_dir(const std::string& name) {
    static int counter = 0;
    std::string dir = "/tmp/transformer-cards-test-" + std::to_string(::getpid()) + "-" +
                      std::to_string(counter++) + "-" + name;
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir;
}

void write(const std::string& path, const std::string& text) {
    std::ofstream f(path, std::ios::binary);
    f << text;
}

std::string slurp(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

// The message of the cards::Error that fn throws ("" if none).
template <class Fn>
std::string error_of(Fn fn) {
    try {
        fn();
    } catch (const cards::Error& e) {
        return e.what();
    }
    return "";
}

std::string card_text(int n, const std::string& q = "") {
    return "## " + std::to_string(n) + ". " + (q.empty() ? "질문 " + std::to_string(n) : q) +
           "\n\n답 " + std::to_string(n) + "\n실습: `make ch1`\n\n";
}

cards::Deck small_deck(int n) {
    std::string text = "# 연습 덱\n\n";
    for (int i = 1; i <= n; i++) text += card_text(i);
    return cards::parse_deck(text, "small.md");
}

std::string run_args(const std::string& progress) {
    return "--deck " + testutil::quote(DECK) + " --progress " + testutil::quote(progress);
}

}  // namespace

TEST_CASE(
    "flashcards: the deck parses to 20 cards, each with a question, an answer and a make target") {
    cards::Deck deck = cards::load_deck(DECK);
    REQUIRE(deck.cards.size() == 20);
    for (size_t i = 0; i < deck.cards.size(); i++) {
        const cards::Card& c = deck.cards[i];
        INFO("card " << c.number << " (line " << c.line << ")");
        CHECK(c.number == int(i) + 1);
        CHECK(!c.question.empty());
        CHECK(!c.answer.empty());
        CHECK(c.answer.find("실습:") == std::string::npos);  // the demo line is split off
        CHECK(term::valid_utf8(c.answer));
        // Every card says where the project demonstrates it, and names a chapter that exists
        // in the plan (ch1 ... ch7).
        size_t k = c.demo.find("make ch");
        REQUIRE(k != std::string::npos);
        char ch = c.demo[k + 7];
        CHECK(ch >= '1');
        CHECK(ch <= '7');
    }
    // The topics the issue lists are all there.
    std::string all;
    for (const cards::Card& c : deck.cards) all += c.question + "\n" + c.answer + "\n";
    for (const char* topic : {"병렬", "고유성", "유계성", "연속성", "sqrt(d_k)", "W_Q", "Pre-LN",
                              "Post-LN", "teacher forcing", "N2M", "N21", "N2N", "퓨전 커널",
                              "1,048,576", "마스크", "FFN"})
        CHECK_MESSAGE(all.find(topic) != std::string::npos, "the deck never mentions " << topic);
}

TEST_CASE(
    "flashcards: every number a card's 실습 line says a chapter prints, that chapter prints") {
    // "`make ch4` (... 1.1920928955078125e-07과 0.5570540428161621을 출력)": the numbers in the
    // text after `make chN` (up to the next `make`) must appear in chapter N's output, so the deck
    // cannot drift from what the programs print. The card quotes chapter 4's digits as printed on
    // testutil::REFERENCE_FLOAT_PATH; on another float path (tests/util.h) the last digits of its
    // float32 differences move, so there each must be within 1e-6 of a number chapter 4 prints
    // (the tolerance its own test allows against the article). Every other chapter prints the
    // same digits on every path, and is matched exactly everywhere.
    const bool reference = testutil::float_path() == testutil::REFERENCE_FLOAT_PATH;
    auto printed_near = [&](const std::string& out, double value) {
        const std::regex any(R"([0-9]+\.[0-9]+(e[-+][0-9]+)?)");
        for (std::sregex_iterator it(out.begin(), out.end(), any), end; it != end; ++it)
            if (std::fabs(std::strtod(it->str().c_str(), nullptr) - value) <= 1e-6) return true;
        return false;
    };
    cards::Deck deck = cards::load_deck(DECK);
    const std::regex number(R"([0-9]+\.[0-9]+(e[-+][0-9]+)?|[0-9]{5,})");
    std::map<char, std::string> output;  // chapter digit -> its stdout
    auto chapter_output = [&](char n) -> const std::string& {
        if (!output.count(n)) {
            std::string name;
            for (const auto& e : fs::directory_iterator(std::string(PROJECT_ROOT) + "/chapters"))
                if (e.path().filename().string().rfind(std::string(1, n) + "-", 0) == 0)
                    name = e.path().filename().string();
            REQUIRE_MESSAGE(!name.empty(), "no chapters/" << n << "-* folder");
            // Chapter 3 draws no figure; the others leave figures/ alone with --no-figures.
            testutil::Run r = testutil::run(name, n == '3' ? "" : "--no-figures");
            REQUIRE(r.exit_code == 0);
            output[n] = r.out;
        }
        return output[n];
    };
    int checked = 0;
    for (const cards::Card& c : deck.cards) {
        for (size_t k = c.demo.find("make ch"); k != std::string::npos;) {
            char n = c.demo[k + 7];
            size_t next = c.demo.find("make ", k + 7);
            std::string said =
                c.demo.substr(k + 8, next == std::string::npos ? next : next - k - 8);
            if (n == '6' || n == '7') said.clear();  // timings and training: no fixed numbers
            for (std::sregex_iterator it(said.begin(), said.end(), number), end; it != end; ++it) {
                std::string value = it->str();
                const std::string& out = chapter_output(n);
                const bool found = out.find(value) != std::string::npos ||
                                   (!reference && n == '4' &&
                                    printed_near(out, std::strtod(value.c_str(), nullptr)));
                CHECK_MESSAGE(found, "card " << c.number << " says `make ch" << std::string(1, n)
                                             << "` prints " << value << ", and it does not");
                checked++;
            }
            k = next == std::string::npos ? next : c.demo.find("make ch", next);
        }
    }
    CHECK(checked >= 10);  // the deck quotes ch1, ch2, ch3 and ch4 values; the regex found them
}

TEST_CASE("flashcards: a malformed deck fails with one line naming the file and the line") {
    auto err = [](const std::string& text) {
        return error_of([&] { cards::parse_deck(text, "d.md"); });
    };
    struct Case {
        std::string text, starts;
    };
    const Case cases[] = {
        {"# intro\n" + card_text(1) + "## 3. 건너뛴 번호\n답\n실습: `make ch1`\n", "d.md:7:"},
        {"## 1. 질문\n\n답만 있고 실습 줄이 없다\n", "d.md:3:"},
        {"## 1. 질문\n실습: `make ch1`\n", "d.md:1:"},                   // no answer
        {"## 1.   \n답\n실습: `make ch1`\n", "d.md:1:"},                  // empty question
        {"##1. 질문\n답\n실습: `make ch1`\n", "d.md:1:"},                  // no space
        {"## 첫 카드\n답\n실습: `make ch1`\n", "d.md:1:"},                 // no number
        {card_text(1) + "# 제목\n", "d.md:6:"},                            // '#' inside a card
        {"## 1. 질문\n답 \x1b[31m\n실습: `make ch1`\n", "d.md:2:"},       // an escape byte
        {"## 1. 질문\n답 \xff\n실습: `make ch1`\n", "d.md:2:"},           // invalid UTF-8
        {"## 1. 질문\n답\n실습: 없음\n", "d.md:3:"},                       // no make target
        {"# 카드 없음\n\n설명뿐\n", "d.md:3:"},
        {"", "d.md:1:"},
    };
    for (const Case& c : cases) {
        std::string e = err(c.text);
        INFO("deck text: " << c.text);
        CHECK(e.rfind(c.starts, 0) == 0);
        CHECK(e.find('\n') == std::string::npos);
        CHECK(e.size() > c.starts.size() + 10);  // and says what is wrong
    }
    // Windows line endings and tabs are fine.
    cards::Deck d =
        cards::parse_deck("## 1. 질문\r\n> 이어서\r\n답\t끝\r\n실습: `make ch2`\r\n", "d.md");
    REQUIRE(d.cards.size() == 1);
    CHECK(d.cards[0].question == "질문\n이어서");
    CHECK(d.cards[0].answer == "답    끝");
    CHECK(d.cards[0].demo == "`make ch2`");
    // A deck saved with a byte-order mark (as some editors do) reads the same.
    CHECK(cards::parse_deck("\xEF\xBB\xBF" + card_text(1), "bom.md").cards.size() == 1);

    // The binary reports a broken deck the same way and exits non-zero.
    std::string dir = temp_dir("deck");
    write(dir + "/bad.md", "## 1. 질문\n답\n");
    testutil::Run r = testutil::run(
        "flashcards", "--deck " + dir + "/bad.md --progress " + dir + "/p.tsv", "q\n");
    CHECK(r.exit_code == 1);
    CHECK(r.err == "flashcards: " + dir +
                       "/bad.md:2: card 1 must end with a line '실습: `make chN` "
                       "...' saying where the project shows it\n");
    CHECK_FALSE(fs::exists(dir + "/p.tsv"));
    fs::remove_all(dir);
}

TEST_CASE("flashcards: Leitner rule: 어려움 -> box 1, 보통 -> box 2, 쉬움 one box up (3..5)") {
    using cards::Rating;
    CHECK(cards::next_box(0, Rating::Hard) == 1);
    CHECK(cards::next_box(0, Rating::Medium) == 2);
    CHECK(cards::next_box(0, Rating::Easy) == 3);
    CHECK(cards::next_box(1, Rating::Easy) == 3);
    CHECK(cards::next_box(3, Rating::Easy) == 4);
    CHECK(cards::next_box(4, Rating::Easy) == 5);
    CHECK(cards::next_box(5, Rating::Easy) == 5);
    CHECK(cards::next_box(5, Rating::Medium) == 2);
    CHECK(cards::next_box(5, Rating::Hard) == 1);
    // Box b comes back 2^(b-1) sessions after its rating: box 1 the very next session.
    CHECK(cards::interval(1) == 1);
    CHECK(cards::interval(2) == 2);
    CHECK(cards::interval(3) == 4);
    CHECK(cards::interval(5) == 16);

    cards::Progress p;
    cards::rate(p, 1, Rating::Easy, 1);    // box 3, due in session 5
    cards::rate(p, 2, Rating::Hard, 1);    // box 1, due in session 2
    cards::rate(p, 3, Rating::Medium, 1);  // box 2, due in session 3
    cards::rate(p, 5, Rating::Hard, 2);    // box 1, due in session 3
    CHECK(p.session == 2);
    CHECK(cards::due_in(p.cards[1]) == 5);
    CHECK(cards::due_in(p.cards[2]) == 2);
    CHECK(p.cards[1].reviews == 1);

    cards::Deck deck = small_deck(6);  // cards 4 and 6 are new
    // Session 2: only card 2 is due; then the new cards in deck order; then the rest, soonest due
    // first.
    cards::Plan plan = cards::plan_session(deck, p, 2);
    CHECK(plan.today == 3);
    CHECK(plan.order == std::vector<int>{1, 3, 5, 2, 4, 0});  // indices: cards 2, 4, 6 | 3, 5, 1
    // Session 3: cards 5 (box 1) before 3 (box 2) although 3 is the older rating; 2 is overdue.
    plan = cards::plan_session(deck, p, 3);
    CHECK(plan.today == 5);
    CHECK(plan.order ==
          std::vector<int>{1, 4, 2, 3, 5, 0});  // 2, 5 (box 1), 3 (box 2) | new 4, 6 | 1
    // Deterministic: the same input gives the same order.
    CHECK(cards::plan_session(deck, p, 3).order == plan.order);
    // Session 5: everything rated is due, lowest box first.
    plan = cards::plan_session(deck, p, 5);
    CHECK(plan.order == std::vector<int>{1, 4, 2, 0, 3, 5});

    cards::Counts c = cards::count(deck, p, 3);
    CHECK(c.seen == 4);
    CHECK(c.easy == 1);
    CHECK(c.medium == 1);
    CHECK(c.hard == 2);
    CHECK(c.box[0] == 2);
    CHECK(c.box[1] == 2);
    CHECK(c.due == 3);
}

TEST_CASE(
    "flashcards: a session rates, advances, and a second rating in one session replaces the "
    "first") {
    cards::Deck deck = small_deck(3);
    cards::Session s(deck, cards::Progress{});
    CHECK(s.session == 1);
    CHECK_FALSE(s.apply(cards::Action::Rate1));  // not before the answer shows
    CHECK(s.progress.cards.empty());
    s.apply(cards::Action::Flip);
    CHECK(s.flipped);
    CHECK(s.apply(cards::Action::Rate1));
    CHECK(s.progress.cards.at(1).box == 3);
    CHECK(s.card().number == 2);
    CHECK_FALSE(s.flipped);
    // Back to card 1 and 쉬움 again: still box 3, one review (not box 4, two reviews).
    s.apply(cards::Action::Prev);
    s.apply(cards::Action::Flip);
    s.apply(cards::Action::Rate1);
    CHECK(s.progress.cards.at(1).box == 3);
    CHECK(s.progress.cards.at(1).reviews == 1);
    CHECK(s.card().number == 2);
    s.apply(cards::Action::Flip);
    s.apply(cards::Action::Rate3);
    s.apply(cards::Action::Flip);
    s.apply(cards::Action::Rate2);
    CHECK(s.done_today());
    CHECK(s.progress.session == 1);
    CHECK(s.rated == 3);
}

TEST_CASE("flashcards: progress round trip through the text format and an atomic save") {
    cards::Progress p;
    cards::rate(p, 1, cards::Rating::Easy, 1);
    cards::rate(p, 1, cards::Rating::Easy, 2);
    cards::rate(p, 7, cards::Rating::Hard, 2);
    cards::rate(p, 20, cards::Rating::Medium, 3);
    cards::rate(p, 42, cards::Rating::Hard, 3);  // not in the deck: kept, not lost
    std::string text = cards::format_progress(p);
    cards::Progress q = cards::parse_progress(text, "p.tsv");
    CHECK(q.session == 3);
    REQUIRE(q.cards.size() == 4);
    CHECK(q.cards[1].box == 4);
    CHECK(q.cards[1].reviews == 2);
    CHECK(q.cards[1].rated_in == 2);
    CHECK(q.cards[7].last == cards::Rating::Hard);
    CHECK(q.cards[20].box == 2);
    CHECK(cards::format_progress(q) == text);

    std::string dir = temp_dir("roundtrip");
    std::string path = dir + "/deeper/folder/progress.tsv";  // parents are created
    cards::save_progress(path, p);
    CHECK(slurp(path) == text);
    CHECK(cards::format_progress(cards::load_progress(path)) == text);
    int files = 0;
    for ([[maybe_unused]] auto& e : fs::directory_iterator(dir + "/deeper/folder")) files++;
    CHECK(files == 1);  // no temporary file left behind
    // A missing file is an empty progress; the default path follows XDG_STATE_HOME.
    CHECK(cards::load_progress(dir + "/none.tsv").cards.empty());
    ::setenv("XDG_STATE_HOME", "/some/state", 1);
    CHECK(cards::default_progress_path() == "/some/state/transformer-cards/progress.tsv");
    ::unsetenv("XDG_STATE_HOME");
    fs::remove_all(dir);
}

TEST_CASE(
    "flashcards: saving keeps what others saved, the file's mode, a symlink, and a read-only "
    "file") {
    std::string dir = temp_dir("save"), path = dir + "/p.tsv";
    // Two runs at once: both read an empty file; A rates card 1, then B rates card 2.
    cards::Progress a, b;
    cards::rate(a, 1, cards::Rating::Easy, 1);
    cards::save_rating(path, a, 1);
    cards::rate(b, 2, cards::Rating::Hard, 1);
    cards::Progress now = cards::save_rating(path, b, 2);
    CHECK(now.cards.size() == 2);  // B's save kept A's card 1
    cards::Progress disk = cards::load_progress(path);
    CHECK(cards::format_progress(disk) == cards::format_progress(now));
    CHECK(disk.cards.at(1).last == cards::Rating::Easy);
    CHECK(disk.cards.at(2).last == cards::Rating::Hard);
    // A rates card 2 again later: the last rating of a card wins, card 1 stays.
    cards::rate(a, 2, cards::Rating::Medium, 1);
    cards::save_rating(path, a, 2);
    disk = cards::load_progress(path);
    CHECK(disk.cards.at(2).last == cards::Rating::Medium);
    CHECK(disk.cards.at(1).last == cards::Rating::Easy);

    // The file's mode is kept (a private 0600 file stays private).
    fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write);
    cards::save_progress(path, a);
    CHECK(fs::status(path).permissions() == (fs::perms::owner_read | fs::perms::owner_write));

    // A read-only file is refused, up front and at a save, and left as it was.
    fs::permissions(path, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
    std::string before = slurp(path);
    std::string err = error_of([&] { cards::check_writable(path); });
    CHECK(err == path + ": the progress file is read-only; make it writable (chmod u+w) or "
                        "choose another --progress FILE");
    CHECK(error_of([&] { cards::save_progress(path, b); }) == err);
    CHECK(slurp(path) == before);
    testutil::Run r = testutil::run("flashcards", run_args(path), "space\n1\n");
    CHECK(r.exit_code == 1);
    CHECK(r.err == "flashcards: " + err + "\n");
    CHECK(r.out.empty());
    CHECK(slurp(path) == before);
    fs::permissions(path, fs::perms::owner_write, fs::perm_options::add);

    // A symlink stays a symlink, even one whose target does not exist yet.
    fs::create_directories(dir + "/real");
    fs::create_symlink("real/target.tsv", dir + "/link.tsv");
    CHECK(error_of([&] { cards::check_writable(dir + "/link.tsv"); }).empty());
    cards::save_rating(dir + "/link.tsv", a, 1);
    CHECK(fs::is_symlink(dir + "/link.tsv"));
    CHECK(cards::load_progress(dir + "/real/target.tsv").cards.at(1).last == cards::Rating::Easy);
    fs::remove_all(dir);
}

TEST_CASE(
    "flashcards: the summary and the rated tags count this run's ratings, not another run's") {
    // Two runs on one progress file. B rates card 1 어려움; A, started meanwhile, rates card 1
    // 쉬움; B rates card 2 어려움, and its save brings A's rating of card 1 into B's session.
    // B's rated tag on card 1 and its closing summary still say what B did.
    std::string dir = temp_dir("two-runs"), path = dir + "/p.tsv";
    auto card1 = [&] {
        try {
            cards::Progress p = cards::load_progress(path);
            auto it = p.cards.find(1);
            return it == p.cards.end() ? 0 : int(it->second.last);
        } catch (const cards::Error&) {
            return 0;
        }
    };
    const std::string b_out = dir + "/b.out", b_err = dir + "/b.err";
    const std::string cmd = "timeout -k 5 60 " + testutil::program_command("flashcards") + " " +
                            run_args(path) + " >" + b_out + " 2>" + b_err;
    // B reads its keys from a pipe, written step by step. A write to B after it ended early
    // fails here instead of ending the test run with SIGPIPE; a REQUIRE that stops the test
    // closes the pipe (B ends at the end of its input) and restores SIGPIPE.
    struct B {
        FILE* f = nullptr;
        void (*old_pipe)(int) = std::signal(SIGPIPE, SIG_IGN);
        int close() {
            int status = f ? ::pclose(f) : -1;
            f = nullptr;
            return status;
        }
        ~B() {
            close();
            std::signal(SIGPIPE, old_pipe);
        }
    } b;
    b.f = ::popen(cmd.c_str(), "w");
    REQUIRE(b.f != nullptr);
    auto keys = [&](const char* text) {
        std::fputs(text, b.f);
        std::fflush(b.f);
    };
    keys("space\n3\n");
    // B has saved card 1 once the file holds it (the save is a rename: never half there).
    for (int i = 0; i < 6000 && card1() != int(cards::Rating::Hard); i++) ::usleep(10000);
    REQUIRE(card1() == int(cards::Rating::Hard));
    testutil::Run a = testutil::run("flashcards", run_args(path), "space\n1\nq\n", 60);
    CHECK(a.exit_code == 0);
    CHECK(a.out.find("1번 카드: 쉬움, 상자 3") != std::string::npos);
    REQUIRE(card1() == int(cards::Rating::Easy));
    keys("space\n3\nleft\nleft\nq\n");  // card 2, then back to card 1 and quit
    int status = b.close();
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    CHECK(slurp(b_err) == "");
    std::string out = slurp(b_out);
    CHECK(out.find("이번 세션(1)에 2장을 평가했어요: 쉬움 0, 보통 0, 어려움 2.") !=
          std::string::npos);
    CHECK(out.find("1번 카드  평가함: 어려움") != std::string::npos);
    CHECK(out.find("평가함: 쉬움") == std::string::npos);
    // The file keeps both runs' ratings: A's card 1 (the later one), B's card 2.
    cards::Progress p = cards::load_progress(path);
    CHECK(p.cards.at(1).last == cards::Rating::Easy);
    CHECK(p.cards.at(1).rated_in == 2);
    CHECK(p.cards.at(2).last == cards::Rating::Hard);
    fs::remove_all(dir);
}

TEST_CASE("flashcards: skipped cards come back, and previews do not count as today's cards") {
    cards::Deck deck = small_deck(3);
    cards::Session s(deck, cards::Progress{});
    s.apply(cards::Action::Next);  // skip card 1
    s.apply(cards::Action::Flip);
    s.apply(cards::Action::Rate1);
    CHECK(s.card().number == 3);
    s.apply(cards::Action::Flip);
    s.apply(cards::Action::Rate1);
    CHECK(s.card().number == 1);  // back to the skipped one
    CHECK_FALSE(s.done_today());

    // Card 3 rated 쉬움 in session 1 sits in box 3, due in session 5: in session 2 it is a
    // preview, so rating cards 1 and 2 finishes the day.
    cards::Progress p;
    cards::rate(p, 3, cards::Rating::Easy, 1);
    cards::Session t(deck, p);
    REQUIRE(t.plan.today == 2);
    for (int k = 0; k < 2; k++) {
        t.apply(cards::Action::Flip);
        t.apply(cards::Action::Rate2);
    }
    CHECK(t.done_today());
    CHECK(t.message.find("오늘 볼 카드를 모두 마쳤어요") != std::string::npos);
    CHECK(t.card().number == 3);  // and the preview is next, for browsing
}

TEST_CASE("flashcards: a corrupt progress file is reported as file:line and left byte-identical") {
    const std::string head =
        "# transformer-cards progress v1\nsession\t2\ncard\tbox\trating\tsession\treviews\n";
    struct Case {
        std::string text;
        int line;
    };
    const Case cases[] = {
        {"card,box\n1,2\n", 1},                                      // not our file
        {"# transformer-cards progress v1\nsesion\t2\n", 2},
        {"# transformer-cards progress v1\nsession\t2\ncard box\n", 3},
        {head + "1\t3\t쉬움\t1\t1\n2\t9\t쉬움\t1\t1\n", 5},          // box 9
        {head + "1\t3\t쉬움\t1\n", 4},                               // a field short
        {head + "1\t3\teasy\t1\t1\n", 4},                            // unknown rating
        {head + "1\t3\t어려움\t1\t1\n", 4},                          // 어려움 must be box 1
        {head + "1\t1\t어려움\t5\t1\n", 4},                          // rated after the last session
        {head + "1\t1\t어려움\t1\t1\n1\t2\t보통\t2\t1\n", 5},        // card twice
        {head + "1\t1\t어려움\t1\t0\n", 4},                          // zero reviews
        {head + "x\t1\t어려움\t1\t1\n", 4},
        {head + "1\t1\t어려\xec\t1\t1\n", 4},                        // cut UTF-8 (a torn write)
        {"# transformer-cards progress v1\n", 1},                    // ends early
        {"", 1},
    };
    std::string dir = temp_dir("corrupt");
    std::string path = dir + "/progress.tsv";
    for (const Case& c : cases) {
        INFO("file text: " << c.text);
        std::string prefix = path + ":" + std::to_string(c.line) + ":";
        std::string e = error_of([&] { cards::parse_progress(c.text, path); });
        CHECK(e.rfind(prefix, 0) == 0);
        CHECK(e.find('\n') == std::string::npos);
        CHECK(e.find("--reset") != std::string::npos);  // and says how to get out

        // The program: one line on stderr, non-zero exit, the file untouched even though the
        // script would rate a card.
        write(path, c.text);
        testutil::Run r = testutil::run("flashcards", run_args(path), "space\n1\nq\n");
        CHECK(r.exit_code == 1);
        CHECK(r.err == "flashcards: " + e + "\n");
        CHECK(slurp(path) == c.text);
        r = testutil::run("flashcards", run_args(path) + " --stats");
        CHECK(r.exit_code == 1);
        CHECK(slurp(path) == c.text);
    }
    // --reset is the explicit way out.
    write(path, "garbage\n");
    testutil::Run r = testutil::run("flashcards", run_args(path) + " --reset --stats");
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("본 카드 0/20") != std::string::npos);
    CHECK(cards::load_progress(path).cards.empty());

    // A folder given as the progress file is named as one (--reset would not help), and a place
    // that cannot be written fails with one line, exit 1, before the first card is shown.
    fs::create_directories(dir + "/folder.tsv");
    r = testutil::run("flashcards", run_args(dir + "/folder.tsv"), "q\n");
    CHECK(r.exit_code == 1);
    CHECK(r.err == "flashcards: " + dir + "/folder.tsv: is a folder, not a progress file; pass a "
                   "file path to --progress\n");
    write(dir + "/plainfile", "x");
    r = testutil::run("flashcards", run_args(dir + "/plainfile/progress.tsv"), "space\n1\n");
    CHECK(r.exit_code == 1);
    CHECK(r.err.rfind("flashcards: " + dir + "/plainfile/progress.tsv: cannot save progress", 0) ==
          0);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(r.out.empty());  // said up front, not after the student answered a card
    fs::remove_all(dir);
}

TEST_CASE(
    "flashcards: a scripted session through a pipe rates cards and the progress file says so") {
    std::string dir = temp_dir("pipe");
    std::string path = dir + "/progress.tsv";
    // Card 1: 쉬움. Card 2: 어려움. Skip card 3 with the right arrow. Card 4: 보통 after a
    // rating attempt before flipping (ignored). Keys as words, as single characters, and an
    // empty line for Enter.
    testutil::Run r = testutil::run("flashcards", run_args(path),
                                    "space\n1\n\n3\nright\n2\n \n2\nq\nspace\n");
    CHECK(r.exit_code == 0);
    CHECK(r.err == "");
    CHECK(r.out.find('\x1b') == std::string::npos);  // plain frames: no escape codes
    CHECK(r.out.find("먼저 답을 확인하세요") != std::string::npos);
    CHECK(r.out.find("1번 카드: 쉬움, 상자 3 (4세션 뒤에 다시)") != std::string::npos);
    CHECK(r.out.find("2번 카드: 어려움, 상자 1 (다음 세션에 다시)") != std::string::npos);
    CHECK(r.out.find("이번 세션(1)에 3장을 평가했어요: 쉬움 1, 보통 1, 어려움 1") !=
          std::string::npos);
    const std::string expected =
        "# transformer-cards progress v1\n"
        "# Leitner boxes: 어려움 -> box 1, 보통 -> box 2, 쉬움 -> one box up (3 to 5).\n"
        "# A card in box b is due 2^(b-1) sessions after the session it was rated in.\n"
        "session\t1\n"
        "card\tbox\trating\tsession\treviews\n"
        "1\t3\t쉬움\t1\t1\n"
        "2\t1\t어려움\t1\t1\n"
        "4\t2\t보통\t1\t1\n";
    CHECK(slurp(path) == expected);
    // Every plain frame line fits 80 columns (the closing line with the file's path aside).
    std::stringstream ss(r.out);
    for (std::string line; std::getline(ss, line);)
        if (line.rfind("진도 파일: ", 0) != 0) CHECK(term::display_width(line) <= 80);
    CHECK(r.out.find("\n진도 파일: " + path + "\n") != std::string::npos);

    // The next session starts with the card rated 어려움, then the new ones.
    r = testutil::run("flashcards", run_args(path), "space\n3\n");
    CHECK(r.exit_code == 0);
    size_t first = r.out.find("번 카드");
    REQUIRE(first != std::string::npos);
    CHECK(r.out.substr(first - 1, 1) == "2");
    CHECK(r.out.find("복습, 상자 1") != std::string::npos);
    CHECK(r.out.find("오늘 볼 카드 18장: 복습 1장, 새 카드 17장") != std::string::npos);
    cards::Progress p = cards::load_progress(path);
    CHECK(p.session == 2);
    CHECK(p.cards.at(2).reviews == 2);
    CHECK(p.cards.at(2).rated_in == 2);

    r = testutil::run("flashcards", run_args(path) + " --stats");
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("지난 세션: 2 (다음은 세션 3)") != std::string::npos);
    CHECK(r.out.find("본 카드 3/20, 쉬움 1, 보통 1, 어려움 1") != std::string::npos);
    CHECK(r.out.find("세션 3에 볼 카드: 복습 2장 + 새 카드 17장") != std::string::npos);

    // An unknown key line stops the script, names the line, and keeps what was saved.
    r = testutil::run("flashcards", run_args(path), "space\njump\n1\n");
    CHECK(r.exit_code == 2);
    CHECK(r.err.rfind("flashcards: error: stdin line 2: unknown key 'jump'", 0) == 0);
    CHECK(cards::load_progress(path).session == 2);

    // Input without newlines (</dev/zero) is cut after 4096 bytes and refused, not held whole
    // (std::getline would read it into memory until the machine ran out).
    const std::string zero_err = dir + "/zero.err";
    const std::string cmd = "timeout -k 5 60 " + testutil::program_command("flashcards") + " " +
                            run_args(path) + " </dev/zero >/dev/null 2>" +
                            zero_err;
    const int status = std::system(cmd.c_str());
    CHECK((WIFEXITED(status) ? WEXITSTATUS(status) : -1) == 2);
    CHECK(slurp(zero_err).find("stdin line 1: unknown key '\\x00") != std::string::npos);
    CHECK(slurp(zero_err).find("'...(over 4096 bytes); use one per line") != std::string::npos);

    r = testutil::run("flashcards", "--help");
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("Leitner") != std::string::npos);
    CHECK(r.out.find("2^(b-1)") != std::string::npos);
    CHECK(r.out.find("one key per line") != std::string::npos);
    fs::remove_all(dir);
}

TEST_CASE("flashcards: display width of mixed Hangul and ASCII, and wrapping by columns") {
    CHECK(term::display_width("") == 0);
    CHECK(term::display_width("abc") == 3);
    CHECK(term::display_width("한국어") == 6);
    CHECK(term::display_width("한국어 abc") == 10);
    CHECK(term::display_width("d_k=64에서 쉬움") == 15);
    CHECK(term::display_width("ㅂ") == 2);             // compatibility jamo
    CHECK(term::display_width("\xe1\x84\x92\xe1\x85\xa1\xe1\x86\xab") == 2);  // 한 as jamo: ᄒ+ᅡ+ᆫ
    CHECK(term::display_width("e\xcc\x81") == 1);      // e + combining acute
    CHECK(term::display_width("漢字") == 4);
    CHECK(term::display_width("ＡＢ") == 4);            // fullwidth forms
    CHECK(term::display_width("🤖") == 2);
    CHECK(term::display_width("─│╭") == 3);            // box drawing: narrow
    CHECK(term::codepoint_width(0x1b) == -1);
    // Zero width, as a terminal draws them: format characters (Cf: the bidi isolates U+2066 and
    // U+2069, an interlinear annotation anchor, a tag), nonspacing and enclosing marks (Mn, Me)
    // in any block; a prepended concatenation mark (Cf, U+0600) shows.
    CHECK(term::display_width("a\u2066b\u2069c\uFFF9\U000E0001\U0001D167\U00011A01\u20DD") == 3);
    CHECK(term::codepoint_width(0x0600) == 1);

    // Wrapping: each line at most the width, no text lost, list items hang.
    std::string text =
        "- 병렬화: h_t를 계산하려면 h_(t-1)이 먼저 있어야 하므로 문장 길이만큼 차례로 기다려야 "
        "합니다.";
    for (int width : {10, 17, 24, 40, 76}) {
        std::vector<std::string> lines = term::wrap(text, width);
        std::string joined;
        for (size_t i = 0; i < lines.size(); i++) {
            INFO("width " << width << " line " << i << ": " << lines[i]);
            CHECK(term::display_width(lines[i]) <= width);
            if (i > 0) {
                CHECK(lines[i].rfind("  ", 0) == 0);  // the hanging indent
                CHECK(lines[i][2] != ' ');
            }
            std::string t = lines[i];
            t.erase(0, t.find_first_not_of(' '));
            joined += (joined.empty() ? "" : " ") + t;
        }
        if (width >= 17) CHECK(joined == text);  // words are never cut when they fit a line
    }
    CHECK(term::wrap("가나다라마바사", 6) == std::vector<std::string>{"가나다", "라마바", "사"});
    CHECK(term::wrap("a\n\nb", 10) == std::vector<std::string>{"a", "", "b"});
    // An indent never pushes a wide character past the width.
    CHECK(term::wrap(" 가나", 2) == std::vector<std::string>{"가", "나"});
    CHECK(term::fit("한국어", 5) == "한...");
    CHECK(term::fit("한국", 5) == "한국 ");
    CHECK(term::display_width(term::fit("가나다라마바사아자차", 9)) == 9);
}

TEST_CASE("flashcards: every card fits an 80x24 screen with Hangul aligned, flipped or not") {
    cards::Deck deck = cards::load_deck(DECK);
    for (bool unicode : {true, false}) {
        cards::Session s(deck, cards::Progress{});
        for (size_t k = 0; k < deck.cards.size(); k++) {
            for (bool flipped : {false, true}) {
                s.flipped = flipped;
                cards::Frame f = cards::render(s, 80, 24, unicode);
                REQUIRE(f.lines.size() == 24);
                for (size_t r = 0; r < f.lines.size(); r++) {
                    INFO("card " << s.card().number << " row " << r << ": " << f.lines[r]);
                    CHECK(term::display_width(f.lines[r]) == 80);
                    CHECK(f.lines[r].find('\x1b') == std::string::npos);
                }
                // The box's right border sits in the last column on every box row.
                for (int r = 3; r < 21; r++) {
                    const std::string& line = f.lines[size_t(r)];
                    CHECK(line.substr(line.size() - (unicode ? 3 : 1)) ==
                          (r == 3    ? (unicode ? "╮" : "+")
                           : r == 20 ? (unicode ? "╯" : "+")
                                     : (unicode ? "│" : "|")));
                }
                // Scrolling reaches the end of a long answer: the last row shows the 실습 line.
                if (flipped && f.max_scroll > 0) {
                    s.scroll = 1000;
                    cards::Frame g = cards::render(s, 80, 24, unicode);
                    CHECK(s.scroll == g.max_scroll);
                    std::string all;
                    for (int r = 4; r < 20; r++) all += g.lines[size_t(r)];
                    CHECK(all.find("실습: make ch") != std::string::npos);
                    s.scroll = 0;
                }
            }
            s.apply(cards::Action::Next);
        }
    }
    // A tiny window says so instead of drawing a broken card, in as many words as fit, and
    // always says how to quit.
    cards::Session s(deck, cards::Progress{});
    cards::Frame f = cards::render(s, 39, 10, true);
    CHECK(f.lines.size() == 10);
    CHECK(f.lines[0].find("창이 작아요 (40x12 이상, q 끝내기)") != std::string::npos);
    for (int w : {39, 30, 20, 10, 3}) {
        f = cards::render(s, w, 10, true);
        INFO("width " << w);
        CHECK(term::display_width(f.lines[0]) == w);
        CHECK(f.lines[0].find("q") != std::string::npos);
    }
    CHECK(cards::render(s, 30, 10, true).lines[0].find("창이 작아요, q 끝내기") !=
          std::string::npos);
    CHECK(cards::render(s, 80, 11, true).lines[0].find("창이 작아요") != std::string::npos);

    // Narrower and wider screens: every line exactly the width, and the key help always ends
    // with how to quit.
    for (int w : {40, 45, 57, 67, 68, 79, 120})
        for (bool unicode : {true, false}) {
            cards::Session t(deck, cards::Progress{});
            for (int flip = 0; flip < 2; flip++) {
                f = cards::render(t, w, 16, unicode);
                INFO("width " << w << (unicode ? " unicode" : " ascii")
                              << (flip ? " flipped" : ""));
                REQUIRE(f.lines.size() == 16);
                for (const std::string& line : f.lines) CHECK(term::display_width(line) == w);
                CHECK(f.lines.back().find("q 끝내기") != std::string::npos);
                t.apply(cards::Action::Flip);
            }
        }
}

TEST_CASE("flashcards: keys, mouse reports and clicks") {
    term::Key k;
    CHECK(term::parse_key("\x1b[C", k) == 3);
    CHECK(k.kind == term::KeyKind::Right);
    CHECK(term::parse_key("\x1bOD", k) == 3);
    CHECK(k.kind == term::KeyKind::Left);
    CHECK(term::parse_key("\x1b[1;5A", k) == 6);
    CHECK(k.kind == term::KeyKind::Up);
    CHECK(term::parse_key("\x1b[6~x", k) == 4);
    CHECK(k.kind == term::KeyKind::PageDown);
    CHECK(term::parse_key("\x1b[<0;12;7M", k) == 10);
    CHECK(k.kind == term::KeyKind::Mouse);
    CHECK(k.button == 0);
    CHECK(k.x == 12);
    CHECK(k.y == 7);
    CHECK(k.press);
    CHECK(term::parse_key("\x1b[<65;1;1m", k) == 10);
    CHECK(k.button == 65);
    CHECK_FALSE(k.press);
    CHECK(term::parse_key("\x1b[<0;12", k) == 0);  // incomplete: wait for more bytes
    CHECK(term::parse_key("\x1b", k) == 0);
    CHECK(term::parse_key("\x1bq", k) == 1);
    CHECK(k.kind == term::KeyKind::Escape);
    CHECK(term::parse_key(" 1", k) == 1);
    CHECK(k.kind == term::KeyKind::Space);
    CHECK(term::parse_key("\r", k) == 1);
    CHECK(k.kind == term::KeyKind::Enter);
    CHECK(term::parse_key("\x03", k) == 1);
    CHECK(k.kind == term::KeyKind::CtrlC);
    CHECK(term::parse_key("\x04", k) == 1);
    CHECK(k.kind == term::KeyKind::CtrlD);
    CHECK(term::parse_key("ㅂ", k) == 3);
    CHECK(k.kind == term::KeyKind::Char);
    CHECK(k.ch == U'ㅂ');
    CHECK(term::parse_key("\xe3\x85", k) == 0);  // half a Hangul character

    cards::Action a;
    CHECK(cards::parse_line_key("space", a));
    CHECK(a == cards::Action::Flip);
    CHECK(cards::parse_line_key(" ", a));
    CHECK(a == cards::Action::Flip);
    CHECK(cards::parse_line_key("", a));
    CHECK(a == cards::Action::Flip);
    CHECK(cards::parse_line_key("Enter", a));
    CHECK(a == cards::Action::Flip);
    CHECK(cards::parse_line_key("3", a));
    CHECK(a == cards::Action::Rate3);
    CHECK(cards::parse_line_key("보통", a));
    CHECK(a == cards::Action::Rate2);
    CHECK(cards::parse_line_key("left", a));
    CHECK(a == cards::Action::Prev);
    CHECK(cards::parse_line_key("q", a));
    CHECK(a == cards::Action::Quit);
    CHECK_FALSE(cards::parse_line_key("4", a));
    CHECK_FALSE(cards::parse_line_key("spacebar", a));

    // A click anywhere on the card flips it; the buttons rate and browse.
    cards::Deck deck = cards::load_deck(DECK);
    cards::Session s(deck, cards::Progress{});
    cards::Frame f = cards::render(s, 80, 24, true);
    CHECK(cards::hit_test(f, 40, 10) == cards::Action::Flip);   // inside the box
    CHECK(cards::hit_test(f, 1, 4) == cards::Action::Flip);     // its top-left corner
    CHECK(cards::hit_test(f, 40, 1) == cards::Action::None);    // the title
    std::string buttons = f.lines[22];
    int col = term::display_width(buttons.substr(0, buttons.find("[2 보통]")));
    CHECK(cards::hit_test(f, col + 1, 23) == cards::Action::Rate2);
    col = term::display_width(buttons.substr(0, buttons.find("[다음 >]")));
    CHECK(cards::hit_test(f, col + 2, 23) == cards::Action::Next);

    // The full-screen key map, key by key.
    using KK = term::KeyKind;
    using A = cards::Action;
    auto act = [&](term::Key key) { return cards::action_for(key, f); };
    auto ch = [](char32_t c) { return term::Key{KK::Char, c}; };
    CHECK(act({KK::Space}) == A::Flip);
    CHECK(act({KK::Enter}) == A::Flip);
    CHECK(act(ch('1')) == A::Rate1);
    CHECK(act(ch('2')) == A::Rate2);
    CHECK(act(ch('3')) == A::Rate3);
    CHECK(act(ch('4')) == A::None);
    CHECK(act({KK::Right}) == A::Next);
    CHECK(act({KK::Left}) == A::Prev);
    CHECK(act({KK::Up}) == A::ScrollUp);
    CHECK(act({KK::Down}) == A::ScrollDown);
    for (term::Key quit : {ch('q'), ch(U'ㅂ'), term::Key{KK::Escape}, term::Key{KK::CtrlC},
                           term::Key{KK::CtrlD}})
        CHECK(act(quit) == A::Quit);
    term::Key wheel{KK::Mouse};
    wheel.button = 65;
    CHECK(act(wheel) == A::ScrollDown);
    term::Key click{KK::Mouse};
    click.button = 0, click.press = true, click.x = col + 2, click.y = 23;
    CHECK(act(click) == A::Next);
    click.press = false;  // the release of the same click does nothing more
    CHECK(act(click) == A::None);
}

TEST_CASE("flashcards: the full-screen program in a pseudo-terminal, and TERM=dumb") {
    // script(1) runs the program on a pty. Keys go in once the alternate screen is up (raw mode
    // discards what was typed before it).
    if (std::system("script -qec true /dev/null >/dev/null 2>&1") != 0) {
        MESSAGE("skipped: script(1) cannot open a pseudo-terminal here");
        return;
    }
    std::string dir = temp_dir("pty"), path = dir + "/p.tsv";
    auto session = [&](const std::string& term_name, const std::string& keys) {
        std::string out = dir + "/screen.out";
        std::string cmd = "(for i in $(seq 200); do grep -q '1049h' " + out +
                          " 2>/dev/null && break; sleep 0.05; done; printf '" + keys +
                          "') | TERM=" + term_name + " timeout 30 script -qec " +
                          testutil::quote(testutil::program_command("flashcards") + " " +
                                          run_args(path)) +
                          " /dev/null >" + out + " 2>&1";
        int status = std::system(cmd.c_str());
        CHECK(WIFEXITED(status));
        CHECK(WEXITSTATUS(status) == 0);
        return slurp(out);
    };
    // Space flips card 1, 3 rates it 어려움, Space and 1 rate card 2 쉬움, Ctrl-D quits.
    std::string screen = session("xterm", " 3 1\x04");
    CHECK(screen.find("\x1b[?1049h") != std::string::npos);  // the alternate screen, entered
    CHECK(screen.find("\x1b[?1049l") != std::string::npos);  // and left
    CHECK(screen.find("평가했어요: 쉬움 1, 보통 0, 어려움 1") != std::string::npos);
    cards::Progress p = cards::load_progress(path);
    REQUIRE(p.cards.size() == 2);
    CHECK(p.cards[1].last == cards::Rating::Hard);
    CHECK(p.cards[2].last == cards::Rating::Easy);

    // A rating that cannot be saved (the progress file's folder became a file) ends the
    // session: the screen is left first, then one line says why, and the status is 1.
    {
        std::string sub = dir + "/sub", out = dir + "/fail.out";
        fs::create_directory(sub);
        std::string cmd = "(for i in $(seq 200); do grep -q '1049h' " + out +
                          " 2>/dev/null && break; sleep 0.05; done; rmdir " + sub + "; touch " +
                          sub + "; printf ' 3') | TERM=xterm timeout 30 script -qec " +
                          testutil::quote(testutil::program_command("flashcards") + " " +
                                          run_args(sub + "/p.tsv")) +
                          " /dev/null >" + out + " 2>&1";
        int status = std::system(cmd.c_str());
        CHECK(WIFEXITED(status));
        CHECK(WEXITSTATUS(status) == 1);
        std::string failed = slurp(out);
        size_t left = failed.find("\x1b[?1049l");
        REQUIRE(left != std::string::npos);
        CHECK(failed.find("flashcards: ", left) != std::string::npos);
        CHECK(failed.find("평가했어요", left) == std::string::npos);  // no summary
        fs::remove(sub);
    }

    // A dumb terminal gets the line mode: no escape codes at all.
    fs::remove(path);
    std::string cmd = "printf 'space\\n2\\nq\\n' | TERM=dumb timeout 30 script -qec " +
                      testutil::quote(testutil::program_command("flashcards") + " " +
                                      run_args(path)) +
                      " /dev/null >" + dir + "/dumb.out 2>&1";
    CHECK(std::system(cmd.c_str()) == 0);
    screen = slurp(dir + "/dumb.out");
    CHECK(screen.find('\x1b') == std::string::npos);
    CHECK(screen.find("평가했어요: 쉬움 0, 보통 1, 어려움 0") != std::string::npos);
    CHECK(cards::load_progress(path).cards.at(1).last == cards::Rating::Medium);
    fs::remove_all(dir);
}

TEST_CASE("flashcards: a FIFO or a device node is refused as the progress file or the deck") {
    std::string dir = temp_dir("special");
    const std::string fifo = dir + "/fifo.tsv";
    REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
    // Reading a FIFO would wait forever for a writer (hence the time limit).
    testutil::Run r = testutil::run("flashcards", run_args(fifo) + " --stats", "", 30);
    CHECK(r.exit_code == 1);
    CHECK(r.err == "flashcards: " + fifo +
                       ": is a FIFO, not a progress file; pass a regular file to --progress\n");
    // --reset must not rename a regular file over it.
    r = testutil::run("flashcards", run_args(fifo) + " --reset", "", 30);
    CHECK(r.exit_code == 1);
    CHECK(fs::is_fifo(fifo));
    fs::create_symlink("fifo.tsv", dir + "/link.tsv");  // a link to one is the same
    r = testutil::run("flashcards", run_args(dir + "/link.tsv") + " --reset", "", 30);
    CHECK(r.exit_code == 1);
    CHECK(fs::is_fifo(fifo));
    r = testutil::run("flashcards", "--deck " + fifo + " --progress " + dir + "/p.tsv --stats", "",
                      30);
    CHECK(r.exit_code == 1);
    CHECK(r.err == "flashcards: " + fifo +
                       ": cannot read the deck: it is a FIFO, not a regular file; pass the "
                       "Markdown deck to --deck FILE\n");
    // A device node: read from /dev/null, never written; a node of our own is not replaced.
    r = testutil::run("flashcards", run_args("/dev/null") + " --stats", "", 30);
    CHECK(r.exit_code == 1);
    CHECK(r.err ==
          "flashcards: /dev/null: is a device node, not a progress file; pass a regular "
          "file to --progress\n");
    const std::string node = dir + "/null.tsv";
    if (::mknod(node.c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0) {  // root only
        r = testutil::run("flashcards", run_args(node) + " --reset", "", 30);
        CHECK(r.exit_code == 1);
        CHECK(fs::is_character_file(node));
        r = testutil::run("flashcards", run_args(node), "space\n1\n", 30);
        CHECK(r.exit_code == 1);
        CHECK(fs::is_character_file(node));
    } else {
        MESSAGE("mknod needs root: the device-node replacement case is not run");
    }
    fs::remove_all(dir);
}

TEST_CASE(
    "flashcards: a link to /dev/zero, a folder and a file over 4 MiB are refused by name as the "
    "deck or the progress file") {
    std::string dir = temp_dir("special-2");
    const std::string zero = dir + "/zero.tsv", folder = dir + "/folder.md";
    fs::create_symlink("/dev/zero", zero);
    fs::create_directory(folder);
    // A link to /dev/zero: never read (it never ends), never renamed over, the link kept.
    const std::string zero_err = "flashcards: " + zero +
                                 ": is a device node, not a progress file; pass a regular file to "
                                 "--progress\n";
    for (const char* extra : {" --stats", " --reset", ""}) {
        INFO("flags: " << extra);
        testutil::Run r = testutil::run("flashcards", run_args(zero) + extra, "space\n1\nq\n", 30);
        CHECK(r.exit_code == 1);
        CHECK(r.err == zero_err);
        CHECK(fs::is_symlink(zero));
        CHECK(fs::read_symlink(zero) == "/dev/zero");
    }
    const std::string p = " --progress " + dir + "/p.tsv --stats";
    testutil::Run r = testutil::run("flashcards", "--deck " + zero + p, "", 30);
    CHECK(r.exit_code == 1);
    CHECK(r.err == "flashcards: " + zero +
                       ": cannot read the deck: it is a device node, not a regular file; pass "
                       "the Markdown deck to --deck FILE\n");
    r = testutil::run("flashcards", "--deck " + folder + p, "", 30);
    CHECK(r.exit_code == 1);
    CHECK(r.err == "flashcards: " + folder +
                       ": cannot read the deck: it is a folder, not a regular file; pass the "
                       "Markdown deck to --deck FILE\n");

    // The size bound: a file of exactly 4 MiB is read, one byte more is refused before any of
    // it is parsed, and a 10 GiB sparse file is refused unread.
    REQUIRE(cards::MAX_FILE_BYTES == size_t(4) << 20);
    const std::string too_large =
        ": it is larger than 4 MiB, more than a deck or progress file holds; ";
    // `head`, then comment lines, up to `size` bytes in all.
    auto padded = [](std::string head, size_t size, char mark) {
        while (head.size() < size) {
            size_t n = std::min<size_t>(100, size - head.size());
            head += std::string(n - 1, mark) + "\n";
        }
        return head;
    };
    const std::string progress_head =
        "# transformer-cards progress v1\nsession\t1\ncard\tbox\trating\tsession\treviews\n"
        "1\t1\t어려움\t1\t1\n";
    const std::string big = dir + "/big.tsv";
    write(big, padded(progress_head, cards::MAX_FILE_BYTES, '#'));
    r = testutil::run("flashcards", run_args(big) + " --stats", "", 60);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("본 카드 1/20") != std::string::npos);
    const std::string over = padded(progress_head, cards::MAX_FILE_BYTES + 1, '#');
    write(big, over);
    for (const char* extra : {" --stats", ""}) {
        r = testutil::run("flashcards", run_args(big) + extra, "space\n1\nq\n", 60);
        CHECK(r.exit_code == 1);
        CHECK(r.err == "flashcards: " + big + ": cannot read the progress file" + too_large +
                           "choose another --progress file, or --reset\n");
        CHECK(r.out.empty());
    }
    CHECK(slurp(big) == over);
    const std::string sparse = dir + "/sparse";
    write(sparse, "");
    fs::resize_file(sparse, std::uintmax_t(10) << 30);
    r = testutil::run("flashcards", run_args(sparse) + " --stats", "", 30);
    CHECK(r.exit_code == 1);
    CHECK(r.err == "flashcards: " + sparse + ": cannot read the progress file" + too_large +
                       "choose another --progress file, or --reset\n");
    r = testutil::run("flashcards", "--deck " + sparse + p, "", 30);
    CHECK(r.exit_code == 1);
    CHECK(r.err == "flashcards: " + sparse + ": cannot read the deck" + too_large +
                       "pass the Markdown deck to --deck FILE\n");
    fs::remove(sparse);
    // The deck: an introduction padded before the real cards.
    const std::string deck_text = slurp(DECK), deck = dir + "/deck.md";
    write(deck, padded("# 소개\n", cards::MAX_FILE_BYTES - deck_text.size(), 'x') + deck_text);
    r = testutil::run("flashcards", "--deck " + deck + p, "", 60);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("(20장)") != std::string::npos);
    write(deck, padded("# 소개\n", cards::MAX_FILE_BYTES + 1 - deck_text.size(), 'x') + deck_text);
    r = testutil::run("flashcards", "--deck " + deck + p, "", 60);
    CHECK(r.exit_code == 1);
    CHECK(r.err == "flashcards: " + deck + ": cannot read the deck" + too_large +
                       "pass the Markdown deck to --deck FILE\n");
    fs::remove_all(dir);
}

TEST_CASE("flashcards: a NUL byte in the deck is refused like any control character") {
    std::string text = "## 1. 질문\n답 ";  // appended: GCC 12 warns falsely on a + chain here
    text.append(1, '\0').append(" 끝\n실습: `make ch1`\n");
    CHECK(error_of([&] { cards::parse_deck(text, "d.md"); }) ==
          "d.md:2: control character U+0000; remove it");
}

TEST_CASE("flashcards: the session count stops at 999999999, and that file reads back") {
    std::string dir = temp_dir("last-session"), path = dir + "/p.tsv";
    write(path,
          "# transformer-cards progress v1\nsession\t999999999\ncard\tbox\trating\tsession\t"
          "reviews\n1\t1\t어려움\t999999999\t1\n");
    testutil::Run r = testutil::run("flashcards", run_args(path), "space\n1\nq\n");
    CHECK(r.exit_code == 0);
    cards::Progress p = cards::load_progress(path);  // not 1000000000, which is refused
    CHECK(p.session == 999999999);
    CHECK(p.cards.size() == 2);
    r = testutil::run("flashcards", run_args(path) + " --stats");
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("지난 세션: 999999999 (다음은 세션 999999999)") != std::string::npos);
    fs::remove_all(dir);
}

TEST_CASE("flashcards: a killed run's temporary progress file is removed by the next save") {
    std::string dir = temp_dir("killed"), path = dir + "/progress.tsv";
    pid_t gone = ::fork();  // a process id that no longer runs, as after kill -9
    REQUIRE(gone >= 0);
    if (gone == 0) ::_exit(0);
    ::waitpid(gone, nullptr, 0);
    const std::string left = path + ".tmp." + std::to_string(gone);
    write(left, "# transformer-cards progress v1\nsession\t1\n");
    testutil::Run r = testutil::run("flashcards", run_args(path), "space\n1\nq\n");
    CHECK(r.exit_code == 0);
    CHECK_FALSE(fs::exists(left));
    int files = 0;
    for ([[maybe_unused]] auto& e : fs::directory_iterator(dir))
        files++;
    CHECK(files == 1);
    fs::remove_all(dir);
}

TEST_CASE("flashcards: the review count stops at 999999999, and that file reads back") {
    // The count must not go on to 1000000000, which the reader (9 digits) refuses.
    cards::Progress p;
    p.session = 3;
    p.cards[1] = cards::CardState{1, cards::Rating::Hard, 2, cards::MAX_REVIEWS - 1};
    cards::rate(p, 1, cards::Rating::Hard, 3);
    CHECK(p.cards[1].reviews == cards::MAX_REVIEWS);
    cards::rate(p, 1, cards::Rating::Medium, 3);
    CHECK(p.cards[1].reviews == cards::MAX_REVIEWS);
    cards::Progress back = cards::parse_progress(cards::format_progress(p), "p.tsv");
    CHECK(back.cards[1].reviews == cards::MAX_REVIEWS);
    // And through the program: a card at the cap is rated once more and the file still loads.
    std::string dir = temp_dir("last-review"), path = dir + "/p.tsv";
    write(path,
          "# transformer-cards progress v1\nsession\t4\ncard\tbox\trating\tsession\treviews\n"
          "1\t1\t어려움\t4\t999999999\n");
    testutil::Run r = testutil::run("flashcards", run_args(path), "space\n3\nq\n");
    CHECK(r.exit_code == 0);
    CHECK(cards::load_progress(path).cards.at(1).reviews == cards::MAX_REVIEWS);
    fs::remove_all(dir);
}

TEST_CASE("flashcards: bytes of a corrupt progress file reach the terminal quoted and cut") {
    const std::string head =
        "# transformer-cards progress v1\nsession\t2\ncard\tbox\trating\tsession\treviews\n";
    // An ESC sequence (retitle, clear), a NUL, a 3 MB field: each shown as escaped text.
    std::string e = error_of([&] {
        cards::parse_progress(head + "1\t1\t\x1b]0;pwned\x07\x1b[2J\t1\t1\n", "p.tsv");
    });
    CHECK(e == "p.tsv:4: bad rating '\\x1b]0;pwned\\x07\\x1b[2J' (쉬움, 보통 or 어려움); fix the "
               "line or start over with --reset");
    e = error_of([&] {
        cards::parse_progress(head + std::string("1\0x\t1\t어려움\t1\t1\n", 18), "p.tsv");
    });
    CHECK(e == "p.tsv:4: bad card number '1\\x00x'; fix the line or start over with --reset");
    e = error_of([&] {
        cards::parse_progress(head + "1\t1\t어려움\t1\t" + std::string(3'000'000, '7') + "\n",
                              "p.tsv");
    });
    CHECK(e == "p.tsv:4: bad review count '" + std::string(40, '7') +
                   "'...(3000000 bytes) (1 to 999999999); fix the line or start over with --reset");
    e = error_of([&] {
        cards::parse_progress("# transformer-cards progress v1\nsession\t\x1b[2J" +
                                  std::string(100, 'x') + "\n",
                              "p.tsv");
    });
    CHECK(e == "p.tsv:2: expected 'session<TAB>N', got 'session\\t\\x1b[2J" + std::string(28, 'x') +
                   "'...(112 bytes); fix the line or start over with --reset");
    // A deck's bad heading, the same way.
    e = error_of([&] { cards::parse_deck("## " + std::string(5000, 'q') + "\n", "d.md"); });
    CHECK(e == "d.md:1: a card heading must look like '## 7. question', got '" +
                   std::string(60, 'q') + "'...(5000 bytes)");
}

TEST_CASE("flashcards: a 255-byte progress file name works; one that cannot be saved is said "
          "before the first rating") {
    std::string dir = temp_dir("long-name");
    const std::string path = dir + "/" + std::string(251, 'p') + ".tsv";  // 255 bytes
    testutil::Run r = testutil::run("flashcards", run_args(path), "space\n1\nspace\n2\nq\n");
    CHECK(r.exit_code == 0);
    CHECK(r.err.empty());
    CHECK(cards::load_progress(path).cards.size() == 2);  // both ratings kept
    // 256 bytes is not a legal name: refused up front, before a card is shown (refused at the
    // save, the first rating would be lost).
    const std::string bad = dir + "/" + std::string(252, 'p') + ".tsv";
    r = testutil::run("flashcards", run_args(bad), "space\n1\nq\n");
    CHECK(r.exit_code == 1);
    CHECK(r.out.empty());
    // It says the name is too long, not to fix the file's permissions (as it did before).
    CHECK(r.err == "flashcards: " + bad + ": cannot read the progress file: File name too long "
                   "(a file name has at most 255 bytes, a path 4095); choose a shorter "
                   "--progress FILE\n");
    // The same in a folder that does not exist yet.
    const std::string deep = dir + "/new/" + std::string(252, 'p') + ".tsv";
    r = testutil::run("flashcards", run_args(deep), "space\n1\nq\n");
    CHECK(r.exit_code == 1);
    CHECK(r.out.empty());
    CHECK(r.err == "flashcards: " + deep + ": cannot save progress: cannot write " + deep +
                       ": File name too long; choose a writable --progress FILE\n");
    fs::remove_all(dir);
}

TEST_CASE("flashcards: a progress folder that cannot be made is refused before the first card") {
    // To root /proc grants write access, so an access check passes, and making /proc/x would
    // fail only at the first save, the rating lost: the folder is made (and removed) up front.
    // To anyone else the access check refuses /proc already.
    auto r = testutil::run("flashcards", "--progress /proc/transformer-test-none/p.tsv",
                           "space\n1\nq\n");
    CHECK(r.exit_code == 1);
    CHECK(r.out.empty());
    if (::geteuid() == 0)
        CHECK(r.err ==
              "flashcards: /proc/transformer-test-none/p.tsv: cannot save progress: "
              "cannot create /proc/transformer-test-none: No such file or directory; "
              "choose a writable --progress FILE\n");
    else
        CHECK(r.err ==
              "flashcards: /proc/transformer-test-none/p.tsv: cannot save progress in "
              "/proc: Permission denied; choose a writable --progress FILE\n");
    // A folder that can be made is made at the first save, not by the check.
    const std::string dir = "/tmp/transformer-test-cards-mk-" + std::to_string(::getpid());
    r = testutil::run("flashcards", "--progress " + dir + "/a/b/p.tsv", "q\n");
    CHECK(r.exit_code == 0);
    CHECK(!std::filesystem::exists(dir));  // nothing rated, nothing made
    r = testutil::run("flashcards", "--progress " + dir + "/a/b/p.tsv", "space\n1\nq\n");
    CHECK(r.exit_code == 0);
    CHECK(std::filesystem::exists(dir + "/a/b/p.tsv"));
    std::filesystem::remove_all(dir);
}
