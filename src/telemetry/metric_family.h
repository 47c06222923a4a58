// The three metric kinds of the catalogue (counter, gauge, histogram) as families over typed label
// dimensions (vocabulary.h). A family holds one lock-free cell per combination of its labels'
// values, fixed at compile time, so recording is an index computation and relaxed atomic adds:
// no lock, no allocation, no hashing on the hot path (ARCHITECTURE.md section 8).
//
// Recording methods may be called from any thread concurrently; AppendExposition may run
// concurrently with them and sees each cell's latest value, not one consistent snapshot.
// Families are created once (metrics.cc) and are neither copied nor moved.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "telemetry/vocabulary.h"

namespace xb::telemetry {

// When the series of a family appear in the exposition.
enum class Presence : uint8_t {
  // Every series of the vocabulary, zero-valued until recorded. For small vocabularies, so
  // dashboards see zeros instead of gaps.
  kAlways,
  // # HELP / # TYPE always; a series once it has been recorded (even by adding 0). For large
  // vocabularies such as RPC x grpc_code, which would otherwise be mostly zeros.
  kWhenRecorded,
  // Nothing at all until the family's first event, then every series of the vocabulary (OPS
  // section 5: "a family that counts only failures is absent until its first event").
  kFailureOnly,
};

// One row of the metric catalogue. The type is the family class; the labels are its template
// arguments.
struct FamilySpec {
  std::string_view name;  // full sample name, counters with their _total suffix
  std::string_view help;  // one line; the catalogue's Meaning
  Presence presence;
};

// The histogram buckets of OPS section 5, in seconds; +Inf is implicit.
inline constexpr std::array<double, 11> kBucketBounds = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                         0.5,   1,    2.5,   5,    10};

// Base of every family: the exposition walks a list of these in catalogue order.
class Family {
 public:
  explicit Family(const FamilySpec& spec) : spec_(spec) {}
  virtual ~Family() = default;
  Family(const Family&) = delete;
  Family& operator=(const Family&) = delete;

  const FamilySpec& spec() const { return spec_; }

  // Appends # HELP, # TYPE and the samples in text format 0.0.4, or nothing for a failure-only
  // family before its first event.
  virtual void AppendExposition(std::string* out) const = 0;

 private:
  const FamilySpec& spec_;  // static storage
};

// The cartesian product of label dimensions, flattened to an index (mixed radix, first
// dimension most significant).
template <typename... Dims>
struct LabelSpace {
  template <typename E>
  static constexpr size_t SizeOf() {
    if constexpr (WordDimension<E>) {
      static_assert(static_cast<size_t>(Vocabulary<E>::kLast) + 1 == Vocabulary<E>::kWords.size(),
                    "a word list must name every enumerator, in order");
      return Vocabulary<E>::kWords.size();
    } else {
      return Vocabulary<E>::kCount;
    }
  }

  static constexpr size_t kSize = (SizeOf<Dims>() * ... * size_t{1});
  static constexpr std::array<size_t, sizeof...(Dims)> kSizes = {SizeOf<Dims>()...};

  static size_t Index(Dims... values) {
    size_t index = 0;
    ((index = index * SizeOf<Dims>() + Checked(values)), ...);
    return index;
  }

  // Appends the label pairs of series `index` to *labels (see AppendLabelPair).
  static void AppendLabels([[maybe_unused]] size_t index, [[maybe_unused]] std::string* labels) {
    [[maybe_unused]] size_t k = 0;
    (AppendOne<Dims>(Digit(index, k++), labels), ...);
  }

 private:
  template <typename E>
  static size_t Checked(E value) {
    const auto i = static_cast<size_t>(value);
    XB_CHECK(i < SizeOf<E>());  // a forged enumerator would write outside the family
    return i;
  }

  // The digit of dimension k in `index`.
  static constexpr size_t Digit(size_t index, size_t k) {
    size_t stride = 1;
    for (size_t j = k + 1; j < kSizes.size(); ++j) {
      stride *= kSizes[j];
    }
    return index / stride % kSizes[k];
  }

  template <typename E>
  static void AppendOne(size_t i, std::string* labels) {
    if constexpr (WordDimension<E>) {
      AppendLabelPair(Vocabulary<E>::kLabel, Vocabulary<E>::kWords[i], labels);
    } else {
      Vocabulary<E>::AppendLabels(i, labels);
    }
  }
};

// Text-format helpers shared by the family templates (metric_family.cc).
namespace exposition {
void AppendHeader(const FamilySpec& spec, std::string_view type, std::string* out);
// name{labels} value, where `labels` is a comma-separated list without braces (may be empty).
void AppendSample(std::string_view name, std::string_view suffix, std::string_view labels,
                  uint64_t value, std::string* out);
void AppendSample(std::string_view name, std::string_view suffix, std::string_view labels,
                  int64_t value, std::string* out);
void AppendSample(std::string_view name, std::string_view suffix, std::string_view labels,
                  double value, std::string* out);
}  // namespace exposition

template <typename... Dims>
class CounterFamily final : public Family {
 public:
  using Space = LabelSpace<Dims...>;
  using Family::Family;

  void Inc(Dims... labels) { Add(labels..., 1); }
  void Add(Dims... labels, uint64_t n) {
    Cell& cell = cells_[Space::Index(labels...)];
    cell.value.fetch_add(n, std::memory_order_relaxed);
    MarkRecorded(cell.recorded);
  }
  uint64_t Value(Dims... labels) const {
    return cells_[Space::Index(labels...)].value.load(std::memory_order_relaxed);
  }

  void AppendExposition(std::string* out) const override {
    if (!Visible()) {
      return;
    }
    exposition::AppendHeader(spec(), "counter", out);
    std::string labels;
    for (size_t i = 0; i < Space::kSize; ++i) {
      if (!Emits(cells_[i].recorded)) {
        continue;
      }
      labels.clear();
      Space::AppendLabels(i, &labels);
      exposition::AppendSample(spec().name, "", labels,
                               cells_[i].value.load(std::memory_order_relaxed), out);
    }
  }

 private:
  struct Cell {
    std::atomic<uint64_t> value{0};
    std::atomic<bool> recorded{false};
  };

  static void MarkRecorded(std::atomic<bool>& flag) {
    if (!flag.load(std::memory_order_relaxed)) {
      flag.store(true, std::memory_order_relaxed);
    }
  }
  bool AnyRecorded() const {
    for (const Cell& c : cells_) {
      if (c.recorded.load(std::memory_order_relaxed)) {
        return true;
      }
    }
    return false;
  }
  bool Visible() const { return spec().presence != Presence::kFailureOnly || AnyRecorded(); }
  bool Emits(const std::atomic<bool>& recorded) const {
    return spec().presence != Presence::kWhenRecorded || recorded.load(std::memory_order_relaxed);
  }

  std::array<Cell, Space::kSize> cells_;
};

template <typename... Dims>
class GaugeFamily final : public Family {
 public:
  using Space = LabelSpace<Dims...>;
  using Family::Family;

  void Set(Dims... labels, int64_t v) {
    Cell& cell = cells_[Space::Index(labels...)];
    cell.value.store(v, std::memory_order_relaxed);
    MarkRecorded(cell);
  }
  void Add(Dims... labels, int64_t delta) {
    Cell& cell = cells_[Space::Index(labels...)];
    cell.value.fetch_add(delta, std::memory_order_relaxed);
    MarkRecorded(cell);
  }
  void Inc(Dims... labels) { Add(labels..., 1); }
  void Dec(Dims... labels) { Add(labels..., -1); }
  int64_t Value(Dims... labels) const {
    return cells_[Space::Index(labels...)].value.load(std::memory_order_relaxed);
  }

  // Gauges are never failure-only: a level always has a value.
  void AppendExposition(std::string* out) const override {
    exposition::AppendHeader(spec(), "gauge", out);
    std::string labels;
    for (size_t i = 0; i < Space::kSize; ++i) {
      const Cell& cell = cells_[i];
      if (spec().presence == Presence::kWhenRecorded &&
          !cell.recorded.load(std::memory_order_relaxed)) {
        continue;
      }
      labels.clear();
      Space::AppendLabels(i, &labels);
      exposition::AppendSample(spec().name, "", labels, cell.value.load(std::memory_order_relaxed),
                               out);
    }
  }

 private:
  struct Cell {
    std::atomic<int64_t> value{0};
    std::atomic<bool> recorded{false};
  };
  static void MarkRecorded(Cell& cell) {
    if (!cell.recorded.load(std::memory_order_relaxed)) {
      cell.recorded.store(true, std::memory_order_relaxed);
    }
  }

  std::array<Cell, Space::kSize> cells_;
};

// One histogram series: per-bucket (not cumulative) counts plus an overflow slot, and the sum.
// _count is derived from the buckets at exposition, so the +Inf bucket always equals _count even
// while observations race a scrape. The sum is an atomic<double> (a CAS loop, lock-free); an
// integer nanosecond sum could wrap on the lifetimes of long streams.
class HistogramCell {
 public:
  // Records one observation. A negative or NaN duration counts as 0.
  void Observe(double seconds);
  uint64_t Count() const;
  double SumSeconds() const { return sum_.load(std::memory_order_relaxed); }
  bool recorded() const { return recorded_.load(std::memory_order_relaxed); }
  // The _bucket, _sum and _count samples of this series.
  void AppendSamples(std::string_view name, std::string_view labels, std::string* out) const;

 private:
  static_assert(std::atomic<double>::is_always_lock_free);

  std::array<std::atomic<uint64_t>, kBucketBounds.size() + 1> buckets_{};
  std::atomic<double> sum_{0.0};
  std::atomic<bool> recorded_{false};
};

template <typename... Dims>
class HistogramFamily final : public Family {
 public:
  using Space = LabelSpace<Dims...>;
  using Family::Family;

  void Observe(Dims... labels, double seconds) { cells_[Space::Index(labels...)].Observe(seconds); }
  uint64_t Count(Dims... labels) const { return cells_[Space::Index(labels...)].Count(); }
  double SumSeconds(Dims... labels) const { return cells_[Space::Index(labels...)].SumSeconds(); }

  // Histograms here are never failure-only: a duration is not a failure.
  void AppendExposition(std::string* out) const override {
    exposition::AppendHeader(spec(), "histogram", out);
    std::string labels;
    for (size_t i = 0; i < Space::kSize; ++i) {
      if (spec().presence == Presence::kWhenRecorded && !cells_[i].recorded()) {
        continue;
      }
      labels.clear();
      Space::AppendLabels(i, &labels);
      cells_[i].AppendSamples(spec().name, labels, out);
    }
  }

 private:
  std::array<HistogramCell, Space::kSize> cells_;
};

// xmtp_backend_info: a gauge fixed at 1 whose one label carries the build version. The version is
// the only label value not from an enum; it comes from the build, never from a request.
class InfoFamily final : public Family {
 public:
  InfoFamily(const FamilySpec& spec, std::string version)
      : Family(spec), version_(std::move(version)) {}
  const std::string& version() const { return version_; }
  void AppendExposition(std::string* out) const override;

 private:
  const std::string version_;
};

}  // namespace xb::telemetry
