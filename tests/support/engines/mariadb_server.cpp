#include "support/engines/mariadb_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <mysql.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "support/server_files.hpp"
#include "support/server_port.hpp"

namespace readpast::test {
namespace {

namespace fs = std::filesystem;

// Forks and execs argv (as uid/gid when switch_user), output to `log`; returns the pid.
pid_t spawn(const std::vector<std::string>& args, const fs::path& log, const fs::path& workdir,
            bool switch_user, uid_t uid, gid_t gid) {
  std::vector<std::string> strings = args;
  std::vector<char*> argv;
  for (auto& s : strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  const int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (log_fd < 0 || null_fd < 0) throw std::system_error(errno, std::generic_category(), "open");
  const std::string dir = workdir.string();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::system_error(errno, std::generic_category(), "fork");
  if (pid == 0) {
    ::dup2(null_fd, 0);
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    close_from(3);
    if (::chdir(dir.c_str()) != 0) ::_exit(126);
    if (switch_user && (::setgroups(0, nullptr) != 0 || ::setgid(gid) != 0 || ::setuid(uid) != 0)) {
      ::_exit(126);
    }
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(log_fd);
  ::close(null_fd);
  return pid;
}

int wait_for(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw std::system_error(errno, std::generic_category(), "waitpid");
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

struct MysqlCloser {
  void operator()(MYSQL* handle) const noexcept { mysql_close(handle); }
};

// A root connection over the socket, or null with `error` set.
std::unique_ptr<MYSQL, MysqlCloser> connect_root(const fs::path& socket, const std::string& db,
                                                 std::string& error) {
  std::unique_ptr<MYSQL, MysqlCloser> handle(mysql_init(nullptr));
  const unsigned timeout = 5;
  mysql_options(handle.get(), MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
  if (mysql_real_connect(handle.get(), nullptr, "root", nullptr, db.c_str(), 0, socket.c_str(),
                         0) == nullptr) {
    error = mysql_error(handle.get());
    return nullptr;
  }
  return handle;
}

}  // namespace

MariadbServer& MariadbServer::shared() {
  static MariadbServer server;
  return server;
}

MariadbServer::MariadbServer() {
  std::string pattern = (fs::temp_directory_path() / "readpast-mdb-XXXXXX").string();
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (::mkdtemp(buffer.data()) == nullptr) {
    throw std::system_error(errno, std::generic_category(), "mkdtemp");
  }
  dir_ = buffer.data();
  data_ = dir_ / "data";
  owner_pid_ = ::getpid();
  run_uid_ = ::geteuid();
  run_gid_ = ::getegid();
  if (::geteuid() == 0) {
    const passwd* user = ::getpwnam("mysql");
    if (user == nullptr) {
      throw std::runtime_error(
          "running as root, but there is no `mysql` user to run the "
          "test server as (install mariadb-server)");
    }
    switch_user_ = true;
    run_uid_ = user->pw_uid;
    run_gid_ = user->pw_gid;
    if (::chown(dir_.c_str(), run_uid_, run_gid_) != 0) {
      throw std::system_error(errno, std::generic_category(), "chown " + dir_.string());
    }
  }
  ::chmod(dir_.c_str(), 0755);  // the socket must be reachable by the test's user
  start_watchdog();
  const int rc = wait_for(
      spawn({"mariadb-install-db", "--no-defaults", "--datadir=" + data_.string(), "--user=mysql",
             "--auth-root-authentication-method=normal", "--skip-test-db", "--skip-name-resolve"},
            dir_ / "install.log", dir_, switch_user_, run_uid_, run_gid_));
  if (rc != 0) {
    throw std::runtime_error("mariadb-install-db failed: " + read_tail(dir_ / "install.log", 2000));
  }
  // A port can be taken between free_server_port() and the server's bind: try a few.
  for (int attempt = 0; attempt < 5 && !running(); ++attempt) {
    port_ = free_server_port();
    try {
      start();
    } catch (const std::runtime_error&) {
      if (attempt == 4) throw;
    }
  }
  execute("CREATE USER 'readpast'@'%'");
  execute("GRANT ALL PRIVILEGES ON *.* TO 'readpast'@'%' WITH GRANT OPTION");
}

MariadbServer::~MariadbServer() {
  if (::getpid() != owner_pid_) return;
  if (running()) stop_immediate();
  std::error_code ignored;
  fs::remove_all(dir_, ignored);
  if (watchdog_fd_ >= 0) {
    (void)!::write(watchdog_fd_, "stopped\n", 8);
    ::close(watchdog_fd_);
  }
  if (watchdog_pid_ > 0) {
    while (::waitpid(watchdog_pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
}

std::string MariadbServer::url(const std::string& database, const std::string& user) const {
  return "mariadb://" + user + "@127.0.0.1:" + std::to_string(port_) + "/" + database;
}

std::string MariadbServer::fresh_database_url() {
  int n = 0;
  {
    std::lock_guard lock(mu_);
    n = next_database_++;
  }
  const std::string name = "readpast_" + std::to_string(n);
  execute("CREATE DATABASE " + name);
  return url(name);
}

void MariadbServer::execute(const std::string& sql, const std::string& database) {
  (void)query_value(sql, database);
}

std::string MariadbServer::query_value(const std::string& sql, const std::string& database) {
  std::string error;
  auto handle = connect_root(socket(), database, error);
  if (!handle) throw std::runtime_error("cannot connect to the test server: " + error);
  if (mysql_real_query(handle.get(), sql.data(), sql.size()) != 0) {
    throw std::runtime_error("test server: " + sql + ": " + mysql_error(handle.get()));
  }
  MYSQL_RES* result = mysql_store_result(handle.get());
  if (result == nullptr) return {};
  std::string value;
  if (MYSQL_ROW row = mysql_fetch_row(result); row != nullptr && row[0] != nullptr) {
    value.assign(row[0], mysql_fetch_lengths(result)[0]);
  }
  mysql_free_result(result);
  return value;
}

MariadbServer::Session::Session(const MariadbServer& server, const std::string& database) {
  std::string error;
  auto handle = connect_root(server.socket(), database, error);
  if (!handle) throw std::runtime_error("cannot connect to the test server: " + error);
  handle_ = handle.release();
}

MariadbServer::Session::~Session() {
  mysql_close(static_cast<MYSQL*>(handle_));
}

void MariadbServer::Session::execute(const std::string& sql) {
  auto* handle = static_cast<MYSQL*>(handle_);
  if (mysql_real_query(handle, sql.data(), sql.size()) != 0) {
    throw std::runtime_error("test server: " + sql + ": " + mysql_error(handle));
  }
  MYSQL_RES* result = mysql_store_result(handle);
  if (result != nullptr) mysql_free_result(result);
}

void MariadbServer::start() {
  const fs::path pid_file = dir_ / "mariadbd.pid";
  std::error_code ignored;
  fs::remove(pid_file, ignored);
  server_pid_ =
      spawn({"/usr/sbin/mariadbd", "--no-defaults", "--datadir=" + data_.string(),
             "--socket=" + socket().string(), "--port=" + std::to_string(port_),
             "--bind-address=127.0.0.1", "--pid-file=" + pid_file.string(), "--skip-name-resolve",
             "--skip-log-bin", "--max-connections=300", "--max-allowed-packet=64M",
             "--innodb-flush-log-at-trx-commit=2", "--innodb-buffer-pool-size=64M",
             "--innodb-log-file-size=32M", "--table-open-cache=400", "--skip-performance-schema",
             // Its own temporary files' directory: a mariadbd that starts removes the #sql*
             // files it finds in its tmpdir, so with the default /tmp a test server starting
             // beside another one deleted that one's temporary tables mid-statement.
             "--tmpdir=" + dir_.string()},
            dir_ / "server.log", dir_, switch_user_, run_uid_, run_gid_);
  // Ready when root can log in over the socket (and the server still runs).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::string error;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(server_pid_, &status, WNOHANG) == server_pid_) {
      server_pid_ = -1;
      throw std::runtime_error("mariadbd exited while starting:\n" + log_tail());
    }
    if (fs::exists(socket()) && connect_root(socket(), "mysql", error)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  stop_immediate();
  throw std::runtime_error("mariadbd did not accept connections within 60 s (" + error + "):\n" +
                           log_tail());
}

void MariadbServer::stop_immediate() {
  if (server_pid_ <= 0) return;
  ::kill(server_pid_, SIGKILL);
  wait_for(server_pid_);
  server_pid_ = -1;
}

void MariadbServer::restart_immediate() {
  stop_immediate();
  start();
}

std::string MariadbServer::log_tail() const {
  return read_tail(dir_ / "server.log", 3000);
}

void MariadbServer::start_watchdog() {
  // See PostgresServer::start_watchdog: EOF on the pipe without "stopped" means the program
  // is gone without stopping its server.
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe");
  const std::string dir = dir_.string();
  const std::string pass = "pid=$(head -n 1 '" + dir + "/mariadbd.pid' 2>/dev/null); " +
                           "if [ -n \"$pid\" ]; then kill -KILL \"$pid\" 2>/dev/null; n=0; " +
                           "while kill -0 \"$pid\" 2>/dev/null && [ $n -lt 200 ]; do " +
                           "sleep 0.05; n=$((n+1)); done; fi; rm -rf '" + dir + "'; ";
  const std::string script =
      "read -r line; [ \"$line\" = stopped ] && exit 0; " + pass + "sleep 1; " + pass;
  const int null_fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::system_error(errno, std::generic_category(), "fork");
  if (pid == 0) {
    ::setsid();
    ::signal(SIGINT, SIG_IGN);
    ::signal(SIGTERM, SIG_IGN);
    ::signal(SIGHUP, SIG_IGN);
    ::dup2(fds[0], 0);
    ::dup2(null_fd, 1);
    ::dup2(null_fd, 2);
    close_from(3);
    ::execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(fds[0]);
  if (null_fd >= 0) ::close(null_fd);
  watchdog_fd_ = fds[1];
  watchdog_pid_ = pid;
}

}  // namespace readpast::test
