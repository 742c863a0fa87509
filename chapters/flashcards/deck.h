// The deck: chapters/flashcards/deck.md, a Markdown file, parsed into cards, each with a
// question, an answer and the `make` target where the project shows it.
#pragma once
#include "chapters/flashcards/text.h"  // cards::Error

#include <string>
#include <string_view>
#include <vector>

namespace cards {

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

}  // namespace cards
