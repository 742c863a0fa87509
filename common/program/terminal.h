// Terminal text: display width of UTF-8 (our own wcwidth, so Hangul lines up whatever the
// locale says), word wrapping by display width, key and mouse decoding, raw mode with the
// alternate screen that is always restored (on exit, Ctrl-C, SIGTERM, SIGHUP, Ctrl-Z), and the
// pieces a full-screen program's loop is made of (the flashcards and chapter 1's --live).
//
//   term::display_width("한국어 abc") == 10     // a Hangul syllable takes two columns
//   term::wrap("긴 답 ...", 40)                 // lines of at most 40 columns
//   term::Raw raw; raw.enter(/*mouse=*/true);   // ... raw.leave() (also done by the destructor)
//   term::KeyReader keys; keys.next(key);       // one key, mouse click or resize at a time
//   term::Screen screen; screen.draw(lines, spans, rows, cols);  // styled lines, top left
//   term::key_loop(screen, draw, on_key);      // draw, a key, draw ... until on_key says stop
#pragma once
#include <functional>
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

// `s` padded with spaces on the right (pad_right) or on the left (pad_left) to `width` columns,
// never cut: a wider `s` comes back as it is. For the tables the chapters print, where a Hangul
// syllable takes two columns and printf's %-10s would count its three bytes.
std::string pad_right(std::string_view s, int width);
std::string pad_left(std::string_view s, int width);

// The first of `texts` (widest first) that fits `width` columns, padded to exactly `width`;
// the last one cut to fit when none does. For a help line that shortens on a narrow screen.
std::string fit_first(const std::vector<std::string_view>& texts, int width);

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

// Rows and columns of the terminal on `fd` (80x24 if it cannot be asked): the terminal a
// program draws on, fd 1 for a screen, fd 2 for a progress line.
void window_size(int& rows, int& cols, int fd = 1);

// One updating line of progress on `fd` (stderr) while it is a terminal, and nothing at all when
// it is a file or a pipe: each show() replaces the last, cut to the width of the terminal it is
// drawn on (not stdout's, which is often a log), clear() erases it. Every progress line of the
// project is one of these.
class ProgressLine {
public:
    explicit ProgressLine(int fd = 2);
    bool active() const { return active_; }
    void show(std::string_view line);
    void clear();

private:
    int fd_;
    bool active_;
    bool shown_ = false;
};

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

    // Set by the signal handlers; the loop clears it after redrawing.
    static bool take_resized();  // SIGWINCH or SIGCONT arrived since the last call

private:
    bool active_ = false;
};

// ---- full-screen programs -----------------------------------------------------------------

// True when stdin and stdout are terminals and $TERM is set and not "dumb", so escape codes
// work. Otherwise a program reads one key per line and prints each screen as plain text.
bool full_screen_possible();

// The width of those plain screens: 80 columns for a pipe or a file (the same text on every
// machine), the terminal's width when stdout is one.
int plain_width();

// Lines as plain text: each without its trailing blanks and ending in '\n'.
std::string plain_text(const std::vector<std::string>& lines);

// s as it may be echoed in an error message: control characters and invalid UTF-8 become '?',
// and it is cut (at a code point) to at most max_width columns.
std::string printable(std::string_view s, int max_width);

// A style over the display columns [col0, col1) of one row (0-based): SGR parameters such as
// "1" (bold), "2" (faint), "7" (reverse), "38;5;231;48;5;25" (256-colour foreground and
// background) or "38;2;255;255;255;48;2;8;48;107" (true colour).
struct Span {
    int row, col0, col1;
    std::string sgr;
};

// The line of `row` with the escape codes of that row's spans inserted at their columns; the
// style is reset where each span ends. Spans of one row must not overlap.
std::string styled(std::string_view line, const std::vector<Span>& spans, int row);

// Draws whole frames in raw mode: line r at row r + 1 from column 1, styled. The screen is
// cleared first when (rows, cols) differ from the last frame's, or after invalidate().
class Screen {
public:
    void draw(const std::vector<std::string>& lines, const std::vector<Span>& spans, int rows,
              int cols);
    void invalidate() { rows_ = cols_ = 0; }

private:
    int rows_ = 0, cols_ = 0;
};

// Keys from stdin in raw mode, one at a time.
class KeyReader {
public:
    enum class Event {
        Key,      // `key` holds a key or a mouse report
        Resized,  // the window changed size (SIGWINCH), or came back after Ctrl-Z and fg
        End,      // stdin closed: the terminal went away
    };
    // Blocks until one of the three. A lone ESC becomes KeyKind::Escape when no byte follows
    // within 50 ms (an arrow's sequence arrives at once); a longer sequence cut short becomes
    // KeyKind::Unknown.
    Event next(Key& key);
    // Bytes already read wait: more keys follow without blocking (draw after the last one).
    bool pending() const { return !buf_.empty(); }

private:
    std::string buf_;
};

// A place on a drawn screen that a click acts on: columns [col0, col1) of a 0-based row.
template <class Action>
struct Hit {
    int row, col0, col1;
    Action action;
};

// The action of the hit under a click at column x, row y (1-based, as the terminal reports
// them), or `none` where there is none.
template <class Action>
Action hit_test(const std::vector<Hit<Action>>& hits, int x, int y, Action none) {
    for (const Hit<Action>& h : hits)
        if (h.row == y - 1 && x - 1 >= h.col0 && x - 1 < h.col1) return h.action;
    return none;
}

// The loop of a full-screen program, in raw mode: draw(), then each key to on_key until it
// returns false or stdin closes. A resize clears the screen and draws it again; after a key it
// is drawn again only when no more keys are waiting (keys typed ahead are all taken first).
void key_loop(Screen& screen, const std::function<void()>& draw,
              const std::function<bool(const Key&)>& on_key);

}  // namespace term
