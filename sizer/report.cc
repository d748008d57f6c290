#include "sizer/report.h"

#include <fmt/format.h>

#include "core/common/byte_size.h"
#include "sizer/emit/emit.h"
#include "sizer/plan.h"

namespace rs::sizer {

namespace {

using nlohmann::json;

std::string duration(double seconds) {
  if (seconds < 1e-3) return fmt::format("{:.3g} us", seconds * 1e6);
  if (seconds < 1) return fmt::format("{:.3g} ms", seconds * 1e3);
  return fmt::format("{:.3g} s", seconds);
}

std::string reducerName(const Job& job) {
  return job.reducerType != nullptr ? job.reducerType->name : std::string("custom reducers");
}

std::string_view vertexWord(VertexTraining v) {
  return v == VertexTraining::kDocumented ? "documented" : "not verified";
}

std::string vcpuCostSource(const Job& job) {
  if (!job.defaultVcpuCost) return "--vcpu-per-10gbps";
  if (job.vcpuCostMeasuredForTransport()) return std::string(kVcpuCostSource);
  return fmt::format("{} (kernel TCP's cost, kept for --transport rdma: {})", kVcpuCostSource,
                     kRdmaCpuUnmeasured);
}

// What --transport rdma changes, for the text report; empty for TCP.
std::string transportText(const Job& job) {
  if (job.spec.transport == Transport::kTcp) return {};
  std::string text =
      job.defaultVcpuCost
          ? fmt::format("rdma (verbs, EFA): the bandwidth bound is the same as over TCP. The CPU "
                        "bound still uses kernel TCP's cost: {}. Pass your reducers' measured "
                        "cost with --vcpu-per-10gbps.",
                        kRdmaCpuUnmeasured)
          : std::string("rdma (verbs, EFA): the bandwidth bound is the same as over TCP; the CPU "
                        "bound uses the --vcpu-per-10gbps given (this project has measured no "
                        "RDMA figure).");
  if (job.workerType != nullptr || job.reducerType != nullptr)
    text += " The machine table's egress is each GCP type's gVNIC rate, not an RDMA NIC's: give "
            "those with --worker-gbps and --reducer-gbps.";
  return text;
}

void appendBounds(std::string& out, const Job& job, const Sizing& s) {
  const Rates& r = job.rates;
  fmt::format_to(std::back_inserter(out),
                 "  bandwidth bound: ceil({:g} / {:g}) = {} reducers\n"
                 "  cpu bound:       ceil({:g} x {:g} / (10 x {})) = {} reducers\n",
                 s.totalWorkerGbps, r.reducerGbps, s.bandwidthBound, s.totalWorkerGbps,
                 r.vcpuPer10Gbps, r.reducerVcpus, s.cpuBound);
}

// Where the reducers run, and what the platform allows.
std::string capacityText(const JobSpec& spec) {
  const bool spot = spec.reducerCapacity == ReducerCapacity::kSpot;
  switch (spec.platform) {
    case Platform::kVertex:
      return fmt::format("standard VMs: {}", kVertexSpotIsJobWide);
    case Platform::kGke:
      return spot ? "Spot VMs: a GKE Spot node pool (the emitted specs select "
                    "cloud.google.com/gke-spot and tolerate its taint)"
                  : "standard VMs (--reducer-capacity spot: a GKE Spot node pool)";
    case Platform::kGce:
      return spot ? "Spot VMs (gcloud compute instances create --provisioning-model=SPOT)"
                  : "standard VMs (--reducer-capacity spot: Spot VMs)";
  }
  return "?";
}

void appendAnswer(std::string& out, const Job& job, const Sizing& s) {
  if (s.spares == 0) {
    fmt::format_to(std::back_inserter(out), "\nAnswer: {} x {} (the {} bound binds)\n", s.pool,
                   reducerName(job), boundName(s.binding));
  } else {
    fmt::format_to(std::back_inserter(out),
                   "\nAnswer: {} x {} ({} for the {} bound, which binds, and {} spare{})\n", s.pool,
                   reducerName(job), s.reducers, boundName(s.binding), s.spares,
                   s.spares == 1 ? "" : "s");
  }
}

// What losing reducers costs the job, until it restarts (no rejoin yet); what the spares buy.
void appendLosses(std::string& out, const Job& job, const Sizing& s) {
  fmt::format_to(std::back_inserter(out),
                 "\nLosses: what the pool carries of the workers' {:g} Gbit/s with reducers gone. "
                 "Failover moves a lost\nreducer's share to the survivors and the collectives in "
                 "flight complete (proto/FAILOVER.md);\na restarted reducer is not taken back yet, "
                 "so a loss lasts until the job restarts.\n"
                 "  lost  live  pool egress  carried Gbit/s (share)  all-reduce time\n",
                 s.totalWorkerGbps);
  const std::vector<LossImpact> rows = lossTable(s);
  for (const LossImpact& l : rows)
    fmt::format_to(std::back_inserter(out), "  {:>4}  {:>4}  {:>10.0f}%  {:>22}  {:>14.2f}x\n", l.lost,
                   l.live, 100 * l.poolEgressFraction,
                   fmt::format("{:.4g} ({:.0f}%)", l.carriedGbps, 100 * l.carriedFraction), l.slowdown);
  if (s.pool == 1) {
    out += "  One reducer: losing it leaves none, and the job fails (failover needs a survivor).\n";
  } else if (s.spares > 0) {
    fmt::format_to(std::back_inserter(out),
                   "  The {} spare{} keep{} the pool at its bound through {} loss{}: the {} reducers "
                   "left carry all {:g} Gbit/s.\n",
                   s.spares, s.spares == 1 ? "" : "s", s.spares == 1 ? "s" : "", s.spares,
                   s.spares == 1 ? "" : "es", s.reducers, s.totalWorkerGbps);
  } else {
    fmt::format_to(std::back_inserter(out),
                   "  No spares: one loss leaves {:.0f}% of the workers' {:g} Gbit/s until the "
                   "job restarts;\n  --spare N keeps all of it through N losses.\n",
                   100 * rows[1].carriedFraction, s.totalWorkerGbps);
  }
  if (job.spec.reducerCapacity == ReducerCapacity::kSpot && s.spares == 0)
    out += "  Spot with no spares: every preemption takes the pool below its bound until the job "
           "restarts.\n";
}

void appendPredictions(std::string& out, const Report& rep) {
  const Job& job = *rep.job;
  const Rates& r = job.rates;
  const uint64_t bytes = *job.spec.gradientBytes;
  fmt::format_to(std::back_inserter(out),
                 "\nOne all-reduce of {} per worker at {:g} Gbit/s (ring: 2(W-1)/W x S/B_w; pool: "
                 "S/B_w x max(1, W*B_w / (R x {:g} Gbit/s usable per reducer))):\n"
                 "  size  reducers  through the pool  ring        speedup\n",
                 formatByteSize(bytes), r.workerGbps, rep.sizing.effectiveReducerGbps);
  for (const Prediction& p : rep.predictions)
    fmt::format_to(std::back_inserter(out), "  {:<4}  {:>8}  {:>16}  {:>10}  {:>6.2f}x\n", p.label,
                   p.reducers, duration(p.poolSeconds), duration(p.ringSeconds), p.speedup);
  if (r.workers == 1) out += "  (one worker: a ring moves nothing, so there is no speedup to show)\n";
  if (job.workerType != nullptr && job.workerType->gpuNicGbps > 0)
    fmt::format_to(std::back_inserter(out),
                   "  Note: NCCL's own ring between {} workers runs over their {:g} Gbit/s of GPU "
                   "NICs, which no reducer can reach: {} per all-reduce, against {} through the "
                   "pool.\n",
                   job.workerType->name, job.workerType->gpuNicGbps,
                   duration(ringSeconds(r.workers, job.workerType->gpuNicGbps, bytes)),
                   duration(rep.predictions.front().poolSeconds));
}

void appendCandidates(std::string& out, const std::vector<Candidate>& list, bool withCost) {
  out += "  rank  type                reducers  bound      vCPUs  Gbit/s  total vCPUs  vertex";
  out += withCost ? "        $/hour\n" : "\n";
  int rank = 0;
  for (const Candidate& c : list) {
    fmt::format_to(std::back_inserter(out), "  {:>4}  {:<18}  {:>8}  {:<9}  {:>5}  {:>6g}  {:>11}  {:<12}",
                   ++rank, c.type->name, c.sizing.pool, boundName(c.sizing.binding),
                   c.type->vcpus, c.egressGbps, c.totalVcpus, vertexWord(c.type->vertexTraining));
    if (withCost) {
      if (c.costPerHour > 0)
        fmt::format_to(std::back_inserter(out), "  {:>8.2f}", c.costPerHour);
      else
        out += "         -";
    }
    out += "\n";
  }
}

void appendRecommendations(std::string& out, const Report& rep) {
  const Job& job = *rep.job;
  const Recommendations& recs = *rep.recommendations;
  fmt::format_to(std::back_inserter(out),
                 "\nReducer types for this job, by the pool's total vCPUs (platform {}, {} "
                 "egress):\n",
                 platformName(job.spec.platform), job.spec.tier1 ? "Tier_1" : "default");
  appendCandidates(out, recs.byTotalVcpus, rep.prices != nullptr);
  if (rep.prices == nullptr) return;
  fmt::format_to(std::back_inserter(out),
                 "\nBy cost per hour (prices from {}; types it does not price are left out):\n",
                 rep.prices->source);
  if (recs.byCost.empty()) out += "  (none of the candidate types is priced)\n";
  else appendCandidates(out, recs.byCost, true);
}

json candidateJson(const Candidate& c) {
  json j = {{"reducer_type", c.type->name},
            {"reducers", c.sizing.reducers},
            {"pool_reducers", c.sizing.pool},
            {"binding_bound", boundName(c.sizing.binding)},
            {"bandwidth_bound", c.sizing.bandwidthBound},
            {"cpu_bound", c.sizing.cpuBound},
            {"vcpus_each", c.type->vcpus},
            {"egress_gbps_each", c.egressGbps},
            {"total_vcpus", c.totalVcpus},
            {"vertex_training", vertexWord(c.type->vertexTraining)}};
  j["cost_per_hour"] = c.costPerHour > 0 ? json(c.costPerHour) : json(nullptr);
  return j;
}

json orNull(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

}  // namespace

std::string formatText(const Report& rep) {
  const Job& job = *rep.job;
  const Rates& r = job.rates;
  const Sizing& s = rep.sizing;
  std::string out;
  fmt::format_to(std::back_inserter(out),
                 "Workers:   {} x {:g} Gbit/s egress ({}) = {:g} Gbit/s in all\n"
                 "Reducers:  {}: {} vCPUs, {:g} Gbit/s egress ({}); platform {}{}\n"
                 "Capacity:  {}\n"
                 "CPU cost:  {:g} vCPU per 10 Gbit/s a reducer receives and sends ({})\n",
                 r.workers, r.workerGbps, job.workerEgressBasis, s.totalWorkerGbps,
                 reducerName(job), r.reducerVcpus, r.reducerGbps, job.reducerEgressBasis,
                 platformName(job.spec.platform), job.spec.tier1 ? ", Tier_1" : "",
                 fmt::join(wrapText(capacityText(job.spec), 88), "\n           "), r.vcpuPer10Gbps,
                 !job.defaultVcpuCost                 ? "--vcpu-per-10gbps"
                 : job.vcpuCostMeasuredForTransport() ? "default, measured: see --help"
                                                      : "TCP's measured default: see Transport");
  if (const std::string transport = transportText(job); !transport.empty())
    fmt::format_to(std::back_inserter(out), "Transport: {}\n",
                   fmt::join(wrapText(transport, 88), "\n           "));
  out += "\n";
  appendBounds(out, job, s);
  appendAnswer(out, job, s);
  fmt::format_to(std::back_inserter(out),
                 "  each reducer carries {:.4g} Gbit/s in and out ({:.0f}% of its egress) and uses "
                 "{:.3g} of its {} vCPUs\n"
                 "  the pool: {} vCPUs, {:g} Gbit/s of egress\n",
                 perReducerGbps(r, s.pool), 100.0 * perReducerGbps(r, s.pool) / r.reducerGbps,
                 perReducerVcpusUsed(r, s.pool), r.reducerVcpus, s.pool * r.reducerVcpus,
                 static_cast<double>(s.pool) * r.reducerGbps);
  if (rep.prices != nullptr && job.reducerType != nullptr) {
    const double cost = rep.prices->poolCost(job.reducerType->name, s.pool);
    if (cost > 0)
      fmt::format_to(std::back_inserter(out), "  cost: {:.2f} $/hour ({} x {:g})\n", cost,
                     s.pool, rep.prices->priceOf(job.reducerType->name));
  }
  appendLosses(out, job, s);
  if (!rep.predictions.empty()) appendPredictions(out, rep);
  if (rep.recommendations != nullptr) appendRecommendations(out, rep);
  return out;
}

json toJson(const Report& rep) {
  const Job& job = *rep.job;
  const JobSpec& spec = job.spec;
  const Rates& r = job.rates;
  const Sizing& s = rep.sizing;
  json j;
  j["reducers"] = s.reducers;
  j["reducer_type"] = job.reducerType != nullptr ? json(job.reducerType->name) : json(nullptr);
  j["binding_bound"] = boundName(s.binding);
  j["bandwidth_bound"] = s.bandwidthBound;
  j["cpu_bound"] = s.cpuBound;
  j["spares"] = s.spares;
  j["pool_reducers"] = s.pool;
  j["reducer_capacity"] = capacityName(spec.reducerCapacity);
  // Inputs as given (null: not given), then the figures the model used.
  j["workers"] = r.workers;
  j["worker_type"] = orNull(spec.workerType);
  j["worker_gbps"] = spec.workerGbps ? json(*spec.workerGbps) : json(nullptr);
  j["worker_egress_gbps"] = r.workerGbps;
  j["worker_egress_basis"] = job.workerEgressBasis;
  j["reducer_gbps"] = r.reducerGbps;
  j["reducer_vcpus"] = r.reducerVcpus;
  j["reducer_egress_basis"] = job.reducerEgressBasis;
  j["tier1"] = spec.tier1;
  j["platform"] = platformName(spec.platform);
  j["vcpu_per_10gbps"] = r.vcpuPer10Gbps;
  j["vcpu_per_10gbps_source"] = vcpuCostSource(job);
  j["transport"] = transportName(spec.transport);
  j["vcpu_per_10gbps_measured_for_transport"] = job.vcpuCostMeasuredForTransport();
  j["total_worker_egress_gbps"] = s.totalWorkerGbps;
  j["effective_reducer_gbps"] = s.effectiveReducerGbps;
  j["per_reducer_gbps"] = perReducerGbps(r, s.pool);
  j["per_reducer_vcpus_used"] = perReducerVcpusUsed(r, s.pool);
  j["total_reducer_vcpus"] = s.pool * r.reducerVcpus;
  j["total_reducer_egress_gbps"] = static_cast<double>(s.pool) * r.reducerGbps;
  json losses = json::array();
  for (const LossImpact& l : lossTable(s))
    losses.push_back({{"lost", l.lost},
                      {"live", l.live},
                      {"pool_egress_fraction", l.poolEgressFraction},
                      {"carried_gbps", l.carriedGbps},
                      {"carried_fraction", l.carriedFraction},
                      {"slowdown", l.slowdown}});
  j["losses"] = losses;
  j["machine_table_read_on"] = kTableReadOn;
  j["gradient_bytes"] = spec.gradientBytes ? json(*spec.gradientBytes) : json(nullptr);
  if (!rep.predictions.empty()) {
    json rows = json::array();
    for (const Prediction& p : rep.predictions)
      rows.push_back({{"size", p.label},
                      {"reducers", p.reducers},
                      {"pool_seconds", p.poolSeconds},
                      {"ring_seconds", p.ringSeconds},
                      {"speedup", p.speedup}});
    j["predictions"] = rows;
    if (job.workerType != nullptr && job.workerType->gpuNicGbps > 0)
      j["ring_over_gpu_nics_seconds"] =
          ringSeconds(r.workers, job.workerType->gpuNicGbps, *spec.gradientBytes);
  }
  if (rep.prices != nullptr) {
    j["prices_file"] = rep.prices->source;
    const double cost =
        job.reducerType != nullptr ? rep.prices->poolCost(job.reducerType->name, s.pool) : -1.0;
    j["cost_per_hour"] = cost > 0 ? json(cost) : json(nullptr);
  }
  if (rep.recommendations != nullptr) {
    json byVcpus = json::array(), byCost = json::array();
    for (const Candidate& c : rep.recommendations->byTotalVcpus) byVcpus.push_back(candidateJson(c));
    for (const Candidate& c : rep.recommendations->byCost) byCost.push_back(candidateJson(c));
    j["recommendations"] = {{"by_total_vcpus", byVcpus}};
    if (rep.prices != nullptr) j["recommendations"]["by_cost_per_hour"] = byCost;
  }
  // What --emit would launch (platform and tier1 are among the inputs above).
  const EmitPlan plan = makePlan(job, s);
  j["plan"] = {{"worker_machine_type", orNull(plan.workerMachineType)},
               {"accelerator_type", orNull(plan.acceleratorType)},
               {"accelerator_count", plan.acceleratorCount},
               {"worker_count", plan.workers},
               {"reducer_machine_type", orNull(plan.reducerMachineType)},
               {"reducer_count", plan.reducers},
               {"spare_reducers", plan.spareReducers},
               {"spot_reducers", plan.spotReducers},
               {"reducer_vcpus", plan.reducerVcpus},
               {"reducer_memory_gb", plan.reducerMemoryGb > 0 ? json(plan.reducerMemoryGb) : json(nullptr)},
               {"worker_link_gbps", plan.workerLinkGbps},
               {"reducer_link_gbps", plan.reducerLinkGbps}};
  return j;
}

std::string formatTypeTable() {
  std::string out = fmt::format(
      "GCP machine types rs-sizer knows (figures read {}). Egress in Gbit/s; 'Tier_1' is the "
      "egress with per-VM Tier_1 networking ('-': none).\n",
      kTableReadOn);
  std::string_view lastSource;
  for (const MachineType& t : machineTypes()) {
    if (t.source != lastSource) {
      fmt::format_to(std::back_inserter(out), "\nSource of the rows below: {}\n", t.source);
      if (!t.note.empty()) fmt::format_to(std::back_inserter(out), "  note: {}\n", t.note);
      out += "  type                 vCPUs  memory GB  egress  Tier_1  accelerator               vertex training\n";
      lastSource = t.source;
    }
    const std::string tier1 = t.tier1Gbps > 0 ? fmt::format("{:g}", t.tier1Gbps) : "-";
    const std::string accel =
        t.isGpu() ? fmt::format("{} x{}", t.acceleratorType, t.acceleratorCount) : "-";
    const std::string memory = t.memoryGb > 0 ? fmt::format("{:g}", t.memoryGb) : "-";
    fmt::format_to(std::back_inserter(out), "  {:<19}  {:>5}  {:>9}  {:>6g}  {:>6}  {:<24}  {}\n",
                   t.name, t.vcpus, memory, t.defaultGbps, tier1, accel,
                   vertexWord(t.vertexTraining));
  }
  fmt::format_to(std::back_inserter(out), "\n{}\n", tableOmissions());
  return out;
}

json typeTableJson() {
  json rows = json::array();
  for (const MachineType& t : machineTypes())
    rows.push_back({{"name", t.name},
                    {"series", t.series},
                    {"vcpus", t.vcpus},
                    {"memory_gb", t.memoryGb > 0 ? json(t.memoryGb) : json(nullptr)},
                    {"egress_gbps", t.defaultGbps},
                    {"tier1_egress_gbps", t.tier1Gbps > 0 ? json(t.tier1Gbps) : json(nullptr)},
                    {"accelerator_type", t.isGpu() ? json(t.acceleratorType) : json(nullptr)},
                    {"accelerator_count", t.acceleratorCount},
                    {"gpu_nic_gbps", t.gpuNicGbps > 0 ? json(t.gpuNicGbps) : json(nullptr)},
                    {"vertex_training", vertexWord(t.vertexTraining)},
                    {"source", t.source},
                    {"note", t.note},
                    {"read_on", kTableReadOn}});
  return {{"machine_types", rows}, {"omissions", tableOmissions()}};
}

}  // namespace rs::sizer
