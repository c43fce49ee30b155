// The group authority's store adapter (see authority_loop.h).
#include "worker/group/authority_loop.h"

#include <algorithm>
#include <cstdlib>

#include "common/logging.h"
#include "worker/comm/work_util.h"
#include "worker/group/budget.h"
#include "worker/group/keys.h"
#include "worker/group/store_read.h"

namespace ddp::worker::group {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t, Clock::time_point now) {
  return std::chrono::duration<double>(now - t).count();
}

// The node rank a pod's prepare/<identity> value names (keys.h): "1" its home, "1@<n>" node rank
// n; -1 for "0", nothing, or a value that is not one (a pod wrote it: never trusted in part).
int PreparedNode(const std::string& value, int home, int nodes) {
  if (value == "1") return home;
  if (value.size() < 3 || value.size() > 9 || value.rfind("1@", 0) != 0 ||
      value.find_first_not_of("0123456789", 2) != std::string::npos) {
    return -1;
  }
  const int n = std::atoi(value.c_str() + 2);
  return n < nodes ? n : -1;
}

// Whether trainer identity `now` is `before` restarted in place: the same pod object and local
// rank, another incarnation (keys.h TrainerIdentity). A pod that took the rank (a spare, a
// replacement, a rule-10 move) is not: its change of membership moved the generation already.
bool RestartedInPlace(const std::string& before, const std::string& now) {
  const size_t b = before.rfind('/'), n = now.rfind('/');
  return !before.empty() && !now.empty() && before != now && b != std::string::npos &&
         n != std::string::npos && before.compare(0, b, now, 0, n) == 0;
}

}  // namespace

bool TryAdvance(c10d::Store& store, int64_t g) {
  if (store.add(AdvanceKey(g), 1) != 1) return false;
  if (const std::string world = ValueOr(store, kWorldKey); !world.empty()) {
    store.set(GenWorldKey(g + 1), Bytes(world));
  }
  store.add(kGenKey, 1);
  return true;
}

int GenerationSize(c10d::Store& store, int64_t g) {
  for (const std::string& key : {GenWorldKey(g), std::string(kWorldKey)}) {
    if (const std::string v = ValueOr(store, key); !v.empty()) return std::atoi(v.c_str());
  }
  return 0;
}

int64_t AdvancePastResize(c10d::Store& store, int64_t moved, int world) {
  const std::string size = std::to_string(world);
  for (int64_t g = moved;; ++g) {
    if (TryAdvance(store, g)) return g + 1;
    // A member began g + 1 first (its collective failed), at the size it read then. Its mover
    // writes that size before it moves `gen`; one that died in between wrote neither.
    const WatchResult began =
        WatchKeys(store, {Changed(GenWorldKey(g + 1), "")}, std::chrono::seconds(2));
    if (!began.values[0]) {
      // A mover that died between the two (TryAdvance is two steps): nothing to end here.
      DDP_LOG(WARNING) << "group authority: generation " << g + 1 << " has no size after 2 s";
      return g + 1;
    }
    if (*began.values[0] == size) return g + 1;
  }
}

AuthorityLoop::AuthorityLoop(c10::intrusive_ptr<c10d::Store> store, PresenceServer* presence,
                             AuthoritySettings settings, int world, std::chrono::milliseconds tick,
                             int initial_nodes, DesiredNodes desired)
    : store_(std::move(store)),
      presence_(presence),
      settings_(settings),
      world_(world),
      per_node_(initial_nodes > 0 ? std::max(1, world / initial_nodes)
                                  : std::max(1, world / std::max(1, settings.nodes))),
      nodes_(initial_nodes > 0 ? initial_nodes : settings.nodes),
      desired_(std::move(desired)),
      asked_(initial_nodes > 0 ? initial_nodes : settings.nodes),
      tick_(tick),
      trainers_(static_cast<size_t>(per_node_ * std::max(1, settings.nodes))) {
  // A store that replaced a lost rendezvous pod keeps the size the group trains at (the members
  // wrote nothing of it; the authority is the only writer, so `world` absent means a new store).
  try {
    if (store_->check({kWorldKey})) {
      const int w = std::atoi(Text(store_->get(kWorldKey)).c_str());
      if (w > 0 && w % per_node_ == 0 && w / per_node_ <= settings_.nodes) {
        world_ = w;
        nodes_ = w / per_node_;
      }
    } else {
      store_->set(kWorldKey, Bytes(std::to_string(world_)));
    }
  } catch (const std::exception& e) {
    DDP_LOG(WARNING) << "group authority: cannot write the group's size: " << BackendErrorText(e);
  }
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

AuthorityLoop::Flags AuthorityLoop::Status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return Flags{report_.finished, report_.abandoned, report_.stopping, report_.any_leaving,
               report_.open_connections};
}

void AuthorityLoop::Run() {
  while (!stop_.load()) {
    const auto next = Clock::now() + tick_;
    try {
      const auto t0 = Clock::now();
      Tick();
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      if (ms > 500) DDP_LOG(WARNING) << "group authority: a tick took " << ms << " ms";
    } catch (const std::exception& e) {
      DDP_LOG(WARNING) << "group authority: " << BackendErrorText(e);
    }
    while (!stop_.load() && Clock::now() < next) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
}

void AuthorityLoop::SeedSize(const Membership& old) {
  seeded_generation_ = old.generation;
  const int n = SeedNodes(old, settings_, nodes_);
  if (n == nodes_) return;
  c10d::Store& s = *store_;
  const int from = world_;
  nodes_ = n;
  world_ = nodes_ * per_node_;
  for (int rank = world_; rank < static_cast<int>(trainers_.size()); ++rank) done_.erase(rank);
  s.set(kWorldKey, Bytes(std::to_string(world_)));
  shrunk_ = settings_.min_nodes > 0 ? std::max(0, asked_ - nodes_) : 0;
  DDP_LOG(INFO) << "group authority: the lost store's group trained at " << nodes_
                << " node rank(s): " << from << " -> " << world_ << " rank(s)"
                << (shrunk_ > 0 ? ", " + std::to_string(shrunk_) + " below the size asked" : "");
  // A member that arrived here at the size this store started with: that generation ends.
  const int64_t g = s.add(kGenKey, 0);
  if (s.add(ArrivalsKey(g), 0) > 0) TryAdvance(s, g);
}

// One pass, as the operator's controller makes one: observe, decide, apply, report.
void AuthorityLoop::Tick() {
  const auto now = Clock::now();
  GroupReport r;
  GroupView v = Observe(now, &r);          // 1. the store and the presence connections
  const Actions a = Decide(v, settings_);  // 2. the group's rules (authority.h), pure
  Say(a, v, now);
  Apply(a, &v);                            // 3. the actions, in the order I2 asks for
  Summarize(a, v, &r);                     // 4. what the rendezvous pod's /metrics says
  std::lock_guard<std::mutex> lock(mu_);
  report_ = std::move(r);
}

GroupView AuthorityLoop::Observe(Clock::time_point now, GroupReport* r) {
  GroupView v;
  // Rule 10 shrinks a group below the size it wants: the last size asked for (or its first, before
  // any) is what it grows back to.
  const int asked = desired_ ? desired_() : -1;
  if (asked > 0) asked_ = asked;
  v.desired_nodes = settings_.min_nodes > 0 ? asked_ : asked;
  // Presence first: a pod's done keys are written before its process ends, so a connection seen
  // closed here has its done keys in the reads below.
  const auto seen = presence_->Snapshot();
  // What pods and their supervisors wrote (registrations, trainer identities, ranks done) is read
  // again only when the registrations counter moved; what the authority writes itself (node
  // ranks, verdicts, stop, abandon) is remembered. A tick is a few round trips per pod and rank.
  ReadRegistrations(now);
  ObservePods(now, seen, &v, r);
  ObserveGeneration(now, &v);
  ObserveTrainers(now, &v);
  v.world = world_;  // after the reads: a lost store's copy may have set the size (SeedSize)
  v.nodes = nodes_;
  v.previous = previous_;
  v.previous_seconds =
      previous_since_ == Clock::time_point{} ? 0 : SecondsSince(previous_since_, now);
  v.stop = stopped_;
  v.abandon = abandoned_;
  v.finished = finished_;
  if (last_tick_ != Clock::time_point{}) {
    v.tick_late_seconds = std::max(0.0, SecondsSince(last_tick_, now) -
                                            std::chrono::duration<double>(tick_).count());
  }
  last_tick_ = now;
  v.since_slowdown_seconds = last_slowdown_ == Clock::time_point{} ? 1e9 : SecondsSince(last_slowdown_, now);
  v.since_silence_lost_seconds =
      last_silence_lost_ == Clock::time_point{} ? 1e9 : SecondsSince(last_silence_lost_, now);
  const double recent = 2 * settings_.liveness_seconds;
  silence_lost_at_.erase(
      std::remove_if(silence_lost_at_.begin(), silence_lost_at_.end(),
                     [&](Clock::time_point t) { return SecondsSince(t, now) >= recent; }),
      silence_lost_at_.end());
  v.recent_silence_lost = static_cast<int>(silence_lost_at_.size());
  return v;
}

void AuthorityLoop::ReadRegistrations(Clock::time_point now) {
  c10d::Store& s = *store_;
  const int64_t regs = s.add(kRegistrationsKey, 0);
  if (regs == registrations_) return;
  registrations_ = regs;
  const int64_t registered = s.add(kPodsKey, 0);
  while (static_cast<int64_t>(names_.size()) < registered &&
         s.check({PodAtKey(static_cast<int64_t>(names_.size()))})) {
    names_.push_back(Text(s.get(PodAtKey(static_cast<int64_t>(names_.size())))));
  }
  for (const std::string& name : names_) {
    PodInfo& info = pods_[name];
    info.identity = ValueOr(s, PodKey(name, "id"));
    const std::string home = ValueOr(s, PodKey(name, "home"));
    info.home = home.empty() ? -1 : std::atoi(home.c_str());
    info.metrics = ValueOr(s, PodKey(name, "metrics"));
    info.members = ValueOr(s, PodKey(name, "members"));
    info.prepare = info.identity.empty() ? "" : ValueOr(s, PrepareKey(info.identity));
  }
  std::vector<std::string> copies;
  for (const auto& [name, info] : pods_) {
    if (!info.members.empty()) copies.push_back(info.members);
  }
  if (Membership old = NewestMembers(copies, settings_.nodes); old.generation >= 0) {
    if (previous_since_ == Clock::time_point{}) {
      previous_since_ = now;
      DDP_LOG(INFO) << "group authority: this store replaced a lost one; its members ("
                    << old.holders.size() << " node rank(s), generation " << old.generation
                    << ") have " << RejoinWindowSeconds(settings_) << "s to register again";
    }
    // I4 (authority.h): the size the group trains at, until this store resized it itself.
    if (old.generation > seeded_generation_ && resizes_ == 0) SeedSize(old);
    previous_ = std::move(old.holders);
  }
  for (int rank = 0; rank < world_; ++rank) {
    trainers_[static_cast<size_t>(rank)].identity = ValueOr(s, TrainerKey(rank, "id"));
    if (!done_.count(rank) && s.check({DoneKey(rank)})) done_.insert(rank);
  }
}

void AuthorityLoop::ObservePods(Clock::time_point now, const PresenceSnapshot& seen, GroupView* v,
                                GroupReport* r) {
  c10d::Store& s = *store_;
  for (const auto& [name, info] : pods_) {
    if (info.identity.empty()) continue;
    PodView p;
    p.identity = info.identity;
    p.home_node = info.home;
    PodMemory& m = pod_memory_[p.identity];
    if (m.first_seen == Clock::time_point{}) m.first_seen = now;
    if (!m.leaving && s.check({LeavingKey(p.identity)})) {
      m.leaving = true;
      m.leaving_since = now;
    }
    p.leaving = m.leaving;
    p.leaving_seconds = p.leaving ? SecondsSince(m.leaving_since, now) : 0;
    p.verdict = m.verdict;
    p.registered_seconds = SecondsSince(m.first_seen, now);
    // A preparing pod is ready once a trainer of its own waits outside the group on each of the
    // ranks of the node rank it was created for (read until then: a few keys a tick).
    p.prepare_node = PreparedNode(info.prepare, info.home, settings_.nodes);
    p.preparing = p.prepare_node >= nodes_;
    p.deciding = info.prepare == kPrepareUndecided;
    if (p.preparing && !m.ready) {
      bool all = true;
      for (int k = 0; k < per_node_ && all; ++k) {
        const std::string t = ValueOr(s, ReadyKey(p.prepare_node * per_node_ + k));
        all = t.rfind(p.identity + "/", 0) == 0;
      }
      m.ready = all;
    }
    p.ready = m.ready;
    auto it = seen.find(p.identity);
    if (it == seen.end()) {
      p.silent_seconds = SecondsSince(m.first_seen, now);
    } else {
      p.presence_closed = !it->second.open;
      p.silent_seconds = SecondsSince(it->second.last, now);
      if (it->second.open) ++r->open_connections;
    }
    for (size_t n = 0; n < holders_.size(); ++n) {
      if (holders_[n] != p.identity) continue;
      p.done = true;
      for (int k = 0; k < per_node_; ++k) {
        p.done = p.done && done_.count(static_cast<int>(n) * per_node_ + k) > 0;
      }
    }
    if (p.verdict == kVerdictStop) r->stopping = true;
    if (p.leaving) r->any_leaving = true;
    r->metrics_of[name] = info.metrics;
    v->pods[name] = p;
  }
  holders_.resize(static_cast<size_t>(settings_.nodes));
  ever_held_.resize(static_cast<size_t>(settings_.nodes), false);
  v->node_holders = holders_;
  v->ever_held = ever_held_;
  v->fenced.assign(fenced_.begin(), fenced_.end());
}

void AuthorityLoop::ObserveGeneration(Clock::time_point now, GroupView* v) {
  c10d::Store& s = *store_;
  const int64_t g = s.add(kGenKey, 0);
  if (g != generation_) {
    generation_ = g;
    generation_since_ = Clock::time_point{};
  }
  // The clock runs from the generation's first arrival: a store that replaced a lost rendezvous
  // pod sees none while the group trains on in the generation it formed in the old one.
  if (generation_since_ == Clock::time_point{} && s.add(ArrivalsKey(g), 0) > 0) {
    generation_since_ = now;
  }
  std::vector<std::string> arrived;
  for (int rank = 0; rank < world_; ++rank) arrived.push_back(ArrivedKey(g, rank));
  v->formed = s.check(arrived);
  ever_formed_ = ever_formed_ || v->formed || s.check({kFormedKey});
  v->ever_formed = ever_formed_;
  v->unformed_seconds = v->formed || generation_since_ == Clock::time_point{}
                            ? 0
                            : SecondsSince(generation_since_, now);
}

void AuthorityLoop::ObserveTrainers(Clock::time_point now, GroupView* v) {
  c10d::Store& s = *store_;
  // Trainers' heartbeats (not of ranks that are done: they stopped beating on purpose).
  v->trainers.resize(static_cast<size_t>(world_));
  v->done_ranks = static_cast<int>(done_.size());
  for (int rank = 0; rank < world_; ++rank) {
    if (done_.count(rank)) continue;
    TrainerMemory& m = trainers_[static_cast<size_t>(rank)];
    TrainerView& t = v->trainers[static_cast<size_t>(rank)];
    t.identity = m.identity;
    const int64_t hb = s.add(TrainerKey(rank, "hb"), 0);
    // A trainer's clock starts at its first beat: starting (exec, loading LibTorch, creating
    // the device's context) is not silence. Until then the rendezvous timeout bounds it (its
    // generation cannot form without it), and its supervisor sees its process end.
    if (t.identity != m.seen_identity) {
      if (RestartedInPlace(m.seen_identity, t.identity)) m.restarted_in = generation_;
      m.seen_identity = t.identity;
      m.beaten = false;
      m.hb = hb;
      m.changed = now;
    } else if (hb != m.hb) {
      m.beaten = true;
      m.hb = hb;
      m.changed = now;
    }
    t.silent_seconds = m.beaten ? SecondsSince(m.changed, now) : 0;
    t.stall_reported = stalls_.count(rank) && stalls_[rank] == t.identity;
    // Rule 5b: read only for a rank restarted under the current generation (rare).
    t.restarted = m.restarted_in == generation_;
    if (t.restarted) {
      const std::string arrived = ValueOr(s, ArrivedKey(generation_, rank));  // "<step> <identity>"
      t.arrived = arrived.empty() ? "" : arrived.substr(arrived.find(' ') + 1);
    }
  }
}

void AuthorityLoop::Apply(const Actions& a, GroupView* v) {
  c10d::Store& s = *store_;
  for (const auto& [id, why] : a.fence) {
    fenced_.insert(id);
    s.set(FencedKey(id), Bytes(why));
    auto it = v->pods.find(PodOfIdentity(id));
    if (it != v->pods.end() && it->second.identity == id && it->second.presence_closed) {
      PodMemory& m = pod_memory_[id];
      m.exited = true;
      for (size_t n = 0; n < holders_.size(); ++n) {
        if (holders_[n] == id) m.held = static_cast<int>(n);
      }
    }
  }
  for (const auto& [id, verdict] : a.verdicts) {
    s.set(VerdictKey(id), Bytes(verdict));
    pod_memory_[id].verdict = verdict;
  }
  // Rule 10: a moved pod's trainers read where it went before they see it hold that rank.
  for (const auto& [id, node] : a.moves) s.set(MovedKey(id), Bytes(std::to_string(node)));
  for (const auto& [node, id] : a.assign) {
    // A free rank has no key (never an empty value, keys.h); the pod's own key says which rank
    // it holds, for it to watch.
    const std::string& before = holders_[static_cast<size_t>(node)];
    if (!before.empty() && before != id) s.deleteKey(AssignedKey(before));
    if (id.empty()) {
      s.deleteKey(NodeKey(node));
    } else {
      s.set(NodeKey(node), Bytes(id));
      s.set(AssignedKey(id), Bytes(std::to_string(node)));
    }
    holders_[static_cast<size_t>(node)] = id;
    v->node_holders[static_cast<size_t>(node)] = id;
    if (!id.empty()) ever_held_[static_cast<size_t>(node)] = true;
  }
  for (const auto& [rank, id] : a.stalls) {
    stalls_[rank] = id;
    s.set(StallKey(rank), Bytes(id));
  }
  const bool resize = a.resize_to > 0 && a.resize_to != nodes_;
  // The generation the group moves to: a resize ends whatever generation members arrived in.
  const int64_t moved = resize ? s.add(kGenKey, 0) : generation_;
  if (resize) {
    // `world` first, then the generation: a member that reads the new generation reads the new
    // size. Members that arrived in `moved` may have read the old size, so `moved` ends too.
    const int from = world_;
    nodes_ = a.resize_to;
    world_ = nodes_ * per_node_;
    s.set(kWorldKey, Bytes(std::to_string(world_)));
    ++resizes_;
    DDP_LOG(INFO) << "group authority: the group resizes in place: " << from << " -> " << world_
                  << " rank(s)"
                  << (a.graceful && moved == generation_ ? ", its members leaving at a step agreement"
                                                         : "");
    for (int rank = world_; rank < static_cast<int>(trainers_.size()); ++rank) {
      done_.erase(rank);  // a rank outside the group is not waited for, nor counted done
    }
    registrations_ = -1;  // the new ranks' trainers (a prepared one registered before): read them
    shrunk_ = std::min(shrunk_ + a.shrunk, std::max(0, asked_ - nodes_));
    if (a.shrunk > 0) {
      DDP_LOG(INFO) << "group authority: " << a.shrunk << " node rank(s) given up on losses; "
                    << shrunk_ << " below the size asked (" << asked_ << ")";
    }
  }
  // Who holds which node rank, and the group's size, for the pods to hand to a store that
  // replaces this one (I4).
  if (!a.assign.empty() || resize) {
    s.set(kMembersKey,
          Bytes(FormatMembers(a.advance || resize ? moved + 1 : moved, holders_, nodes_)));
  }
  // Rule 9c: said before the generation moves, so a member that sees it moved sees this too.
  if (resize && a.graceful && moved == generation_) s.set(GracefulKey(moved + 1), Bytes("1"));
  if (resize) {
    // I2: the group forms at the new size only in a generation begun after `world` was written.
    if (const int64_t next = AdvancePastResize(s, moved, world_); next != moved + 1) {
      DDP_LOG(INFO) << "group authority: generation " << moved + 1
                    << " began at the old size (a member moved it first): on to " << next;
      s.set(kMembersKey, Bytes(FormatMembers(next, holders_, nodes_)));
    }
  } else if (a.advance) {
    TryAdvance(s, moved);
  }
  if (a.stop) s.set(kStopKey, Bytes("1"));
  if (!a.abandon.empty()) s.set(kAbandonKey, Bytes(a.abandon));
  if (a.finished) s.set(kFinishedKey, Bytes("1"));
  stopped_ = stopped_ || a.stop;
  abandoned_ = abandoned_ || !a.abandon.empty();
  finished_ = finished_ || a.finished;
}

}  // namespace ddp::worker::group
