// parallax-gui: the what-if explorer (docs/design.md §2). Options:
//   --session FILE      start from a saved what-if session
//   --screenshot FILE   render the window (e.g. with QT_QPA_PLATFORM=offscreen) once the answer and
//                       the scaling curve are shown, write it as PNG and exit (docs/gui.png)
//   --size WxH          window size (default 1600x1040)
#include <cstdio>
#include <string>

#include <QApplication>
#include <QBuffer>
#include <QCommandLineParser>
#include <QTimer>

#include "main_window.hpp"
#include "parallax/core/atomic_file.hpp"

namespace {

// The window as PNG, written atomically; returns false (with a message) on failure.
bool write_screenshot(QWidget& w, const QString& path) {
  QByteArray png;
  QBuffer buf(&png);
  buf.open(QIODevice::WriteOnly);
  if (!w.grab().save(&buf, "PNG")) {
    std::fprintf(stderr, "parallax-gui: error: cannot encode the screenshot\n");
    return false;
  }
  try {
    parallax::write_file_atomic(path.toStdString(), std::string(png.constData(), static_cast<size_t>(png.size())));
  } catch (const parallax::InputError& e) {
    std::fprintf(stderr, "parallax-gui: error: %s\n", e.what());
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setApplicationName("parallax-gui");
  QApplication::setApplicationVersion(PARALLAX_VERSION);
  QCommandLineParser cli;
  cli.setApplicationDescription("Parallax what-if: change anything, see plans, memory, time and the pipeline");
  cli.addHelpOption();
  cli.addVersionOption();
  cli.addOption({"session", "Start from a saved what-if session.", "file"});
  cli.addOption({"screenshot", "Write the window as PNG once everything is shown, then exit.", "file"});
  cli.addOption({"size", "Window size WxH.", "size", "1600x1040"});
  cli.process(app);

  parallax::gui::MainWindow w;
  const QStringList size = cli.value("size").split('x');
  if (size.size() == 2) w.resize(size[0].toInt(), size[1].toInt());
  if (cli.isSet("session")) {
    try {
      w.open_session(cli.value("session"));
    } catch (const parallax::InputError& e) {
      std::fprintf(stderr, "parallax-gui: error: %s\n", e.what());
      return parallax::kExitBadInput;
    }
  }
  int code = 0;
  if (cli.isSet("screenshot")) {
    const QString path = cli.value("screenshot");
    QObject::connect(&w, &parallax::gui::MainWindow::scaling_shown, &w, [&w, &code, path] {
      QTimer::singleShot(100, &w, [&w, &code, path] {
        if (!w.idle()) return;  // a newer answer is on its way; its own scaling_shown follows
        code = write_screenshot(w, path) ? 0 : 1;
        QApplication::quit();
      });
    });
    QObject::connect(&w, &parallax::gui::MainWindow::plan_failed, &w, [&code](const QString& m) {
      std::fprintf(stderr, "parallax-gui: error: %s\n", m.toUtf8().constData());
      code = parallax::kExitBadInput;
      QApplication::quit();
    });
  }
  w.show();
  const int rc = QApplication::exec();
  return code != 0 ? code : rc;
}
