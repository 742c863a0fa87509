// Section 5's decoder (see decoder.h for what each piece computes of the article's prose).
#include "chapters/5-blocks/decoder.h"

#include <cmath>
#include <string>

#include "chapters/1-self-attention/attention.h"
#include "chapters/4-positional-encoding/positional_encoding.h"

// ---- encoder-decoder attention -----------------------------------------------------------------
CrossAttention::CrossAttention(int d_model, int n_heads)
    : h(MultiHeadAttention::check_heads(d_model, n_heads)),
      d_head(d_model / n_heads),
      q(d_model, d_model, false),
      kv(d_model, 2 * d_model, false),
      proj(d_model, d_model, false) {}

Tensor CrossAttention::operator()(const Tensor& x, const Tensor& memory,
                                  const Tensor& memory_mask) const {
    const int64_t B = x.size(0), T = x.size(1), D = x.size(2), S = memory.size(1);
    Tensor Q = permute(reshape(q(x), {B, T, h, d_head}), {0, 2, 1, 3});           // (B, h, T, dh)
    Tensor kv5 = permute(reshape(kv(memory), {B, S, 2, h, d_head}), {2, 0, 3, 1, 4});
    Tensor K = select(kv5, 0), V = select(kv5, 1);                                 // (B, h, S, dh)
    Tensor o = scaled_dot_product_attention(Q, K, V, memory_mask).first;           // (B, h, T, dh)
    return proj(reshape(transpose(o, 1, 2), {B, T, D}));
}

void CrossAttention::collect_parameters(const std::string& prefix, NamedTensors& out) const {
    q.collect_parameters(join_name(prefix, "q"), out);
    kv.collect_parameters(join_name(prefix, "kv"), out);
    proj.collect_parameters(join_name(prefix, "proj"), out);
}

// ---- the decoder block -------------------------------------------------------------------------
DecoderBlock::DecoderBlock(int d, int h, LnPlacement p)
    : placement(p), self_attn(d, h), cross_attn(d, h), ff(d), ln1(d), ln2(d), ln3(d) {}

Tensor DecoderBlock::operator()(const Tensor& x_in, const Tensor& memory, const Tensor& self_mask,
                                const Tensor& memory_mask) const {
    Tensor x = x_in;
    if (placement == LnPlacement::PreLN) {
        x = x + self_attn(ln1(x), self_mask);
        x = x + cross_attn(ln2(x), memory, memory_mask);
        x = x + ff(ln3(x));
    } else {
        x = ln1(x + self_attn(x, self_mask));
        x = ln2(x + cross_attn(x, memory, memory_mask));
        x = ln3(x + ff(x));
    }
    return x;
}

void DecoderBlock::collect_parameters(const std::string& prefix, NamedTensors& out) const {
    self_attn.collect_parameters(join_name(prefix, "self_attn"), out);
    cross_attn.collect_parameters(join_name(prefix, "cross_attn"), out);
    ff.collect_parameters(join_name(prefix, "ff"), out);
    ln1.collect_parameters(join_name(prefix, "ln1"), out);
    ln2.collect_parameters(join_name(prefix, "ln2"), out);
    ln3.collect_parameters(join_name(prefix, "ln3"), out);
}

// ---- the encoder-decoder -----------------------------------------------------------------------
EncoderDecoder::EncoderDecoder(int src_vocab, int tgt_vocab, int d, int h, int layers,
                               LnPlacement p)
    : d_model(d),
      n_heads(h),
      placement(p),
      src_embed(src_vocab, d),
      tgt_embed(tgt_vocab, d),
      encoder(make_blocks(layers, d, h, p)),
      head(d, tgt_vocab) {
    for (int i = 0; i < layers; i++) decoder.push_back(std::make_unique<DecoderBlock>(d, h, p));
    if (p == LnPlacement::PreLN) {
        enc_norm = std::make_unique<LayerNorm>(d);
        dec_norm = std::make_unique<LayerNorm>(d);
    }
}

Tensor EncoderDecoder::embed(const Embedding& tokens, const std::vector<int64_t>& ids,
                             const Shape& shape) const {
    Tensor x = tokens(ids, shape) * std::sqrt(float(d_model));  // (B, T, d)
    return x + position_vectors(tokens, shape.at(1));           // broadcast over the batch
}

Tensor EncoderDecoder::position_vectors(const Embedding&, int64_t T) const {
    return positional_encoding(T, d_model);  // (T, d), section 4's sinusoids
}

Tensor EncoderDecoder::encode(const std::vector<int64_t>& src, const Shape& src_shape,
                              const Tensor& src_pad_mask) const {
    encoder_calls++;
    Tensor x = embed(src_embed, src, src_shape);  // (B, S, d_model)
    for (const auto& b : encoder) x = (*b)(x, src_pad_mask);
    return enc_norm ? (*enc_norm)(x) : x;  // the encoder's top output, shared by every layer
}

Tensor EncoderDecoder::decode(const std::vector<int64_t>& tgt, const Shape& tgt_shape,
                              const Tensor& memory, const Tensor& src_pad_mask) const {
    decoder_calls++;
    Tensor x = embed(tgt_embed, tgt, tgt_shape);  // (B, T, d_model)
    Tensor mask = causal_mask(tgt_shape[1]);  // section 1's mask: position t sees targets 0..t
    for (const auto& b : decoder) x = (*b)(x, memory, mask, src_pad_mask);
    return head(dec_norm ? (*dec_norm)(x) : x);
}

// ---- generation: one token per decoder run ---------------------------------------------------
int64_t EncoderDecoder::most_likely(const float* logits, int64_t V) {
    int64_t best = 0;
    for (int64_t j = 1; j < V; j++)
        if (logits[j] > logits[best]) best = j;
    return best;
}

std::vector<int64_t> EncoderDecoder::greedy_decode(const std::vector<int64_t>& src, int64_t start,
                                                   int64_t end, int max_len) const {
    NoGradGuard no_grad;
    Tensor memory = encode(src, {1, int64_t(src.size())});  // (1, S, d_model), once a sentence
    std::vector<int64_t> tokens{start};
    while (int(tokens.size()) <= max_len) {
        // Feed everything generated so far; only the last position's prediction is new.
        Tensor logits = decode(tokens, {1, int64_t(tokens.size())}, memory);  // (1, t, V)
        const int64_t V = logits.size(-1);
        const float* last = logits.data() + (int64_t(tokens.size()) - 1) * V;
        const int64_t best = most_likely(last, V);
        tokens.push_back(best);
        if (best == end) break;
    }
    return {tokens.begin() + 1, tokens.end()};
}

void EncoderDecoder::collect_parameters(const std::string& prefix, NamedTensors& out) const {
    src_embed.collect_parameters(join_name(prefix, "src_embed"), out);
    tgt_embed.collect_parameters(join_name(prefix, "tgt_embed"), out);
    for (size_t i = 0; i < encoder.size(); i++)
        encoder[i]->collect_parameters(join_name(prefix, "encoder." + std::to_string(i)), out);
    for (size_t i = 0; i < decoder.size(); i++)
        decoder[i]->collect_parameters(join_name(prefix, "decoder." + std::to_string(i)), out);
    if (enc_norm) enc_norm->collect_parameters(join_name(prefix, "enc_norm"), out);
    if (dec_norm) dec_norm->collect_parameters(join_name(prefix, "dec_norm"), out);
    head.collect_parameters(join_name(prefix, "head"), out);
}
