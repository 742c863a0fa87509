// Section 5's decoder, the prose after the listing computed: the causal mask, encoder-decoder
// attention, the decoder block, the whole encoder-decoder with teacher forcing, and greedy
// generation. Read blocks.h first; the definitions are in decoder.cpp.
//
// What the article says, and where it is here:
//   - the decoder must not see the answer ahead: its self-attention takes section 1's
//     causal_mask (the widget's toggle), in EncoderDecoder::decode;
//   - queries from the decoder, keys and values from the encoder: CrossAttention;
//   - the decoder's input is the target sentence, not the encoder's output, and every decoder
//     layer reads the same top encoder output (`memory`), so the encoder runs once per sentence:
//     EncoderDecoder::encode / decode;
//   - training feeds the whole right answer at once (teacher forcing): decode on the full target;
//   - generation starts from the start token and appends one token per decoder run:
//     greedy_decode, which takes the most likely token.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "chapters/5-blocks/blocks.h"
#include "common/nn.h"
#include "common/tensor.h"

// Encoder-decoder attention: queries from the decoder, keys and values from the encoder's top
// output (`memory`), the same memory for every decoder layer. Built like section 3's module,
// with the key and value projections on the memory side, and one call of section 1's attention
// for every head at once.
struct CrossAttention : Module {
    int h, d_head;
    Linear q, kv, proj;         // W_Q (d, d); W_K and W_V stacked (2d, d); W_O (d, d)
    CrossAttention(int d_model, int n_heads);
    // x (B, T, D) from the decoder, memory (B, S, D) from the encoder; memory_mask hides padding
    // keys (broadcast to (B, h, T, S)) and may be undefined. Returns (B, T, D).
    Tensor operator()(const Tensor& x, const Tensor& memory,
                      const Tensor& memory_mask = Tensor()) const;
    void collect_parameters(const std::string& prefix, NamedTensors& out) const override;
};

// One decoder block: causal self-attention over the target so far, encoder-decoder attention on
// the encoder's top output, then the feed-forward net; each with residual + LayerNorm, placed as
// in Block.
struct DecoderBlock : Module {
    LnPlacement placement;
    MultiHeadAttention self_attn;
    CrossAttention cross_attn;
    FeedForward ff;
    LayerNorm ln1, ln2, ln3;
    DecoderBlock(int d, int h, LnPlacement p);
    // x (B, T, d), memory (B, S, d); self_mask (T, T) causal, memory_mask (B, 1, 1, S) or none.
    Tensor operator()(const Tensor& x, const Tensor& memory, const Tensor& self_mask,
                      const Tensor& memory_mask = Tensor()) const;
    void collect_parameters(const std::string& prefix, NamedTensors& out) const override;
};

// The whole encoder-decoder: token embeddings (scaled by sqrt(d_model), as in the paper) plus
// section 4's sinusoidal positions, N encoder blocks, N decoder blocks, and the output head.
struct EncoderDecoder : Module {
    int d_model, n_heads;
    LnPlacement placement;
    Embedding src_embed, tgt_embed;
    std::vector<std::unique_ptr<Block>> encoder;
    std::vector<std::unique_ptr<DecoderBlock>> decoder;
    std::unique_ptr<LayerNorm> enc_norm, dec_norm;  // Pre-LN only
    Linear head;
    mutable int encoder_calls = 0;  // how often encode() ran (generation runs it once)
    mutable int decoder_calls = 0;  // how often decode() ran (generation: once per token)

    EncoderDecoder(int src_vocab, int tgt_vocab, int d_model, int n_heads, int layers,
                   LnPlacement p);
    // Token vectors scaled by sqrt(d_model) plus each position's vector: ids (B, T) -> (B, T, d).
    Tensor embed(const Embedding& tokens, const std::vector<int64_t>& ids,
                 const Shape& shape) const;
    // The position vectors embed adds to the vectors of `tokens` (src_embed or tgt_embed) at
    // positions 0..T-1, (T, d): section 4's sinusoids, the same for source and target. Virtual,
    // so that a model that takes its position vectors from elsewhere overrides this alone.
    virtual Tensor position_vectors(const Embedding& tokens, int64_t T) const;
    // src ids (B, S) -> memory (B, S, d). src_pad_mask (B, 1, 1, S) hides padding keys.
    Tensor encode(const std::vector<int64_t>& src, const Shape& src_shape,
                  const Tensor& src_pad_mask = Tensor()) const;
    // tgt ids (B, T) (teacher forcing: the whole target at once) -> logits (B, T, tgt_vocab).
    Tensor decode(const std::vector<int64_t>& tgt, const Shape& tgt_shape, const Tensor& memory,
                  const Tensor& src_pad_mask = Tensor()) const;
    // The greedy choice from one position's logits (V floats): the most likely token, the first
    // of equal ones (torch.argmax's choice).
    static int64_t most_likely(const float* logits, int64_t V);
    // Greedy generation for one sentence: the encoder runs once, the decoder once per token,
    // starting from `start` until `end` or max_len tokens. Returns the tokens after `start`.
    std::vector<int64_t> greedy_decode(const std::vector<int64_t>& src, int64_t start, int64_t end,
                                       int max_len) const;
    void collect_parameters(const std::string& prefix, NamedTensors& out) const override;
};
