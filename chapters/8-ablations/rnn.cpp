// The previous article's model (see rnn.h).
#include "chapters/8-ablations/rnn.h"

#include <cmath>
#include <limits>

#include "common/random.h"

namespace ablations {

using translate::Batch;

namespace {

// torch.nn.LSTM's initial weights: every entry uniform in [-1/sqrt(H), 1/sqrt(H)).
Tensor lstm_weight(const Shape& shape, int H) {
    std::vector<float> w = torch_rng::rand(size_t(numel_of(shape)));
    const float k = 1.0f / std::sqrt(float(H));
    for (float& x : w)
        x = (2 * x - 1) * k;
    return Tensor::from(w, shape).requires_grad_();
}

// Each sentence's length: its tokens before the padding. src (B, S); returns (B).
std::vector<int64_t> lengths(const std::vector<int64_t>& src, int64_t B, int64_t S) {
    std::vector<int64_t> L(size_t(B), 0);
    for (int64_t i = 0; i < B; i++)
        while (L[size_t(i)] < S && src[size_t(i * S + L[size_t(i)])] != translate::SRC_PAD)
            L[size_t(i)]++;
    return L;
}

// The source ids each sentence reversed, its padding left at the end: what the backward LSTM
// reads. src (B, S), L (B); returns (B, S).
std::vector<int64_t> reversed_sources(const std::vector<int64_t>& src,
                                      const std::vector<int64_t>& L, int64_t S) {
    std::vector<int64_t> rev(src.size(), translate::SRC_PAD);
    for (size_t i = 0; i < L.size(); i++)
        for (int64_t t = 0; t < L[i]; t++)
            rev[i * size_t(S) + size_t(t)] = src[i * size_t(S) + size_t(L[i] - 1 - t)];
    return rev;
}

}  // namespace

RNNsearch::RNNsearch(int H)
    : H(H),
      src_embed(translate::SRC_VOCAB, H),
      tgt_embed(translate::TGT_VOCAB, H),
      enc_W_ih{lstm_weight({4 * H, H}, H), lstm_weight({4 * H, H}, H)},
      enc_W_hh{lstm_weight({4 * H, H}, H), lstm_weight({4 * H, H}, H)},
      enc_b{lstm_weight({4 * H}, H), lstm_weight({4 * H}, H)},
      W_s(H, H),
      W_a(H, H, false),
      U_a(2 * H, H),
      v(H, 1, false),
      cell_x(3 * H, 4 * H),
      cell_h(H, 4 * H, false),
      W_o(4 * H, translate::TGT_VOCAB) {}

RNNsearch::Encoded RNNsearch::encode(const std::vector<int64_t>& src, int64_t B, int64_t S) const {
    // Both directions read (S, B, H), time first, as the lstm op takes it.
    auto run = [&](int dir, const std::vector<int64_t>& ids) {
        Tensor x = permute(src_embed(ids, {B, S}), {1, 0, 2});  // (S, B, H)
        return lstm(x, enc_W_ih[dir], enc_W_hh[dir], enc_b[dir]);  // (S, B, H)
    };
    const std::vector<int64_t> L = lengths(src, B, S);      // (B)
    Tensor fwd = run(0, src);                                 // (S, B, H): →h_j at row j
    Tensor bwd_rev = run(1, reversed_sources(src, L, S));     // (S, B, H): ←h at step t
    // Step t of sentence i's backward pass read position L_i - 1 - t: put it back at its
    // position (the padding's rows take the padding's steps; the scores never read them).
    std::vector<int64_t> at(size_t(S * B));
    for (int64_t i = 0; i < B; i++)
        for (int64_t j = 0; j < S; j++) {
            const int64_t Li = L[size_t(i)];
            at[size_t(j * B + i)] = (j < Li ? Li - 1 - j : j) * B + i;
        }
    Tensor bwd = reshape(index_select(reshape(bwd_rev, {S * B, H}), at), {S, B, H});  // ←h_j
    Encoded e;
    e.annotations = permute(concat({fwd, bwd}, 2), {1, 0, 2});  // (B, S, 2H)
    e.keys = U_a(e.annotations);                                // (B, S, H)
    e.mask = reshape(translate::padding_mask(src, {B, S}, translate::SRC_PAD), {B, 1, S});
    e.s0 = tanh(W_s(select(bwd, 0)));  // (B, H): ←h_1 has read the whole sentence
    return e;
}

Tensor RNNsearch::step(const Encoded& e, const std::vector<int64_t>& y_prev, Tensor& s, Tensor& m,
                       Tensor* alpha) const {
    const int64_t B = e.annotations.size(0), S = e.annotations.size(1);
    Tensor y = tgt_embed(y_prev, {B});  // (B, H)
    // e_tj = v^T tanh(W_a s_{t-1} + U_a h_j), padding masked
    Tensor scores = v(tanh(e.keys + unsqueeze(W_a(s), 1)));  // (B, S, 1)
    scores = masked_fill(reshape(scores, {B, 1, S}), e.mask,
                         -std::numeric_limits<float>::infinity());
    Tensor a = softmax(scores, -1);                                         // (B, 1, S)
    Tensor c = reshape(matmul(a, e.annotations), {B, 2 * int64_t(H)});      // (B, 2H)
    // the decoder's LSTM cell, torch's equations and gate order i, f, g, o
    Tensor gates = cell_x(concat({y, c}, 1)) + cell_h(s);  // (B, 4H)
    Tensor i = sigmoid(slice(gates, 1, 0, H)), f = sigmoid(slice(gates, 1, H, 2 * H));
    Tensor g = tanh(slice(gates, 1, 2 * H, 3 * H)), o = sigmoid(slice(gates, 1, 3 * H, 4 * H));
    m = f * m + i * g;  // (B, H) the cell
    s = o * tanh(m);    // (B, H)
    if (alpha) *alpha = a;
    return W_o(concat({s, c, y}, 1));  // (B, V)
}

void RNNsearch::collect_parameters(const std::string& prefix, NamedTensors& out) const {
    src_embed.collect_parameters(join_name(prefix, "src_embed"), out);
    tgt_embed.collect_parameters(join_name(prefix, "tgt_embed"), out);
    for (int dir = 0; dir < 2; dir++) {
        const std::string name = join_name(prefix, dir == 0 ? "encoder_fwd" : "encoder_bwd");
        out.push_back({join_name(name, "W_ih"), enc_W_ih[dir]});
        out.push_back({join_name(name, "W_hh"), enc_W_hh[dir]});
        out.push_back({join_name(name, "b"), enc_b[dir]});
    }
    W_s.collect_parameters(join_name(prefix, "W_s"), out);
    W_a.collect_parameters(join_name(prefix, "W_a"), out);
    U_a.collect_parameters(join_name(prefix, "U_a"), out);
    v.collect_parameters(join_name(prefix, "v"), out);
    cell_x.collect_parameters(join_name(prefix, "cell_x"), out);
    cell_h.collect_parameters(join_name(prefix, "cell_h"), out);
    W_o.collect_parameters(join_name(prefix, "W_o"), out);
}

Tensor rnn_batch_loss(const RNNsearch& model, const Batch& b) {
    const RNNsearch::Encoded e = model.encode(b.src, b.B, b.S);
    Tensor s = e.s0, m = Tensor::zeros({b.B, int64_t(model.H)});
    std::vector<Tensor> logits;  // T of (B, 1, V)
    for (int64_t t = 0; t < b.T; t++) {
        std::vector<int64_t> y_prev(size_t(b.B));  // column t of the decoder input: y_{t-1}
        for (int64_t i = 0; i < b.B; i++) y_prev[size_t(i)] = b.tgt_in[size_t(i * b.T + t)];
        logits.push_back(unsqueeze(model.step(e, y_prev, s, m), 1));
    }
    Tensor all = concat(logits, 1);  // (B, T, V)
    return cross_entropy(reshape(all, {b.B * b.T, translate::TGT_VOCAB}), b.tgt_out,
                         translate::IGNORE);
}

std::vector<std::vector<int64_t>> rnn_greedy_decode(const RNNsearch& model,
                                                    const std::vector<int64_t>& numbers) {
    NoGradGuard no_grad;
    const Batch b = translate::make_batch(numbers, false);
    const RNNsearch::Encoded e = model.encode(b.src, b.B, b.S);
    Tensor s = e.s0, m = Tensor::zeros({b.B, int64_t(model.H)});
    std::vector<int64_t> y(size_t(b.B), translate::BOS);  // (B) the previous token
    std::vector<std::vector<int64_t>> out(size_t(b.B));
    std::vector<bool> done(size_t(b.B), false);
    for (int t = 0; t < translate::MAX_DIGITS + 1; t++) {
        Tensor logits = model.step(e, y, s, m);  // (B, V)
        for (int64_t i = 0; i < b.B; i++) {
            const int64_t best = EncoderDecoder::most_likely(
                logits.data() + i * translate::TGT_VOCAB, translate::TGT_VOCAB);
            y[size_t(i)] = best;  // a finished sentence goes on; what it writes is not kept
            if (done[size_t(i)]) continue;
            out[size_t(i)].push_back(best);
            done[size_t(i)] = best == translate::EOS;
        }
    }
    return out;
}

double rnn_exact_match(const RNNsearch& model, const std::vector<int64_t>& numbers) {
    return translate::score(numbers, rnn_greedy_decode(model, numbers)).percent(numbers.size());
}

}  // namespace ablations
