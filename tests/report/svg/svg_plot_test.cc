// The SVG charts: well-formed XML (checked by a strict little parser written here), a standalone
// <svg> root, the title, axis labels, legend entries and one drawn series per input series, text
// escaping, log axes that skip unusable values, and edge cases (no data, one point, long labels).
#include "report/svg/svg_plot.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace meshplan::plot {
namespace {

// ---- A strict XML well-formedness checker producing a small DOM --------------------------------

struct Element {
  std::string name;
  std::map<std::string, std::string> attrs;  // unescaped values
  std::string text;                          // unescaped character data directly inside
  std::vector<std::unique_ptr<Element>> children;

  std::string Attr(const std::string& key) const {
    auto it = attrs.find(key);
    return it == attrs.end() ? "" : it->second;
  }
  // Text of this element and its descendants, in document order.
  std::string AllText() const {
    std::string out = text;
    for (const auto& c : children) out += c->AllText();
    return out;
  }
  void Collect(const std::function<bool(const Element&)>& keep,
               std::vector<const Element*>* out) const {
    if (keep(*this)) out->push_back(this);
    for (const auto& c : children) c->Collect(keep, out);
  }
};

// Accepts: an optional XML declaration, comments, one root element; elements with quoted
// attributes (no duplicates, no raw '<' or unescaped '&' in values), balanced tags, character data
// with only the predefined or numeric entities and no raw '<'. Rejects anything else.
class XmlParser {
 public:
  explicit XmlParser(const std::string& text) : s_(text) {}

  std::unique_ptr<Element> Parse() {
    SkipSpace();
    if (s_.compare(i_, 5, "<?xml") == 0) {
      const size_t end = s_.find("?>", i_);
      if (end == std::string::npos) return Fail("unterminated XML declaration");
      i_ = end + 2;
    }
    SkipMisc();
    if (i_ >= s_.size() || s_[i_] != '<') return Fail("no root element");
    auto root = ParseElement(0);
    if (root == nullptr) return nullptr;
    SkipMisc();
    if (i_ != s_.size()) return Fail("content after the root element");
    return root;
  }
  const std::string& error() const { return error_; }

 private:
  std::unique_ptr<Element> Fail(const std::string& why) {
    if (error_.empty()) error_ = why + " at offset " + std::to_string(i_);
    return nullptr;
  }
  void SkipSpace() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  void SkipMisc() {
    for (;;) {
      SkipSpace();
      if (s_.compare(i_, 4, "<!--") != 0) return;
      const size_t end = s_.find("-->", i_ + 4);
      if (end == std::string::npos) return;
      i_ = end + 3;
    }
  }
  static bool NameChar(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == ':' ||
           c == '.';
  }
  bool Name(std::string* out) {
    const size_t start = i_;
    if (i_ >= s_.size() || !(std::isalpha(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_'))
      return false;
    while (i_ < s_.size() && NameChar(s_[i_])) ++i_;
    *out = s_.substr(start, i_ - start);
    return true;
  }
  // Unescapes s_[begin, end) into *out; false on a raw '<' or a bad entity.
  bool Unescape(size_t begin, size_t end, std::string* out) {
    for (size_t k = begin; k < end; ++k) {
      const char c = s_[k];
      if (c == '<') return false;
      if (c != '&') {
        *out += c;
        continue;
      }
      const size_t semi = s_.find(';', k);
      if (semi == std::string::npos || semi >= end) return false;
      const std::string entity = s_.substr(k + 1, semi - k - 1);
      if (entity == "amp")
        *out += '&';
      else if (entity == "lt")
        *out += '<';
      else if (entity == "gt")
        *out += '>';
      else if (entity == "quot")
        *out += '"';
      else if (entity == "apos")
        *out += '\'';
      else if (entity.size() > 1 && entity[0] == '#')
        *out += '?';  // numeric: fine, not decoded
      else
        return false;
      k = semi;
    }
    return true;
  }
  std::unique_ptr<Element> ParseElement(int depth) {
    if (depth > 64) return Fail("nesting too deep");
    ++i_;  // '<'
    auto e = std::make_unique<Element>();
    if (!Name(&e->name)) return Fail("bad element name");
    for (;;) {
      const size_t before = i_;
      SkipSpace();
      if (i_ >= s_.size()) return Fail("unterminated start tag");
      if (s_[i_] == '/') {
        if (s_.compare(i_, 2, "/>") != 0) return Fail("bad empty-element tag");
        i_ += 2;
        return e;
      }
      if (s_[i_] == '>') {
        ++i_;
        break;
      }
      if (i_ == before) return Fail("attributes must be separated by space");
      std::string key;
      if (!Name(&key)) return Fail("bad attribute name");
      SkipSpace();
      if (i_ >= s_.size() || s_[i_] != '=') return Fail("attribute without '='");
      ++i_;
      SkipSpace();
      if (i_ >= s_.size() || (s_[i_] != '"' && s_[i_] != '\''))
        return Fail("unquoted attribute " + key);
      const char quote = s_[i_++];
      const size_t end = s_.find(quote, i_);
      if (end == std::string::npos) return Fail("unterminated attribute value");
      std::string value;
      if (!Unescape(i_, end, &value)) return Fail("bad character in attribute " + key);
      i_ = end + 1;
      if (!e->attrs.emplace(key, value).second) return Fail("duplicate attribute " + key);
    }
    // Content.
    for (;;) {
      const size_t lt = s_.find('<', i_);
      if (lt == std::string::npos) return Fail("unclosed element " + e->name);
      if (!Unescape(i_, lt, &e->text)) return Fail("bad character data");
      i_ = lt;
      if (s_.compare(i_, 4, "<!--") == 0) {
        const size_t end = s_.find("-->", i_);
        if (end == std::string::npos) return Fail("unterminated comment");
        i_ = end + 3;
        continue;
      }
      if (s_.compare(i_, 2, "</") == 0) {
        i_ += 2;
        std::string name;
        if (!Name(&name) || name != e->name) return Fail("mismatched end tag for " + e->name);
        SkipSpace();
        if (i_ >= s_.size() || s_[i_] != '>') return Fail("bad end tag");
        ++i_;
        return e;
      }
      auto child = ParseElement(depth + 1);
      if (child == nullptr) return nullptr;
      e->children.push_back(std::move(child));
    }
  }

  const std::string s_;
  size_t i_ = 0;
  std::string error_;
};

// The checker itself must reject what it claims to reject.
TEST(XmlChecker, RejectsMalformedDocuments) {
  for (const char* bad :
       {"<svg><g></svg>", "<svg a=1/>", "<svg a=\"x<y\"/>", "<svg>a & b</svg>", "<svg>a < b</svg>",
        "<svg a=\"1\" a=\"2\"/>", "<svg/><svg/>", "<svg>", "<svg a=\"&bogus;\"/>"}) {
    XmlParser p(bad);
    EXPECT_EQ(p.Parse(), nullptr) << bad;
  }
  XmlParser ok(
      "<?xml version=\"1.0\"?>\n<svg a='1' b=\"&lt;&amp;&quot;\"><g>x &gt; y</g><!-- c "
      "--></svg>\n");
  auto root = ok.Parse();
  ASSERT_NE(root, nullptr) << ok.error();
  EXPECT_EQ(root->Attr("b"), "<&\"");
  EXPECT_EQ(root->AllText(), "x > y");
}

// ---- Helpers ------------------------------------------------------------------------------------

// Parses `svg`, failing the test on malformed XML, and checks the standalone SVG root.
std::unique_ptr<Element> ParseSvg(const std::string& svg) {
  XmlParser p(svg);
  auto root = p.Parse();
  EXPECT_NE(root, nullptr) << p.error() << "\n" << svg.substr(0, 2000);
  if (root == nullptr) return nullptr;
  EXPECT_EQ(root->name, "svg");
  EXPECT_EQ(root->Attr("xmlns"), "http://www.w3.org/2000/svg");
  const double width = std::atof(root->Attr("width").c_str());
  const double height = std::atof(root->Attr("height").c_str());
  EXPECT_GT(width, 100);
  EXPECT_GT(height, 100);
  EXPECT_LT(width, 5000);
  EXPECT_EQ(root->Attr("viewBox").rfind("0 0 ", 0), 0u) << root->Attr("viewBox");
  // Nothing unprintable leaks into coordinates.
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_EQ(svg.find("inf"), std::string::npos);
  return root;
}

std::vector<const Element*> WithClass(const Element& root, const std::string& cls) {
  std::vector<const Element*> out;
  root.Collect([&cls](const Element& e) { return e.Attr("class") == cls; }, &out);
  return out;
}

std::vector<const Element*> Named(const Element& root, const std::string& name) {
  std::vector<const Element*> out;
  root.Collect([&name](const Element& e) { return e.name == name; }, &out);
  return out;
}

std::vector<std::string> DataSeries(const std::vector<const Element*>& elements) {
  std::vector<std::string> out;
  for (const Element* e : elements) out.push_back(e->Attr("data-series"));
  return out;
}

std::vector<std::string> Texts(const std::vector<const Element*>& elements) {
  std::vector<std::string> out;
  for (const Element* e : elements) out.push_back(e->AllText());
  return out;
}

std::string TitleText(const Element& root) {
  std::string out;
  for (const Element* e : WithClass(root, "title")) out += (out.empty() ? "" : " ") + e->AllText();
  return out;
}

LineChart ThreeSeries() {
  LineChart c;
  c.title = "Time per step vs GPU count";
  c.x_label = "GPUs (count)";
  c.y_label = "time per step (ms)";
  c.log_x = true;
  c.log_y = true;
  c.series = {{"ring", {{8, 900}, {16, 450}, {32, 230}, {2048, 4}}},
              {"mesh", {{32, 200}, {8, 800}, {16, 400}}},  // unsorted on purpose
              {"a<b & \"c\"", {{8, 1}, {16, 2}}}};
  return c;
}

// ---- Line chart ---------------------------------------------------------------------------------

TEST(LineChart, WellFormedWithTitleLabelsLegendAndOneSeriesEach) {
  const LineChart chart = ThreeSeries();
  const std::string svg = RenderLineChart(chart);
  auto root = ParseSvg(svg);
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(TitleText(*root), chart.title);
  ASSERT_EQ(WithClass(*root, "x-label").size(), 1u);
  EXPECT_EQ(WithClass(*root, "x-label")[0]->AllText(), "GPUs (count)");
  ASSERT_EQ(WithClass(*root, "y-label").size(), 1u);
  EXPECT_EQ(WithClass(*root, "y-label")[0]->AllText(), "time per step (ms)");

  const std::vector<std::string> names = {"ring", "mesh", "a<b & \"c\""};
  EXPECT_EQ(DataSeries(WithClass(*root, "legend-entry")), names);
  EXPECT_EQ(DataSeries(WithClass(*root, "series")), names);
  // Legend text as well as the attribute.
  for (const Element* e : WithClass(*root, "legend-entry")) {
    EXPECT_NE(e->AllText().find(e->Attr("data-series")), std::string::npos) << e->AllText();
  }
  // One polyline and one marker per point in each series.
  const auto series = WithClass(*root, "series");
  for (size_t s = 0; s < series.size(); ++s) {
    EXPECT_EQ(Named(*series[s], "polyline").size(), 1u) << names[s];
    EXPECT_EQ(WithClass(*series[s], "point").size(), chart.series[s].points.size()) << names[s];
  }
  // Points are drawn left to right: the mesh polyline's x coordinates increase.
  const std::string points = Named(*series[1], "polyline")[0]->Attr("points");
  double last_x = -1;
  size_t at = 0;
  int count = 0;
  while (at < points.size()) {
    const double x = std::atof(points.c_str() + at);
    EXPECT_GT(x, last_x) << points;
    last_x = x;
    ++count;
    at = points.find(' ', at);
    if (at == std::string::npos) break;
    ++at;
  }
  EXPECT_EQ(count, 3);
}

TEST(LineChart, EscapesEveryText) {
  LineChart chart = ThreeSeries();
  chart.title = "<script>alert('x')</script> & more";
  chart.x_label = "x \"quoted\"";
  chart.y_label = "y's <unit>";
  const std::string svg = RenderLineChart(chart);
  auto root = ParseSvg(svg);
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(svg.find("<script"), std::string::npos);
  EXPECT_EQ(svg.find("a<b"), std::string::npos);
  EXPECT_NE(svg.find("a&lt;b &amp; &quot;c&quot;"), std::string::npos);
  EXPECT_EQ(TitleText(*root), chart.title);
  EXPECT_EQ(WithClass(*root, "x-label")[0]->AllText(), chart.x_label);
  EXPECT_EQ(WithClass(*root, "y-label")[0]->AllText(), chart.y_label);
  // Control characters, which XML 1.0 forbids, do not break the document.
  chart.title = std::string("bell\x07 and nul-free\x1f");
  ParseSvg(RenderLineChart(chart));
  // Malformed UTF-8 neither; well-formed multi-byte text stays as it is.
  chart.title = std::string("bad \xff\xfe utf-8 \xe2\x82");
  chart.series[0].name = "\xc3\xa9t\xc3\xa9 \xe2\x86\x92 fast";
  const std::string svg8 = RenderLineChart(chart);
  ParseSvg(svg8);
  EXPECT_EQ(svg8.find("\xff"), std::string::npos);
  EXPECT_NE(svg8.find("data-series=\"\xc3\xa9t\xc3\xa9 \xe2\x86\x92 fast\""), std::string::npos);
}

TEST(LineChart, Log2TicksAreCountsAndLog10TicksAreDecades) {
  const std::string svg = RenderLineChart(ThreeSeries());
  auto root = ParseSvg(svg);
  ASSERT_NE(root, nullptr);
  const std::vector<std::string> x_ticks = Texts(WithClass(*root, "x-tick"));
  const std::vector<std::string> want_x = {"8", "16", "32", "64", "128", "256", "512", "1K", "2K"};
  EXPECT_EQ(x_ticks, want_x);
  const std::vector<std::string> y_ticks = Texts(WithClass(*root, "y-tick"));
  const std::vector<std::string> want_y = {"1", "10", "100", "1000"};
  EXPECT_EQ(y_ticks, want_y);

  // Sequence lengths: M suffixes.
  LineChart seq;
  seq.title = "share";
  seq.x_label = "sequence length (tokens)";
  seq.y_label = "share (%)";
  seq.log_x = true;
  seq.series = {{"ring", {{32768, 3}, {1 << 21, 97}}}};
  auto seq_root = ParseSvg(RenderLineChart(seq));
  ASSERT_NE(seq_root, nullptr);
  const std::vector<std::string> want_seq = {"32K", "64K", "128K", "256K", "512K", "1M", "2M"};
  EXPECT_EQ(Texts(WithClass(*seq_root, "x-tick")), want_seq);
  // Linear y: nice steps from zero.
  const std::vector<std::string> want_share = {"0", "20", "40", "60", "80", "100"};
  EXPECT_EQ(Texts(WithClass(*seq_root, "y-tick")), want_share);
}

TEST(LineChart, ExtremeRangesStillRender) {
  LineChart chart;
  chart.title = "t";
  chart.x_label = "x";
  chart.y_label = "y";
  chart.series = {{"s", {{-1e308, 1e-300}, {1e308, 1e300}}}};
  ParseSvg(RenderLineChart(chart));
  chart.log_x = chart.log_y = true;
  chart.series = {{"s", {{1e-300, 1e-300}, {1e300, 1e300}}}};
  auto root = ParseSvg(RenderLineChart(chart));
  ASSERT_NE(root, nullptr);
  EXPECT_LE(WithClass(*root, "x-tick").size(), 13u);
}

TEST(LineChart, LogAxesSkipNonPositiveAndNonFiniteValues) {
  LineChart chart;
  chart.title = "t";
  chart.x_label = "x";
  chart.y_label = "y";
  chart.log_x = true;
  chart.log_y = true;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  chart.series = {{"s", {{0, 5}, {-4, 3}, {4, 0}, {8, -1}, {8, nan}, {inf, 3}, {2, 10}, {4, 20}}}};
  auto root = ParseSvg(RenderLineChart(chart));
  ASSERT_NE(root, nullptr);
  const auto series = WithClass(*root, "series");
  ASSERT_EQ(series.size(), 1u);
  EXPECT_EQ(WithClass(*series[0], "point").size(), 2u);
  // Linear axes keep zero and negatives but still drop NaN and infinity.
  chart.log_x = chart.log_y = false;
  root = ParseSvg(RenderLineChart(chart));
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(WithClass(*WithClass(*root, "series")[0], "point").size(), 6u);
}

TEST(LineChart, EmptyInputDrawsAxesAndSaysNoData) {
  for (bool log : {false, true}) {
    LineChart chart;
    chart.title = "nothing here";
    chart.x_label = "GPUs";
    chart.y_label = "time (ms)";
    chart.log_x = chart.log_y = log;
    for (int with_empty_series = 0; with_empty_series < 2; ++with_empty_series) {
      // Series without a usable point: none at all, or only NaN (and, on log axes, zero).
      if (with_empty_series == 1)
        chart.series = {{"ring", {}}, {"mesh", {{log ? 0.0 : std::nan(""), 0}}}};
      const std::string svg = RenderLineChart(chart);
      auto root = ParseSvg(svg);
      ASSERT_NE(root, nullptr);
      ASSERT_EQ(WithClass(*root, "no-data").size(), 1u) << svg;
      EXPECT_EQ(WithClass(*root, "no-data")[0]->AllText(), "no data");
      EXPECT_EQ(WithClass(*root, "x-label").size(), 1u);
      EXPECT_EQ(WithClass(*root, "y-label").size(), 1u);
      EXPECT_FALSE(WithClass(*root, "x-tick").empty());
      EXPECT_FALSE(WithClass(*root, "y-tick").empty());
      EXPECT_EQ(WithClass(*root, "legend-entry").size(), chart.series.size());
      EXPECT_TRUE(WithClass(*root, "point").empty());
    }
  }
}

TEST(LineChart, SinglePointAndLongLabels) {
  LineChart chart;
  chart.title = std::string(300, 'T') + " with a very long title that must wrap onto more lines";
  chart.x_label = "GPUs";
  chart.y_label = "time (ms)";
  chart.log_x = true;
  const std::string long_name = "scheme " + std::string(200, 'x');
  chart.series = {{long_name, {{64, 12.5}}}};
  const std::string svg = RenderLineChart(chart);
  auto root = ParseSvg(svg);
  ASSERT_NE(root, nullptr);
  const auto series = WithClass(*root, "series");
  ASSERT_EQ(series.size(), 1u);
  EXPECT_EQ(series[0]->Attr("data-series"), long_name);
  EXPECT_EQ(WithClass(*series[0], "point").size(), 1u);
  EXPECT_TRUE(Named(*series[0], "polyline").empty());
  // The legend shows a shortened name; the full name stays in its tooltip.
  const auto legend = WithClass(*root, "legend-entry");
  ASSERT_EQ(legend.size(), 1u);
  EXPECT_LT(Named(*legend[0], "text")[0]->AllText().size(), 60u);
  EXPECT_EQ(Named(*legend[0], "title")[0]->AllText(), long_name);
  // The title wraps (no line wider than the canvas at ~0.6 em per character).
  const double width = std::atof(root->Attr("width").c_str());
  for (const Element* line : WithClass(*root, "title")) {
    EXPECT_LT(line->AllText().size() * 17 * 0.6, width) << line->AllText();
  }
  // A single x value still gets ticks around it.
  EXPECT_GE(WithClass(*root, "x-tick").size(), 2u);
}

TEST(LineChart, OverlappingSeriesStayVisible) {
  // ring and loongtrain share every point (equal times); mesh shares only the first one and ends
  // elsewhere; usp has a single point of its own.
  LineChart chart;
  chart.title = "Time per step";
  chart.x_label = "GPUs (count)";
  chart.y_label = "time per step (ms)";
  chart.log_x = true;
  chart.log_y = true;
  chart.series = {{"ring", {{8, 100}, {16, 50}, {32, 25}}},
                  {"loongtrain", {{8, 100}, {16, 50}, {32, 25}}},
                  {"mesh", {{8, 100}, {16, 60}, {32, 40}}},
                  {"usp", {{8, 400}}}};
  auto root = ParseSvg(RenderLineChart(chart));
  ASSERT_NE(root, nullptr);
  const auto series = WithClass(*root, "series");
  ASSERT_EQ(series.size(), 4u);
  // Every series has its own dash pattern (ring solid, the next three dashed differently).
  std::vector<std::string> dashes;
  for (const Element* s : series) {
    const auto lines = Named(*s, "polyline");
    dashes.push_back(lines.empty() ? "none" : lines[0]->Attr("stroke-dasharray"));
  }
  EXPECT_EQ(dashes[0], "");
  EXPECT_NE(dashes[1], dashes[2]);
  EXPECT_NE(dashes[1], "");
  EXPECT_EQ(dashes[3], "none");  // one point: no line
  // ring's markers (circles, drawn first) are covered by loongtrain's everywhere and by mesh's at
  // 8 GPUs: radius 4.5 x (1 + 0.4 x covering series) = 8.1 at 8 GPUs, 6.3 at 16 and 32.
  const auto ring_circles = Named(*series[0], "circle");
  ASSERT_EQ(ring_circles.size(), 3u);
  EXPECT_EQ(ring_circles[0]->Attr("r"), "8.1");
  EXPECT_EQ(ring_circles[1]->Attr("r"), "6.3");
  EXPECT_EQ(ring_circles[2]->Attr("r"), "6.3");
  // At most 3 rings: a marker under 5 others is drawn as under 3 (4.5 x 2.2 = 9.9).
  LineChart stack;
  stack.title = "stack";
  stack.x_label = "x";
  stack.y_label = "y";
  for (const char* name : {"a", "b", "c", "d", "e", "f"}) stack.series.push_back({name, {{1, 1}}});
  auto stacked = ParseSvg(RenderLineChart(stack));
  ASSERT_NE(stacked, nullptr);
  EXPECT_EQ(Named(*WithClass(*stacked, "series")[0], "circle")[0]->Attr("r"), "9.9");
  // Tooltips name the series on the same spot.
  const auto ring_points = WithClass(*series[0], "point");
  EXPECT_EQ(Named(*ring_points[0], "title")[0]->AllText(),
            "ring: 8 GPUs, 100 ms (same spot: loongtrain, mesh)");
  EXPECT_EQ(Named(*ring_points[2], "title")[0]->AllText(),
            "ring: 32 GPUs, 25 ms (same spot: loongtrain)");
  const auto usp_points = WithClass(*series[3], "point");
  EXPECT_EQ(Named(*usp_points[0], "title")[0]->AllText(), "usp: 8 GPUs, 400 ms");
  // Direct labels: ring and loongtrain end together (one label), mesh and usp alone.
  const auto labels = WithClass(*root, "end-label");
  EXPECT_EQ(Texts(labels), (std::vector<std::string>{"ring, loongtrain", "mesh", "usp"}));
  EXPECT_EQ(DataSeries(labels), (std::vector<std::string>{"ring, loongtrain", "mesh", "usp"}));
  // The two lines that reach the right edge are labelled in the margin, right of the plot frame,
  // the lower line (ring's 25 ms) below mesh's 40 ms; usp's label sits inside the plot.
  const auto frame = Named(*WithClass(*root, "axes")[0], "rect")[0];
  const double right =
      std::atof(frame->Attr("x").c_str()) + std::atof(frame->Attr("width").c_str());
  EXPECT_GT(std::atof(labels[0]->Attr("x").c_str()), right);
  EXPECT_GT(std::atof(labels[1]->Attr("x").c_str()), right);
  EXPECT_LT(std::atof(labels[2]->Attr("x").c_str()), right);
  EXPECT_GT(std::atof(labels[0]->Attr("y").c_str()), std::atof(labels[1]->Attr("y").c_str()));
}

// ---- Category map -------------------------------------------------------------------------------

TEST(CategoryMap, CellsLegendLabelsAndNotes) {
  CategoryMap map;
  map.title = "Fastest scheme";
  map.x_label = "GPUs";
  map.y_label = "sequence length (tokens)";
  map.x_ticks = {"8", "16", "32"};
  map.y_ticks = {"64K", "1M"};
  map.categories = {"ring", "mesh", "x<y"};
  map.cells = {{0, 1, 1}, {-1, 2, 1}};
  map.notes = {{"12.0 ms", "8.0 ms", "4.0 ms"}, {"", "1.2 s", "0.6 s"}};
  const std::string svg = RenderCategoryMap(map);
  auto root = ParseSvg(svg);
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(TitleText(*root), "Fastest scheme");
  EXPECT_EQ(WithClass(*root, "x-label")[0]->AllText(), "GPUs");
  EXPECT_EQ(WithClass(*root, "y-label")[0]->AllText(), "sequence length (tokens)");
  EXPECT_EQ(DataSeries(WithClass(*root, "legend-entry")), map.categories);
  EXPECT_EQ(WithClass(*root, "legend-none").size(), 1u);  // the empty cell is explained
  const auto cells = WithClass(*root, "cell");
  EXPECT_EQ(DataSeries(cells), (std::vector<std::string>{"ring", "mesh", "mesh", "x<y", "mesh"}));
  EXPECT_EQ(WithClass(*root, "cell-none").size(), 1u);
  EXPECT_NE(cells[0]->AllText().find("12.0 ms"), std::string::npos);
  EXPECT_NE(cells[3]->AllText().find("1.2 s"), std::string::npos);
  EXPECT_EQ(Texts(WithClass(*root, "x-tick")), map.x_ticks);
  // Rows are drawn bottom to top (like a y axis): 64K below 1M.
  const auto y_ticks = WithClass(*root, "y-tick");
  ASSERT_EQ(y_ticks.size(), 2u);
  EXPECT_EQ(y_ticks[0]->AllText(), "64K");
  EXPECT_GT(std::atof(y_ticks[0]->Attr("y").c_str()), std::atof(y_ticks[1]->Attr("y").c_str()));
  // Same colour for the same category.
  EXPECT_EQ(Named(*cells[1], "rect")[0]->Attr("fill"), Named(*cells[2], "rect")[0]->Attr("fill"));
  EXPECT_NE(Named(*cells[0], "rect")[0]->Attr("fill"), Named(*cells[1], "rect")[0]->Attr("fill"));
}

TEST(CategoryMap, TiedCellsCarryABandATooltipAndALegendEntry) {
  CategoryMap map;
  map.title = "Fastest scheme";
  map.x_label = "GPUs";
  map.y_label = "sequence length (tokens)";
  map.x_ticks = {"8", "16"};
  map.y_ticks = {"1M"};
  map.categories = {"ring", "loongtrain", "mesh"};
  map.cells = {{0, 2}};
  map.notes = {{"51.42 s", "3.0 s"}};
  // ring ties with loongtrain and mesh at 8 GPUs; an out-of-range tie is ignored at 16.
  map.ties = {{{{1, "51.42 s"}, {2, "51.60 s"}}, {{9, "x"}}}};
  map.tie_label = "within 0.5%";
  map.tie_legend = "band: other schemes within 0.5%";
  auto root = ParseSvg(RenderCategoryMap(map));
  ASSERT_NE(root, nullptr);
  const auto cells = WithClass(*root, "cell");
  ASSERT_EQ(cells.size(), 2u);
  EXPECT_EQ(cells[0]->Attr("data-series"), "ring");
  EXPECT_EQ(cells[0]->Attr("data-tied"), "loongtrain,mesh");
  EXPECT_EQ(Named(*cells[0], "title")[0]->AllText(),
            "sequence length (tokens) 1M, GPUs 8: ring (51.42 s); within 0.5%: loongtrain (51.42 "
            "s), mesh (51.60 s)");
  // The cell's first rect is still the winner's colour; the band has one stripe per tied scheme,
  // each in that scheme's legend colour.
  const auto legend = WithClass(*root, "legend-entry");
  ASSERT_EQ(legend.size(), 3u);
  auto legend_fill = [&legend](size_t k) { return Named(*legend[k], "rect")[0]->Attr("fill"); };
  EXPECT_EQ(Named(*cells[0], "rect")[0]->Attr("fill"), legend_fill(0));
  const auto stripes = WithClass(*cells[0], "tie-stripe");
  EXPECT_EQ(DataSeries(stripes), (std::vector<std::string>{"loongtrain", "mesh"}));
  EXPECT_EQ(stripes[0]->Attr("fill"), legend_fill(1));
  EXPECT_EQ(stripes[1]->Attr("fill"), legend_fill(2));
  // The untied cell (its only tie is out of range) has no band and no data-tied.
  EXPECT_TRUE(WithClass(*cells[1], "tie-band").empty());
  EXPECT_EQ(cells[1]->Attr("data-tied"), "");
  // The legend explains the band, with the tolerance.
  const auto tie_legend = WithClass(*root, "legend-tie");
  ASSERT_EQ(tie_legend.size(), 1u);
  EXPECT_EQ(tie_legend[0]->Attr("data-series"), "band: other schemes within 0.5%");
  // Without ties there is no tie legend entry.
  map.ties.clear();
  root = ParseSvg(RenderCategoryMap(map));
  ASSERT_NE(root, nullptr);
  EXPECT_TRUE(WithClass(*root, "legend-tie").empty());
  EXPECT_TRUE(WithClass(*root, "tie-band").empty());
}

TEST(CategoryMap, EmptyAndRaggedInputs) {
  CategoryMap map;
  map.title = "empty";
  map.x_label = "GPUs";
  map.y_label = "tokens";
  auto root = ParseSvg(RenderCategoryMap(map));
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(WithClass(*root, "no-data").size(), 1u);
  // Fewer cells than ticks, an out-of-range category, no notes: all "none", no crash.
  map.x_ticks = {"8", "16"};
  map.y_ticks = {"1K"};
  map.categories = {"ring"};
  map.cells = {{7}};
  root = ParseSvg(RenderCategoryMap(map));
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(WithClass(*root, "cell-none").size(), 2u);
  EXPECT_EQ(WithClass(*root, "cell").size(), 0u);
}

// ---- Timeline -----------------------------------------------------------------------------------

TEST(Timeline, LanesBarsTooltipsAndTimeAxis) {
  Timeline t;
  t.title = "Simulated timeline";
  t.time_label = "time (ms)";
  t.lanes = {"rank 0", "rank 1", "rank 2"};
  t.categories = {"compute fwd", "send/recv", "a&b"};
  t.bars = {
      {0, 0.0, 1.5, 0}, {0, 0.5, 1.0, 1}, {1, 0.0, 2.0, 0}, {2, 1.0, 3.25, 2}, {1, 2.0, 2.0, 1}};
  const std::string svg = RenderTimeline(t);
  auto root = ParseSvg(svg);
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(TitleText(*root), "Simulated timeline");
  EXPECT_EQ(Texts(WithClass(*root, "lane-label")), t.lanes);
  EXPECT_EQ(DataSeries(WithClass(*root, "legend-entry")), t.categories);
  EXPECT_EQ(WithClass(*root, "x-label")[0]->AllText(), "time (ms)");
  const auto bars = WithClass(*root, "bar");
  ASSERT_EQ(bars.size(), t.bars.size());
  bool found = false;
  for (const Element* b : bars) {
    EXPECT_EQ(b->name, "rect");
    const auto titles = Named(*b, "title");
    ASSERT_EQ(titles.size(), 1u);
    const std::string tip = titles[0]->AllText();
    EXPECT_NE(tip.find(b->Attr("data-series")), std::string::npos) << tip;
    if (b->Attr("data-series") == "a&b") {
      found = true;
      EXPECT_EQ(tip, "rank 2: a&b, 1 to 3.25 ms");
    }
    EXPECT_GT(std::atof(b->Attr("width").c_str()), 0.0);  // even the zero-length bar shows
  }
  EXPECT_TRUE(found);
  // The time axis starts at 0 and ends at the last bar.
  const auto ticks = Texts(WithClass(*root, "x-tick"));
  ASSERT_FALSE(ticks.empty());
  EXPECT_EQ(std::atof(ticks.front().c_str()), 0.0) << ticks.front();
  EXPECT_LE(std::atof(ticks.back().c_str()), 3.25) << ticks.back();
  EXPECT_GE(ticks.size(), 3u);
  // Overlapping categories on one lane are drawn in different bands (different y).
  EXPECT_NE(bars[0]->Attr("y"), bars[1]->Attr("y"));
}

TEST(Timeline, EmptyAndBadBars) {
  Timeline t;
  t.title = "nothing";
  t.time_label = "time (ms)";
  t.lanes = {"rank 0"};
  t.categories = {"compute"};
  auto root = ParseSvg(RenderTimeline(t));
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(WithClass(*root, "no-data").size(), 1u);
  EXPECT_FALSE(WithClass(*root, "x-tick").empty());
  // Bars on missing lanes, with NaN times or ending before they start are skipped.
  t.bars = {{5, 0, 1, 0}, {-1, 0, 1, 0}, {0, std::nan(""), 1, 0}, {0, 2, 1, 0}, {0, 0, 1, 9}};
  root = ParseSvg(RenderTimeline(t));
  ASSERT_NE(root, nullptr);
  const auto bars = WithClass(*root, "bar");
  ASSERT_EQ(bars.size(), 1u);  // the unknown category still draws, as "other"
  EXPECT_EQ(bars[0]->Attr("data-series"), "other");
}

}  // namespace
}  // namespace meshplan::plot
