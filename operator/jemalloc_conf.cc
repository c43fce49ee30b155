// jemalloc's options for ddp-operator, read once when the allocator starts (linked only when
// DDP_OPERATOR_MALLOC=jemalloc). Two arenas instead of four per CPU: the operator's threads are
// few and mostly waiting, and fewer arenas keep the resident set near the live data (23.5 vs
// 25.2 MiB at 1,000 jobs, at no measurable CPU cost; bench/RESULTS.md). MALLOC_CONF in the
// environment still overrides it.
extern "C" {
// NOLINTNEXTLINE: the name jemalloc looks for.
const char* malloc_conf = "narenas:2";
}
