// The scaling curve: model TFLOP/s per GPU (left axis) and days to train (right axis) over GPU
// counts (log2). Days span decades between a few GPUs and thousands, so their axis turns
// logarithmic when the plotted values span more than one decade.
#include <algorithm>
#include <cmath>

#include "chart_axes.hpp"
#include "parallax/reports/charts.hpp"
#include "parallax/reports/svg.hpp"

namespace parallax {
namespace {

// The days axis on the right (x = right): log10 ticks, or linear ones from 0 to dmax; yday maps
// days to y.
template <class Y>
std::string days_axis(double right, bool log_days, const chart::LogAxis& la, double dmax,
                      double dstep, const Y& yday) {
  std::string s = std::string("<g class=\"axis\" id=\"axis-days\" data-scale=\"") +
                  (log_days ? "log" : "linear") + "\">";
  if (log_days) {
    for (const chart::LogTick& t : chart::log_ticks(la)) {
      const double y = yday(t.value);
      s += svg::line(right, y, right + (t.major ? 5 : 3), y, "#000");
      s += svg::text(right + 7, y + 4, svg::number(t.value, t.value < 1 ? 2 : 0), t.major ? 10 : 8,
                     "start", std::string("class=\"tick ") + (t.major ? "major" : "minor") + "\"");
    }
  } else {
    for (double v = 0; v <= dmax + dstep / 2; v += dstep) {
      s += svg::text(right + 6, yday(v) + 4, svg::number(v, dstep < 1 ? 1 : 0), 10, "start",
                     "class=\"tick major\"");
    }
  }
  return s + "</g>";
}

// A row's curves at its interval's ends.
struct Band {
  double tf_lo, tf_hi, days_lo, days_hi;
};

// Each row's band (rows with a plan, in order), or none when an interval is missing or infinite.
std::vector<Band> bands(const std::vector<CapacityRow>& rows, const std::vector<const CapacityRow*>& ok,
                        const std::vector<PredictionInterval>& intervals, double (*tflops)(const CapacityRow&)) {
  std::vector<Band> out;
  if (intervals.size() != rows.size()) return out;
  for (const CapacityRow* r : ok) {
    const PredictionInterval& iv = intervals[static_cast<size_t>(r - rows.data())];
    if (!(iv.low_ratio > 0) || !std::isfinite(iv.high_ratio)) return {};
    const double tf = tflops(*r);
    out.push_back({tf / iv.high_ratio, tf / iv.low_ratio, r->days * iv.low_ratio, r->days * iv.high_ratio});
  }
  return out;
}

// The band between two curves: the upper one left to right, the lower one back.
std::string band_polygon(const std::vector<double>& xs, const std::vector<double>& upper,
                         const std::vector<double>& lower, const std::string& color, const std::string& title) {
  std::string pts;
  for (size_t i = 0; i < xs.size(); ++i) pts += svg::number(xs[i]) + "," + svg::number(upper[i]) + " ";
  for (size_t i = xs.size(); i-- > 0;) pts += svg::number(xs[i]) + "," + svg::number(lower[i]) + " ";
  return svg::polygon(pts, color, 0.15, "interval", title);
}

double tflops_of(const CapacityRow& r) {  // at the ranking time, as the days
  return r.best->prediction.model_tflops_per_gpu * r.best->throughput_scale();
}

// The curves' extents, the bands' ends included: the axes reach them.
struct Ranges {
  double tf_max = 0, days_min = 1e300, days_max = 0;
};
Ranges ranges(const std::vector<const CapacityRow*>& ok, const std::vector<Band>& band) {
  Ranges r;
  for (const CapacityRow* row : ok) {
    r.tf_max = std::max(r.tf_max, tflops_of(*row));
    r.days_max = std::max(r.days_max, row->days);
    r.days_min = std::min(r.days_min, row->days);
  }
  for (const Band& b : band) {
    r.tf_max = std::max(r.tf_max, b.tf_hi);
    r.days_max = std::max(r.days_max, b.days_hi);
    r.days_min = std::min(r.days_min, b.days_lo);
  }
  return r;
}

// Both bands, TFLOP/s then days, at x = xpos(GPUs), y = ytf(TFLOP/s) and yday(days).
template <class X, class YT, class YD>
std::string bands_svg(const std::vector<const CapacityRow*>& ok, const std::vector<Band>& band, double level,
                      const X& xpos, const YT& ytf, const YD& yday) {
  std::vector<double> xs, tf_hi, tf_lo, d_hi, d_lo;
  for (size_t i = 0; i < ok.size(); ++i) {
    xs.push_back(xpos(ok[i]->gpus));
    tf_hi.push_back(ytf(band[i].tf_hi));
    tf_lo.push_back(ytf(band[i].tf_lo));
    d_hi.push_back(yday(band[i].days_hi));
    d_lo.push_back(yday(band[i].days_lo));
  }
  const std::string name = svg::number(level * 100, 0) + "% interval";
  return band_polygon(xs, tf_hi, tf_lo, svg::color(0), "model TFLOP/s per GPU, " + name) +
         band_polygon(xs, d_hi, d_lo, svg::color(1), "days to train, " + name);
}

}  // namespace

std::string scaling_chart(const std::vector<CapacityRow>& rows, double price_per_gpu_hour_usd,
                          const std::string& days_assumption, const std::vector<PredictionInterval>& intervals) {
  using chart::kLeft;
  using chart::kTop;
  const double W = 820, H = 320, w = W - kLeft - 70, h = H - kTop - chart::kBottom;
  std::vector<const CapacityRow*> ok;
  for (const CapacityRow& r : rows) {
    if (r.best) ok.push_back(&r);
  }
  std::string s = svg::open(W, H, "chart-scaling", "scaling over GPU counts");
  if (ok.empty()) return s + svg::text(W / 2, H / 2, "no GPU count has a plan", 12, "middle") + svg::close();
  const double g0 = std::log2(static_cast<double>(ok.front()->gpus));
  const double g1 = std::max(g0 + 1, std::log2(static_cast<double>(ok.back()->gpus)));
  const auto tflops = tflops_of;
  const std::vector<Band> band = bands(rows, ok, intervals, tflops_of);
  const auto [tf_max, days_min, days_max] = ranges(ok, band);
  const auto [tmax, tstep] = chart::nice_axis(tf_max);
  s += chart::y_axis(kLeft, kTop, h, tmax, tstep, "model TFLOP/s per GPU", w);

  // Days: log10 when the values span more than a decade, else linear from 0.
  const bool log_days = chart::spans_decades(days_min, days_max);
  const chart::LogAxis la = chart::log_axis(std::max(days_min, 1e-9), std::max(days_max, 1e-9));
  const auto [dmax, dstep] = chart::nice_axis(days_max);
  auto yday = [&](double d) {
    return kTop + h - (log_days ? la.fraction(d) : d / dmax) * h;
  };
  s += days_axis(kLeft + w, log_days, la, dmax, dstep, yday);
  const std::string days_title = log_days ? "days to train (log scale)" : "days to train";
  s += svg::text(W - 10, kTop + h / 2, days_title, 11, "middle",
                 "transform=\"rotate(90 " + svg::number(W - 10) + " " + svg::number(kTop + h / 2) + ")\"");
  if (!days_assumption.empty()) {  // what the days depend on, above the days axis
    s += svg::text(W - 10, kTop - 12, "days " + days_assumption, 10, "end", "class=\"assumption\"");
  }
  auto xpos = [&](int64_t g) {
    return kLeft + (std::log2(static_cast<double>(g)) - g0) / (g1 - g0) * w;
  };
  if (!band.empty())
    s += bands_svg(ok, band, intervals.front().level, xpos, [&](double tf) { return kTop + h - tf / tmax * h; }, yday);
  std::string tf_pts, day_pts;
  double last_label_x = -1e9;
  bool staggered = false;
  for (const CapacityRow* r : ok) {
    const double x = xpos(r->gpus);
    const double yt = kTop + h - tflops(*r) / tmax * h;
    const double yd = yday(r->days);
    tf_pts += svg::number(x) + "," + svg::number(yt) + " ";
    day_pts += svg::number(x) + "," + svg::number(yd) + " ";
    s += svg::circle(x, yt, 3.5, svg::color(0),
                     std::to_string(r->gpus) + " GPUs: " + svg::number(tflops(*r), 1) + " TFLOP/s/GPU");
    std::string cost = "cost unknown (no --price given)";
    if (price_known(price_per_gpu_hour_usd)) cost = "USD " + svg::number(r->cost_usd, 0);
    s += svg::circle(x, yd, 3.5, svg::color(1),
                     std::to_string(r->gpus) + " GPUs: " + svg::number(r->days, 1) + " days, " + cost);
    // Counts closer than a label's width (2048 and 2240) alternate between two lines.
    staggered = x - last_label_x < 30 && !staggered;
    const std::string count_label = std::to_string(r->gpus);
    s += svg::text(x, kTop + h + (staggered ? 25 : 14), count_label, 9, "middle");
    last_label_x = x;
    if (r->knee) {
      s += svg::line(x, kTop, x, kTop + h, "#D55E00", 1.5, "5,4");
      s += svg::text(x + 4, kTop + 12, "knee: scaling efficiency < 80%", 10, "start", "fill=\"#D55E00\"");
    }
  }
  s += svg::polyline(tf_pts, svg::color(0));
  s += svg::polyline(day_pts, svg::color(1));
  s += svg::text(kLeft + w / 2, H - 22, "GPUs (log scale)", 11, "middle");
  const std::string shaded = band.empty() ? "" : "; shaded: its " + svg::number(intervals.front().level * 100, 0) + "% interval";
  s += chart::legend(kLeft, H - 6, {{"model TFLOP/s per GPU (left" + shaded + ")", svg::color(0)},
                                    {std::string("days to train (right") + (log_days ? ", log" : "") + shaded + ")",
                                     svg::color(1)}});
  return s + svg::close();
}

}  // namespace parallax
