// mpi_allreduce: MPI_Allreduce, the other peer on the same links. The algorithm is MPI's to
// choose; the cluster runner forces Open MPI's ring through MCA parameters on the mpirun line
// (--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm 4), and the table
// header names what was in effect. Run under mpirun; rank 0 prints the allreduce_perf table.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <mpi.h>

#include <vector>

#include "bench/peers/peer_bench.h"
#include "core/common/env.h"

namespace {

std::string envOr(const char* name, const char* fallback) {
  return rs::envString(name).value_or(fallback);
}

int run(const std::string& label, const rs::bench::SweepOptions& sweep) {
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  const auto sizes = sweep.sizes();
  if (sizes.empty()) return 2;

  rs::bench::ResultTable table(label, world);
  if (rank == 0) {
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(version, &len);
    std::string lib(version, static_cast<size_t>(len));
    lib = lib.substr(0, lib.find_first_of(",\n"));
    table.header(fmt::format(
        "MPI_Allreduce ({}; coll_tuned_use_dynamic_rules={} allreduce_algorithm={}), iters {} "
        "warmup {}",
        lib, envOr("OMPI_MCA_coll_tuned_use_dynamic_rules", "unset"),
        envOr("OMPI_MCA_coll_tuned_allreduce_algorithm", "unset"), sweep.iters, sweep.warmup));
  }
  std::vector<float> send(sizes.back() / 4), recv(sizes.back() / 4);
  for (uint64_t bytes : sizes) {
    const int count = static_cast<int>(bytes / 4);
    // Out of place, so the checked pattern can be the input of every iteration.
    rs::bench::fillInput(send.data(), static_cast<uint64_t>(count), rank);
    for (int i = 0; i < sweep.warmup; ++i)
      MPI_Allreduce(send.data(), recv.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < sweep.iters; ++i)
      MPI_Allreduce(send.data(), recv.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double seconds = (MPI_Wtime() - t0) / sweep.iters;
    unsigned long long wrong = 0;
    if (sweep.check) {
      std::fill(recv.begin(), recv.begin() + count, -1.0f);
      MPI_Allreduce(send.data(), recv.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      wrong = rs::bench::countWrong(recv.data(), static_cast<uint64_t>(count), world);
    }
    MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) table.row(bytes, seconds, wrong);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  return rank == 0 ? table.footer() : 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  std::string label = "mpi";
  rs::bench::SweepOptions sweep;
  CLI::App app{"mpi_allreduce: MPI_Allreduce peer benchmark (fp32 sum); run under mpirun"};
  app.add_option("--label", label, "Name in the output (e.g. mpi_ring)")->capture_default_str();
  sweep.addTo(app);
  int code = 0;
  try {
    app.parse(argc, argv);
    code = run(label, sweep);
  } catch (const CLI::ParseError& e) {
    code = app.exit(e);
  }
  // Every rank parses the same arguments, so every rank takes the same path here.
  MPI_Finalize();
  return code;
}
