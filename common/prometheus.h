// Metric families (counters, gauges, histograms with labels) and their text exposition (format
// 0.0.4), as a thin layer over prometheus-cpp's core library: the library owns the values, the
// families and the serializer; this layer keeps the project's interface (label values by position,
// children by reference, pages in registration order). It does not serve pages (see
// http_server.h) and does not parse them (see exposition.h). Thread-safe: metrics may be updated
// from any thread while Render() runs.
#ifndef DDP_COMMON_PROMETHEUS_H_
#define DDP_COMMON_PROMETHEUS_H_

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace prometheus {
class Registry;
class Counter;
class Gauge;
class Histogram;
}  // namespace prometheus

namespace ddp::metrics {

// The three below are handles on a prometheus-cpp metric owned by its family (not copyable; a
// reference stays valid until the child is removed).
class Counter {
 public:
  explicit Counter(prometheus::Counter* c) : c_(c) {}
  Counter(const Counter&) = delete;
  Counter& operator=(const Counter&) = delete;
  // REQUIRES: v >= 0 (counters only go up); a negative v is ignored.
  void Inc(double v = 1.0);
  double value() const;

  // The library's metric (Registry::Render reads it).
  const prometheus::Counter& metric() const { return *c_; }

 private:
  prometheus::Counter* const c_;
};

class Gauge {
 public:
  explicit Gauge(prometheus::Gauge* g) : g_(g) {}
  Gauge(const Gauge&) = delete;
  Gauge& operator=(const Gauge&) = delete;
  void Set(double v);
  void Add(double v);
  double value() const;

  // The library's metric (Registry::Render reads it).
  const prometheus::Gauge& metric() const { return *g_; }

 private:
  prometheus::Gauge* const g_;
};

class Histogram {
 public:
  explicit Histogram(prometheus::Histogram* h) : h_(h) {}
  Histogram(const Histogram&) = delete;
  Histogram& operator=(const Histogram&) = delete;
  // Counted in the first bucket whose bound is >= v (le is inclusive).
  void Observe(double v);

  // The library's metric (Registry::Render reads it).
  const prometheus::Histogram& metric() const { return *h_; }

 private:
  prometheus::Histogram* const h_;
};

// Default latency buckets in seconds: 1 ms .. 60 s.
std::vector<double> DefaultSecondsBuckets();

// One metric name with a fixed list of label names; children are created on first use and live
// until removed (references stay valid until then). Made by Registry only.
template <typename M>
class Family {
 public:
  // make(labels): a handle on the library's child for these labels (created if absent);
  // drop(labels): removes that child from the library's family.
  struct Hooks {
    std::function<M*(const std::map<std::string, std::string>&)> make;
    std::function<void(const std::map<std::string, std::string>&)> drop;
  };
  Family(std::string name, std::string help, std::vector<std::string> label_names, Hooks hooks)
      : name_(std::move(name)), help_(std::move(help)),
        label_names_(std::move(label_names)), hooks_(std::move(hooks)) {}
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
  const Hooks hooks_;
  mutable std::mutex mu_;
  std::map<std::vector<std::string>, std::unique_ptr<M>> children_;
};

using CounterFamily = Family<Counter>;
using GaugeFamily = Family<Gauge>;
using HistogramFamily = Family<Histogram>;

// Holds families in registration order, in a prometheus::Registry. Add* with a name already
// registered returns the existing family of that name (REQUIRES: same type and labels).
// A metric or label name the text format forbids, or a name already registered with another
// type, is a programming error: the library throws std::invalid_argument.
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
  // REQUIRES: bounds strictly increasing; +Inf is implicit.
  HistogramFamily& AddHistogram(const std::string& name, const std::string& help,
                                std::vector<double> bounds,
                                std::vector<std::string> label_names = {});
  // The whole exposition by prometheus::TextSerializer from the library's metrics: families in
  // registration order (a family without children as its HELP and TYPE), children in the order
  // of their label values, labels in the order of label_names().
  std::string Render() const;

 private:
  struct Entry;
  mutable std::mutex mu_;
  std::unique_ptr<prometheus::Registry> registry_;
  std::vector<std::unique_ptr<Entry>> entries_;
  Entry* Find(const std::string& name);
};

// Text helpers for exposition.cc (MergeExpositions writes parsed samples back out) and tests.
std::string FormatValue(double v);                 // 3, 0.25, +Inf, NaN
std::string EscapeLabelValue(const std::string&);  // \\, \", \n escaped

}  // namespace ddp::metrics

#endif  // DDP_COMMON_PROMETHEUS_H_
