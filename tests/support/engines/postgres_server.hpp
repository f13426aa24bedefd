// A real PostgreSQL server for tests: initdb in a temporary directory, started with
// pg_ctl on a free port of 127.0.0.1 (and a unix socket in that directory), stopped and
// removed at the end.
//
// - Binaries: the newest /usr/lib/postgresql/*/bin, or $READPAST_PG_BINDIR.
// - The first initdb on a machine is kept as a template in the temporary directory
//   (readpast-pg-template-UID-VERSION-KEY, ~40 MB) and copied for later servers.
// - Run as root, the server runs as the `postgres` system user (PostgreSQL refuses root);
//   the directory is handed to that user.
// - Tuned for tests, not durability: fsync and full_page_writes off (an OS crash could
//   lose data; a server crash cannot); max_connections 300.
// - Authentication: trust, except TCP logins of members of the role
//   `readpast_password_auth`, which need their password (scram-sha-256), for the tests
//   that check passwords never leak.
// - Cleanup even when the test program dies: a watchdog process (own session, ignoring
//   SIGINT/SIGTERM) waits for the program to exit — normally or by a signal, SIGKILL
//   included — and then stops the server by the pid in postmaster.pid and removes the
//   directory. A normal exit stops the server with pg_ctl first.
//
// Thread-safety: fresh_database_url(), fresh_database_url_from() and execute() may be called
// from any thread; the start/stop/restart calls are for one test's thread while no other
// thread uses them.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace readpast::test {

class PostgresServer {
 public:
  // Creates and starts a server. Throws std::runtime_error (with the server's log) when
  // it cannot.
  PostgresServer();
  // A streaming standby of `primary` (pg_basebackup -R), started and replicating; it stays
  // read-only until promote().
  struct StandbyOf {
    const PostgresServer& primary;
  };
  explicit PostgresServer(StandbyOf standby);
  ~PostgresServer();
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  // One server per test program, started on first use.
  static PostgresServer& shared();

  int port() const noexcept { return port_; }
  const std::filesystem::path& directory() const noexcept { return dir_; }

  // postgresql://USER@127.0.0.1:PORT/DATABASE
  std::string url(const std::string& database, const std::string& user = "postgres") const;
  // CREATE DATABASE for each call (readpast_1, readpast_2, ...); returns its URL.
  std::string fresh_database_url();
  // The same, each a copy of the database `template_name` (CREATE DATABASE ... TEMPLATE),
  // which the first call creates and hands to `prepare` (its URL; e.g. to make readpast's
  // schema in it), so that what `prepare` does is done once per server instead of once per
  // database. `prepare` must leave no connection to it open.
  std::string fresh_database_url_from(const std::string& template_name,
                                      const std::function<void(const std::string& url)>& prepare);
  // Runs SQL as the superuser over the unix socket; throws std::runtime_error on error.
  void execute(const std::string& sql, const std::string& database = "postgres");

  // Fault injection. stop_immediate() is `pg_ctl stop -m immediate` (a crash, as far as
  // clients can tell: every connection drops); start() brings it back on the same port.
  void stop_immediate();
  void start();
  void restart_immediate();
  // The postmaster killed with SIGKILL (by the pid in postmaster.pid): a primary that dies.
  // Its backends notice and exit by themselves.
  void kill_postmaster();
  // pg_ctl promote: a standby becomes a primary.
  void promote();
  // On a primary: makes every standby synchronous (a commit is acknowledged once a standby
  // has it) and waits until one streams so; throws std::runtime_error after 10 s.
  void require_synchronous_standby();
  bool running() const noexcept { return running_; }

 private:
  // Runs a binary of the server's bin directory, or an absolute path (as the postgres user
  // when we are root);
  // returns its exit status; output goes to `log`.
  int run_tool(const std::string& tool, const std::vector<std::string>& args,
               const std::filesystem::path& log) const;
  void start_watchdog();
  // Fills data_: a copy of a cached initdb result, or a new initdb (which is then cached).
  void init_data_directory();
  // The temporary directory, handed to the server's user, and the watchdog.
  void make_directory();
  // Our settings, appended to postgresql.conf (later lines win), and pg_hba.conf.
  void write_settings();
  // Starts on a free port, trying a few.
  void start_on_free_port();
  std::string log_tail() const;

  std::filesystem::path bin_dir_;
  std::filesystem::path dir_;   // the temporary directory: data/, logs, the socket
  std::filesystem::path data_;  // dir_/data
  int port_ = 0;
  bool running_ = false;
  uid_t run_uid_ = 0;  // whom the server runs as (when we are root)
  gid_t run_gid_ = 0;
  bool switch_user_ = false;
  pid_t owner_pid_ = -1;  // the process that started the server (forked children do not stop it)
  int watchdog_fd_ = -1;  // write end of the watchdog's pipe; closing it releases it
  pid_t watchdog_pid_ = -1;

  // readpast_1, readpast_2, ...: a name no database of this server has yet.
  std::string next_database_name();

  std::mutex mu_;  // guards the database counter and execute()
  int next_database_ = 1;
  // Guards prepared_templates_, and a template while it is prepared or copied.
  std::mutex template_mu_;
  std::set<std::string> prepared_templates_;
};

}  // namespace readpast::test
