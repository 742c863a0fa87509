// A session: the order the cards come in, what each key does to it (flip, rate, browse,
// scroll), and the counts behind the progress bar and --stats.
#pragma once
#include "chapters/flashcards/deck.h"
#include "chapters/flashcards/schedule.h"

#include <array>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cards {

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
    std::array<int, BOXES + 1> box{};    // box[b]: deck cards in box b (box[0]: new)
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
    int rated = 0;           // cards rated in this run
    int last_rated = 0;      // the card number the latest rating was for (what to save)
    // The cards rated in this run and this run's latest rating of each. What this run reports
    // as its own (the summary, a card's "평가함" tag) comes from here, not from `progress`: a
    // save merges the file's ratings in, another run's ratings of the same cards included.
    std::map<int, Rating> rated_now;
    std::string message;     // the status line after the last action

private:
    void advance();
    // A card rated twice in one run: the second rating replaces the first, so the box moves
    // from where it stood before this session (repeated 쉬움 cannot skip boxes).
    std::map<int, std::pair<bool, CardState>> before_;  // card -> (had a state, that state)
};

}  // namespace cards
