// Endpoint: "host:port" and "[v6]:port" parsed and printed, port 0 only where allowed,
// withPort, and error messages that say what is wrong with which value.
#include "core/common/endpoint.h"

#include <string>

#include <catch2/catch.hpp>

#include "tests/support/require_invalid.h"

using Catch::Matchers::Contains;
using rs::Endpoint;
using rs::parseEndpoint;
using rs::PortZero;
using rs::test::requireInvalid;

TEST_CASE("endpoint: v4, v6 in brackets and names parse and print back") {
  struct Case {
    const char* text;
    Endpoint expected;
    const char* printed;
  };
  const Case cases[] = {
      {"localhost:8000", Endpoint{"localhost", 8000}, "localhost:8000"},
      {"cmle-training-workerpool2-ab12-0:2222", Endpoint{"cmle-training-workerpool2-ab12-0", 2222},
       "cmle-training-workerpool2-ab12-0:2222"},
      {"rs-0.rs.default.svc.cluster.local:1", Endpoint{"rs-0.rs.default.svc.cluster.local", 1},
       "rs-0.rs.default.svc.cluster.local:1"},
      {"host.example.:65535", Endpoint{"host.example.", 65535}, "host.example.:65535"},
      {"under_score:80", Endpoint{"under_score", 80}, "under_score:80"},
      {"10.0.0.255:80", Endpoint{"10.0.0.255", 80}, "10.0.0.255:80"},
      {"0.0.0.0:9000", Endpoint{"0.0.0.0", 9000}, "0.0.0.0:9000"},
      {"[::1]:8000", Endpoint{"::1", 8000}, "[::1]:8000"},
      {"[2001:db8::a:1]:443", Endpoint{"2001:db8::a:1", 443}, "[2001:db8::a:1]:443"},
      {"[::ffff:10.1.2.3]:80", Endpoint{"::ffff:10.1.2.3", 80}, "[::ffff:10.1.2.3]:80"},
      {"[fe80::1%eth0]:80", Endpoint{"fe80::1%eth0", 80}, "[fe80::1%eth0]:80"},
      {"h:08080", Endpoint{"h", 8080}, "h:8080"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    auto r = parseEndpoint(c.text);
    INFO(r.status().toString());
    REQUIRE(r.isOk());
    REQUIRE(*r == c.expected);
    REQUIRE(r->toString() == c.printed);
    auto again = parseEndpoint(r->toString());
    REQUIRE(again.isOk());
    REQUIRE(*again == *r);
  }
}

TEST_CASE("endpoint: errors say what is wrong and where") {
  struct Case {
    const char* text;
    const char* fragment;
  };
  const Case cases[] = {
      {"host", "x: \"host\" has no port (expected host:port)"},
      {"host:", "\"host:\" has an empty port"},
      {":80", "\":80\" has no host"},
      {"host:0", "has port 0 (expected 1..65535)"},
      {"host:65536", "has port 65536 (expected 1..65535)"},
      {"host:99999999999999999999", "(expected 1..65535)"},
      {"host:-1", "has port \"-1\", not a decimal number"},
      {"host:+80", "has port \"+80\", not a decimal number"},
      {"host:0x50", "has port \"0x50\", not a decimal number"},
      {"host:80 ", "has port \"80 \", not a decimal number"},
      {"host:http", "has port \"http\", not a decimal number"},
      {"::1:80", "has more than one ':'"},
      {"fe80::1", "an IPv6 address needs brackets, e.g. [::1]:8000"},
      {"a:b:c", "has more than one ':'"},
      {"[::1]", "\"[::1]\" has no port (expected [IPv6]:port)"},
      {"[::1", "has no closing ']'"},
      {"[::1]8000", "has text after ']'"},
      {"[::1]:", "has an empty port"},
      {"[zz::1]:80", "has \"zz::1\", not a valid IPv6 address"},
      {"[1.2.3.4]:80", "not a valid IPv6 address"},
      {"[]:80", "not a valid IPv6 address"},
      {"[fe80::1%]:80", "not a valid IPv6 address"},
      {"1.2.3.256:80", "has host \"1.2.3.256\", not a valid IPv4 address"},
      {"1.2.3:80", "not a valid IPv4 address"},
      {"01.2.3.4:80", "not a valid IPv4 address"},
      {"1.2.3.4.5:80", "not a valid IPv4 address"},
      {"http/host:80", "has character \"/\" in its host"},
      {"ho st:80", "has character \" \" in its host"},
      {"-host:80", "starts or ends with '-'"},
      {"host-.example:80", "starts or ends with '-'"},
      {"a..b:80", "has an empty label"},
      {".a:80", "has an empty label"},
      {"h\x01:80", "has character \"\\x01\""},
  };
  for (const Case& c : cases) {
    auto r = parseEndpoint(c.text, "x");
    INFO(c.text);
    requireInvalid(r, c.fragment);
    REQUIRE_THAT(r.status().message(), Catch::Matchers::StartsWith("x: "));
  }
  requireInvalid(parseEndpoint("", "RS_X"), "RS_X: is empty (expected host:port)");
  requireInvalid(parseEndpoint(std::string(64, 'a') + ":80"), "label longer than 63");
  requireInvalid(parseEndpoint(std::string(254, 'a') + ":80"), "longer than 253");
  requireInvalid(parseEndpoint("host"), "endpoint: \"host\" has no port");  // default `what`
}

TEST_CASE("endpoint: long or odd input is quoted and cut in messages") {
  std::string longHost(500, 'h');
  auto r = parseEndpoint(longHost, "x");
  REQUIRE_FALSE(r.isOk());
  REQUIRE(r.status().message().size() < 300);
  REQUIRE_THAT(r.status().message(), Contains("...\""));
}


TEST_CASE("endpoint: port 0 is refused unless the caller allows it") {
  requireInvalid(parseEndpoint("127.0.0.1:0", "--data-listen"),
                 "--data-listen: \"127.0.0.1:0\" has port 0 (expected 1..65535)");
  auto any = parseEndpoint("127.0.0.1:0", "--data-listen", PortZero::kAllowed);
  INFO(any.status().toString());
  REQUIRE(any.isOk());
  CHECK(*any == Endpoint{"127.0.0.1", 0});
  auto v6 = parseEndpoint("[::]:0", "x", PortZero::kAllowed);
  REQUIRE(v6.isOk());
  CHECK(*v6 == Endpoint{"::", 0});
  CHECK(v6->toString() == "[::]:0");
  // Allowing 0 widens the range and nothing else.
  requireInvalid(parseEndpoint("host:65536", "x", PortZero::kAllowed), "(expected 0..65535)");
  requireInvalid(parseEndpoint("host:", "x", PortZero::kAllowed), "has an empty port");
  requireInvalid(parseEndpoint("2224", "x", PortZero::kAllowed), "has no port");
  requireInvalid(parseEndpoint("a:1,b:2", "x", PortZero::kAllowed), "has more than one ':'");
}

TEST_CASE("endpoint: withPort keeps the host, brackets included") {
  CHECK(Endpoint{"10.1.2.3", 5000}.withPort(5001) == Endpoint{"10.1.2.3", 5001});
  CHECK(Endpoint{"::1", 5000}.withPort(5001).toString() == "[::1]:5001");
  CHECK(Endpoint{"rs-0.rs.svc", 2222}.withPort(0).toString() == "rs-0.rs.svc:0");
}
