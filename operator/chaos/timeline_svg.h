// A picture of a run: the step rate over time, each incident marked where it happened and
// shaded for as long as training stood still (status.incidents). Pure: values in, SVG text out.
#ifndef DDP_OPERATOR_CHAOS_TIMELINE_SVG_H_
#define DDP_OPERATOR_CHAOS_TIMELINE_SVG_H_

#include <string>
#include <vector>

#include "operator/api/types.h"

namespace ddp::chaos {

// One read of the job's step (rank 0's page, or status.progress): unix seconds, step.
struct StepSample {
  double at = 0;
  double step = 0;
};

// The step rate between consecutive samples (a step that went back, a new round resuming from
// an older checkpoint, reads as 0), plotted at each interval's end.
std::vector<StepSample> StepRates(const std::vector<StepSample>& samples);

// A standalone SVG (width x height pixels) of the rate over [from, to] unix seconds and of the
// incidents in that window: a vertical line at each incident's time, a band as wide as its
// stall, and its number and kind. Texts are XML-escaped. Samples outside the window are left
// out; an empty window still draws the axes.
std::string RenderTimeline(const std::vector<StepSample>& samples,
                           const std::vector<api::Incident>& incidents, double from, double to,
                           const std::string& title, int width = 960, int height = 320);

}  // namespace ddp::chaos

#endif  // DDP_OPERATOR_CHAOS_TIMELINE_SVG_H_
