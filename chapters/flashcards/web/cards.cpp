// The web page's deck (index.html, page.js) runs on this: the session, the schedule and the
// progress format of chapters/flashcards, compiled to WebAssembly with deck.md built in. The
// page keeps the progress text in the browser's storage and hands it back when it opens; it
// sends the line mode's keys ("space", "1", "right") and draws the view each call returns.
#include <memory>

#include "chapters/1-self-attention/web/json.h"
#include "chapters/flashcards/deck.h"
#include "chapters/flashcards/progress.h"
#include "chapters/flashcards/screen.h"
#include "chapters/flashcards/session.h"

namespace {

// Where the page keeps the progress, as messages name the file.
const std::string STORAGE = "localStorage['transformer-cards progress']";

std::unique_ptr<cards::Session> session;

const cards::Deck& deck() {
    static const cards::Deck d = cards::load_deck("chapters/flashcards/deck.md");
    return d;
}

// The screen's words, the card, and the progress text to save when `save`.
const char* view(bool save) {
    const cards::Session& s = *session;
    const cards::Texts t = cards::texts(s);
    const cards::Card& card = s.card();
    web::Fields f = {{"title", web::str(t.title)},
                     {"today", web::str(t.today)},
                     {"counts", web::str(t.counts)},
                     {"seen", std::to_string(cards::count(s.deck, s.progress, s.session).seen)},
                     {"cards", std::to_string(s.deck.cards.size())},
                     {"label", web::str(t.label)},
                     {"question", web::str(cards::plain_text(card.question))},
                     {"flipped", web::boolean(s.flipped)},
                     {"answer", web::str(cards::plain_text(card.answer))},
                     {"demo", web::str(cards::plain_text(card.demo))},
                     {"status", web::str(t.status)}};
    if (save) f.push_back({"progress", web::str(cards::format_progress(s.progress))});
    return web::answer(web::object(f));
}

}  // namespace

// Starts a session, as a run of the terminal program does, on the saved progress text (null:
// none yet), or with `reset` on an empty progress, as --reset does (then saved). A corrupt text
// gives {"error": the message naming its line}; the page shows it and leaves the text alone.
extern "C" const char* cards_open(const char* progress, int reset) {
    try {
        cards::Progress p;
        if (progress && !reset) p = cards::parse_progress(progress, STORAGE);
        session = std::make_unique<cards::Session>(deck(), p);
        return view(reset);
    } catch (const cards::Error& e) {
        session.reset();
        return web::answer(web::object({{"error", web::str(e.what())}}));
    }
}

// Applies one line-mode key (an unknown one changes nothing); after a rating the view holds
// the progress text to save.
extern "C" const char* cards_key(const char* key) {
    cards::Action a = cards::Action::None;
    cards::parse_line_key(key, a);
    const bool rated = session->apply(a);
    return view(rated);
}
