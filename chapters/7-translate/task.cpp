// Chapter 7's task (see task.h).
#include "chapters/7-translate/task.h"

#include <algorithm>
#include <numeric>

#include "chapters/7-translate/korean_numbers.h"
#include "common/random.h"

namespace translate {

namespace kn = korean_numbers;

namespace {

constexpr uint64_t HELDOUT_SEED = 2017;  // fixed, so every run is scored on the same numbers

}  // namespace

std::vector<int64_t> source_ids(int64_t n) {
    std::vector<int64_t> ids;
    const auto& set = kn::syllable_set();
    for (const std::string& s : kn::syllables(kn::to_words(n)))
        ids.push_back(1 + (std::find(set.begin(), set.end(), s) - set.begin()));
    return ids;
}

std::vector<int64_t> target_ids(int64_t n) {
    std::vector<int64_t> ids;
    for (char c : std::to_string(n))
        ids.push_back(DIGIT0 + (c - '0'));
    return ids;
}

std::string target_text(const std::vector<int64_t>& ids) {
    std::string s;
    for (int64_t t : ids) {
        if (t == EOS) break;
        s += t >= DIGIT0 ? std::string(1, char('0' + t - DIGIT0)) : t == BOS ? "<시작>" : "<pad>";
    }
    return s;
}

Batch make_batch(const std::vector<int64_t>& numbers, bool with_targets) {
    Batch b;
    b.B = int64_t(numbers.size());
    std::vector<std::vector<int64_t>> srcs, tgts;
    for (int64_t n : numbers) {
        srcs.push_back(source_ids(n));
        tgts.push_back(target_ids(n));
        b.S = std::max(b.S, int64_t(srcs.back().size()));
        b.T = std::max(b.T, int64_t(tgts.back().size()) + 1);
    }
    b.src.assign(size_t(b.B * b.S), SRC_PAD);
    if (with_targets) {
        b.tgt_in.assign(size_t(b.B * b.T), TGT_PAD);
        b.tgt_out.assign(size_t(b.B * b.T), IGNORE);
    }
    for (int64_t i = 0; i < b.B; i++) {
        const auto &s = srcs[i], &t = tgts[i];
        std::copy(s.begin(), s.end(), b.src.begin() + i * b.S);
        b.tokens += int64_t(s.size());
        if (!with_targets) continue;
        b.tgt_in[i * b.T] = BOS;  // shifted right: position k reads d_k, predicts d_{k+1}
        for (size_t k = 0; k < t.size(); k++) {
            b.tgt_in[i * b.T + 1 + k] = t[k];
            b.tgt_out[i * b.T + k] = t[k];
        }
        b.tgt_out[i * b.T + t.size()] = EOS;
        b.tokens += int64_t(t.size()) + 1;
    }
    b.src_mask = padding_mask(b.src, {b.B, b.S}, SRC_PAD);
    return b;
}

Tensor batch_loss(const EncoderDecoder& model, const Batch& b) {
    Tensor memory = model.encode(b.src, {b.B, b.S}, b.src_mask);             // (B, S, d)
    Tensor logits = model.decode(b.tgt_in, {b.B, b.T}, memory, b.src_mask);  // (B, T, V)
    return cross_entropy(reshape(logits, {b.B * b.T, TGT_VOCAB}), b.tgt_out, IGNORE);
}

std::vector<std::vector<int64_t>> greedy_decode_batch(const EncoderDecoder& model,
                                                      const std::vector<int64_t>& numbers) {
    Batch b = make_batch(numbers, false);
    return model.greedy_decode_batch(b.src, {b.B, b.S}, b.src_mask, BOS, EOS, MAX_DIGITS + 1,
                                     TGT_PAD);
}

Split split_numbers() {
    std::vector<int64_t> numbers(kn::MAX_VALUE);
    std::iota(numbers.begin(), numbers.end(), 1);
    torch_rng::Generator g(HELDOUT_SEED);
    for (size_t i = numbers.size(); i-- > 1;)
        std::swap(numbers[i], numbers[g.random64() % (i + 1)]);
    return {{numbers.begin(), numbers.begin() + HELDOUT},
            {numbers.begin() + HELDOUT, numbers.end()}};
}

bool exact(int64_t n, const std::vector<int64_t>& predicted) {
    std::vector<int64_t> want = target_ids(n);
    want.push_back(EOS);
    return predicted.size() >= want.size() &&
           std::equal(want.begin(), want.end(), predicted.begin());
}

Score score(const std::vector<int64_t>& numbers, const std::vector<std::vector<int64_t>>& preds) {
    Score s;
    for (size_t i = 0; i < numbers.size(); i++) {
        if (exact(numbers[i], preds[i]))
            s.correct++;
        else
            s.wrong.push_back(i);
    }
    return s;
}

}  // namespace translate
