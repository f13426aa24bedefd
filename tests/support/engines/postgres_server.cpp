#include "support/engines/postgres_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <libpq-fe.h>
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

fs::path find_bin_dir() {
  if (const char* env = std::getenv("READPAST_PG_BINDIR"); env != nullptr && *env != '\0') {
    return env;
  }
  fs::path best;
  int best_version = -1;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/usr/lib/postgresql", ec)) {
    const auto bin = entry.path() / "bin";
    if (!fs::exists(bin / "pg_ctl", ec)) continue;
    const int version = std::atoi(entry.path().filename().c_str());
    if (version > best_version) {
      best_version = version;
      best = bin;
    }
  }
  if (best.empty()) {
    throw std::runtime_error(
        "PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin (install the "
        "postgresql package, or set READPAST_PG_BINDIR)");
  }
  return best;
}

struct PgConnCloser {
  void operator()(PGconn* conn) const noexcept { PQfinish(conn); }
};
struct PgResultCloser {
  void operator()(PGresult* result) const noexcept { PQclear(result); }
};

}  // namespace

PostgresServer& PostgresServer::shared() {
  static PostgresServer server;
  return server;
}

PostgresServer::PostgresServer() : bin_dir_(find_bin_dir()) {
  make_directory();
  init_data_directory();
  write_settings();
  start_on_free_port();
  execute("CREATE ROLE readpast_password_auth NOLOGIN");
}

PostgresServer::PostgresServer(StandbyOf standby) : bin_dir_(standby.primary.bin_dir_) {
  make_directory();
  // -c fast: checkpoint now; the default spreads it over minutes.
  if (run_tool("pg_basebackup",
               {"-D", data_.string(), "-R", "-X", "stream", "-c", "fast", "-h",
                standby.primary.directory().string(), "-p", std::to_string(standby.primary.port()),
                "-U", "postgres"},
               dir_ / "basebackup.log") != 0) {
    throw std::runtime_error("pg_basebackup failed: " + read_tail(dir_ / "basebackup.log", 2000));
  }
  write_settings();  // its own socket directory, over the primary's copied settings
  start_on_free_port();
}

void PostgresServer::make_directory() {
  std::string pattern = (fs::temp_directory_path() / "readpast-pg-XXXXXX").string();
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
    // PostgreSQL refuses to run as root: hand the directory to the postgres user.
    const passwd* user = ::getpwnam("postgres");
    if (user == nullptr) {
      throw std::runtime_error(
          "running as root, but there is no `postgres` user to run the "
          "test server as");
    }
    switch_user_ = true;
    run_uid_ = user->pw_uid;
    run_gid_ = user->pw_gid;
    if (::chown(dir_.c_str(), run_uid_, run_gid_) != 0) {
      throw std::system_error(errno, std::generic_category(), "chown " + dir_.string());
    }
  }
  start_watchdog();
}

void PostgresServer::write_settings() {
  std::ofstream conf(data_ / "postgresql.conf", std::ios::app);
  conf << "\n# readpast tests\n"
       << "listen_addresses = '127.0.0.1'\n"
       << "unix_socket_directories = '" << dir_.string() << "'\n"
       << "max_connections = 300\n"
       // Not synchronous_commit = off: an immediate stop would lose commits already
       // acknowledged, which the fault tests would mistake for bugs. Without fsync a
       // commit still reaches the OS before it is acknowledged.
       << "fsync = off\nfull_page_writes = off\n"
       << "log_min_messages = warning\n";
  std::ofstream hba(data_ / "pg_hba.conf", std::ios::trunc);
  hba << "local all all trust\n"
      << "local replication all trust\n"
      << "host all +readpast_password_auth 127.0.0.1/32 scram-sha-256\n"
      << "host all all 127.0.0.1/32 trust\n"
      << "host replication all 127.0.0.1/32 trust\n";
}

void PostgresServer::start_on_free_port() {
  // A port can be taken between free_server_port() and the server's bind: try a few.
  for (int attempt = 0; attempt < 5 && !running_; ++attempt) {
    port_ = free_server_port();
    try {
      start();
    } catch (const std::runtime_error&) {
      if (attempt == 4) throw;
    }
  }
}

PostgresServer::~PostgresServer() {
  // A forked child that exits normally runs this destructor too: only the process that
  // started the server stops it.
  if (::getpid() != owner_pid_) return;
  if (running_) {
    run_tool("pg_ctl", {"-D", data_.string(), "-m", "immediate", "-w", "stop"},
             dir_ / "pg_ctl.log");
  }
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

std::string PostgresServer::url(const std::string& database, const std::string& user) const {
  return "postgresql://" + user + "@127.0.0.1:" + std::to_string(port_) + "/" + database;
}

std::string PostgresServer::next_database_name() {
  std::lock_guard lock(mu_);
  return "readpast_" + std::to_string(next_database_++);
}

std::string PostgresServer::fresh_database_url() {
  const std::string name = next_database_name();
  execute("CREATE DATABASE " + name);
  return url(name);
}

std::string PostgresServer::fresh_database_url_from(
    const std::string& template_name, const std::function<void(const std::string& url)>& prepare) {
  const std::string name = next_database_name();
  // Held over the copy too: CREATE DATABASE ... TEMPLATE fails while another session is
  // connected to the template, and prepare's are closed only once it returned.
  std::lock_guard lock(template_mu_);
  if (!prepared_templates_.contains(template_name)) {
    execute("CREATE DATABASE " + template_name);
    prepare(url(template_name));
    prepared_templates_.insert(template_name);
  }
  // FILE_COPY: the default (WAL_LOG) writes every page of a template this size to the WAL,
  // which took longer than migrating each database; copying its files took 30% less.
  execute("CREATE DATABASE " + name + " TEMPLATE " + template_name + " STRATEGY FILE_COPY");
  return url(name);
}

void PostgresServer::execute(const std::string& sql, const std::string& database) {
  const std::string conninfo = "host=" + dir_.string() + " port=" + std::to_string(port_) +
                               " user=postgres dbname=" + database;
  std::unique_ptr<PGconn, PgConnCloser> conn(PQconnectdb(conninfo.c_str()));
  if (PQstatus(conn.get()) != CONNECTION_OK) {
    throw std::runtime_error("cannot connect to the test server: " +
                             std::string(PQerrorMessage(conn.get())));
  }
  std::unique_ptr<PGresult, PgResultCloser> result(PQexec(conn.get(), sql.c_str()));
  const auto status = PQresultStatus(result.get());
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    throw std::runtime_error("test server: " + sql + ": " +
                             std::string(PQresultErrorMessage(result.get())));
  }
}

void PostgresServer::start() {
  const int rc = run_tool("pg_ctl",
                          {"-D", data_.string(), "-l", (dir_ / "server.log").string(), "-w", "-t",
                           "60", "-o", "-p " + std::to_string(port_), "start"},
                          dir_ / "pg_ctl.log");
  if (rc != 0) throw std::runtime_error("could not start PostgreSQL:\n" + log_tail());
  running_ = true;
}

void PostgresServer::stop_immediate() {
  if (run_tool("pg_ctl", {"-D", data_.string(), "-m", "immediate", "-w", "stop"},
               dir_ / "pg_ctl.log") != 0) {
    throw std::runtime_error("could not stop PostgreSQL:\n" + log_tail());
  }
  running_ = false;
}

void PostgresServer::restart_immediate() {
  stop_immediate();
  start();
}

void PostgresServer::kill_postmaster() {
  std::ifstream pid_file(data_ / "postmaster.pid");
  pid_t pid = 0;
  if (!(pid_file >> pid) || pid <= 0)
    throw std::runtime_error("no postmaster.pid in " + data_.string());
  if (::kill(pid, SIGKILL) != 0) throw std::system_error(errno, std::generic_category(), "kill");
  running_ = false;
}

void PostgresServer::promote() {
  if (run_tool("pg_ctl", {"-D", data_.string(), "-w", "-t", "60", "promote"},
               dir_ / "pg_ctl.log") != 0) {
    throw std::runtime_error("could not promote the standby:\n" + log_tail());
  }
}

void PostgresServer::require_synchronous_standby() {
  execute("ALTER SYSTEM SET synchronous_standby_names = '*'");
  execute("SELECT pg_reload_conf()");
  const std::string conninfo =
      "host=" + dir_.string() + " port=" + std::to_string(port_) + " user=postgres dbname=postgres";
  for (int i = 0; i < 200; ++i) {
    std::unique_ptr<PGconn, PgConnCloser> conn(PQconnectdb(conninfo.c_str()));
    std::unique_ptr<PGresult, PgResultCloser> result(
        PQexec(conn.get(), "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'"));
    if (PQresultStatus(result.get()) == PGRES_TUPLES_OK &&
        std::string(PQgetvalue(result.get(), 0, 0)) != "0") {
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  throw std::runtime_error("no standby became synchronous within 10 s");
}

std::string PostgresServer::log_tail() const {
  return read_tail(dir_ / "pg_ctl.log", 1500) + read_tail(dir_ / "server.log", 2500);
}

void PostgresServer::init_data_directory() {
  // initdb takes a second or more, and every test program (under ctest: every test) starts
  // a server. So the first initdb on a machine is copied to a template, per user and
  // PostgreSQL version, and later servers copy that instead (a tenth of the time). The
  // template is made under a temporary name and renamed into place, so it is complete or
  // absent; one not owned by the server's user, or open to others, is never used.
  const std::string key = std::to_string(std::hash<std::string>{}(bin_dir_.string()) % 1000000);
  const fs::path cached =
      fs::temp_directory_path() / ("readpast-pg-template-" + std::to_string(run_uid_) + "-" +
                                   bin_dir_.parent_path().filename().string() + "-" + key);
  struct stat st {};
  const bool usable = ::lstat(cached.c_str(), &st) == 0 && S_ISDIR(st.st_mode) &&
                      st.st_uid == run_uid_ && (st.st_mode & 077) == 0 &&
                      fs::exists(cached / "PG_VERSION");
  if (usable &&
      run_tool("/bin/cp", {"-a", cached.string(), data_.string()}, dir_ / "initdb.log") == 0) {
    return;
  }
  std::error_code ignored;
  fs::remove_all(data_, ignored);
  if (run_tool("initdb",
               {"-D", data_.string(), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C",
                "--no-sync", "--no-instructions"},
               dir_ / "initdb.log") != 0) {
    throw std::runtime_error("initdb failed: " + read_tail(dir_ / "initdb.log", 2000));
  }
  if (usable) return;
  // Publish a copy as the template (best effort: another program may win the race).
  const fs::path staging = fs::temp_directory_path() /
                           ("readpast-pg-template-tmp-" + std::to_string(::getpid()) + "-" + key);
  fs::remove_all(staging, ignored);
  if (run_tool("/bin/cp", {"-a", data_.string(), staging.string()}, dir_ / "initdb.log") == 0 &&
      ::rename(staging.c_str(), cached.c_str()) == 0) {
    return;
  }
  fs::remove_all(staging, ignored);
}

int PostgresServer::run_tool(const std::string& tool, const std::vector<std::string>& args,
                             const fs::path& log) const {
  // Everything the child needs is prepared before fork: between fork and exec it may
  // only make async-signal-safe calls (the test program may have threads).
  const std::string path = tool.starts_with('/') ? tool : (bin_dir_ / tool).string();
  std::vector<std::string> strings{path};
  strings.insert(strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  const int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (log_fd < 0 || null_fd < 0) throw std::system_error(errno, std::generic_category(), "open");
  const std::string workdir = dir_.string();

  const pid_t pid = ::fork();
  if (pid < 0) throw std::system_error(errno, std::generic_category(), "fork");
  if (pid == 0) {
    ::dup2(null_fd, 0);
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    close_from(3);
    if (::chdir(workdir.c_str()) != 0) ::_exit(126);
    if (switch_user_ &&
        (::setgroups(0, nullptr) != 0 || ::setgid(run_gid_) != 0 || ::setuid(run_uid_) != 0)) {
      ::_exit(126);
    }
    ::execv(path.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(log_fd);
  ::close(null_fd);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw std::system_error(errno, std::generic_category(), "waitpid");
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void PostgresServer::start_watchdog() {
  // The watchdog's stdin is the read end of a pipe whose only write end this process
  // holds (close-on-exec, so exec'd children do not keep it; forked children do, and the
  // server then outlives the program until they exit too). EOF without "stopped" means
  // the program is gone without stopping its server.
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe");
  const std::string data = data_.string();
  const std::string dir = dir_.string();
  // Stop the server by its pid (SIGQUIT: immediate shutdown), wait for it, remove the
  // directory; twice, a second apart, in case the program died while initdb or pg_ctl
  // start was still running and a server appeared after the first pass.
  const std::string pass = "pid=$(head -n 1 '" + data + "/postmaster.pid' 2>/dev/null); " +
                           "if [ -n \"$pid\" ]; then kill -QUIT \"$pid\" 2>/dev/null; n=0; " +
                           "while kill -0 \"$pid\" 2>/dev/null && [ $n -lt 200 ]; do " +
                           "sleep 0.05; n=$((n+1)); done; fi; rm -rf '" + dir + "'; ";
  // A normal exit writes "stopped" first: nothing left to do.
  const std::string script =
      "read -r line; [ \"$line\" = stopped ] && exit 0; " + pass + "sleep 1; " + pass;
  const int null_fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::system_error(errno, std::generic_category(), "fork");
  if (pid == 0) {
    ::setsid();  // not killed with the test's process group
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
