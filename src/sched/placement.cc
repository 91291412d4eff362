// SPDX-License-Identifier: Apache-2.0
#include "sched/placement.h"

#include <algorithm>
#include <array>
#include <climits>

namespace gpuq::sched {

Placer::Placer(const Machine& machine) : machine_(machine), n_(machine.gpu_count()) {
  const auto& raw = machine.snapshot().links;
  // No table: every pair is alike (uniform_), and choose() never reads links_.
  if (raw.empty()) return;
  links_.assign(static_cast<size_t>(n_) * n_, 0);
  auto raw_link = [&](int sa, int sb) {
    if (sa < 0 || sb < 0 || sa >= static_cast<int>(raw.size())) return 0;
    const auto& row = raw[sa];
    return sb < static_cast<int>(row.size()) ? row[sb] : 0;
  };
  int seen = INT_MIN;
  for (int a = 0; a < n_; ++a) {
    for (int b = 0; b < n_; ++b) {
      if (a == b) continue;
      int sa = machine.gpu(a).slot, sb = machine.gpu(b).slot;
      // A table may be filled on one side of the diagonal only.
      int value = std::max(raw_link(sa, sb), raw_link(sb, sa));
      links_[a * n_ + b] = value;
      if (seen == INT_MIN) seen = value;
      if (value != seen) uniform_ = false;
    }
  }
}

GpuSet Placer::lowest(const GpuSet& available, int count) const {
  GpuSet chosen;
  for (int g = available.first(); g >= 0 && count > 0; g = available.next(g + 1), --count) {
    chosen.set(g);
  }
  return chosen;
}

GpuSet Placer::choose(const GpuSet& available, int count, const Need& need,
                      const GpuSet& shared) const {
  if (count <= 0) return {};
  if (available.count() <= count) return available;
  if (need.share && count == 1) {
    // Packing sharers keeps whole GPUs free for jobs that need them whole; best fit on
    // memory keeps the roomiest shared GPU for the next, bigger sharer.
    int best = -1;
    for (int g : members(available & shared)) {
      if (best < 0 || machine_.gpu(g).mem_now < machine_.gpu(best).mem_now) best = g;
    }
    if (best >= 0) {
      GpuSet one;
      one.set(best);
      return one;
    }
  }
  if (uniform_) return lowest(available, count);
  GpuSet chosen;
  if (count == 1) {
    chosen.set(choose_one(available));
    return chosen;
  }
  return choose_many(available, count);
}

int Placer::choose_one(const GpuSet& available) const {
  int best = -1, best_partner = 0, best_sum = 0;
  for (int g : members(available)) {
    int partner = INT_MIN, sum = 0;
    for (int h : members(available)) {
      if (h == g) continue;
      partner = std::max(partner, link(g, h));
      sum += link(g, h);
    }
    if (best < 0 || partner < best_partner || (partner == best_partner && sum < best_sum)) {
      best = g;
      best_partner = partner;
      best_sum = sum;
    }
  }
  return best;
}

GpuSet Placer::choose_many(const GpuSet& available, int count) const {
  std::array<int, kMaxGpus> cand, min_link, sum_link, scratch;
  std::array<char, kMaxGpus> in;
  int m = 0;
  for (int g : members(available)) cand[m++] = g;
  int max_link = INT_MIN;
  for (int i = 0; i < m; ++i) {
    for (int j = i + 1; j < m; ++j) max_link = std::max(max_link, link(cand[i], cand[j]));
  }
  const int64_t perfect_sum = static_cast<int64_t>(count) * (count - 1) / 2 * max_link;
  int best_min = INT_MIN;
  int64_t best_sum = INT64_MIN;
  GpuSet best;
  for (int si = 0; si < m; ++si) {
    const int s = cand[si];
    if (!best.none()) {
      // No set holding s can have a minimum link above s's (count-1)-th best link.
      int k = 0;
      for (int i = 0; i < m; ++i) {
        if (i != si) scratch[k++] = link(s, cand[i]);
      }
      std::nth_element(scratch.begin(), scratch.begin() + (count - 2), scratch.begin() + k,
                       std::greater<int>());
      if (scratch[count - 2] < best_min) continue;
    }
    for (int i = 0; i < m; ++i) {
      in[i] = i == si;
      min_link[i] = sum_link[i] = link(s, cand[i]);
    }
    int set_min = INT_MAX;
    int64_t set_sum = 0;
    GpuSet set;
    set.set(s);
    for (int step = 1; step < count; ++step) {
      int pick = -1;
      for (int i = 0; i < m; ++i) {
        if (in[i]) continue;
        if (pick < 0 || min_link[i] > min_link[pick] ||
            (min_link[i] == min_link[pick] && sum_link[i] > sum_link[pick])) {
          pick = i;
        }
      }
      in[pick] = 1;
      set.set(cand[pick]);
      set_min = std::min(set_min, min_link[pick]);
      set_sum += sum_link[pick];
      for (int i = 0; i < m; ++i) {
        if (in[i]) continue;
        int l = link(cand[pick], cand[i]);
        min_link[i] = std::min(min_link[i], l);
        sum_link[i] += l;
      }
    }
    if (best.none() || set_min > best_min || (set_min == best_min && set_sum > best_sum)) {
      best = set;
      best_min = set_min;
      best_sum = set_sum;
      if (best_min == max_link && best_sum == perfect_sum) break;  // nothing can beat it
    }
  }
  return best;
}

}  // namespace gpuq::sched
