#include "ember/backends/cpu/jit/host_toolchain.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdlib>

#include "ember/backends/cpu/jit/shared_object.h"
#include "ember/backends/cpu/jit/subprocess.h"
#include "ember/detail/hash.h"
#include "ember/kl/cache/file_ops.h"

namespace ember::cpu::jit {
namespace {

// Bumped when the calling convention or the flags' meaning changes, so old entries are not used.
constexpr const char* kAbi = "ember-host-jit-1";

std::string real_path(const std::string& p) {
  char buf[PATH_MAX];
  return ::realpath(p.c_str(), buf) ? std::string(buf) : p;
}

// The first few lines of `text`, for messages.
std::string head(const std::string& text, size_t lines = 6) {
  size_t pos = 0;
  for (size_t i = 0; i < lines && pos != std::string::npos; ++i) {
    pos = text.find('\n', pos);
    if (pos != std::string::npos) ++pos;
  }
  std::string h = text.substr(0, pos == std::string::npos ? text.size() : pos);
  while (!h.empty() && std::isspace(static_cast<unsigned char>(h.back()))) h.pop_back();
  return h;
}

}  // namespace

HostToolchain::HostToolchain(HostToolchainOptions options) {
  if (!options.compiler.empty()) {
    requested_ = options.compiler;
  } else if (const char* e = std::getenv("EMBER_CXX"); e && *e) {
    requested_ = e;
  }
  if (!requested_.empty()) {
    path_ = find_program(requested_);
  } else {
    for (const char* name : {"c++", "g++", "clang++"})
      if (path_ = find_program(name); !path_.empty()) break;
  }
  timeout_s_ = options.timeout_s;
  if (timeout_s_ <= 0) {
    const char* e = std::getenv("EMBER_JIT_TIMEOUT");
    timeout_s_ = e ? std::atof(e) : 0;
    if (timeout_s_ <= 0) timeout_s_ = 60;
  }
  isa_ = options.isa >= 0 ? Isa(options.isa) : host_isa();
  // -O2 as asked; no headers, no libraries (-nostdlib), no exceptions or unwind tables: the
  // source is plain loops, so these cost compile time and buy nothing. -ffp-contract=off keeps
  // a*b+c two roundings, as in ember's eager kernels, so fused and eager results can match.
  flags_ = {"-x",
            "c++",
            "-std=c++17",
            "-O2",
            "-fPIC",
            "-shared",
            "-nostdlib",
            "-pipe",
            "-fno-exceptions",
            "-fno-rtti",
            "-fno-asynchronous-unwind-tables",
            "-fno-math-errno",
            "-ffp-contract=off",
            "-w"};
  if (const char* m = isa_march_flag(isa_); *m) flags_.insert(flags_.begin() + 4, m);
  flags_.insert(flags_.end(), options.extra_flags.begin(), options.extra_flags.end());
}

std::string HostToolchain::target() const {
  return std::string(machine_name()) + "-" + isa_name(isa_);
}

std::string HostToolchain::quick_id() const {
  if (path_.empty()) return "";
  std::string real = real_path(path_);
  struct stat st;
  if (::stat(real.c_str(), &st) != 0) return "";
  std::string id = std::string(kAbi) + "\n" + real + "\n" + std::to_string(st.st_size) + " " +
                   std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec) +
                   " " + std::to_string(st.st_ino) + "\n";
  for (const auto& f : flags_) id += f + " ";
  return id;
}

kl::ToolchainIdentity HostToolchain::identify(const std::atomic<bool>* cancel) {
  kl::ToolchainIdentity id;
  if (path_.empty()) {
    id.error = requested_.empty() ? "no C++ compiler: none of c++, g++, clang++ is on PATH"
                                  : "the C++ compiler '" + requested_ +
                                        "' (EMBER_CXX) is not an executable program";
    return id;
  }
  ProcessOptions po;
  po.timeout_s = std::min(timeout_s_, 10.0);
  po.cancel = cancel;
  ProcessResult r = run_process({path_, "--version"}, po);
  if (!r.success() || r.output.empty()) {
    id.error = "'" + path_ + " --version' " + (r.success() ? "printed nothing" : r.describe());
    if (!r.output.empty()) id.error += ": " + head(r.output, 1);
    return id;
  }
  id.ok = true;
  id.name = compiler_name_from_version(r.output);
  std::string all = std::string(kAbi) + "\n" + real_path(path_) + "\n" + r.output + "\n";
  for (const auto& f : flags_) all += f + "\n";
  id.fingerprint = detail::hex128(all);
  return id;
}

kl::CompileResult HostToolchain::compile(std::string_view source, const kl::CompileJob& job) {
  if (path_.empty()) return kl::compile_failure("no C++ compiler", true);
  const std::string src = job.work_dir + "/kernels.cpp", out = job.work_dir + "/kernels.so";
  if (!kl::cache::write_whole_file(src, source))
    return kl::compile_failure("cannot write " + src + ": " + kl::cache::errno_text(), true);
  std::vector<std::string> argv{path_};
  argv.insert(argv.end(), flags_.begin(), flags_.end());
  argv.insert(argv.end(), {"-o", out, src});
  ProcessOptions po;
  po.timeout_s = timeout_s_;
  po.cancel = job.cancel;
  po.env = {"TMPDIR=" + job.work_dir, "LC_ALL=C"};  // its temporaries stay in the work dir
  ProcessResult r = run_process(argv, po);
  kl::CompileResult res;
  std::string image;
  bool have_output = r.success() && kl::cache::read_whole_file(out, &image);
  ::unlink(src.c_str());
  ::unlink(out.c_str());
  const std::string who = "the C++ compiler " + path_ + " ";
  if (!r.success()) {
    // Diagnostics with a clean exit status mean this source is at fault; anything else (could
    // not start, crashed, hung) means the compiler is.
    bool broken = !r.started || r.timed_out || r.signal != 0;
    if (r.cancelled) return kl::compile_failure("the compile was cancelled", false);
    // The first error on the first line (warnings show one line), the whole output after it.
    std::string log = who + r.describe();
    size_t err = r.output.find("error");
    if (err != std::string::npos) {
      size_t b = r.output.rfind('\n', err), e = r.output.find('\n', err);
      b = b == std::string::npos ? 0 : b + 1;
      log += ": " + r.output.substr(b, e == std::string::npos ? e : e - b);
    }
    if (!r.output.empty()) log += "\n" + head(r.output, 20);
    return kl::compile_failure(log, broken);
  }
  if (!have_output) return kl::compile_failure(who + "exited 0 but wrote no " + out, true);
  if (!looks_like_shared_object(image))
    return kl::compile_failure(who + "wrote " + std::to_string(image.size()) +
                       " bytes that are not a shared object for this machine",
                   true);
  res.ok = true;
  res.image = std::move(image);
  res.log = head(r.output, 20);
  return res;
}

bool HostToolchain::plausible(std::string_view image) const {
  return looks_like_shared_object(image);
}

std::unique_ptr<kl::Module> HostToolchain::load_file(const std::string& path, std::string* error) {
  return SharedObject::open(path, error);
}

std::unique_ptr<kl::Module> HostToolchain::load_image(std::string_view image, std::string* error) {
  return SharedObject::from_image(image, error);
}

std::string compiler_name_from_version(const std::string& version_text) {
  std::string first = version_text.substr(0, version_text.find('\n'));
  std::string family =
      first.find("clang") != std::string::npos ? "clang"
      : (first.find("g++") != std::string::npos || first.find("GCC") != std::string::npos ||
         version_text.find("Free Software Foundation") != std::string::npos)
          ? "gcc"
          : "cxx";
  // The version is the first word made of digits and dots with at least one dot ("12.2.0").
  std::string version;
  size_t i = 0;
  while (i < first.size() && version.empty()) {
    size_t j = i;
    while (j < first.size() &&
           (std::isdigit(static_cast<unsigned char>(first[j])) || first[j] == '.'))
      ++j;
    std::string word = first.substr(i, j - i);
    bool starts_word = i == 0 || first[i - 1] == ' ';
    bool ends_word = j == first.size() || first[j] == ' ';
    if (j > i && starts_word && ends_word && word.find('.') != std::string::npos &&
        std::isdigit(static_cast<unsigned char>(word[0])))
      version = word;
    i = j > i ? j : i + 1;
  }
  return version.empty() ? family : family + "-" + version;
}

}  // namespace ember::cpu::jit
