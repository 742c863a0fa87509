// Chapter 7's task (see task.h).
#include "chapters/7-translate/task.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

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

Tensor padding_mask(const std::vector<int64_t>& ids, const Shape& shape, int64_t pad) {
    if (shape.size() != 2 || numel_of(shape) != int64_t(ids.size()))
        throw std::invalid_argument("padding_mask: " + std::to_string(ids.size()) +
                                    " ids do not fill a (B, S) shape " + shape_str(shape));
    Tensor m = Tensor::zeros({shape[0], 1, 1, shape[1]});  // (B, 1, 1, S)
    for (size_t i = 0; i < ids.size(); i++)
        m.data()[i] = ids[i] == pad ? 1.0f : 0.0f;
    return m;
}

Tensor batch_loss(const EncoderDecoder& model, const Batch& b) {
    Tensor memory = model.encode(b.src, {b.B, b.S}, b.src_mask);             // (B, S, d)
    Tensor logits = model.decode(b.tgt_in, {b.B, b.T}, memory, b.src_mask);  // (B, T, V)
    return cross_entropy(reshape(logits, {b.B * b.T, TGT_VOCAB}), b.tgt_out, IGNORE);
}

std::vector<std::vector<int64_t>> greedy_decode_batch(const EncoderDecoder& model,
                                                      const std::vector<int64_t>& src,
                                                      const Shape& src_shape,
                                                      const Tensor& src_pad_mask, int64_t start,
                                                      int64_t end, int max_len, int64_t pad) {
    NoGradGuard no_grad;
    const int64_t B = src_shape.at(0);
    Tensor memory = model.encode(src, src_shape, src_pad_mask);  // (B, S, d), once per batch
    std::vector<int64_t> tokens(size_t(B), start);               // (B, t) row-major, t = 1 so far
    std::vector<std::vector<int64_t>> out(static_cast<size_t>(B));
    std::vector<bool> done(size_t(B), false);
    int64_t remaining = B;
    for (int64_t t = 1; t <= max_len && remaining > 0; t++) {
        Tensor logits = model.decode(tokens, {B, t}, memory, src_pad_mask);  // (B, t, V)
        const int64_t V = logits.size(-1);
        std::vector<int64_t> next(size_t(B), pad);
        for (int64_t b = 0; b < B; b++) {
            if (done[b]) continue;
            const float* last = logits.data() + (b * t + t - 1) * V;  // the newest position
            const int64_t best = EncoderDecoder::most_likely(last, V);
            next[b] = best;
            out[b].push_back(best);
            if (best == end) {
                done[b] = true;
                remaining--;
            }
        }
        // Append the new column: (B, t) -> (B, t + 1).
        std::vector<int64_t> grown;
        grown.reserve(size_t(B * (t + 1)));
        for (int64_t b = 0; b < B; b++) {
            grown.insert(grown.end(), tokens.begin() + b * t, tokens.begin() + (b + 1) * t);
            grown.push_back(next[b]);
        }
        tokens.swap(grown);
    }
    return out;
}

std::vector<std::vector<int64_t>> greedy_decode_batch(const EncoderDecoder& model,
                                                      const std::vector<int64_t>& numbers) {
    Batch b = make_batch(numbers, false);
    return greedy_decode_batch(model, b.src, {b.B, b.S}, b.src_mask, BOS, EOS, MAX_DIGITS + 1,
                               TGT_PAD);
}

void shuffle_numbers(std::vector<int64_t>& v, torch_rng::Generator& g) {
    for (size_t i = v.size(); i-- > 1;)
        std::swap(v[i], v[g.random64() % (i + 1)]);
}

Split split_numbers() {
    std::vector<int64_t> numbers(kn::MAX_VALUE);
    std::iota(numbers.begin(), numbers.end(), 1);
    torch_rng::Generator g(HELDOUT_SEED);
    shuffle_numbers(numbers, g);
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
