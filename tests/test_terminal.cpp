// common/terminal's pieces for full-screen programs that the flashcards and chapter 1's --live
// share: styled spans at display columns, the plain text of the line mode, echoing a bad line,
// and the help line that shortens. (Width, wrapping and keys: tests/test_flashcards.cpp; the
// key reader and the screen on a real pty: the pty sessions of both programs.)
#include "common/terminal.h"
#include "tests/util.h"

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
