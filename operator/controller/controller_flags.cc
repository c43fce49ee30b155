#include "operator/controller/controller_flags.h"

#include <cctype>
#include <cstdlib>
#include <functional>
#include <map>

namespace ddp::controller {
namespace {

bool ParseInt(const std::string& s, int* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  long v = std::strtol(s.c_str(), &end, 10);
  if (*end != '\0' || v < -1000000000L || v > 1000000000L) return false;
  *out = static_cast<int>(v);
  return true;
}

bool ParseDouble(const std::string& s, double* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  *out = std::strtod(s.c_str(), &end);
  return *end == '\0';
}

// An RFC 1123 label, as namespace names are: [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most 63.
bool IsNamespaceName(const std::string& v) {
  if (v.empty() || v.size() > 63 || v.front() == '-' || v.back() == '-') return false;
  for (char c : v) {
    if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) ||
          c == '-')) {
      return false;
    }
  }
  return true;
}

}  // namespace

bool ParseByteSize(const std::string& text, size_t* out) {
  size_t i = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  if (i == 0 || i > 12) return false;  // at most 999 GiB-ish digits: no overflow below
  const std::string unit = text.substr(i);
  size_t shift = 0;
  if (unit == "KiB" || unit == "Ki") shift = 10;
  else if (unit == "MiB" || unit == "Mi") shift = 20;
  else if (unit == "GiB" || unit == "Gi") shift = 30;
  else if (!unit.empty() && unit != "B") return false;
  const unsigned long long n = std::strtoull(text.substr(0, i).c_str(), nullptr, 10);
  if (n == 0 || n > (1ULL << 40) >> shift) return false;  // 1 TiB at most
  *out = static_cast<size_t>(n << shift);
  return true;
}

bool ParseDuration(const std::string& text, std::chrono::milliseconds* out) {
  if (text.empty()) return false;
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  double n = 0;
  if (!ParseDouble(text.substr(0, i), &n) || n < 0) return false;
  std::string unit = text.substr(i);
  double ms;
  if (unit == "ms") ms = n;
  else if (unit == "s" || unit.empty()) ms = n * 1000;
  else if (unit == "m") ms = n * 60000;
  else if (unit == "h") ms = n * 3600000;
  else return false;
  *out = std::chrono::milliseconds(static_cast<int64_t>(ms));
  return true;
}

Status ParseRunFlags(int argc, char** argv, RunFlags* f) {
  using Setter = std::function<bool(const std::string&)>;
  auto str = [](std::string* p) { return Setter([p](const std::string& v) { *p = v; return true; }); };
  auto dur = [](std::chrono::milliseconds* p) {
    return Setter([p](const std::string& v) { return ParseDuration(v, p); });
  };
  auto ns_name = [](std::string* p) {
    return Setter([p](const std::string& v) {
      if (!v.empty() && !IsNamespaceName(v)) return false;
      *p = v;
      return true;
    });
  };
  const std::map<std::string, Setter> valued = {
      {"kubeconfig", str(&f->kubeconfig)},
      {"namespace", str(&f->ns)},
      {"workers", [f](const std::string& v) { return ParseInt(v, &f->workers) && f->workers >= 1; }},
      {"leader-election-namespace", str(&f->leader_election_namespace)},
      {"leader-election-id", str(&f->leader_election_id)},
      {"identity", str(&f->identity)},
      {"leader-election-lease-duration", dur(&f->lease_duration)},
      {"leader-election-renew-deadline", dur(&f->renew_deadline)},
      {"leader-election-retry-period", dur(&f->retry_period)},
      {"metrics-bind-address", str(&f->metrics_addr)},
      {"health-probe-bind-address", str(&f->health_addr)},
      {"qps", [f](const std::string& v) { return ParseDouble(v, &f->qps); }},
      {"burst", [f](const std::string& v) { return ParseInt(v, &f->burst) && f->burst >= 1; }},
      {"log-level", [f](const std::string& v) { return ParseLogLevel(v, &f->log_level); }},
      {"resync-period", dur(&f->resync_period)},
      {"progress-interval", dur(&f->progress_interval)},
      {"progress-scrapers",
       [f](const std::string& v) { return ParseInt(v, &f->progress_scrapers) && f->progress_scrapers >= 1; }},
      {"cache-sync-timeout", dur(&f->sync_timeout)},
      {"scrape-max-bytes", [f](const std::string& v) { return ParseByteSize(v, &f->scrape_max_bytes); }},
      {"scrape-max-series",
       [f](const std::string& v) {
         int n = 0;
         if (!ParseInt(v, &n) || n < 1) return false;
         f->scrape_max_series = static_cast<size_t>(n);
         return true;
       }},
      {"straggler-factor",
       [f](const std::string& v) { return ParseDouble(v, &f->straggler_factor) && f->straggler_factor > 1; }},
      {"straggler-reads",
       [f](const std::string& v) { return ParseInt(v, &f->straggler_reads) && f->straggler_reads >= 1; }},
      {"lost-pod-margin", dur(&f->lost_pod_margin)},
      {"unfenced-lost-pod-margin", dur(&f->unfenced_lost_pod_margin)},
      // Written into every job's NetworkPolicy: a name the API server would refuse there
      // would stop every job, so it is refused here.
      {"operator-namespace", ns_name(&f->operator_namespace)},
      {"metrics-namespace", ns_name(&f->metrics_namespace)},
      {"gang-scheduler-name",
       [f](const std::string& v) { return plan::ParseGangSchedulerName(v, &f->gang); }},
  };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      f->help = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0) return Status::InvalidArgument("unexpected argument \"" + arg + "\"");
    std::string name = arg.substr(2), value;
    bool has_value = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    if (name == "leader-elect" || name == "network-policy") {
      bool* flag = name == "leader-elect" ? &f->leader_elect : &f->network_policy;
      if (!has_value || value == "true") *flag = true;
      else if (value == "false") *flag = false;
      else return Status::InvalidArgument("--" + name + ": expected true or false, got \"" + value + "\"");
      continue;
    }
    auto it = valued.find(name);
    if (it == valued.end()) return Status::InvalidArgument("unknown flag --" + name);
    if (!has_value) {
      if (i + 1 >= argc) return Status::InvalidArgument("--" + name + ": missing value");
      value = argv[++i];
    }
    if (!it->second(value)) {
      return Status::InvalidArgument("--" + name + ": invalid value \"" + value + "\"");
    }
  }
  if (f->renew_deadline >= f->lease_duration) {
    return Status::InvalidArgument("--leader-election-renew-deadline must be shorter than "
                                   "--leader-election-lease-duration");
  }
  if (f->retry_period >= f->renew_deadline) {
    return Status::InvalidArgument("--leader-election-retry-period must be shorter than "
                                   "--leader-election-renew-deadline");
  }
  return Status::OK();
}

const char* RunUsage() {
  return "usage: ddp-operator run [flags]\n"
         "  --kubeconfig PATH                 kubeconfig file (default: $KUBECONFIG, in-cluster)\n"
         "  --namespace NS                    watch one namespace (default: all)\n"
         "  --workers N                       concurrent reconciles (default 4)\n"
         "  --leader-elect[=true|false]       hold a Lease before acting (default false)\n"
         "  --leader-election-namespace NS    the Lease's namespace\n"
         "  --leader-election-id NAME         the Lease's name (default ddp-operator)\n"         "  --identity NAME                   this replica's name as the Lease holder and in its\n"
         "                                    Events (default: <hostname>_<pid>)\n"
         "  --leader-election-lease-duration D, --leader-election-renew-deadline D,\n"
         "  --leader-election-retry-period D  (defaults 15s, 10s, 2s)\n"
         "  --metrics-bind-address ADDR       /metrics (default :8080; 0 disables)\n"
         "  --health-probe-bind-address ADDR  /healthz, /readyz (default :8081; 0 disables)\n"
         "  --qps Q --burst B                 client-side API rate limit, each of two buckets:\n"
         "                                    pod/Service writes, the rest (default 500, 500)\n"
         "  --log-level LEVEL                 debug|info|warning|error (default info)\n"
         "  --resync-period D                 informers re-deliver their cache (default 10m)\n"
         "  --progress-interval D             read rank 0's /metrics of running jobs this often,\n"
         "                                    for status.progress and hangs (default 10s; 0: off)\n"
         "  --progress-scrapers N             /metrics reads in flight at most (default 8)\n"
         "  --scrape-max-bytes SIZE           refuse a /metrics page larger than SIZE (bytes, or\n"
         "                                    with KiB, MiB, GiB; default 4MiB)\n"
         "  --scrape-max-series N             refuse a page with more series (default 50000)\n"
         "  --straggler-factor F              a Straggler Event for a rank busy F (> 1) times the\n"
         "                                    other ranks' median per step (default 1.5) ...\n"
         "  --straggler-reads N               ... in N consecutive progress reads (default 3)\n"
         "  --lost-pod-margin D               force-delete a pod Terminating on a NotReady or\n"
         "                                    unreachable node D after its grace (default 30s)\n"
         "  --unfenced-lost-pod-margin D      ... D when it may still rejoin its group: InPlace,\n"
         "                                    current round, not fenced (default 5m)\n"
         "  --cache-sync-timeout D            (default 2m)\n"
         "  --network-policy[=true|false]     a NetworkPolicy per job: only its own pods reach\n"
         "                                    its pods (default true; spec.runPolicy.networkPolicy\n"
         "                                    overrides it per job)\n"
         "  --operator-namespace NS           may read jobs' metrics ports (default: the in-cluster\n"
         "                                    or kubeconfig namespace)\n"
         "  --metrics-namespace NS            Prometheus' namespace: may read jobs' metrics ports\n"
         "  --gang-scheduler-name NAME        gang-schedule every job: \"volcano\" (a Volcano\n"
         "                                    PodGroup), or the name of the scheduler profile\n"
         "                                    that runs the coscheduling plugin (a\n"
         "                                    scheduling.x-k8s.io PodGroup); default: none\n";
}

}  // namespace ddp::controller
