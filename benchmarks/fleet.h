// The realistic fleet of benchmarks/fleet.py (issue 27) in C++, for the
// engine alone: 8-GPU instances of 80 GiB GPUs billed hourly, samples every
// 60 s with scrape jitter, training jobs starting and stopping at odd minutes
// (the GPUs reported free, consumer "", around them), inference pods rolled
// out mid-day, time-sliced GPUs (2-4 pods of share 1/k; a fifth of those
// instances report share 1: over-subscribed lines), MIG GPUs (1/8 of the
// fleet; 7 x 1g or 3g+2g+1g+1g, free slices reported as "" with share g/7,
// so free slices of one profile are rows read twice) and idle instances.
// Jitter: each node scrapes at its own phase (0-999 ms) and a fifth of its
// scrapes come 1-500 ms late, the same for every GPU of the node, so the
// inferred interval is exactly 60 s. Same model as fleet.py, its own random
// numbers: the shapes match, not the values.
#ifndef GPUCOST_BENCHMARKS_FLEET_H_
#define GPUCOST_BENCHMARKS_FLEET_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "gpucost/gpucost.h"

namespace gpucost_bench {

// The sample orders telemetry comes in.
enum class FleetOrder {
  kNode,      // each scrape, node after node, all its GPUs: dcgm-exporter, nvidia-smi logs
  kSeries,    // one (resource, device, consumer) after another in time: a Prometheus range query
  kTime,      // sorted by timestamp: a lake table
  kShuffled,  // Spark/Dask partitions, joins
};
inline constexpr std::array<std::pair<FleetOrder, std::string_view>, 4> kFleetOrders = {{
    {FleetOrder::kNode, "node"},
    {FleetOrder::kSeries, "series"},
    {FleetOrder::kTime, "time"},
    {FleetOrder::kShuffled, "shuffled"},
}};

class RealisticFleet {
 public:
  // churn_minutes > 0: the high-cardinality fleet instead, whole GPUs and a
  // new pod on each every churn_minutes (288,000 pods a day at 1,000 GPUs, 5).
  RealisticFleet(int gpus, FleetOrder order, int churn_minutes = 0, int hours = 24, uint64_t seed = 0)
      : rng_(seed) {
    const int instances = gpus / kGpus;
    const int steps = hours * 60;
    Bill(instances, hours);
    if (churn_minutes > 0) {
      Churn(instances, steps, churn_minutes);
    } else {
      Roles(instances, steps);
    }
    Expand(instances, steps);
    Permute(order);
    Encode(instances);
  }

  [[nodiscard]] gpucost::CostColumns costs() const {
    return {.resource_id = cost_ids_.view(), .start = start_, .end = end_, .cost = cost_};
  }
  [[nodiscard]] gpucost::InventoryColumns inventory() const {
    return {.resource_id = inv_ids_.view(), .device = inv_device_, .mem_capacity = mem_capacity_};
  }
  [[nodiscard]] gpucost::SampleColumns samples() const {
    return {.timestamp = timestamp_, .resource_id = sample_ids_.view(), .device = device_,
            .consumer = consumers_.view(), .share = share_, .util = util_, .mem_used = mem_used_};
  }
  [[nodiscard]] size_t size() const { return timestamp_.size(); }

 private:
  static constexpr int kGpus = 8;
  static constexpr double kGpuMem = 80.0 * (1LL << 30);
  static constexpr int64_t kStart = 1'772'409'600LL * gpucost::kNanosPerSecond;  // 2026-03-02 UTC
  static constexpr int64_t kStep = 60 * gpucost::kNanosPerSecond;

  struct Segment {
    int32_t inst, dev, slot, consumer;
    double share, util, mem;
    int32_t begin, end;
  };

  int Uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, std::max(lo, hi - 1))(rng_); }
  double Real(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng_); }

  int32_t NewPod(std::string_view prefix) {
    char suffix[24];
    std::snprintf(suffix, sizeof(suffix), "-%09llx-%05x", static_cast<unsigned long long>(rng_() % 68719476736ULL),
                  static_cast<unsigned>(rng_() % 1048576));
    names_.push_back(std::string(prefix) + suffix);
    return static_cast<int32_t>(names_.size() - 1);
  }

  void Add(int inst, int dev, int slot, int32_t consumer, double share, double util, double mem, int begin,
           int end) {
    if (end > begin) segments_.push_back({inst, dev, slot, consumer, share, util, mem, begin, end});
  }

  // Consumer "" (code 0) wherever no span holds the device or slice.
  void Free(int inst, int dev, int slot, double share, std::vector<std::pair<int, int>> spans, int steps) {
    std::sort(spans.begin(), spans.end());
    int cursor = 0;
    for (auto [begin, end] : spans) {
      Add(inst, dev, slot, 0, share, 0, 0, cursor, begin);
      cursor = std::max(cursor, end);
    }
    Add(inst, dev, slot, 0, share, 0, 0, cursor, steps);
  }

  void Bill(int instances, int hours) {
    for (int i = 0; i < instances; ++i) {
      const double price = rng_() % 2 ? 98.32 : 40.97;  // p5.48xlarge, p4de.24xlarge on demand
      const bool spot = Real(0, 1) < 0.2;
      for (int h = 0; h < hours; ++h) {
        line_inst_.push_back(i);
        start_.push_back(kStart + h * gpucost::kNanosPerHour);
        end_.push_back(kStart + (h + 1) * gpucost::kNanosPerHour);
        cost_.push_back(spot ? price * Real(0.30, 0.45) : price);
      }
    }
  }

  void Roles(int instances, int steps) {
    names_ = {""};
    // 40 % training, 20 % inference, 15 % time-sliced, 12.5 % MIG, the rest idle.
    std::vector<int> roles(instances, 4);
    const std::array<double, 4> ends = {0.40, 0.60, 0.75, 0.875};
    for (int i = 0; i < instances; ++i) {
      for (int r = 3; r >= 0; --r) {
        if (i < static_cast<int>(ends[r] * instances)) roles[i] = r;
      }
    }
    std::shuffle(roles.begin(), roles.end(), rng_);
    for (int k = 0; k < instances; ++k) {
      switch (roles[k]) {
        case 0: Training(k, steps); break;
        case 1: Inference(k, steps); break;
        case 2: TimeSliced(k, steps); break;
        case 3: Mig(k, steps); break;
        default:
          for (int d = 0; d < kGpus; ++d) Add(k, d, 0, 0, 1.0, 0, 0, 0, steps);
      }
    }
  }

  void Training(int k, int steps) {
    struct Job { int begin, end; int32_t pod; double util; };
    std::vector<Job> jobs;
    int cursor = Real(0, 1) < 0.5 ? 0 : Uniform(5, 180);
    while (cursor < steps) {
      const int end = std::min(steps, cursor + Uniform(40, 16 * 60));
      jobs.push_back({cursor, end, NewPod("vision/train"), Real(0.6, 0.97)});
      cursor = end + Uniform(3, 150);
    }
    for (int d = 0; d < kGpus; ++d) {
      std::vector<std::pair<int, int>> spans;
      for (const Job& j : jobs) {
        Add(k, d, 0, j.pod, 1.0, j.util, 0.85 * kGpuMem, j.begin, j.end);
        spans.emplace_back(j.begin, j.end);
      }
      Free(k, d, 0, 1.0, spans, steps);
    }
  }

  void Inference(int k, int steps) {
    for (int d = 0; d < kGpus; ++d) {
      const int cut = Real(0, 1) < 0.3 ? Uniform(1, steps) : steps;  // a rollout mid-day
      Add(k, d, 0, NewPod("serving/llm"), 1.0, Real(0.2, 0.6), 0.6 * kGpuMem, 0, cut);
      if (cut < steps) Add(k, d, 0, NewPod("serving/llm"), 1.0, Real(0.2, 0.6), 0.6 * kGpuMem, cut, steps);
    }
  }

  void TimeSliced(int k, int steps) {
    const bool misreported = Real(0, 1) < 0.2;  // every pod reports share 1
    for (int d = 0; d < kGpus; ++d) {
      const int pods = Uniform(2, 5);
      std::vector<std::pair<int, int>> spans;
      for (int p = 0; p < pods; ++p) {
        const int begin = Uniform(0, steps - 30);
        const int end = std::min(steps, begin + Uniform(30, steps / 2));
        Add(k, d, p, NewPod("jupyter/nb"), misreported ? 1.0 : 1.0 / pods, Real(0.05, 0.4),
            kGpuMem / pods / 2, begin, end);
        spans.emplace_back(begin, end);
      }
      Free(k, d, pods, 1.0, spans, steps);
    }
  }

  void Mig(int k, int steps) {
    static const std::vector<int> kSevenOnes = {1, 1, 1, 1, 1, 1, 1}, kMixed = {3, 2, 1, 1};
    for (int d = 0; d < kGpus; ++d) {
      const std::vector<int>& layout = rng_() % 2 ? kSevenOnes : kMixed;
      for (int slot = 0; slot < static_cast<int>(layout.size()); ++slot) {
        const double g = layout[slot], draw = Real(0, 1);
        std::vector<std::pair<int, int>> spans;
        if (draw >= 0.7) {
          const int begin = Uniform(0, steps - 60);
          spans.emplace_back(begin, std::min(steps, begin + Uniform(60, steps)));
        } else if (draw >= 0.25) {
          spans.emplace_back(0, steps);
        }
        for (auto [begin, end] : spans) {
          Add(k, d, slot, NewPod("nlp/mig-infer"), g / 7, Real(0.2, 0.8), 0.6 * g / 8 * kGpuMem, begin, end);
        }
        Free(k, d, slot, g / 7, spans, steps);
      }
    }
  }

  void Churn(int instances, int steps, int churn) {
    names_ = {""};
    for (int k = 0; k < instances; ++k) {
      for (int d = 0; d < kGpus; ++d) {
        for (int begin = 0; begin < steps; begin += churn) {
          Add(k, d, 0, NewPod("batch/job"), 1.0, Real(0.3, 0.95), 0.5 * kGpuMem, begin, std::min(steps, begin + churn));
        }
      }
    }
  }

  void Expand(int instances, int steps) {
    std::vector<int64_t> offset_ms(static_cast<size_t>(instances) * steps);
    for (int i = 0; i < instances; ++i) {
      const int phase = Uniform(0, 1000);
      for (int s = 0; s < steps; ++s) {
        offset_ms[static_cast<size_t>(i) * steps + s] = phase + (Real(0, 1) < 0.2 ? Uniform(1, 501) : 0);
      }
    }
    std::normal_distribution<double> noise(0.0, 0.05);
    for (const Segment& g : segments_) {
      for (int s = g.begin; s < g.end; ++s) {
        const int64_t ms = offset_ms[static_cast<size_t>(g.inst) * steps + s];
        timestamp_.push_back(kStart + s * kStep + ms * 1'000'000);
        step_.push_back(s);
        inst_.push_back(g.inst);
        device_.push_back(g.dev);
        slot_.push_back(g.slot);
        consumer_.push_back(g.consumer);
        share_.push_back(g.share);
        util_.push_back(g.util > 0 ? std::clamp(g.util + noise(rng_), 0.0, 1.0) : 0.0);
        mem_used_.push_back(g.mem);
      }
    }
  }

  void Permute(FleetOrder order) {
    std::vector<uint32_t> idx(timestamp_.size());
    std::iota(idx.begin(), idx.end(), 0U);
    auto by = [&](auto key) {
      std::stable_sort(idx.begin(), idx.end(), [&](uint32_t a, uint32_t b) { return key(a) < key(b); });
    };
    switch (order) {
      case FleetOrder::kNode: by([&](uint32_t r) { return std::tuple(step_[r], inst_[r], device_[r], slot_[r]); });
        break;
      case FleetOrder::kSeries:
        by([&](uint32_t r) { return std::tuple(inst_[r], device_[r], consumer_[r], step_[r], slot_[r]); });
        break;
      case FleetOrder::kTime:
        by([&](uint32_t r) { return std::tuple(timestamp_[r], inst_[r], device_[r], slot_[r]); });
        break;
      case FleetOrder::kShuffled: std::shuffle(idx.begin(), idx.end(), rng_); break;
    }
    auto apply = [&](auto& v) {
      auto copy = v;
      for (size_t k = 0; k < idx.size(); ++k) v[k] = copy[idx[k]];
    };
    apply(timestamp_), apply(inst_), apply(device_), apply(consumer_), apply(share_), apply(util_);
    apply(mem_used_);
    step_ = {}, slot_ = {};
  }

  // Codes straight into dictionaries, as a reader with categoricals gives them.
  void Encode(int instances) {
    std::vector<std::string> ids(instances);
    for (int i = 0; i < instances; ++i) {
      char id[24];
      std::snprintf(id, sizeof(id), "i-%017llx", static_cast<unsigned long long>(rng_() >> 4));
      ids[i] = id;
    }
    Dictionary(cost_ids_, ids, std::vector<int32_t>(line_inst_.begin(), line_inst_.end()));
    std::vector<int32_t> inv_inst;
    for (int i = 0; i < instances; ++i) {
      for (int d = 0; d < kGpus; ++d) {
        inv_inst.push_back(i);
        inv_device_.push_back(d);
        mem_capacity_.push_back(kGpuMem);
      }
    }
    Dictionary(inv_ids_, ids, std::move(inv_inst));
    Dictionary(sample_ids_, ids, std::move(inst_));
    Dictionary(consumers_, names_, std::move(consumer_));
  }

  static void Dictionary(gpucost::EncodedStrings& out, const std::vector<std::string>& values,
                         std::vector<int32_t> codes) {
    out.codes = std::move(codes);
    out.values = values;
    out.value_views.assign(out.values.begin(), out.values.end());
  }

  std::mt19937_64 rng_;
  std::vector<Segment> segments_;
  std::vector<std::string> names_;
  std::vector<int> line_inst_;
  std::vector<int32_t> step_, inst_, slot_, consumer_;
  gpucost::EncodedStrings cost_ids_, inv_ids_, sample_ids_, consumers_;
  std::vector<int64_t> start_, end_, timestamp_;
  std::vector<double> cost_, mem_capacity_, share_, util_, mem_used_;
  std::vector<int32_t> inv_device_, device_;
};

}  // namespace gpucost_bench

#endif  // GPUCOST_BENCHMARKS_FLEET_H_
