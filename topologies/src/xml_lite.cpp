#include "xml_lite.hpp"

#include <cctype>

#include "parallax/core/error.hpp"

namespace parallax::xml {
namespace {

class Parser {
 public:
  Parser(const std::string& text, const std::string& source) : s_(text), source_(source) {}

  Element document() {
    skip_misc();
    if (!at("<")) fail("expected a root element");
    Element root = element();
    skip_misc();
    if (pos_ < s_.size()) fail("unexpected content after the root element");
    return root;
  }

 private:
  [[noreturn]] void fail(const std::string& rule) const {
    throw InputError(source_, "line " + std::to_string(line_), rule);
  }
  bool at(const char* t) const { return s_.compare(pos_, std::char_traits<char>::length(t), t) == 0; }
  void advance(size_t n) {
    for (size_t i = 0; i < n && pos_ < s_.size(); ++i, ++pos_)
      if (s_[pos_] == '\n') ++line_;
  }
  void skip_space() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) advance(1);
  }
  void skip_until(const char* end) {
    const size_t e = s_.find(end, pos_);
    if (e == std::string::npos) fail(std::string("unterminated construct, expected \"") + end + "\"");
    advance(e - pos_ + std::char_traits<char>::length(end));
  }
  // Whitespace, declarations and comments between elements.
  void skip_misc() {
    for (;;) {
      skip_space();
      if (at("<?")) skip_until("?>");
      else if (at("<!--")) skip_until("-->");
      else return;
    }
  }
  std::string name() {
    const size_t b = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_' ||
                                s_[pos_] == '-' || s_[pos_] == '.' || s_[pos_] == ':'))
      advance(1);
    if (pos_ == b) fail("expected a name");
    return s_.substr(b, pos_ - b);
  }
  std::string unescape(const std::string& v) const {
    std::string out;
    for (size_t i = 0; i < v.size(); ++i) {
      if (v[i] != '&') {
        out += v[i];
        continue;
      }
      const size_t semi = v.find(';', i);
      if (semi == std::string::npos) fail("bad entity in attribute value");
      const std::string ent = v.substr(i + 1, semi - i - 1);
      if (ent == "quot") out += '"';
      else if (ent == "amp") out += '&';
      else if (ent == "lt") out += '<';
      else if (ent == "gt") out += '>';
      else if (ent == "apos") out += '\'';
      else fail("unknown entity &" + ent + ";");
      i = semi;
    }
    return out;
  }
  Element element() {
    Element e;
    e.line = line_;
    advance(1);  // '<'
    e.name = name();
    for (;;) {
      skip_space();
      if (at("/>")) {
        advance(2);
        return e;
      }
      if (at(">")) {
        advance(1);
        break;
      }
      const std::string key = name();
      skip_space();
      if (!at("=")) fail("expected '=' after attribute " + key);
      advance(1);
      skip_space();
      if (pos_ >= s_.size() || (s_[pos_] != '"' && s_[pos_] != '\'')) fail("expected a quoted value for " + key);
      const char q = s_[pos_];
      advance(1);
      const size_t end = s_.find(q, pos_);
      if (end == std::string::npos) fail("unterminated value of attribute " + key);
      e.attributes[key] = unescape(s_.substr(pos_, end - pos_));
      advance(end - pos_ + 1);
    }
    for (;;) {
      skip_misc();
      if (pos_ >= s_.size()) fail("element <" + e.name + "> is not closed");
      if (at("</")) {
        advance(2);
        const std::string closing = name();
        if (closing != e.name) fail("</" + closing + "> closes <" + e.name + ">");
        skip_space();
        if (!at(">")) fail("expected '>'");
        advance(1);
        return e;
      }
      if (at("<")) {
        e.children.push_back(element());
        continue;
      }
      fail("text content is not part of the topology format");
    }
  }

  const std::string& s_;
  std::string source_;
  size_t pos_ = 0;
  int line_ = 1;
};

}  // namespace

std::string Element::attr(const std::string& key) const {
  auto it = attributes.find(key);
  return it == attributes.end() ? "" : it->second;
}

Element parse(const std::string& text, const std::string& source) {
  Parser p(text, source);
  return p.document();
}

}  // namespace parallax::xml
