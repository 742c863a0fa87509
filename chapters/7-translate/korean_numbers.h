// Sino-Korean number words, the source language of chapter 7's tiny translation task:
//   to_words(3201) == "삼천이백일",  to_words(15000) == "만오천",  to_words(10001) == "만일"
// The usual reading rules: the digit 일 is not said before 십, 백, 천 or 만 (십, not 일십;
// 만, not 일만), zero digits are silent, and the places are 만 (10^4), 천, 백, 십, then units.
// The task covers 1 ... 99999; 십만 (100000) and above are out of range.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace korean_numbers {

constexpr int64_t MAX_VALUE = 99999;

// The words for n in 1 ... MAX_VALUE; throws std::out_of_range naming n otherwise.
std::string to_words(int64_t n);

// The inverse of to_words: "만오천" -> 15000. Throws std::invalid_argument naming the text if it
// is not a well-formed reading (unknown syllable, a place twice or out of order, "일십", ...).
int64_t from_words(const std::string& words);

// UTF-8 text split into characters (one Hangul syllable each): "만오천" -> {"만", "오", "천"}.
// Throws std::invalid_argument on malformed UTF-8.
std::vector<std::string> syllables(const std::string& text);

// The 13 syllables the words use, in a fixed order: 일 이 삼 사 오 육 칠 팔 구 십 백 천 만.
const std::vector<std::string>& syllable_set();

}  // namespace korean_numbers
