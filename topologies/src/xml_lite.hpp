#pragma once
// A small XML reader for the restricted format of NCCL topology dumps: elements with attributes,
// nesting and self-closing tags, the <?xml?> declaration and comments. No text content, entities
// beyond &quot; &amp; &lt; &gt; &apos;, namespaces, CDATA or DTDs. Errors are InputError with the
// line number as the path.
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace parallax::xml {

struct Element {
  std::string name;
  std::map<std::string, std::string> attributes;
  std::vector<Element> children;
  int line = 0;

  // The attribute or "" when absent.
  std::string attr(const std::string& key) const;
};

// The root element. source names the input in error messages.
Element parse(const std::string& text, const std::string& source);

}  // namespace parallax::xml
