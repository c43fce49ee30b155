#include "operator/kube/leader_election.h"

#include <cstdio>
#include <ctime>

#include "common/logging.h"
#include "operator/api/time_format.h"

namespace ddp::controller {
namespace {

std::string FormatMicroTime(WallTime t) {
  using namespace std::chrono;
  auto us = duration_cast<microseconds>(t.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(us / 1000000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(us % 1000000));
  return buf;
}

std::optional<WallTime> ParseOptionalTime(const nlohmann::json& spec, const char* field) {
  auto it = spec.find(field);
  if (it == spec.end() || !it->is_string()) return std::nullopt;
  auto t = api::ParseTime(it->get<std::string>());
  if (!t.ok()) return std::nullopt;
  return *t;
}

int DurationSeconds(std::chrono::milliseconds d) {
  // The API holds whole seconds; round up so a 1.5 s test lease is not written as 1 s.
  return static_cast<int>((d.count() + 999) / 1000);
}

}  // namespace

bool LeaseRecord::operator==(const LeaseRecord& o) const {
  return holder == o.holder && lease_duration_seconds == o.lease_duration_seconds &&
         acquire_time == o.acquire_time && renew_time == o.renew_time &&
         transitions == o.transitions;
}

LeaseRecord ParseLeaseSpec(const nlohmann::json& spec) {
  LeaseRecord r;
  if (!spec.is_object()) return r;
  r.holder = spec.value("holderIdentity", "");
  if (auto it = spec.find("leaseDurationSeconds"); it != spec.end() && it->is_number_integer())
    r.lease_duration_seconds = it->get<int>();
  if (auto it = spec.find("leaseTransitions"); it != spec.end() && it->is_number_integer())
    r.transitions = it->get<int>();
  r.acquire_time = ParseOptionalTime(spec, "acquireTime");
  r.renew_time = ParseOptionalTime(spec, "renewTime");
  return r;
}

nlohmann::json LeaseSpecToJson(const LeaseRecord& r) {
  nlohmann::json spec = {{"holderIdentity", r.holder},
                         {"leaseDurationSeconds", r.lease_duration_seconds},
                         {"leaseTransitions", r.transitions}};
  if (r.acquire_time) spec["acquireTime"] = FormatMicroTime(*r.acquire_time);
  if (r.renew_time) spec["renewTime"] = FormatMicroTime(*r.renew_time);
  return spec;
}

void LeaseDecider::Observe(const LeaseRecord& record, LeaseClock::time_point now) {
  if (!has_observed_ || !(record == observed_)) {
    observed_ = record;
    observed_at_ = now;
    has_observed_ = true;
  }
}

bool LeaseDecider::CanAcquire(LeaseClock::time_point now) const {
  if (!has_observed_ || observed_.holder.empty() || observed_.holder == config_.identity) {
    return true;
  }
  // The holder's own declared duration decides, as other implementations read it.
  auto duration = std::chrono::seconds(observed_.lease_duration_seconds);
  return now >= observed_at_ + duration;
}

LeaseRecord LeaseDecider::Claim(WallTime wall_now) const {
  LeaseRecord r;
  r.holder = config_.identity;
  r.lease_duration_seconds = DurationSeconds(config_.lease_duration);
  r.renew_time = wall_now;
  r.transitions = observed_.transitions;
  if (has_observed_ && observed_.holder == config_.identity) {
    r.acquire_time = observed_.acquire_time ? observed_.acquire_time : wall_now;
  } else {
    r.acquire_time = wall_now;
    if (has_observed_ && !observed_.holder.empty()) ++r.transitions;
  }
  return r;
}

LeaseRecord LeaseDecider::Release(WallTime wall_now) const {
  LeaseRecord r = observed_;
  r.holder = "";
  r.lease_duration_seconds = 1;
  r.renew_time = wall_now;
  r.acquire_time = wall_now;
  return r;
}

LeaderElector::LeaderElector(KubeClient* client, std::string ns, std::string name,
                             LeaderConfig config)
    : client_(client), ns_(std::move(ns)), name_(std::move(name)), decider_(std::move(config)) {}

Status LeaderElector::TryAcquireOrRenew() {
  std::lock_guard<std::mutex> l(mu_);
  const std::string key = ns_ + "/" + name_;
  auto got = client_->Get(kLeases, ns_, name_);
  if (!got.ok() && got.status().code() == StatusCode::kNotFound) {
    decider_.Observe(LeaseRecord{}, LeaseClock::now());
    nlohmann::json lease = {{"apiVersion", kLeases.ApiVersion()},
                            {"kind", kLeases.kind},
                            {"metadata", {{"name", name_}, {"namespace", ns_}}},
                            {"spec", LeaseSpecToJson(decider_.Claim(std::chrono::system_clock::now()))}};
    auto created = client_->Create(kLeases, ns_, lease);
    if (!created.ok()) return created.status().WithContext("create lease " + key);
    last_lease_ = std::move(*created);
    decider_.Observe(ParseLeaseSpec(last_lease_["spec"]), LeaseClock::now());
    return Status::OK();
  }
  if (!got.ok()) return got.status().WithContext("get lease " + key);
  last_lease_ = std::move(*got);
  decider_.Observe(ParseLeaseSpec(last_lease_.value("spec", nlohmann::json::object())),
                   LeaseClock::now());
  if (!decider_.CanAcquire(LeaseClock::now())) {
    return Status::FailedPrecondition("lease " + key + " is held by " + decider_.observed().holder);
  }
  nlohmann::json lease = last_lease_;
  lease["spec"] = LeaseSpecToJson(decider_.Claim(std::chrono::system_clock::now()));
  // last_lease_ carries metadata.resourceVersion, so a racing candidate gets Conflict.
  auto updated = client_->Update(kLeases, ns_, name_, lease);
  if (!updated.ok()) return updated.status().WithContext("update lease " + key);
  last_lease_ = std::move(*updated);
  decider_.Observe(ParseLeaseSpec(last_lease_["spec"]), LeaseClock::now());
  return Status::OK();
}

bool LeaderElector::SleepFor(std::chrono::milliseconds d) {
  std::unique_lock<std::mutex> l(mu_);
  cv_.wait_for(l, d, [&] { return stopped_; });
  return !stopped_;
}

Status LeaderElector::Acquire() {
  const auto& cfg = decider_.config();
  DDP_LOG(INFO) << "leader election: " << cfg.identity << " waiting for lease " << ns_ << "/"
                << name_;
  std::string last_reason;
  while (true) {
    Status s = TryAcquireOrRenew();
    if (s.ok()) {
      leader_ = true;
      DDP_LOG(INFO) << "leader election: " << cfg.identity << " acquired lease " << ns_ << "/"
                    << name_;
      return s;
    }
    if (s.message() != last_reason) {  // one line per change, not one per retry
      DDP_LOG(INFO) << "leader election: " << s.message();
      last_reason = s.message();
    }
    if (!SleepFor(cfg.retry_period)) return Status::Unavailable("leader election stopped");
  }
}

Status LeaderElector::KeepRenewing() {
  const auto& cfg = decider_.config();
  auto last_renew = LeaseClock::now();
  while (SleepFor(cfg.retry_period)) {
    Status s = TryAcquireOrRenew();
    if (s.ok()) {
      last_renew = LeaseClock::now();
      continue;
    }
    DDP_LOG(WARNING) << "leader election: renew failed: " << s.message();
    bool lost = s.code() == StatusCode::kFailedPrecondition;  // someone else holds it now
    if (lost || decider_.RenewExpired(last_renew, LeaseClock::now())) {
      leader_ = false;
      return Status::FailedPrecondition("lost the lease " + ns_ + "/" + name_ + ": " +
                                        s.message());
    }
  }
  return Status::OK();
}

void LeaderElector::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopped_ = true;
  }
  cv_.notify_all();
}

Status LeaderElector::Release() {
  std::lock_guard<std::mutex> l(mu_);
  if (!leader_.load() || last_lease_.is_null()) return Status::OK();
  nlohmann::json lease = last_lease_;
  lease["spec"] = LeaseSpecToJson(decider_.Release(std::chrono::system_clock::now()));
  auto updated = client_->Update(kLeases, ns_, name_, lease);
  leader_ = false;
  if (!updated.ok()) return updated.status().WithContext("release lease " + ns_ + "/" + name_);
  DDP_LOG(INFO) << "leader election: released lease " << ns_ << "/" << name_;
  return Status::OK();
}

}  // namespace ddp::controller
