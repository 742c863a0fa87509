// Section 5's listing: the position-wise feed-forward net, the block (Post-LN and Pre-LN side by
// side) and the stack of blocks, in the listing's order and names.
//
// A block is section 3's multi-head attention (tokens exchange information) then a feed-forward
// net (each token digests it on its own), each wrapped in a residual connection and a LayerNorm.
// Where the LayerNorm sits is the section's experiment:
//   Post-LN (the original paper):  x = LayerNorm(x + Sublayer(x))
//   Pre-LN  (Xiong et al. 2020):   x = x + Sublayer(LayerNorm(x))
// Modules are built in the listing's order (attn, ff, ln1, ln2), so after torch.manual_seed(0)
// the weights are torch's, digit for digit.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "chapters/3-multi-head/multi_head_attention.h"
#include "common/nn.h"
#include "common/tensor.h"

// FFN(x) = max(0, x W_1 + b_1) W_2 + b_2: d -> 4d -> d, the same weights at every position, and no
// position sees another (the article's "위치별"; a convolution with kernel size 1).
// nn.Sequential(nn.Linear(d, 4 * d), nn.ReLU(), nn.Linear(4 * d, d))
struct FeedForward : Module {
    Linear fc1, fc2;  // W_1 (4d, d) + b_1 (4d), W_2 (d, 4d) + b_2 (d)
    explicit FeedForward(int d) : fc1(d, 4 * d), fc2(4 * d, d) {}
    Tensor operator()(const Tensor& x) const { return fc2(relu(fc1(x))); }  // (..., d)
    void collect_parameters(const std::string& prefix, NamedTensors& out) const override {
        // nn.Sequential names them by position: ff.0 and ff.2 (the ReLU is ff.1).
        fc1.collect_parameters(join_name(prefix, "0"), out);
        fc2.collect_parameters(join_name(prefix, "2"), out);
    }
};

// Where the LayerNorm sits around each sublayer: the listing's `pre_ln` flag, named.
enum class LnPlacement { PostLN, PreLN };
inline const char* placement_name(LnPlacement p) {
    return p == LnPlacement::PreLN ? "Pre-LN" : "Post-LN";
}

// class Block(nn.Module):
//     def __init__(self, d, h, pre_ln):
//         self.attn = MultiHeadAttention(d, h)
//         self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.ReLU(), nn.Linear(4 * d, d))
//         self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
struct Block : Module {
    LnPlacement placement;
    MultiHeadAttention attn;  // section 3's module, its prints off
    FeedForward ff;
    LayerNorm ln1, ln2;

    Block(int d, int h, LnPlacement p) : placement(p), attn(d, h), ff(d), ln1(d), ln2(d) {}

    Tensor operator()(const Tensor& x_in, const Tensor& mask = Tensor()) const {  // (B, N, d)
        Tensor x = x_in;
        if (placement == LnPlacement::PreLN) {
            x = x + attn(ln1(x), mask);  // x = x + self.attn(self.ln1(x))
            x = x + ff(ln2(x));          // x = x + self.ff(self.ln2(x))
        } else {
            x = ln1(x + attn(x, mask));  // x = self.ln1(x + self.attn(x))
            x = ln2(x + ff(x));          // x = self.ln2(x + self.ff(x))
        }
        return x;
    }

    void collect_parameters(const std::string& prefix, NamedTensors& out) const override {
        attn.collect_parameters(join_name(prefix, "attn"), out);
        ff.collect_parameters(join_name(prefix, "ff"), out);
        ln1.collect_parameters(join_name(prefix, "ln1"), out);
        ln2.collect_parameters(join_name(prefix, "ln2"), out);
    }
};

// L blocks, each built in turn (so each draws its weights after the previous one's).
inline std::vector<std::unique_ptr<Block>> make_blocks(int L, int d, int h, LnPlacement p) {
    std::vector<std::unique_ptr<Block>> blocks;
    for (int i = 0; i < L; i++) blocks.push_back(std::make_unique<Block>(d, h, p));
    return blocks;
}

// class Stack(nn.Module):
//     def __init__(self, L, d, h, pre, vocab):
//         self.blocks = nn.ModuleList([Block(d, h, pre) for _ in range(L)])
//         self.lnf = nn.LayerNorm(d) if pre else nn.Identity()
//         self.head = nn.Linear(d, vocab)
struct Stack : Module {
    std::vector<std::unique_ptr<Block>> blocks;
    std::unique_ptr<LayerNorm> lnf;  // Pre-LN only (nn.Identity for Post-LN)
    Linear head;                     // (vocab, d) + (vocab)

    Stack(int L, int d, int h, LnPlacement p, int vocab)
        : blocks(make_blocks(L, d, h, p)),
          lnf(p == LnPlacement::PreLN ? std::make_unique<LayerNorm>(d) : nullptr),
          head(d, vocab) {}

    Tensor operator()(const Tensor& x_in) const {  // (B, N, d) -> logits (B, N, vocab)
        Tensor x = x_in;
        for (const auto& b : blocks) x = (*b)(x);  // for b in self.blocks: x = b(x)
        return head(lnf ? (*lnf)(x) : x);          // self.head(self.lnf(x))
    }

    void collect_parameters(const std::string& prefix, NamedTensors& out) const override {
        for (size_t i = 0; i < blocks.size(); i++)
            blocks[i]->collect_parameters(join_name(prefix, "blocks." + std::to_string(i)), out);
        if (lnf) lnf->collect_parameters(join_name(prefix, "lnf"), out);
        head.collect_parameters(join_name(prefix, "head"), out);
    }
};
