// A real MariaDB server for tests: mariadb-install-db into a temporary directory, mariadbd
// started on a free port of 127.0.0.1 (and a unix socket in that directory), stopped by its
// pid and removed at the end.
//
// - Binaries: mariadb-install-db and mariadbd from $PATH (/usr/bin, /usr/sbin), as Debian's
//   mariadb-server installs them.
// - Run as root, the server runs as the `mysql` system user: the directory is handed to it
//   and the server is started after setuid, never as root.
// - Tuned for tests, not durability: innodb_flush_log_at_trx_commit=2 (a commit reaches the
//   OS before it is acknowledged, so killing the server loses nothing; an OS crash could),
//   max_connections 300, max_allowed_packet 64 MiB.
// - Accounts: root over the unix socket (for execute()), and `readpast`@'%' without a
//   password with every privilege, which the URLs name. Tests of passwords create their own.
// - Cleanup even when the test program dies: a watchdog process (own session, ignoring
//   SIGINT/SIGTERM) waits for the program to exit and then kills the server by the pid in
//   its pid file and removes the directory.
//
// Thread-safety: fresh_database_url() and execute() may be called from any thread; the
// start/stop calls are for one test's thread while no other thread uses them.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

namespace readpast::test {

class MariadbServer {
 public:
  // Creates and starts a server. Throws std::runtime_error (with the server's log) when it
  // cannot.
  MariadbServer();
  ~MariadbServer();
  MariadbServer(const MariadbServer&) = delete;
  MariadbServer& operator=(const MariadbServer&) = delete;

  // One server per test program, started on first use.
  static MariadbServer& shared();

  int port() const noexcept { return port_; }
  const std::filesystem::path& directory() const noexcept { return dir_; }
  std::filesystem::path socket() const { return dir_ / "mariadb.sock"; }

  // mariadb://USER@127.0.0.1:PORT/DATABASE
  std::string url(const std::string& database, const std::string& user = "readpast") const;
  // CREATE DATABASE for each call (readpast_1, readpast_2, ...); returns its URL.
  std::string fresh_database_url();
  // The database a URL of url() or fresh_database_url() names (its last path segment).
  static std::string database_of(const std::string& url) { return url.substr(url.rfind('/') + 1); }
  // Runs SQL as root over the unix socket; throws std::runtime_error on error.
  void execute(const std::string& sql, const std::string& database = "mysql");
  // The same, returning the first column of the first row ("" when there is none or it is
  // NULL).
  std::string query_value(const std::string& sql, const std::string& database = "mysql");

  // A root session over the unix socket that stays open (to hold locks): it runs each
  // statement given, and closes when destroyed. Throws std::runtime_error on error.
  class Session {
   public:
    Session(const MariadbServer& server, const std::string& database);
    ~Session();
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;
    void execute(const std::string& sql);

   private:
    void* handle_;  // MYSQL*
  };

  // Fault injection: stop_immediate() kills the server with SIGKILL (a crash, as far as
  // clients can tell); start() brings it back on the same port.
  void stop_immediate();
  void start();
  void restart_immediate();
  bool running() const noexcept { return server_pid_ > 0; }

 private:
  void start_watchdog();
  std::string log_tail() const;

  std::filesystem::path dir_;   // the temporary directory: data/, the log, socket, pid file
  std::filesystem::path data_;  // dir_/data
  int port_ = 0;
  uid_t run_uid_ = 0;  // whom the server runs as (when we are root)
  gid_t run_gid_ = 0;
  bool switch_user_ = false;
  pid_t server_pid_ = -1;
  pid_t owner_pid_ = -1;  // the process that started the server (forked children do not stop it)
  int watchdog_fd_ = -1;  // write end of the watchdog's pipe; closing it releases it
  pid_t watchdog_pid_ = -1;

  std::mutex mu_;  // guards the database counter and execute()
  int next_database_ = 1;
};

}  // namespace readpast::test
