#pragma once
// The memory peak as an itemised table (llm.c's fill_in_activation_sizes): one row per cost, so a
// prediction can be compared line by line with what the allocator saw.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "model/features.hpp"

namespace stepcast::model {

struct MemoryItem {
  std::string name;
  int64_t bytes = 0;
  std::string lifetime;  // "run" (weights, adapters), "step" (activations), "layer" (transient workspace)
};

struct MemoryTable {
  std::vector<MemoryItem> items;
  int64_t total_bytes() const;
  double total_gib() const { return static_cast<double>(total_bytes()) / 1073741824.0; }
};

// The table for one micro-batch from its memory features and the memory coefficients (by MemoryTerm).
MemoryTable memory_table(const FeatureMaker& features, const MemoryFeatures& y, const std::array<double, kMemoryTerms>& m);

}  // namespace stepcast::model
