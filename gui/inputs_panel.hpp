#pragma once
// The what-if's questions, left of the window: model (preset or custom shape), cluster, GPU count
// (slider and box), batch, tokens, price, precision, stack, calibration profile and the search
// constraints. Fields hold text, resolved by the CLI's functions, so a bad field is marked with
// the message `parallax plan` prints for the same value. Every object has an objectName (the
// session key, e.g. "gpus", "force_tp") that tests find it by.
#include <map>
#include <string>

#include <QWidget>

#include "parallax/core/error.hpp"
#include "what_if_inputs.hpp"

class QCheckBox;
class QComboBox;
class QGroupBox;
class QLabel;
class QLineEdit;
class QSlider;

namespace parallax::gui {

class InputsPanel : public QWidget {
  Q_OBJECT

 public:
  explicit InputsPanel(QWidget* parent = nullptr);

  WhatIfInputs inputs() const;
  // Fills every field, then emits changed() once.
  void set_inputs(const WhatIfInputs& w);

  // Marks the field the error is about (when one is) and shows the message under the fields;
  // returns that field's objectName, or "" when the error names no field of the panel.
  QString mark_error(const InputError& e);
  void clear_error();
  QString error_text() const;

 signals:
  void changed();

 private:
  QGroupBox* model_box();
  QGroupBox* job_box();
  QGroupBox* constraints_box();
  void connect_inputs();
  QLineEdit* add_line(const QString& name, const QString& placeholder, const QString& tip);
  QWidget* field_for(const InputError& e) const;
  void emit_changed();
  void on_model_changed();
  void on_cluster_changed();
  void on_gpus_text_changed();
  void on_custom_toggled(bool on);
  void browse_profile();

  QComboBox* model_ = nullptr;
  QCheckBox* custom_shape_ = nullptr;
  std::map<std::string, QLineEdit*> shape_;  // layers, hidden, heads, ffn_hidden, seq_len, vocab
  QComboBox* cluster_ = nullptr;
  QLineEdit* nodes_ = nullptr;
  QSlider* gpus_slider_ = nullptr;
  QLineEdit* gpus_ = nullptr;
  QLineEdit* global_batch_ = nullptr;
  QLineEdit* tokens_ = nullptr;
  QLineEdit* price_ = nullptr;
  QComboBox* dtype_ = nullptr;
  QComboBox* bytes_per_param_ = nullptr;
  QComboBox* framework_ = nullptr;
  QComboBox* attention_kernel_ = nullptr;
  QComboBox* profile_ = nullptr;
  QLineEdit* force_tp_ = nullptr;
  QLineEdit* force_pp_ = nullptr;
  QGroupBox* recompute_ = nullptr;
  QCheckBox* recompute_none_ = nullptr;
  QCheckBox* recompute_selective_ = nullptr;
  QCheckBox* recompute_full_ = nullptr;
  QCheckBox* sequence_parallel_ = nullptr;
  QCheckBox* cross_node_tp_ = nullptr;
  QCheckBox* allow_all_ = nullptr;
  QCheckBox* uneven_pp_ = nullptr;
  QLabel* error_label_ = nullptr;
  QWidget* marked_ = nullptr;
  bool loading_ = false;  // set_inputs() in progress: no changed() per field
};

}  // namespace parallax::gui
