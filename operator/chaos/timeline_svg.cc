// The run's timeline as SVG (see timeline_svg.h).
#include "operator/chaos/timeline_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace ddp::chaos {
namespace {

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        if (static_cast<unsigned char>(c) >= 0x20 || c == '\t') out.push_back(c);
    }
  }
  return out;
}

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", v);
  return buf;
}

double Unix(api::TimePoint t) { return std::chrono::duration<double>(t.time_since_epoch()).count(); }

}  // namespace

std::vector<StepSample> StepRates(const std::vector<StepSample>& samples) {
  std::vector<StepSample> out;
  for (size_t k = 1; k < samples.size(); ++k) {
    const double dt = samples[k].at - samples[k - 1].at;
    if (dt <= 0) continue;
    const double ds = samples[k].step - samples[k - 1].step;
    out.push_back({samples[k].at, std::max(0.0, ds) / dt});
  }
  return out;
}

std::string RenderTimeline(const std::vector<StepSample>& samples,
                           const std::vector<api::Incident>& incidents, double from, double to,
                           const std::string& title, int width, int height) {
  const double left = 60, right = 20, top = 40, bottom = 40;
  const double plot_w = width - left - right, plot_h = height - top - bottom;
  const double span = std::max(1e-9, to - from);
  const std::vector<StepSample> rates = StepRates(samples);
  double peak = 0;
  for (const StepSample& r : rates) {
    if (r.at >= from && r.at <= to) peak = std::max(peak, r.step);
  }
  peak = peak > 0 ? peak * 1.1 : 1;
  auto x = [&](double t) { return left + (std::clamp(t, from, to) - from) / span * plot_w; };
  auto y = [&](double v) { return top + plot_h - v / peak * plot_h; };
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(width) +
                    "\" height=\"" + std::to_string(height) + "\" font-family=\"sans-serif\" "
                    "font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg += "<text x=\"" + Num(left) + "\" y=\"20\" font-size=\"14\">" + Escape(title) + "</text>\n";
  // Incidents under the curve: a band for the stall, a line at the time, the number and kind.
  int number = 0;
  for (const api::Incident& i : incidents) {
    ++number;
    const double at = Unix(i.time);
    if (at > to || at + i.stall_seconds.value_or(0) < from) continue;
    if (i.stall_seconds && *i.stall_seconds > 0) {
      svg += "<rect class=\"stall\" x=\"" + Num(x(at)) + "\" y=\"" + Num(top) + "\" width=\"" +
             Num(std::max(1.0, x(at + *i.stall_seconds) - x(at))) + "\" height=\"" + Num(plot_h) +
             "\" fill=\"#f4b183\" fill-opacity=\"0.5\"/>\n";
    }
    svg += "<line class=\"incident\" x1=\"" + Num(x(at)) + "\" x2=\"" + Num(x(at)) + "\" y1=\"" +
           Num(top) + "\" y2=\"" + Num(top + plot_h) + "\" stroke=\"#c00000\"/>\n";
    std::string label = "#" + std::to_string(number) + " " + i.kind;
    if (i.stall_seconds) label += " " + Num(*i.stall_seconds) + "s";
    svg += "<text x=\"" + Num(x(at) + 3) + "\" y=\"" + Num(top + 12 + 12 * (number % 3)) +
           "\" fill=\"#c00000\">" + Escape(label) + "</text>\n";
  }
  // The rate.
  std::string points;
  for (const StepSample& r : rates) {
    if (r.at < from || r.at > to) continue;
    points += Num(x(r.at)) + "," + Num(y(r.step)) + " ";
  }
  if (!points.empty()) {
    svg += "<polyline class=\"rate\" fill=\"none\" stroke=\"#1f4e79\" stroke-width=\"1.5\" points=\"" +
           points + "\"/>\n";
  }
  // Axes and their labels.
  svg += "<line x1=\"" + Num(left) + "\" y1=\"" + Num(top + plot_h) + "\" x2=\"" + Num(left + plot_w) +
         "\" y2=\"" + Num(top + plot_h) + "\" stroke=\"black\"/>\n";
  svg += "<line x1=\"" + Num(left) + "\" y1=\"" + Num(top) + "\" x2=\"" + Num(left) + "\" y2=\"" +
         Num(top + plot_h) + "\" stroke=\"black\"/>\n";
  for (int k = 0; k <= 4; ++k) {
    const double t = from + span * k / 4, v = peak * k / 4;
    svg += "<text x=\"" + Num(x(t)) + "\" y=\"" + Num(top + plot_h + 15) + "\" text-anchor=\"middle\">" +
           Num(t - from) + "s</text>\n";
    svg += "<text x=\"" + Num(left - 5) + "\" y=\"" + Num(y(v) + 4) + "\" text-anchor=\"end\">" +
           Num(v) + "</text>\n";
  }
  svg += "<text x=\"" + Num(left + plot_w / 2) + "\" y=\"" + Num(height - 5.0) +
         "\" text-anchor=\"middle\">seconds since the start; steps per second (blue), incidents "
         "(red, shaded while training stood still)</text>\n</svg>\n";
  return svg;
}

}  // namespace ddp::chaos
