#include "sizer/emit/spec_value.h"

#include <algorithm>
#include <cassert>
#include <cctype>

#include "core/common/log.h"
#include "core/common/text.h"

namespace rs::sizer {
namespace {

std::string spaces(int n) { return std::string(static_cast<size_t>(n), ' '); }

// True when `text` can stand unquoted and every YAML reader (1.1, as Kubernetes' go-yaml and
// PyYAML read it, and 1.2) takes it for this same string: it starts with a letter or '/', holds
// only characters that are never indicators inside a word, does not end in ':' and is not one
// of the words YAML 1.1 reads as a boolean or null. Numbers, dates, "0.0.0.0:2222" and the like
// start with a digit and so are quoted.
bool isPlainSafe(const std::string& text) {
  if (text.empty()) return false;
  const unsigned char first = static_cast<unsigned char>(text.front());
  if (!std::isalpha(first) && first != '/') return false;
  for (char c : text) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (!std::isalnum(u) && std::string_view("._/:=,@+-").find(c) == std::string_view::npos) {
      return false;
    }
  }
  if (text.back() == ':') return false;
  const std::string lower = toLower(text);
  static const char* const kReserved[] = {"y", "n", "yes", "no", "on", "off", "true", "false", "null"};
  return std::none_of(std::begin(kReserved), std::end(kReserved),
                      [&](const char* word) { return lower == word; });
}

std::string yamlScalar(const std::string& text) { return isPlainSafe(text) ? text : jsonQuote(text); }

void writeComment(const std::string& comment, int indent, std::string& out) {
  if (comment.empty()) return;
  size_t start = 0;
  while (start <= comment.size()) {
    const size_t end = std::min(comment.find('\n', start), comment.size());
    const std::string line = comment.substr(start, end - start);
    out += spaces(indent) + (line.empty() ? "#" : "# " + line) + "\n";
    start = end + 1;
  }
}

}  // namespace

std::string jsonQuote(const std::string& text) { return "\"" + jsonEscape(text) + "\""; }

SpecValue SpecValue::map(std::initializer_list<Entry> entries) {
  SpecValue v(Kind::kMap);
  for (const auto& e : entries) v.set(e.first, e.second);
  return v;
}

SpecValue SpecValue::list(std::initializer_list<SpecValue> items) {
  SpecValue v(Kind::kList);
  v.items_.assign(items.begin(), items.end());
  return v;
}

SpecValue& SpecValue::set(std::string key, SpecValue value) {
  assert(kind_ == Kind::kMap);
  assert(std::none_of(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.first == key; }));
  entries_.emplace_back(std::move(key), std::move(value));
  return *this;
}

SpecValue& SpecValue::add(SpecValue item) {
  assert(kind_ == Kind::kList);
  items_.push_back(std::move(item));
  return *this;
}

SpecValue SpecValue::withComment(std::string comment) && {
  comment_ = std::move(comment);
  return std::move(*this);
}

// The text after "key:" or "- " for a value that fits on that line, or empty when the value
// needs lines of its own (a non-empty map or list).
std::string SpecValue::inlineYaml() const {
  switch (kind_) {
    case Kind::kString: return yamlScalar(text_);
    case Kind::kInt: return std::to_string(number_);
    case Kind::kBool: return flag_ ? "true" : "false";
    case Kind::kMap: return entries_.empty() ? "{}" : "";
    case Kind::kList: return items_.empty() ? "[]" : "";
  }
  return "";
}

void SpecValue::writeYamlMap(int indent, std::string& out) const {
  for (const auto& [key, value] : entries_) {
    writeComment(value.comment_, indent, out);
    const std::string text = value.inlineYaml();
    out += spaces(indent) + yamlScalar(key) + ":";
    if (!text.empty()) {
      out += " " + text + "\n";
    } else if (value.kind_ == Kind::kMap) {
      out += "\n";
      value.writeYamlMap(indent + 2, out);
    } else {
      out += "\n";
      value.writeYamlList(indent + 2, out);
    }
  }
}

void SpecValue::writeYamlList(int indent, std::string& out) const {
  for (const auto& item : items_) {
    writeComment(item.comment_, indent, out);
    const std::string text = item.inlineYaml();
    if (!text.empty()) {
      out += spaces(indent) + "- " + text + "\n";
      continue;
    }
    // A nested block starts on the dash's line: write it two deeper, then put the dash in the
    // first line's indent.
    std::string block;
    if (item.kind_ == Kind::kMap) {
      item.writeYamlMap(indent + 2, block);
    } else {
      item.writeYamlList(indent + 2, block);
    }
    out += spaces(indent) + "- " + block.substr(static_cast<size_t>(indent) + 2);
  }
}

std::string SpecValue::toYaml() const {
  std::string out;
  if (kind_ == Kind::kMap) {
    writeYamlMap(0, out);
  } else if (kind_ == Kind::kList) {
    writeYamlList(0, out);
  } else {
    out = inlineYaml() + "\n";
  }
  return out;
}

void SpecValue::writeJson(int indent, std::string& out) const {
  switch (kind_) {
    case Kind::kString: out += jsonQuote(text_); return;
    case Kind::kInt: out += std::to_string(number_); return;
    case Kind::kBool: out += flag_ ? "true" : "false"; return;
    case Kind::kMap:
      if (entries_.empty()) {
        out += "{}";
        return;
      }
      out += "{\n";
      for (size_t i = 0; i < entries_.size(); ++i) {
        out += spaces(indent + 2) + jsonQuote(entries_[i].first) + ": ";
        entries_[i].second.writeJson(indent + 2, out);
        out += i + 1 < entries_.size() ? ",\n" : "\n";
      }
      out += spaces(indent) + "}";
      return;
    case Kind::kList:
      if (items_.empty()) {
        out += "[]";
        return;
      }
      out += "[\n";
      for (size_t i = 0; i < items_.size(); ++i) {
        out += spaces(indent + 2);
        items_[i].writeJson(indent + 2, out);
        out += i + 1 < items_.size() ? ",\n" : "\n";
      }
      out += spaces(indent) + "]";
      return;
  }
}

std::string SpecValue::toJson() const {
  std::string out;
  writeJson(0, out);
  return out + "\n";
}

std::string yamlStream(const std::string& headerComment, const std::vector<SpecValue>& documents) {
  std::string out;
  writeComment(headerComment, 0, out);
  for (size_t i = 0; i < documents.size(); ++i) {
    if (i > 0) out += "---\n";
    out += documents[i].toYaml();
  }
  return out;
}

}  // namespace rs::sizer
