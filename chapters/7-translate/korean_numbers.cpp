#include "chapters/7-translate/korean_numbers.h"

#include "common/program/terminal.h"

#include <stdexcept>

namespace korean_numbers {

namespace {
const char* const DIGIT_WORDS[10] = {"", "일", "이", "삼", "사", "오", "육", "칠", "팔", "구"};
// Places from the highest down: 10^4, 10^3, 10^2, 10^1.
const char* const PLACE_WORDS[4] = {"만", "천", "백", "십"};
const int64_t PLACE_VALUES[4] = {10000, 1000, 100, 10};
}  // namespace

std::string to_words(int64_t n) {
    if (n < 1 || n > MAX_VALUE)
        throw std::out_of_range("to_words: " + std::to_string(n) + " is outside 1 ... " +
                                std::to_string(MAX_VALUE));
    std::string out;
    for (int p = 0; p < 4; p++) {
        int64_t d = n / PLACE_VALUES[p] % 10;
        if (d == 0) continue;              // a zero digit is not read
        if (d > 1) out += DIGIT_WORDS[d];  // 이천, but 천 (never 일천)
        out += PLACE_WORDS[p];
    }
    out += DIGIT_WORDS[n % 10];  // the units digit is always read, 일 included
    return out;
}

std::vector<std::string> syllables(const std::string& text) {
    std::vector<std::string> out;
    for (size_t i = 0; i < text.size();) {
        const size_t at = i;
        char32_t c;
        if (!term::decode_utf8(text, i, c))
            throw std::invalid_argument("syllables: malformed UTF-8 at byte " + std::to_string(at) +
                                        " of \"" + text + "\"");
        out.push_back(text.substr(at, i - at));
    }
    return out;
}

const std::vector<std::string>& syllable_set() {
    static const std::vector<std::string> set = {"일", "이", "삼", "사", "오", "육", "칠",
                                                 "팔", "구", "십", "백", "천", "만"};
    return set;
}

int64_t from_words(const std::string& words) {
    auto bad = [&](const std::string& why) {
        return std::invalid_argument("from_words: \"" + words + "\" " + why);
    };
    int64_t total = 0;
    int64_t pending = 0;   // a digit read but not yet attached to a place (0: none)
    int last_place = -1;   // index into PLACE_VALUES of the last place read
    for (const std::string& s : syllables(words)) {
        int digit = 0, place = -1;
        for (int d = 1; d <= 9; d++)
            if (s == DIGIT_WORDS[d]) digit = d;
        for (int p = 0; p < 4; p++)
            if (s == PLACE_WORDS[p]) place = p;
        if (digit) {
            if (pending) throw bad("has two digits in a row");
            pending = digit;
        } else if (place >= 0) {
            if (place <= last_place) throw bad("repeats a place or has them out of order");
            if (pending == 1) throw bad("says 일 before " + s + " (read " + s + " alone)");
            total += (pending ? pending : 1) * PLACE_VALUES[place];
            pending = 0;
            last_place = place;
        } else {
            throw bad("has the syllable " + s + ", not a number word");
        }
    }
    if (total == 0 && pending == 0) throw bad("is empty");
    return total + pending;
}

}  // namespace korean_numbers
