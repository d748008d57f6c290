// SpecValue: block YAML that every YAML reader takes for the same document, and its JSON twin.
#include <catch2/catch.hpp>

#include "sizer/emit/spec_value.h"

using rs::sizer::SpecValue;

namespace {
std::string yamlOf(const std::string& text) { return SpecValue::map({{"k", text}}).toYaml(); }
}  // namespace

TEST_CASE("spec_value: strings stay plain only where no YAML reader takes them for something else") {
  CHECK(yamlOf("reduction-server") == "k: reduction-server\n");
  CHECK(yamlOf("/metrics") == "k: /metrics\n");
  CHECK(yamlOf("us-docker.pkg.dev/p/r/image:0.1.0") == "k: us-docker.pkg.dev/p/r/image:0.1.0\n");
  CHECK(yamlOf("a-0.b:2222,c-1.b:2222") == "k: a-0.b:2222,c-1.b:2222\n");
  // Numbers, YAML 1.1 booleans and null, and an address that starts with a digit.
  for (const char* text : {"1", "2224", "0.5", "0x1f", "1_000", "1:20", "0.0.0.0:2222", "6GiB"}) {
    CHECK(yamlOf(text) == "k: \"" + std::string(text) + "\"\n");
  }
  for (const char* text : {"true", "False", "yes", "No", "on", "OFF", "y", "n", "null"}) {
    CHECK(yamlOf(text) == "k: \"" + std::string(text) + "\"\n");
  }
  // Indicators, spaces, a trailing colon, the empty string.
  for (const char* text : {"", "-x", "--node-rank=$(JOB_COMPLETION_INDEX)", "a b", "a: b", "abc:", "#x", "*x",
                           "&x", "!x", "%x", "@x", "`x", "{x}", "[x]", "x#y", "~"}) {
    CHECK(yamlOf(text).rfind("k: \"", 0) == 0);
  }
}

TEST_CASE("spec_value: quoting escapes what JSON escapes") {
  CHECK(rs::sizer::jsonQuote("a\"b\\c\nd\te\x01") == "\"a\\\"b\\\\c\\nd\\te\\u0001\"");
  CHECK(yamlOf("say \"hi\"") == "k: \"say \\\"hi\\\"\"\n");
}

TEST_CASE("spec_value: nested maps and lists, sequences indented under their key") {
  SpecValue doc = SpecValue::map({
      {"name", "x"},
      {"count", 3},
      {"on", true},
      {"empty", SpecValue::map()},
      {"none", SpecValue::list()},
      {"items", SpecValue::list({"a", SpecValue::map({{"p", 1}, {"q", SpecValue::list({"z"})}}),
                                 SpecValue::list({"n1", "n2"})})},
  });
  CHECK(doc.toYaml() ==
        "name: x\n"
        "count: 3\n"
        "\"on\": true\n"
        "empty: {}\n"
        "none: []\n"
        "items:\n"
        "  - a\n"
        "  - p: 1\n"
        "    q:\n"
        "      - z\n"
        "  - - n1\n"
        "    - n2\n");
  CHECK(doc.toJson() ==
        "{\n"
        "  \"name\": \"x\",\n"
        "  \"count\": 3,\n"
        "  \"on\": true,\n"
        "  \"empty\": {},\n"
        "  \"none\": [],\n"
        "  \"items\": [\n"
        "    \"a\",\n"
        "    {\n"
        "      \"p\": 1,\n"
        "      \"q\": [\n"
        "        \"z\"\n"
        "      ]\n"
        "    },\n"
        "    [\n"
        "      \"n1\",\n"
        "      \"n2\"\n"
        "    ]\n"
        "  ]\n"
        "}\n");
}

TEST_CASE("spec_value: comments go above their key or dash in YAML and nowhere in JSON") {
  SpecValue doc = SpecValue::map({
      {"a", SpecValue(1).withComment("why a\n\nand more")},
      {"b", SpecValue::list({SpecValue::map({{"c", 2}}).withComment("the item")})},
  });
  CHECK(doc.toYaml() ==
        "# why a\n"
        "#\n"
        "# and more\n"
        "a: 1\n"
        "b:\n"
        "  # the item\n"
        "  - c: 2\n");
  CHECK(doc.toJson() == "{\n  \"a\": 1,\n  \"b\": [\n    {\n      \"c\": 2\n    }\n  ]\n}\n");
}

TEST_CASE("spec_value: a stream puts its header first and --- between documents") {
  CHECK(rs::sizer::yamlStream("head\nline", {SpecValue::map({{"a", 1}}), SpecValue::map({{"b", 2}})}) ==
        "# head\n# line\na: 1\n---\nb: 2\n");
  CHECK(rs::sizer::yamlStream("", {SpecValue::map({{"a", 1}})}) == "a: 1\n");
}
