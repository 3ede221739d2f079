// One self-contained HTML page (inline SVG and CSS, no scripts from the network, no external
// resources) for a set of gate results: each gate's verdict line and figures, every Series as an
// SVG line chart (log y when asked; the band drawn as a shaded region/line; points over the band
// marked), and ClassDiff lists as a per-class map (one cell per class, coloured by the share of
// differing elements, with the first difference in a tooltip <title>).
#pragma once
#include <string>
#include <vector>

#include "gate/gate.h"

namespace memra {

std::string render_html_report(const std::string& title, const std::vector<GateResult>& gates);
void write_html_report(const std::string& path, const std::string& title, const std::vector<GateResult>& gates);  // atomic

}  // namespace memra
