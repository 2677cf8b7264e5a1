// Fuzzing regressions (issue 7): replays every committed fuzz input through the same entry
// functions the libFuzzer targets call (fuzz/entries.cpp), in the normal build:
//   fuzz/seeds/<target>/*        the seed corpus scripts/fuzz.sh starts from;
//   fuzz/regressions/<target>/*  inputs that once crashed, leaked or hung a target.
// An entry aborts on anything but "accepted" or InputError, so a regression kills this test.
//
// Naming convention of the saved inputs: a file whose name starts with "bad-" must be
// rejected (InputError, the documented bad-input path); every other seed must be accepted.
// Other regression inputs only have to come through without a crash.
//
// It also checks that the list of targets agrees everywhere it is written down (targets()
// in entries.cpp, GRADSYNC_FUZZ_TARGETS in fuzz/CMakeLists.txt, the fuzz/*_fuzzer.cpp
// files, ALL_TARGETS in scripts/fuzz.sh), and that the seeds of every target that can
// reject an input exercise both the accepted and the rejected path.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "fuzz/entries.h"

namespace gradsync::fuzz {
// Outcomes print as words in failure messages.
void PrintTo(Outcome outcome, std::ostream* os) { *os << to_string(outcome); }
}  // namespace gradsync::fuzz

namespace fs = std::filesystem;
using gradsync::fuzz::Outcome;
using gradsync::fuzz::Target;

namespace {

const fs::path kFuzzDir = GRADSYNC_FUZZ_DIR;
const fs::path kSourceDir = kFuzzDir.parent_path();

// The input being replayed, named on stderr if an entry aborts (or crashes) on it.
char g_current_input[4096] = "";

extern "C" void name_input_and_die(int sig) {
  static const char prefix[] = "\ntest_fuzz_regressions: the entry died on the input ";
  (void)!::write(2, prefix, sizeof prefix - 1);
  (void)!::write(2, g_current_input, std::strlen(g_current_input));
  (void)!::write(2, "\n", 1);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void install_crash_reporter() {
  static const bool installed = [] {
    for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) std::signal(sig, name_input_and_die);
    return true;
  }();
  (void)installed;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) ADD_FAILURE() << "cannot read " << path;
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::vector<fs::path> files_in(const fs::path& dir) {
  std::vector<fs::path> files;
  if (!fs::is_directory(dir)) return files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

bool named_bad(const fs::path& file) { return starts_with(file.filename().string(), "bad-"); }

Outcome replay(const Target& target, const fs::path& file) {
  const std::string bytes = read_file(file);
  const std::string name = file.string();
  std::strncpy(g_current_input, name.c_str(), sizeof g_current_input - 1);
  install_crash_reporter();
  const Outcome outcome = target.entry(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  g_current_input[0] = '\0';
  return outcome;
}

const Target& target_named(const std::string& name) {
  for (const auto& t : gradsync::fuzz::targets()) {
    if (t.name == name) return t;
  }
  throw std::runtime_error("no fuzz target " + name);
}

std::vector<std::string> target_names() {
  std::vector<std::string> names;
  for (const auto& t : gradsync::fuzz::targets()) names.push_back(t.name);
  return names;
}

std::vector<std::string> words(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::set<std::string> as_set(const std::vector<std::string>& v) { return {v.begin(), v.end()}; }

}  // namespace

// --- the list of targets -----------------------------------------------------------------

TEST(FuzzTargets, EntriesListEachTargetOnceWithAnEntryAndAWhat) {
  const auto names = target_names();
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(as_set(names).size(), names.size()) << "a target is listed twice in targets()";
  for (const auto& t : gradsync::fuzz::targets()) {
    EXPECT_NE(t.entry, nullptr) << t.name;
    EXPECT_FALSE(t.what.empty()) << t.name;
    EXPECT_TRUE(std::regex_match(t.name, std::regex("[a-z0-9_]+"))) << t.name;
  }
}

TEST(FuzzTargets, CMakeListMatchesEntries) {
  const std::string cmake = read_file(kFuzzDir / "CMakeLists.txt");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(cmake, m, std::regex(R"(set\(GRADSYNC_FUZZ_TARGETS([^)]*)\))")))
      << "no set(GRADSYNC_FUZZ_TARGETS ...) in fuzz/CMakeLists.txt";
  EXPECT_EQ(words(m[1].str()), target_names()) << "GRADSYNC_FUZZ_TARGETS in fuzz/CMakeLists.txt vs targets() in fuzz/entries.cpp";
}

TEST(FuzzTargets, FuzzerSourcesMatchEntries) {
  std::set<std::string> sources;
  for (const auto& file : files_in(kFuzzDir)) {
    const std::string name = file.filename().string();
    const std::string suffix = "_fuzzer.cpp";
    if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      const std::string target = name.substr(0, name.size() - suffix.size());
      sources.insert(target);
      // Each fuzzer calls its own entry (and nothing is copied between them).
      const std::string text = read_file(file);
      EXPECT_NE(text.find("gradsync::fuzz::fuzz_" + target + "(data, size)"), std::string::npos)
          << file << " does not call gradsync::fuzz::fuzz_" << target;
      EXPECT_NE(text.find("LLVMFuzzerTestOneInput"), std::string::npos) << file;
    }
  }
  EXPECT_EQ(sources, as_set(target_names())) << "fuzz/*_fuzzer.cpp vs targets() in fuzz/entries.cpp";
}

TEST(FuzzTargets, CampaignScriptMatchesEntries) {
  const std::string script = read_file(kSourceDir / "scripts" / "fuzz.sh");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(script, m, std::regex(R"(\nALL_TARGETS=\(([^)]*)\))")))
      << "no ALL_TARGETS=(...) in scripts/fuzz.sh";
  EXPECT_EQ(words(m[1].str()), target_names()) << "ALL_TARGETS in scripts/fuzz.sh vs targets() in fuzz/entries.cpp";
  // --help lists every target.
  for (const auto& name : target_names()) {
    EXPECT_TRUE(std::regex_search(script, std::regex("\n  " + name + " +[^ ]"))) << "scripts/fuzz.sh --help does not list " << name;
  }
}

TEST(FuzzTargets, EveryInputFolderNamesATarget) {
  const auto names = as_set(target_names());
  for (const char* kind : {"seeds", "regressions"}) {
    const fs::path dir = kFuzzDir / kind;
    if (!fs::is_directory(dir)) continue;
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (!entry.is_directory()) continue;
      EXPECT_TRUE(names.count(entry.path().filename().string())) << entry.path() << " is not named after a fuzz target";
    }
  }
  for (const auto& name : names) {
    EXPECT_FALSE(files_in(kFuzzDir / "seeds" / name).empty()) << "fuzz/seeds/" << name << "/ has no seed";
  }
}

// --- replaying the saved inputs ----------------------------------------------------------

class FuzzInputs : public ::testing::TestWithParam<std::string> {};

// Every seed is accepted, or rejected when its name says so ("bad-*"). A target that can
// reject has seeds on both paths, so the fuzzer starts from both.
TEST_P(FuzzInputs, SeedsReplayWithTheOutcomeTheirNameSays) {
  const Target& target = target_named(GetParam());
  int accepted = 0, rejected = 0;
  for (const auto& file : files_in(kFuzzDir / "seeds" / target.name)) {
    const Outcome outcome = replay(target, file);
    (outcome == Outcome::accepted ? accepted : rejected) += 1;
    const Outcome expected = named_bad(file) ? Outcome::rejected : Outcome::accepted;
    EXPECT_EQ(outcome, expected) << file << " (seeds named bad-* must be rejected, all others accepted; "
                                    "GRADSYNC_FUZZ_SHOW_REJECTIONS=1 prints why an input is rejected)";
  }
  EXPECT_GT(accepted, 0) << "no seed of " << target.name << " is accepted";
  if (target.can_reject) {
    EXPECT_GT(rejected, 0) << "no seed of " << target.name << " is rejected (add fuzz/seeds/" << target.name
                           << "/bad-<what>)";
  } else {
    EXPECT_EQ(rejected, 0) << target.name << " cannot reject, yet a seed was rejected";
  }
}

// Inputs that once crashed, leaked or hung a target come through now (bad-* ones rejected).
TEST_P(FuzzInputs, RegressionsReplayWithoutACrash) {
  const Target& target = target_named(GetParam());
  const auto files = files_in(kFuzzDir / "regressions" / target.name);
  for (const auto& file : files) {
    const Outcome outcome = replay(target, file);
    if (named_bad(file)) {
      EXPECT_EQ(outcome, Outcome::rejected) << file << " is named bad-* but was accepted";
    }
    if (!target.can_reject) {
      EXPECT_EQ(outcome, Outcome::accepted) << file;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Targets, FuzzInputs, ::testing::ValuesIn(target_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });
