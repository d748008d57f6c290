// nccl_allreduce_e2e: one NCCL "node" (process) of a real NCCL all-reduce, for
// scripts/gpu-e2e.sh. With NCCL_NET_PLUGIN=reduction-server and NCCL_COLLNET_ENABLE=1 the
// all-reduce crosses the plugin's CollNet to the reducers. Several processes can share one GPU
// as separate nodes when each has its own NCCL_HOSTID.
//
//   nccl_allreduce_e2e --rank 0 --world 2 --dir /tmp/x [--device 0] [--iters 5]
// Checks every element of every size (fp32 sum and bf16 sum of small integers, exact) and
// exits non-zero on any mismatch or NCCL/CUDA error.
#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {

#define CUDA_OK(x)                                                                   \
  do {                                                                               \
    cudaError_t e = (x);                                                             \
    if (e != cudaSuccess) {                                                          \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); \
      std::exit(2);                                                                  \
    }                                                                                \
  } while (0)
#define NCCL_OK(x)                                                                   \
  do {                                                                               \
    ncclResult_t r = (x);                                                            \
    if (r != ncclSuccess) {                                                          \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, ncclGetErrorString(r)); \
      std::exit(2);                                                                  \
    }                                                                                \
  } while (0)

float input(int rank, size_t i) { return static_cast<float>((rank * 5 + i * 3) % 11); }

uint16_t toBf16(float f) {  // exact for the small integers used here
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>(u >> 16);
}
float fromBf16(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  int rank = 0, world = 2, device = 0, iters = 5;
  std::string dir = "/tmp";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--rank") rank = std::atoi(v.c_str());
    else if (k == "--world") world = std::atoi(v.c_str());
    else if (k == "--dir") dir = v;
    else if (k == "--device") device = std::atoi(v.c_str());
    else if (k == "--iters") iters = std::atoi(v.c_str());
  }
  CUDA_OK(cudaSetDevice(device));
  ncclUniqueId id;
  const std::string idFile = dir + "/nccl-unique-id";
  if (rank == 0) {
    NCCL_OK(ncclGetUniqueId(&id));
    std::ofstream(idFile + ".tmp", std::ios::binary).write(reinterpret_cast<char*>(&id), sizeof id);
    std::rename((idFile + ".tmp").c_str(), idFile.c_str());
  } else {
    for (int t = 0; t < 6000; ++t) {
      std::ifstream f(idFile, std::ios::binary);
      if (f && f.read(reinterpret_cast<char*>(&id), sizeof id)) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  ncclComm_t comm;
  NCCL_OK(ncclCommInitRank(&comm, world, id, rank));
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreate(&stream));

  long wrong = 0;
  for (size_t bytes = 1024; bytes <= (64u << 20); bytes *= 8) {
    for (int bf16 = 0; bf16 < 2; ++bf16) {
      const size_t esize = bf16 ? 2 : 4;
      const size_t count = bytes / esize;
      std::vector<char> host(bytes);
      for (size_t i = 0; i < count; ++i) {
        if (bf16) reinterpret_cast<uint16_t*>(host.data())[i] = toBf16(input(rank, i));
        else reinterpret_cast<float*>(host.data())[i] = input(rank, i);
      }
      void *send, *recv;
      CUDA_OK(cudaMalloc(&send, bytes));
      CUDA_OK(cudaMalloc(&recv, bytes));
      CUDA_OK(cudaMemcpy(send, host.data(), bytes, cudaMemcpyHostToDevice));
      const auto t0 = std::chrono::steady_clock::now();
      for (int it = 0; it < iters; ++it)
        NCCL_OK(ncclAllReduce(send, recv, count, bf16 ? ncclBfloat16 : ncclFloat32, ncclSum, comm,
                              stream));
      CUDA_OK(cudaStreamSynchronize(stream));
      const double us =
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
          iters;
      CUDA_OK(cudaMemcpy(host.data(), recv, bytes, cudaMemcpyDeviceToHost));
      long bad = 0;
      for (size_t i = 0; i < count; ++i) {
        float want = 0;
        for (int r = 0; r < world; ++r) want += input(r, i);
        const float got = bf16 ? fromBf16(reinterpret_cast<uint16_t*>(host.data())[i])
                               : reinterpret_cast<float*>(host.data())[i];
        bad += got != want;
      }
      wrong += bad;
      if (rank == 0)
        std::printf("%12zu bytes %5s sum: %10.1f us  algbw %7.3f GB/s  #wrong %ld\n", bytes,
                    bf16 ? "bf16" : "fp32", us, static_cast<double>(bytes) / us / 1e3, bad);
      CUDA_OK(cudaFree(send));
      CUDA_OK(cudaFree(recv));
    }
  }
  NCCL_OK(ncclCommDestroy(comm));
  std::printf("rank %d: %s (%ld wrong elements)\n", rank, wrong == 0 ? "all results correct" : "WRONG RESULTS", wrong);
  return wrong == 0 ? 0 : 1;
}
