#include "core/cluster/dead_view.h"

namespace rs::cluster {

bool DeadView::learn(const DeadView& heard) {
  switch (age(generation, heard.generation)) {
    case Age::kOlder:
      return false;
    case Age::kNewer:
      *this = heard;
      return true;
    case Age::kSame:
      break;
  }
  DeadSet both = dead;
  if (!both.unite(heard.dead).isOk() || both == dead) return false;
  dead = both;
  return true;
}

std::string DeadView::toString() const {
  return "reducers " + dead.toString() + " (generation " + std::to_string(generation) + ")";
}

}  // namespace rs::cluster
