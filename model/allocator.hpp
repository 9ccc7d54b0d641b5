#pragma once
// PyTorch's CUDA caching allocator, as far as the memory model needs it. The rules are read from
// pytorch/pytorch c10/cuda/CUDACachingAllocator.cpp (docs/method.md, "Allocated and reserved"):
//   - every request is rounded up to a multiple of 512 bytes (kMinBlockSize, round_size);
//   - requests up to 1 MiB (kSmallSize) come from the small pool, larger ones from the large pool;
//   - a new segment is 2 MiB for a small request (kSmallBuffer), 20 MiB for a request under 10 MiB
//     (kLargeBuffer, kMinLargeAlloc), else the request rounded up to 2 MiB (kRoundLarge) (get_allocation_size);
//   - a request takes the smallest cached free block that fits (best fit, get_free_block) and splits it when
//     the rest is at least 512 bytes (small pool) or more than 1 MiB (large pool); unsplit, the whole block is
//     allocated and counts in memory_allocated (should_split);
//   - freed blocks stay cached (reserved); when cudaMalloc fails the allocator frees cached unsplit blocks and
//     retries (num_alloc_retries) before it raises out of memory;
//   - expandable_segments:True maps one growing segment per pool and stream in pages of 2 MiB (small pool) or
//     20 MiB (large pool), and splits any block whose rest is at least 512 bytes.
#include <cstdint>
#include <vector>

#include "model/run_memory.hpp"

namespace stepcast::model {

inline constexpr int64_t kMinBlockBytes = 512;
inline constexpr int64_t kSmallRequestBytes = 1 << 20;    // 1 MiB
inline constexpr int64_t kSmallSegmentBytes = 2 << 20;    // 2 MiB
inline constexpr int64_t kLargeBufferBytes = 20 << 20;    // 20 MiB
inline constexpr int64_t kMinLargeAllocBytes = 10 << 20;  // 10 MiB
inline constexpr int64_t kRoundLargeBytes = 2 << 20;      // 2 MiB

int64_t rounded_request_bytes(int64_t bytes);  // round_size
int64_t segment_bytes(int64_t rounded);        // get_allocation_size

// Bytes the allocator hands out (memory_allocated) and reserves (memory_reserved) for tensors allocated once,
// in this order, and never freed: the weights, the adapters, their gradients and optimizer states.
struct Footprint {
  int64_t allocated = 0;
  int64_t reserved = 0;
};
Footprint persistent_footprint(const std::vector<int64_t>& tensor_bytes, Allocator allocator);

}  // namespace stepcast::model
