#pragma once
// Asserting ember's error promise: a call fails with exactly the documented ember::Error
// subclass (not a base, not a foreign exception) and its message names the op as "[op]".
#include <gtest/gtest.h>

#include <exception>
#include <string>
#include <typeinfo>

#include "ember/error.h"

namespace ember::testing {

template <class Kind, class F>
void expect_error(F&& f, const std::string& op, const char* what, const char* file, int line) {
  try {
    f();
  } catch (const std::exception& e) {
    if (typeid(e) != typeid(Kind))
      ADD_FAILURE_AT(file, line) << what << "\n  threw " << typeid(e).name() << ", expected "
                                 << typeid(Kind).name() << ": " << e.what();
    else if (std::string(e.what()).find("[" + op + "]") == std::string::npos)
      ADD_FAILURE_AT(file, line) << what << "\n  message does not name [" << op
                                 << "]: " << e.what();
    return;
  } catch (...) {
    ADD_FAILURE_AT(file, line) << what << "\n  threw something that is not a std::exception";
    return;
  }
  ADD_FAILURE_AT(file, line) << what << "\n  did not throw (expected " << typeid(Kind).name()
                             << " naming [" << op << "])";
}

}  // namespace ember::testing

/// EXPECT_ERROR(stmt, ShapeError, "matmul"): stmt throws exactly ShapeError naming [matmul].
#define EXPECT_ERROR(stmt, Kind, op) \
  ::ember::testing::expect_error<Kind>([&] { (void)(stmt); }, op, #stmt, __FILE__, __LINE__)
