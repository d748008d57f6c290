#include "core/cluster/sharding.h"

#include <catch2/catch.hpp>

using namespace rs::cluster;

TEST_CASE("chunks rotate over reducers, then over streams") {
  // R=3, K=2: chunks 0,1,2 on stream 0 of reducers 0,1,2; 3,4,5 on stream 1; 6.. wrap.
  CHECK(reducerForChunk(0, 3) == 0);
  CHECK(reducerForChunk(4, 3) == 1);
  CHECK(streamForChunk(2, 3, 2) == 0);
  CHECK(streamForChunk(3, 3, 2) == 1);
  CHECK(streamForChunk(5, 3, 2) == 1);
  CHECK(streamForChunk(6, 3, 2) == 0);
}

TEST_CASE("a large collective spreads over every reducer in chunks of at most max") {
  ChunkingOptions o{64 << 10, 1 << 20};
  // 64 MiB of fp32 over 4 reducers: 16 MiB each, capped at 1 MiB chunks.
  ChunkPlan p = planChunks((64ull << 20) / 4, 4, 4, o);
  CHECK(p.chunkElems == (1u << 20) / 4);
  CHECK(p.numChunks == 64);
}

TEST_CASE("a mid-size collective uses about S/R per chunk so one call covers all reducers") {
  ChunkingOptions o{64 << 10, 1 << 20};
  ChunkPlan p = planChunks((1ull << 20) / 4, 4, 8, o);  // 1 MiB over 8 reducers
  CHECK(p.chunkElems * 4 == 128 << 10);
  CHECK(p.numChunks == 8);
}

TEST_CASE("a tiny collective goes whole to one reducer") {
  ChunkingOptions o{64 << 10, 1 << 20};
  ChunkPlan p = planChunks(2048, 4, 16, o);  // 8 KiB
  CHECK(p.numChunks == 1);
  CHECK(p.elemsInChunk(0, 2048) == 2048);
}

TEST_CASE("sizes that do not divide leave a short last chunk") {
  ChunkingOptions o{4, 16};
  ChunkPlan p = planChunks(10, 4, 1, o);  // 40 bytes in 16-byte chunks of 4 elements
  CHECK(p.chunkElems == 4);
  CHECK(p.numChunks == 3);
  CHECK(p.elemsInChunk(2, 10) == 2);
  CHECK(planChunks(0, 4, 3, o).numChunks == 0);
}

TEST_CASE("an element larger than the chunk limit still makes progress") {
  ChunkingOptions o{1, 4};
  ChunkPlan p = planChunks(3, 8, 2, o);
  CHECK(p.chunkElems == 1);
  CHECK(p.numChunks == 3);
}
