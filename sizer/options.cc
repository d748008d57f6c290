#include "sizer/options.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "core/common/build_info.h"
#include "core/common/byte_size.h"
#include "core/reduce/reduce.h"
#include "sizer/numbers.h"

namespace rs::sizer {

namespace {

std::string helpFooter() {
  return fmt::format(
      "\nThe model: reducers R = max(bandwidth bound, cpu bound), where the bandwidth bound is "
      "ceil(W*B_w / B_r) (the reducers' total egress at least the workers' total) and the cpu "
      "bound is ceil(W*B_w*f / (10*V_r)) (each reducer receives and sends W*B_w/R Gbit/s and "
      "needs f vCPUs per 10 Gbit/s of it).\n\n"
      "Spares and losses: --spare N launches R + N reducers, all of them working. With k of them "
      "lost the rest carry min(W*B_w, (R+N-k)*B_r_eff), so the pool keeps its bandwidth through "
      "N losses; the report shows k = 0, 1, N, N+1. Failover moves a lost reducer's share to the "
      "survivors and the collectives in flight complete (proto/FAILOVER.md); a restarted reducer "
      "is not taken back yet, so a loss lasts until the job restarts.\n\n"
      "Default f = {:g} vCPU per 10 Gbit/s, this project's own measurement: {}. The reducer "
      "process alone measured 0.7-0.8; the default counts its host's packet-receive work too, "
      "which a reducer VM pays. It is kernel TCP's cost: with --transport rdma this project has "
      "measured no figure (no RDMA hardware has run the reducer), so the CPU bound stays TCP's "
      "unless --vcpu-per-10gbps gives one measured on your reducers.\n\n"
      "Machine types: figures read {} from cloud.google.com compute docs and the datasets named "
      "per row (rs-sizer --list-types). Worker egress for A3/A4 GPU types is their "
      "general-purpose gVNIC share (200 or 400 Gbit/s), since their GPU NICs cannot reach a CPU "
      "VM. {}\n\n"
      "Prices file (--prices): lines 'type,dollars_per_hour', '#' comments. Include any Tier_1 "
      "networking surcharge in the price when sizing with --tier1.\n",
      kDefaultVcpuPer10Gbps, kVcpuCostSource, kTableReadOn, tableOmissions());
}

// A text flag that must hold a number; the value is parsed after CLI11 has read argv.
struct NumberFlag {
  std::string text;
  CLI::Option* option = nullptr;
  bool given() const { return option->count() > 0; }
};

}  // namespace

ParsedOptions parseOptions(int argc, char** argv) {
  ParsedOptions out;
  Options& o = out.options;
  CLI::App app{
      "rs-sizer: how many Reduction Server reducers a data-parallel training job needs, which "
      "bound sets the number, and what an all-reduce then costs against a ring."};
  app.set_version_flag("--version", versionLine("rs-sizer", reduce::activeTargetName()));
  app.footer(helpFooter());
  app.get_formatter()->column_width(34);

  NumberFlag workers, workerGbps, reducerGbps, reducerVcpus, vcpuCost, spares;
  std::string platform = "vertex", gradient, capacity = "standard", transport = "tcp";
  workers.option = app.add_option("--workers", workers.text, "GPU worker VMs in the job (W)")
                       ->type_name("N");
  app.add_option("--worker-type", o.job.workerType,
                 "The workers' GCP machine type (a2-megagpu-16g, a3-highgpu-8g, g2-standard-48, ...)")
      ->type_name("TYPE");
  workerGbps.option = app.add_option("--worker-gbps", workerGbps.text,
                                     "Each worker's egress in Gbit/s, instead of --worker-type")
                          ->type_name("G");
  app.add_option("--reducer-type", o.job.reducerType,
                 fmt::format("The reducers' GCP machine type (default {})", kDefaultReducerType))
      ->type_name("TYPE");
  reducerGbps.option = app.add_option("--reducer-gbps", reducerGbps.text,
                                      "Each reducer's egress in Gbit/s, instead of --reducer-type "
                                      "(needs --reducer-vcpus)")
                           ->type_name("G");
  reducerVcpus.option =
      app.add_option("--reducer-vcpus", reducerVcpus.text, "Each reducer's vCPUs, with --reducer-gbps")
          ->type_name("V");
  app.add_flag("--tier1", o.job.tier1,
               "Reducers run with per-VM Tier_1 networking (GKE, GCE; not Vertex AI)");
  app.add_option("--platform", platform, "Where the job runs: vertex, gke or gce (default vertex)")
      ->type_name("P");
  app.add_option("--gradient-bytes", gradient,
                 "Predict one all-reduce of this many bytes per worker (e.g. 512MiB, 1GB)")
      ->type_name("SIZE");
  vcpuCost.option = app.add_option("--vcpu-per-10gbps", vcpuCost.text,
                                   fmt::format("Reducer vCPUs per 10 Gbit/s of traffic in and "
                                               "out (default {:g}, measured; see below)",
                                               kDefaultVcpuPer10Gbps))
                        ->type_name("X");
  spares.option = app.add_option("--spare", spares.text,
                                 "Launch N reducers beyond what the bounds call for, so that the "
                                 "pool keeps its bandwidth through N losses (once failover lands)")
                      ->type_name("N");
  app.add_option("--reducer-capacity", capacity,
                 "The reducers' VMs: standard or spot (a GKE Spot node pool, GCE Spot VMs; not "
                 "Vertex AI, where Spot is set for the whole job)")
      ->type_name("C");
  app.add_option("--transport", transport,
                 "How workers reach the reducers: tcp (default) or rdma (verbs, EFA). rdma keeps the "
                 "bandwidth bound and TCP's CPU cost unless --vcpu-per-10gbps gives a measured one")
      ->type_name("T");
  app.add_flag("--recommend", o.recommend,
               "Size the job with every reducer type in the table, ranked by total vCPUs");
  app.add_option("--prices", o.pricesPath,
                 "CSV of 'type,dollars_per_hour': also rank --recommend by cost per hour")
      ->type_name("FILE");
  app.add_flag("--json", o.json, "Print JSON instead of text");
  app.add_flag("--list-types", o.listTypes,
               "Print the built-in machine table with each row's source, and exit");

  auto* emit = app.add_option("--emit", o.emitKind,
                              fmt::format("Write the launch file for the sized pool instead of "
                                          "the report: {} (deploy/README.md)",
                                          fmt::join(kEmitKinds, ", ")))
                   ->type_name("KIND");
  EmitPlan& names = o.emitNames;
  app.add_option("--worker-image", names.workerImage,
                 "With --emit: your training image with the plugin layer, as pushed")
      ->type_name("URI")->needs(emit);
  app.add_option("--reducer-image", names.reducerImage,
                 "With --emit: the reducer image (docker/), as pushed")
      ->type_name("URI")->needs(emit);
  app.add_option("--job-name", names.jobName, "With --emit: the job's name (a DNS-1035 label)")
      ->capture_default_str()->type_name("NAME")->needs(emit);
  app.add_option("--region", names.region, "With --emit: the Vertex AI region")
      ->capture_default_str()->type_name("REGION")->needs(emit);
  app.add_option("--train-script", names.trainScript,
                 "With --emit k8s: the script torchrun starts on each worker")
      ->capture_default_str()->type_name("PATH")->needs(emit);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    out.exitCode = app.exit(e);
    return out;
  }

  auto fail = [&](const Status& s) {
    fmt::print(stderr, "rs-sizer: {}\n", s.message());
    out.exitCode = 2;
    return out;
  };
  for (auto [flag, field] : {std::pair{&workers, &o.job.workers},
                             std::pair{&reducerVcpus, &o.job.reducerVcpus},
                             std::pair{&spares, &o.job.spares}}) {
    if (!flag->given()) continue;
    auto v = parseInteger(flag->text, flag->option->get_name());
    if (!v) return fail(v.status());
    *field = *v;
  }
  for (auto [flag, field] : {std::pair{&workerGbps, &o.job.workerGbps},
                             std::pair{&reducerGbps, &o.job.reducerGbps},
                             std::pair{&vcpuCost, &o.job.vcpuPer10Gbps}}) {
    if (!flag->given()) continue;
    auto v = parseNumber(flag->text, flag->option->get_name());
    if (!v) return fail(v.status());
    *field = *v;
  }
  auto p = parsePlatform(platform);
  if (!p) return fail(p.status());
  o.job.platform = *p;
  auto c = parseCapacity(capacity);
  if (!c) return fail(c.status());
  o.job.reducerCapacity = *c;
  auto t = parseTransport(transport);
  if (!t) return fail(t.status());
  o.job.transport = *t;
  if (!gradient.empty()) {
    auto bytes = parseByteSize(gradient);
    if (!bytes) return fail(invalidArgument("--gradient-bytes: " + bytes.status().message()));
    o.job.gradientBytes = *bytes;
  }
  return out;
}

}  // namespace rs::sizer
