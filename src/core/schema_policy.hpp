// core/schema_policy.hpp — the schema-version rules, the same on every engine: which version
// a build needs, what `readpast init` runs to get there, and what every other command says
// when the database's schema is missing, older or newer. An engine supplies its numbered
// migrations and the transaction they run in (MigrationSteps); the decisions are here.
//
// Invariant (every engine): migrations are append-only, numbered from 1; the schema's version
// is the highest migration applied; a released migration is never edited.
//
// Thread-safety: pure functions; a MigrationSteps is used by one thread.
#pragma once

#include <string_view>

#include "readpast/error.hpp"

namespace readpast::detail {

// What an engine does inside the transaction in which it migrates.
class MigrationSteps {
 public:
  virtual ~MigrationSteps() = default;
  // The version in force: 0 when there is no readpast schema.
  virtual Result<int> version() = 0;
  // Runs migration `number` and records it as applied.
  virtual Status apply(int number) = 0;
};

// Applies the migrations after the current version up to `target`, in order, within the
// engine's transaction; returns the version now in force. kSchema, changing nothing, when
// the schema is newer than `supported` (this build); "migration N failed: ..." when one
// fails, unless the database became unavailable (kUnavailable passes through, to be retried).
// REQUIRES: 1 <= target <= supported.
Result<int> migrate_schema(MigrationSteps& steps, int target, int supported);

// What a command that needs the schema says of the version it found (`where` names the
// schema for the message, or is empty): nothing when it is `supported`; kSchema with what to
// do when it is missing (0), older, or newer.
Status check_schema_version(int found, int supported, std::string_view where = {});

}  // namespace readpast::detail
