// Catch2's main, compiled here rather than linked from Debian's prebuilt libCatch2WithMain.a:
// that archive is built without sanitizers, and its copies of inline library templates (for
// example std::shared_ptr's release path) can win at link time over our instrumented ones,
// which makes TSan report races that are not there.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
