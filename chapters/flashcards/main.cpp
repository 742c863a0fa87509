// The 20-card review deck (chapters/flashcards/deck.md) in the terminal: `make cards`.
//
// This file is only the loop: read a key, apply it to the session, save after a rating, draw.
// The folder, in reading order:
//   main.cpp          this loop, the flags and the --help text
//   deck.md           the 20 cards
//   deck.{h,cpp}      deck.md parsed into cards: question, answer, the make target to run
//   schedule.{h,cpp}  the ratings 쉬움 / 보통 / 어려움 and the Leitner rule (boxes 1 to 5)
//   progress.{h,cpp}  the progress file: its text format, the lock, the merge, the atomic save
//   session.{h,cpp}   a session: the order of the cards, what each key does, the --stats counts
//   screen.{h,cpp}    the layout in display columns, mouse hit areas, the full-screen key map
//   text.{h,cpp}      what they share: cards::Error and a few text and file helpers
//   web/              the deck as a web page: this folder's session compiled to WebAssembly
// Text width, key decoding, raw mode, the key reader and the screen drawing are in
// common/program/terminal.h (chapter 1's --live uses them too; chapters 5, 6 and 8 the text width).
//
// The calls this loop makes, in short:
//   cards::Deck deck = cards::load_deck("chapters/flashcards/deck.md");   // throws cards::Error
//   cards::Progress p = cards::load_progress(path);                       // missing file: empty
//   cards::Session s(deck, p);          s.apply(cards::Action::Flip);      s.apply(Rate3);
//   cards::save_progress(path, s.progress);                               // temp + fsync + rename
//   cards::Frame f = cards::render(s, 80, 24, /*unicode=*/true);          // 24 lines, 80 columns
#include "chapters/flashcards/deck.h"
#include "chapters/flashcards/progress.h"
#include "chapters/flashcards/screen.h"
#include "chapters/flashcards/session.h"
#include "common/program/cli.h"
#include "common/program/terminal.h"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

namespace {

const char* ABOUT =
    "The 20-card Transformer review deck (트랜스포머 마스터 카드) in the terminal.\n"
    "\n"
    "Keys in a terminal: Space or Enter (or a click on the card) flips it; once the answer\n"
    "shows, 1 / 2 / 3 (or a click on a button) rate it 쉬움 / 보통 / 어려움 and the next card\n"
    "comes; Left / Right arrows browse; Up / Down (or the mouse wheel) scroll a long answer;\n"
    "q (or Esc, Ctrl-D) quits; Ctrl-C stops at once. Every rating is already saved, and the\n"
    "screen is restored on exit, Ctrl-C, SIGTERM and Ctrl-Z.\n"
    "\n"
    "When stdin or stdout is not a terminal, TERM is dumb or unset, or with --plain:\n"
    "one key per line, the same keys, and after each key the screen is printed as plain text\n"
    "without escape codes (80 columns, or the terminal's width when stdout is one):\n"
    "  space, flip, click or a line holding one space     flip the card\n"
    "  enter or an empty line                             flip the card\n"
    "  1  2  3  (or 쉬움  보통  어려움)                   rate the card\n"
    "  right, next, n   /   left, prev, p                 next / previous card\n"
    "  down, j   /   up, k                                scroll (the plain screen shows all)\n"
    "  q, quit, or the end of the input                   quit\n"
    "An unknown line stops the program with exit code 2 and names the line.\n"
    "  example: printf 'space\\n1\\nspace\\n3\\nq\\n' | flashcards --progress /tmp/p.tsv\n"
    "\n"
    "Spaced review, Leitner boxes 1 to 5: 어려움 puts a card in box 1, 보통 in box 2, 쉬움\n"
    "moves it one box up (at least box 3, at most box 5). A card in box b is due again\n"
    "2^(b-1) sessions after the session it was rated in: box 1 the next session, then 2, 4, 8,\n"
    "16 sessions later. A session is a run of the program in which something was rated. Each\n"
    "session shows the due cards first (lowest box first, then the longest overdue, then by\n"
    "number), then the new cards in deck order, then the rest for browsing. Rating a card\n"
    "again in the same session replaces the earlier rating. Nothing is random.\n"
    "\n"
    "Progress is saved after every rating (temporary file, fsync, rename: never half written),\n"
    "by default to $XDG_STATE_HOME/transformer-cards/progress.tsv, or without XDG_STATE_HOME\n"
    "to ~/.local/state/transformer-cards/progress.tsv. A corrupt or unreadable progress file\n"
    "stops the program with one line naming the file and line; the file is not touched.\n"
    "Exit codes: 0 done, 1 deck or progress problem, 2 bad flag or unknown key line.";

bool file_exists(const std::string& p) {
    struct stat st;
    return ::stat(p.c_str(), &st) == 0;
}

// The deck next to the binary (build/bin/flashcards -> chapters/flashcards/deck.md), for
// running the program from another folder.
std::string deck_beside_binary() {
    char buf[4096];
    ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) return "";
    std::string exe(buf, size_t(n));
    std::string bin = exe.substr(0, exe.find_last_of('/'));
    return bin + "/../../chapters/flashcards/deck.md";
}

// Runs a save with the terminating signals held back, so a Ctrl-C cannot leave a temporary file.
template <class Save>
void with_signals_held(Save save) {
    sigset_t block, old;
    sigemptyset(&block);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP}) sigaddset(&block, sig);
    sigprocmask(SIG_BLOCK, &block, &old);
    try {
        save();
    } catch (...) {
        sigprocmask(SIG_SETMASK, &old, nullptr);
        throw;
    }
    sigprocmask(SIG_SETMASK, &old, nullptr);
}

// Saves the rating just made. The file may hold ratings another run saved meanwhile; the
// session carries on with them.
// A save that fails (checked before the session, so only a disk that filled or a folder that
// changed since) says which rating it could not keep.
void save_rating(const std::string& path, cards::Session& s) {
    try {
        with_signals_held(
            [&] { s.progress = cards::save_rating(path, s.progress, s.last_rated); });
    } catch (const cards::Error& e) {
        throw cards::Error(std::string(e.what()) + " (the rating of card " +
                           std::to_string(s.last_rated) + " was not saved)");
    }
}

std::string summary(const cards::Session& s, const std::string& path) {
    if (s.rated_now.empty()) return "평가한 카드가 없어요.\n진도 파일: " + path;
    int n[4] = {0, 0, 0, 0};
    // This run's ratings: the progress may hold another run's later rating of the same card.
    for (const auto& [card, rating] : s.rated_now) n[int(rating)]++;
    return "이번 세션(" + std::to_string(s.session) + ")에 " + std::to_string(s.rated_now.size()) +
           "장을 평가했어요: 쉬움 " + std::to_string(n[1]) + ", 보통 " + std::to_string(n[2]) +
           ", 어려움 " + std::to_string(n[3]) + ".\n진도 파일: " + path;
}

// ---- stdin is not a terminal: one key per line, plain frames --------------------------------

void print_plain(cards::Session& s) {
    cards::Frame f = cards::render(s, std::max(term::plain_width(), 40), 0, /*unicode=*/false);
    std::fputs((term::plain_text(f.lines) + "\n").c_str(), stdout);
    cli::flush_stdout_or_exit();  // a full disk ends the loop, not the input
}

int run_lines(cards::Session& s, const std::string& progress_path) {
    print_plain(s);
    std::string line;
    int line_no = 0;
    while (cli::read_input_line(line)) {
        line_no++;
        cards::Action a;
        if (!cards::parse_line_key(line, a)) {
            // Quoted as the option errors quote: control bytes and NUL as escapes (\x1b, \x00)
            std::fflush(stdout);
            std::fprintf(stderr,
                         "flashcards: error: stdin line %d: unknown key %s; use one per line: "
                         "space, enter, 1, 2, 3, right, left, up, down, q (see --help)\n",
                         line_no, cli::quote_input_line(line).c_str());
            return 2;
        }
        if (a == cards::Action::Quit) break;
        if (s.apply(a)) save_rating(progress_path, s);
        print_plain(s);
    }
    std::printf("%s\n", summary(s, progress_path).c_str());
    return 0;
}

// ---- a terminal: raw mode, alternate screen, mouse -----------------------------------------

int run_terminal(cards::Session& s, const std::string& progress_path, bool unicode, bool mouse) {
    term::Raw raw;
    raw.enter(mouse);
    term::Screen screen;
    cards::Frame frame;
    auto draw = [&] {
        int rows, cols;
        term::window_size(rows, cols);
        frame = cards::render(s, cols, rows, unicode);
        screen.draw(frame.lines, {{0, 0, cols, "1"}}, rows, cols);  // the title in bold
    };
    std::string error;  // a rating that could not be saved ends the session
    term::key_loop(screen, draw, [&](const term::Key& key) {
        cards::Action a = cards::action_for(key, frame);
        if (a == cards::Action::Quit) return false;
        if (s.apply(a)) {
            try {
                save_rating(progress_path, s);
            } catch (const cards::Error& e) {
                error = e.what();
                return false;
            }
        }
        return true;
    });
    raw.leave();
    if (!error.empty()) {
        std::fprintf(stderr, "flashcards: %s\n", error.c_str());
        return 1;
    }
    std::printf("%s\n", summary(s, progress_path).c_str());
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    std::string deck_path = "chapters/flashcards/deck.md";
    std::string progress_path;
    try {
        progress_path = cards::default_progress_path();
    } catch (const cards::Error&) {
        // No home folder: --progress becomes necessary; said below if it is missing.
    }
    bool reset = false, stats = false, plain = false, ascii = false, no_mouse = false;

    cli::Parser cli("flashcards", ABOUT);
    cli.path("--deck", deck_path, "the Markdown deck to review");
    cli.path("--progress", progress_path, "the progress file (created on the first rating)");
    cli.flag("--reset", reset, "start over: replace the progress file with an empty one");
    cli.flag("--stats", stats, "print the progress summary and exit");
    cli.flag("--plain", plain, "read keys line by line and print plain frames, even in a terminal");
    cli.flag("--ascii", ascii, "draw with ASCII only (for terminals without box-drawing glyphs)");
    cli.flag("--no-mouse", no_mouse, "do not turn on the terminal's mouse reporting");
    cli.parse(argc, argv);
    if (progress_path.empty())
        cli.fail("no progress file: $HOME is not set; pass --progress FILE");

    if (deck_path == "chapters/flashcards/deck.md" && !file_exists(deck_path)) {
        std::string beside = deck_beside_binary();
        if (!beside.empty() && file_exists(beside)) deck_path = beside;
    }

    try {
        cards::Deck deck = cards::load_deck(deck_path);
        cards::Progress progress;
        if (reset) {
            with_signals_held([&] { cards::save_progress(progress_path, progress); });
            std::printf("진도를 초기화했어요: %s\n", progress_path.c_str());
        } else {
            progress = cards::load_progress(progress_path);
        }
        if (stats) {
            std::fputs(cards::stats_text(deck, progress, progress_path).c_str(), stdout);
            return 0;
        }
        cards::check_writable(progress_path);  // now, not after the first answer
        cards::Session session(deck, progress);
        std::fflush(stdout);
        if (!plain && term::full_screen_possible())
            return run_terminal(session, progress_path, !ascii, !no_mouse);
        return run_lines(session, progress_path);
    } catch (const cards::Error& e) {
        std::fflush(stdout);
        std::fprintf(stderr, "flashcards: %s\n", e.what());
        return 1;
    } catch (const std::exception& e) {
        std::fflush(stdout);
        std::fprintf(stderr, "flashcards: %s\n", cli::error_text(e));
        return 1;
    }
}
