// Parsing the deck: every mistake in deck.md is reported as file:line with the fix.
#include "chapters/flashcards/deck.h"

#include "common/program/cli.h"
#include "common/program/terminal.h"

#include <algorithm>
#include <cstdio>

namespace cards {

namespace {

bool starts_with(std::string_view s, std::string_view prefix) {
    return s.substr(0, prefix.size()) == prefix;
}

// Finds the first control character in s (tabs allowed when tab_ok), NUL included: a NUL
// would end the line early wherever the text meets a C string.
bool control_char(std::string_view s, bool tab_ok, char32_t& found) {
    size_t i = 0;
    char32_t c;
    while (i < s.size()) {
        term::decode_utf8(s, i, c);
        if (c == '\t' && tab_ok) continue;
        if (c == 0 || term::codepoint_width(c) < 0) {
            found = c;
            return true;
        }
    }
    return false;
}

std::string hex(char32_t c) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "U+%04X", unsigned(c));
    return buf;
}

}  // namespace

std::string plain_text(std::string_view md) {
    std::string out;
    for (size_t i = 0; i < md.size(); i++) {
        if (md[i] == '`') continue;
        if (md[i] == '*' && i + 1 < md.size() && md[i + 1] == '*') {
            i++;
            continue;
        }
        out += md[i];
    }
    return out;
}

Deck parse_deck(std::string_view text, const std::string& path) {
    Deck deck;
    deck.path = path;
    if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // some editors write a BOM
    std::vector<std::string_view> lines = split_lines(text);

    struct Pending {
        Card card;
        std::vector<std::pair<int, std::string>> answer;  // (line number, text)
        bool in_question = true;
    };
    std::vector<Pending> pending;

    auto finish = [&](Pending& p) {
        Card& c = p.card;
        auto& a = p.answer;
        while (!a.empty() && trim(a.back().second).empty()) a.pop_back();
        while (!a.empty() && trim(a.front().second).empty()) a.erase(a.begin());
        std::string num = std::to_string(c.number);
        if (a.empty())
            throw Error(at(path, c.line) + "card " + num +
                        " has no answer; write it below the heading and end it with "
                        "'실습: `make chN`'");
        std::string_view last = trim(a.back().second);
        if (!starts_with(last, "실습:"))
            throw Error(at(path, a.back().first) + "card " + num +
                        " must end with a line '실습: `make chN` ...' saying where the project "
                        "shows it");
        c.demo = std::string(trim(last.substr(std::string_view("실습:").size())));
        if (c.demo.find("make ") == std::string::npos)
            throw Error(at(path, a.back().first) + "card " + num +
                        ": the 실습 line names no make target; write e.g. '실습: `make ch4`'");
        a.pop_back();
        while (!a.empty() && trim(a.back().second).empty()) a.pop_back();
        if (a.empty())
            throw Error(at(path, c.line) + "card " + num +
                        " has no answer above its 실습 line; write the answer there");
        bool blank_before = false;
        for (auto& [ln, s] : a) {
            bool blank = trim(s).empty();
            if (blank && blank_before) continue;  // runs of blank lines show as one
            if (!c.answer.empty() || blank_before) c.answer += '\n';
            if (!blank) {
                size_t end = s.find_last_not_of(' ');
                c.answer += s.substr(0, end + 1);
            }
            blank_before = blank;
        }
        deck.cards.push_back(c);
    };

    for (size_t k = 0; k < lines.size(); k++) {
        int ln = int(k) + 1;
        std::string_view raw = lines[k];
        if (!term::valid_utf8(raw))
            throw Error(at(path, ln) + "invalid UTF-8; save the deck as UTF-8");
        if (char32_t c; control_char(raw, true, c))
            throw Error(at(path, ln) + "control character " + hex(c) + "; remove it");
        // Tabs become spaces so that every column is counted the same way on screen.
        std::string line;
        for (char ch : raw) line += ch == '\t' ? std::string("    ") : std::string(1, ch);

        if (starts_with(line, "##") && !starts_with(line, "###") && !starts_with(line, "## "))
            throw Error(at(path, ln) + "a card heading needs a space: '## 7. question'");
        if (starts_with(line, "## ")) {
            if (!pending.empty()) finish(pending.back());
            std::string_view h = trim(std::string_view(line).substr(3));
            size_t dot = h.find('.');
            int number = 0;
            if (dot == std::string_view::npos || !parse_nonneg(h.substr(0, dot), number) ||
                (dot + 1 < h.size() && h[dot + 1] != ' '))
                throw Error(at(path, ln) + "a card heading must look like '## 7. question', got " +
                            cli::quote(h, 60));
            int expected = int(pending.size()) + 1;
            if (number != expected)
                throw Error(at(path, ln) + "card number " + std::to_string(number) + " where " +
                            std::to_string(expected) +
                            " was expected; number the cards 1, 2, 3, ... in order");
            std::string_view q = trim(h.substr(dot + 1));
            if (q.empty())
                throw Error(at(path, ln) + "card " + std::to_string(number) +
                            " has an empty question; write it after '## " +
                            std::to_string(number) + ".'");
            Pending p;
            p.card.number = number;
            p.card.question = std::string(q);
            p.card.line = ln;
            pending.push_back(std::move(p));
            continue;
        }
        if (pending.empty()) continue;  // the introduction
        if (starts_with(line, "#"))
            throw Error(at(path, ln) +
                        "only card headings ('## 7. question') may start with '#' after the "
                        "first card; remove the '#'");
        Pending& p = pending.back();
        if (p.in_question && (line == ">" || starts_with(line, "> "))) {
            std::string_view more = trim(std::string_view(line).substr(1));
            p.card.question += "\n" + std::string(more);
            continue;
        }
        p.in_question = false;
        p.answer.emplace_back(ln, line);
    }
    if (!pending.empty()) finish(pending.back());
    if (deck.cards.empty())
        throw Error(at(path, std::max<int>(1, int(lines.size()))) +
                    "no cards; a card starts with a line '## 1. question'");
    return deck;
}

Deck load_deck(const std::string& path) {
    bool missing;
    std::string error;
    std::string text = read_whole(path, missing, error);
    if (!error.empty())
        throw Error(path + ": cannot read the deck: " + error +
                    (missing ? "; run from the project root or pass --deck FILE"
                             : "; pass the Markdown deck to --deck FILE"));
    return parse_deck(text, path);
}

}  // namespace cards
