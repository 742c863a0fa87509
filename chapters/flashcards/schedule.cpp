// The Leitner rule of schedule.h.
#include "chapters/flashcards/schedule.h"

#include <algorithm>

namespace cards {

const char* rating_name(Rating r) {
    switch (r) {
        case Rating::Easy: return "쉬움";
        case Rating::Medium: return "보통";
        case Rating::Hard: return "어려움";
    }
    return "?";
}

bool parse_rating_name(std::string_view s, Rating& out) {
    for (Rating r : {Rating::Easy, Rating::Medium, Rating::Hard})
        if (s == rating_name(r)) {
            out = r;
            return true;
        }
    return false;
}

int next_box(int box, Rating r) {
    switch (r) {
        case Rating::Hard: return 1;
        case Rating::Medium: return 2;
        case Rating::Easy:
            return std::clamp(box + 1, 3, BOXES);
    }
    return 1;
}

int interval(int box) { return 1 << (std::clamp(box, 1, BOXES) - 1); }

void rate(Progress& p, int card, Rating r, int session) {
    CardState& s = p.cards[card];
    s.box = next_box(s.box, r);
    s.last = r;
    s.rated_in = session;
    s.reviews = s.reviews < MAX_REVIEWS ? s.reviews + 1 : MAX_REVIEWS;
    p.session = std::max(p.session, session);
}

}  // namespace cards
