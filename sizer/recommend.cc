#include "sizer/recommend.h"

#include <algorithm>

namespace rs::sizer {

Result<Recommendations> recommend(const Job& job, const PriceList* prices) {
  Recommendations out;
  for (const MachineType& type : machineTypes()) {
    if (type.isGpu()) continue;
    if (job.spec.tier1 && type.tier1Gbps <= 0) continue;
    Candidate c;
    c.type = &type;
    c.egressGbps = job.spec.tier1 ? type.tier1Gbps : type.defaultGbps;
    Rates rates = job.rates;
    rates.reducerGbps = c.egressGbps;
    rates.reducerVcpus = type.vcpus;
    auto sizing = sizePool(rates, job.spares);
    if (!sizing) return sizing.status();
    c.sizing = *sizing;
    c.totalVcpus = c.sizing.pool * type.vcpus;
    if (prices != nullptr) c.costPerHour = prices->poolCost(type.name, c.sizing.pool);
    out.byTotalVcpus.push_back(c);
  }
  std::sort(out.byTotalVcpus.begin(), out.byTotalVcpus.end(),
            [](const Candidate& a, const Candidate& b) {
              if (a.totalVcpus != b.totalVcpus) return a.totalVcpus < b.totalVcpus;
              if (a.sizing.pool != b.sizing.pool) return a.sizing.pool < b.sizing.pool;
              return a.type->name < b.type->name;
            });
  for (const Candidate& c : out.byTotalVcpus)
    if (c.costPerHour > 0) out.byCost.push_back(c);
  std::stable_sort(out.byCost.begin(), out.byCost.end(),
                   [](const Candidate& a, const Candidate& b) { return a.costPerHour < b.costPerHour; });
  return out;
}

}  // namespace rs::sizer
