//===- Stats.cpp - Per-layer statistics of a trained model ----------------===//
//
// rewire-report --layer-stats: compiles the model with --instrument (residual-
// instrument adds per-layer statistics as results), runs it with the given
// (trained) parameters on batches of the given inputs, and renders the
// per-layer numbers — stream norms, relative update sizes, gate values —
// with the connection weights of ANCRe/DenseFormer mixes (read from the
// parameters) and the loss at every depth of an LPA model (when targets are
// given), as PNG plots and one self-contained HTML page.
//
//===----------------------------------------------------------------------===//
#include "tools/rewire-report/Stats.h"

#include "rewire/Plot/Plot.h"
#include "rewire/Runtime/Runtime.h"
#include "rewire/Support/AtomicFile.h"
#include "rewire/Support/Npy.h"
#include "rewire/Support/Printable.h"
#include "rewire/Support/Safetensors.h"
#include "tools/common/CompileCache.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <functional>
#include <sstream>
#include <unistd.h>

namespace rewire::report {
namespace {

using runtime::Model;

[[noreturn]] void die(const std::string &message, int code) {
  std::cerr << "rewire-report: error: " << printable(message) << "\n";
  std::exit(code);
}

std::string base64(const std::string &in) {
  static const char *t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    unsigned v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    out += {t[v >> 18], t[(v >> 12) & 63], t[(v >> 6) & 63], t[v & 63]};
  }
  if (i + 1 == in.size()) {
    unsigned v = uint8_t(in[i]) << 16;
    out += {t[v >> 18], t[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == in.size()) {
    unsigned v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
    out += {t[v >> 18], t[(v >> 12) & 63], t[(v >> 6) & 63], '='};
  }
  return out;
}

std::string html(const std::string &s) {
  std::string out;
  for (char c : s)
    out += c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : std::string(1, c);
  return out;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.4g", v);
  return buf;
}

/// One statistic of one update: "stats:s<S>.l<L>.<op>.<stat>".
struct StatName {
  int64_t stream = 0, layer = 0;
  std::string op, stat;
};

bool parseStat(const std::string &name, StatName &out) {
  if (name.rfind("stats:s", 0) != 0)
    return false;
  std::string rest = name.substr(7);
  size_t dot = rest.find(".l");
  size_t op = dot == std::string::npos ? dot : rest.find('.', dot + 2);
  size_t stat = op == std::string::npos ? op : rest.rfind('.');
  if (stat == std::string::npos || stat <= op)
    return false;
  out.stream = std::strtoll(rest.substr(0, dot).c_str(), nullptr, 10);
  out.layer = std::strtoll(rest.substr(dot + 2, op - dot - 2).c_str(), nullptr, 10);
  out.op = rest.substr(op + 1, stat - op - 1);
  out.stat = rest.substr(stat + 1);
  return true;
}

/// Mean loss of `pred` against `target`: cross-entropy when the target is
/// integer class labels (`pred` has one more axis), else MSE.
double lossOf(const HostTensor &pred, const HostTensor &target) {
  bool labels = target.dtype == DType::I64 || target.dtype == DType::I32;
  int64_t n = pred.numel();
  if (!labels) {
    double s = 0;
    for (int64_t i = 0; i < n; ++i) {
      double d = pred.at(i) - target.at(i);
      s += d * d;
    }
    return s / static_cast<double>(n);
  }
  int64_t rows = target.numel(), classes = rows ? n / rows : 0;
  double s = 0;
  for (int64_t r = 0; r < rows; ++r) {
    double m = -INFINITY;
    for (int64_t c = 0; c < classes; ++c)
      m = std::max(m, pred.at(r * classes + c));
    double z = 0;
    for (int64_t c = 0; c < classes; ++c)
      z += std::exp(pred.at(r * classes + c) - m);
    int64_t y = static_cast<int64_t>(target.at(r));
    s += std::log(z) + m - (y >= 0 && y < classes ? pred.at(r * classes + y) : m);
  }
  return s / static_cast<double>(std::max<int64_t>(rows, 1));
}

HostTensor slice(const HostTensor &all, int64_t first, int64_t count) {
  HostTensor t;
  t.dtype = all.dtype;
  t.shape = all.shape;
  t.shape[0] = count;
  size_t row = all.data.size() / static_cast<size_t>(all.shape[0]);
  t.data.assign(all.data.begin() + static_cast<long>(row * first),
                all.data.begin() + static_cast<long>(row * (first + count)));
  return t;
}

} // namespace

int runStats(const StatsOptions &o) {
  if (o.inputs.empty())
    die("--layer-stats needs --inputs X.npy (examples along the first axis)", 1);
  std::vector<std::string> flags = {"--instrument"};
  if (!o.residual.empty())
    flags.push_back("--residual=" + o.residual);
  std::string artifact = tools::compileCached(o.model, flags, die);
  std::string error;
  auto model = Model::load(artifact, error, o.params);
  if (!model)
    die(error, 4);
  const runtime::FunctionInfo *fn = model->function("forward");
  if (!fn && !model->functions().empty())
    fn = &model->functions().front();
  if (!fn || fn->inputs.size() != 1)
    die("the model must have one function with one input", 2);
  HostTensor x, y;
  if (auto err = readNpy(o.inputs, x))
    die(*err, 2);
  const runtime::TensorInfo &xi = fn->inputs[0];
  if (x.dtype != xi.dtype || x.shape.size() != xi.shape.size() ||
      !std::equal(xi.shape.begin() + 1, xi.shape.end(), x.shape.begin() + 1) || x.shape[0] < xi.shape[0])
    die("--inputs is " + x.typeString() + "; the model takes batches of " + xi.typeString(), 2);
  bool haveTargets = !o.targets.empty();
  if (haveTargets) {
    if (auto err = readNpy(o.targets, y))
      die(*err, 2);
    if (y.shape.empty() || y.shape[0] != x.shape[0])
      die("--targets must have one entry per example of --inputs", 2);
  }
  int64_t batch = xi.shape[0];
  int64_t batches = std::min<int64_t>(x.shape[0] / batch, o.batches);

  // Average every scalar statistic over the batches; losses at every depth.
  std::map<std::string, double> sums;
  std::vector<std::pair<std::string, double>> depthLoss; // output name, summed loss
  std::string base = fn->outputs.empty() ? "" : fn->outputs[0].name;
  for (int64_t k = 0; k < batches; ++k) {
    std::vector<HostTensor> in = {slice(x, k * batch, batch)}, out;
    if (auto err = model->run(fn->name, in, out))
      die(*err, 4);
    std::vector<std::pair<std::string, double>> losses;
    for (size_t i = 0; i < out.size(); ++i) {
      const std::string &name = fn->outputs[i].name;
      if (name.rfind("stats:", 0) == 0) {
        sums[name] += out[i].at(0);
      } else if (haveTargets && (i == 0 || name.rfind(base + "_depth", 0) == 0)) {
        HostTensor t = slice(y, k * batch, batch);
        losses.push_back({i == 0 ? "final" : name.substr(base.size() + 1), lossOf(out[i], t)});
      }
    }
    if (depthLoss.empty())
      depthLoss.assign(losses.size(), {"", 0.0});
    for (size_t i = 0; i < losses.size() && i < depthLoss.size(); ++i) {
      depthLoss[i].first = losses[i].first;
      depthLoss[i].second += losses[i].second;
    }
  }
  for (auto &[name, v] : sums)
    v /= static_cast<double>(batches);
  for (auto &[name, v] : depthLoss)
    v /= static_cast<double>(batches);
  if (sums.empty())
    die("the model has no residual updates to report (residual-detect found none)", 3);

  // stat -> op -> layer -> value, for stream 0.. (streams are plotted apart).
  struct Series {
    std::vector<double> layer, value;
  };
  std::map<std::string, std::map<std::string, Series>> byStat;
  std::vector<std::vector<std::string>> rows;
  for (auto &[name, v] : sums) {
    StatName s;
    if (!parseStat(name, s))
      continue;
    std::string key = "stream " + std::to_string(s.stream) + " " + s.op;
    byStat[s.stat][key].layer.push_back(static_cast<double>(s.layer));
    byStat[s.stat][key].value.push_back(v);
    rows.push_back({std::to_string(s.stream), std::to_string(s.layer), s.op, s.stat, num(v)});
  }
  std::sort(rows.begin(), rows.end(), [](const auto &a, const auto &b) {
    return std::make_tuple(std::stoll(a[0]), std::stoll(a[1]), a[3]) <
           std::make_tuple(std::stoll(b[0]), std::stoll(b[1]), b[3]);
  });

  std::string page = "<!doctype html><meta charset=utf-8><title>rewire-report</title>"
                     "<style>body{font-family:sans-serif;max-width:1000px;margin:2em auto}"
                     "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px;"
                     "text-align:right}</style><h1>rewire-report: " + html(o.model) + "</h1><p>" +
                     std::to_string(batches) + " batches of " + std::to_string(batch) +
                     " examples from " + html(o.inputs) + "; parameters " +
                     html(o.params.empty() ? "of the model" : o.params) +
                     (o.residual.empty() ? "" : "; residual form " + html(o.residual)) + ".</p>";
  auto addPlot = [&](const std::string &tag, const std::string &title,
                     const std::function<std::optional<std::string>(const std::string &)> &draw) {
    std::string path = o.plotsDir.empty() ? o.output + "." + tag + ".png"
                                          : o.plotsDir + "/" + tag + ".png";
    if (auto err = draw(path))
      die("cannot write '" + path + "': " + *err, 4);
    std::ifstream f(path, std::ios::binary);
    std::stringstream bytes;
    bytes << f.rdbuf();
    page += "<h2>" + html(title) + "</h2><img alt=\"" + html(title) + "\" src=\"data:image/png;base64," +
            base64(bytes.str()) + "\">";
    if (o.plotsDir.empty())
      ::unlink(path.c_str());
  };
  struct Figure {
    const char *stat, *title, *ylabel;
    bool logY;
  };
  for (const Figure &f : {Figure{"norm", "Stream norm entering each update", "MEAN ROW NORM", true},
                          Figure{"update", "Relative update size ||h' - h|| / ||h||", "RELATIVE UPDATE", true},
                          Figure{"gate_mean", "Gate mean (Review/Highway r, NAG m)", "MEAN GATE", false},
                          Figure{"gate_var", "Gate variance", "GATE VARIANCE", false},
                          Figure{"skip", "Mixture-of-Depths skip rate", "ROWS SKIPPED", false}}) {
    auto it = byStat.find(f.stat);
    if (it == byStat.end())
      continue;
    std::vector<plot::Series> series;
    for (auto &[key, s] : it->second)
      series.push_back({key, s.layer, s.value, 0, true});
    addPlot(f.stat, f.title, [&](const std::string &path) {
      return plot::writeLineChart(path, series, {f.title, "LAYER", f.ylabel, f.logY});
    });
  }
  if (!depthLoss.empty() && depthLoss.size() > 1) {
    std::vector<double> d, l;
    for (size_t i = 1; i < depthLoss.size(); ++i) {
      d.push_back(static_cast<double>(i));
      l.push_back(depthLoss[i].second);
    }
    d.push_back(static_cast<double>(depthLoss.size()));
    l.push_back(depthLoss[0].second);
    addPlot("exit_loss", "Loss at every depth (LPA readouts)", [&](const std::string &path) {
      return plot::writeLineChart(path, {{"loss", d, l, 0, true}},
                                  {"LOSS AT EVERY DEPTH", "DEPTH", "LOSS", false});
    });
  }
  // Connection weights of stream-level mixes, from the parameters.
  {
    SafetensorsMapping weights;
    std::string path = o.params;
    if (path.empty()) {
      std::string a = artifact;
      path = a.substr(0, a.size() - 4) + ".params.safetensors";
    }
    if (!weights.open(path)) {
      for (const char *kind : {"ancre", "denseformer"}) {
        std::vector<std::vector<double>> m;
        std::vector<std::string> labels;
        for (int64_t layer = 0; layer < 4096; ++layer) {
          const auto *t = weights.find("stream0.layer" + std::to_string(layer) + "." + kind + ".c");
          if (!t)
            continue;
          std::vector<double> c(t->bytes / 4);
          for (size_t j = 0; j < c.size(); ++j)
            c[j] = reinterpret_cast<const float *>(t->data)[j];
          if (std::string(kind) == "ancre") {
            double mx = *std::max_element(c.begin(), c.end()), z = 0;
            for (double &v : c)
              z += (v = std::exp((v - mx) / o.tau));
            for (double &v : c)
              v /= z;
          }
          m.push_back(c);
          labels.push_back("L" + std::to_string(layer));
        }
        if (m.empty())
          continue;
        size_t width = 0;
        for (auto &r : m)
          width = std::max(width, r.size());
        for (auto &r : m)
          r.resize(width, NAN);
        std::string title = std::string(kind) == "ancre" ? "ANCRE CONNECTIONS SOFTMAX(C/TAU)"
                                                          : "DENSEFORMER WEIGHTS";
        addPlot(std::string(kind) + "_weights", title, [&](const std::string &p) {
          return plot::writeHeatmap(p, m, {title, "EARLIER STATE", "BLOCK", false}, labels);
        });
      }
    }
  }
  page += "<h2>Numbers</h2><table><tr><th>stream</th><th>layer</th><th>op</th><th>statistic</th>"
          "<th>value</th></tr>";
  for (auto &r : rows)
    page += "<tr><td>" + r[0] + "</td><td>" + r[1] + "</td><td>" + html(r[2]) + "</td><td>" +
            html(r[3]) + "</td><td>" + r[4] + "</td></tr>";
  page += "</table>";
  if (!depthLoss.empty()) {
    page += "<h2>Loss at every depth</h2><table><tr><th>output</th><th>loss</th></tr>";
    for (auto &[name, v] : depthLoss)
      page += "<tr><td>" + html(name) + "</td><td>" + num(v) + "</td></tr>";
    page += "</table>";
  }
  if (auto err = writeFileAtomically(o.output, {&page}))
    die(*err, 4);
  std::cerr << "rewire-report: wrote " << o.output << " (" << rows.size() << " statistics, "
            << batches << " batches)\n";
  return 0;
}

} // namespace rewire::report
