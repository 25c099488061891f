// Every chart of the window draws the selected plan: the grabbed image of each is not blank (many
// pixels differ from the background, and the series' colours are there), and selecting another
// row redraws memory, time and the pipeline from that plan.
#include <cstdio>
#include <map>

#include <QAreaSeries>
#include <QBarSet>
#include <QLineSeries>
#include <QChart>
#include <QStackedBarSeries>

#include "charts/chart_style.hpp"
#include "charts/memory_chart.hpp"
#include "charts/pipeline_view.hpp"
#include "charts/scaling_chart.hpp"
#include "gui_test_util.hpp"
#include "parallax/simulator/sim_inputs.hpp"

using namespace parallax;
using namespace parallax::gui;
using namespace parallax::gui::test;

namespace {

// Share of pixels unlike the background a chart with data must exceed (an empty chart: ~10%).
constexpr double kMinInk = 0.15;

struct Ink {
  double non_background = 0;  // share of pixels unlike the most common colour
  int distinct_colors = 0;
  std::map<int, int> palette_pixels;  // palette index -> pixels within a small distance of it
};

Ink ink(const QImage& image) {
  const QImage img = image.convertToFormat(QImage::Format_RGB32);
  std::map<QRgb, int> counts;
  Ink r;
  for (int y = 0; y < img.height(); ++y) {
    for (int x = 0; x < img.width(); ++x) {
      const QRgb p = img.pixel(x, y);
      ++counts[p];
      for (int k = 0; k < 6; ++k) {
        const QColor c = palette_color(k);
        if (std::abs(qRed(p) - c.red()) + std::abs(qGreen(p) - c.green()) +
                std::abs(qBlue(p) - c.blue()) < 24) {
          ++r.palette_pixels[k];
        }
      }
    }
  }
  int background = 0;
  for (const auto& [color, n] : counts) background = std::max(background, n);
  r.non_background = 1.0 - static_cast<double>(background) / (img.width() * img.height());
  r.distinct_colors = static_cast<int>(counts.size());
  return r;
}

void report(const char* name, const Ink& i) {
  std::printf("%-14s %5.1f%% non-background pixels, %4d colours; palette pixels:", name,
              i.non_background * 100, i.distinct_colors);
  for (const auto& [k, n] : i.palette_pixels) std::printf(" %d:%d", k, n);
  std::printf("\n");
}

}  // namespace

class TestCharts : public QObject {
  Q_OBJECT

 private slots:
  void blank_charts_are_recognised() {
    // The check below must be able to fail: an empty chart (frame and title only) has none of the
    // series' colours and less ink than the threshold.
    MemoryChartView empty;
    empty.resize(600, 320);
    const Ink i = ink(empty.grab().toImage());
    report("empty memory", i);
    QVERIFY(i.palette_pixels.empty());
    QVERIFY(i.non_background < kMinInk);
    PipelineView empty_pipeline;
    empty_pipeline.resize(600, 320);
    const Ink p = ink(empty_pipeline.grab().toImage());
    report("empty pipeline", p);
    QVERIFY(p.palette_pixels.empty());
    QVERIFY(p.non_background < kMinInk);
  }

  void every_chart_draws_the_winner() {
    MainWindow w;
    w.resize(1600, 1040);
    w.show();
    QSignalSpy scaled(&w, &MainWindow::scaling_shown);
    QVERIFY(scaled.count() > 0 || scaled.wait(wait_ms(60000)));
    QVERIFY(wait_idle(w));
    // Which palette colours each chart must show: memory's five parts, time's compute and
    // bubble, the pipeline's forward and backward steps, scaling's two curves.
    const std::pair<const char*, std::vector<int>> charts[] = {
        {"memory_chart", {0, 1, 2, 3, 4}}, {"time_chart", {0, 3}},
        {"pipeline_view", {0, 1}},         {"scaling_chart", {0, 1}}};
    for (const auto& [name, colors] : charts) {
      QWidget* chart = find<QWidget>(w, name);
      QVERIFY(chart->width() > 300 && chart->height() > 100);
      const Ink i = ink(chart->grab().toImage());
      report(name, i);
      QVERIFY2(i.non_background > kMinInk, name);
      QVERIFY2(i.distinct_colors > 16, name);
      for (int k : colors) {
        const auto it = i.palette_pixels.find(k);
        QVERIFY2(it != i.palette_pixels.end() && it->second >= 30, name);
      }
    }
    // MT-NLG's 35 ranks: no two rank labels overlap at the window's size.
    const auto labels = find<PipelineView>(w, "pipeline_view")->rank_label_rects();
    QVERIFY(labels.size() >= 2);
    for (size_t a = 0; a + 1 < labels.size(); ++a) QVERIFY(!labels[a].second.intersects(labels[a + 1].second));
    // The scaling chart says what its days assume (the session gives no tokens and no price).
    const QString title = find<ScalingChartView>(w, "scaling_chart")->chart()->title();
    QVERIFY2(title.contains("20 tokens/parameter"), qPrintable(title));
    QVERIFY2(title.contains("no price given"), qPrintable(title));
    // Both curves are shaded over their 80% intervals, the band around the curve: TFLOP/s over
    // [time's high, low] ratio, so the upper edge is at or above each point of the curve.
    const auto series = find<ScalingChartView>(w, "scaling_chart")->chart()->series();
    int bands = 0;
    QLineSeries* curve = nullptr;
    QAreaSeries* tf_band = nullptr;
    for (QAbstractSeries* s : series) {
      if (s->name().contains("80% interval")) ++bands;
      if (s->name() == "TFLOP/s 80% interval") tf_band = qobject_cast<QAreaSeries*>(s);
      if (s->name() == "model TFLOP/s per GPU") curve = qobject_cast<QLineSeries*>(s);
    }
    QCOMPARE(bands, 2);
    QVERIFY(tf_band && curve);
    QCOMPARE(tf_band->upperSeries()->count(), curve->count());
    for (int k = 0; k < curve->count(); ++k) {
      QVERIFY(tf_band->upperSeries()->at(k).y() >= curve->at(k).y());
      QVERIFY(tf_band->lowerSeries()->at(k).y() <= curve->at(k).y());
    }
  }

  void selecting_a_row_redraws_its_plan() {
    MainWindow w;
    w.show();
    QVERIFY(wait_idle(w));
    QSignalSpy shown(&w, &MainWindow::selection_shown);
    w.select_row(2);
    QVERIFY(shown.count() > 0 || shown.wait(wait_ms(30000)));
    QCOMPARE(shown.last().at(0).toInt(), 2);
    QCOMPARE(w.selected_row(), 2);
    const RankedPlan& r = w.outcome()->search.plans[2];
    // Memory: one bar per stage, the stacked parts equal to the plan's prediction.
    auto* memory = find<MemoryChartView>(w, "memory_chart");
    QStackedBarSeries* bars = nullptr;
    for (QAbstractSeries* s : memory->chart()->series()) {
      if (auto* b = qobject_cast<QStackedBarSeries*>(s)) bars = b;
    }
    QVERIFY(bars);
    QCOMPARE(bars->count(), 5);
    QCOMPARE(bars->barSets()[3]->count(), static_cast<int>(r.prediction.memory.size()));
    for (size_t s = 0; s < r.prediction.memory.size(); ++s) {
      QVERIFY(close(bars->barSets()[3]->at(static_cast<int>(s)), r.prediction.memory[s].activations_bytes / 1e9));
    }
    // Pipeline: every forward, backward and optimizer step of an independent simulation.
    const SimResult sim = simulate(make_sim_inputs(w.outcome()->in.model, w.outcome()->in.cluster,
                                                   w.outcome()->in.job, r.plan, w.outcome()->in.profile));
    size_t steps = 0;
    for (const SimOp& op : sim.ops) {
      if (op.stream == SimStream::compute &&
          (op.kind == SimOpKind::forward || op.kind == SimOpKind::backward || op.kind == SimOpKind::optimizer)) {
        ++steps;
      }
    }
    QCOMPARE(find<PipelineView>(w, "pipeline_view")->steps(), steps);
    QVERIFY(steps >= static_cast<size_t>(2 * r.plan.pp * r.plan.num_micro_batches * r.plan.vpp));
  }
};

QTEST_MAIN(TestCharts)
#include "test_gui_charts.moc"
