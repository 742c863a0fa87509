// The flashcard program's logic, kept out of chapters/flashcards/main.cpp so the tests can
// reach it: the Markdown deck, the progress file, the Leitner schedule, and the screen layout.
//
//   cards::Deck deck = cards::load_deck("chapters/flashcards/deck.md");   // throws cards::Error
//   cards::Progress p = cards::load_progress(path);                       // missing file: empty
//   cards::Session s(deck, p);          s.apply(cards::Action::Flip);      s.apply(Rate3);
//   cards::save_progress(path, s.progress);                               // temp + fsync + rename
//   cards::Frame f = cards::render(s, 80, 24, /*unicode=*/true);          // 24 lines, 80 columns
//
// Every error a person can cause (a malformed deck, a corrupt or unreadable progress file, a
// progress file that cannot be written) is a cards::Error whose message is one line that starts
// with "file:line:" (or "file:") and ends with the fix.
#pragma once
#include <array>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace term {
struct Key;
}

namespace cards {

struct Error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// ---- the deck -----------------------------------------------------------------------------

struct Card {
    int number = 0;        // from the heading "## 7. ..."; the card's key in the progress file
    std::string question;  // the heading text, plus any "> " lines right below it
    std::string answer;    // one entry per source line, joined by '\n' (blank lines kept)
    std::string demo;      // the closing "실습: ..." line without the label
    int line = 0;          // line of the heading in the deck file
};

struct Deck {
    std::string path;
    std::vector<Card> cards;
};

// Deck format (Markdown): anything before the first "## " heading is an introduction.
//   ## 7. question text              <- cards are numbered 1, 2, 3, ... in order
//   > more question text (optional)
//   answer lines (each line is shown as its own line; "- " items hang; blank lines kept)
//   실습: `make ch4` ...             <- required: the card's last line says where to see it
Deck parse_deck(std::string_view text, const std::string& path);
Deck load_deck(const std::string& path);

// Inline Markdown the terminal does not render: `code` and **bold** lose their markers.
std::string plain_text(std::string_view markdown);

// ---- ratings and the Leitner schedule -----------------------------------------------------

enum class Rating { Easy = 1, Medium = 2, Hard = 3 };  // the keys 1 / 2 / 3
const char* rating_name(Rating r);                      // 쉬움 / 보통 / 어려움
bool parse_rating_name(std::string_view s, Rating& out);

// Leitner boxes 1..5. 어려움 puts a card in box 1, 보통 in box 2, 쉬움 moves it one box up
// (at least to box 3, at most box 5). A card in box b comes back 2^(b-1) sessions after the
// session it was rated in: box 1 the next session, then 2, 4, 8, 16 sessions later.
constexpr int kBoxes = 5;
int next_box(int box, Rating r);  // box 0: never rated
int interval(int box);            // sessions until a card in `box` is due again

struct CardState {
    int box = 0;                 // 1..kBoxes once rated
    Rating last = Rating::Hard;  // the latest rating
    int rated_in = 0;            // the session of the latest rating (1, 2, ...)
    int reviews = 0;             // how many times it was rated
};
inline int due_in(const CardState& s) { return s.rated_in + interval(s.box); }

// ---- the progress file --------------------------------------------------------------------

struct Progress {
    int session = 0;                  // the last session in which something was rated
    std::map<int, CardState> cards;   // by card number; numbers the deck lacks are kept as is
};

// Text format (tab-separated, UTF-8):
//   # transformer-cards progress v1
//   session<TAB>3
//   card<TAB>box<TAB>rating<TAB>session<TAB>reviews
//   7<TAB>1<TAB>어려움<TAB>3<TAB>2
// Further lines starting with '#' and blank lines are ignored.
Progress parse_progress(std::string_view text, const std::string& path);
std::string format_progress(const Progress& p);
// A missing file is an empty Progress; an unreadable or corrupt one throws (and is not touched).
Progress load_progress(const std::string& path);
// Writes path.tmp.<pid>, fsyncs it, renames it over path and fsyncs the folder: a crash leaves
// either the old file or the new one. Creates missing parent folders, keeps the file's mode and
// a symlink's link, and refuses a file without its owner's write bit. Throws Error on failure.
void save_progress(const std::string& path, const Progress& p);
// Saves one rating: re-reads the file under a lock on its folder and replaces only `card` with
// mine's, so two programs reviewing at once keep each other's ratings. Returns what it wrote.
Progress save_rating(const std::string& path, const Progress& mine, int card);
// Throws the Error a save would, before a session starts: a read-only progress file, or a
// folder that is not one or cannot be written.
void check_writable(const std::string& path);
// $XDG_STATE_HOME/transformer-cards/progress.tsv, else ~/.local/state/transformer-cards/...
std::string default_progress_path();

// Records a rating made in `session` (also raises p.session to it).
void rate(Progress& p, int card, Rating r, int session);

// ---- a session ----------------------------------------------------------------------------

// The order of a session: due cards (lowest box first, then the longest overdue, then by
// number), then new cards in deck order, then the rest as previews (soonest due first).
// `today` counts the due and new ones. Deterministic: no randomness anywhere.
struct Plan {
    std::vector<int> order;  // indices into deck.cards
    int today = 0;
};
Plan plan_session(const Deck& deck, const Progress& p, int session);

struct Counts {
    int seen = 0;                      // deck cards rated at least once
    int easy = 0, medium = 0, hard = 0;  // by latest rating
    std::array<int, kBoxes + 1> box{};   // box[b]: deck cards in box b (box[0]: new)
    int due = 0;                       // rated deck cards due in `session`
};
Counts count(const Deck& deck, const Progress& p, int session);

// What `--stats` prints.
std::string stats_text(const Deck& deck, const Progress& p, const std::string& progress_path);

enum class Action { None, Flip, Rate1, Rate2, Rate3, Next, Prev, ScrollUp, ScrollDown, Quit };

// The parsing of one line of stdin when it is not a terminal ("space", "enter", "1", "right",
// " ", "" ...). Returns false for an unknown line.
bool parse_line_key(std::string_view line, Action& out);

struct Session {
    Session(const Deck& deck, Progress progress);

    // Applies one action; returns true when the progress changed (the caller saves it).
    bool apply(Action a);
    const Card& card() const { return deck.cards[size_t(plan.order[pos])]; }
    bool done_today() const;

    const Deck& deck;
    Progress progress;
    int session;             // the session this run belongs to: progress.session + 1
    Plan plan;
    size_t pos = 0;          // index into plan.order
    bool flipped = false;    // the answer is showing
    int scroll = 0;          // first content line shown in the card box
    int rated = 0;           // ratings made in this run
    int last_rated = 0;      // the card number the latest rating was for (what to save)
    std::set<int> rated_now; // card numbers rated in this run
    std::string message;     // the status line after the last action

private:
    void advance();
    // A card rated twice in one run: the second rating replaces the first, so the box moves
    // from where it stood before this session (repeated 쉬움 cannot skip boxes).
    std::map<int, std::pair<bool, CardState>> before_;  // card -> (had a state, that state)
};

// ---- the screen ---------------------------------------------------------------------------

struct Hit {
    int row, col0, col1;  // 0-based row, columns [col0, col1)
    Action action;
};

struct Frame {
    std::vector<std::string> lines;  // every line exactly `width` display columns
    std::vector<Hit> hits;           // where a mouse click does what
    int max_scroll = 0;              // content lines hidden below a full card box
};

// height > 0: exactly `height` lines (the card box scrolls); height == 0: as tall as the card
// needs, without the key-help rows (the plain frames printed when stdin is not a terminal).
// unicode: box drawing and block characters; otherwise ASCII only.
Frame render(Session& s, int width, int height, bool unicode);

// The action at a click on column x, row y (1-based, as the terminal reports them).
Action hit_test(const Frame& f, int x, int y);

// The full-screen key map: a key, mouse click or wheel step on the screen `frame` -> an action.
Action action_for(const term::Key& key, const Frame& frame);

}  // namespace cards
