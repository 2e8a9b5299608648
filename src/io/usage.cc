// Durations from the data: one pass over samples sorted by (series,
// timestamp), medians by nth_element over a gap buffer, O(n).
#include "gpucost/io/usage.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "gpucost/status.h"

namespace gpucost {
namespace {

// Lower median (an observed gap, never an average of two); 0 when empty.
int64_t LowerMedian(std::span<int64_t> gaps) {
  if (gaps.empty()) return 0;
  auto mid = gaps.begin() + static_cast<std::ptrdiff_t>((gaps.size() - 1) / 2);
  std::nth_element(gaps.begin(), mid, gaps.end());
  return *mid;
}

bool MoreThanTwiceApart(int64_t a, int64_t b) {
  return static_cast<double>(std::max(a, b)) > 2.0 * static_cast<double>(std::min(a, b));
}

}  // namespace

absl::StatusOr<SeriesSpacing> DurationsFromSeries(std::span<const int32_t> series,
                                                  std::span<const int64_t> timestamp,
                                                  std::optional<int64_t> given_ns, int64_t fallback_ns,
                                                  std::string_view given_name,
                                                  const std::function<std::string(int32_t)>& describe,
                                                  std::vector<int64_t>* duration) {
  const size_t n = timestamp.size();
  SeriesSpacing out;
  duration->assign(n, 0);
  // Gap of each sample to the next later sample of its series (0: none).
  std::vector<int64_t> gap(n, 0);
  for (size_t end = n; end > 0;) {
    size_t begin = end - 1;
    while (begin > 0 && series[begin - 1] == series[end - 1]) --begin;
    // Walking back: `instant` is the current distinct instant, `next` the
    // one after it (equal instants share the gap to the next later one).
    bool have_next = false;
    int64_t instant = timestamp[end - 1], next = 0;
    for (size_t i = end; i-- > begin;) {
      if (timestamp[i] != instant) {
        next = instant;
        have_next = true;
        instant = timestamp[i];
      }
      // Instants far apart (a reader's out-of-range timestamps) saturate:
      // such a gap is missing samples, never an overflow.
      int64_t difference = 0;
      if (have_next && __builtin_sub_overflow(next, timestamp[i], &difference)) {
        difference = std::numeric_limits<int64_t>::max();
      }
      gap[i] = difference;
    }
    ++out.series;
    end = begin;
  }
  // Reader-wide spacing: the median of every positive gap, counted once per
  // distinct instant of a series.
  std::vector<int64_t> buffer;
  buffer.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const bool last_of_instant = i + 1 >= n || series[i + 1] != series[i] || timestamp[i + 1] != timestamp[i];
    if (last_of_instant && gap[i] > 0) buffer.push_back(gap[i]);
  }
  out.spacing_ns = LowerMedian(buffer);
  const int64_t reader_spacing = out.spacing_ns > 0 ? out.spacing_ns : (given_ns ? *given_ns : fallback_ns);
  if (given_ns && out.spacing_ns > 0 && buffer.size() == 1 && MoreThanTwiceApart(out.spacing_ns, *given_ns)) {
    // One gap in all: still a reading of the data's own spacing.
    return TableError(describe(series[0]),
                      absl::StrCat("the data's spacing is ", static_cast<double>(out.spacing_ns) / 1e9, " s but ",
                                   absl::string_view(given_name.data(), given_name.size()), "=", static_cast<double>(*given_ns) / 1e9,
                                   " s was given (more than 2x apart); leave ", absl::string_view(given_name.data(), given_name.size()),
                                   " unset to use the data's spacing"));
  }
  // Per series: its own spacing when it has two gaps or more.
  for (size_t begin = 0; begin < n;) {
    size_t end = begin + 1;
    while (end < n && series[end] == series[begin]) ++end;
    buffer.clear();
    for (size_t i = begin; i < end; ++i) {
      const bool last_of_instant = i + 1 >= end || timestamp[i + 1] != timestamp[i];
      if (last_of_instant && gap[i] > 0) buffer.push_back(gap[i]);
    }
    int64_t spacing = reader_spacing;
    if (buffer.size() >= 2) {
      spacing = LowerMedian(buffer);
      if (given_ns && MoreThanTwiceApart(spacing, *given_ns)) {
        return TableError(describe(series[begin]),
                          absl::StrCat("the data's spacing is ", static_cast<double>(spacing) / 1e9, " s but ",
                                       absl::string_view(given_name.data(), given_name.size()), "=", static_cast<double>(*given_ns) / 1e9,
                                       " s was given (more than 2x apart); leave ", absl::string_view(given_name.data(), given_name.size()),
                                       " unset to use the data's spacing"));
      }
    }
    // A gap up to 1.25x the spacing is jitter and counts whole (nvidia-smi
    // -l 60 prints 59-61 s apart); a longer one is missing samples: the
    // sample before it stands for the spacing only.
    for (size_t i = begin; i < end; ++i) {
      // In doubles: gaps of absurd instants must not overflow.
      const bool jitter = gap[i] > 0 && static_cast<double>(gap[i]) <= 1.25 * static_cast<double>(spacing);
      if (gap[i] > 0 && !jitter) ++out.gaps;
      (*duration)[i] = jitter ? gap[i] : spacing;
    }
    begin = end;
  }
  return out;
}

}  // namespace gpucost
