// The previous article's model, for the article's opening claim: attention on top of RNNs
// ("번역 성능에서 기존 모델을 앞질렀고, 학습 시간은 오히려 크게 줄었습니다"). Bahdanau, Cho and
// Bengio's RNNsearch (2015), its recurrences LSTMs, on chapter 7's task:
//
//   encoder   a bidirectional LSTM over the source's embeddings (common's lstm op, both ways);
//             each position's annotation h_j = [→h_j ; ←h_j], 2H wide
//   decoder   s_0 = tanh(W_s ←h_1), the backward LSTM's state after reading the whole source;
//             then at each step t, from the previous state s_{t-1} and token y_{t-1}:
//               e_tj = v^T tanh(W_a s_{t-1} + U_a h_j)       alignment scores (padding masked)
//               α_t = softmax_j(e_t),  c_t = Σ_j α_tj h_j     the context
//               s_t = LSTMCell([y_{t-1} ; c_t], s_{t-1})       the recurrence
//               logits_t = W_o [s_t ; c_t ; y_{t-1}]
//
// The decoder cannot run its steps at once as the Transformer's does under its causal mask:
// s_t needs c_t, which needs s_{t-1}. Training is teacher-forced (y_{t-1} is the true previous
// token), generation greedy, as for chapter 7's model.
#pragma once
#include <cstdint>
#include <vector>

#include "chapters/7-translate/task.h"
#include "common/nn.h"

namespace ablations {

// The hidden width that gives this model about the parameters of chapter 7's (2 + 2 blocks,
// d_model 64), and not fewer: 36 H^2 + 94 H + 13 parameters, 237,933 at H = 80 against the
// Transformer's 234,765 (H = 79 gives 232,115).
constexpr int RNN_HIDDEN = 80;

struct RNNsearch : Module {
    const int H;  // every LSTM's hidden width; embeddings are H wide too
    Embedding src_embed, tgt_embed;  // (SRC_VOCAB, H), (TGT_VOCAB, H)
    // The encoder's two LSTMs, forward [0] and backward [1]: W_ih, W_hh (4H, H), b (4H).
    Tensor enc_W_ih[2], enc_W_hh[2], enc_b[2];
    Linear W_s;     // (H, H): s_0 from ←h_1
    Linear W_a;     // (H, H), no bias: the previous state's part of the score
    Linear U_a;     // (H, 2H): the annotations' part, computed once per sentence
    Linear v;       // (1, H), no bias
    Linear cell_x;  // (4H, H + 2H): the decoder LSTM's input weights and its bias
    Linear cell_h;  // (4H, H), no bias: its recurrent weights
    Linear W_o;     // (TGT_VOCAB, H + 2H + H)

    explicit RNNsearch(int H = RNN_HIDDEN);

    // What the decoder reads of a batch of sources, src (B, S) padded with SRC_PAD.
    struct Encoded {
        Tensor annotations;  // (B, S, 2H)
        Tensor keys;         // (B, S, H): U_a h_j
        Tensor mask;         // (B, 1, S): 1 where the source position is padding
        Tensor s0;           // (B, H)
    };
    Encoded encode(const std::vector<int64_t>& src, int64_t B, int64_t S) const;

    // One decoder step: the previous token's ids (B), the state (s, m) (B, H) each, updated in
    // place; returns the step's logits (B, TGT_VOCAB). `alpha`, when given, receives α_t
    // (B, 1, S).
    Tensor step(const Encoded& e, const std::vector<int64_t>& y_prev, Tensor& s, Tensor& m,
                Tensor* alpha = nullptr) const;

    void collect_parameters(const std::string& prefix, NamedTensors& out) const override;
};

// Teacher forcing: the mean cross-entropy over the batch's real target tokens, as
// translate::batch_loss for chapter 7's model.
Tensor rnn_batch_loss(const RNNsearch& model, const translate::Batch& b);

// Greedy generation of every number at once: each sentence's tokens after <시작>, through <끝>
// (at most MAX_DIGITS + 1), as translate::greedy_decode_batch.
std::vector<std::vector<int64_t>> rnn_greedy_decode(const RNNsearch& model,
                                                    const std::vector<int64_t>& numbers);

// Exact match on `numbers` in percent.
double rnn_exact_match(const RNNsearch& model, const std::vector<int64_t>& numbers);

}  // namespace ablations
