// common/program/terminal's pieces for full-screen programs that the flashcards and chapter 1's
// --live share: styled spans at display columns, the plain text of the line mode, echoing a bad
// line, the help line that shortens, and the key reader over a pipe. (Width, wrapping and keys:
// tests/test_flashcards.cpp; the screen on a real pty: the pty sessions of both programs.)
#include "common/program/terminal.h"
#include "tests/util.h"

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>

TEST_CASE("terminal: styles go in at display columns, Hangul counting two") {
    using term::Span;
    CHECK(term::styled("abc", {}, 0) == "abc");
    CHECK(term::styled("abcdef", {{0, 1, 3, "1"}}, 0) == "a\x1b[1mbc\x1b[0mdef");
    CHECK(term::styled("abcdef", {{1, 1, 3, "1"}}, 0) == "abcdef");  // another row's span
    // "가나" takes columns 0-3: a span from column 2 starts at 나.
    CHECK(term::styled("가나다", {{0, 2, 4, "7"}}, 0) == "가\x1b[7m나\x1b[0m다");
    // Spans that touch, given out of order; one running to the end of the line is closed there.
    CHECK(term::styled("abcd", {{0, 2, 9, "2"}, {0, 0, 2, "1"}}, 0) ==
          "\x1b[1mab\x1b[0m\x1b[2mcd\x1b[0m");
    CHECK(term::styled("ab", {{0, 0, 0, "1"}}, 0) == "ab");  // an empty span does nothing
    // A 256-colour cell as chapter 1's heatmap writes it.
    CHECK(term::styled("  0.72  ", {{0, 0, 8, "38;5;231;48;5;31"}}, 0) ==
          "\x1b[38;5;231;48;5;31m  0.72  \x1b[0m");
}

TEST_CASE("terminal: plain text, printable echoes and the first help line that fits") {
    CHECK(term::plain_text({"ab  ", "    ", "", " 가 "}) == "ab\n\n\n 가\n");
    CHECK(term::printable("jump", 40) == "jump");
    CHECK(term::printable("a\x1b[31mb\tc\x7f", 40) == "a?[31mb?c?");
    CHECK(term::printable("x\xff\xfey", 40) == "x??y");  // invalid UTF-8
    CHECK(term::printable("한국어", 5) == "한국");       // cut at a code point
    CHECK(term::printable(std::string(100, 'x'), 40) == std::string(40, 'x'));
    CHECK(term::fit_first({"long help line", "short", "q"}, 20) == "long help line      ");
    CHECK(term::fit_first({"long help line", "short", "q"}, 10) == "short     ");
    CHECK(term::fit_first({"long help line", "한글 도움말"}, 6) == "한... ");  // the last, cut
    CHECK(term::display_width(term::fit_first({"가나다"}, 1)) == 1);
}

TEST_CASE("terminal: the key reader: whole keys, a lone Esc, a sequence cut short, the end") {
    // The reader reads fd 0: a pipe stands in for the terminal for the length of this case.
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    const int saved = ::dup(STDIN_FILENO);
    REQUIRE(saved >= 0);
    REQUIRE(::dup2(fds[0], STDIN_FILENO) == STDIN_FILENO);
    ::close(fds[0]);
    auto send = [&](const std::string& bytes) {
        REQUIRE(::write(fds[1], bytes.data(), bytes.size()) == ssize_t(bytes.size()));
    };
    using E = term::KeyReader::Event;
    term::KeyReader keys;
    term::Key k;
    // Two keys in one read: the second waits in the buffer.
    send("a\x1b[C");
    CHECK(keys.next(k) == E::Key);
    CHECK(k.kind == term::KeyKind::Char);
    CHECK(k.ch == U'a');
    CHECK(keys.pending());
    CHECK(keys.next(k) == E::Key);
    CHECK(k.kind == term::KeyKind::Right);
    CHECK_FALSE(keys.pending());
    // A click report, and a Hangul character, each whole.
    send("\x1b[<0;12;7M\xe3\x85\x82");
    CHECK(keys.next(k) == E::Key);
    CHECK(k.kind == term::KeyKind::Mouse);
    CHECK(k.x == 12);
    CHECK(k.y == 7);
    CHECK(keys.next(k) == E::Key);
    CHECK(k.ch == U'ㅂ');
    // Esc alone: no byte follows, so it is the Esc key.
    send("\x1b");
    CHECK(keys.next(k) == E::Key);
    CHECK(k.kind == term::KeyKind::Escape);
    // Half a click report that never ends is dropped, not taken for Esc (which would quit).
    send("\x1b[<0;12");
    CHECK(keys.next(k) == E::Key);
    CHECK(k.kind == term::KeyKind::Unknown);
    send("q");
    CHECK(keys.next(k) == E::Key);
    CHECK(k.ch == U'q');
    // The terminal goes away.
    ::close(fds[1]);
    CHECK(keys.next(k) == E::End);
    ::dup2(saved, STDIN_FILENO);
    ::close(saved);
}

namespace {

// Everything the master side of a pty has to read now (the slave's output so far).
std::string drain(int master) {
    std::string out;
    char buf[4096];
    for (pollfd p{master, POLLIN, 0}; ::poll(&p, 1, 200) > 0 && (p.revents & POLLIN);) {
        const ssize_t n = ::read(master, buf, sizeof buf);
        if (n <= 0) break;
        out.append(buf, size_t(n));
    }
    return out;
}

// The widest of the lines a progress line drew: the text between its "\r\033[K"s.
int widest_drawn(const std::string& out) {
    int widest = 0;
    for (size_t from = 0; (from = out.find("\r\033[K", from)) != std::string::npos;) {
        from += 4;
        const size_t to = std::min(out.find('\r', from), out.find('\n', from));
        widest = std::max(widest, term::display_width(out.substr(from, to - from)));
    }
    return widest;
}

}  // namespace

TEST_CASE("terminal: a progress line fits the terminal it is drawn on, not stdout's") {
    int master = -1, slave = -1;
    winsize ws{};
    ws.ws_row = 10;
    ws.ws_col = 40;
    REQUIRE(::openpty(&master, &slave, nullptr, nullptr, &ws) == 0);
    {
        term::ProgressLine line(slave);  // the tests' stdout is a file: 80 columns if asked
        CHECK(line.active());
        line.show("  8-ablations: 3/60 끝남 · base/0 120/2000 · heads-1/0 40/2000");
        line.show("short");
        line.clear();
    }
    const std::string out = drain(master);
    CHECK(out.find("short") != std::string::npos);
    CHECK(widest_drawn(out) <= 39);  // one column short of the width: no wrap
    CHECK(out.substr(out.size() - 4) == "\r\033[K");  // cleared at the end
    // A progress line on a file or a pipe draws nothing at all.
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    {
        term::ProgressLine piped(fds[1]);
        CHECK_FALSE(piped.active());
        piped.show("nothing");
        piped.clear();
    }
    ::close(fds[1]);
    char byte;
    CHECK(::read(fds[0], &byte, 1) == 0);
    ::close(fds[0]);
    // And a program's: 8-ablations with stdout in a file and stderr on a 40-column terminal.
    const std::string log = "/tmp/transformer-test-progress-" + std::to_string(::getpid());
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        ::dup2(slave, 2);
        ::close(master);
        const std::string cmd = testutil::program_command("8-ablations") +
                                " --only heads --runs nb-4,nb-1 --seeds 1 "
                                "--scale 0.05 --no-figures >" + log;
        ::execl("/bin/sh", "sh", "-c", cmd.c_str(), (char*)nullptr);
        ::_exit(127);
    }
    ::close(slave);
    std::string drawn;
    int status = 0;
    while (::waitpid(pid, &status, WNOHANG) == 0)
        drawn += drain(master);
    drawn += drain(master);
    ::close(master);
    std::remove(log.c_str());
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    CHECK(drawn.find("8-ablations: ") != std::string::npos);
    CHECK(widest_drawn(drawn) <= 39);
}

TEST_CASE("terminal: every progress line of the project is a term::ProgressLine") {
    // A line drawn by hand ("\r...") takes no width into account; ProgressLine does.
    for (const char* dir : {"chapters", "bench", "common"})
        for (const auto& e :
             std::filesystem::recursive_directory_iterator(std::string(PROJECT_ROOT) + "/" + dir)) {
            const std::string path = e.path().string();
            const bool drawer = path.find("common/program/terminal.cpp") != std::string::npos;
            if (!e.is_regular_file() || drawer) continue;
            if (e.path().extension() != ".cpp" && e.path().extension() != ".h") continue;
            const std::string text = testutil::read_file_abs(path);
            CHECK_MESSAGE(text.find("\"\\r\\033[K") == std::string::npos, path);
            CHECK_MESSAGE(text.find("\"\\rbench") == std::string::npos, path);
        }
}
