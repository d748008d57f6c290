// --recommend: every reducer machine type in the table sized for the same job, ranked by the
// pool's total vCPUs (a proxy for cost that needs no price list), and by dollars per hour when
// a price list is given.
#pragma once

#include <vector>

#include "core/common/status.h"
#include "sizer/job.h"
#include "sizer/machine_types.h"
#include "sizer/prices.h"
#include "sizer/sizing.h"

namespace rs::sizer {

struct Candidate {
  const MachineType* type = nullptr;
  double egressGbps = 0;  // default, or Tier_1 when the job asks for it
  Sizing sizing;
  int64_t totalVcpus = 0;      // the pool (reducers and spares) * vCPUs each
  double costPerHour = -1;     // the pool * price; negative when the list has no price
};

struct Recommendations {
  std::vector<Candidate> byTotalVcpus;  // every candidate; ties: the smaller pool, then name
  std::vector<Candidate> byCost;        // the priced candidates only; empty without prices
};

// Candidates are the table's CPU types; with Tier_1 (GKE, GCE) only those that offer it, at
// their Tier_1 egress. The job's own reducer choice does not restrict the list; its spares are
// added to every candidate's pool.
Result<Recommendations> recommend(const Job& job, const PriceList* prices);

}  // namespace rs::sizer
