// Prometheus text exposition (format 0.0.4): counters, gauges and histograms with labels.
// Owns the metric values; does not serve them (see http_server.h) and does not parse text
// (see exposition.h). Thread-safe: metrics may be updated from any thread while Render() runs.
#ifndef DDP_COMMON_PROMETHEUS_H_
#define DDP_COMMON_PROMETHEUS_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace ddp::metrics {

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
std::vector<double> DefaultSecondsBuckets();

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

// Text helpers, exposed for exposition.cc and tests.
std::string FormatValue(double v);                 // 3, 0.25, +Inf, NaN
std::string EscapeLabelValue(const std::string&);  // \\, \", \n escaped

}  // namespace ddp::metrics

#endif  // DDP_COMMON_PROMETHEUS_H_
