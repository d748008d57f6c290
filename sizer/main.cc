// rs-sizer: flags -> job -> sizing model -> report.
#include <fmt/format.h>

#include <optional>

#include "sizer/job.h"
#include "sizer/options.h"
#include "sizer/plan.h"
#include "sizer/prices.h"
#include "sizer/recommend.h"
#include "sizer/report.h"
#include "sizer/sizing.h"

namespace {

int fail(const rs::Status& status) {
  fmt::print(stderr, "rs-sizer: {}\n", status.message());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace rs::sizer;
  const ParsedOptions parsed = parseOptions(argc, argv);
  if (parsed.exitCode >= 0) return parsed.exitCode;
  const Options& opts = parsed.options;
  if (opts.listTypes) {
    fmt::print("{}\n", opts.json ? typeTableJson().dump(2) : formatTypeTable());
    return 0;
  }

  auto job = resolveJob(opts.job);
  if (!job) return fail(job.status());
  auto sizing = sizePool(job->rates, job->spares);
  if (!sizing) return fail(sizing.status());
  if (!opts.emitKind.empty()) {
    if (rs::Status s = checkEmittable(*job, opts.emitNames); !s.isOk()) return fail(s);
    auto text = emitSpec(opts.emitKind, makePlan(*job, *sizing, opts.emitNames));
    if (!text) return fail(text.status());
    fmt::print("{}", *text);
    return 0;
  }

  std::optional<PriceList> prices;
  if (!opts.pricesPath.empty()) {
    auto loaded = loadPrices(opts.pricesPath);
    if (!loaded) return fail(loaded.status());
    prices = std::move(*loaded);
  }
  std::optional<Recommendations> recs;
  if (opts.recommend) {
    auto ranked = recommend(*job, prices ? &*prices : nullptr);
    if (!ranked) return fail(ranked.status());
    recs = std::move(*ranked);
  }

  Report report;
  report.job = &*job;
  report.sizing = *sizing;
  if (job->spec.gradientBytes)
    report.predictions = predictAllReduce(job->rates, sizing->pool, *job->spec.gradientBytes);
  report.recommendations = recs ? &*recs : nullptr;
  report.prices = prices ? &*prices : nullptr;
  fmt::print("{}", opts.json ? toJson(report).dump(2) + "\n" : formatText(report));
  return 0;
}
