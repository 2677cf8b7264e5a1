// Progress of long work on standard error, one display for every command: "[12/40] sim ring
// N=4 ..." — on a terminal one line updated in place, otherwise a line every ~10 % of the
// steps (or none, for work that only a terminal should hear about).
#pragma once

#include <cstddef>
#include <iosfwd>
#include <string>

namespace gradsync::models {

class Progress {
 public:
  Progress(std::size_t total, std::ostream& out, bool terminal, bool lines_when_not_a_terminal = true);
  // On standard error (a terminal or not, as it is).
  static Progress for_stderr(std::size_t total, bool lines_when_not_a_terminal = true);
  ~Progress() { finish(); }
  Progress(Progress&&) = default;
  void step(const std::string& label);  // one more step done; `label` says which
  void finish();  // clears an in-place line

 private:
  std::size_t total_, done_ = 0;
  int last_decile_ = -1;
  std::ostream* out_;
  bool terminal_, lines_;
  bool dirty_ = false;
};

}  // namespace gradsync::models
