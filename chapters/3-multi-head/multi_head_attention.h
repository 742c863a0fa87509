// Section 3's listing: MultiHeadAttention, line for line.
//
//   MultiHead(X) = Concat(head_1, ..., head_h) W_O
//   head_i = Attention(X W_Q^(i), X W_K^(i), X W_V^(i))
//
// Q, K and V come out of one Linear (qkv: W_Q, W_K and W_V stacked) and are split into h heads
// of d_head = d_model / h dims by a reshape; one call of section 1's attention runs every head at
// once; the heads are put back side by side (the concat) and mixed by W_O (proj).
//
// Section 5 reuses it unchanged ("3절의 MultiHeadAttention과 같은 코드이며 print문만
// 주석 처리했습니다"): there print_shapes stays false, the article's commented-out prints.
#pragma once
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <utility>

#include "chapters/1-self-attention/attention.h"
#include "common/nn.h"
#include "common/tensor.h"

struct MultiHeadAttention : Module {
    int h, d_head;
    Linear qkv;   // W_Q, W_K, W_V stacked: (3 d_model, d_model)
    Linear proj;  // W_O: (d_model, d_model)
    bool print_shapes = false;  // the listing's three print lines (section 3 turns them on)

    // self.h = n_heads; self.d_head = d_model // n_heads
    // self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
    // self.proj = nn.Linear(d_model, d_model, bias=False)
    MultiHeadAttention(int d_model, int n_heads)
        : h(check_heads(d_model, n_heads)),
          d_head(d_model / n_heads),
          qkv(d_model, 3 * d_model, false),
          proj(d_model, d_model, false) {}

    Tensor operator()(const Tensor& x, const Tensor& mask = Tensor()) const {
        const int64_t B = x.size(0), N = x.size(1), D = x.size(2);  // x: (B, N, D)
        Tensor qkv5 = reshape(qkv(x), {B, N, 3, h, d_head});        // (B, N, 3, h, d_head)
        qkv5 = permute(qkv5, {2, 0, 3, 1, 4});                       // (3, B, h, N, d_head)
        Tensor q = select(qkv5, 0), k = select(qkv5, 1), v = select(qkv5, 2);  // (B, h, N, d_head)
        if (print_shapes) std::printf("  헤드 분할 후 q: %s\n", shape_str(q.shape()).c_str());
        auto [o, a] = scaled_dot_product_attention(q, k, v, mask);  // (B, h, N, d_head)
        if (print_shapes) std::printf("  어텐션 행렬 : %s\n", shape_str(a.shape()).c_str());
        o = reshape(transpose(o, 1, 2), {B, N, D});  // concat: head i's d_head dims side by side
        if (print_shapes) std::printf("  concat 결과 : %s\n", shape_str(o.shape()).c_str());
        return proj(o);  // W_O mixes what the heads found
    }

    void collect_parameters(const std::string& prefix, NamedTensors& out) const override {
        qkv.collect_parameters(join_name(prefix, "qkv"), out);
        proj.collect_parameters(join_name(prefix, "proj"), out);
    }

    // d_model must split into n_heads equal heads; returns n_heads.
    static int check_heads(int d_model, int n_heads) {
        if (n_heads < 1 || d_model % n_heads != 0)
            throw std::invalid_argument("MultiHeadAttention: d_model " + std::to_string(d_model) +
                                        " is not divisible by n_heads " +
                                        std::to_string(n_heads));
        return n_heads;
    }
};
