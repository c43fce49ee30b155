// Rank 0's page, fetched in the background (see rank0_page.h).
#include "worker/launch/rank0_page.h"

#include <cstdlib>

#include "common/http_server.h"

namespace ddp::worker {

using Clock = std::chrono::steady_clock;

MemberPageCache::MemberPageCache(Where where, std::chrono::milliseconds every,
                               std::chrono::milliseconds timeout,
                               std::chrono::milliseconds fresh_for)
    : where_(std::move(where)), every_(every), timeout_(timeout), fresh_for_(fresh_for) {
  thread_ = std::thread([this] { Run(); });
}

MemberPageCache::~MemberPageCache() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

std::string MemberPageCache::page() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (fetched_ == Clock::time_point{} || Clock::now() - fetched_ > fresh_for_) return "";
  return page_;
}

void MemberPageCache::Run() {
  while (!stop_.load()) {
    const auto next = Clock::now() + every_;
    const std::string where = where_();
    const size_t colon = where.rfind(':');
    if (colon != std::string::npos) {
      // Capped like the operator's own reads (its default --scrape-max-bytes): a larger page
      // would be refused there anyway, and must not grow this pod.
      auto page = HttpGet(where.substr(0, colon), std::atoi(where.c_str() + colon + 1), "/metrics",
                          static_cast<int>(timeout_.count()), 4 << 20);
      if (page.ok()) {
        std::lock_guard<std::mutex> lock(mu_);
        page_ = std::move(*page);
        fetched_ = Clock::now();
      }
    }
    while (!stop_.load() && Clock::now() < next) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
}

}  // namespace ddp::worker
