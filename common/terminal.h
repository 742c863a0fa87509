// Terminal text: display width of UTF-8 (our own wcwidth, so Hangul lines up whatever the
// locale says), word wrapping by display width, key and mouse decoding, and raw mode with the
// alternate screen that is always restored (on exit, Ctrl-C, SIGTERM, SIGHUP, Ctrl-Z).
//
//   term::display_width("한국어 abc") == 10     // a Hangul syllable takes two columns
//   term::wrap("긴 답 ...", 40)                 // lines of at most 40 columns
//   term::Raw raw; raw.enter(/*mouse=*/true);   // ... raw.leave() (also done by the destructor)
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace term {

// ---- text width ---------------------------------------------------------------------------

// Columns a code point takes in a terminal: 2 for Hangul, CJK and wide emoji, 0 for combining
// marks, conjoining jamo vowels/finals and zero-width characters, -1 for control characters,
// 1 for everything else. East Asian "ambiguous" symbols (box drawing, arrows) count as 1, as
// in xterm, tmux, GNOME Terminal and the Linux console.
int codepoint_width(char32_t c);

// Decodes one code point at s[i] and advances i. Returns false on invalid UTF-8 (overlong,
// surrogate, truncated, > U+10FFFF); then i still advances by one byte.
bool decode_utf8(std::string_view s, size_t& i, char32_t& c);
bool valid_utf8(std::string_view s);

// Sum of codepoint_width over the string; control characters and bad bytes count as 1
// (they are never printed: callers reject them first).
int display_width(std::string_view s);

// Greedy word wrap: each '\n' in text starts a new line, lines break at spaces, a word wider
// than `width` is cut between code points, and every returned line has display_width <= width.
// A line starting with "- " (a list item) continues with a two-column hanging indent.
std::vector<std::string> wrap(std::string_view text, int width);

// Exactly `width` columns: padded with spaces, or cut (at a code point) with "…" at the end.
std::string fit(std::string_view s, int width);

// ---- keys ---------------------------------------------------------------------------------

enum class KeyKind { None, Char, Enter, Space, Left, Right, Up, Down, PageUp, PageDown, Home,
                     End, Escape, CtrlC, CtrlD, Mouse, Unknown };

struct Key {
    KeyKind kind = KeyKind::None;
    char32_t ch = 0;      // for Char
    int x = 0, y = 0;     // for Mouse: 1-based column and row
    int button = 0;       // for Mouse: 0 left, 1 middle, 2 right, 64 wheel up, 65 wheel down
    bool press = false;   // for Mouse: true on press, false on release
};

// Decodes the first key in bytes read from a terminal in raw mode: plain characters (UTF-8),
// CSI / SS3 arrows, and SGR mouse reports "ESC [ < b ; x ; y M|m". Returns how many bytes it
// used, or 0 when buf ends inside an escape sequence (read more, or treat a lone ESC as Escape).
size_t parse_key(std::string_view buf, Key& out);

// ---- raw mode -----------------------------------------------------------------------------

// Rows and columns of the terminal on fd 1 (80x24 if it cannot be asked).
void window_size(int& rows, int& cols);

// Raw mode (no echo, byte at a time, Ctrl-C still raises SIGINT), alternate screen, hidden
// cursor and optionally SGR mouse reporting. Signal handlers put the terminal back before the
// process dies (SIGINT, SIGTERM, SIGHUP, SIGQUIT) or stops (SIGTSTP; re-entered on SIGCONT).
class Raw {
public:
    Raw() = default;
    ~Raw() { leave(); }
    Raw(const Raw&) = delete;
    Raw& operator=(const Raw&) = delete;

    // Throws std::runtime_error if stdin is not a terminal or termios refuses.
    void enter(bool mouse);
    void leave();
    bool active() const { return active_; }

    // Set by the signal handlers; the loop clears it after redrawing.
    static bool take_resized();  // SIGWINCH or SIGCONT arrived since the last call

private:
    bool active_ = false;
};

}  // namespace term
