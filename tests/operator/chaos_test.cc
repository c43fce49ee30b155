// `ddp-operator chaos`'s pure parts: failures by name, the incident report and the soak's table
// (figures from the status as written), and the timeline picture (rates derived from samples
// in closed form; texts escaped; incidents drawn where and as long as they were).
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <set>

#include "operator/api/time_format.h"
#include "operator/chaos/report.h"
#include "operator/chaos/timeline_svg.h"

namespace ddp::chaos {
namespace {

using Words = std::vector<std::string>;

TEST(ChaosFailure, ParsesEveryNamedFailure) {
  struct Row {
    Words words;
    FailureKind kind;
    int rank;
    double seconds;
    std::string node;
  };
  for (const Row& r : std::vector<Row>{
           {{"kill-trainer", "3"}, FailureKind::kKillTrainer, 3, 0, ""},
           {{"delete-pod", "0"}, FailureKind::kDeletePod, 0, 0, ""},
           {{"freeze-pod", "1", "25"}, FailureKind::kFreezePod, 1, 25, ""},
           {{"freeze-pod", "1", "0.5"}, FailureKind::kFreezePod, 1, 0.5, ""},
           {{"drain-node", "kit-1"}, FailureKind::kDrainNode, -1, 0, "kit-1"},
           {{"kill-rendezvous"}, FailureKind::kKillRendezvous, -1, 0, ""}}) {
    auto f = ParseFailure(r.words);
    ASSERT_TRUE(f.ok()) << r.words[0] << ": " << f.status().ToString();
    EXPECT_EQ(f->kind, r.kind);
    EXPECT_EQ(f->rank, r.rank);
    EXPECT_EQ(f->seconds, r.seconds);
    EXPECT_EQ(f->node, r.node);
  }
  EXPECT_EQ(ParseFailure({"freeze-pod", "2", "30"})->ToString(), "freeze-pod 2 30");
}

TEST(ChaosFailure, RefusesWhatItCannotMean) {
  for (const Words& w : std::vector<Words>{
           {}, {"reboot"}, {"kill-trainer"}, {"kill-trainer", "-1"}, {"kill-trainer", "one"},
           {"kill-trainer", "1", "2"}, {"freeze-pod", "1"}, {"freeze-pod", "1", "0"},
           {"freeze-pod", "1", "-5"}, {"freeze-pod", "1", "3601"}, {"freeze-pod", "1", "ten"},
           {"drain-node"}, {"drain-node", std::string(254, 'n')}, {"kill-rendezvous", "0"},
           {"delete-pod", "99999999"}}) {
    EXPECT_FALSE(ParseFailure(w).ok()) << (w.empty() ? "(none)" : w[0]) << " " << w.size();
  }
  EXPECT_NE(ParseFailure({"reboot"}).status().message().find("HINT"), std::string::npos);
}

api::Incident Healed() {
  api::Incident i;
  i.kind = api::kIncidentTrainerExit;
  i.pod = "mingpt-worker-1";
  i.node = "kit-1";
  i.rank = 1;
  i.time = *api::ParseTime("2026-11-28T12:00:05Z");
  i.step = 420;
  i.detection_seconds = 0.05;
  i.stall_seconds = 0.614;
  i.steps_lost = 0;
  i.outcome = api::kOutcomeHealedInPlace;
  i.source = api::kSourceWorkers;
  return i;
}

TEST(ChaosReport, SaysWhatHappenedAndWhatItCost) {
  const std::string r = FormatIncident(Healed(), 3);
  for (const char* part : {"incident 3: TrainerExit of pod mingpt-worker-1 (node kit-1, rank 1)",
                           "at 2026-11-28T12:00:05Z, step 420", "detected after 0.05 s",
                           "training stood still 0.61 s (measured by the workers)",
                           "0 steps lost", "outcome: HealedInPlace"}) {
    EXPECT_NE(r.find(part), std::string::npos) << part << "\n" << r;
  }
  api::Incident open = Healed();
  open.stall_seconds.reset();
  open.outcome.clear();
  const std::string o = FormatIncident(open, 4);
  EXPECT_NE(o.find("still recovering"), std::string::npos) << o;
  EXPECT_NE(o.find("has not advanced"), std::string::npos) << o;
}

TEST(ChaosReport, TableSumsTheStalls) {
  api::Incident a = Healed(), b = Healed();
  b.stall_seconds = 2.0;
  b.kind = api::kIncidentHang;
  const std::string t = FormatTable({a, b}, 7, 0.98765);
  EXPECT_NE(t.find("   7  TrainerExit"), std::string::npos) << t;
  EXPECT_NE(t.find("   8  Hang"), std::string::npos) << t;
  // Mean (0.614 + 2.0) / 2 = 1.307, longest 2.0.
  EXPECT_NE(t.find("2 incident(s); stall mean 1.31 s, longest 2.00 s"), std::string::npos) << t;
  EXPECT_NE(t.find("goodput 0.9877"), std::string::npos) << t;
}

TEST(ChaosTimeline, RatesAreStepsOverSecondsAndNeverNegative) {
  const auto r = StepRates({{100, 0}, {101, 5}, {103, 9}, {104, 2}, {104, 3}});
  ASSERT_EQ(r.size(), 3u);  // the zero-length interval is dropped
  EXPECT_DOUBLE_EQ(r[0].step, 5.0);
  EXPECT_DOUBLE_EQ(r[1].step, 2.0);
  EXPECT_DOUBLE_EQ(r[2].step, 0.0) << "a step that went back (a resume) reads as no progress";
}

TEST(ChaosTimeline, DrawsTheRateAndEachIncident) {
  api::Incident i = Healed();
  i.kind = "<Trainer&Exit>";  // escaped, whatever a status holds
  i.time = *api::ParseTime("2026-11-28T12:00:05Z");
  const double t0 = std::chrono::duration<double>(i.time.time_since_epoch()).count() - 5;
  std::vector<StepSample> samples;
  for (int k = 0; k <= 10; ++k) samples.push_back({t0 + k, 10.0 * k});
  const std::string svg = RenderTimeline(samples, {i}, t0, t0 + 10, "run \"a\" & b");
  EXPECT_EQ(svg.rfind("<svg ", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_EQ(svg.find("<Trainer"), std::string::npos) << "unescaped text";
  EXPECT_NE(svg.find("&lt;Trainer&amp;Exit&gt;"), std::string::npos);
  EXPECT_NE(svg.find("run &quot;a&quot; &amp; b"), std::string::npos);
  EXPECT_EQ(std::count(svg.begin(), svg.end(), '\n') > 5, true);
  // One incident line at x = 60 + 5/10 * 880 = 500, a band 0.614/10 * 880 = 54.0 wide.
  EXPECT_NE(svg.find("class=\"incident\" x1=\"500.0\""), std::string::npos) << svg;
  EXPECT_NE(svg.find("class=\"stall\" x=\"500.0\" y=\"40.0\" width=\"54.0\""), std::string::npos) << svg;
  // Ten intervals of 10 steps/s: the polyline has ten points, all at the same height.
  const std::regex point("([0-9.]+),([0-9.]+) ");
  const std::string pts = svg.substr(svg.find("points=\""));
  std::set<std::string> heights;
  int n = 0;
  for (std::sregex_iterator m(pts.begin(), pts.end(), point), end; m != end; ++m, ++n) {
    heights.insert((*m)[2]);
  }
  EXPECT_EQ(n, 10);
  EXPECT_EQ(heights.size(), 1u);
}

}  // namespace
}  // namespace ddp::chaos
