#include "lib/scratch.h"

#include <algorithm>
#include <cstdint>
#include <new>

namespace simdnorm {
namespace internal {
namespace {

constexpr size_t kAlign = 64;

void* AllocateAligned(size_t bytes) {
  void* p = std::aligned_alloc(kAlign, bytes);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

// This thread's block: [0, top) is held by the open scopes, and held counts
// what they hold in the block and on the heap; its peak in an outermost
// scope (most) grows the block when that scope ends.
struct Block {
  unsigned char* data = nullptr;
  size_t size = 0, top = 0, held = 0, most = 0;
  int depth = 0;
  ~Block() { std::free(data); }
};

thread_local Block t_block;

}  // namespace

Scratch::Scratch() : top_(t_block.top), held_(t_block.held) { ++t_block.depth; }

Scratch::~Scratch() {
  Block& b = t_block;
  b.top = top_;
  b.held = held_;
  if (--b.depth != 0) return;
  if (b.most > b.size && b.most <= kMaxKeptBytes) {  // no throw: kept or not
    std::free(b.data);
    b.data = static_cast<unsigned char*>(std::aligned_alloc(kAlign, b.most));
    b.size = b.data != nullptr ? b.most : 0;
  }
  b.most = 0;
}

void* Scratch::TakeBytes(size_t bytes) {
  Block& b = t_block;
  bytes = std::max(kAlign, (bytes + kAlign - 1) / kAlign * kAlign);
  b.held += bytes;
  b.most = std::max(b.most, b.held);
  void* p;
  if (bytes <= b.size - b.top) {
    p = b.data + b.top;
    b.top += bytes;
  } else {
    spilled_.emplace_back(AllocateAligned(bytes));
    p = spilled_.back().get();
  }
  return p;
}

}  // namespace internal
}  // namespace simdnorm
