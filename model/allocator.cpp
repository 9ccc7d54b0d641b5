#include "model/allocator.hpp"

#include <set>

namespace stepcast::model {

std::string allocator_name(Allocator a) { return a == Allocator::caching ? "default" : "expandable-segments"; }

std::optional<Allocator> parse_allocator(std::string_view name) {
  if (name == "default") return Allocator::caching;
  if (name == "expandable-segments" || name == "expandable_segments") return Allocator::expandable_segments;
  return std::nullopt;
}

int64_t rounded_request_bytes(int64_t bytes) {
  if (bytes < kMinBlockBytes) return kMinBlockBytes;
  return (bytes + kMinBlockBytes - 1) / kMinBlockBytes * kMinBlockBytes;
}

int64_t segment_bytes(int64_t rounded) {
  if (rounded <= kSmallRequestBytes) return kSmallSegmentBytes;
  if (rounded < kMinLargeAllocBytes) return kLargeBufferBytes;
  return (rounded + kRoundLargeBytes - 1) / kRoundLargeBytes * kRoundLargeBytes;
}

namespace {

// One pool of the caching allocator under allocations only (nothing is freed): free blocks by size.
class Pool {
 public:
  explicit Pool(bool small) : small_(small) {}
  // Allocates `size` (already rounded); returns the bytes the block counts as allocated.
  int64_t take(int64_t size, Footprint& f) {
    auto it = free_.lower_bound(size);
    int64_t block = 0;
    if (it != free_.end()) {
      block = *it;
      free_.erase(it);
    } else {
      block = segment_bytes(size);
      f.reserved += block;
    }
    const int64_t rest = block - size;
    const bool split = small_ ? rest >= kMinBlockBytes : rest > kSmallRequestBytes;
    if (!split) return block;
    free_.insert(rest);
    return size;
  }

 private:
  bool small_;
  std::multiset<int64_t> free_;
};

int64_t round_up(int64_t bytes, int64_t page) { return (bytes + page - 1) / page * page; }

}  // namespace

Footprint persistent_footprint(const std::vector<int64_t>& tensor_bytes, Allocator allocator) {
  Footprint f;
  if (allocator == Allocator::expandable_segments) {
    // One segment per pool grows page by page; every block is split, so allocated is the rounded requests.
    int64_t small = 0, large = 0;
    for (int64_t b : tensor_bytes) {
      const int64_t size = rounded_request_bytes(b);
      (size <= kSmallRequestBytes ? small : large) += size;
    }
    f.allocated = small + large;
    f.reserved = round_up(small, kSmallSegmentBytes) + round_up(large, kLargeBufferBytes);
    return f;
  }
  Pool small(true), large(false);
  for (int64_t b : tensor_bytes) {
    const int64_t size = rounded_request_bytes(b);
    f.allocated += (size <= kSmallRequestBytes ? small : large).take(size, f);
  }
  return f;
}

}  // namespace stepcast::model
