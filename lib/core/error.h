// Errors raised by the library. Library code never exits: it throws memra::Error, and only
// cli/main.cpp turns one into a message and an exit code.
#pragma once
#include <stdexcept>
#include <string>

namespace memra {

// Exit codes, everywhere: 0 pass, 1 a definite negative, 2 usage or runtime error.
enum ExitCode : int { kExitOk = 0, kExitNegative = 1, kExitError = 2 };

class Error : public std::runtime_error {
 public:
  // `what` is one line, lower case, no trailing period; `hint` says how to fix it (may be empty).
  explicit Error(std::string what, std::string hint = {}, int exit_code = kExitError)
      : std::runtime_error(std::move(what)), hint_(std::move(hint)), exit_code_(exit_code) {}
  const std::string& hint() const { return hint_; }
  int exit_code() const { return exit_code_; }

 private:
  std::string hint_;
  int exit_code_;
};

// The reader of stdout went away (`memra … | head`): not an error, the command ends with exit 0.
class BrokenPipe : public Error {
 public:
  BrokenPipe() : Error("stdout closed by the reader", {}, kExitOk) {}
};

// A definite negative (mismatch, REFUSED, FAIL) that the command reports as exit 1.
inline Error negative(std::string what, std::string hint = {}) {
  return Error(std::move(what), std::move(hint), kExitNegative);
}

}  // namespace memra
