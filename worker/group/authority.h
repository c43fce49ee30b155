// The group authority's decisions, pure (DESIGN.md "Drains, silent nodes and the budget", "Hot
// spares"). The rendezvous pod runs one authority per round (authority_loop.h reads the store
// and the presence connections into a GroupView, calls Decide, and applies the Actions); this
// file only decides, so every rule is a table row in tests/worker/group_*_test.cc.
//
// The group's invariants (the rules below cite them; keys.h names the keys):
//   I1 one writer per key: the authority alone writes node/, assigned/, verdict/, fenced/,
//      stall/, moved/, world, members, stop, abandon and finished; a pod's supervisor writes
//      pod/<name>/ (the name by compareSet, never over an identity the group has not fenced or
//      given a verdict), leaving/, trainer/<rank>/id, done/, prepare/, then bumps registrations;
//      trainers write their heartbeats and the gen<G>/ keys; gen<G>/world is written once, by
//      whoever began G (TryAdvance: a trainer or the authority);
//   I2 order: moved/ before node/, node/ before world, world before gen moves; a generation's
//      mover writes its size (gen<G>/world, the `world` it read) before gen shows G, and every
//      member forms at that size, so all members of one generation agree on it; a resize ends
//      every generation a member began before `world` changed (AdvancePastResize);
//   I3 a fenced identity or one given a verdict never holds a node rank again; held node ranks
//      are below the group's size, and every member keeps its node rank unless a rule moves it;
//   I4 a new store knows what the old one knew: the members' copy (members: generation, the
//      group's size, the holders, so also where rule 10 moved a pod) seeds a store that
//      replaced a lost one: it trains at that size, each old holder that registers again within
//      the rejoin window gets its node rank back before any other pod, a rank kept for one is
//      neither given nor cut off by a shrink, and one not back in time is lost as in rule 1;
//   I5 a change of membership (a loss, a departure, a shrink, a stall, a trainer restarted in
//      place) moves the generation at once; only a growth alone of a formed generation lets it
//      train on (rule 9c).
//
// Decide applies the rules as named steps (authority_rules.h), in this order, each one seeing
// the decisions of those before it: Finished (8), LostPods (1), RejoinLost (1b, I4), DeadHolders
// (2), StopTogether and Departures (3), ShrinkAsked (9a), AssignFree (4, I4), ShrinkOnLoss (10,
// I4), Grow (9b), Stalls (5), Restarts (5b), Graceful (9c), Abandon (7); rule 6 is every step's
// `advance` (I5).
//
// The rules, by the numbers the docs and tests use:
//   1. a pod that is registered, has no verdict, has ranks still training and whose presence
//      connection closed (its process died: the kernel closed the socket) or stayed silent
//      longer than the liveness timeout (a frozen process, a silent node) is lost: fenced, and
//      its node rank freed (a pod whose ranks all finished leaves on purpose). Silence counts
//      only while the authority hears from at least half the pods and its tick is not late by
//      half the liveness timeout: more than half silent at once is the authority itself starved
//      or cut off (a quorum's reasoning), so it waits. A mass silence (kMassSilenceMin pods and
//      more than kMassSilenceShare of them quiet at once, fewer than half) is likelier the host,
//      the network or the store than that many deaths: one of them is declared lost per
//      liveness timeout, the longest silent first, while the others wait for the silence to
//      clear (a closed connection is a loss whatever the count);
//   2. a node rank whose holder is not a live registered pod (it re-registered under a new
//      identity, or was fenced) is freed, and the holder fenced with the fenced verdict (its
//      trainers' exits are then the group's doing, never charged); a member with the stop
//      verdict stays live;
//   3. SIGTERM: when every live member is leaving, the whole job stops (stop), unless a node rank
//      of the group was never held this round (a pod still on its way at the round's start: the
//      group never formed, there is nothing to save); otherwise the leaving members depart once
//      the first has been leaving for the stop window (so a whole-job stop whose signals arrive
//      a second or two apart is still one stop); a leaving spare departs at once. A departed pod
//      is fenced and its node rank freed;
//   4. a free node rank goes to the old member back with a new store that held it (I4), else to
//      the live pod created for it (the authority alone assigns node
//      ranks, so start-up follows the pod names), else, once it was held before (a member was
//      lost) or its pod has not come for the liveness timeout, to an idle spare (registered,
//      live, no node rank, not leaving; a pod whose own rank is held by a spare is a spare too);
//   5. a trainer silent longer than the liveness timeout while its pod is live is stalled (its
//      supervisor kills it and heals it like any trainer death); its clock starts at its first
//      heartbeat (authority_loop.cc), so a slow start is never silence. Slow is not stalled:
//      when trainers of at least two pods go silent together (a tenth of the live ones, or at
//      least four), or the authority's own clock stood still (a tick late by half the liveness
//      timeout), or within a liveness timeout of such a slowdown, it is a group-wide slowdown
//      (an overloaded machine, a saturated network or store): nobody is declared stalled, so
//      nothing is charged per rank;
//  5b. a trainer restarted in place (another identity on its rank) under a generation that
//      holds its predecessor moves the generation: its predecessor arrived in it, or it is a
//      store that replaced a lost one and formed no generation yet (the group trains on in the
//      old store's generation; the new incarnation, whose predecessor never arrived here, does
//      not move it itself). Peers that do not see a dead peer (NCCL over NVLink or shared
//      memory) would otherwise wait in the collective for its timeout;
//   6. any of 1-3, 5 or 5b moves the group to the next generation, releasing every member
//      blocked in a collective of the old one;
//   7. a generation not formed for longer than the rendezvous timeout since its first member
//      arrived abandons the group (a store that replaced a lost rendezvous pod has no arrivals
//      while the group trains on: nothing to abandon);
//   8. every rank done: finished;
//   9. resize (elastic in place, resize.h): a desired size below the group's makes the pods
//      holding the highest node ranks depart (not a failure, not charged; ranks stay dense); one
//      above it grows the group, once the whole group is held, by the live idle pods created for
//      the next node ranks (else other idle worker pods), as many as are there once all the
//      pods it needs are, or once the first of them has waited kGrowWaitSeconds (pods created
//      together start within seconds of each other: one re-formation, not one per pod). A pod
//      that prepares (its trainers build their data and model for its node rank outside the
//      group: prepare/<identity>) counts once its trainers are ready, or once it has been
//      registered kPrepareWaitSeconds (then it joins as any newcomer does); while one is still
//      preparing within that bound, the growth waits for it. A pod that may prepare and has
//      not said yet whether it does (prepare/<identity> "?") counts once it said, or once it
//      has been registered kDecideWaitSeconds. So the survivors wait for a
//      re-formation and a heal, not for the newcomers' start. Either moves the group to the next
//      generation at the new size; survivors keep their ranks and processes;
//  9c. a growth alone (nothing fenced, stalled or given a verdict, no other rule moving the
//      generation) of a generation that formed is graceful: its members train on and leave it at
//      a step agreement once every newcomer arrived (membership.h), losing no step. Anything else
//      ends the generation at once;
//  10. a loss without a spare (elastic in place, settings.min_nodes > 0): a node rank that was
//      held and that rule 4 left free (no idle pod to take it) is given up at once instead of
//      waiting for the lost member's replacement: the group shrinks by as many node ranks as it
//      lost, never below min_nodes (the ranks past that wait, as before), at its next
//      generation. Ranks stay dense: the pod holding the highest node rank takes the lowest
//      hole, and so on (one pod moves per hole: every other member keeps its rank, and the
//      group's ranks past its new size are free for the growth back). A pod that moves keeps
//      its trainers and their state (they follow it at their next Join, membership.h), so the
//      re-formation heals no one, unless a member finished the step in flight before the loss
//      ended it: then the others are behind it by that step and are healed from it. The group
//      still wants its size (the desired size, else the size it had): rule 9b grows it back
//      once the replacement is there (and ready, when it prepares for the node rank the moved
//      pod left: its home). Never in the decision that grows, nor while a rank at or past the
//      new size waits for an old member to register again (I4, rejoin.h), nor in an abandoned
//      group.
// And for a store that replaced a lost rendezvous pod (rejoin.h): a member of the old store that
// has not registered again within the rejoin window, or whose pod name another pod registered
// under (its pod was replaced), is lost like in rule 1 (fenced, the generation moves on, its node
// rank may go to a spare or the replacement); until then its node rank waits for it.
#ifndef DDP_WORKER_GROUP_AUTHORITY_H_
#define DDP_WORKER_GROUP_AUTHORITY_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace ddp::worker::group {

struct AuthoritySettings {
  int nodes = 1;                  // node ranks the group may ever hold (DDP_MAX_NODES, else NNODES)
  double liveness_seconds = 10;   // DDP_LIVENESS_TIMEOUT
  double stop_window_seconds = 3;
  double rendezvous_seconds = 600;  // DDP_RENDEZVOUS_TIMEOUT
  // Rule 10: the fewest node ranks the group may shrink to by itself when members are lost and
  // no idle pod takes their ranks (DDP_MIN_NODES: elastic.minReplicas); 0: never (the ranks
  // wait for the replacements).
  int min_nodes = 0;
};

// Rule 1's mass silence: at least this many pods, and more than this share of those that could be
// lost, quiet at once (silent for half the liveness timeout: a live pod beats every tenth of
// it), counting those declared lost by silence within the last two liveness timeouts (the same
// silence, one declared lost per timeout).
inline constexpr int kMassSilenceMin = 3;
inline constexpr double kMassSilenceShare = 0.125;

// How long a growth waits for the rest of the pods it needs once one of them is there.
inline constexpr double kGrowWaitSeconds = 2;
// How long a growth waits for a preparing pod's trainers to be ready (a start that hangs must not
// hold the growth back for good; past it the pod joins unprepared, as one that does not prepare).
inline constexpr double kPrepareWaitSeconds = 60;
// How long a growth waits for a pod that may prepare to say whether it does (it says so within
// milliseconds of its registration; one that hangs joins unprepared past this).
inline constexpr double kDecideWaitSeconds = 5;

struct PodView {
  std::string identity;         // as registered now ("<name>/<uid>")
  int home_node = -1;           // the node rank it was created for; -1 for a spare
  bool leaving = false;         // pod/<name>/leaving is set
  double leaving_seconds = 0;   // since the authority first saw it leaving
  std::string verdict;          // "" or the verdict already given
  bool presence_closed = false; // its presence connection closed (and no newer one is open)
  bool done = false;            // every rank of the node rank it holds finished training
  double silent_seconds = 0;    // since its last sign of life (presence byte or registration)
  double registered_seconds = 0; // since the authority first saw this identity registered
  bool preparing = false;       // its trainers prepare outside the group (rule 9)
  bool ready = false;           // ... and every one of them is ready
  bool deciding = false;        // it may prepare and has not said whether it does
  int prepare_node = -1;        // ... for this node rank (-1: home_node); rule 10's replacement
                                // prepares for the node rank the pod holding its home left
};

struct TrainerView {
  std::string identity;        // trainer/<rank>/id, "" when none yet
  double silent_seconds = 0;   // since its heartbeat last moved; 0 before its first beat
  bool stall_reported = false; // stall/<rank> already names this identity
  // Rule 5b: the identity took the place of another one this authority saw on the rank, while
  // the generation was the current one (a restart in place under it); and then, who arrived on
  // the rank in the current generation ("" nobody; read only for a restarted rank).
  bool restarted = false;
  std::string arrived;
};

struct GroupView {
  std::map<std::string, PodView> pods;    // registered pods by name
  std::vector<std::string> node_holders;  // by node rank; "" = free. size == settings.nodes
  int nodes = 0;          // node ranks in the group now: [0, nodes) train; 0: settings.nodes
  // The size asked for (resize.h; the loop keeps the last one read, and under rule 10 the
  // group's first size until one is read); -1: none, keep `nodes`.
  int desired_nodes = -1;
  std::vector<bool> ever_held;            // by node rank: held by some pod this round
  std::vector<TrainerView> trainers;      // by rank; may be empty
  std::vector<std::string> fenced;        // identities already fenced
  bool formed = false;             // every rank arrived in the current generation
  double unformed_seconds = 0;     // since the current generation began, while not formed
  bool ever_formed = false;        // some generation of this round formed
  bool stop = false;
  bool abandon = false;
  bool finished = false;
  double tick_late_seconds = 0;  // how much later than its period this tick came (rule 5)
  double since_slowdown_seconds = 1e9;  // since the last tick rule 5 read as a slowdown
  double since_silence_lost_seconds = 1e9;  // since rule 1 last declared a pod lost by silence
  int recent_silence_lost = 0;  // pods rule 1 declared lost by silence, two liveness timeouts back
  int done_ranks = 0;
  int world = 1;
  // A store that replaced a lost one: who held each node rank there, as the surviving pods said
  // when they registered again (node rank -> pod identity; rejoin.h); empty otherwise.
  std::map<int, std::string> previous;
  double previous_seconds = 0;  // since the first such report
};

struct Actions {
  std::vector<std::pair<std::string, std::string>> fence;     // identity, why
  std::vector<std::pair<std::string, std::string>> verdicts;  // pod identity, verdict
  std::vector<std::pair<int, std::string>> assign;            // node rank, identity ("" = free)
  std::vector<std::pair<int, std::string>> stalls;            // rank, trainer identity
  int resize_to = -1;  // the group's new node count; -1: unchanged
  // Rule 10: pods that take another node rank with their trainers (pod identity, its new node
  // rank; `assign` has the same change), and how many node ranks the group gave up on losses.
  std::vector<std::pair<std::string, int>> moves;
  int shrunk = 0;
  bool advance = false;
  bool graceful = false;  // with advance: rule 9c, the members leave at a step agreement
  bool stop = false;
  std::string abandon;  // non-empty: abandon the group, with this reason
  bool finished = false;
  std::vector<std::string> log;  // one line per decision
  int slowdown = 0;  // rule 5: trainers silent together, not declared stalled (0: none)
  int unheard = 0;   // rule 1: pods silent while the authority hears too few (none declared lost)
  int mass_silent = 0;   // rule 1: pods silent together (a mass silence), lost or not
  int silence_lost = 0;  // rule 1: pods declared lost by their silence alone

  bool empty() const;
};

// Pure: same view and settings, same actions.
Actions Decide(const GroupView& view, const AuthoritySettings& settings);

// Whether `identity`'s pod is registered under it, has no verdict and is not lost by rule 1.
bool IsLive(const GroupView& view, const AuthoritySettings& settings, const std::string& identity);

}  // namespace ddp::worker::group

#endif  // DDP_WORKER_GROUP_AUTHORITY_H_
