// SPDX-License-Identifier: Apache-2.0
// Fixed-size bit sets for the scheduler's hot path. A GpuSet names GPUs by their position in
// slot order (bit i = the i-th lowest slot), so "lowest bit" means "lowest slot" and ties in
// placement resolve to the lowest slot for free. A TokenSet names lanes (bit = lane index)
// and the pseudo-lane "gpu" (kGpuToken), which every job holding GPUs uses.
// Plain values: no allocation, no thread rules.
#pragma once

#include <array>
#include <bit>
#include <cstdint>

namespace gpuq::sched {

// More GPUs than this in one snapshot are ignored (they get nothing); one node has far fewer.
inline constexpr int kMaxGpus = 256;
// Lanes with an index at or past this cannot be tracked; jobs naming them wait.
inline constexpr int kMaxLanes = 63;
inline constexpr int kGpuToken = 63;

using TokenSet = uint64_t;

inline constexpr TokenSet token_bit(int token) { return TokenSet{1} << token; }

// std::popcount compiles to a libgcc call unless the build targets POPCNT; this is the
// branch-free SWAR count, several times faster than that call and portable.
inline constexpr int popcount64(uint64_t x) {
  x = x - ((x >> 1) & 0x5555555555555555ULL);
  x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
  x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
  return static_cast<int>((x * 0x0101010101010101ULL) >> 56);
}

class GpuSet {
 public:
  static constexpr int kWords = kMaxGpus / 64;

  void set(int i) { words_[i >> 6] |= uint64_t{1} << (i & 63); }
  void reset(int i) { words_[i >> 6] &= ~(uint64_t{1} << (i & 63)); }
  bool test(int i) const { return (words_[i >> 6] >> (i & 63)) & 1; }

  int count() const {
    int n = 0;
    for (uint64_t w : words_) {
      if (w != 0) n += popcount64(w);
    }
    return n;
  }
  // count() >= n, stopping as soon as it is known.
  bool has_at_least(int n) const {
    if (n <= 0) return true;
    for (uint64_t w : words_) {
      if (w != 0 && (n -= popcount64(w)) <= 0) return true;
    }
    return false;
  }
  bool any() const {
    uint64_t all = 0;
    for (uint64_t w : words_) all |= w;
    return all != 0;
  }
  bool none() const { return !any(); }

  // The lowest member at or after `from`, or -1.
  int next(int from) const {
    if (from >= kMaxGpus) return -1;
    int word = from >> 6;
    uint64_t w = words_[word] & (~uint64_t{0} << (from & 63));
    while (true) {
      if (w != 0) return (word << 6) + std::countr_zero(w);
      if (++word == kWords) return -1;
      w = words_[word];
    }
  }
  int first() const { return next(0); }

  GpuSet& operator&=(const GpuSet& o) {
    for (int i = 0; i < kWords; ++i) words_[i] &= o.words_[i];
    return *this;
  }
  GpuSet& operator|=(const GpuSet& o) {
    for (int i = 0; i < kWords; ++i) words_[i] |= o.words_[i];
    return *this;
  }
  // this & ~o, without materialising ~o (which would name GPUs that do not exist).
  GpuSet& subtract(const GpuSet& o) {
    for (int i = 0; i < kWords; ++i) words_[i] &= ~o.words_[i];
    return *this;
  }
  friend GpuSet operator&(GpuSet a, const GpuSet& b) { return a &= b; }
  friend GpuSet operator|(GpuSet a, const GpuSet& b) { return a |= b; }
  friend GpuSet minus(GpuSet a, const GpuSet& b) { return a.subtract(b); }
  friend bool operator==(const GpuSet&, const GpuSet&) = default;

  bool intersects(const GpuSet& o) const {
    uint64_t hit = 0;
    for (int i = 0; i < kWords; ++i) hit |= words_[i] & o.words_[i];
    return hit != 0;
  }

 private:
  std::array<uint64_t, kWords> words_{};
};

// Iterates the members of a GpuSet in ascending order: for (int g : members(set)).
class Members {
 public:
  explicit Members(const GpuSet& set) : set_(set) {}
  class Iterator {
   public:
    Iterator(const GpuSet* set, int at) : set_(set), at_(at) {}
    int operator*() const { return at_; }
    Iterator& operator++() {
      at_ = set_->next(at_ + 1);
      return *this;
    }
    bool operator!=(const Iterator& o) const { return at_ != o.at_; }

   private:
    const GpuSet* set_;
    int at_;
  };
  Iterator begin() const { return Iterator(&set_, set_.first()); }
  Iterator end() const { return Iterator(&set_, -1); }

 private:
  GpuSet set_;
};
inline Members members(const GpuSet& set) { return Members(set); }

}  // namespace gpuq::sched
