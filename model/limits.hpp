#pragma once
// The upper bounds stepcast accepts on user sizes, declared once, and the checked arithmetic that keeps
// every integer product of them inside int64. Readers (io/, calibrate/records, the CLI flags) refuse a
// value beyond its bound with exit 2, so the cost model below never sees a size it cannot multiply.
//
// Each bound is far above any real single-GPU fine-tune (docs/reliability.md lists them with the
// largest published value they leave room for) and low enough that the products the model forms
// (tokens x hidden x layers, rows x width^2 x heads) stay finite in double and exact where they are
// integers. Header-only and at the bottom of the layers (docs/architecture.md), so every library reads the same
// bounds.
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>

namespace stepcast::limits {

inline constexpr int64_t kMaxLayers = 1024;                // Llama-3.1 405B: 126
inline constexpr int64_t kMaxHiddenSize = 1 << 17;         // 131072; Llama-3.1 405B: 16384
inline constexpr int64_t kMaxIntermediateSize = 1 << 20;   // 1048576; 405B: 53248
inline constexpr int64_t kMaxVocab = 1 << 24;              // 16.8 M; Gemma: 262144
inline constexpr int64_t kMaxHeads = 1024;                 // 405B: 128
inline constexpr int64_t kMaxHeadDim = 4096;               // Gemma-4 global layers: 512
inline constexpr int64_t kMaxExperts = 4096;               // Qwen3-235B: 128
inline constexpr int64_t kMaxWidth = 1 << 24;              // tokens per row, 16.8 M; longest contexts: 10 M
inline constexpr int64_t kMaxRows = 1 << 16;               // rows per micro-batch (micro-batch size)
inline constexpr int64_t kMaxTokensPerBatch = 1LL << 30;   // rows x width of one micro-batch
inline constexpr int64_t kMaxAccumulation = 1 << 20;       // micro-batches per optimizer step
// Corpus samples. Planning holds about 128 bytes per sample (planner/corpus.hpp kBytesPerSample, measured in
// docs/planner.md "Bounded resources"), so this keeps a plan near 6 GB; 10^9 samples ran out of memory.
inline constexpr int64_t kMaxSamples = 50'000'000;
inline constexpr int64_t kMaxSweepConfigurations = 1'000'000;  // product of the sweep's list sizes
inline constexpr int64_t kMaxLoraRank = 1 << 16;
inline constexpr int kMaxJsonDepth = 64;                   // our files nest 3 deep; Chrome traces ~4
inline constexpr double kMaxSeconds = 1e9;                 // 31 years: any duration beyond is a typo
inline constexpr double kMinStepSeconds = 1e-6;            // a step launches kernels: ~5 us each at least
inline constexpr double kMaxGiB = 1e9;                     // 1 EiB of device memory
inline constexpr size_t kMaxShownChars = 80;               // longest value quoted in a message

// a * b, or nothing when it leaves int64 (both >= 0).
inline std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

// a + b, or nothing when it leaves int64.
inline std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_add_overflow(a, b, &out)) return std::nullopt;
  return out;
}

// A value quoted in a message, cut to kMaxShownChars so a megabyte-long line cannot flood the terminal.
inline std::string cut(const std::string& text) {
  if (text.size() <= kMaxShownChars) return text;
  return text.substr(0, kMaxShownChars) + "... (" + std::to_string(text.size()) + " characters)";
}

// A figure stepcast prints: finite and >= 0.
inline bool printable_figure(double value) { return std::isfinite(value) && value >= 0; }

}  // namespace stepcast::limits
