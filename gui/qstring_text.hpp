#pragma once
// A std::string as a QString (UTF-8), for the widgets' labels.
#include <QString>

#include <string>

namespace parallax::gui::detail {

inline QString qs(const std::string& s) { return QString::fromStdString(s); }

}  // namespace parallax::gui::detail
