// Ratings and the Leitner schedule: the box a rating puts a card in, how many sessions later a
// card in a box comes back, and what is known of every card (cards::Progress).
#pragma once
#include <map>
#include <string_view>

namespace cards {

enum class Rating { Easy = 1, Medium = 2, Hard = 3 };  // the keys 1 / 2 / 3
const char* rating_name(Rating r);                      // 쉬움 / 보통 / 어려움
bool parse_rating_name(std::string_view s, Rating& out);

// Leitner boxes 1..5. 어려움 puts a card in box 1, 보통 in box 2, 쉬움 moves it one box up
// (at least to box 3, at most box 5). A card in box b comes back 2^(b-1) sessions after the
// session it was rated in: box 1 the next session, then 2, 4, 8, 16 sessions later.
constexpr int BOXES = 5;
int next_box(int box, Rating r);  // box 0: never rated
int interval(int box);            // sessions until a card in `box` is due again

struct CardState {
    int box = 0;                 // 1..BOXES once rated
    Rating last = Rating::Hard;  // the latest rating
    int rated_in = 0;            // the session of the latest rating (1, 2, ...)
    int reviews = 0;             // how many times it was rated (at most MAX_REVIEWS)
};
inline int due_in(const CardState& s) { return s.rated_in + interval(s.box); }

// The progress file holds numbers of at most 9 digits. The counts stop there: a session after
// session MAX_SESSION is numbered MAX_SESSION again, and a card rated MAX_REVIEWS times keeps
// that count, so nothing the program saves is a file it would refuse to read.
constexpr int MAX_SESSION = 999'999'999;
constexpr int MAX_REVIEWS = 999'999'999;
inline int next_session(int last) { return last < MAX_SESSION ? last + 1 : MAX_SESSION; }

// What is known of every card; progress.h saves it as the progress file.
struct Progress {
    int session = 0;                  // the last session in which something was rated
    std::map<int, CardState> cards;   // by card number; numbers the deck lacks are kept as is
};

// Records a rating made in `session` (also raises p.session to it).
void rate(Progress& p, int card, Rating r, int session);

}  // namespace cards
