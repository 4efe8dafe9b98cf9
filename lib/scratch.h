// Working arrays of a call (weights as fp32, per-channel constants and
// sums) from a block of memory each thread keeps between calls, so that
// after a thread's first call of a given size the channel kinds allocate
// nothing. Freeing their 20-130 KB a call let glibc give the heap's top
// back to the kernel, and the next call faulted it in again: half of a
// 1x1280x8x8 channels-last GroupNorm with correctly rounded bf16 y, in a
// C process with a small heap (in one with a larger heap glibc trims less,
// and the time did not change).
#ifndef SIMDNORM_LIB_SCRATCH_H_
#define SIMDNORM_LIB_SCRATCH_H_

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <type_traits>
#include <vector>

namespace simdnorm {
namespace internal {

// A scope's share of this thread's block: Take hands out zeroed, 64-byte
// aligned arrays from the block's top, and the scope gives them back when
// it ends. Scopes nest on a thread (the caller's scope, and a kernel's that
// TBB runs on the caller's thread while it waits, or a task it steals then):
// each takes from the top left by the enclosing ones. What the block cannot
// hold comes from the heap, and when the thread's outermost scope ends the
// block grows to the most its scopes held at once (blocks above
// kMaxKeptBytes are not kept).
class Scratch {
 public:
  static constexpr size_t kMaxKeptBytes = size_t{16} << 20;

  Scratch();
  ~Scratch();
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;

  // n value-initialized (zero) Ts.
  template <typename T>
  T* Take(size_t n) {
    static_assert(std::is_trivially_destructible_v<T>);
    T* p = static_cast<T*>(TakeBytes(n * sizeof(T)));
    std::uninitialized_value_construct_n(p, n);
    return p;
  }

  // n Ts left as they are, for arrays the caller writes before reading.
  template <typename T>
  T* TakeUninitialized(size_t n) {
    static_assert(std::is_trivial_v<T>);
    return static_cast<T*>(TakeBytes(n * sizeof(T)));
  }

 private:
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  void* TakeBytes(size_t bytes);

  size_t top_, held_;  // the block's top and the bytes held when it began
  std::vector<std::unique_ptr<void, Free>> spilled_;  // not in the block
};

}  // namespace internal
}  // namespace simdnorm

#endif  // SIMDNORM_LIB_SCRATCH_H_
