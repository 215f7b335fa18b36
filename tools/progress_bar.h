// Progress of long work on stderr, for people: on a terminal, one line redrawn in place
// (report/format/progress_text.h: a bar, the count, the percentage, the time so far and the time
// left), shown only once the work has run kProgressQuietSeconds (short commands stay silent), at
// most kRedrawsPerSecond times a second, and erased when the work ends. Off a terminal (logs,
// pipes, tests) the commands keep their line per step.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace meshplan::tools {

inline constexpr double kProgressQuietSeconds = 2;
inline constexpr double kRedrawsPerSecond = 10;

// Whether stderr is a terminal a bar can be drawn on (isatty, and TERM not "dumb").
bool StderrIsTerminal();

class ProgressBar {
 public:
  // Draws on stderr when it is a terminal (StderrIsTerminal); the time starts now. The quiet
  // time is kProgressQuietSeconds, or $MESHPLAN_PROGRESS_AFTER_S where set (tests draw at once).
  // `time_left` false: steps of unequal lengths, whose count says nothing of the time left.
  explicit ProgressBar(std::string label, bool time_left = true);
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;
  // Erases the bar.
  ~ProgressBar();

  bool drawing() const { return terminal_; }
  // Redraws the bar when it is due (after the quiet time, not more often than kRedrawsPerSecond,
  // and always at the last step); nothing off a terminal.
  void Update(int64_t done, int64_t total);
  // A line of its own (a result worth keeping, a note): printed above the bar, which is redrawn.
  void Print(const std::string& line);
  // The next phase of the same work (simulate: expanding, then replaying): a new label, and the
  // time so far and the time left counted from now; the quiet time still from the start.
  void NextPhase(std::string label);

 private:
  double Elapsed() const;       // since start_s_
  double PhaseElapsed() const;  // since phase_start_s_
  void Erase();
  void Draw();

  std::string label_;
  bool time_left_;
  bool terminal_;
  double quiet_s_;
  double start_s_;        // the work's: the quiet time counts from here
  double phase_start_s_;  // this phase's: the time so far and the time left count from here
  double last_draw_s_ = -1;
  bool shown_ = false;
  int64_t done_ = 0, total_ = 0;
};

}  // namespace meshplan::tools
