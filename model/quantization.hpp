#pragma once
// QLoRA: the base model's nn.Linear weights kept by bitsandbytes as 4-bit NF4 while LoRA adapters train
// (transformers' BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4"), docs/method.md, "QLoRA").
// One place for what the storage costs and what each call of a quantized layer does; memory, step features and
// launches read it. The mechanics, with the library code they were read from, are in docs/method.md ("QLoRA"):
//   * storage: two weights a byte, one fp32 absmax per block of 64 (Params4bit's blocksize, which transformers does
//     not change); with double quantization (bnb_4bit_use_double_quant) the absmax is itself quantized to 8 bits
//     in blocks of 256, each with an fp32 scale;
//   * which modules: every nn.Linear (replace_with_bnb_linear) but the output head (get_keys_to_not_convert); the
//     embedding, norms and transformers 5's stacked experts (not nn.Linear) stay in the weights' dtype;
//   * a training call (more than one row, grad required): MatMul4Bit dequantizes the whole weight to the compute
//     dtype (dequantize_4bit; with double quantization dequantize_blockwise of the absmax and the offset's add
//     first), then a plain GEMM; its backward dequantizes again for the input gradient and computes no weight
//     gradient (the base is frozen). So each call reads the packed weight and writes a bf16 copy, every forward,
//     recompute and backward;
//   * peft's 4-bit LoRA layer clones the base layer's output before adding the adapter's.
#include <cstdint>
#include <string>
#include <vector>

#include "model/modules.hpp"

namespace stepcast::model {

enum class BaseQuant : uint8_t {
  none,
  nf4,         // bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=False
  nf4_double,  // the QLoRA paper's recipe: NF4 with double quantization
};

// "none", "nf4", "nf4-double-quant": the CLI's and the scenario's words, every one of them in base_quant_names().
std::string base_quant_name(BaseQuant q);
std::vector<std::string> base_quant_names();

// The dtype each call dequantizes into, bytes a weight: bnb_4bit_compute_dtype bfloat16 (float16 the same).
inline constexpr int64_t kDequantComputeBytes = 2;
// Throws InputError naming the choices for anything else.
BaseQuant parse_base_quant(const std::string& name, const std::string& where);

// Whether bitsandbytes replaces this module with a 4-bit Linear4bit: an nn.Linear of the decoder (LoRA-able linears
// and routers), never the output head, the embedding, norms or stacked experts.
bool quantized(const Module& m, BaseQuant q);

// Bytes a quantized weight of `params` elements keeps: 0.5 a weight packed, plus the absmax (4 bytes per 64, or with
// double quantization 1 byte per 64 and 4 per 256 x 64).
double quantized_weight_bytes(double params, BaseQuant q);

// Bytes one dequantization moves for `params` weights into the compute dtype (`compute_bytes` a weight): the packed
// weight and its absmax read, the dense copy written. The GEMM then reads that copy as it would a bf16 weight.
double dequant_bytes(double params, BaseQuant q, int64_t compute_bytes);

// Kernels one dequantization launches: dequantize_4bit, and with double quantization dequantize_blockwise of the
// absmax and the offset's add before it.
int dequant_launches(BaseQuant q);

}  // namespace stepcast::model
