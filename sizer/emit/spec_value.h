// SpecValue: a small ordered document (maps keep the order they were built in) that writes itself
// as block YAML or as JSON. The spec emitters describe each spec once as a SpecValue, so the YAML
// and the JSON of one plan cannot disagree, and a key's order is the order a reader expects.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace rs::sizer {

class SpecValue {
 public:
  enum class Kind { kString, kInt, kBool, kMap, kList };
  using Entry = std::pair<std::string, SpecValue>;

  SpecValue(const char* text) : kind_(Kind::kString), text_(text) {}  // NOLINT: literals read as values
  SpecValue(std::string text) : kind_(Kind::kString), text_(std::move(text)) {}  // NOLINT
  SpecValue(int number) : kind_(Kind::kInt), number_(number) {}  // NOLINT
  SpecValue(bool flag) : kind_(Kind::kBool), flag_(flag) {}  // NOLINT

  static SpecValue map(std::initializer_list<Entry> entries = {});
  static SpecValue list(std::initializer_list<SpecValue> items = {});

  // Appends to a map (keys must be new) or a list; returns *this for chaining.
  SpecValue& set(std::string key, SpecValue value);
  SpecValue& add(SpecValue item);
  // A YAML comment written on the line(s) above this value's key or list dash (ignored in JSON).
  // Lines are split at '\n'. Not for the first entry of a map that is itself a list item.
  SpecValue withComment(std::string comment) &&;

  Kind kind() const { return kind_; }

  // Block YAML: two-space indents, sequences indented under their key, strings plain where
  // YAML 1.1 and 1.2 both read them as the same string, double-quoted otherwise.
  std::string toYaml() const;
  // JSON with two-space indents (the layout of Python's json.dumps(indent=2)), newline-terminated.
  std::string toJson() const;

 private:
  explicit SpecValue(Kind kind) : kind_(kind) {}

  std::string inlineYaml() const;
  void writeYamlMap(int indent, std::string& out) const;
  void writeYamlList(int indent, std::string& out) const;
  void writeJson(int indent, std::string& out) const;

  Kind kind_;
  std::string text_;
  int64_t number_ = 0;
  bool flag_ = false;
  std::vector<Entry> entries_;
  std::vector<SpecValue> items_;
  std::string comment_;
};

// Several YAML documents in one stream, separated by "---", after an optional header comment.
std::string yamlStream(const std::string& headerComment, const std::vector<SpecValue>& documents);

// A string as a double-quoted JSON string (also a valid YAML and Python literal for ASCII text).
std::string jsonQuote(const std::string& text);

}  // namespace rs::sizer
