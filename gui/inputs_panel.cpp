#include "inputs_panel.hpp"

#include <algorithm>

#include <QCheckBox>
#include <QComboBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSlider>
#include <QVBoxLayout>

#include "parallax/core/presets.hpp"
#include "qstring_text.hpp"

namespace parallax::gui {
namespace {

using detail::qs;
std::string ss(const QString& s) { return s.toStdString(); }

QComboBox* combo(const QString& name, const std::vector<std::string>& items, bool editable,
                 const QString& tip) {
  auto* c = new QComboBox;
  c->setObjectName(name);
  for (const std::string& i : items) c->addItem(qs(i));
  c->setEditable(editable);
  c->setToolTip(tip);
  c->setProperty("helpTip", tip);
  return c;
}

QCheckBox* check(const QString& name, const QString& text, const QString& tip) {
  auto* c = new QCheckBox(text);
  c->setObjectName(name);
  c->setToolTip(tip);
  return c;
}

void set_combo_text(QComboBox* c, const std::string& text) {
  const int i = c->findText(qs(text));
  if (i >= 0) {
    c->setCurrentIndex(i);
  } else if (c->isEditable()) {
    c->setEditText(qs(text));
  } else {
    c->addItem(qs(text));  // e.g. a session naming a preset this build does not have
    c->setCurrentIndex(c->count() - 1);
  }
}

}  // namespace

QLineEdit* InputsPanel::add_line(const QString& name, const QString& placeholder, const QString& tip) {
  auto* e = new QLineEdit;
  e->setObjectName(name);
  e->setPlaceholderText(placeholder);
  e->setToolTip(tip);
  e->setProperty("helpTip", tip);
  connect(e, &QLineEdit::textChanged, this, &InputsPanel::emit_changed);
  return e;
}

InputsPanel::InputsPanel(QWidget* parent) : QWidget(parent) {
  auto* top = new QVBoxLayout(this);
  top->addWidget(model_box());
  top->addWidget(job_box());
  top->addWidget(constraints_box());
  error_label_ = new QLabel;
  error_label_->setObjectName("error_label");
  error_label_->setWordWrap(true);
  error_label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  error_label_->setStyleSheet("color: #b00020; font-weight: bold;");
  error_label_->hide();
  top->addWidget(error_label_);
  top->addStretch(1);

  connect_inputs();
  set_inputs(WhatIfInputs{});
}

// The model: a preset, or its shape changed number by number.
QGroupBox* InputsPanel::model_box() {
  auto* box = new QGroupBox("Model");
  auto* mf = new QFormLayout(box);
  model_ = combo("model", preset_names("models"), false, "model preset (--model)");
  mf->addRow("preset", model_);
  custom_shape_ = check("custom_shape", "custom shape (change the numbers below)",
                        "use the preset's activation, positions and norm with your own shape");
  mf->addRow(custom_shape_);
  const std::pair<const char*, const char*> shape_fields[] = {
      {"layers", "layers"}, {"hidden", "hidden"}, {"heads", "heads"},
      {"ffn_hidden", "FFN hidden"}, {"seq_len", "sequence"}, {"vocab", "vocabulary"}};
  for (const auto& [key, label] : shape_fields) {
    QLineEdit* e = add_line(key, "", QString("custom model: $.%1").arg(key));
    shape_[key] = e;
    mf->addRow(label, e);
  }
  return box;
}

// The cluster and the job: GPUs, batch, tokens, price, dtype, stack, kernel and profile.
QGroupBox* InputsPanel::job_box() {
  auto* box = new QGroupBox("Cluster and job");
  auto* jf = new QFormLayout(box);
  cluster_ = combo("cluster", preset_names("clusters"), false, "cluster preset (--cluster)");
  jf->addRow("cluster", cluster_);
  nodes_ = add_line("nodes", "preset's", "the cluster at this many nodes (--nodes)");
  nodes_->setMaximumWidth(80);
  jf->addRow("nodes", nodes_);
  gpus_slider_ = new QSlider(Qt::Horizontal);
  gpus_slider_->setObjectName("gpus_slider");
  gpus_slider_->setMinimum(1);
  gpus_ = add_line("gpus", "", "GPUs used, tp * pp * dp (--gpus)");
  gpus_->setMaximumWidth(80);
  auto* gpus_row = new QHBoxLayout;
  gpus_row->addWidget(gpus_slider_, 1);
  gpus_row->addWidget(gpus_);
  jf->addRow("GPUs", gpus_row);
  global_batch_ = add_line("global_batch", "", "sequences per iteration (--global-batch)");
  jf->addRow("global batch", global_batch_);
  tokens_ = add_line("tokens", "20 per parameter", "total training tokens (--tokens), e.g. 270e9");
  jf->addRow("tokens", tokens_);
  price_ = add_line("price", "none", "price per GPU-hour in USD (--price)");
  jf->addRow("price $/GPU-h", price_);
  dtype_ = combo("dtype", {"bf16", "fp16", "fp8", "tf32", "fp32"}, false, "training dtype (--dtype)");
  jf->addRow("dtype", dtype_);
  bytes_per_param_ = combo("bytes_per_param", {"16", "18", "20"}, false,
                           "weights + grads + optimizer bytes per parameter (--bytes-per-param)");
  jf->addRow("bytes/param", bytes_per_param_);
  std::vector<std::string> stacks = {""};  // every preset stack, nemo and nemo-1 included
  for (const std::string& s : preset_names("stacks")) stacks.push_back(s);
  framework_ = combo("framework", stacks, true,
                     "software stack (--stack): how it computes attention (presets/stacks/) and "
                     "its entry in the profile; empty = the profile's own");
  jf->addRow("stack", framework_);
  std::vector<std::string> kernels = {""};
  for (const std::string& k : preset_names("attention")) kernels.push_back(k);
  attention_kernel_ = combo("attention_kernel", kernels, true,
                            "fused attention kernel (--attention-kernel): presets/attention/ name or "
                            "JSON file; empty = the stack's for the GPU");
  attention_kernel_->lineEdit()->setPlaceholderText("the stack's");
  jf->addRow("attention kernel", attention_kernel_);
  std::vector<std::string> profiles = {""};
  for (const std::string& p : preset_names("profiles")) profiles.push_back(p);
  profile_ = combo("profile", profiles, true,
                   "calibration profile: preset name or JSON file; empty = the cluster's (--profile)");
  profile_->lineEdit()->setPlaceholderText("the cluster's");
  auto* browse = new QPushButton("...");
  browse->setObjectName("profile_browse");
  browse->setToolTip("open a calibration profile (JSON)");
  browse->setMaximumWidth(32);
  connect(browse, &QPushButton::clicked, this, &InputsPanel::browse_profile);
  auto* profile_row = new QHBoxLayout;
  profile_row->addWidget(profile_, 1);
  profile_row->addWidget(browse);
  jf->addRow("profile", profile_row);
  return box;
}

// The search's constraints: forced sizes, recompute modes, SP and the plans no trainer runs.
QGroupBox* InputsPanel::constraints_box() {
  auto* box = new QGroupBox("Constraints");
  auto* sf = new QFormLayout(box);
  force_tp_ = add_line("force_tp", "search", "only plans with this tensor-parallel size (--force-tp)");
  sf->addRow("force tp", force_tp_);
  force_pp_ = add_line("force_pp", "search", "only plans with this pipeline-parallel size (--force-pp)");
  sf->addRow("force pp", force_pp_);
  recompute_ = new QGroupBox("recompute modes allowed");
  recompute_->setObjectName("recompute_allowed");
  recompute_->setToolTip("--recompute-allowed");
  recompute_->setProperty("helpTip", "--recompute-allowed");
  auto* rl = new QHBoxLayout(recompute_);
  recompute_none_ = check("recompute_none", "none", "no recomputation");
  recompute_selective_ = check("recompute_selective", "selective", "recompute attention scores");
  recompute_full_ = check("recompute_full", "full", "recompute whole layers");
  for (QCheckBox* c : {recompute_none_, recompute_selective_, recompute_full_}) rl->addWidget(c);
  sf->addRow(recompute_);
  sequence_parallel_ = check("sequence_parallel", "sequence parallelism", "consider SP when tp > 1 (off: --no-sp)");
  cross_node_tp_ = check("allow_cross_node_tp", "allow cross-node TP", "--allow-cross-node-tp");
  allow_all_ = check("allow_all", "plans no trainer runs", "--allow-all");
  uneven_pp_ = check("uneven_pp", "uneven first/last stages", "--uneven-pp");
  for (QCheckBox* c : {sequence_parallel_, cross_node_tp_, allow_all_, uneven_pp_}) sf->addRow(c);
  return box;
}

// Every input re-plans on change; the model, cluster and GPU count update the fields they drive.
void InputsPanel::connect_inputs() {
  for (QCheckBox* c : {recompute_none_, recompute_selective_, recompute_full_, sequence_parallel_,
                       cross_node_tp_, allow_all_, uneven_pp_}) {
    c->setProperty("helpTip", c->toolTip());
    connect(c, &QCheckBox::toggled, this, &InputsPanel::emit_changed);
  }
  connect(custom_shape_, &QCheckBox::toggled, this, &InputsPanel::on_custom_toggled);
  connect(model_, &QComboBox::currentTextChanged, this, &InputsPanel::on_model_changed);
  connect(cluster_, &QComboBox::currentTextChanged, this, &InputsPanel::on_cluster_changed);
  connect(nodes_, &QLineEdit::textChanged, this, &InputsPanel::on_cluster_changed);
  for (QComboBox* c : {dtype_, bytes_per_param_, framework_, attention_kernel_, profile_}) {
    connect(c, &QComboBox::currentTextChanged, this, &InputsPanel::emit_changed);
  }
  connect(gpus_, &QLineEdit::textChanged, this, &InputsPanel::on_gpus_text_changed);
  connect(gpus_slider_, &QSlider::valueChanged, this, [this](int v) { gpus_->setText(QString::number(v)); });
}

WhatIfInputs InputsPanel::inputs() const {
  WhatIfInputs w;
  PlanOptions& o = w.job;
  o.model = ss(model_->currentText());
  o.cluster = ss(cluster_->currentText());
  o.nodes = ss(nodes_->text());
  o.gpus = ss(gpus_->text());
  o.job_value("global_batch") = ss(global_batch_->text());
  o.job_value("tokens") = ss(tokens_->text());
  o.job_value("price_per_gpu_hour_usd") = ss(price_->text());
  o.job_value("dtype") = ss(dtype_->currentText());
  o.job_value("bytes_per_param") = ss(bytes_per_param_->currentText());
  o.job_value("framework") = ss(framework_->currentText());
  o.job_value("attention_kernel") = ss(attention_kernel_->currentText());
  o.profile = ss(profile_->currentText());
  w.custom_shape = custom_shape_->isChecked();
  w.shape = {ss(shape_.at("layers")->text()),  ss(shape_.at("hidden")->text()),
             ss(shape_.at("heads")->text()),   ss(shape_.at("ffn_hidden")->text()),
             ss(shape_.at("seq_len")->text()), ss(shape_.at("vocab")->text())};
  SearchFlags& s = w.search;
  std::string modes;
  const std::pair<QCheckBox*, const char*> boxes[] = {
      {recompute_none_, "none"}, {recompute_selective_, "selective"}, {recompute_full_, "full"}};
  for (const auto& [box, mode] : boxes) {
    if (!box->isChecked()) continue;
    if (!modes.empty()) modes += ',';
    modes += mode;
  }
  s.recompute_allowed = modes;
  s.no_sp = !sequence_parallel_->isChecked();
  s.allow_cross_node_tp = cross_node_tp_->isChecked();
  s.allow_all = allow_all_->isChecked();
  s.uneven_pp = uneven_pp_->isChecked();
  s.force_tp = ss(force_tp_->text());
  s.force_pp = ss(force_pp_->text());
  return w;
}

void InputsPanel::set_inputs(const WhatIfInputs& w) {
  loading_ = true;
  const PlanOptions& o = w.job;
  set_combo_text(model_, o.model);
  custom_shape_->setChecked(w.custom_shape);
  on_custom_toggled(w.custom_shape);
  if (w.custom_shape) {
    shape_.at("layers")->setText(qs(w.shape.layers));
    shape_.at("hidden")->setText(qs(w.shape.hidden));
    shape_.at("heads")->setText(qs(w.shape.heads));
    shape_.at("ffn_hidden")->setText(qs(w.shape.ffn_hidden));
    shape_.at("seq_len")->setText(qs(w.shape.seq_len));
    shape_.at("vocab")->setText(qs(w.shape.vocab));
  } else {
    on_model_changed();
  }
  set_combo_text(cluster_, o.cluster);
  nodes_->setText(qs(o.nodes));
  on_cluster_changed();
  gpus_->setText(qs(o.gpus));
  global_batch_->setText(qs(o.job_value("global_batch")));
  tokens_->setText(qs(o.job_value("tokens")));
  price_->setText(qs(o.job_value("price_per_gpu_hour_usd")));
  set_combo_text(dtype_, o.job_value("dtype"));
  set_combo_text(bytes_per_param_, o.job_value("bytes_per_param"));
  set_combo_text(framework_, o.job_value("framework"));
  set_combo_text(attention_kernel_, o.job_value("attention_kernel"));
  set_combo_text(profile_, o.profile);
  const SearchFlags& s = w.search;
  const std::string modes = "," + s.recompute_allowed + ",";
  recompute_none_->setChecked(modes.find(",none,") != std::string::npos);
  recompute_selective_->setChecked(modes.find(",selective,") != std::string::npos);
  recompute_full_->setChecked(modes.find(",full,") != std::string::npos);
  sequence_parallel_->setChecked(!s.no_sp);
  cross_node_tp_->setChecked(s.allow_cross_node_tp);
  allow_all_->setChecked(s.allow_all);
  uneven_pp_->setChecked(s.uneven_pp);
  force_tp_->setText(qs(s.force_tp));
  force_pp_->setText(qs(s.force_pp));
  loading_ = false;
  emit changed();
}

void InputsPanel::emit_changed() {
  if (!loading_) emit changed();
}

void InputsPanel::on_model_changed() {
  // A preset fills the shape fields with its numbers (shown, not editable) unless the user is
  // editing a custom shape, which keeps its own numbers.
  if (!custom_shape_->isChecked()) {
    try {
      const ModelShapeFields f = shape_fields(load_model(ss(model_->currentText())));
      const bool was_loading = loading_;
      loading_ = true;
      shape_.at("layers")->setText(qs(f.layers));
      shape_.at("hidden")->setText(qs(f.hidden));
      shape_.at("heads")->setText(qs(f.heads));
      shape_.at("ffn_hidden")->setText(qs(f.ffn_hidden));
      shape_.at("seq_len")->setText(qs(f.seq_len));
      shape_.at("vocab")->setText(qs(f.vocab));
      loading_ = was_loading;
    } catch (const InputError&) {
      // The re-plan reports it at the model field.
    }
  }
  emit_changed();
}

void InputsPanel::on_custom_toggled(bool on) {
  for (auto& [key, edit] : shape_) edit->setReadOnly(!on);
  if (!on) on_model_changed();  // back to the preset's numbers (and re-plan)
  else emit_changed();
}

void InputsPanel::on_cluster_changed() {
  try {
    const ClusterSpec c = load_cluster(ss(cluster_->currentText()));
    bool ok = false;
    const int nodes = nodes_->text().toInt(&ok);
    const int64_t total = ok && nodes > 0 ? nodes * c.gpus_per_node : c.total_gpus();
    const QSignalBlocker block(gpus_slider_);
    gpus_slider_->setMaximum(static_cast<int>(std::min<int64_t>(total, 1 << 24)));
    gpus_slider_->setSingleStep(static_cast<int>(c.gpus_per_node));
    gpus_slider_->setPageStep(static_cast<int>(c.gpus_per_node * 8));
    on_gpus_text_changed();
  } catch (const InputError&) {
    // The re-plan reports it at the cluster field.
  }
  emit_changed();
}

void InputsPanel::on_gpus_text_changed() {
  bool ok = false;
  const int n = gpus_->text().toInt(&ok);
  if (ok && n >= gpus_slider_->minimum() && n <= gpus_slider_->maximum()) {
    const QSignalBlocker block(gpus_slider_);  // the box's text stays exactly as typed
    gpus_slider_->setValue(n);
  }
}

void InputsPanel::browse_profile() {
  const QString path = QFileDialog::getOpenFileName(this, "Calibration profile", QString(),
                                                    "Profiles (*.json);;All files (*)");
  if (!path.isEmpty()) profile_->setEditText(path);
}

QWidget* InputsPanel::field_for(const InputError& e) const {
  if (e.source() == kCustomModelSource) {
    const std::string key = e.path().size() > 2 ? e.path().substr(2) : "";  // "$.heads" -> "heads"
    if (key == "kv_heads") return shape_.at("heads");
    const auto it = shape_.find(key);
    if (it != shape_.end()) return it->second;
    return custom_shape_;
  }
  const std::map<std::string, QWidget*> by_flag = {
      {"--gpus", gpus_},           {"--global-batch", global_batch_}, {"--nodes", nodes_},
      {"--tokens", tokens_},       {"--price", price_},
      {"--dtype", dtype_},         {"--bytes-per-param", bytes_per_param_},
      {"--stack", framework_}, {"--attention-kernel", attention_kernel_}, {"--profile", profile_},
      {"--force-tp", force_tp_},   {"--force-pp", force_pp_},
      {"--recompute-allowed", recompute_}};
  if (const auto it = by_flag.find(e.path()); it != by_flag.end()) return it->second;
  // Loading a preset or file: the error names it as source (a file) or as path (a preset name).
  const std::string profile = ss(profile_->currentText());
  const std::string model = ss(model_->currentText());
  const std::string cluster = ss(cluster_->currentText());
  auto about = [&](const std::string& value, const std::string& kind) {
    return (!value.empty() && (e.source() == value || e.path() == value)) ||
           e.source() == "preset " + kind + "/" + value;
  };
  if (about(profile, "profiles")) return profile_;
  if (about(model, "models")) return model_;
  if (about(cluster, "clusters")) return cluster_;
  return nullptr;
}

QString InputsPanel::mark_error(const InputError& e) {
  clear_error();
  const QString message = QString::fromUtf8(e.what());
  error_label_->setText(message);
  error_label_->show();
  marked_ = field_for(e);
  if (!marked_) return {};
  marked_->setProperty("inputError", message);
  marked_->setToolTip(message);
  marked_->setStyleSheet(QString("#%1 { border: 2px solid #D55E00; }").arg(marked_->objectName()));
  return marked_->objectName();
}

void InputsPanel::clear_error() {
  error_label_->clear();
  error_label_->hide();
  if (!marked_) return;
  marked_->setProperty("inputError", QVariant());
  marked_->setToolTip(marked_->property("helpTip").toString());
  marked_->setStyleSheet(QString());
  marked_ = nullptr;
}

QString InputsPanel::error_text() const { return error_label_->text(); }

}  // namespace parallax::gui
