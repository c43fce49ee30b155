// The peer of scrape_bench's render rows: the hand-written metric families and text rendering as
// they were before common/prometheus.cc moved onto prometheus-cpp (git show 053f035:common/
// prometheus.{h,cc}, the helpers the two share left out). Kept here only to be measured against;
// nothing else uses it.
#ifndef DDP_BENCH_SCRAPE_OLD_REGISTRY_H_
#define DDP_BENCH_SCRAPE_OLD_REGISTRY_H_

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "common/prometheus.h"

namespace ddp::bench_old {

using metrics::EscapeLabelValue;
using metrics::FormatValue;

class Counter {
 public:
  // REQUIRES: v >= 0 (counters only go up); a negative v is ignored.
  void Inc(double v = 1.0);
  double value() const { return value_.load(); }

 private:
  std::atomic<double> value_{0.0};
};

class Gauge {
 public:
  void Set(double v) { value_.store(v); }
  void Add(double v);
  double value() const { return value_.load(); }

 private:
  std::atomic<double> value_{0.0};
};

class Histogram {
 public:
  // REQUIRES: bounds strictly increasing; +Inf is implicit.
  explicit Histogram(std::vector<double> bounds);
  void Observe(double v);
  struct Snapshot {
    std::vector<double> bounds;
    std::vector<uint64_t> cumulative;  // one per bound, then +Inf
    double sum = 0;
    uint64_t count = 0;
  };
  Snapshot Snap() const;

 private:
  const std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative; last is +Inf
  double sum_ = 0;
};

// Default latency buckets in seconds: 1 ms .. 60 s.
// One metric name with a fixed list of label names; children are created on first use and live
// as long as the family (references stay valid).
template <typename M>
class Family {
 public:
  Family(std::string name, std::string help, std::vector<std::string> label_names,
         std::function<std::unique_ptr<M>()> make)
      : name_(std::move(name)), help_(std::move(help)),
        label_names_(std::move(label_names)), make_(std::move(make)) {}
  // REQUIRES: values.size() == label_names().size(); otherwise the call is a programming error
  // and the extra/missing values are padded with "" or dropped.
  M& Labels(std::vector<std::string> values);
  // The child with no labels. REQUIRES: the family has no label names.
  M& Get() { return Labels({}); }
  // Drops a child (a job that is gone). No-op when absent.
  void Remove(const std::vector<std::string>& values);

  const std::string& name() const { return name_; }
  const std::string& help() const { return help_; }
  const std::vector<std::string>& label_names() const { return label_names_; }
  // Calls fn(label_values, metric) for each child in label order, under the family's lock.
  void ForEach(const std::function<void(const std::vector<std::string>&, const M&)>& fn) const;

 private:
  const std::string name_, help_;
  const std::vector<std::string> label_names_;
  const std::function<std::unique_ptr<M>()> make_;
  mutable std::mutex mu_;
  std::map<std::vector<std::string>, std::unique_ptr<M>> children_;
};

using CounterFamily = Family<Counter>;
using GaugeFamily = Family<Gauge>;
using HistogramFamily = Family<Histogram>;

// Holds families in registration order. Add* with a name already registered returns the
// existing family of that name (REQUIRES: same type and labels).
class Registry {
 public:
  Registry();
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  CounterFamily& AddCounter(const std::string& name, const std::string& help,
                            std::vector<std::string> label_names = {});
  GaugeFamily& AddGauge(const std::string& name, const std::string& help,
                        std::vector<std::string> label_names = {});
  HistogramFamily& AddHistogram(const std::string& name, const std::string& help,
                                std::vector<double> bounds,
                                std::vector<std::string> label_names = {});
  // The whole exposition, families in registration order.
  std::string Render() const;

 private:
  struct Entry;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Entry>> entries_;
  Entry* Find(const std::string& name);
};

inline void AtomicAdd(std::atomic<double>* a, double v) {
  double old = a->load();
  while (!a->compare_exchange_weak(old, old + v)) {
  }
}

inline std::string EscapeHelp(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

// `{a="x",le="0.5"}` or "" when there are no labels.
inline std::string LabelSet(const std::vector<std::string>& names, const std::vector<std::string>& values,
                     const std::string& extra_name = "", const std::string& extra_value = "") {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    out += out.empty() ? "{" : ",";
    out += names[i] + "=\"" + EscapeLabelValue(i < values.size() ? values[i] : "") + "\"";
  }
  if (!extra_name.empty()) {
    out += out.empty() ? "{" : ",";
    out += extra_name + "=\"" + extra_value + "\"";
  }
  if (!out.empty()) out += "}";
  return out;
}

inline void Header(std::ostringstream& os, const std::string& name, const std::string& help,
            const char* type) {
  os << "# HELP " << name << ' ' << EscapeHelp(help) << '\n';
  os << "# TYPE " << name << ' ' << type << '\n';
}

inline void Counter::Inc(double v) {
  if (v < 0) return;
  AtomicAdd(&value_, v);
}

inline void Gauge::Add(double v) { AtomicAdd(&value_, v); }

inline Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

inline void Histogram::Observe(double v) {
  size_t i = std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin();
  std::lock_guard<std::mutex> lock(mu_);
  counts_[i]++;
  sum_ += v;
}

inline Histogram::Snapshot Histogram::Snap() const {
  Snapshot s;
  s.bounds = bounds_;
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t running = 0;
  for (uint64_t c : counts_) {
    running += c;
    s.cumulative.push_back(running);
  }
  s.sum = sum_;
  s.count = running;
  return s;
}

template <typename M>
inline M& Family<M>::Labels(std::vector<std::string> values) {
  values.resize(label_names_.size());
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = children_[values];
  if (!slot) slot = make_();
  return *slot;
}

template <typename M>
inline void Family<M>::Remove(const std::vector<std::string>& values) {
  std::lock_guard<std::mutex> lock(mu_);
  children_.erase(values);
}

template <typename M>
inline void Family<M>::ForEach(
    const std::function<void(const std::vector<std::string>&, const M&)>& fn) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [values, metric] : children_) fn(values, *metric);
}

struct Registry::Entry {
  std::string name;
  std::unique_ptr<CounterFamily> counter;
  std::unique_ptr<GaugeFamily> gauge;
  std::unique_ptr<HistogramFamily> histogram;
};

inline Registry::Registry() = default;
inline Registry::~Registry() = default;

inline Registry::Entry* Registry::Find(const std::string& name) {
  for (auto& e : entries_) if (e->name == name) return e.get();
  auto e = std::make_unique<Entry>();
  e->name = name;
  entries_.push_back(std::move(e));
  return entries_.back().get();
}

inline CounterFamily& Registry::AddCounter(const std::string& name, const std::string& help,
                                    std::vector<std::string> label_names) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry* e = Find(name);
  if (!e->counter) {
    e->counter = std::make_unique<CounterFamily>(name, help, std::move(label_names),
                                                 [] { return std::make_unique<Counter>(); });
  }
  return *e->counter;
}

inline GaugeFamily& Registry::AddGauge(const std::string& name, const std::string& help,
                                std::vector<std::string> label_names) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry* e = Find(name);
  if (!e->gauge) {
    e->gauge = std::make_unique<GaugeFamily>(name, help, std::move(label_names),
                                             [] { return std::make_unique<Gauge>(); });
  }
  return *e->gauge;
}

inline HistogramFamily& Registry::AddHistogram(const std::string& name, const std::string& help,
                                        std::vector<double> bounds,
                                        std::vector<std::string> label_names) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry* e = Find(name);
  if (!e->histogram) {
    e->histogram = std::make_unique<HistogramFamily>(
        name, help, std::move(label_names),
        [bounds] { return std::make_unique<Histogram>(bounds); });
  }
  return *e->histogram;
}

inline std::string Registry::Render() const {
  std::ostringstream os;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& e : entries_) {
    if (e->counter) {
      const auto& f = *e->counter;
      Header(os, f.name(), f.help(), "counter");
      f.ForEach([&](const std::vector<std::string>& v, const Counter& c) {
        os << f.name() << LabelSet(f.label_names(), v) << ' ' << FormatValue(c.value()) << '\n';
      });
    } else if (e->gauge) {
      const auto& f = *e->gauge;
      Header(os, f.name(), f.help(), "gauge");
      f.ForEach([&](const std::vector<std::string>& v, const Gauge& g) {
        os << f.name() << LabelSet(f.label_names(), v) << ' ' << FormatValue(g.value()) << '\n';
      });
    } else if (e->histogram) {
      const auto& f = *e->histogram;
      Header(os, f.name(), f.help(), "histogram");
      f.ForEach([&](const std::vector<std::string>& v, const Histogram& h) {
        Histogram::Snapshot s = h.Snap();
        for (size_t i = 0; i <= s.bounds.size(); ++i) {
          std::string le = i < s.bounds.size() ? FormatValue(s.bounds[i]) : "+Inf";
          os << f.name() << "_bucket" << LabelSet(f.label_names(), v, "le", le) << ' '
             << s.cumulative[i] << '\n';
        }
        os << f.name() << "_sum" << LabelSet(f.label_names(), v) << ' ' << FormatValue(s.sum)
           << '\n';
        os << f.name() << "_count" << LabelSet(f.label_names(), v) << ' ' << s.count << '\n';
      });
    }
  }
  return os.str();
}

}  // namespace ddp::bench_old

#endif  // DDP_BENCH_SCRAPE_OLD_REGISTRY_H_
