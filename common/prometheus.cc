#include "common/prometheus.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace ddp::metrics {
namespace {

// prometheus-cpp 1.0 writes HELP verbatim; the text format wants \\ and \n escaped there.
std::string EscapeHelp(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::map<std::string, std::string> LabelMap(const std::vector<std::string>& names,
                                            const std::vector<std::string>& values) {
  std::map<std::string, std::string> labels;
  for (size_t i = 0; i < names.size(); ++i) labels[names[i]] = values[i];
  return labels;
}

// Hooks of our Family<M> over the library's family `f` (owned by the library's registry).
template <typename M, typename P, typename... Args>
typename Family<M>::Hooks HooksFor(prometheus::Family<P>* f, Args... args) {
  typename Family<M>::Hooks h;
  h.make = [f, args...](const std::map<std::string, std::string>& labels) {
    return new M(&f->Add(labels, args...));
  };
  h.drop = [f, args...](const std::map<std::string, std::string>& labels) {
    if (f->Has(labels)) f->Remove(&f->Add(labels, args...));  // Add returns the existing child
  };
  return h;
}

// Our family's children, in our order, as the library's metrics collect themselves. Not through
// prometheus::Family::Collect: that one walks a hash map (a page in no order; sorting it back
// cost up to 1.7x the hand-written render, see bench/RESULTS.md) and writes labels in name order.
template <typename M>
void CollectInto(const Family<M>& f, prometheus::MetricFamily* out) {
  out->help = EscapeHelp(f.help());
  const std::vector<std::string>& names = f.label_names();
  f.ForEach([&](const std::vector<std::string>& values, const M& m) {
    out->metric.push_back(m.metric().Collect());
    std::vector<prometheus::ClientMetric::Label>& labels = out->metric.back().label;
    labels.reserve(names.size());
    for (size_t i = 0; i < names.size(); ++i) labels.push_back({names[i], values[i]});
  });
}

}  // namespace

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    std::snprintf(buf, sizeof(buf), "%.0f", v);
    return buf;
  }
  // The shortest precision that reads back as the same double: 0.1, not 0.10000000000000001.
  for (int precision = 15; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

std::string EscapeLabelValue(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

void Counter::Inc(double v) { c_->Increment(v); }  // the library ignores v < 0
double Counter::value() const { return c_->Value(); }
void Gauge::Set(double v) { g_->Set(v); }
void Gauge::Add(double v) { g_->Increment(v); }
double Gauge::value() const { return g_->Value(); }
void Histogram::Observe(double v) { h_->Observe(v); }

std::vector<double> DefaultSecondsBuckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
}

template <typename M>
M& Family<M>::Labels(std::vector<std::string> values) {
  values.resize(label_names_.size());
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = children_[values];
  if (!slot) slot.reset(hooks_.make(LabelMap(label_names_, values)));
  return *slot;
}

template <typename M>
void Family<M>::Remove(const std::vector<std::string>& values) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = children_.find(values);
  if (it == children_.end()) return;
  hooks_.drop(LabelMap(label_names_, values));
  children_.erase(it);
}

template <typename M>
void Family<M>::ForEach(
    const std::function<void(const std::vector<std::string>&, const M&)>& fn) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [values, metric] : children_) fn(values, *metric);
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

struct Registry::Entry {
  std::string name;
  prometheus::MetricType type = prometheus::MetricType::Untyped;
  std::unique_ptr<CounterFamily> counter;
  std::unique_ptr<GaugeFamily> gauge;
  std::unique_ptr<HistogramFamily> histogram;
};

Registry::Registry() : registry_(std::make_unique<prometheus::Registry>()) {}
Registry::~Registry() = default;

Registry::Entry* Registry::Find(const std::string& name) {
  for (auto& e : entries_) if (e->name == name) return e.get();
  auto e = std::make_unique<Entry>();
  e->name = name;
  entries_.push_back(std::move(e));
  return entries_.back().get();
}

CounterFamily& Registry::AddCounter(const std::string& name, const std::string& help,
                                    std::vector<std::string> label_names) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry* e = Find(name);
  if (!e->counter) {
    auto& f = prometheus::BuildCounter().Name(name).Help(EscapeHelp(help)).Register(*registry_);
    e->type = prometheus::MetricType::Counter;
    e->counter = std::make_unique<CounterFamily>(name, help, std::move(label_names),
                                                 HooksFor<Counter>(&f));
  }
  return *e->counter;
}

GaugeFamily& Registry::AddGauge(const std::string& name, const std::string& help,
                                std::vector<std::string> label_names) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry* e = Find(name);
  if (!e->gauge) {
    auto& f = prometheus::BuildGauge().Name(name).Help(EscapeHelp(help)).Register(*registry_);
    e->type = prometheus::MetricType::Gauge;
    e->gauge = std::make_unique<GaugeFamily>(name, help, std::move(label_names),
                                             HooksFor<Gauge>(&f));
  }
  return *e->gauge;
}

HistogramFamily& Registry::AddHistogram(const std::string& name, const std::string& help,
                                        std::vector<double> bounds,
                                        std::vector<std::string> label_names) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry* e = Find(name);
  if (!e->histogram) {
    auto& f = prometheus::BuildHistogram().Name(name).Help(EscapeHelp(help)).Register(*registry_);
    e->type = prometheus::MetricType::Histogram;
    e->histogram = std::make_unique<HistogramFamily>(
        name, help, std::move(label_names),
        HooksFor<Histogram>(&f, prometheus::Histogram::BucketBoundaries(bounds)));
  }
  return *e->histogram;
}

std::string Registry::Render() const {
  std::vector<prometheus::MetricFamily> page;
  {
    std::lock_guard<std::mutex> lock(mu_);
    page.reserve(entries_.size());
    for (const auto& e : entries_) {
      page.push_back(prometheus::MetricFamily{e->name, "", e->type, {}});
      prometheus::MetricFamily* out = &page.back();
      if (e->counter) CollectInto(*e->counter, out);
      else if (e->gauge) CollectInto(*e->gauge, out);
      else if (e->histogram) CollectInto(*e->histogram, out);
    }
  }
  return prometheus::TextSerializer().Serialize(page);
}

}  // namespace ddp::metrics
