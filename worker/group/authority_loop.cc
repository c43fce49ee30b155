// The group authority's store adapter (see authority_loop.h).
#include "worker/group/authority_loop.h"

#include "common/logging.h"
#include "worker/comm/work_util.h"
#include "worker/group/budget.h"
#include "worker/group/keys.h"

namespace ddp::worker::group {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t, Clock::time_point now) {
  return std::chrono::duration<double>(now - t).count();
}

// The value of `key`, or "" when it does not exist (check first: get would block).
std::string GetOr(c10d::Store& s, const std::string& key) {
  return s.check({key}) ? Text(s.get(key)) : "";
}

}  // namespace

void TryAdvance(c10d::Store& store, int64_t g) {
  if (store.add(AdvanceKey(g), 1) == 1) store.add(kGenKey, 1);
}

AuthorityLoop::AuthorityLoop(c10::intrusive_ptr<c10d::Store> store, PresenceServer* presence,
                             AuthoritySettings settings, int world, std::chrono::milliseconds tick)
    : store_(std::move(store)),
      presence_(presence),
      settings_(settings),
      world_(world),
      tick_(tick),
      trainers_(static_cast<size_t>(world)) {
  thread_ = std::thread([this] { Run(); });
}

AuthorityLoop::~AuthorityLoop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

GroupReport AuthorityLoop::Report() const {
  std::lock_guard<std::mutex> lock(mu_);
  return report_;
}

void AuthorityLoop::Run() {
  while (!stop_.load()) {
    const auto next = Clock::now() + tick_;
    try {
      Tick();
    } catch (const std::exception& e) {
      DDP_LOG(WARNING) << "group authority: " << BackendErrorText(e);
    }
    while (!stop_.load() && Clock::now() < next) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
}

void AuthorityLoop::Tick() {
  c10d::Store& s = *store_;
  const auto now = Clock::now();
  GroupView v;
  v.world = world_;
  GroupReport r;
  // Registered pods, in registration order.
  const int64_t registered = s.add(kPodsKey, 0);
  while (static_cast<int64_t>(names_.size()) < registered &&
         s.check({PodAtKey(static_cast<int64_t>(names_.size()))})) {
    names_.push_back(Text(s.get(PodAtKey(static_cast<int64_t>(names_.size())))));
  }
  const auto seen = presence_->Snapshot();
  for (const std::string& name : names_) {
    PodView p;
    p.identity = GetOr(s, PodKey(name, "id"));
    if (p.identity.empty()) continue;
    const std::string home = GetOr(s, PodKey(name, "home"));
    p.home_node = home.empty() ? -1 : std::atoi(home.c_str());
    p.leaving = s.check({LeavingKey(p.identity)});
    p.verdict = GetOr(s, VerdictKey(p.identity));
    PodMemory& m = pod_memory_[p.identity];
    if (m.first_seen == Clock::time_point{}) m.first_seen = now;
    if (p.leaving && !m.leaving) m.leaving_since = now;
    m.leaving = p.leaving;
    p.leaving_seconds = p.leaving ? SecondsSince(m.leaving_since, now) : 0;
    auto it = seen.find(p.identity);
    if (it == seen.end()) {
      p.silent_seconds = SecondsSince(m.first_seen, now);
    } else {
      p.presence_closed = !it->second.open;
      p.silent_seconds = SecondsSince(it->second.last, now);
      if (it->second.open) ++r.open_connections;
    }
    if (p.verdict == kVerdictStop) r.stopping = true;
    if (p.leaving) r.any_leaving = true;
    r.metrics_of[name] = GetOr(s, PodKey(name, "metrics"));
    v.pods[name] = p;
  }
  v.node_holders.resize(static_cast<size_t>(settings_.nodes));
  ever_held_.resize(static_cast<size_t>(settings_.nodes), false);
  for (int n = 0; n < settings_.nodes; ++n) {
    v.node_holders[static_cast<size_t>(n)] = GetOr(s, NodeKey(n));
    if (!v.node_holders[static_cast<size_t>(n)].empty()) ever_held_[static_cast<size_t>(n)] = true;
  }
  v.ever_held = ever_held_;
  v.fenced.assign(fenced_.begin(), fenced_.end());
  // The generation and whether it formed.
  const int64_t g = s.add(kGenKey, 0);
  if (g != generation_) {
    generation_ = g;
    generation_since_ = now;
  }
  std::vector<std::string> arrived;
  for (int rank = 0; rank < world_; ++rank) arrived.push_back(ArrivedKey(g, rank));
  v.formed = s.check(arrived);
  ever_formed_ = ever_formed_ || v.formed;
  v.ever_formed = ever_formed_;
  v.unformed_seconds = v.formed ? 0 : SecondsSince(generation_since_, now);
  // Trainers' heartbeats (not of ranks that are done: they stopped beating on purpose).
  v.trainers.resize(static_cast<size_t>(world_));
  for (int rank = 0; rank < world_; ++rank) {
    if (s.check({DoneKey(rank)})) {
      ++v.done_ranks;
      continue;
    }
    TrainerMemory& m = trainers_[static_cast<size_t>(rank)];
    TrainerView& t = v.trainers[static_cast<size_t>(rank)];
    t.identity = GetOr(s, TrainerKey(rank, "id"));
    const int64_t hb = s.add(TrainerKey(rank, "hb"), 0);
    if (t.identity != m.identity || hb != m.hb) {
      m.identity = t.identity;
      m.hb = hb;
      m.changed = now;
    }
    t.silent_seconds = SecondsSince(m.changed, now);
    t.stall_reported = stalls_.count(rank) && stalls_[rank] == t.identity;
  }
  v.stop = s.check({kStopKey});
  v.abandon = s.check({kAbandonKey});
  v.finished = s.check({kFinishedKey});

  const Actions a = Decide(v, settings_);
  for (const std::string& line : a.log) DDP_LOG(INFO) << "group authority: " << line;
  for (const auto& [id, why] : a.fence) {
    fenced_.insert(id);
    s.set(FencedKey(id), Bytes(why));
  }
  for (const auto& [id, verdict] : a.verdicts) s.set(VerdictKey(id), Bytes(verdict));
  for (const auto& [node, id] : a.assign) {
    s.set(NodeKey(node), Bytes(id));
    v.node_holders[static_cast<size_t>(node)] = id;
  }
  for (const auto& [rank, id] : a.stalls) {
    stalls_[rank] = id;
    s.set(StallKey(rank), Bytes(id));
  }
  if (a.advance) TryAdvance(s, g);
  if (a.stop) s.set(kStopKey, Bytes("1"));
  if (!a.abandon.empty()) s.set(kAbandonKey, Bytes(a.abandon));
  if (a.finished) s.set(kFinishedKey, Bytes("1"));

  // The report.
  r.generation = s.add(kGenKey, 0);
  if (auto b = ReadBudget(s); b.ok()) {
    r.recoveries = b->recoveries;
    r.budget_left = b->left;
  }
  for (int n = 0; n < settings_.nodes; ++n) {
    const std::string& h = v.node_holders[static_cast<size_t>(n)];
    if (!h.empty()) r.members[n] = PodOfIdentity(h);
  }
  for (const auto& [name, p] : v.pods) {
    bool holds = false;
    for (const auto& h : v.node_holders) holds = holds || h == p.identity;
    if (!holds && IsLive(v, settings_, p.identity) && !p.leaving && !fenced_.count(p.identity)) {
      r.spares.push_back(name);
    }
  }
  for (const std::string& id : fenced_) {
    const size_t slash = id.find('/');
    r.fenced.push_back({id.substr(0, slash), slash == std::string::npos ? "" : id.substr(slash + 1)});
  }
  r.abandoned = v.abandon || !a.abandon.empty();
  r.finished = v.finished || a.finished;
  r.stopping = r.stopping || v.stop || a.stop;
  std::lock_guard<std::mutex> lock(mu_);
  report_ = std::move(r);
}

}  // namespace ddp::worker::group
