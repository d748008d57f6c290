#include "core/common/endpoint.h"

#include <arpa/inet.h>

#include "core/common/text.h"

namespace rs {
namespace {

std::string str(std::string_view s) { return std::string(s); }

bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isAlnum(char c) {
  return isDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// Dotted-quad IPv4; leading zeros are refused because some resolvers read them as octal.
bool isIpv4(std::string_view s) {
  int parts = 0;
  size_t i = 0;
  while (true) {
    size_t start = i;
    unsigned value = 0;
    while (i < s.size() && isDigit(s[i]) && i - start < 4) value = value * 10 + (s[i++] - '0');
    const size_t len = i - start;
    if (len == 0 || len > 3 || value > 255 || (len > 1 && s[start] == '0')) return false;
    ++parts;
    if (i == s.size()) break;
    if (s[i] != '.' || parts == 4) return false;
    ++i;
  }
  return parts == 4;
}

bool isIpv6(std::string_view s) {
  // An optional zone ("fe80::1%eth0") names the interface of a link-local address.
  const size_t percent = s.find('%');
  std::string_view addr = s.substr(0, percent);
  if (percent != std::string_view::npos) {
    std::string_view zone = s.substr(percent + 1);
    if (zone.empty()) return false;
    for (char c : zone)
      if (!isAlnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  if (addr.empty() || addr.size() > 45) return false;
  in6_addr parsed{};
  return inet_pton(AF_INET6, std::string(addr).c_str(), &parsed) == 1;
}

// Why `host` is not a usable host name, or empty when it is one. Names follow RFC 1123;
// '_' is allowed too because container platforms produce such names.
std::string hostProblem(std::string_view host) {
  if (host.size() > 253) return "has a host name longer than 253 characters";
  bool numeric = true;
  for (size_t i = 0; i < host.size(); ++i) {
    const char c = host[i];
    if (!isAlnum(c) && c != '-' && c != '.' && c != '_') {
      return "has character " + quoteText(host.substr(i, 1)) + " in its host (expected a host " +
             "name, an IPv4 address or a bracketed IPv6 address)";
    }
    if (!isDigit(c) && c != '.') numeric = false;
  }
  if (numeric) return isIpv4(host) ? "" : "has host " + quoteText(host) + ", not a valid IPv4 address";
  std::string_view rest = host;
  if (rest.ends_with('.')) rest.remove_suffix(1);  // a fully qualified "name."
  while (true) {
    const size_t dot = rest.find('.');
    std::string_view label = rest.substr(0, dot);
    if (label.empty()) return "has an empty label in host " + quoteText(host);
    if (label.size() > 63) return "has a host label longer than 63 characters";
    if (label.front() == '-' || label.back() == '-') {
      return "has host " + quoteText(host) + " with a label that starts or ends with '-'";
    }
    if (dot == std::string_view::npos) break;
    rest.remove_prefix(dot + 1);
  }
  return "";
}

// "" and the endpoint's port, or the problem with the port text.
std::string portProblem(std::string_view text, PortZero portZero, uint16_t* port) {
  const uint32_t lowest = portZero == PortZero::kAllowed ? 0 : 1;
  const std::string range = std::to_string(lowest) + "..65535";
  if (text.empty()) return "has an empty port (expected host:port, port " + range + ")";
  uint32_t value = 0;
  for (char c : text) {
    if (!isDigit(c)) {
      return "has port " + quoteText(text) + ", not a decimal number (expected " + range + ")";
    }
    value = value * 10 + static_cast<uint32_t>(c - '0');
    if (value > 65535) break;
  }
  if (value < lowest || value > 65535) return "has port " + str(text) + " (expected " + range + ")";
  *port = static_cast<uint16_t>(value);
  return "";
}

}  // namespace

std::string Endpoint::toString() const {
  const std::string port_text = std::to_string(port);
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + port_text;
  return host + ":" + port_text;
}

Endpoint Endpoint::reachableLocally() const {
  if (host == "0.0.0.0") return {"127.0.0.1", port};
  if (host == "::") return {"::1", port};
  return *this;
}

Result<Endpoint> parseEndpoint(std::string_view text, std::string_view what, PortZero portZero) {
  const auto fail = [&](const std::string& why) {
    return invalidArgument(str(what) + ": " + quoteText(text) + " " + why);
  };
  if (text.empty()) return invalidArgument(str(what) + ": is empty (expected host:port)");

  Endpoint ep;
  std::string_view portText;
  if (text.front() == '[') {
    const size_t close = text.find(']');
    if (close == std::string_view::npos) return fail("has no closing ']' (expected [IPv6]:port)");
    const std::string_view host = text.substr(1, close - 1);
    const std::string_view rest = text.substr(close + 1);
    if (rest.empty()) return fail("has no port (expected [IPv6]:port)");
    if (rest.front() != ':') return fail("has text after ']' (expected [IPv6]:port)");
    if (!isIpv6(host)) return fail("has " + quoteText(host) + ", not a valid IPv6 address");
    ep.host = str(host);
    portText = rest.substr(1);
  } else {
    const size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) return fail("has no port (expected host:port)");
    if (text.find(':') != colon) {
      return fail("has more than one ':' (expected host:port; an IPv6 address needs brackets, "
                  "e.g. [::1]:8000)");
    }
    const std::string_view host = text.substr(0, colon);
    if (host.empty()) return fail("has no host (expected host:port)");
    if (std::string why = hostProblem(host); !why.empty()) return fail(why);
    ep.host = str(host);
    portText = text.substr(colon + 1);
  }
  if (std::string why = portProblem(portText, portZero, &ep.port); !why.empty()) return fail(why);
  return ep;
}

}  // namespace rs
