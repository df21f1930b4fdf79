#pragma once

#include <cstdlib>

namespace cdui::test {

/// Sets an environment variable for one test and unsets it when the test ends.
class scoped_env {
public:
  scoped_env(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~scoped_env() { ::unsetenv(name_); }
  scoped_env(const scoped_env&) = delete;
  scoped_env& operator=(const scoped_env&) = delete;

private:
  const char* name_;
};

} // namespace cdui::test
