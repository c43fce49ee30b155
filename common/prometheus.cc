#include "common/prometheus.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace ddp::metrics {
namespace {

void AtomicAdd(std::atomic<double>* a, double v) {
  double old = a->load();
  while (!a->compare_exchange_weak(old, old + v)) {
  }
}

std::string EscapeHelp(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

// `{a="x",le="0.5"}` or "" when there are no labels.
std::string LabelSet(const std::vector<std::string>& names, const std::vector<std::string>& values,
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

void Header(std::ostringstream& os, const std::string& name, const std::string& help,
            const char* type) {
  os << "# HELP " << name << ' ' << EscapeHelp(help) << '\n';
  os << "# TYPE " << name << ' ' << type << '\n';
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

void Counter::Inc(double v) {
  if (v < 0) return;
  AtomicAdd(&value_, v);
}

void Gauge::Add(double v) { AtomicAdd(&value_, v); }

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::Observe(double v) {
  size_t i = std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin();
  std::lock_guard<std::mutex> lock(mu_);
  counts_[i]++;
  sum_ += v;
}

Histogram::Snapshot Histogram::Snap() const {
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

std::vector<double> DefaultSecondsBuckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
}

template <typename M>
M& Family<M>::Labels(std::vector<std::string> values) {
  values.resize(label_names_.size());
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = children_[values];
  if (!slot) slot = make_();
  return *slot;
}

template <typename M>
void Family<M>::Remove(const std::vector<std::string>& values) {
  std::lock_guard<std::mutex> lock(mu_);
  children_.erase(values);
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
  std::unique_ptr<CounterFamily> counter;
  std::unique_ptr<GaugeFamily> gauge;
  std::unique_ptr<HistogramFamily> histogram;
};

Registry::Registry() = default;
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
    e->counter = std::make_unique<CounterFamily>(name, help, std::move(label_names),
                                                 [] { return std::make_unique<Counter>(); });
  }
  return *e->counter;
}

GaugeFamily& Registry::AddGauge(const std::string& name, const std::string& help,
                                std::vector<std::string> label_names) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry* e = Find(name);
  if (!e->gauge) {
    e->gauge = std::make_unique<GaugeFamily>(name, help, std::move(label_names),
                                             [] { return std::make_unique<Gauge>(); });
  }
  return *e->gauge;
}

HistogramFamily& Registry::AddHistogram(const std::string& name, const std::string& help,
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

std::string Registry::Render() const {
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

}  // namespace ddp::metrics
