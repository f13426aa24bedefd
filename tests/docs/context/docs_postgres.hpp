// What docs/postgres.md's C++ snippets take as the reader's own code: the application's
// open libpq connection. (PGconn as readpast's header declares it: what else of libpq a
// snippet uses, it must include itself.)
#pragma once

#include <readpast/postgres.hpp>

extern PGconn* conn;
