// common/program/terminal's pieces for full-screen programs that the flashcards and chapter 1's
// --live share: styled spans at display columns, the plain text of the line mode, echoing a bad
// line, the help line that shortens, and the key reader over a pipe. (Width, wrapping and keys:
// tests/test_flashcards.cpp; the screen on a real pty: the pty sessions of both programs.)
#include "common/program/terminal.h"
#include "tests/util.h"

#include <fcntl.h>

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
