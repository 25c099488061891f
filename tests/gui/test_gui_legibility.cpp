// Large answers stay legible: a 35-rank, 240-micro-batch pipeline is drawn as phases with rank
// labels that never overlap at any height, days spanning decades go on a log axis, and the days'
// and cost's assumptions are printed (a dash for an unknown cost).
#include <QCategoryAxis>
#include <QChart>
#include <QValueAxis>
#include <QtTest>

#include "charts/pipeline_view.hpp"
#include "charts/scaling_chart.hpp"
#include "capacity_rows.hpp"
#include "synthetic_pipeline.hpp"

using namespace parallax;
using namespace parallax::gui;

namespace {

using test::row_with_days;

QAbstractAxis* right_axis(QChart* c) {
  for (QAbstractAxis* a : c->axes(Qt::Vertical)) {
    if (a->alignment() == Qt::AlignRight) return a;
  }
  return nullptr;
}

}  // namespace

class TestLegibility : public QObject {
  Q_OBJECT

 private slots:
  void rank_labels_never_overlap() {
    struct Case {
      int32_t pp, m;
      bool binned;
    };
    for (const Case& k : {Case{35, 240, true}, Case{16, 8, false}, Case{12, 40, false}}) {
      PipelineView v;
      v.show_sim(test::synthetic_pipeline(k.pp, k.m, false), k.pp, "test");
      QCOMPARE(v.binned(), k.binned);
      for (int height : {200, 230, 260, 320, 480, 700}) {
        v.resize(900, height);
        const auto labels = v.rank_label_rects();
        QVERIFY2(labels.size() >= 2, qPrintable(QString("pp %1 height %2").arg(k.pp).arg(height)));
        QCOMPARE(labels.front().first, int64_t{0});
        for (size_t i = 0; i < labels.size(); ++i) {
          for (size_t j = i + 1; j < labels.size(); ++j) {
            QVERIFY2(!labels[i].second.intersects(labels[j].second),
                     qPrintable(QString("pp %1 height %2: rank %3 and rank %4 overlap")
                                    .arg(k.pp).arg(height).arg(labels[i].first).arg(labels[j].first)));
          }
        }
      }
    }
  }

  void a_large_pipeline_shows_first_middle_and_last_ranks() {
    PipelineView v;
    v.show_sim(test::synthetic_pipeline(35, 240, false), 35, "test");
    v.resize(900, 600);
    QCOMPARE(v.rows(), (std::vector<int64_t>{0, 1, 2, -1, 16, 17, -1, 32, 33, 34}));
    std::vector<int64_t> labelled;
    for (const auto& [r, box] : v.rank_label_rects()) labelled.push_back(r);
    QCOMPARE(labelled, (std::vector<int64_t>{0, 1, 2, 16, 17, 32, 33, 34}));  // 600 px: room for all
    // Phase bars: forward, backward and bubble colours are painted, not one blended colour.
    const QImage img = v.grab().toImage().convertToFormat(QImage::Format_RGB32);
    int fwd = 0, bwd = 0, bubble = 0;
    for (int y = 0; y < img.height(); ++y) {
      for (int x = 0; x < img.width(); ++x) {
        const QColor c(img.pixel(x, y));
        fwd += c == QColor("#0072B2");
        bwd += c == QColor("#E69F00");
        bubble += c == QColor("#d9d9d9");
      }
    }
    QVERIFY(fwd > 500);
    QVERIFY(bwd > 2 * 500);  // backward takes twice the forward time
    QVERIFY(bubble > 100);   // the fill of the last ranks
  }

  void days_spanning_decades_go_on_a_log_axis() {
    ScalingChartView v;
    v.show_rows({row_with_days(64, 10), row_with_days(512, 100), row_with_days(4096, 1000)}, 512);
    QVERIFY(v.days_axis_log());
    auto* axis = qobject_cast<QCategoryAxis*>(right_axis(v.chart()));
    QVERIFY(axis);
    QCOMPARE(axis->categoriesLabels(), (QStringList{"10", "20", "50", "100", "200", "500", "1000"}));
    QCOMPARE(axis->endValue("100"), 2.0);  // log10 of the label

    ScalingChartView lin;
    lin.show_rows({row_with_days(64, 40), row_with_days(512, 20), row_with_days(4096, 10)}, 512);
    QVERIFY(!lin.days_axis_log());
    QVERIFY(qobject_cast<QValueAxis*>(right_axis(lin.chart())));
  }

  void assumptions_are_printed_and_an_unknown_cost_is_a_dash() {
    const std::vector<CapacityRow> rows = {row_with_days(512, 100, 24576)};
    const QString none = scaling_assumptions_text(rows, 512, {10.6e12, true, 0});
    QVERIFY2(none.contains("10.6T tokens = 20 tokens/parameter (Chinchilla, Hoffmann et al. 2022; no tokens given)"), qPrintable(none));
    QVERIFY2(none.contains(QString::fromUtf8("Cost at 512 GPUs: — (no price given)")), qPrintable(none));
    // 100 days x 24 h x 512 GPUs x USD 0.50 = USD 614,400; the row's cost is what is shown.
    const QString priced = scaling_assumptions_text({row_with_days(512, 100, 614400)}, 512, {300e9, false, 0.5});
    QVERIFY2(priced.contains("Cost at 512 GPUs: USD 614400 at USD 0.50 per GPU-hour"), qPrintable(priced));
    QVERIFY2(priced.contains("0.3T tokens (given)"), qPrintable(priced));
    ScalingChartView v;
    v.show_rows(rows, 512, {10.6e12, true, 0});
    QVERIFY(v.chart()->title().contains("no price given"));
  }
};

QTEST_MAIN(TestLegibility)
#include "test_gui_legibility.moc"
