#pragma once

#include <cerrno>
#include <string>

#include <sqlite3.h>

#include "messages/api_error.hpp"

namespace cdui::storage {

/// SQLite's sentence for the last failure on `db`, as a message: "SQLite: ...", and a full disk
/// said as such first ("the disk is full (SQLite: database or disk is full)", or an I/O error
/// whose cause was ENOSPC), so that a refusal or a failed run tells the operator what to free.
[[nodiscard]] inline std::string sqlite_failure(sqlite3* db) {
  std::string said = std::string{"SQLite: "} + sqlite3_errmsg(db);
  int code = sqlite3_extended_errcode(db) & 0xff;
  int error = sqlite3_system_errno(db);
  if (code == SQLITE_FULL || (code == SQLITE_IOERR && (error == ENOSPC || error == EDQUOT)))
    return "the disk is full (" + said + ")";
  return said;
}

/// Throws the last failure on `db` as what it is to a caller: a store failure (api_failure), so
/// that the facade answers 503 with "the disk is full" rather than a 500.
[[noreturn]] inline void throw_store_failure(sqlite3* db) {
  throw api_failure(error_kind::store_failure, sqlite_failure(db));
}

} // namespace cdui::storage
