#include "telemetry/metric_family.h"

#include <charconv>
#include <cmath>

namespace xb::telemetry {
namespace {

// The le label values, spelled as the catalogue spells the bounds.
constexpr auto kBucketLabels = std::to_array<std::string_view>(
    {"0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10"});
static_assert(kBucketLabels.size() == kBucketBounds.size());

template <typename T>
void AppendNumber(T value, std::string* out) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  XB_CHECK(ec == std::errc());
  out->append(buf, static_cast<size_t>(end - buf));
}

void AppendDouble(double value, std::string* out) {
  if (std::isnan(value)) {
    out->append("NaN");
  } else if (std::isinf(value)) {
    out->append(value > 0 ? "+Inf" : "-Inf");
  } else {
    AppendNumber(value, out);  // shortest form that round-trips
  }
}

void AppendSeriesName(std::string_view name, std::string_view suffix, std::string_view labels,
                      std::string* out) {
  out->append(name);
  out->append(suffix);
  if (!labels.empty()) {
    out->push_back('{');
    out->append(labels);
    out->push_back('}');
  }
  out->push_back(' ');
}

}  // namespace

namespace exposition {

void AppendHeader(const FamilySpec& spec, std::string_view type, std::string* out) {
  out->append("# HELP ");
  out->append(spec.name);
  out->push_back(' ');
  for (char c : spec.help) {  // text format 0.0.4: escape backslash and newline in HELP
    if (c == '\\') {
      out->append("\\\\");
    } else if (c == '\n') {
      out->append("\\n");
    } else {
      out->push_back(c);
    }
  }
  out->append("\n# TYPE ");
  out->append(spec.name);
  out->push_back(' ');
  out->append(type);
  out->push_back('\n');
}

void AppendSample(std::string_view name, std::string_view suffix, std::string_view labels,
                  uint64_t value, std::string* out) {
  AppendSeriesName(name, suffix, labels, out);
  AppendNumber(value, out);
  out->push_back('\n');
}

void AppendSample(std::string_view name, std::string_view suffix, std::string_view labels,
                  int64_t value, std::string* out) {
  AppendSeriesName(name, suffix, labels, out);
  AppendNumber(value, out);
  out->push_back('\n');
}

void AppendSample(std::string_view name, std::string_view suffix, std::string_view labels,
                  double value, std::string* out) {
  AppendSeriesName(name, suffix, labels, out);
  AppendDouble(value, out);
  out->push_back('\n');
}

}  // namespace exposition

void HistogramCell::Observe(double seconds) {
  if (!(seconds > 0)) {  // also catches NaN
    seconds = 0;
  }
  size_t bucket = 0;
  while (bucket < kBucketBounds.size() && seconds > kBucketBounds[bucket]) {  // le is inclusive
    ++bucket;
  }
  buckets_[bucket].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(seconds, std::memory_order_relaxed);
  if (!recorded_.load(std::memory_order_relaxed)) {
    recorded_.store(true, std::memory_order_relaxed);
  }
}

uint64_t HistogramCell::Count() const {
  uint64_t total = 0;
  for (const auto& b : buckets_) {
    total += b.load(std::memory_order_relaxed);
  }
  return total;
}

void HistogramCell::AppendSamples(std::string_view name, std::string_view labels,
                                  std::string* out) const {
  // Read each bucket once, so the cumulative counts are monotonic and +Inf equals _count.
  std::array<uint64_t, kBucketBounds.size() + 1> counts;
  for (size_t i = 0; i < counts.size(); ++i) {
    counts[i] = buckets_[i].load(std::memory_order_relaxed);
  }
  std::string with_le;
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= kBucketBounds.size(); ++i) {
    cumulative += counts[i];
    with_le.assign(labels);
    AppendLabelPair("le", i < kBucketLabels.size() ? kBucketLabels[i] : "+Inf", &with_le);
    exposition::AppendSample(name, "_bucket", with_le, cumulative, out);
  }
  exposition::AppendSample(name, "_sum", labels, SumSeconds(), out);
  exposition::AppendSample(name, "_count", labels, cumulative, out);
}

void InfoFamily::AppendExposition(std::string* out) const {
  exposition::AppendHeader(spec(), "gauge", out);
  std::string labels;
  AppendLabelPair("version", version_, &labels);
  exposition::AppendSample(spec().name, "", labels, int64_t{1}, out);
}

}  // namespace xb::telemetry
