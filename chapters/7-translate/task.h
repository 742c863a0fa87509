// Chapter 7's task as data: Sino-Korean number words in, digits out. The vocabularies, a
// batch of sentences padded to the longest, the teacher-forced loss, greedy decoding of many
// numbers at once, the fixed held-out set and the exact-match score. Chapter 8 runs its
// experiments on the same task by including this header.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "chapters/5-blocks/decoder.h"
#include "common/random.h"
#include "common/tensor.h"

namespace translate {

// Source: 0 = padding, 1..13 = the syllables 일 이 삼 사 오 육 칠 팔 구 십 백 천 만.
// Target: 0 = padding, 1 = <시작>, 2 = <끝>, 3..12 = the digits 0..9.
constexpr int64_t SRC_PAD = 0, TGT_PAD = 0, BOS = 1, EOS = 2, DIGIT0 = 3;
constexpr int SRC_VOCAB = 14, TGT_VOCAB = 13;
constexpr int64_t IGNORE = -100;  // cross_entropy's ignore_index: padded targets
constexpr int MAX_DIGITS = 5;     // 99999
constexpr int HELDOUT = 1000;     // numbers kept out of training

std::vector<int64_t> source_ids(int64_t n);  // 삼천이백일 -> syllable ids
std::vector<int64_t> target_ids(int64_t n);  // 3201 -> digit ids (no <시작>, no <끝>)
std::string target_text(const std::vector<int64_t>& ids);  // digit ids -> "3201", stops at <끝>

// B sentences padded to the longest: src (B, S), its padding mask (B, 1, 1, S) that hides padded
// keys from every query of every head, decoder input (B, T) = <시작> d1..dk, targets d1..dk <끝>.
struct Batch {
    int64_t B = 0, S = 0, T = 0;
    std::vector<int64_t> src, tgt_in, tgt_out;  // (B, S), (B, T), (B, T)
    Tensor src_mask;                            // (B, 1, 1, S): 1 where the key is padding
    int64_t tokens = 0;  // real (non-padding) source and target tokens, for tokens/s
};
Batch make_batch(const std::vector<int64_t>& numbers, bool with_targets = true);

// The key-padding mask of a batch of sentences ids (B, S): (B, 1, 1, S), 1 where ids == pad, so
// it broadcasts over heads and queries and no query attends to a padding position.
Tensor padding_mask(const std::vector<int64_t>& ids, const Shape& shape, int64_t pad);

// Teacher forcing: the whole target in one pass; the mean cross-entropy over real tokens.
Tensor batch_loss(const EncoderDecoder& model, const Batch& b);

// Section 5's greedy generation (EncoderDecoder::greedy_decode) for B sentences at once: src
// (B, S) padded with `pad`, which src_pad_mask (B, 1, 1, S; see padding_mask) hides. The
// encoder runs once for the batch; each step runs the decoder on all B prefixes together, and a
// finished sentence is fed `pad`. Returns each sentence's tokens after `start`, through `end`
// (or max_len tokens if it never ends).
std::vector<std::vector<int64_t>> greedy_decode_batch(const EncoderDecoder& model,
                                                      const std::vector<int64_t>& src,
                                                      const Shape& src_shape,
                                                      const Tensor& src_pad_mask, int64_t start,
                                                      int64_t end, int max_len, int64_t pad = 0);
// That for every number at once: each sentence's tokens after <시작>, through <끝> (at most
// MAX_DIGITS + 1).
std::vector<std::vector<int64_t>> greedy_decode_batch(const EncoderDecoder& model,
                                                      const std::vector<int64_t>& numbers);

// Fisher-Yates, from the last element down: v[i] swaps with v[g.random64() % (i + 1)] for
// i = size - 1 .. 1. Every shuffle of chapters 7 and 8 is this one, so a seed names one order.
void shuffle_numbers(std::vector<int64_t>& v, torch_rng::Generator& g);

// The fixed split: a shuffle of 1..99999 under a constant seed; the first HELDOUT numbers are
// never trained on, whatever the training seed says.
struct Split {
    std::vector<int64_t> heldout, train;
};
Split split_numbers();

// Exact match: every digit, then <끝> (a missing end token is wrong too).
bool exact(int64_t n, const std::vector<int64_t>& predicted);
struct Score {
    int correct = 0;
    std::vector<size_t> wrong;  // indices into the numbers scored
    double percent(size_t total) const { return total ? 100.0 * correct / double(total) : 0; }
};
Score score(const std::vector<int64_t>& numbers, const std::vector<std::vector<int64_t>>& preds);

}  // namespace translate
