// The Prometheus text parser on arbitrary bytes, within the scraper's limits. Besides not
// crashing: a page that parses, merged into one exposition, parses again with the same samples.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "common/exposition.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ddp::metrics;
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto fams = ParseExposition(text, {1 << 20, 5000});
  if (!fams.ok()) return 0;
  size_t samples = 0;
  for (const ParsedFamily& f : *fams) samples += f.samples.size();
  FindSample(*fams, "ddp_worker_steps_total", {{"rank", "0"}});
  const std::string merged = MergeExpositions({{{{"rank", "1"}}, text}});
  auto again = ParseExposition(merged);
  if (!again.ok()) std::abort();  // we wrote a page we cannot read
  size_t again_samples = 0;
  for (const ParsedFamily& f : *again) again_samples += f.samples.size();
  if (again_samples != samples) std::abort();
  return 0;
}
